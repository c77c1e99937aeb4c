/*
 * vkbert inside a Vulkan program: a context on the caller's device and queue, tensors over the
 * caller's buffers, and layers recorded into the caller's command buffers.
 *
 * vkbert.h needs no Vulkan headers; this one includes <vulkan/vulkan.h> (a program that uses
 * volk includes volk.h first). vkbert loads Vulkan itself (through volk, at run time) and
 * calls the same loader the program's handles come from.
 *
 * What the device must have: Vulkan 1.1 (the instance's apiVersion and the device's), and a
 * queue family with VK_QUEUE_COMPUTE_BIT, from which the caller gives one queue. Nothing else:
 * each optional feature below buys speed or a kernel choice, and vkbert runs without any of
 * them (the fallbacks VKBERT_LIMITS's switches exercise). vkbert uses a feature only when the
 * device has it and the caller's VkDeviceCreateInfo enabled it:
 *   subgroupSizeControl and computeFullSubgroups (VkPhysicalDeviceVulkan13Features, or
 *       VkPhysicalDeviceSubgroupSizeControlFeatures with VK_EXT_subgroup_size_control):
 *       kernels that share values by subgroup shuffles run at the subgroup size they need,
 *       so more kernel variants are open to the tuning table;
 *   storageBuffer16BitAccess (VkPhysicalDeviceVulkan11Features or
 *       VkPhysicalDevice16BitStorageFeatures) and shaderFloat16 (VkPhysicalDeviceVulkan12Features
 *       or VkPhysicalDeviceShaderFloat16Int8Features): reported by vkbert_context_device;
 *       today's kernels store fp16 as packed pairs and need neither.
 * Properties vkbert reads but that need no enabling: subgroup size and operations, limits,
 * memory types, R16G16B16A16_SFLOAT texel-buffer support, timestamp support of the family.
 * VKBERT_LIMITS and vkbert_context_options.limits still lower limits and turn features off.
 *
 * What vkbert makes on the caller's device, and destroys with the context: a command pool of
 * the queue's family, a fence, a pipeline cache, pipelines, descriptor pools, buffer views,
 * buffers, memory (counted against maxMemoryAllocationCount with the caller's own), and, with
 * validation, a debug messenger. It never destroys the instance, the device or the queue.
 *
 * Queue: vkbert's synchronous calls (forward, tensor read and write, layer creation) submit to
 * the caller's queue and wait on their own fence. Access to a VkQueue must be externally
 * synchronized: the caller must not use the queue from another thread during any vkbert call
 * on the context, nor while destroying the context (which waits for the queue to go idle).
 */
#ifndef VKBERT_VULKAN_H
#define VKBERT_VULKAN_H

#include <vulkan/vulkan.h>

#include "vkbert.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The caller's Vulkan objects. Growable: set struct_size (VKBERT_VULKAN_DEVICE_INIT) and
 * fill the fields. */
typedef struct vkbert_vulkan_device {
    uint32_t struct_size;
    VkInstance instance;
    /* The VkApplicationInfo.apiVersion the instance was created with (0 means 1.0, which is
     * refused): vkbert uses no Vulkan version above it or above the device's. */
    uint32_t api_version;
    VkPhysicalDevice physical_device;
    VkDevice device;
    /* What the device was created with: vkbert reads ppEnabledExtensionNames and the pNext
     * chain of feature structures during the call, and keeps neither. NULL: no optional
     * feature. */
    const VkDeviceCreateInfo *device_info;
    uint32_t queue_family; /* a family with VK_QUEUE_COMPUTE_BIT */
    VkQueue queue;         /* a queue of that family, from vkGetDeviceQueue */
} vkbert_vulkan_device;

/* Designated: gcc's -Wmissing-field-initializers (in -Wextra) flags {sizeof(...)}. */
#define VKBERT_VULKAN_DEVICE_INIT                                                                  \
    {                                                                                              \
        .struct_size = sizeof(vkbert_vulkan_device)                                                \
    }

/* A context on the caller's device. `options` may be NULL; options->device is ignored.
 * Validation: vkbert cannot turn the layer on in the caller's instance. When
 * options->validation (or VKBERT_VALIDATION=1) is set and the instance was created with
 * VK_EXT_debug_utils, vkbert adds a messenger of its own that counts the instance's messages
 * (vkbert_validation_messages), and a vkbert call during which one arrived fails with
 * VKBERT_ERROR_VALIDATION (the caller's own work on other threads counts too). Without
 * VK_EXT_debug_utils on the instance, options->validation is refused as
 * VKBERT_ERROR_INVALID_ARGUMENT and VKBERT_VALIDATION is ignored. Timestamps need a queue
 * family with timestampValidBits. On failure *out is NULL, the message is in
 * vkbert_last_error(NULL), and nothing of the caller's was changed. */
VKBERT_API vkbert_status vkbert_context_create_vulkan(const vkbert_context_options *options,
                                                      const vkbert_vulkan_device *device,
                                                      vkbert_context **out);

/* A tensor over the caller's buffer, in the layout of vkbert.h's "device tensors" (rows of the
 * last dimension padded to a multiple of 4 floats). The buffer needs
 * VK_BUFFER_USAGE_STORAGE_BUFFER_BIT and VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT (some
 * kernels read their inputs as texel buffers), bound memory, `offset` a multiple of
 * minStorageBufferOffsetAlignment and of minTexelBufferOffsetAlignment, and `size` at least
 * vkbert_tensor_bytes of the shape. vkbert cannot see a buffer's usage flags: the validation
 * layer reports a missing one at the first forward. The tensor does not own the buffer:
 * vkbert_tensor_destroy leaves it, and it must outlive the tensor and every command buffer that
 * uses it. vkbert_tensor_write and vkbert_tensor_read refuse a wrapped tensor
 * (VKBERT_ERROR_INVALID_ARGUMENT): vkbert does not know whether the host may map the memory,
 * so the caller copies with its own commands or mapping. */
VKBERT_API vkbert_status vkbert_tensor_wrap_vulkan(vkbert_context *ctx, VkBuffer buffer,
                                                   VkDeviceSize offset, VkDeviceSize size, int ndim,
                                                   const int64_t *shape, vkbert_tensor **out);

/* The buffer behind any tensor, wrapped or made by vkbert, and the range its rows take: bind
 * it in the caller's own descriptors. A tensor that vkbert made lives in vkbert's memory,
 * which is device-local and may not be host visible. Any pointer but `tensor` may be NULL. */
VKBERT_API vkbert_status vkbert_tensor_vulkan_buffer(const vkbert_tensor *tensor, VkBuffer *buffer,
                                                     VkDeviceSize *offset, VkDeviceSize *size);

/* Records y = attention(x) (as vkbert_attention_forward: x, y [B,S,E], mask NULL or a mask
 * tensor, options NULL or the same options) into the caller's primary command buffer, which
 * must be in the recording state, outside a render pass, and from a pool of the context's
 * queue family; submit it to a queue of that family. Nothing runs until the caller submits.
 *
 * Barriers the caller owes:
 *   before: its writes of x and the mask -> vkbert's reads: srcStageMask the stage that wrote
 *       them, srcAccessMask its write access, dstStageMask VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
 *       dstAccessMask VK_ACCESS_SHADER_READ_BIT (and the same for earlier reads or writes of
 *       y: dstAccessMask VK_ACCESS_SHADER_WRITE_BIT);
 *   after: vkbert's writes of y -> its use: srcStageMask VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
 *       srcAccessMask VK_ACCESS_SHADER_WRITE_BIT, dst its stage and access
 *       (VK_PIPELINE_STAGE_HOST_BIT and VK_ACCESS_HOST_READ_BIT to read y by mapping after the
 *       fence); and before its next writes of x, mask or y, srcStageMask COMPUTE_SHADER for
 *       vkbert's reads.
 * vkbert's commands begin with a memory barrier from compute-shader and transfer writes to
 * compute-shader and transfer reads and writes (which orders them after earlier uses of the
 * layer's scratch memory, and also covers the "before" barrier when x was written by a compute
 * shader or a copy), and have barriers of their own between their dispatches; none after the
 * last. They bind their own pipelines and descriptor sets: the caller rebinds its own before
 * its next dispatch. No timestamps are written into the caller's command buffers
 * (vkbert_attention_timings keeps those of the last vkbert_attention_forward).
 *
 * Lifetime: the layer, x, mask, y (and their buffers) must stay alive until the command buffer
 * has completed. Each distinct recording (shape, tensors, mask, options) keeps state in the
 * layer (scratch memory, descriptor sets) that stays valid, so the command buffer may be
 * submitted again and again, until the layer is destroyed or 8 other distinct recordings have
 * been made on it since (the oldest is then freed: record it again before submitting it again).
 * vkbert_attention_forward and _forward_host use other state and never disturb a recording.
 * Two submissions of one recording share its scratch memory: they must not run at the same
 * time (vkbert's leading barrier orders them within one queue; across queues, the caller
 * must). No batch halving: a shape over a device limit or the memory fails here, with
 * VKBERT_ERROR_DEVICE_LIMIT or VKBERT_ERROR_OUT_OF_MEMORY. */
VKBERT_API vkbert_status vkbert_attention_record(vkbert_attention *layer, VkCommandBuffer cmd,
                                                 const vkbert_tensor *x, const vkbert_tensor *mask,
                                                 const vkbert_attention_options *options,
                                                 vkbert_tensor *y);

/* Records an encoder's pass on device tensors (as vkbert_encoder_forward and
 * vkbert_encoder_embed: input_ids int32 [B,S], token_type_ids int32 [B,S] or NULL, attention_mask
 * int32 or float32 [B,S] (0 masks, anything else keeps) or NULL; outputs NULL or hidden
 * [B,S,H], pooled [B,H], embeddings [B,width], L2-normalized when `normalize`; at least one
 * output) into the caller's primary command buffer, under the same rules as
 * vkbert_attention_record, except:
 *   - the encoder copies its inputs into its own buffers and its outputs out of them with
 *     transfer commands: the caller's barriers before are to VK_PIPELINE_STAGE_TRANSFER_BIT
 *     with VK_ACCESS_TRANSFER_READ_BIT (for the inputs) and VK_ACCESS_TRANSFER_WRITE_BIT (for
 *     earlier uses of the outputs), and after, from VK_PIPELINE_STAGE_TRANSFER_BIT with
 *     VK_ACCESS_TRANSFER_WRITE_BIT; wrapped buffers need TRANSFER_SRC (inputs) and TRANSFER_DST
 *     (outputs) usage besides STORAGE_BUFFER;
 *   - every recording of the encoder shares one set of buffers per shape: a command buffer
 *     recorded with one shape must have completed before one of another shape is recorded,
 *     and two recordings must not run at the same time;
 *   - nothing reports bad ids: an input id outside [0, vocab_size) embeds as a row of zeros
 *     and a token type outside [0, type_vocab_size) as type 0 (defined, meaningless results,
 *     where vkbert_encoder_forward would fail); check the ids before, where they come from
 *     an untrusted source. */
VKBERT_API vkbert_status vkbert_encoder_record(vkbert_encoder *encoder, VkCommandBuffer cmd,
                                               const vkbert_tensor *input_ids,
                                               const vkbert_tensor *token_type_ids,
                                               const vkbert_tensor *attention_mask, int normalize,
                                               vkbert_tensor *hidden, vkbert_tensor *pooled,
                                               vkbert_tensor *embeddings);

#ifdef __cplusplus
}
#endif
#endif
