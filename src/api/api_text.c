/* The public text API: tokenizers and models from folders. Argument checks and messages here;
 * the work in src/nn/model/model*.c. */
#include "api/api.h"
#include "nn/model/model.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tokenizers (no context: messages go to vkbert_last_error(NULL)) ---- */

vkbert_status vkbert_tokenizer_load(const char *model_dir, vkbert_tokenizer **out)
{
    if (!out) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!model_dir) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "model_dir is NULL");
    vkbert_tokenizer *t = malloc(sizeof *t);
    if (!t) return vkb_fail_global(VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    char err[VKB_ERROR_SIZE];
    if (vkb_tokenizer_open(model_dir, NULL, t, err, sizeof err)) {
        free(t);
        return vkb_fail_global(vkb_io_status(VKBERT_ERROR_MALFORMED_FILE), "%s", err);
    }
    *out = t;
    return VKBERT_OK;
}

void vkbert_tokenizer_destroy(vkbert_tokenizer *t)
{
    if (!t) return;
    vkb_tokenizer_close(t);
    free(t);
}

int vkbert_tokenizer_max_length(const vkbert_tokenizer *t)
{
    CHECK_HANDLE(t, 0);
    return t->max_length;
}

/* A vkbert_encoding's first published size (0.3.0, when the tokenizers' and the models' token
 * structs became one), and the check of a caller's struct_size against it. */
#define ENCODING_FIRST VKB_SIZE_THROUGH(vkbert_encoding, full_count)

static vkbert_status encoding_size(const vkbert_encoding *e, uint32_t *size)
{
    return vkb_struct_out_size(NULL, e, ENCODING_FIRST, "vkbert_encoding", size);
}

/* Whether a caller's struct of `size` bytes holds `field`'s pointer (fields added since 0.3). */
#define ENCODING_HOLDS(size, field) ((size) >= VKB_SIZE_THROUGH(vkbert_encoding, field))

/* Hands an encoding's arrays over to a caller's struct of `size` bytes: those its header does
 * not know are freed here, or nobody could free them. */
static void keep_known(vkbert_encoding *e, uint32_t size)
{
    if (!ENCODING_HOLDS(size, special_tokens_mask)) free(e->special_tokens_mask);
    if (!ENCODING_HOLDS(size, offsets)) free(e->offsets);
    if (!ENCODING_HOLDS(size, attention_mask)) free(e->attention_mask);
    if (!ENCODING_HOLDS(size, special_tokens_mask)) e->special_tokens_mask = NULL;
    if (!ENCODING_HOLDS(size, offsets)) e->offsets = NULL;
    if (!ENCODING_HOLDS(size, attention_mask)) e->attention_mask = NULL;
}

/* The public max_length as tok_encode's: the folder's limit, none, the file's rules or a
 * length. */
static int encode_limit(const vkbert_tokenizer *t, int max_length)
{
    if (max_length == VKBERT_TOKENIZER_FILE_RULES) return TOK_FILE_RULES;
    if (max_length == -1) return INT_MAX;
    return max_length == 0 ? t->max_length : max_length;
}

static vkbert_status encode(const vkbert_tokenizer *t, const char *text, const char *pair,
                            int max_length, vkbert_encoding *e)
{
    if (!text) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "text is NULL");
    if (max_length < VKBERT_TOKENIZER_FILE_RULES)
        return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT,
                               "max_length %d: 0 (the folder's limit), -1 (none), -2 "
                               "(VKBERT_TOKENIZER_FILE_RULES) or a length",
                               max_length);
    tok_ids ids;
    char err[VKB_ERROR_SIZE];
    if (vkb_tokenizer_encode(t, text, pair, encode_limit(t, max_length), 0, &ids, err, sizeof err))
        return vkb_fail_global(vkb_io_status(VKBERT_ERROR_INVALID_ARGUMENT), "%s", err);
    vkb_encoding_from_ids(&ids, e);
    return VKBERT_OK;
}

/* `out` is emptied first, so that vkbert_encoding_free may follow any failure. */
vkbert_status vkbert_tokenizer_encode(const vkbert_tokenizer *t, const char *text, const char *pair,
                                      int max_length, vkbert_encoding *out)
{
    if (!out) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "out is NULL");
    uint32_t size;
    vkbert_status status = encoding_size(out, &size);
    if (status) return status;
    vkbert_encoding e = {0};
    vkb_struct_out(out, size, &e, sizeof e);
    CHECK_HANDLE(t, BAD_HANDLE);
    status = encode(t, text, pair, max_length, &e);
    if (!status) keep_known(&e, size);
    if (!status) vkb_struct_out(out, size, &e, sizeof e);
    return status;
}

/* Frees what a vkbert_encoding of the caller's struct_size holds, and keeps that size so the
 * struct can be used again. One whose struct_size is wrong was never written by
 * vkbert_tokenizer_encode or vkbert_model_encode (they refuse such a struct), so its pointers
 * are not the library's. */
void vkbert_encoding_free(vkbert_encoding *e)
{
    uint32_t size;
    if (!e || encoding_size(e, &size)) return;
    free(e->ids);
    free(e->type_ids);
    if (ENCODING_HOLDS(size, special_tokens_mask)) free(e->special_tokens_mask);
    if (ENCODING_HOLDS(size, offsets)) free(e->offsets);
    if (ENCODING_HOLDS(size, attention_mask)) free(e->attention_mask);
    vkbert_encoding empty = {0};
    vkb_struct_out(e, size, &empty, sizeof empty);
}

vkbert_status vkbert_tokenizer_decode(const vkbert_tokenizer *t, const int32_t *ids, int count,
                                      int skip_special_tokens, char **text)
{
    if (!text) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "text is NULL");
    *text = NULL;
    CHECK_HANDLE(t, BAD_HANDLE);
    if (count < 0 || (count > 0 && !ids))
        return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT,
                               "count is %d and ids %s: a count of 0 or more ids is needed", count,
                               ids ? "given" : "NULL");
    char err[VKB_ERROR_SIZE];
    if (tok_decode(t->tok, ids, (size_t)count, skip_special_tokens != 0, text, err, sizeof err))
        return vkb_fail_global(vkb_io_status(VKBERT_ERROR_INVALID_ARGUMENT), "%s", err);
    return VKBERT_OK;
}

const char *vkbert_tokenizer_token(const vkbert_tokenizer *t, int32_t id)
{
    CHECK_HANDLE(t, NULL);
    return tok_token(t->tok, id);
}

int32_t vkbert_tokenizer_token_id(const vkbert_tokenizer *t, const char *token)
{
    CHECK_HANDLE(t, -1);
    CHECK_HANDLE(token, -1);
    return tok_id(t->tok, token);
}

/* ---- models ---- */

#define CHECK_MODEL(model) CHECK_HANDLE(model, BAD_HANDLE)

static vkbert_status model_load(vkbert_context *ctx, const char *model_dir,
                                const vkbert_model_config *config, vkbert_model **out)
{
    CHECK_ARG(ctx, model_dir && out, "model_dir or out is NULL");
    *out = NULL;
    vkbert_model_config c;
    vkbert_status status = STRUCT_IN(ctx, vkbert_model_config, no_truncate, config, &c);
    return status ? status : vkb_model_load(ctx, model_dir, &c, out);
}

vkbert_status vkbert_model_load(vkbert_context *ctx, const char *model_dir,
                                const vkbert_model_config *config, vkbert_model **out)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    VKB_RUN_LOCKED(ctx, model_load(ctx, model_dir, config, out));
}

void vkbert_model_destroy(vkbert_model *model)
{
    if (!model) return;
    vkbert_context *ctx = model->ctx; /* read before the model is freed */
    vkb_lock(ctx);
    vkb_model_free(model);
    vkb_unlock(ctx);
}

int vkbert_model_dimension(const vkbert_model *model)
{
    CHECK_HANDLE(model, 0);
    return (int)vkb_encoder_embedding_width(model->encoder);
}

vkbert_status vkbert_model_time_split(const vkbert_model *model, vkbert_time_split *out)
{
    CHECK_MODEL(model);
    CHECK_ARG(model->ctx, out, "out is NULL");
    uint32_t size;
    vkbert_status status = vkb_struct_out_size(
        model->ctx, out, VKB_SIZE_THROUGH(vkbert_time_split, passes), "vkbert_time_split", &size);
    if (status) return status;
    vkb_lock(model->ctx);
    const encoder_clock *c = &model->encoder->clock;
    vkbert_time_split t = {
        .struct_size = sizeof t,
        .load_ms = model->clock.load_ms,
        .tokenize_ms = model->clock.tokenize_ms,
        .prepare_ms = model->clock.prepare_ms + c->prepare_ms,
        .wait_ms = c->wait_ms,
        .read_ms = model->clock.read_ms + c->read_ms,
        .gpu_ms = c->gpu_ms,
        .passes = c->passes,
    };
    vkb_unlock(model->ctx);
    vkb_struct_out(out, size, &t, sizeof t);
    return VKBERT_OK;
}

const vkbert_tokenizer *vkbert_model_tokenizer(const vkbert_model *model)
{
    CHECK_HANDLE(model, NULL);
    return &model->tokenizer;
}

int vkbert_model_labels(const vkbert_model *model)
{
    CHECK_HANDLE(model, 0);
    return model->labels;
}

const char *vkbert_model_label(const vkbert_model *model, int index)
{
    CHECK_HANDLE(model, NULL);
    return index >= 0 && index < model->labels ? model->label_names[index] : NULL;
}

/* Runs one text call under the context's lock, failing it when validation spoke. */
#define RUN_LOCKED(model, call)                                                                    \
    do {                                                                                           \
        CHECK_MODEL(model);                                                                        \
        VKB_RUN_LOCKED((model)->ctx, call);                                                        \
    } while (0)

/* A result that is not finite (weights or activations beyond float range: 3e38 weights in
 * fp32, 65504 in fp16) fails the call: JSON cannot hold it and a NaN score has no order. The
 * rows are all written even then, so that a caller batching many callers' inputs (vkbert
 * serve) can fail only those whose rows are not finite. */
static vkbert_status check_finite(vkbert_model *model, vkbert_status status, const float *out,
                                  int rows, int width)
{
    if (status) return status;
    for (size_t i = 0, n = (size_t)rows * (size_t)width; i < n; i++)
        if (!isfinite(out[i]))
            return vkb_fail(model->ctx, VKBERT_ERROR_DEVICE_LIMIT,
                            "the model produced non-finite values (inf or NaN) for input %zu: its "
                            "weights or activations exceed the range of its floating-point type",
                            i / (size_t)width);
    return VKBERT_OK;
}

static vkbert_status model_embed(vkbert_model *model, const char *const *texts, int count,
                                 const vkbert_embed_options *options, float *embeddings)
{
    vkbert_embed_options o;
    vkbert_status status = STRUCT_IN(model->ctx, vkbert_embed_options, normalize, options, &o);
    return status ? status : vkb_model_embed(model, texts, count, &o, embeddings);
}

vkbert_status vkbert_model_embed(vkbert_model *model, const char *const *texts, int count,
                                 const vkbert_embed_options *options, float *embeddings)
{
    RUN_LOCKED(model, check_finite(model, model_embed(model, texts, count, options, embeddings),
                                   embeddings, count, vkbert_model_dimension(model)));
}

vkbert_status vkbert_model_rerank(vkbert_model *model, const char *query,
                                  const char *const *documents, int count, int raw_scores,
                                  float *scores)
{
    RUN_LOCKED(model,
               check_finite(model,
                            vkb_model_rerank(model, query, documents, count, raw_scores, scores),
                            scores, count, 1));
}

vkbert_status vkbert_model_classify(vkbert_model *model, const char *const *texts, int count,
                                    float *scores)
{
    RUN_LOCKED(model, check_finite(model, vkb_model_classify(model, texts, count, scores), scores,
                                   count, model->labels));
}

/* ---- pre-tokenized inputs ---- */

/* Tokenizing runs without the lock; a failure's message goes to the context under it. */
static vkbert_status encode_failed(vkbert_context *ctx, vkbert_status status, const char *err)
{
    vkb_lock(ctx);
    vkb_fail(ctx, status, "%s", err);
    return vkb_unlock_return(ctx, status);
}

static vkbert_status model_encode(const vkbert_model *model, const char *text, const char *pair,
                                  const vkbert_encode_options *options, vkbert_encoding *in,
                                  char *err, size_t size)
{
    vkbert_encode_options o;
    if (STRUCT_IN(NULL, vkbert_encode_options, truncate_left, options, &o)) {
        snprintf(err, size, "%s", vkb_global_error());
        return VKBERT_ERROR_INVALID_ARGUMENT;
    }
    if (!text) {
        snprintf(err, size, "text is NULL");
        return VKBERT_ERROR_INVALID_ARGUMENT;
    }
    return vkb_model_encode(model, text, pair, &o, in, err, size);
}

/* `out` is emptied first, so that vkbert_encoding_free may follow any failure. */
vkbert_status vkbert_model_encode(const vkbert_model *model, const char *text, const char *pair,
                                  const vkbert_encode_options *options, vkbert_encoding *out)
{
    if (!out) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "out is NULL");
    uint32_t size;
    vkbert_status status = encoding_size(out, &size);
    if (status) return status;
    vkbert_encoding in = {0};
    vkb_struct_out(out, size, &in, sizeof in);
    CHECK_MODEL(model);
    char err[VKB_ERROR_SIZE];
    status = model_encode(model, text, pair, options, &in, err, sizeof err);
    if (status) return encode_failed(model->ctx, status, err);
    keep_known(&in, size);
    vkb_struct_out(out, size, &in, sizeof in);
    return VKBERT_OK;
}

/* The caller's array in full-size structs: every entry's struct_size is inputs[0]'s, the
 * array's stride (as vkbert_list_devices' infos). *out is malloc'd. */
static vkbert_status copy_inputs(vkbert_model *model, const vkbert_encoding *inputs, int count,
                                 vkbert_encoding **out)
{
    *out = NULL;
    CHECK_ARG(model->ctx, inputs && count > 0, "inputs is NULL or count is not positive");
    uint32_t stride = inputs[0].struct_size;
    vkbert_encoding *copy = malloc((size_t)count * sizeof *copy);
    if (!copy) return vkb_fail(model->ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    vkbert_status status = VKBERT_OK;
    for (int i = 0; !status && i < count; i++) {
        const unsigned char *at = (const unsigned char *)inputs + (size_t)i * stride;
        uint32_t size;
        memcpy(&size, at, sizeof size);
        if (size != stride)
            status = vkb_fail(model->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                              "inputs[%d].struct_size is %u, not inputs[0]'s %u", i, size, stride);
        if (!status) status = STRUCT_IN(model->ctx, vkbert_encoding, full_count, at, &copy[i]);
    }
    if (status) free(copy);
    if (!status) *out = copy;
    return status;
}

static vkbert_status model_run_inputs(vkbert_model *model, const vkbert_encoding *inputs, int count,
                                      int flag, float *out, bool scores)
{
    vkbert_encoding *copy;
    vkbert_status status = copy_inputs(model, inputs, count, &copy);
    if (status) return status;
    status = scores ? vkb_model_score_inputs(model, copy, count, flag, out)
                    : vkb_model_embed_inputs(model, copy, count, flag, out);
    free(copy);
    int width = scores ? model->labels : vkbert_model_dimension(model);
    return check_finite(model, status, out, count, width);
}

vkbert_status vkbert_model_embed_inputs(vkbert_model *model, const vkbert_encoding *inputs,
                                        int count, int normalize, float *embeddings)
{
    RUN_LOCKED(model, model_run_inputs(model, inputs, count, normalize, embeddings, false));
}

vkbert_status vkbert_model_score_inputs(vkbert_model *model, const vkbert_encoding *inputs,
                                        int count, int raw_scores, float *scores)
{
    RUN_LOCKED(model, model_run_inputs(model, inputs, count, raw_scores, scores, true));
}

vkbert_status vkbert_model_describe(vkbert_model *model, char **json)
{
    CHECK_MODEL(model);
    vkb_lock(model->ctx);
    vkbert_status status =
        json ? vkb_model_describe(model, json)
             : vkb_fail(model->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "json is NULL");
    return vkb_unlock_return(model->ctx, status);
}

void vkbert_free(void *memory)
{
    free(memory);
}
