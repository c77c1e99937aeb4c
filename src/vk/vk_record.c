/* Recording and submission: barriers between dependent dispatches, dispatches, the fence. */
#include "vk.h"

#include <string.h>

void vkb_cmd_barrier(VkCommandBuffer cmd)
{
    VkMemoryBarrier barrier = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    VkPipelineStageFlags stages =
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &barrier, 0, NULL, 0, NULL);
}

void vkb_cmd_barrier_to_host(VkCommandBuffer cmd)
{
    VkMemoryBarrier barrier = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
    };
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, NULL, 0, NULL);
}

void vkb_cmd_dispatch(VkCommandBuffer cmd, const vkb_dispatch *d)
{
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline->pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline->layout, 0, 1, &d->set,
                            0, NULL);
    if (d->push_size)
        vkCmdPushConstants(cmd, d->pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, d->push_size,
                           d->push);
    vkCmdDispatch(cmd, d->groups[0], d->groups[1], d->groups[2]);
}

vkbert_status vkb_submit_wait(vkbert_context *ctx, VkCommandBuffer cmd)
{
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cmd,
    };
    VkResult result = vkQueueSubmit(ctx->queue, 1, &submit, ctx->fence);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkQueueSubmit");
    result = vkWaitForFences(ctx->device, 1, &ctx->fence, VK_TRUE, UINT64_MAX);
    vkResetFences(ctx->device, 1, &ctx->fence);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkWaitForFences");
    return VKBERT_OK;
}

vkbert_status vkb_check_groups(vkbert_context *ctx, const vkb_dispatch *d)
{
    for (int i = 0; i < 3; i++)
        if (d->groups[i] > ctx->props.limits.maxComputeWorkGroupCount[i])
            return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                            "%s needs %u workgroups in dimension %d; the device allows %u", d->name,
                            d->groups[i], i, ctx->props.limits.maxComputeWorkGroupCount[i]);
    return VKBERT_OK;
}

vkbert_status vkb_check_range(vkbert_context *ctx, VkDeviceSize bytes, const char *what)
{
    if (bytes > ctx->props.limits.maxStorageBufferRange)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                        "%s needs %llu bytes in one storage buffer; the device allows %u "
                        "(maxStorageBufferRange)",
                        what, (unsigned long long)bytes, ctx->props.limits.maxStorageBufferRange);
    return VKBERT_OK;
}

vkbert_status vkb_check_validation(vkbert_context *ctx, uint32_t before)
{
    if (ctx->validation_count == before) return VKBERT_OK;
    return vkb_fail(ctx, VKBERT_ERROR_VALIDATION, "validation: %s", ctx->validation_first);
}

void vkb_grid_1d(uint64_t items, uint32_t size, uint32_t groups[3])
{
    uint64_t total = (items + size - 1) / size;
    uint64_t x = total < 65535 ? total : 65535;
    if (x == 0) x = 1;
    groups[0] = (uint32_t)x;
    groups[1] = (uint32_t)((total + x - 1) / x);
    if (groups[1] == 0) groups[1] = 1;
    groups[2] = 1;
}

vkbert_status vkb_command_buffer(vkbert_context *ctx, VkCommandBuffer *out)
{
    VkCommandBufferAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = ctx->command_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VkResult result = vkAllocateCommandBuffers(ctx->device, &alloc, out);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkAllocateCommandBuffers");
    return VKBERT_OK;
}

vkbert_status vkb_timestamp_pool(vkbert_context *ctx, uint32_t count, VkQueryPool *out)
{
    VkQueryPoolCreateInfo query = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = count,
    };
    VkResult result = vkCreateQueryPool(ctx->device, &query, NULL, out);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreateQueryPool");
    return VKBERT_OK;
}
