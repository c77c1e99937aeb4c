/* The attention layer: weights repacked at load, masks resolved to strides, forward passes
 * through per-shape plans. */
#include "nn/attention/attention.h"

#include "nn/encoder/weights_q8.h"
#include "tune/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of one weight block: [E][H*Dp] for an input projection, [H*Dp][Ep] for the output
 * one, fp32, fp16 or Q8_0. */
static uint64_t weight_bytes(const vkbert_attention *l)
{
    if (!vkb_format_is_q8(l->weight_format))
        return attention_weight_elements(l) * vkb_format_float_bytes(l->weight_format);
    uint64_t in = vkb_q8_bytes(l->embed_dim, l->heads_width);
    uint64_t out = vkb_q8_bytes(l->heads_width, l->pitch);
    return in > out ? in : out;
}

vkbert_status attention_weight_format(vkbert_context *ctx, vkbert_precision precision,
                                      vkb_format *out)
{
    *out = precision == VKBERT_PRECISION_FP16 ? VKB_FORMAT_F16_PAIRS : VKB_FORMAT_F32;
    if (precision != VKBERT_PRECISION_INT8) return VKBERT_OK;
    bool dot = false;
    vkbert_status status = vkb_tune_int8_dot(ctx, &dot);
    *out = dot ? VKB_FORMAT_Q8_0_DOT : VKB_FORMAT_Q8_0;
    return status;
}

vkbert_status attention_alloc(vkbert_context *ctx, int embed_dim, int num_heads,
                              const vkbert_attention_config *config, vkbert_attention **out)
{
    *out = NULL;
    if (embed_dim < 1 || num_heads < 1 || embed_dim % num_heads)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "embed_dim %d must be a positive multiple of num_heads %d", embed_dim,
                        num_heads);
    if (embed_dim > 65536)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "embed_dim %d is too large", embed_dim);
    vkbert_attention *layer = calloc(1, sizeof *layer);
    if (!layer) return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    layer->ctx = ctx;
    layer->embed_dim = (uint32_t)embed_dim;
    layer->heads = (uint32_t)num_heads;
    layer->head_dim = layer->embed_dim / layer->heads;
    layer->pitch = vkb_pitch(layer->embed_dim);
    layer->head_pitch = vkb_pitch(layer->head_dim);
    layer->heads_width = layer->heads * layer->head_pitch;
    vkbert_precision precision = config ? config->precision : VKBERT_PRECISION_FP32;
    vkbert_status chosen = attention_weight_format(ctx, precision, &layer->weight_format);
    if (chosen) {
        free(layer);
        return chosen;
    }
    uint64_t block_bytes = weight_bytes(layer);
    layer->weight_block = (block_bytes + 255) / 256 * 256;
    uint32_t widest = layer->heads_width > layer->pitch ? layer->heads_width : layer->pitch;
    layer->bias_block = ((uint64_t)widest * 4 + 255) / 256 * 256;
    vkbert_status status = vkb_check_range(ctx, block_bytes, "one weight matrix");
    if (!status) status = vkb_buffer_create(ctx, 4 * layer->weight_block, &layer->weights);
    if (!status) status = vkb_buffer_create(ctx, 4 * layer->bias_block, &layer->biases);
    if (status) {
        vkb_attention_free(layer);
        return status;
    }
    *out = layer;
    return VKBERT_OK;
}

vkbert_status vkb_attention_new(vkbert_context *ctx, int embed_dim, int num_heads,
                                const vkbert_attention_weights *weights,
                                const vkbert_attention_config *config, vkbert_attention **out)
{
    vkbert_status status = attention_alloc(ctx, embed_dim, num_heads, config, out);
    vkb_writer locked = vkb_writer_of(ctx, true);
    if (!status) status = attention_upload_weights(*out, weights, &locked);
    if (status) {
        vkb_attention_free(*out);
        *out = NULL;
    }
    return status;
}

void vkb_attention_free(vkbert_attention *layer)
{
    if (!layer) return;
    vkb_settle(layer->ctx);
    for (uint32_t i = 0; i < layer->plan_count; i++)
        attention_plan_free(layer, layer->plans[i]);
    attention_recordings_free(layer);
    vkb_buffer_destroy(layer->ctx, &layer->weights);
    vkb_buffer_destroy(layer->ctx, &layer->biases);
    free(layer);
}

/* ---- masks ---- */

static void describe_shape(int ndim, const int64_t *shape, char *out, size_t size)
{
    int n = snprintf(out, size, "[");
    for (int i = 0; i < ndim && n > 0 && (size_t)n < size; i++)
        n += snprintf(out + n, size - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (n > 0 && (size_t)n < size) snprintf(out + n, size - n, "]");
}

vkbert_status attention_mask_strides(vkbert_context *ctx, int ndim, const int64_t *shape,
                                     uint32_t batch, uint32_t heads, uint32_t seq_len,
                                     uint32_t stride[4])
{
    int64_t s = seq_len, full[4] = {batch, heads, s, s}, dims[4] = {1, 1, 1, 1};
    if (ndim == 1) {
        dims[3] = shape[0];
    } else if (ndim == 2 && shape[0] == s && shape[1] == s) {
        dims[2] = shape[0], dims[3] = shape[1]; /* [S,S], as torch reads it */
    } else if (ndim == 2) {
        dims[0] = shape[0], dims[3] = shape[1]; /* [B,S] key padding */
    } else if (ndim == 3) {
        dims[0] = shape[0], dims[2] = shape[1], dims[3] = shape[2];
    } else if (ndim == 4) {
        memcpy(dims, shape, sizeof dims);
    }
    bool fits = ndim >= 1 && ndim <= 4;
    for (int i = 0; i < 4 && fits; i++)
        fits = dims[i] == 1 || dims[i] == full[i];
    if (!fits) {
        char got[96], want[96];
        describe_shape(ndim, shape, got, sizeof got);
        describe_shape(4, full, want, sizeof want);
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "mask shape %s does not broadcast to [B, H, S, S] = %s", got, want);
    }
    /* Element strides of the padded tensor: the last dimension is contiguous, rows pitched. */
    uint64_t step = vkb_pitch((uint64_t)shape[ndim - 1]);
    uint64_t dense[4];
    dense[3] = 1;
    for (int i = 2; i >= 0; i--)
        dense[i] = (i == 2 ? step : dense[i + 1] * (uint64_t)dims[i + 1]);
    for (int i = 0; i < 4; i++)
        stride[i] = dims[i] == 1 ? 0 : (uint32_t)dense[i];
    return VKBERT_OK;
}

/* ---- forward ---- */

static vkbert_status check_activation(vkbert_attention *layer, const vkbert_tensor *t,
                                      const char *name)
{
    if (t->ndim != 3 || t->shape[2] != layer->embed_dim)
        return vkb_fail(layer->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "%s must be [B, S, %u]; it has %d dimensions, the last %lld", name,
                        layer->embed_dim, t->ndim, (long long)t->shape[t->ndim - 1]);
    return VKBERT_OK;
}

/* Whether a mask has a batch dimension (its first, of size B, in 3 or 4 dimensions, or [B,S]
 * when B != S, which would otherwise read as [S,S]). */
static bool mask_per_batch(int ndim, const int64_t *shape, int64_t batch, int64_t seq_len)
{
    if (ndim >= 3) return shape[0] == batch;
    return ndim == 2 && shape[0] == batch && shape[1] == seq_len && batch != seq_len;
}

/* A [n,S] piece of a [B,S] key-padding mask with n == S would read as [S,S]: it says
 * [n,1,1,S], the same rows, instead. */
static void keep_key_padding(int *ndim, int64_t shape[VKBERT_MAX_DIMS], int64_t seq_len)
{
    if (*ndim != 2 || shape[0] != seq_len) return;
    *ndim = 4;
    shape[1] = 1, shape[2] = 1, shape[3] = seq_len;
}

/* A mask for sequences [first, first + n): a slice of a per-batch mask, else the mask. */
static vkbert_tensor mask_slice(const vkbert_tensor *mask, int64_t batch, int64_t seq_len,
                                uint64_t first, uint64_t n)
{
    if (!mask_per_batch(mask->ndim, mask->shape, batch, seq_len) || batch == 1) return *mask;
    vkbert_tensor slice = vkb_tensor_slice(mask, first, n);
    keep_key_padding(&slice.ndim, slice.shape, seq_len);
    return slice;
}

/* Whether entry `first` of `t` starts where the device can bind a buffer range. */
static bool slice_aligned(const vkbert_context *ctx, const vkbert_tensor *t, uint64_t first)
{
    VkDeviceSize align = ctx->props.limits.minStorageBufferOffsetAlignment;
    if (ctx->props.limits.minTexelBufferOffsetAlignment > align)
        align = ctx->props.limits.minTexelBufferOffsetAlignment;
    uint64_t rows_per_entry = t->rows / (uint64_t)t->shape[0];
    return align == 0 || (t->offset + first * rows_per_entry * t->pitch * 4) % align == 0;
}

/* The split point nearest the middle at which every tensor's slice is aligned; 0 if none. */
static uint64_t split_point(const vkbert_context *ctx, const vkbert_tensor *x,
                            const vkbert_tensor *mask, const vkbert_tensor *y)
{
    int64_t batch = x->shape[0], seq_len = x->shape[1];
    bool mask_sliced = mask && mask_per_batch(mask->ndim, mask->shape, batch, seq_len);
    for (uint64_t first = (uint64_t)batch / 2; first > 0; first--)
        if (slice_aligned(ctx, x, first) && slice_aligned(ctx, y, first) &&
            (!mask_sliced || slice_aligned(ctx, mask, first)))
            return first;
    return 0;
}

/* Sequences are independent: a batch whose activations exceed a limit or the memory runs as
 * two slices of its tensors (sharing their buffers), each split again as needed. */
static vkbert_status forward_in_halves(vkbert_attention *layer, const vkbert_tensor *x,
                                       const vkbert_tensor *mask,
                                       const vkbert_attention_options *options, vkbert_tensor *y)
{
    int64_t batch = x->shape[0], seq_len = x->shape[1];
    uint64_t first = split_point(layer->ctx, x, mask, y), rest = (uint64_t)batch - first;
    if (!first)
        return vkb_fail(
            layer->ctx, VKBERT_ERROR_DEVICE_LIMIT,
            "the batch of %lld is too large for one pass and cannot be split where "
            "the device can bind its pieces (minStorageBufferOffsetAlignment %llu)",
            (long long)batch,
            (unsigned long long)layer->ctx->props.limits.minStorageBufferOffsetAlignment);
    vkbert_tensor x0 = vkb_tensor_slice(x, 0, first), x1 = vkb_tensor_slice(x, first, rest);
    vkbert_tensor y0 = vkb_tensor_slice(y, 0, first), y1 = vkb_tensor_slice(y, first, rest);
    vkbert_tensor m0, m1;
    if (mask) m0 = mask_slice(mask, batch, seq_len, 0, first);
    if (mask) m1 = mask_slice(mask, batch, seq_len, first, rest);
    vkbert_status status = vkb_attention_forward(layer, &x0, mask ? &m0 : NULL, options, &y0);
    if (status) return status;
    return vkb_attention_forward(layer, &x1, mask ? &m1 : NULL, options, &y1);
}

vkbert_status attention_bind(vkbert_attention *layer, const vkbert_tensor *x,
                             const vkbert_tensor *mask, const vkbert_attention_options *options,
                             const vkbert_tensor *y, attention_binding *bind)
{
    vkbert_context *ctx = layer->ctx;
    vkbert_status status = check_activation(layer, x, "x");
    if (!status) status = check_activation(layer, y, "y");
    if (status) return status;
    if (x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1])
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "x and y must have the same shape");
    uint32_t batch = (uint32_t)x->shape[0], seq_len = (uint32_t)x->shape[1];
    memset(bind, 0, sizeof *bind);
    bind->x_id = x->id;
    bind->y_id = y->id;
    if (mask) {
        bind->mask_id = mask->id;
        status = attention_mask_strides(ctx, mask->ndim, mask->shape, batch, layer->heads, seq_len,
                                        bind->mask_stride);
        if (status) return status;
    }
    if (options) {
        if (!(options->dropout >= 0.0f && options->dropout <= 1.0f))
            return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "dropout %g is outside [0, 1]",
                            (double)options->dropout);
        bind->causal = options->causal != 0;
        bind->additive = options->additive_mask != 0;
        bind->dropout = options->dropout;
        bind->seed = options->dropout > 0.0f ? options->seed : 0;
    }
    return VKBERT_OK;
}

/* One pass over the whole batch with the plan of its shape. */
static vkbert_status forward_once(vkbert_attention *layer, const vkbert_tensor *x,
                                  const vkbert_tensor *mask,
                                  const vkbert_attention_options *options, vkbert_tensor *y)
{
    attention_binding bind;
    vkbert_status status = attention_bind(layer, x, mask, options, y, &bind);
    if (status) return status;
    attention_plan *plan;
    status = attention_plan_get(layer, (uint32_t)x->shape[0], (uint32_t)x->shape[1], &plan);
    return status ? status : attention_plan_run(layer, plan, x, mask, &bind, y);
}

static bool retry_in_halves(vkbert_status status, int64_t batch,
                            const vkbert_attention_options *options)
{
    bool dropout = options && options->dropout > 0.0f;
    return (status == VKBERT_ERROR_DEVICE_LIMIT || status == VKBERT_ERROR_OUT_OF_MEMORY) &&
           batch > 1 && !dropout;
}

/* A failed shape's plan is freed, so that its memory is not held while the halves run. */
static void drop_plan_of(vkbert_attention *layer, uint32_t batch, uint32_t seq_len)
{
    for (uint32_t i = 0; i < layer->plan_count; i++)
        if (layer->plans[i]->batch == batch && layer->plans[i]->seq_len == seq_len) {
            attention_plan_drop(layer, layer->plans[i]);
            return;
        }
}

vkbert_status vkb_attention_forward(vkbert_attention *layer, const vkbert_tensor *x,
                                    const vkbert_tensor *mask,
                                    const vkbert_attention_options *options, vkbert_tensor *y)
{
    vkbert_status status = forward_once(layer, x, mask, options, y);
    if (!retry_in_halves(status, x->shape[0], options)) return status;
    drop_plan_of(layer, (uint32_t)x->shape[0], (uint32_t)x->shape[1]);
    return forward_in_halves(layer, x, mask, options, y);
}

static float mask_value(const vkbert_mask *mask, size_t i)
{
    switch (mask->dtype) {
    case VKBERT_DTYPE_FLOAT32:
        return ((const float *)mask->data)[i] != 0.0f;
    case VKBERT_DTYPE_INT32:
        return ((const int32_t *)mask->data)[i] != 0;
    case VKBERT_DTYPE_INT64:
        return ((const int64_t *)mask->data)[i] != 0;
    default: /* bool and uint8: one byte */
        return ((const uint8_t *)mask->data)[i] != 0;
    }
}

/* Converts the host mask to 0/1 floats in the plan's mask tensor of the same shape. The shape
 * is checked first: the caller's data holds as many elements as its shape says, so a shape
 * that does not broadcast must fail before any of them is read. */
static vkbert_status upload_mask(vkbert_attention *layer, attention_plan *plan, uint32_t batch,
                                 uint32_t seq_len, const vkbert_mask *mask)
{
    vkbert_context *ctx = layer->ctx;
    if (!mask->data || mask->ndim < 1 || mask->ndim > 4 || mask->dtype < VKBERT_DTYPE_FLOAT32 ||
        mask->dtype > VKBERT_DTYPE_INT64)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "mask needs data, 1 to 4 dimensions and a known dtype");
    uint32_t stride[4];
    vkbert_status checked =
        attention_mask_strides(ctx, mask->ndim, mask->shape, batch, layer->heads, seq_len, stride);
    if (checked) return checked;
    vkbert_tensor *t = plan->host_mask;
    if (t && (t->ndim != mask->ndim ||
              memcmp(t->shape, mask->shape, (size_t)mask->ndim * sizeof *mask->shape))) {
        vkb_tensor_free(ctx, t);
        t = plan->host_mask = NULL;
    }
    if (!t) {
        vkbert_status status = vkb_tensor_new(ctx, mask->ndim, mask->shape, &plan->host_mask);
        if (status) return status;
        t = plan->host_mask;
    }
    size_t count = vkb_tensor_count(t);
    float *values = malloc(count * sizeof *values);
    if (!values) return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < count; i++)
        values[i] = mask_value(mask, i);
    vkbert_status status = vkb_tensor_write(ctx, t, values);
    free(values);
    return status;
}

static vkbert_status forward_host_once(vkbert_attention *layer, int batch, int seq_len,
                                       const float *x, const vkbert_mask *mask,
                                       const vkbert_attention_options *options, float *y)
{
    vkbert_context *ctx = layer->ctx;
    attention_plan *plan;
    vkbert_status status = attention_plan_get(layer, (uint32_t)batch, (uint32_t)seq_len, &plan);
    if (status) return status;
    int64_t shape[3] = {batch, seq_len, layer->embed_dim};
    if (!plan->host_x) status = vkb_tensor_new(ctx, 3, shape, &plan->host_x);
    if (!status && !plan->host_y) status = vkb_tensor_new(ctx, 3, shape, &plan->host_y);
    if (!status && mask)
        status = upload_mask(layer, plan, (uint32_t)batch, (uint32_t)seq_len, mask);
    if (!status) status = vkb_tensor_write(ctx, plan->host_x, x);
    if (!status) /* not halved here: a failure drops this plan, tensors and all */
        status =
            forward_once(layer, plan->host_x, mask ? plan->host_mask : NULL, options, plan->host_y);
    if (!status) status = vkb_tensor_read(ctx, plan->host_y, y);
    /* Out of memory or a limit: give back this shape's memory before the caller retries in
     * halves or gives up. */
    if (status == VKBERT_ERROR_OUT_OF_MEMORY || status == VKBERT_ERROR_DEVICE_LIMIT)
        attention_plan_drop(layer, plan);
    return status;
}

static size_t dtype_size(vkbert_dtype dtype)
{
    return dtype == VKBERT_DTYPE_FLOAT32 || dtype == VKBERT_DTYPE_INT32 ? 4
           : dtype == VKBERT_DTYPE_INT64                                ? 8
                                                                        : 1;
}

/* The mask of sequences [first, ...) of a batch of `batch`: a mask with a batch dimension
 * (its first, of size B, in 3 or 4 dimensions, or [B,S] when B != S) starts later; others
 * are shared. */
static vkbert_mask mask_part(const vkbert_mask *mask, int batch, int seq_len, int first, int n)
{
    vkbert_mask part = *mask;
    if (!mask_per_batch(mask->ndim, mask->shape, batch, seq_len) || batch == 1) return part;
    size_t per = 1;
    for (int i = 1; i < mask->ndim; i++)
        per *= (size_t)mask->shape[i];
    part.data = (const char *)mask->data + (size_t)first * per * dtype_size(mask->dtype);
    part.shape[0] = n;
    keep_key_padding(&part.ndim, part.shape, seq_len);
    return part;
}

/* Sequences are independent: a batch over a device limit or the memory runs in halves.
 * Not with dropout, whose random bits depend on the sequence's index in the batch. */
static vkbert_status forward_host_pieces(vkbert_attention *layer, int batch, int seq_len,
                                         const float *x, const vkbert_mask *mask,
                                         const vkbert_attention_options *options, float *y)
{
    vkbert_status status = forward_host_once(layer, batch, seq_len, x, mask, options, y);
    if (!retry_in_halves(status, batch, options)) return status;
    int first = batch / 2;
    size_t offset = (size_t)first * (size_t)seq_len * layer->embed_dim;
    vkbert_mask head, tail;
    if (mask) head = mask_part(mask, batch, seq_len, 0, first);
    if (mask) tail = mask_part(mask, batch, seq_len, first, batch - first);
    status = forward_host_pieces(layer, first, seq_len, x, mask ? &head : NULL, options, y);
    if (status) return status;
    return forward_host_pieces(layer, batch - first, seq_len, x + offset, mask ? &tail : NULL,
                               options, y + offset);
}

vkbert_status vkb_attention_forward_host(vkbert_attention *layer, int batch, int seq_len,
                                         const float *x, const vkbert_mask *mask,
                                         const vkbert_attention_options *options, float *y)
{
    if (batch < 1 || seq_len < 1 || !x || !y)
        return vkb_fail(layer->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "batch and seq_len must be positive and x, y non-NULL");
    return forward_host_pieces(layer, batch, seq_len, x, mask, options, y);
}

void vkb_attention_describe(const vkbert_attention *layer, char *out, size_t size)
{
    const attention_plan *plan = layer->plan_count ? layer->plans[layer->last_plan] : NULL;
    vkb_format weights = layer->weight_format;
    bool half_activations = plan && plan->activations == VKB_FORMAT_F16_PAIRS;
    const char *precision = vkb_format_is_q8(weights)   ? "int8 weights"
                            : weights == VKB_FORMAT_F32 ? "fp32"
                            : half_activations          ? "fp16 weights and activations"
                                                        : "fp16 weights";
    snprintf(out, size, "%s %s, %s kernels", precision,
             !plan         ? "(no plan yet)"
             : plan->fused ? "fused attention"
                           : "unfused attention",
             vkb_family_name(vkb_tune_family(layer->ctx)));
}
