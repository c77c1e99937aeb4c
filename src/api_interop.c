/* The public calls of vkbert_vulkan.h: vkbert on the caller's device, buffers and command
 * buffers. Argument checks and the lock here; the work in vk/vk_external.c, tensor.c and
 * nn/attention_record.c. */
#include "api_context.h"
#include "nn/attention.h"
#include "nn/encoder.h"
#include "tensor.h"

#include "vkbert_vulkan.h"

#include <string.h>

/* TODO(merge): vkb_struct_in. The growable-struct rule: at least the first published size,
 * and any bytes beyond what this library knows all zero. */
static vkbert_status struct_in(const void *src, size_t first_size, void *dst, size_t dst_size,
                               const char *name, const char *init)
{
    uint32_t size;
    memcpy(&size, src, sizeof size);
    if (size < first_size)
        return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT,
                               "%s.struct_size is %u; initialize the struct with %s", name, size,
                               init);
    for (size_t i = dst_size; i < size; i++)
        if (((const uint8_t *)src)[i])
            return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT,
                                   "%s sets fields this library does not know (struct_size %u; "
                                   "it knows %zu bytes): a newer vkbert is needed",
                                   name, size, dst_size);
    memset(dst, 0, dst_size);
    memcpy(dst, src, size < dst_size ? size : dst_size);
    return VKBERT_OK;
}

vkbert_status vkbert_context_create_vulkan(const vkbert_context_options *options,
                                           const vkbert_vulkan_device *device, vkbert_context **out)
{
    if (!out) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!device)
        return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT,
                               "device is NULL: describe the caller's Vulkan objects in a "
                               "vkbert_vulkan_device (VKBERT_VULKAN_DEVICE_INIT)");
    vkbert_vulkan_device copy;
    vkbert_status status = struct_in(device, sizeof copy, &copy, sizeof copy,
                                     "vkbert_vulkan_device", "VKBERT_VULKAN_DEVICE_INIT");
    return status ? status : vkb_context_create(options, &copy, out);
}

uint64_t vkbert_tensor_bytes(int ndim, const int64_t *shape)
{
    return vkb_tensor_bytes(ndim, shape);
}

static vkbert_status tensor_wrap(vkbert_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                                 VkDeviceSize size, int ndim, const int64_t *shape,
                                 vkbert_tensor **out)
{
    if (!out) return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!buffer) return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "buffer is VK_NULL_HANDLE");
    return vkb_tensor_wrap(ctx, buffer, offset, size, ndim, shape, out);
}

vkbert_status vkbert_tensor_wrap_vulkan(vkbert_context *ctx, VkBuffer buffer, VkDeviceSize offset,
                                        VkDeviceSize size, int ndim, const int64_t *shape,
                                        vkbert_tensor **out)
{
    if (!ctx) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "ctx is NULL");
    VKB_RUN_LOCKED(ctx, tensor_wrap(ctx, buffer, offset, size, ndim, shape, out));
}

/* Reads what never changes after the tensor is made: no lock. */
vkbert_status vkbert_tensor_vulkan_buffer(const vkbert_tensor *tensor, VkBuffer *buffer,
                                          VkDeviceSize *offset, VkDeviceSize *size)
{
    if (!tensor) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "tensor is NULL");
    if (buffer) *buffer = tensor->buffer.buffer;
    if (offset) *offset = tensor->offset;
    if (size) *size = tensor->rows * tensor->pitch * sizeof(float);
    return VKBERT_OK;
}

static vkbert_status attention_record(vkbert_attention *layer, VkCommandBuffer cmd,
                                      const vkbert_tensor *x, const vkbert_tensor *mask,
                                      const vkbert_attention_options *options, vkbert_tensor *y)
{
    if (!cmd || !x || !y)
        return vkb_fail(layer->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "%s is NULL",
                        !cmd ? "cmd"
                        : !x ? "x"
                             : "y");
    return vkb_attention_record(layer, cmd, x, mask, options, y);
}

vkbert_status vkbert_attention_record(vkbert_attention *layer, VkCommandBuffer cmd,
                                      const vkbert_tensor *x, const vkbert_tensor *mask,
                                      const vkbert_attention_options *options, vkbert_tensor *y)
{
    if (!layer) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "layer is NULL");
    VKB_RUN_LOCKED(layer->ctx, attention_record(layer, cmd, x, mask, options, y));
}

vkbert_status vkbert_encoder_record(vkbert_encoder *encoder, VkCommandBuffer cmd,
                                    const vkbert_tensor *input_ids,
                                    const vkbert_tensor *token_type_ids,
                                    const vkbert_tensor *attention_mask, int normalize,
                                    vkbert_tensor *hidden, vkbert_tensor *pooled,
                                    vkbert_tensor *embeddings)
{
    if (!encoder) return vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, "encoder is NULL");
    if (!cmd)
        return vkb_fail(encoder->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "command buffer is NULL");
    if (!hidden && !pooled && !embeddings)
        return vkb_fail(encoder->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "no output: give hidden, pooled or embeddings");
    encoder_io io = {input_ids, token_type_ids, attention_mask, hidden,
                     pooled,    embeddings,     normalize};
    VKB_RUN_LOCKED(encoder->ctx, vkb_encoder_record(encoder, cmd, &io));
}
