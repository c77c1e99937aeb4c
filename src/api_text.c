/* The public text API: tokenizers and models from folders. Argument checks and messages here;
 * the work in src/nn/model*.c. */
#include "api.h"
#include "nn/model.h"

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

static vkbert_status encode(const vkbert_tokenizer *t, const char *text, const char *pair,
                            int max_length, vkbert_encoding *e)
{
    if (!text) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "text is NULL");
    if (max_length < -1)
        return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT,
                               "max_length %d: 0 (the folder's limit), -1 (none) or a length",
                               max_length);
    tok_ids ids;
    char err[VKB_ERROR_SIZE];
    if (vkb_tokenizer_encode(t, text, pair, max_length == 0 ? t->max_length : max_length, &ids, err,
                             sizeof err))
        return vkb_fail_global(vkb_io_status(VKBERT_ERROR_INVALID_ARGUMENT), "%s", err);
    free(ids.mask);
    *e = (vkbert_encoding){.ids = ids.ids, .type_ids = ids.type_ids, .count = ids.count};
    return VKBERT_OK;
}

/* `out` is emptied first, so that vkbert_encoding_free may follow any failure. */
vkbert_status vkbert_tokenizer_encode(const vkbert_tokenizer *t, const char *text, const char *pair,
                                      int max_length, vkbert_encoding *out)
{
    if (!out) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "out is NULL");
    uint32_t size;
    vkbert_status status = vkb_struct_out_size(NULL, out, VKB_SIZE_THROUGH(vkbert_encoding, count),
                                               "vkbert_encoding", &size);
    if (status) return status;
    vkbert_encoding e = {0};
    vkb_struct_out(out, size, &e, sizeof e);
    CHECK_HANDLE(t, BAD_HANDLE);
    status = encode(t, text, pair, max_length, &e);
    if (!status) vkb_struct_out(out, size, &e, sizeof e);
    return status;
}

/* Frees what a vkbert_encoding of the caller's struct_size holds, and keeps that size so the
 * struct can be used again. One whose struct_size is wrong was never written by
 * vkbert_tokenizer_encode (it refuses such a struct), so its pointers are not the library's. */
void vkbert_encoding_free(vkbert_encoding *e)
{
    uint32_t size;
    if (!e || vkb_struct_out_size(NULL, e, VKB_SIZE_THROUGH(vkbert_encoding, count),
                                  "vkbert_encoding", &size))
        return;
    free(e->ids);
    free(e->type_ids);
    vkbert_encoding empty = {0};
    vkb_struct_out(e, size, &empty, sizeof empty);
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
    RUN_LOCKED(model, model_embed(model, texts, count, options, embeddings));
}

vkbert_status vkbert_model_rerank(vkbert_model *model, const char *query,
                                  const char *const *documents, int count, int raw_scores,
                                  float *scores)
{
    RUN_LOCKED(model, vkb_model_rerank(model, query, documents, count, raw_scores, scores));
}

vkbert_status vkbert_model_classify(vkbert_model *model, const char *const *texts, int count,
                                    float *scores)
{
    RUN_LOCKED(model, vkb_model_classify(model, texts, count, scores));
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
