/* The text calls of a model: tokenize every input, sort by length so that padding is small (as
 * sentence-transformers does), run batches through the encoder, put the rows back in order. */
#define _POSIX_C_SOURCE 200809L

#include "nn/model/model.h"

#include <stdlib.h>
#include <string.h>

/* sentence-transformers' default batch size. */
#define BATCH_TEXTS 32

/* An input's length and index: sorted longest first, ties in input order. */
typedef struct by_length {
    int count, index;
} by_length;

static int longer_first(const void *a, const void *b)
{
    const by_length *x = a, *y = b;
    return x->count != y->count ? y->count - x->count : x->index - y->index;
}

static vkbert_status run_sorted(vkbert_model *m, const model_run *run,
                                const vkbert_encoding *inputs, int count)
{
    int *order = malloc((size_t)count * sizeof *order);
    by_length *lengths = malloc((size_t)count * sizeof *lengths);
    vkbert_status status = VKBERT_OK;
    if (!order || !lengths)
        status = vkb_fail(m->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; !status && i < count; i++)
        lengths[i] = (by_length){inputs[i].count, i};
    if (!status) qsort(lengths, (size_t)count, sizeof *lengths, longer_first);
    for (int i = 0; !status && i < count; i++)
        order[i] = lengths[i].index;
    for (int first = 0; !status && first < count; first += BATCH_TEXTS) {
        int n = count - first < BATCH_TEXTS ? count - first : BATCH_TEXTS;
        status = vkb_model_run(m, run, inputs, order + first, n);
    }
    free(order);
    free(lengths);
    return status;
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

/* Tokenizes texts[i] (after `query`, for a cross-encoder) by the rule and runs them all. */
static vkbert_status run_texts(vkbert_model *m, const model_rule *rule, const model_run *run,
                               const char *query, const char *const *texts, int count)
{
    vkbert_encoding *inputs = calloc((size_t)count, sizeof *inputs);
    vkbert_status status = VKBERT_OK;
    char err[VKB_ERROR_SIZE];
    if (!inputs) status = vkb_fail(m->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    double start = plat_now_ms();
    for (int i = 0; !status && i < count; i++) {
        status = query ? vkb_model_tokenize(m, rule, query, texts[i], &inputs[i], err, sizeof err)
                       : vkb_model_tokenize(m, rule, texts[i], NULL, &inputs[i], err, sizeof err);
        if (status) vkb_fail(m->ctx, status, "input %d: %s", i, err);
    }
    m->clock.tokenize_ms += plat_now_ms() - start;
    if (!status) status = run_sorted(m, run, inputs, count);
    for (int i = 0; inputs && i < count; i++)
        vkb_model_input_clear(&inputs[i]);
    free(inputs);
    return status;
}

static vkbert_status text_rule(vkbert_model *m, const char *prompt_name, const char *prompt,
                               model_rule *out)
{
    char err[VKB_ERROR_SIZE];
    vkbert_status status = vkb_model_text_rule(m, prompt_name, prompt, out, err, sizeof err);
    return status ? vkb_fail(m->ctx, status, "%s", err) : VKBERT_OK;
}

vkbert_status vkb_model_embed(vkbert_model *m, const char *const *texts, int count,
                              const vkbert_embed_options *options, float *embeddings)
{
    model_rule rule;
    model_run run = {RUN_SENTENCES, 0, vkb_encoder_embedding_width(m->encoder), embeddings};
    vkbert_status status = check_texts(m, texts, count, embeddings);
    /* The call's normalize overrides the model's (the Python package's embed(normalize=)
     * needs a per-call switch; sentence-transformers' encode() has normalize_embeddings). */
    if (!status)
        status = vkb_model_normalize(m, options->normalize, "vkbert_embed_options.normalize",
                                     &run.normalize);
    if (!status) status = text_rule(m, options->prompt_name, options->prompt, &rule);
    return status ? status : run_texts(m, &rule, &run, NULL, texts, count);
}

/* ---- classifiers: no prompt ---- */

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
    model_rule rule = {.truncate = m->truncate};
    model_run run = {RUN_LOGITS, 0, 1, scores};
    status = run_texts(m, &rule, &run, query, documents, count);
    if (!status) vkb_model_scores(m, scores, count, raw_scores ? SCORES_RAW : SCORES_RERANK);
    return status;
}

vkbert_status vkb_model_classify(vkbert_model *m, const char *const *texts, int count,
                                 float *scores)
{
    vkbert_status status = check_texts(m, texts, count, scores);
    if (!status) status = vkb_model_check_classifier(m);
    if (status) return status;
    model_rule rule = {.truncate = m->truncate};
    model_run run = {RUN_LOGITS, 0, (uint32_t)m->labels, scores};
    status = run_texts(m, &rule, &run, NULL, texts, count);
    if (!status) vkb_model_scores(m, scores, count, SCORES_CLASSIFY);
    return status;
}
