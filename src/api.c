/* The public API: argument checks, status codes, messages. Internals stop here. */
#include "api_context.h"
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
        "VKBERT_ERROR_MALFORMED_FILE",
        "VKBERT_NOT_READY",
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
    return vkb_context_create(options, NULL, out);
}

vkbert_status vkb_context_create(const vkbert_context_options *options,
                                 const struct vkbert_vulkan_device *device, vkbert_context **out)
{
    if (!out) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    double start = plat_now_ms();
    vkbert_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return vkb_fail_global(VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    static atomic_uint_fast64_t next_serial = 1;
    ctx->serial = atomic_fetch_add(&next_serial, 1);
    if (!vkb_lock_init(ctx)) {
        free(ctx);
        return vkb_fail_global(VKBERT_ERROR_OUT_OF_MEMORY, "cannot make the context's lock");
    }
    vkbert_status status =
        device ? vkb_context_init_external(ctx, options, device) : vkb_context_init(ctx, options);
    if (!status) vkb_tune_cache_load(ctx); /* never fails: a bad cache is ignored */
    if (!status) status = vkb_check_validation(ctx, 0);
    ctx->startup_ms = plat_now_ms() - start;
    if (status) {
        vkb_fail_global(status, "%s", ctx->error);
        vkb_context_release(ctx);
        vkb_tune_cache_free(ctx);
        vkb_lock_free(ctx);
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
    vkb_lock_free(ctx);
    free(ctx);
}

vkbert_status vkbert_context_startup_ms(const vkbert_context *ctx, double *context_ms,
                                        double *pipelines_ms)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    vkb_lock(ctx);
    if (context_ms) *context_ms = ctx->startup_ms;
    if (pipelines_ms) *pipelines_ms = ctx->pipeline_ms;
    return vkb_unlock_return(ctx, VKBERT_OK);
}

static vkbert_status tune_save(vkbert_context *ctx, const char *json, char *path, size_t path_size)
{
    CHECK_ARG(ctx, json, "json is NULL");
    return vkb_tune_cache_save(ctx, json, path, path_size);
}

vkbert_status vkbert_tune_save(vkbert_context *ctx, const char *json, char *path, size_t path_size)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    vkb_lock(ctx);
    return vkb_unlock_return(ctx, tune_save(ctx, json, path, path_size));
}

const char *vkbert_last_error(const vkbert_context *ctx)
{
    return ctx ? vkb_last_error(ctx) : vkb_global_error();
}

vkbert_status vkbert_context_device(const vkbert_context *ctx, vkbert_device_info *info)
{
    if (!ctx) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "ctx is NULL");
    vkb_lock(ctx);
    vkbert_status status = VKBERT_OK;
    if (info)
        *info = ctx->info;
    else
        status = vkb_fail((vkbert_context *)ctx, VKBERT_ERROR_INVALID_ARGUMENT, "info is NULL");
    return vkb_unlock_return(ctx, status);
}

uint32_t vkbert_validation_messages(const vkbert_context *ctx, char *first, size_t first_size)
{
    if (!ctx) return 0;
    vkb_lock(ctx);
    if (first && first_size) {
        strncpy(first, ctx->validation_first, first_size - 1);
        first[first_size - 1] = '\0';
    }
    uint32_t count = ctx->validation_count;
    vkb_unlock(ctx);
    return count;
}

/* ---- tensors ---- */

static vkbert_status tensor_create(vkbert_context *ctx, int ndim, const int64_t *shape,
                                   vkbert_tensor **out)
{
    CHECK_ARG(ctx, out, "out is NULL");
    CHECK_ALIVE(ctx);
    uint32_t before = ctx->validation_count;
    vkbert_status status = vkb_tensor_new(ctx, ndim, shape, out);
    return status ? status : vkb_check_validation(ctx, before);
}

vkbert_status vkbert_tensor_create(vkbert_context *ctx, int ndim, const int64_t *shape,
                                   vkbert_tensor **out)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    vkb_lock(ctx);
    return vkb_unlock_return(ctx, tensor_create(ctx, ndim, shape, out));
}

void vkbert_tensor_destroy(vkbert_context *ctx, vkbert_tensor *tensor)
{
    if (!ctx) return;
    vkb_lock(ctx);
    vkb_tensor_free(ctx, tensor);
    vkb_unlock(ctx);
}

/* A live context, and a host array that matches the float32 tensor. */
static vkbert_status check_count(vkbert_context *ctx, const vkbert_tensor *t, const float *data,
                                 size_t count)
{
    CHECK_ALIVE(ctx);
    return vkb_tensor_check_copy(ctx, t, data, count, VKBERT_DTYPE_FLOAT32);
}

vkbert_status vkbert_tensor_write(vkbert_context *ctx, vkbert_tensor *tensor, const float *data,
                                  size_t count)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    vkb_lock(ctx);
    uint32_t before = ctx->validation_count;
    vkbert_status status = check_count(ctx, tensor, data, count);
    if (!status) status = vkb_tensor_write(ctx, tensor, data);
    return vkb_unlock_return(ctx, status ? status : vkb_check_validation(ctx, before));
}

vkbert_status vkbert_tensor_read(vkbert_context *ctx, const vkbert_tensor *tensor, float *data,
                                 size_t count)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    vkb_lock(ctx);
    uint32_t before = ctx->validation_count;
    vkbert_status status = check_count(ctx, tensor, data, count);
    if (!status) status = vkb_tensor_read(ctx, tensor, data);
    return vkb_unlock_return(ctx, status ? status : vkb_check_validation(ctx, before));
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

static vkbert_status attention_create(vkbert_context *ctx, int embed_dim, int num_heads,
                                      const vkbert_attention_weights *weights,
                                      const vkbert_attention_config *config, vkbert_attention **out)
{
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

vkbert_status vkbert_attention_create_ex(vkbert_context *ctx, int embed_dim, int num_heads,
                                         const vkbert_attention_weights *weights,
                                         const vkbert_attention_config *config,
                                         vkbert_attention **out)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    vkb_lock(ctx);
    return vkb_unlock_return(ctx,
                             attention_create(ctx, embed_dim, num_heads, weights, config, out));
}

void vkbert_attention_destroy(vkbert_attention *layer)
{
    if (!layer) return;
    vkbert_context *ctx = layer->ctx; /* read before the layer is freed */
    vkb_lock(ctx);
    vkb_attention_free(layer);
    vkb_unlock(ctx);
}

vkbert_status vkbert_attention_forward(vkbert_attention *layer, const vkbert_tensor *x,
                                       const vkbert_tensor *mask,
                                       const vkbert_attention_options *options, vkbert_tensor *y)
{
    if (!layer) return VKBERT_ERROR_INVALID_ARGUMENT;
    vkbert_context *ctx = layer->ctx;
    vkb_lock(ctx);
    uint32_t before = ctx->validation_count;
    vkbert_status status = x && y ? vkb_check_alive(ctx)
                                  : vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "x or y is NULL");
    if (!status && (x->dtype != VKBERT_DTYPE_FLOAT32 || y->dtype != VKBERT_DTYPE_FLOAT32 ||
                    (mask && mask->dtype != VKBERT_DTYPE_FLOAT32)))
        status = vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "x, mask and y must be float32");
    if (!status) status = vkb_attention_forward(layer, x, mask, options, y);
    return vkb_unlock_return(ctx, status ? status : vkb_check_validation(ctx, before));
}

vkbert_status vkbert_attention_forward_host(vkbert_attention *layer, int batch, int seq_len,
                                            const float *x, const vkbert_mask *mask,
                                            const vkbert_attention_options *options, float *y)
{
    if (!layer) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_RUN_LOCKED(layer->ctx,
                   vkb_attention_forward_host(layer, batch, seq_len, x, mask, options, y));
}

vkbert_status vkbert_attention_timings(const vkbert_attention *layer, vkbert_timing *timings,
                                       uint32_t capacity, uint32_t *count)
{
    if (!layer || !count) return VKBERT_ERROR_INVALID_ARGUMENT;
    vkbert_context *ctx = layer->ctx;
    vkb_lock(ctx);
    if (!ctx->timestamps)
        return vkb_unlock_return(ctx, vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                                               "the context was made without timestamps"));
    *count = layer->timing_count;
    for (uint32_t i = 0; i < layer->timing_count && i < capacity && timings; i++)
        timings[i] = layer->timings[i];
    return vkb_unlock_return(ctx, VKBERT_OK);
}

/* ---- the BERT encoder ---- */

vkbert_status vkbert_encoder_load(vkbert_context *ctx, const char *model_dir, vkbert_encoder **out)
{
    return vkbert_encoder_load_ex(ctx, model_dir, NULL, out);
}

static vkbert_status encoder_load(vkbert_context *ctx, const char *model_dir,
                                  const vkbert_encoder_config *config, vkbert_encoder **out)
{
    CHECK_ARG(ctx, model_dir && out, "model_dir or out is NULL");
    CHECK_ALIVE(ctx);
    vkbert_precision precision = config ? config->precision : VKBERT_PRECISION_FP32;
    CHECK_ARG(ctx, precision == VKBERT_PRECISION_FP32 || precision == VKBERT_PRECISION_FP16,
              "unknown precision");
    *out = NULL;
    bert_model model;
    char err[VKB_ERROR_SIZE];
    if (bert_model_load(model_dir, &model, err, sizeof err))
        return vkb_fail(ctx, vkb_io_status(VKBERT_ERROR_MALFORMED_FILE), "%s", err);
    uint32_t before = ctx->validation_count;
    vkbert_status status = vkb_encoder_new(ctx, &model.config, &model.weights, precision, out);
    bert_model_free(&model);
    return status ? status : vkb_check_validation(ctx, before);
}

vkbert_status vkbert_encoder_load_ex(vkbert_context *ctx, const char *model_dir,
                                     const vkbert_encoder_config *config, vkbert_encoder **out)
{
    if (!ctx) return VKBERT_ERROR_INVALID_ARGUMENT;
    vkb_lock(ctx);
    return vkb_unlock_return(ctx, encoder_load(ctx, model_dir, config, out));
}

void vkbert_encoder_destroy(vkbert_encoder *encoder)
{
    if (!encoder) return;
    vkbert_context *ctx = encoder->ctx; /* read before the encoder is freed */
    vkb_lock(ctx);
    vkb_encoder_free(encoder);
    vkb_unlock(ctx);
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
    VKB_RUN_LOCKED(encoder->ctx,
                   vkb_encoder_forward_host(encoder, batch, seq_len, input_ids, token_type_ids,
                                            attention_mask, hidden, pooled));
}

vkbert_status vkbert_encoder_embed_host(vkbert_encoder *encoder, int batch, int seq_len,
                                        const int32_t *input_ids, const int32_t *token_type_ids,
                                        const int32_t *attention_mask, int normalize,
                                        float *embeddings)
{
    if (!encoder) return VKBERT_ERROR_INVALID_ARGUMENT;
    VKB_RUN_LOCKED(encoder->ctx,
                   vkb_encoder_embed_host(encoder, batch, seq_len, input_ids, token_type_ids,
                                          attention_mask, normalize, embeddings));
}
