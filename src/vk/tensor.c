/* Device tensors and the padded-row copies between host and device. */
#include "vk/tensor.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint_fast64_t next_id = 1;

uint32_t vkb_pitch(uint64_t cols)
{
    return (uint32_t)((cols + 3) / 4 * 4);
}

size_t vkb_tensor_count(const vkbert_tensor *t)
{
    return (size_t)t->rows * t->cols;
}

/* Whether a tensor may have this shape; `why` (may be NULL) says why not. */
static bool shape_fits(int ndim, const int64_t *shape, uint64_t *rows, char *why, size_t size)
{
    if (ndim < 1 || ndim > VKBERT_MAX_DIMS || !shape) {
        if (why) snprintf(why, size, "a tensor has 1 to %d dimensions", VKBERT_MAX_DIMS);
        return false;
    }
    *rows = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1 || shape[i] > (int64_t)UINT32_MAX) {
            if (why)
                snprintf(why, size, "tensor dimension %d is %lld; it must be in 1..%u", i,
                         (long long)shape[i], UINT32_MAX);
            return false;
        }
        if (i < ndim - 1) *rows *= (uint64_t)shape[i];
        if (*rows > ((uint64_t)1 << 40)) {
            if (why) snprintf(why, size, "tensor too large");
            return false;
        }
    }
    return true;
}

uint64_t vkb_tensor_bytes(int ndim, const int64_t *shape)
{
    uint64_t rows;
    if (!shape_fits(ndim, shape, &rows, NULL, 0)) return 0;
    return rows * vkb_pitch((uint64_t)shape[ndim - 1]) * sizeof(float);
}

const char *vkb_dtype_name(vkbert_dtype dtype)
{
    return dtype == VKBERT_DTYPE_INT32 ? "int32" : dtype == VKBERT_DTYPE_FLOAT32 ? "float32" : "?";
}

/* A tensor of this type and shape with no buffer yet. */
static vkbert_status tensor_init(vkbert_context *ctx, vkbert_dtype dtype, int ndim,
                                 const int64_t *shape, vkbert_tensor **out)
{
    *out = NULL;
    if (dtype != VKBERT_DTYPE_FLOAT32 && dtype != VKBERT_DTYPE_INT32)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "a tensor's dtype is VKBERT_DTYPE_FLOAT32 or VKBERT_DTYPE_INT32, not %d",
                        (int)dtype);
    uint64_t rows;
    char why[128];
    if (!shape_fits(ndim, shape, &rows, why, sizeof why))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "%s", why);
    vkbert_tensor *t = calloc(1, sizeof *t);
    if (!t) return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    t->id = atomic_fetch_add(&next_id, 1);
    t->dtype = dtype;
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->rows = rows;
    t->cols = (uint32_t)shape[ndim - 1];
    t->pitch = vkb_pitch(t->cols);
    *out = t;
    return VKBERT_OK;
}

vkbert_status vkb_tensor_new(vkbert_context *ctx, int ndim, const int64_t *shape,
                             vkbert_tensor **out)
{
    return vkb_tensor_new_typed(ctx, VKBERT_DTYPE_FLOAT32, ndim, shape, out);
}

vkbert_status vkb_tensor_new_typed(vkbert_context *ctx, vkbert_dtype dtype, int ndim,
                                   const int64_t *shape, vkbert_tensor **out)
{
    vkbert_tensor *t;
    vkbert_status status = tensor_init(ctx, dtype, ndim, shape, &t);
    if (status) return status;
    uint64_t bytes = t->rows * t->pitch * sizeof(float);
    if (bytes > ctx->props.limits.maxStorageBufferRange) {
        free(t);
        return vkb_check_range(ctx, bytes, "the tensor");
    }
    status = vkb_buffer_create(ctx, bytes, &t->buffer);
    if (status) {
        free(t);
        return status;
    }
    *out = t;
    return VKBERT_OK;
}

/* The buffer's usage flags cannot be read back: a missing one shows at the first forward, in
 * the validation layer's words. */
vkbert_status vkb_tensor_wrap(vkbert_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                              VkDeviceSize size, int ndim, const int64_t *shape,
                              vkbert_tensor **out)
{
    VkDeviceSize align = ctx->props.limits.minStorageBufferOffsetAlignment;
    if (ctx->props.limits.minTexelBufferOffsetAlignment > align)
        align = ctx->props.limits.minTexelBufferOffsetAlignment;
    if (align && offset % align)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "offset %llu is not a multiple of %llu (the device's "
                        "minStorageBufferOffsetAlignment and minTexelBufferOffsetAlignment)",
                        (unsigned long long)offset, (unsigned long long)align);
    vkbert_tensor *t;
    vkbert_status status = tensor_init(ctx, VKBERT_DTYPE_FLOAT32, ndim, shape, &t);
    if (status) return status;
    uint64_t bytes = t->rows * t->pitch * sizeof(float);
    if (size < bytes) {
        uint32_t pitch = t->pitch;
        free(t);
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "size %llu is less than the %llu bytes the shape needs (rows of the "
                        "last dimension padded to %u floats)",
                        (unsigned long long)size, (unsigned long long)bytes, pitch);
    }
    if (bytes > ctx->props.limits.maxStorageBufferRange) {
        free(t);
        return vkb_check_range(ctx, bytes, "the tensor");
    }
    t->buffer = (vkb_buffer){.buffer = buffer, .size = offset + size};
    t->offset = offset;
    t->wrapped = true;
    *out = t;
    return VKBERT_OK;
}

vkbert_tensor vkb_tensor_slice(const vkbert_tensor *t, uint64_t first, uint64_t n)
{
    vkbert_tensor slice = *t;
    uint64_t rows_per_entry = t->rows / (uint64_t)t->shape[0];
    slice.id = atomic_fetch_add(&next_id, 1);
    slice.shape[0] = (int64_t)n;
    slice.rows = rows_per_entry * n;
    slice.offset = t->offset + first * rows_per_entry * t->pitch * sizeof(float);
    return slice;
}

vkb_view vkb_tensor_binding(const vkbert_tensor *t)
{
    return vkb_sub(&t->buffer, t->offset, t->rows * t->pitch * sizeof(float));
}

void vkb_tensor_free(vkbert_context *ctx, vkbert_tensor *t)
{
    if (!t) return;
    if (!t->wrapped)
        vkb_buffer_destroy(ctx, &t->buffer); /* waits first for work a timeout left running */
    free(t);
}

vkbert_status vkb_upload_rows(vkbert_context *ctx, vkb_buffer *dst, const void *src, uint64_t rows,
                              uint32_t cols, uint32_t pitch)
{
    const uint8_t *from = src;
    if (dst->mapped) { /* device memory the host sees: write in place */
        for (uint64_t r = 0; r < rows; r++)
            memcpy(dst->mapped + r * pitch * 4, from + r * cols * 4, cols * 4);
        return VKBERT_OK;
    }
    if (cols == pitch) return vkb_buffer_upload(ctx, dst, 0, src, rows * cols * 4);
    uint8_t *padded = calloc(rows * pitch, 4);
    if (!padded) return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (uint64_t r = 0; r < rows; r++)
        memcpy(padded + r * pitch * 4, from + r * cols * 4, cols * 4);
    vkbert_status status = vkb_buffer_upload(ctx, dst, 0, padded, rows * pitch * 4);
    free(padded);
    return status;
}

vkbert_status vkb_tensor_check_copy(vkbert_context *ctx, const vkbert_tensor *t, const void *data,
                                    size_t count, vkbert_dtype dtype)
{
    if (!t || !data) return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "tensor or data is NULL");
    if (t->wrapped)
        return vkb_fail(
            ctx, VKBERT_ERROR_INVALID_ARGUMENT,
            "the tensor wraps the caller's VkBuffer (vkbert_tensor_wrap_vulkan): copy to "
            "and from it with your own commands");
    if (t->dtype != dtype)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "the tensor is %s; copy %s data with %s", vkb_dtype_name(t->dtype),
                        vkb_dtype_name(t->dtype),
                        t->dtype == VKBERT_DTYPE_INT32 ? "vkbert_tensor_write_int32/_read_int32"
                                                       : "vkbert_tensor_write/_read");
    if (count != vkb_tensor_count(t))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "count %zu does not match the tensor's %zu elements", count,
                        vkb_tensor_count(t));
    return VKBERT_OK;
}

vkbert_status vkb_tensor_write(vkbert_context *ctx, vkbert_tensor *t, const void *data)
{
    return vkb_upload_rows(ctx, &t->buffer, data, t->rows, t->cols, t->pitch);
}

vkbert_status vkb_tensor_read(vkbert_context *ctx, const vkbert_tensor *t, void *data)
{
    uint8_t *to = data;
    if (t->buffer.mapped) {
        const uint8_t *s = t->buffer.mapped;
        for (uint64_t r = 0; r < t->rows; r++)
            memcpy(to + r * t->cols * 4, s + r * t->pitch * 4, t->cols * 4);
        return VKBERT_OK;
    }
    if (t->cols == t->pitch)
        return vkb_buffer_download(ctx, &t->buffer, 0, data, t->rows * t->cols * 4);
    uint8_t *padded = malloc(t->rows * t->pitch * 4);
    if (!padded) return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    vkbert_status status = vkb_buffer_download(ctx, &t->buffer, 0, padded, t->rows * t->pitch * 4);
    for (uint64_t r = 0; status == VKBERT_OK && r < t->rows; r++)
        memcpy(to + r * t->cols * 4, padded + r * t->pitch * 4, t->cols * 4);
    free(padded);
    return status;
}
