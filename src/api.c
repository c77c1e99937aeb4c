/* The public API: argument checks, status codes, messages. Internals stop here. */
#include "nn/attention.h"
#include "nn/encoder.h"
#include "tensor.h"
#include "tune.h"

#include <stdlib.h>
#include <string.h>

#define CHECK_ARG(ctx, cond, msg)                                                                  \
    do {                                                                                           \
        if (!(cond)) return vkb_fail((ctx), VKBERT_ERROR_INVALID_ARGUMENT, "%s", (msg));           \
    } while (0)

/* A context whose device was lost refuses work before touching the device. */
#define CHECK_ALIVE(ctx)                                                                           \
    do {                                                                                           \
        vkbert_status alive_ = vkb_check_alive(ctx);                                               \
        if (alive_) return alive_;                                                                 \
    } while (0)

const char *vkbert_status_name(vkbert_status status)
{
    static const char *names[] = {
        "VKBERT_OK",
        "VKBERT_ERROR_INVALID_ARGUMENT",
        "VKBERT_ERROR_NO_VULKAN",
        "VKBERT_ERROR_NO_DEVICE",
        "VKBERT_ERROR_DEVICE_LIMIT",
        "VKBERT_ERROR_OUT_OF_MEMORY",
        "VKBERT_ERROR_VULKAN",
        "VKBERT_ERROR_VALIDATION",
        "VKBERT_ERROR_DEVICE_LOST",
    };
    if ((unsigned)status < sizeof names / sizeof *names) return names[status];
    return "VKBERT_ERROR_UNKNOWN";
}

const char *vkbert_device_type_name(vkbert_device_type type)
{
    switch (type) {
    case VKBERT_DEVICE_DISCRETE_GPU:
        return "discrete";
    case VKBERT_DEVICE_INTEGRATED_GPU:
        return "integrated";
    case VKBERT_DEVICE_VIRTUAL_GPU:
        return "virtual";
    case VKBERT_DEVICE_CPU:
        return "cpu";
    default:
        return "other";
    }
}

vkbert_status vkbert_context_create(const vkbert_context_options *options, vkbert_context **out)
{
    if (!out) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    double start = vkb_now_ms();
    vkbert_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return vkb_fail_global(VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    static atomic_uint_fast64_t next_serial = 1;
    ctx->serial = atomic_fetch_add(&next_serial, 1);
    if (!vkb_lock_init(ctx)) {
        free(ctx);
        return vkb_fail_global(VKBERT_ERROR_OUT_OF_MEMORY, "cannot make the context's lock");
    }
    vkbert_status status = vkb_context_init(ctx, options);
    if (!status) vkb_tune_cache_load(ctx); /* never fails: a bad cache is ignored */
    if (!status) status = vkb_check_validation(ctx, 0);
    ctx->startup_ms = vkb_now_ms() - start;
    if (status) {
        vkb_fail_global(status, "%s", ctx->error);
        vkb_context_release(ctx);
        vkb_tune_cache_free(ctx);
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return status;
    }
    *out = ctx;
    return VKBERT_OK;
}

void vkbert_context_destroy(vkbert_context *ctx)
{
    if (!ctx) return;
    vkb_context_release(ctx);
    vkb_tune_cache_free(ctx);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

vkbert_status vkbert_context_startup_ms(const vkbert_context *ctx, double *context_ms,
                                        double *pipelines_ms)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_LOCKED(ctx);
    if (context_ms) *context_ms = ctx->startup_ms;
    if (pipelines_ms) *pipelines_ms = ctx->pipeline_ms;
    return VKBERT_OK;
}

vkbert_status vkbert_tune_save(vkbert_context *ctx, const char *json, char *path, size_t path_size)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_LOCKED(ctx);
    CHECK_ARG(ctx, json, "json is NULL");
    return vkb_tune_cache_save(ctx, json, path, path_size);
}

const char *vkbert_last_error(const vkbert_context *ctx)
{
    return ctx ? vkb_last_error(ctx) : vkb_global_error();
}

vkbert_status vkbert_context_device(const vkbert_context *ctx, vkbert_device_info *info)
{
    if (!ctx) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "ctx is NULL");
    VKB_LOCKED(ctx);
    CHECK_ARG((vkbert_context *)ctx, info, "info is NULL");
    *info = ctx->info;
    return VKBERT_OK;
}

uint32_t vkbert_validation_messages(const vkbert_context *ctx, char *first, size_t first_size)
{
    if (!ctx) return 0;
    VKB_LOCKED(ctx);
    if (first && first_size) {
        strncpy(first, ctx->validation_first, first_size - 1);
        first[first_size - 1] = '\0';
    }
    return ctx->validation_count;
}

/* ---- tensors ---- */

vkbert_status vkbert_tensor_create(vkbert_context *ctx, int ndim, const int64_t *shape,
                                   vkbert_tensor **out)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_LOCKED(ctx);
    CHECK_ARG(ctx, out, "out is NULL");
    CHECK_ALIVE(ctx);
    uint32_t before = ctx->validation_count;
    vkbert_status status = vkb_tensor_new(ctx, ndim, shape, out);
    return status ? status : vkb_check_validation(ctx, before);
}

void vkbert_tensor_destroy(vkbert_context *ctx, vkbert_tensor *tensor)
{
    VKB_LOCKED(ctx);
    if (ctx) vkb_tensor_free(ctx, tensor);
}

static vkbert_status check_count(vkbert_context *ctx, const vkbert_tensor *t, const float *data,
                                 size_t count)
{
    CHECK_ARG(ctx, t && data, "tensor or data is NULL");
    if (count != vkb_tensor_count(t))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "count %zu does not match the tensor's %zu elements", count,
                        vkb_tensor_count(t));
    return VKBERT_OK;
}

vkbert_status vkbert_tensor_write(vkbert_context *ctx, vkbert_tensor *tensor, const float *data,
                                  size_t count)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_LOCKED(ctx);
    CHECK_ALIVE(ctx);
    vkbert_status status = check_count(ctx, tensor, data, count);
    uint32_t before = ctx->validation_count;
    if (!status) status = vkb_tensor_write(ctx, tensor, data);
    return status ? status : vkb_check_validation(ctx, before);
}

vkbert_status vkbert_tensor_read(vkbert_context *ctx, const vkbert_tensor *tensor, float *data,
                                 size_t count)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_LOCKED(ctx);
    CHECK_ALIVE(ctx);
    vkbert_status status = check_count(ctx, tensor, data, count);
    uint32_t before = ctx->validation_count;
    if (!status) status = vkb_tensor_read(ctx, tensor, data);
    return status ? status : vkb_check_validation(ctx, before);
}

int vkbert_tensor_shape(const vkbert_tensor *tensor, int64_t shape[VKBERT_MAX_DIMS])
{
    if (!tensor) return 0;
    if (shape) memcpy(shape, tensor->shape, (size_t)tensor->ndim * sizeof *shape);
    return tensor->ndim;
}

/* ---- the attention layer ---- */

vkbert_status vkbert_attention_create(vkbert_context *ctx, int embed_dim, int num_heads,
                                      const vkbert_attention_weights *weights,
                                      vkbert_attention **out)
{
    return vkbert_attention_create_ex(ctx, embed_dim, num_heads, weights, NULL, out);
}

vkbert_status vkbert_attention_create_ex(vkbert_context *ctx, int embed_dim, int num_heads,
                                         const vkbert_attention_weights *weights,
                                         const vkbert_attention_config *config,
                                         vkbert_attention **out)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_LOCKED(ctx);
    CHECK_ARG(ctx, weights && out, "weights or out is NULL");
    CHECK_ALIVE(ctx);
    vkbert_attention_config fp32 = {VKBERT_PRECISION_FP32};
    if (!config) config = &fp32;
    CHECK_ARG(ctx,
              config->precision == VKBERT_PRECISION_FP32 ||
                  config->precision == VKBERT_PRECISION_FP16,
              "unknown precision");
    uint32_t before = ctx->validation_count;
    vkbert_status status = vkb_attention_new(ctx, embed_dim, num_heads, weights, config, out);
    return status ? status : vkb_check_validation(ctx, before);
}

void vkbert_attention_destroy(vkbert_attention *layer)
{
    VKB_LOCKED(layer ? layer->ctx : NULL);
    vkb_attention_free(layer);
}

vkbert_status vkbert_attention_forward(vkbert_attention *layer, const vkbert_tensor *x,
                                       const vkbert_tensor *mask,
                                       const vkbert_attention_options *options, vkbert_tensor *y)
{
    if (!layer) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_LOCKED(layer->ctx);
    CHECK_ARG(layer->ctx, x && y, "x or y is NULL");
    CHECK_ALIVE(layer->ctx);
    uint32_t before = layer->ctx->validation_count;
    vkbert_status status = vkb_attention_forward(layer, x, mask, options, y);
    return status ? status : vkb_check_validation(layer->ctx, before);
}

vkbert_status vkbert_attention_forward_host(vkbert_attention *layer, int batch, int seq_len,
                                            const float *x, const vkbert_mask *mask,
                                            const vkbert_attention_options *options, float *y)
{
    if (!layer) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_LOCKED(layer->ctx);
    CHECK_ALIVE(layer->ctx);
    uint32_t before = layer->ctx->validation_count;
    vkbert_status status = vkb_attention_forward_host(layer, batch, seq_len, x, mask, options, y);
    return status ? status : vkb_check_validation(layer->ctx, before);
}

vkbert_status vkbert_attention_timings(const vkbert_attention *layer, vkbert_timing *timings,
                                       uint32_t capacity, uint32_t *count)
{
    if (!layer || !count) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_LOCKED(layer->ctx);
    if (!layer->ctx->timestamps)
        return vkb_fail(layer->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "the context was made without timestamps");
    *count = layer->timing_count;
    for (uint32_t i = 0; i < layer->timing_count && i < capacity && timings; i++)
        timings[i] = layer->timings[i];
    return VKBERT_OK;
}

/* ---- the BERT encoder ---- */

vkbert_status vkbert_encoder_load(vkbert_context *ctx, const char *model_dir, vkbert_encoder **out)
{
    return vkbert_encoder_load_ex(ctx, model_dir, NULL, out);
}

vkbert_status vkbert_encoder_load_ex(vkbert_context *ctx, const char *model_dir,
                                     const vkbert_encoder_config *config, vkbert_encoder **out)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_LOCKED(ctx);
    CHECK_ARG(ctx, model_dir && out, "model_dir or out is NULL");
    CHECK_ALIVE(ctx);
    vkbert_precision precision = config ? config->precision : VKBERT_PRECISION_FP32;
    CHECK_ARG(ctx, precision == VKBERT_PRECISION_FP32 || precision == VKBERT_PRECISION_FP16,
              "unknown precision");
    *out = NULL;
    bert_model model;
    char err[VKB_ERROR_SIZE];
    if (bert_model_load(model_dir, &model, err, sizeof err))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "%s", err);
    uint32_t before = ctx->validation_count;
    vkbert_status status = vkb_encoder_new(ctx, &model.config, &model.weights, precision, out);
    bert_model_free(&model);
    return status ? status : vkb_check_validation(ctx, before);
}

void vkbert_encoder_destroy(vkbert_encoder *encoder)
{
    VKB_LOCKED(encoder ? encoder->ctx : NULL);
    vkb_encoder_free(encoder);
}

int vkbert_encoder_hidden_size(const vkbert_encoder *encoder)
{
    return encoder ? encoder->config.hidden_size : 0;
}

vkbert_status vkbert_encoder_forward_host(vkbert_encoder *encoder, int batch, int seq_len,
                                          const int32_t *input_ids, const int32_t *token_type_ids,
                                          const int32_t *attention_mask, float *hidden,
                                          float *pooled)
{
    if (!encoder) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_LOCKED(encoder->ctx);
    CHECK_ALIVE(encoder->ctx);
    uint32_t before = encoder->ctx->validation_count;
    vkbert_status status = vkb_encoder_forward_host(encoder, batch, seq_len, input_ids,
                                                    token_type_ids, attention_mask, hidden, pooled);
    return status ? status : vkb_check_validation(encoder->ctx, before);
}

vkbert_status vkbert_encoder_embed_host(vkbert_encoder *encoder, int batch, int seq_len,
                                        const int32_t *input_ids, const int32_t *token_type_ids,
                                        const int32_t *attention_mask, int normalize,
                                        float *embeddings)
{
    if (!encoder) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_LOCKED(encoder->ctx);
    CHECK_ALIVE(encoder->ctx);
    uint32_t before = encoder->ctx->validation_count;
    vkbert_status status = vkb_encoder_embed_host(
        encoder, batch, seq_len, input_ids, token_type_ids, attention_mask, normalize, embeddings);
    return status ? status : vkb_check_validation(encoder->ctx, before);
}
