/* Tokenized inputs, the one path every model call takes: texts become inputs by a rule (the
 * prompt, truncation), and any inputs run as one batch through the encoder and its head,
 * packed with no padding where the encoder can; the scores' activation is chosen here once. */
#define _POSIX_C_SOURCE 200809L

#include "nn/model/model.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static vkbert_status say(vkbert_status status, char *err, size_t size, const char *fmt, ...)
    PLAT_PRINTF(4, 5);

/* The tokenizing half writes its messages to the caller's buffer: it runs without the
 * context's lock (vkbert_model_encode), so the context's message is set by its caller. */
static vkbert_status say(vkbert_status status, char *err, size_t size, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(err, size, fmt, args);
    va_end(args);
    return status;
}

/* ---- texts to inputs ---- */

static vkbert_status find_prompt(const vkbert_model *m, const char *name, const char *given,
                                 bool by_default, const char **out, char *err, size_t size)
{
    *out = given;
    if (given && name)
        return say(VKBERT_ERROR_INVALID_ARGUMENT, err, size,
                   "give a prompt or a prompt name, not both");
    if (!given && !name && by_default) name = m->st.default_prompt_name;
    for (int i = 0; name && i < m->st.prompt_count; i++)
        if (strcmp(m->st.prompts[i].name, name) == 0) *out = m->st.prompts[i].text;
    if (name && !*out)
        return say(VKBERT_ERROR_INVALID_ARGUMENT, err, size, "the model has no prompt named \"%s\"",
                   name);
    return VKBERT_OK;
}

/* sentence-transformers' prompt_length: the prompt's own ids, less the final [SEP]. */
static vkbert_status prompt_length(const vkbert_model *m, const char *prompt, int *out, char *err,
                                   size_t size)
{
    *out = 0;
    /* A folder without a Pooling module pools as its default does: prompt included. */
    if (!prompt || !m->st.has_pooling || m->st.include_prompt) return VKBERT_OK;
    tok_ids t;
    char why[VKB_ERROR_SIZE];
    if (vkb_tokenizer_encode(&m->tokenizer, prompt, NULL, m->max_length, 0, &t, why, sizeof why))
        return say(VKBERT_ERROR_INVALID_ARGUMENT, err, size, "prompt: %s", why);
    *out = t.count - 1;
    tok_ids_free(&t);
    return VKBERT_OK;
}

static vkbert_status make_rule(const vkbert_model *m, const char *prompt_name, const char *prompt,
                               bool by_default, int truncate, int left, model_rule *out, char *err,
                               size_t size)
{
    if (truncate < -1 || truncate > 1)
        return say(VKBERT_ERROR_INVALID_ARGUMENT, err, size,
                   "truncate is %d: 0 (the model's), 1 or -1", truncate);
    *out = (model_rule){.truncate = truncate ? truncate > 0 : m->truncate, .left = left != 0};
    vkbert_status status = find_prompt(m, prompt_name, prompt, by_default, &out->prompt, err, size);
    return status ? status : prompt_length(m, out->prompt, &out->prompt_tokens, err, size);
}

vkbert_status vkb_model_text_rule(const vkbert_model *m, const char *prompt_name,
                                  const char *prompt, model_rule *out, char *err, size_t size)
{
    return make_rule(m, prompt_name, prompt, true, 0, 0, out, err, size);
}

static char *join(const char *prefix, const char *text)
{
    size_t a = strlen(prefix), b = strlen(text);
    char *joined = malloc(a + b + 1);
    if (!joined) return NULL;
    memcpy(joined, prefix, a);
    memcpy(joined + a, text, b + 1);
    return joined;
}

/* The prompt's tokens left in a text cut from its start: those cut go first, [CLS] stays. */
static int prompt_left(const model_rule *r, const tok_ids *t)
{
    int cut = t->full_count - t->count, kept = r->prompt_tokens - cut;
    if (!r->prompt_tokens || !r->left) return r->prompt_tokens;
    return kept > 1 ? kept : 1;
}

vkbert_status vkb_model_tokenize(const vkbert_model *m, const model_rule *r, const char *text,
                                 const char *pair, vkbert_encoding *out, char *err, size_t size)
{
    char *joined = NULL, why[VKB_ERROR_SIZE];
    if (r->prompt && !pair && !(joined = join(r->prompt, text)))
        return say(VKBERT_ERROR_OUT_OF_MEMORY, err, size, "out of host memory");
    tok_ids t;
    int rc =
        vkb_tokenizer_encode(&m->tokenizer, joined ? joined : text, pair,
                             r->truncate ? m->max_length : INT_MAX, r->left, &t, why, sizeof why);
    free(joined);
    if (rc) return say(vkb_io_status(VKBERT_ERROR_INVALID_ARGUMENT), err, size, "%s", why);
    if (t.count > m->max_length) {
        int count = t.count;
        tok_ids_free(&t);
        return say(VKBERT_ERROR_INVALID_ARGUMENT, err, size,
                   "%d tokens, over the model's limit of %d (truncation is off)", count,
                   m->max_length);
    }
    int prompt_tokens = pair ? 0 : prompt_left(r, &t);
    vkb_encoding_from_ids(&t, out);
    out->prompt_tokens = prompt_tokens;
    return VKBERT_OK;
}

/* A classifier's texts get no default prompt: vkbert_model_classify's and _rerank's get none,
 * and their scores must be equal. */
vkbert_status vkb_model_encode(const vkbert_model *m, const char *text, const char *pair,
                               const vkbert_encode_options *o, vkbert_encoding *out, char *err,
                               size_t size)
{
    model_rule rule;
    vkbert_status status = make_rule(m, o->prompt_name, o->prompt, !m->labels, o->truncate,
                                     o->truncate_left, &rule, err, size);
    return status ? status : vkb_model_tokenize(m, &rule, text, pair, out, err, size);
}

void vkb_encoding_from_ids(tok_ids *t, vkbert_encoding *out)
{
    *out = (vkbert_encoding){.struct_size = sizeof *out,
                             .ids = t->ids,
                             .type_ids = t->type_ids,
                             .count = t->count,
                             .full_count = t->full_count,
                             .special_tokens_mask = t->special,
                             .offsets = t->offsets,
                             .attention_mask = t->mask};
    *t = (tok_ids){0};
}

void vkb_model_input_clear(vkbert_encoding *input)
{
    free(input->ids);
    free(input->type_ids);
    free(input->special_tokens_mask);
    free(input->offsets);
    free(input->attention_mask);
    input->ids = input->type_ids = input->special_tokens_mask = NULL;
    input->offsets = input->attention_mask = NULL;
}

/* ---- inputs to results ---- */

static const vkbert_encoding *input_at(const vkbert_encoding *in, const int *order, int b)
{
    return &in[order ? order[b] : b];
}

/* The batch's ids, token types and prompt lengths: packed one input after another, their
 * offsets in `offsets` (encoder_ragged.c), or, with `mask`, padded to the longest input. */
static void fill_batch(const vkbert_model *m, const vkbert_encoding *in, const int *order, int n,
                       int seq, int32_t *ids, int32_t *types, int32_t *mask, int32_t *offsets,
                       int *prompts)
{
    /* a tokenizer without a padding token pads with 0: the mask hides what pads */
    int32_t pad = tok_pad_id(m->tokenizer.tok) >= 0 ? tok_pad_id(m->tokenizer.tok) : 0;
    offsets[0] = 0;
    for (int b = 0; b < n; b++) {
        const vkbert_encoding *t = input_at(in, order, b);
        int width = mask ? seq : t->count;
        offsets[b + 1] = offsets[b] + width;
        for (int s = 0; s < width; s++) {
            size_t at = (size_t)offsets[b] + s;
            ids[at] = s < t->count ? t->ids[s] : pad;
            types[at] = s < t->count && t->type_ids ? t->type_ids[s] : 0;
            if (mask) mask[at] = s < t->count;
        }
        prompts[b] = t->prompt_tokens;
    }
}

/* Packed where the encoder can (no padding is ever built), else padded. */
vkbert_status vkb_model_run(vkbert_model *m, const model_run *run, const vkbert_encoding *in,
                            const int *order, int n)
{
    int seq = 0;
    size_t tokens = 0, width = run->width;
    for (int b = 0; b < n; b++) {
        int count = input_at(in, order, b)->count;
        seq = count > seq ? count : seq, tokens += (size_t)count;
    }
    bool packed = encoder_can_pack(m->encoder);
    size_t cells = packed ? tokens : (size_t)n * (size_t)seq;
    int32_t *ids = malloc(cells * 4), *types = malloc(cells * 4);
    int32_t *mask = packed ? NULL : malloc(cells * 4), *offsets = malloc(((size_t)n + 1) * 4);
    int *prompts = malloc((size_t)n * sizeof *prompts);
    float *rows = order ? malloc((size_t)n * width * sizeof *rows) : run->out;
    vkbert_status status = VKBERT_OK;
    if (!ids || !types || (!packed && !mask) || !offsets || !prompts || !rows)
        status = vkb_fail(m->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (!status) {
        double start = plat_now_ms();
        fill_batch(m, in, order, n, seq, ids, types, mask, offsets, prompts);
        m->clock.prepare_ms += plat_now_ms() - start;
        encoder_batch batch = {n, seq, ids, types, mask, prompts, packed ? offsets : NULL};
        status = run->kind == RUN_SENTENCES
                     ? vkb_encoder_sentences(m->encoder, &batch, run->normalize, rows)
                     : vkb_encoder_logits(m->encoder, &batch, rows);
    }
    double start = plat_now_ms();
    for (int b = 0; order && !status && b < n; b++)
        memcpy(run->out + (size_t)order[b] * width, rows + (size_t)b * width, width * sizeof *rows);
    m->clock.read_ms += plat_now_ms() - start;
    free(ids), free(types), free(mask), free(offsets), free(prompts);
    if (order) free(rows);
    return status;
}

static float sigmoid(float x)
{
    return (float)(1.0 / (1.0 + exp(-(double)x)));
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

/* One row of scores through a CrossEncoder's activation_fn, as torch computes it in float
 * (GELU the exact erf form). */
static void activate(int act, float *row, int n)
{
    if (act == ST_ACT_SOFTMAX) softmax(row, n);
    for (int j = 0; act != ST_ACT_SOFTMAX && j < n; j++) {
        double x = row[j];
        if (act == ST_ACT_SIGMOID) row[j] = sigmoid(row[j]);
        if (act == ST_ACT_TANH) row[j] = (float)tanh(x);
        if (act == ST_ACT_RELU) row[j] = x > 0 ? row[j] : 0.0f;
        if (act == ST_ACT_GELU) row[j] = (float)(0.5 * x * (1.0 + erf(x / sqrt(2.0))));
    }
}

/* A cross-encoder folder's activation (activation_fn) is what CrossEncoder.predict applies,
 * for rerank and classify alike. Without one, sentence-transformers' CrossEncoder scores one
 * label with the sigmoid whatever the problem type; transformers' text-classification
 * pipeline leaves regression's logits as they are, takes the sigmoid of one label or of each
 * with multi_label_classification, else softmax. */
void vkb_model_scores(const vkbert_model *m, float *scores, int count, score_rule rule)
{
    if (rule == SCORES_RAW) return;
    for (int i = 0; m->score_activation >= 0 && i < count; i++)
        activate(m->score_activation, scores + (size_t)i * m->labels, m->labels);
    if (m->score_activation >= 0 ||
        (rule == SCORES_CLASSIFY && m->problem == BERT_PROBLEM_REGRESSION))
        return;
    int sigmoids = m->labels == 1 || m->problem == BERT_PROBLEM_MULTI_LABEL;
    for (int i = 0; i < count; i++) {
        float *row = scores + (size_t)i * m->labels;
        if (!sigmoids) softmax(row, m->labels);
        for (int j = 0; sigmoids && j < m->labels; j++)
            row[j] = sigmoid(row[j]);
    }
}

/* ---- the pre-tokenized calls ---- */

static vkbert_status check_ids(vkbert_model *m, const int32_t *ids, int count, int32_t limit,
                               int input, const char *name)
{
    for (int s = 0; ids && s < count; s++)
        if (ids[s] < 0 || ids[s] >= limit)
            return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                            "input %d: %s[%d] = %d is outside [0, %d)", input, name, s, ids[s],
                            limit);
    return VKBERT_OK;
}

/* Checked on the host, so that the message names the input and no pass runs. */
static vkbert_status check_inputs(vkbert_model *m, const vkbert_encoding *in, int count,
                                  const void *out)
{
    if (count < 1 || !in || !out)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "count must be positive, inputs and the output non-NULL");
    vkbert_status status = VKBERT_OK;
    for (int i = 0; !status && i < count; i++) {
        const vkbert_encoding *t = &in[i];
        if (t->count < 1 || t->count > m->config.max_position_embeddings || !t->ids)
            return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                            "input %d has %d tokens: it needs 1 to %d (max_position_embeddings) "
                            "and non-NULL ids",
                            i, t->count, m->config.max_position_embeddings);
        if (t->prompt_tokens < 0)
            return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                            "input %d: prompt_tokens is %d, negative", i, t->prompt_tokens);
        status = check_ids(m, t->ids, t->count, m->config.vocab_size, i, "ids");
        if (!status)
            status = check_ids(m, t->type_ids, t->count, m->config.type_vocab_size, i, "type_ids");
    }
    return status;
}

vkbert_status vkb_model_normalize(vkbert_model *m, int normalize, const char *name, int *out)
{
    if (normalize < -1 || normalize > 1)
        return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "%s is %d: 0 (the model's), 1 or -1",
                        name, normalize);
    *out = normalize ? normalize > 0 : m->normalize;
    return VKBERT_OK;
}

vkbert_status vkb_model_check_classifier(vkbert_model *m)
{
    if (m->labels) return VKBERT_OK;
    return vkb_fail(m->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                    "the model has no classifier (no classifier.weight in its safetensors)");
}

vkbert_status vkb_model_embed_inputs(vkbert_model *m, const vkbert_encoding *inputs, int count,
                                     int normalize, float *embeddings)
{
    model_run run = {RUN_SENTENCES, 0, vkb_encoder_embedding_width(m->encoder), embeddings};
    vkbert_status status = vkb_model_normalize(m, normalize, "normalize", &run.normalize);
    if (!status) status = check_inputs(m, inputs, count, embeddings);
    return status ? status : vkb_model_run(m, &run, inputs, NULL, count);
}

vkbert_status vkb_model_score_inputs(vkbert_model *m, const vkbert_encoding *inputs, int count,
                                     int raw_scores, float *scores)
{
    vkbert_status status = vkb_model_check_classifier(m);
    if (!status) status = check_inputs(m, inputs, count, scores);
    model_run run = {RUN_LOGITS, 0, (uint32_t)m->labels, scores};
    if (!status) status = vkb_model_run(m, &run, inputs, NULL, count);
    /* One label: the cross-encoder's score, what vkbert_model_rerank gives. */
    score_rule rule = raw_scores ? SCORES_RAW : m->labels == 1 ? SCORES_RERANK : SCORES_CLASSIFY;
    if (!status) vkb_model_scores(m, scores, count, rule);
    return status;
}
