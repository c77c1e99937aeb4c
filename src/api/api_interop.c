/* The public calls of vkbert_vulkan.h: vkbert on the caller's device, buffers and command
 * buffers. Argument checks and the lock here; the work in vk/vk_external.c, tensor.c and
 * nn/attention_record.c. */
#include "api/api.h"
#include "api/api_context.h"
#include "nn/attention/attention.h"
#include "nn/encoder/encoder.h"
#include "vk/tensor.h"

#include "vkbert_vulkan.h"

#include <string.h>

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
    vkbert_status status = STRUCT_IN(NULL, vkbert_vulkan_device, queue, device, &copy);
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
    CHECK_HANDLE(ctx, BAD_HANDLE);
    VKB_RUN_LOCKED(ctx, tensor_wrap(ctx, buffer, offset, size, ndim, shape, out));
}

/* Reads what never changes after the tensor is made: no lock. */
vkbert_status vkbert_tensor_vulkan_buffer(const vkbert_tensor *tensor, VkBuffer *buffer,
                                          VkDeviceSize *offset, VkDeviceSize *size)
{
    CHECK_HANDLE(tensor, BAD_HANDLE);
    if (buffer) *buffer = tensor->buffer.buffer;
    if (offset) *offset = tensor->offset;
    if (size) *size = tensor->rows * tensor->pitch * sizeof(float);
    return VKBERT_OK;
}

static vkbert_status attention_record(vkbert_attention *layer, VkCommandBuffer cmd,
                                      const vkbert_tensor *x, const vkbert_tensor *mask,
                                      const vkbert_attention_options *options, vkbert_tensor *y)
{
    CHECK_ARG(layer->ctx, cmd, "cmd is NULL");
    vkbert_attention_options o;
    vkbert_status status = vkb_attention_tensor_args(layer, x, mask, y, options, &o);
    return status ? status : vkb_attention_record(layer, cmd, x, mask, &o, y);
}

vkbert_status vkbert_attention_record(vkbert_attention *layer, VkCommandBuffer cmd,
                                      const vkbert_tensor *x, const vkbert_tensor *mask,
                                      const vkbert_attention_options *options, vkbert_tensor *y)
{
    CHECK_HANDLE(layer, BAD_HANDLE);
    VKB_RUN_LOCKED(layer->ctx, attention_record(layer, cmd, x, mask, options, y));
}

/* Under the lock, as the message is the context's, which other threads may be writing. */
static vkbert_status encoder_record(vkbert_encoder *encoder, VkCommandBuffer cmd,
                                    const encoder_io *io)
{
    if (!cmd)
        return vkb_fail(encoder->ctx, VKBERT_ERROR_INVALID_ARGUMENT, "command buffer is NULL");
    if (!io->hidden && !io->pooled && !io->embeddings)
        return vkb_fail(encoder->ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "no output: give hidden, pooled or embeddings");
    return vkb_encoder_record(encoder, cmd, io);
}

vkbert_status vkbert_encoder_record(vkbert_encoder *encoder, VkCommandBuffer cmd,
                                    const vkbert_tensor *input_ids,
                                    const vkbert_tensor *token_type_ids,
                                    const vkbert_tensor *attention_mask, int normalize,
                                    vkbert_tensor *hidden, vkbert_tensor *pooled,
                                    vkbert_tensor *embeddings)
{
    CHECK_HANDLE(encoder, BAD_HANDLE);
    encoder_io io = {input_ids, token_type_ids, attention_mask, hidden,
                     pooled,    embeddings,     normalize};
    VKB_RUN_LOCKED(encoder->ctx, encoder_record(encoder, cmd, &io));
}
