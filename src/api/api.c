/* The public API: argument checks, status codes, messages. Internals stop here. */
#include "api/api.h"
#include "api/api_context.h"
#include "nn/attention/attention.h"
#include "nn/encoder/encoder.h"
#include "vk/tensor.h"
#include "tune/tune.h"

#include <stdlib.h>
#include <string.h>

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

unsigned vkbert_version(void)
{
    return VKBERT_VERSION_NUMBER;
}

const char *vkbert_version_string(void)
{
    return STRINGIFY(VKBERT_VERSION_MAJOR) "." STRINGIFY(VKBERT_VERSION_MINOR) "." STRINGIFY(
        VKBERT_VERSION_PATCH);
}

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

/* The first published size of each device info runs through max_subgroup_size (0.2.0). */
#define DEVICE_INFO_FIRST VKB_SIZE_THROUGH(vkbert_device_info, max_subgroup_size)

/* Every entry to be written carries the same struct_size, the array's stride. */
static vkbert_status device_stride(const vkbert_device_info *infos, uint32_t n, uint32_t *stride)
{
    vkbert_status status =
        vkb_struct_out_size(NULL, infos, DEVICE_INFO_FIRST, "vkbert_device_info", stride);
    const unsigned char *bytes = (const unsigned char *)infos;
    for (uint32_t i = 1; !status && i < n; i++) {
        uint32_t size;
        memcpy(&size, bytes + (size_t)i * *stride, sizeof size);
        if (size != *stride)
            status = vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT,
                                     "vkbert_list_devices: infos[%u].struct_size is %u, not %u as "
                                     "in infos[0]: set every entry with VKBERT_DEVICE_INFO_INIT",
                                     i, size, *stride);
    }
    return status;
}

vkbert_status vkbert_list_devices(vkbert_device_info *infos, uint32_t capacity, uint32_t *count)
{
    if (!count) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "count is NULL");
    *count = 0;
    vkbert_device_info *all = NULL;
    uint32_t found = 0, stride = 0;
    vkbert_status status = vkb_list_devices(&all, &found);
    uint32_t n = !infos ? 0 : capacity < found ? capacity : found;
    if (!status && n) status = device_stride(infos, n, &stride);
    for (uint32_t i = 0; !status && i < n; i++)
        vkb_struct_out((unsigned char *)infos + (size_t)i * stride, stride, &all[i], sizeof *all);
    free(all);
    if (!status) *count = found;
    return status;
}

vkbert_status vkb_context_create(const vkbert_context_options *options,
                                 const struct vkbert_vulkan_device *device, vkbert_context **out)
{
    if (!out) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    vkbert_context_options opts;
    vkbert_status status = STRUCT_IN(NULL, vkbert_context_options, timeout_ms, options, &opts);
    if (status) return status;
    double start = plat_now_ms();
    vkbert_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return vkb_fail_global(VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    static atomic_uint_fast64_t next_serial = 1;
    ctx->serial = atomic_fetch_add(&next_serial, 1);
    if (!vkb_lock_init(ctx)) {
        free(ctx);
        return vkb_fail_global(VKBERT_ERROR_OUT_OF_MEMORY, "cannot make the context's lock");
    }
    status = device ? vkb_context_init_external(ctx, &opts, device) : vkb_context_init(ctx, &opts);
    if (!status) vkb_tune_cache_load(ctx); /* never fails: a bad cache is ignored */
    bool dot; /* VKBERT_INT8_PATH=dot where the device cannot: said now, not at a first load */
    if (!status) status = vkb_tune_int8_dot(ctx, &dot);
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

vkbert_status vkbert_context_create(const vkbert_context_options *options, vkbert_context **out)
{
    return vkb_context_create(options, NULL, out);
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
    CHECK_HANDLE(ctx, BAD_HANDLE);
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
    CHECK_HANDLE(ctx, BAD_HANDLE);
    vkb_lock(ctx);
    return vkb_unlock_return(ctx, tune_save(ctx, json, path, path_size));
}

const char *vkbert_last_error(const vkbert_context *ctx)
{
    return ctx ? vkb_last_error(ctx) : vkb_global_error();
}

/* The context's device as its options left it: subgroup size control may be switched off. */
static vkbert_status context_device(vkbert_context *ctx, vkbert_device_info *info)
{
    CHECK_ARG(ctx, info, "info is NULL");
    uint32_t size;
    vkbert_status status =
        vkb_struct_out_size(ctx, info, DEVICE_INFO_FIRST, "vkbert_device_info", &size);
    if (status) return status;
    vkbert_device_info d = ctx->info;
    d.subgroup_size_control = ctx->subgroup_size_control;
    d.min_subgroup_size = ctx->subgroup_control.minSubgroupSize;
    d.max_subgroup_size = ctx->subgroup_control.maxSubgroupSize;
    vkb_struct_out(info, size, &d, sizeof d);
    return VKBERT_OK;
}

vkbert_status vkbert_context_device(const vkbert_context *ctx, vkbert_device_info *info)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    vkb_lock(ctx);
    return vkb_unlock_return(ctx, context_device((vkbert_context *)ctx, info));
}

vkbert_status vkbert_context_memory(const vkbert_context *ctx, uint64_t *allocated,
                                    uint64_t *in_use)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    vkb_lock(ctx);
    if (allocated) *allocated = ctx->allocated_bytes;
    if (in_use) *in_use = ctx->in_use_bytes;
    return vkb_unlock_return(ctx, VKBERT_OK);
}

uint32_t vkbert_validation_messages(const vkbert_context *ctx, char *first, size_t first_size)
{
    CHECK_HANDLE(ctx, 0);
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
    CHECK_HANDLE(ctx, BAD_HANDLE);
    vkb_lock(ctx);
    return vkb_unlock_return(ctx, tensor_create(ctx, ndim, shape, out));
}

void vkbert_tensor_destroy(vkbert_context *ctx, vkbert_tensor *tensor)
{
    if (!tensor) return;
    CHECK_HANDLE(ctx, );
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
    CHECK_HANDLE(ctx, BAD_HANDLE);
    vkb_lock(ctx);
    uint32_t before = ctx->validation_count;
    vkbert_status status = check_count(ctx, tensor, data, count);
    if (!status) status = vkb_tensor_write(ctx, tensor, data);
    return vkb_unlock_return(ctx, status ? status : vkb_check_validation(ctx, before));
}

vkbert_status vkbert_tensor_read(vkbert_context *ctx, const vkbert_tensor *tensor, float *data,
                                 size_t count)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    vkb_lock(ctx);
    uint32_t before = ctx->validation_count;
    vkbert_status status = check_count(ctx, tensor, data, count);
    if (!status) status = vkb_tensor_read(ctx, tensor, data);
    return vkb_unlock_return(ctx, status ? status : vkb_check_validation(ctx, before));
}

int vkbert_tensor_shape(const vkbert_tensor *tensor, int64_t shape[VKBERT_MAX_DIMS])
{
    CHECK_HANDLE(tensor, 0);
    if (shape) memcpy(shape, tensor->shape, (size_t)tensor->ndim * sizeof *shape);
    return tensor->ndim;
}

/* ---- the attention layer ---- */

static vkbert_status attention_create(vkbert_context *ctx, int embed_dim, int num_heads,
                                      const vkbert_attention_weights *weights,
                                      const vkbert_attention_config *config, vkbert_attention **out)
{
    CHECK_ARG(ctx, weights && out, "weights or out is NULL");
    *out = NULL;
    CHECK_ALIVE(ctx);
    vkbert_attention_weights w;
    vkbert_attention_config c;
    vkbert_status status = STRUCT_IN(ctx, vkbert_attention_weights, out_bias, weights, &w);
    if (!status) status = STRUCT_IN(ctx, vkbert_attention_config, precision, config, &c);
    if (status) return status;
    CHECK_ARG(ctx, (unsigned)c.precision <= VKBERT_PRECISION_INT8, "unknown precision");
    uint32_t before = ctx->validation_count;
    status = vkb_attention_new(ctx, embed_dim, num_heads, &w, &c, out);
    return status ? status : vkb_check_validation(ctx, before);
}

vkbert_status vkbert_attention_create(vkbert_context *ctx, int embed_dim, int num_heads,
                                      const vkbert_attention_weights *weights,
                                      const vkbert_attention_config *config, vkbert_attention **out)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
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

vkbert_status vkb_attention_tensor_args(vkbert_attention *layer, const vkbert_tensor *x,
                                        const vkbert_tensor *mask, const vkbert_tensor *y,
                                        const vkbert_attention_options *options,
                                        vkbert_attention_options *o)
{
    if (!x || !y)
        return vkb_fail(layer->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "%s is NULL", !x ? "x" : "y");
    CHECK_ARG(layer->ctx,
              x->dtype == VKBERT_DTYPE_FLOAT32 && y->dtype == VKBERT_DTYPE_FLOAT32 &&
                  (!mask || mask->dtype == VKBERT_DTYPE_FLOAT32),
              "x, mask and y must be float32");
    return STRUCT_IN(layer->ctx, vkbert_attention_options, additive_mask, options, o);
}

static vkbert_status attention_forward(vkbert_attention *layer, const vkbert_tensor *x,
                                       const vkbert_tensor *mask,
                                       const vkbert_attention_options *options, vkbert_tensor *y)
{
    vkbert_attention_options o;
    vkbert_status status = vkb_attention_tensor_args(layer, x, mask, y, options, &o);
    return status ? status : vkb_attention_forward(layer, x, mask, &o, y);
}

vkbert_status vkbert_attention_forward(vkbert_attention *layer, const vkbert_tensor *x,
                                       const vkbert_tensor *mask,
                                       const vkbert_attention_options *options, vkbert_tensor *y)
{
    CHECK_HANDLE(layer, BAD_HANDLE);
    VKB_RUN_LOCKED(layer->ctx, attention_forward(layer, x, mask, options, y));
}

/* A NULL mask stays NULL: no mask, not an empty one. */
static vkbert_status attention_forward_host(vkbert_attention *layer, int batch, int seq_len,
                                            const float *x, const vkbert_mask *mask,
                                            const vkbert_attention_options *options, float *y)
{
    vkbert_attention_options o;
    vkbert_mask m;
    vkbert_status status =
        STRUCT_IN(layer->ctx, vkbert_attention_options, additive_mask, options, &o);
    if (!status && mask) status = STRUCT_IN(layer->ctx, vkbert_mask, shape, mask, &m);
    if (status) return status;
    return vkb_attention_forward_host(layer, batch, seq_len, x, mask ? &m : NULL, &o, y);
}

vkbert_status vkbert_attention_forward_host(vkbert_attention *layer, int batch, int seq_len,
                                            const float *x, const vkbert_mask *mask,
                                            const vkbert_attention_options *options, float *y)
{
    CHECK_HANDLE(layer, BAD_HANDLE);
    VKB_RUN_LOCKED(layer->ctx, attention_forward_host(layer, batch, seq_len, x, mask, options, y));
}

vkbert_status vkbert_attention_timings(const vkbert_attention *layer, vkbert_timing *timings,
                                       uint32_t capacity, uint32_t *count)
{
    CHECK_HANDLE(layer, BAD_HANDLE);
    vkbert_context *ctx = layer->ctx;
    vkb_lock(ctx);
    if (!count)
        return vkb_unlock_return(ctx,
                                 vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "count is NULL"));
    if (!ctx->timestamps)
        return vkb_unlock_return(ctx, vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                                               "the context was made without timestamps"));
    *count = layer->timing_count;
    for (uint32_t i = 0; i < layer->timing_count && i < capacity && timings; i++)
        timings[i] = layer->timings[i];
    return vkb_unlock_return(ctx, VKBERT_OK);
}

/* ---- the BERT encoder ---- */

/* `model` is the folder, read before the lock was taken; NULL when that failed with `err`. */
static vkbert_status encoder_load(vkbert_context *ctx, const char *model_dir,
                                  const vkbert_encoder_config *config, const bert_model *model,
                                  const char *err, vkbert_encoder **out)
{
    CHECK_ARG(ctx, model_dir && out, "model_dir or out is NULL");
    *out = NULL;
    CHECK_ALIVE(ctx);
    vkbert_encoder_config c;
    if (STRUCT_IN(ctx, vkbert_encoder_config, precision, config, &c))
        return VKBERT_ERROR_INVALID_ARGUMENT;
    vkbert_precision precision = c.precision;
    CHECK_ARG(ctx, (unsigned)precision <= VKBERT_PRECISION_INT8, "unknown precision");
    if (!model) return vkb_fail(ctx, vkb_io_status(VKBERT_ERROR_MALFORMED_FILE), "%s", err);
    uint32_t before = ctx->validation_count;
    vkb_unlock(ctx); /* vkb_encoder_new takes the lock for its device steps only */
    vkbert_status status = vkb_encoder_new(ctx, &model->config, &model->weights, precision, out);
    vkb_lock(ctx);
    return status ? status : vkb_check_validation(ctx, before);
}

vkbert_status vkbert_encoder_load(vkbert_context *ctx, const char *model_dir,
                                  const vkbert_encoder_config *config, vkbert_encoder **out)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    /* The file is mapped and checked without the lock: other calls on the context go on. */
    bert_model model;
    char err[VKB_ERROR_SIZE] = "";
    bool read = model_dir && bert_model_load(model_dir, &model, err, sizeof err) == 0;
    vkb_lock(ctx);
    vkbert_status status = encoder_load(ctx, model_dir, config, read ? &model : NULL, err, out);
    if (read) bert_model_free(&model);
    return vkb_unlock_return(ctx, status);
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
    CHECK_HANDLE(encoder, 0);
    return encoder->config.hidden_size;
}

vkbert_status vkbert_encoder_forward_host(vkbert_encoder *encoder, int batch, int seq_len,
                                          const int32_t *input_ids, const int32_t *token_type_ids,
                                          const int32_t *attention_mask, float *hidden,
                                          float *pooled)
{
    CHECK_HANDLE(encoder, BAD_HANDLE);
    VKB_RUN_LOCKED(encoder->ctx,
                   vkb_encoder_forward_host(encoder, batch, seq_len, input_ids, token_type_ids,
                                            attention_mask, hidden, pooled));
}

vkbert_status vkbert_encoder_embed_host(vkbert_encoder *encoder, int batch, int seq_len,
                                        const int32_t *input_ids, const int32_t *token_type_ids,
                                        const int32_t *attention_mask, int normalize,
                                        float *embeddings)
{
    CHECK_HANDLE(encoder, BAD_HANDLE);
    VKB_RUN_LOCKED(encoder->ctx,
                   vkb_encoder_embed_host(encoder, batch, seq_len, input_ids, token_type_ids,
                                          attention_mask, normalize, embeddings));
}
