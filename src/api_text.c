/* The public text API: tokenizers and models from folders. Argument checks and messages here;
 * the work in src/nn/model*.c. */
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
    return t ? t->max_length : 0;
}

vkbert_status vkbert_tokenizer_encode(const vkbert_tokenizer *t, const char *text, const char *pair,
                                      int max_length, vkbert_encoding *out)
{
    if (!out) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "out is NULL");
    memset(out, 0, sizeof *out);
    if (!t || !text)
        return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "tokenizer or text is NULL");
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
    out->ids = ids.ids;
    out->type_ids = ids.type_ids;
    out->count = ids.count;
    return VKBERT_OK;
}

void vkbert_encoding_free(vkbert_encoding *e)
{
    if (!e) return;
    free(e->ids);
    free(e->type_ids);
    memset(e, 0, sizeof *e);
}

const char *vkbert_tokenizer_token(const vkbert_tokenizer *t, int32_t id)
{
    return t ? tok_token(t->tok, id) : NULL;
}

int32_t vkbert_tokenizer_token_id(const vkbert_tokenizer *t, const char *token)
{
    return t && token ? tok_id(t->tok, token) : -1;
}

/* ---- models ---- */

#define CHECK_MODEL(model)                                                                         \
    do {                                                                                           \
        if (!(model)) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "model is NULL");      \
    } while (0)

vkbert_status vkbert_model_load(vkbert_context *ctx, const char *model_dir,
                                const vkbert_model_config *config, vkbert_model **out)
{
    if (!ctx) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "ctx is NULL");
    if (!model_dir || !out) {
        vkb_lock(ctx);
        return vkb_unlock_return(
            ctx, vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "model_dir or out is NULL"));
    }
    *out = NULL;
    VKB_RUN_LOCKED(ctx, vkb_model_load(ctx, model_dir, config, out));
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
    return model ? (int)vkb_encoder_embedding_width(model->encoder) : 0;
}

const vkbert_tokenizer *vkbert_model_tokenizer(const vkbert_model *model)
{
    return model ? &model->tokenizer : NULL;
}

int vkbert_model_labels(const vkbert_model *model)
{
    return model ? model->labels : 0;
}

const char *vkbert_model_label(const vkbert_model *model, int index)
{
    return model && index >= 0 && index < model->labels ? model->label_names[index] : NULL;
}

/* Runs one text call under the context's lock, failing it when validation spoke. */
#define RUN_LOCKED(model, call)                                                                    \
    do {                                                                                           \
        CHECK_MODEL(model);                                                                        \
        VKB_RUN_LOCKED((model)->ctx, call);                                                        \
    } while (0)

vkbert_status vkbert_model_embed(vkbert_model *model, const char *const *texts, int count,
                                 const vkbert_embed_options *options, float *embeddings)
{
    RUN_LOCKED(model, vkb_model_embed(model, texts, count, options, embeddings));
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
