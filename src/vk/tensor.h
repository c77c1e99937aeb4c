/* Device tensors: float32 or int32, row-major, each row of the last dimension padded to a
 * multiple of 4 elements (`pitch`) so kernels read and write whole vec4s. Both dtypes are 4
 * bytes: one layout rule, one set of row copies. */
#ifndef VKBERT_TENSOR_H
#define VKBERT_TENSOR_H

#include "vk/vk.h"

struct vkbert_tensor {
    uint64_t id;        /* unique for the process: plans key on it, never on reusable handles */
    vkbert_dtype dtype; /* VKBERT_DTYPE_FLOAT32 or VKBERT_DTYPE_INT32 */
    int ndim;
    int64_t shape[VKBERT_MAX_DIMS];
    uint64_t rows;  /* product of all but the last dimension */
    uint32_t cols;  /* the last dimension */
    uint32_t pitch; /* cols rounded up to 4 */
    vkb_buffer buffer;
    VkDeviceSize offset; /* bytes into `buffer`: non-zero for a slice (vkb_tensor_slice) */
    /* The buffer is the caller's (vkb_tensor_wrap): never freed, never mapped by vkbert. */
    bool wrapped;
};

uint32_t vkb_pitch(uint64_t cols);
size_t vkb_tensor_count(const vkbert_tensor *t);
vkbert_status vkb_tensor_new(vkbert_context *ctx, int ndim, const int64_t *shape,
                             vkbert_tensor **out);
vkbert_status vkb_tensor_new_typed(vkbert_context *ctx, vkbert_dtype dtype, int ndim,
                                   const int64_t *shape, vkbert_tensor **out);
/* "float32" or "int32", for messages. */
const char *vkb_dtype_name(vkbert_dtype dtype);
void vkb_tensor_free(vkbert_context *ctx, vkbert_tensor *t);
/* Bytes of a tensor of this shape, rows padded; 0 for a shape no tensor may have. */
uint64_t vkb_tensor_bytes(int ndim, const int64_t *shape);
/* A tensor over [offset, offset + size) of the caller's buffer, which it does not own:
 * `offset` aligned for storage and texel bindings, `size` at least the padded rows. */
vkbert_status vkb_tensor_wrap(vkbert_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                              VkDeviceSize size, int ndim, const int64_t *shape,
                              vkbert_tensor **out);
/* Entries [first, first + n) of dimension 0 of `t` (at least 2 dimensions), as a tensor that
 * shares its buffer (never freed) and has an id of its own. */
vkbert_tensor vkb_tensor_slice(const vkbert_tensor *t, uint64_t first, uint64_t n);
/* What a kernel binds: the tensor's rows in its buffer. */
vkb_view vkb_tensor_binding(const vkbert_tensor *t);
/* A host copy of `count` elements of `dtype` to or from `t`: the tensor and the data are
 * there, the dtype and the count match; the message names the call to use instead. */
vkbert_status vkb_tensor_check_copy(vkbert_context *ctx, const vkbert_tensor *t, const void *data,
                                    size_t count, vkbert_dtype dtype);
/* Host elements (4 bytes each, of the tensor's dtype) to and from the padded rows. */
vkbert_status vkb_tensor_write(vkbert_context *ctx, vkbert_tensor *t, const void *data);
vkbert_status vkb_tensor_read(vkbert_context *ctx, const vkbert_tensor *t, void *data);
/* Writes `rows` x `cols` host 4-byte elements into a buffer with row pitch `pitch`. */
vkbert_status vkb_upload_rows(vkbert_context *ctx, vkb_buffer *dst, const void *src, uint64_t rows,
                              uint32_t cols, uint32_t pitch);

#endif
