/* The text calls of a model: tokenize every input, sort by length so that padding is small (as
 * sentence-transformers does), run batches through the encoder, put the rows back in order. */
#define _POSIX_C_SOURCE 200809L

#include "nn/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* sentence-transformers' default batch size. */
#define BATCH_TEXTS 32

typedef enum run_kind { RUN_SENTENCES, RUN_LOGITS } run_kind;

typedef struct text_job {
    vkbert_model *m;
    tok_ids *tokens; /* [count] */
    int count;
    int prompt_tokens;
    run_kind kind;
    int normalize;  /* RUN_SENTENCES: divide by the L2 norm */
    uint32_t width; /* of an output row */
    float *out;     /* [count][width] */
} text_job;

static void free_tokens(tok_ids *tokens, int count)
{
    for (int i = 0; tokens && i < count; i++)
        tok_ids_free(&tokens[i]);
    free(tokens);
}

/* Tokenizes input i (text[i] after `prefix`, paired with `pair`): truncated to the model's
 * limit, or refused over it. */
static vkbert_status encode_one(vkbert_model *m, const char *prefix, const char *text,
                                const char *pair, int i, tok_ids *out)
{
    char err[VKB_ERROR_SIZE];
    char *joined = NULL;
    if (prefix) {
        size_t a = strlen(prefix), b = strlen(text);
        if (!(joined = malloc(a + b + 1)))
            return vkb_fail(m->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
        memcpy(joined, prefix, a);
        memcpy(joined + a, text, b + 1);
    }
    int rc = vkb_tokenizer_encode(&m->tokenizer, joined ? joined : text, pair,
                                  m->truncate ? m->max_length : -1, out, err, sizeof err);
    free(joined);
    if (rc)
        return vkb_fail(m->ctx, vkb_io_status(VKBERT_ERROR_INVALID_ARGUMENT), "input %d: %s", i,
                        err);
    if (out->count > m->max_length)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "input %d has %d tokens, over the model's limit of %d (truncation is off)",
                        i, out->count, m->max_length);
    return VKBERT_OK;
}

/* An input's length and index: sorted longest first, ties in input order. */
typedef struct by_length {
    int count, index;
} by_length;

static int longer_first(const void *a, const void *b)
{
    const by_length *x = a, *y = b;
    return x->count != y->count ? y->count - x->count : x->index - y->index;
}

/* Runs inputs order[first, first + n) as one padded batch. */
static vkbert_status run_batch(text_job *job, const int *order, int n, int32_t *ids, int32_t *types,
                               int32_t *mask, float *rows)
{
    int seq = job->tokens[order[0]].count;
    for (int b = 0; b < n; b++) {
        const tok_ids *t = &job->tokens[order[b]];
        for (int s = 0; s < seq; s++) {
            size_t at = (size_t)b * seq + s;
            ids[at] = s < t->count ? t->ids[s] : tok_pad_id(job->m->tokenizer.tok);
            types[at] = s < t->count ? t->type_ids[s] : 0;
            mask[at] = s < t->count;
        }
    }
    encoder_batch in = {n, seq, ids, types, mask, job->prompt_tokens};
    vkbert_status status = job->kind == RUN_SENTENCES
                               ? vkb_encoder_sentences(job->m->encoder, &in, job->normalize, rows)
                               : vkb_encoder_logits(job->m->encoder, &in, rows);
    for (int b = 0; !status && b < n; b++)
        memcpy(job->out + (size_t)order[b] * job->width, rows + (size_t)b * job->width,
               job->width * sizeof *rows);
    return status;
}

static vkbert_status run_sorted(text_job *job)
{
    int *order = malloc((size_t)job->count * sizeof *order);
    size_t cells = (size_t)BATCH_TEXTS * (size_t)job->m->max_length + 1;
    int32_t *ids = malloc(cells * 4), *types = malloc(cells * 4), *mask = malloc(cells * 4);
    float *rows = malloc((size_t)BATCH_TEXTS * job->width * sizeof *rows);
    vkbert_status status = VKBERT_OK;
    if (!order || !ids || !types || !mask || !rows)
        status = vkb_fail(job->m->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    by_length *lengths = status ? NULL : malloc((size_t)job->count * sizeof *lengths);
    if (!status && !lengths)
        status = vkb_fail(job->m->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; !status && i < job->count; i++)
        lengths[i] = (by_length){job->tokens[i].count, i};
    if (!status) qsort(lengths, (size_t)job->count, sizeof *lengths, longer_first);
    for (int i = 0; !status && i < job->count; i++)
        order[i] = lengths[i].index;
    free(lengths);
    for (int first = 0; !status && first < job->count; first += BATCH_TEXTS) {
        int n = job->count - first < BATCH_TEXTS ? job->count - first : BATCH_TEXTS;
        status = run_batch(job, order + first, n, ids, types, mask, rows);
    }
    free(order), free(ids), free(types), free(mask), free(rows);
    return status;
}

/* ---- embed ---- */

static vkbert_status find_prompt(vkbert_model *m, const vkbert_embed_options *o, const char **out)
{
    *out = o ? o->prompt : NULL;
    const char *name = o && o->prompt_name ? o->prompt_name : NULL;
    if (*out && name)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "give a prompt or a prompt name, not both");
    if (!*out && !name) name = m->st.default_prompt_name;
    for (int i = 0; name && i < m->st.prompt_count; i++)
        if (strcmp(m->st.prompts[i].name, name) == 0) *out = m->st.prompts[i].text;
    if (name && !*out)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "the model has no prompt named \"%s\"", name);
    return VKBERT_OK;
}

/* sentence-transformers' prompt_length: the prompt's own ids, less the final [SEP]. */
static vkbert_status prompt_length(vkbert_model *m, const char *prompt, int *out)
{
    *out = 0;
    /* A folder without a Pooling module pools as its default does: prompt included. */
    if (!prompt || !m->st.has_pooling || m->st.include_prompt) return VKBERT_OK;
    tok_ids t;
    char err[VKB_ERROR_SIZE];
    if (vkb_tokenizer_encode(&m->tokenizer, prompt, NULL, m->max_length, &t, err, sizeof err))
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "prompt: %s", err);
    *out = t.count - 1;
    tok_ids_free(&t);
    return VKBERT_OK;
}

/* The call's normalize overrides the model's (the Python package's embed(normalize=) needs a
 * per-call switch; sentence-transformers' encode() has normalize_embeddings per call too). */
static vkbert_status call_normalize(vkbert_model *m, const vkbert_embed_options *o, int *out)
{
    if (!o || !o->normalize) return VKBERT_OK;
    if (o->normalize != 1 && o->normalize != -1)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "vkbert_embed_options.normalize is %d: 0 (the model's), 1 or -1",
                        o->normalize);
    *out = o->normalize > 0;
    return VKBERT_OK;
}

static vkbert_status check_texts(vkbert_model *m, const char *const *texts, int count, void *out)
{
    if (count < 1 || !texts || !out)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "count must be positive, texts and the output non-NULL");
    for (int i = 0; i < count; i++)
        if (!texts[i]) return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "text %d is NULL", i);
    return VKBERT_OK;
}

static vkbert_status run_texts(text_job *job, const char *prefix, const char *const *texts,
                               const char *query)
{
    vkbert_status status = VKBERT_OK;
    job->tokens = calloc((size_t)job->count, sizeof *job->tokens);
    if (!job->tokens) status = vkb_fail(job->m->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; !status && i < job->count; i++)
        status = query ? encode_one(job->m, NULL, query, texts[i], i, &job->tokens[i])
                       : encode_one(job->m, prefix, texts[i], NULL, i, &job->tokens[i]);
    if (!status) status = run_sorted(job);
    free_tokens(job->tokens, job->count);
    return status;
}

vkbert_status vkb_model_embed(vkbert_model *m, const char *const *texts, int count,
                              const vkbert_embed_options *options, float *embeddings)
{
    vkbert_status status = check_texts(m, texts, count, embeddings);
    const char *prompt = NULL;
    if (!status) status = find_prompt(m, options, &prompt);
    text_job job = {.m = m,
                    .count = count,
                    .kind = RUN_SENTENCES,
                    .normalize = m->normalize,
                    .width = vkb_encoder_embedding_width(m->encoder),
                    .out = embeddings};
    if (!status) status = call_normalize(m, options, &job.normalize);
    if (!status) status = prompt_length(m, prompt, &job.prompt_tokens);
    return status ? status : run_texts(&job, prompt, texts, NULL);
}

/* ---- classifiers ---- */

static float sigmoid(float x)
{
    return (float)(1.0 / (1.0 + exp(-(double)x)));
}

vkbert_status vkb_model_rerank(vkbert_model *m, const char *query, const char *const *documents,
                               int count, int raw_scores, float *scores)
{
    vkbert_status status = check_texts(m, documents, count, scores);
    if (status) return status;
    if (!query) return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "query is NULL");
    if (m->labels != 1)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "rerank needs a cross-encoder with one label; this model has %d",
                        m->labels);
    if (m->max_length < 3)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "max_length %d leaves no room for a pair's 3 special tokens",
                        m->max_length);
    text_job job = {m, NULL, count, 0, RUN_LOGITS, 0, 1, scores};
    status = run_texts(&job, NULL, documents, query);
    for (int i = 0; !status && !raw_scores && i < count; i++)
        scores[i] = sigmoid(scores[i]);
    return status;
}

static void softmax(float *v, int n)
{
    double top = v[0], sum = 0;
    for (int i = 1; i < n; i++)
        top = v[i] > top ? v[i] : top;
    for (int i = 0; i < n; i++)
        sum += exp((double)v[i] - top);
    for (int i = 0; i < n; i++)
        v[i] = (float)(exp((double)v[i] - top) / sum);
}

vkbert_status vkb_model_classify(vkbert_model *m, const char *const *texts, int count,
                                 float *scores)
{
    vkbert_status status = check_texts(m, texts, count, scores);
    if (status) return status;
    if (!m->labels)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "the model has no classifier (no classifier.weight in its safetensors)");
    text_job job = {m, NULL, count, 0, RUN_LOGITS, 0, (uint32_t)m->labels, scores};
    status = run_texts(&job, NULL, texts, NULL);
    if (status || m->problem == BERT_PROBLEM_REGRESSION) return status;
    int sigmoids = m->labels == 1 || m->problem == BERT_PROBLEM_MULTI_LABEL;
    for (int i = 0; i < count; i++) {
        float *row = scores + (size_t)i * m->labels;
        if (!sigmoids) softmax(row, m->labels);
        for (int j = 0; sigmoids && j < m->labels; j++)
            row[j] = sigmoid(row[j]);
    }
    return VKBERT_OK;
}
