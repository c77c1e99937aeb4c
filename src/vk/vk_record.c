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

vkbert_status vkb_check_alive(vkbert_context *ctx)
{
    if (!ctx->lost) return VKBERT_OK;
    return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LOST,
                    "the device was lost or timed out earlier; destroy this context and make a "
                    "new one");
}

void vkb_settle(vkbert_context *ctx)
{
    if (!ctx->lost || ctx->settled) return;
    vkb_wait_idle(ctx); /* returns at once on a really lost device */
    ctx->settled = true;
}

/* A lost device or a timed-out wait leaves the device's state unknown: the context refuses
 * all later work (vkb_check_alive). */
static vkbert_status device_lost(vkbert_context *ctx, VkResult result, const char *what)
{
    ctx->lost = true;
    if (result == VK_TIMEOUT)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LOST,
                        "%s: the device did not finish within the %.0f ms timeout", what,
                        (double)ctx->timeout_ns * 1e-6);
    return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LOST, "%s: %s", what, vkb_result_name(result));
}

vkbert_status vkb_submit(vkbert_context *ctx, VkCommandBuffer cmd, VkFence fence)
{
    vkbert_status status = vkb_check_alive(ctx);
    if (status) return status;
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cmd,
    };
    VkResult result = vkQueueSubmit(ctx->queue, 1, &submit, fence);
    if (result == VK_ERROR_DEVICE_LOST) return device_lost(ctx, result, "vkQueueSubmit");
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkQueueSubmit");
    return VKBERT_OK;
}

bool vkb_fault_pass(vkbert_context *ctx)
{
    int64_t limit = ctx->faults.lost_after_passes;
    return limit >= 0 && ++ctx->faults.passes > (uint64_t)limit;
}

vkbert_status vkb_wait_result(vkbert_context *ctx, VkResult result)
{
    if (ctx->faults.fail_next_submit) { /* test hook: as if the device were lost */
        ctx->faults.fail_next_submit = false;
        if (result == VK_SUCCESS) result = VK_ERROR_DEVICE_LOST;
    }
    if (result == VK_TIMEOUT || result == VK_ERROR_DEVICE_LOST)
        return device_lost(ctx, result, "vkWaitForFences"); /* the fence stays unsignalled */
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkWaitForFences");
    return VKBERT_OK;
}

vkbert_status vkb_submit_wait(vkbert_context *ctx, VkCommandBuffer cmd)
{
    vkbert_status status = vkb_submit(ctx, cmd, ctx->fence);
    if (status) return status;
    VkResult result = vkWaitForFences(ctx->device, 1, &ctx->fence, VK_TRUE, ctx->timeout_ns);
    status = vkb_wait_result(ctx, result);
    if (status != VKBERT_ERROR_DEVICE_LOST) vkResetFences(ctx->device, 1, &ctx->fence);
    return status;
}

vkbert_status vkb_fence_create(vkbert_context *ctx, VkFence *out)
{
    VkFenceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkResult result = vkCreateFence(ctx->device, &info, NULL, out);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreateFence");
    return VKBERT_OK;
}

vkbert_status vkb_check_groups(vkbert_context *ctx, const vkb_dispatch *d)
{
    /* vkCmdDispatchBase cannot reach past the limit either (base + count <= limit): work over
     * it is refused here, and callers then run the batch in halves. */
    for (int i = 0; i < 3; i++)
        if (d->groups[i] > ctx->props.limits.maxComputeWorkGroupCount[i])
            return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                            "%s needs %u workgroups in dimension %d; the device allows %u "
                            "(maxComputeWorkGroupCount)",
                            d->name ? d->name : "a dispatch", d->groups[i], i,
                            ctx->props.limits.maxComputeWorkGroupCount[i]);
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

void vkb_grid_1d(const vkbert_context *ctx, uint64_t items, uint32_t size, uint32_t groups[3])
{
    uint64_t total = (items + size - 1) / size;
    uint64_t cap = ctx->props.limits.maxComputeWorkGroupCount[0];
    if (cap > 65535) cap = 65535;
    uint64_t x = total < cap ? total : cap;
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
