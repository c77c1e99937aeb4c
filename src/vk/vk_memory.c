/* Memory: a few large VkDeviceMemory blocks, sub-allocated first-fit, because drivers cap the
 * number of allocations (maxMemoryAllocationCount, often 4096). Where the device has memory
 * that is both device-local and host-visible (integrated and mobile GPUs, lavapipe), tensors
 * live there and the host reads and writes them in place; elsewhere they go through one
 * staging buffer. */
#include "vk.h"

#include <stdlib.h>
#include <string.h>

#define BLOCK_BYTES ((VkDeviceSize)64 << 20)
/* The staging buffer never grows past this: larger copies go through it in pieces, so that a
 * model's upload costs one bounded host-visible buffer, not one as large as its largest tensor. */
#define STAGING_BYTES ((VkDeviceSize)16 << 20)

void *vkb_table_room(void *table, uint32_t *capacity, uint32_t count, size_t item)
{
    if (count < *capacity) return table;
    uint32_t grown = *capacity ? *capacity * 2 : 16;
    void *moved = grown > *capacity ? realloc(table, grown * item) : NULL;
    if (moved) *capacity = grown;
    return moved;
}

static VkDeviceSize align_up(VkDeviceSize x, VkDeviceSize a)
{
    return (x + a - 1) / a * a;
}

static bool ranges_insert(vkb_range_list *list, uint32_t at, VkDeviceSize offset, VkDeviceSize size)
{
    if (list->count == list->capacity) {
        uint32_t capacity = list->capacity ? list->capacity * 2 : 16;
        VkDeviceSize *o = realloc(list->offset, capacity * sizeof *o);
        if (!o) return false;
        list->offset = o;
        VkDeviceSize *s = realloc(list->size, capacity * sizeof *s);
        if (!s) return false;
        list->size = s;
        list->capacity = capacity;
    }
    memmove(list->offset + at + 1, list->offset + at, (list->count - at) * sizeof *list->offset);
    memmove(list->size + at + 1, list->size + at, (list->count - at) * sizeof *list->size);
    list->offset[at] = offset;
    list->size[at] = size;
    list->count++;
    return true;
}

static void ranges_remove(vkb_range_list *list, uint32_t at)
{
    memmove(list->offset + at, list->offset + at + 1,
            (list->count - at - 1) * sizeof(VkDeviceSize));
    memmove(list->size + at, list->size + at + 1, (list->count - at - 1) * sizeof(VkDeviceSize));
    list->count--;
}

/* First fit; splits the free range around the aligned piece taken. */
static bool block_take(vkb_block *block, VkDeviceSize size, VkDeviceSize alignment,
                       VkDeviceSize *out)
{
    vkb_range_list *list = &block->free;
    for (uint32_t i = 0; i < list->count; i++) {
        VkDeviceSize start = align_up(list->offset[i], alignment);
        VkDeviceSize end = list->offset[i] + list->size[i];
        if (start + size > end) continue;
        VkDeviceSize before = start - list->offset[i], after = end - (start + size);
        if (after && !ranges_insert(list, i + 1, start + size, after)) return false;
        if (before)
            list->size[i] = before;
        else
            ranges_remove(list, i);
        *out = start;
        return true;
    }
    return false;
}

static void block_give(vkb_block *block, VkDeviceSize offset, VkDeviceSize size)
{
    vkb_range_list *list = &block->free;
    uint32_t at = 0;
    while (at < list->count && list->offset[at] < offset)
        at++;
    if (at > 0 && list->offset[at - 1] + list->size[at - 1] == offset) {
        list->size[at - 1] += size; /* merge with the range before */
        if (at < list->count && offset + size == list->offset[at]) {
            list->size[at - 1] += list->size[at];
            ranges_remove(list, at);
        }
        return;
    }
    if (at < list->count && offset + size == list->offset[at]) {
        list->offset[at] = offset;
        list->size[at] += size;
        return;
    }
    /* Can only fail on host OOM; the range is then lost until the context dies. */
    ranges_insert(list, at, offset, size);
}

static int find_memory_type(const vkbert_context *ctx, uint32_t type_bits,
                            VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < ctx->memory_props.memoryTypeCount; i++)
        if ((type_bits & (1u << i)) &&
            (ctx->memory_props.memoryTypes[i].propertyFlags & want) == want)
            return (int)i;
    return -1;
}

/* A block for a request of `need` bytes: BLOCK_BYTES where the limits leave room, never less
 * than `need`; refused up front when `need` itself is over a limit. */
static vkbert_status block_size(vkbert_context *ctx, VkDeviceSize need, VkDeviceSize *out)
{
    if (need > ctx->max_allocation)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                        "a buffer of %llu bytes needs one allocation of that size; the device "
                        "allows %llu (maxMemoryAllocationSize)",
                        (unsigned long long)need, (unsigned long long)ctx->max_allocation);
    VkDeviceSize left = ctx->budget > ctx->allocated_bytes ? ctx->budget - ctx->allocated_bytes : 0;
    if (need > left)
        return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY,
                        "a buffer of %llu bytes does not fit: %llu of the %llu-byte device memory "
                        "budget are in use (device_memory_budget, else the heap size)",
                        (unsigned long long)need, (unsigned long long)ctx->allocated_bytes,
                        (unsigned long long)ctx->budget);
    VkDeviceSize size = BLOCK_BYTES;
    if (size > ctx->max_allocation) size = ctx->max_allocation;
    if (size > left) size = left;
    *out = size > need ? size : need;
    return VKBERT_OK;
}

static vkbert_status new_block(vkbert_context *ctx, uint32_t type_index, VkDeviceSize need,
                               bool map, vkb_block **out)
{
    if (ctx->block_count >= ctx->props.limits.maxMemoryAllocationCount)
        return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY,
                        "%u memory blocks are in use, the most the device allows "
                        "(maxMemoryAllocationCount)",
                        ctx->block_count);
    VkDeviceSize size = 0;
    vkbert_status status = block_size(ctx, need, &size);
    if (status) return status;
    vkb_block **table =
        vkb_table_room(ctx->blocks, &ctx->block_capacity, ctx->block_count, sizeof *table);
    if (table) ctx->blocks = table;
    vkb_block *block = table ? calloc(1, sizeof *block) : NULL;
    if (!block)
        return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory for memory block %u",
                        ctx->block_count);
    VkMemoryAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = size,
        .memoryTypeIndex = type_index,
    };
    VkResult result = vkAllocateMemory(ctx->device, &info, NULL, &block->memory);
    if (result != VK_SUCCESS) {
        free(block);
        return vkb_fail_vk(ctx, result, "vkAllocateMemory");
    }
    if (map)
        result =
            vkMapMemory(ctx->device, block->memory, 0, VK_WHOLE_SIZE, 0, (void **)&block->mapped);
    /* A CPU device's memory is the process's own, faulted in a page at a time when the
     * weights are copied in: about 100,000 faults for a BERT-base, most of its load time. */
    if (result == VK_SUCCESS && block->mapped &&
        ctx->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)
        plat_advise_huge_pages(block->mapped, (size_t)size);
    block->size = size;
    block->type_index = type_index;
    bool listed = result == VK_SUCCESS && ranges_insert(&block->free, 0, 0, size);
    if (!listed) {
        vkFreeMemory(ctx->device, block->memory, NULL);
        free(block->free.offset);
        free(block->free.size);
        free(block);
        return result != VK_SUCCESS ? vkb_fail_vk(ctx, result, "vkMapMemory")
                                    : vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY,
                                               "out of host memory for a block's free list");
    }
    ctx->blocks[ctx->block_count++] = block;
    ctx->allocated_bytes += size;
    *out = block;
    return VKBERT_OK;
}

static vkbert_status place(vkbert_context *ctx, VkMemoryRequirements req, uint32_t type_index,
                           bool map, vkb_buffer *out)
{
    for (uint32_t i = 0; i < ctx->block_count; i++) {
        vkb_block *block = ctx->blocks[i];
        if (block->type_index != type_index || (block->mapped != NULL) != map) continue;
        if (block_take(block, req.size, req.alignment, &out->block_offset)) {
            out->block = block;
            return VKBERT_OK;
        }
    }
    vkb_block *block = NULL;
    vkbert_status status = new_block(ctx, type_index, req.size, map, &block);
    if (status) return status;
    block_take(block, req.size, req.alignment, &out->block_offset);
    out->block = block;
    return VKBERT_OK;
}

static vkbert_status create(vkbert_context *ctx, VkDeviceSize size, VkMemoryPropertyFlags want,
                            bool map, vkb_buffer *out)
{
    memset(out, 0, sizeof *out);
    vkb_faults *faults = &ctx->faults; /* the test hook of an injected failure */
    faults->allocation_count++;
    if (faults->fail_allocation_at && faults->allocation_count == faults->fail_allocation_at)
        return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY,
                        "out of device memory (injected at buffer %u)", faults->allocation_count);
    VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size ? size : 16,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                 VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult result = vkCreateBuffer(ctx->device, &info, NULL, &out->buffer);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(ctx->device, out->buffer, &req);
    int type = find_memory_type(ctx, req.memoryTypeBits, want);
    if (type < 0)
        type =
            find_memory_type(ctx, req.memoryTypeBits, want & ~VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    vkbert_status status = VKBERT_OK;
    if (type < 0)
        status = vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "no memory type fits a buffer");
    if (!status) status = place(ctx, req, (uint32_t)type, map, out);
    if (!status) {
        result =
            vkBindBufferMemory(ctx->device, out->buffer, out->block->memory, out->block_offset);
        if (result != VK_SUCCESS) status = vkb_fail_vk(ctx, result, "vkBindBufferMemory");
    }
    if (status) {
        if (out->block) block_give(out->block, out->block_offset, req.size);
        vkDestroyBuffer(ctx->device, out->buffer, NULL);
        memset(out, 0, sizeof *out);
        return status;
    }
    out->size = req.size;
    out->mapped = map ? out->block->mapped + out->block_offset : NULL;
    ctx->in_use_bytes += req.size;
    return VKBERT_OK;
}

void vkb_memory_init(vkbert_context *ctx)
{
    bool forced = ctx->env.force_staging;
    VkMemoryPropertyFlags shared = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    /* A discrete GPU's host-visible device memory (the PCIe BAR) is slow to read from the
     * host, so discrete GPUs stage. */
    ctx->host_visible_device_memory = !forced && ctx->info.type != VKBERT_DEVICE_DISCRETE_GPU &&
                                      find_memory_type(ctx, ~0u, shared) >= 0;
}

vkbert_status vkb_buffer_create(vkbert_context *ctx, VkDeviceSize size, vkb_buffer *out)
{
    VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    if (ctx->host_visible_device_memory)
        want |= VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    vkbert_status status = create(ctx, size, want, ctx->host_visible_device_memory, out);
    if (!status) out->size = size;
    return status;
}

vkbert_status vkb_buffer_create_host(vkbert_context *ctx, VkDeviceSize size, vkb_buffer *out)
{
    VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    vkbert_status status = create(ctx, size, want, true, out);
    if (!status) out->size = size;
    return status;
}

void vkb_buffer_destroy(vkbert_context *ctx, vkb_buffer *buffer)
{
    if (!buffer->buffer) return;
    vkb_settle(ctx);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(ctx->device, buffer->buffer, &req);
    vkDestroyBuffer(ctx->device, buffer->buffer, NULL);
    block_give(buffer->block, buffer->block_offset, req.size);
    ctx->in_use_bytes -= req.size;
    memset(buffer, 0, sizeof *buffer);
}

void vkb_memory_release(vkbert_context *ctx)
{
    vkb_buffer_destroy(ctx, &ctx->staging);
    for (uint32_t i = 0; i < ctx->block_count; i++) {
        vkFreeMemory(ctx->device, ctx->blocks[i]->memory, NULL);
        free(ctx->blocks[i]->free.offset);
        free(ctx->blocks[i]->free.size);
        free(ctx->blocks[i]);
    }
    free(ctx->blocks);
    ctx->blocks = NULL;
    ctx->block_count = ctx->block_capacity = 0;
    ctx->allocated_bytes = 0;
}

vkb_view vkb_whole(const vkb_buffer *buffer)
{
    return (vkb_view){.buffer = buffer->buffer, .offset = 0, .size = buffer->size};
}

vkb_view vkb_sub(const vkb_buffer *buffer, VkDeviceSize offset, VkDeviceSize size)
{
    return (vkb_view){.buffer = buffer->buffer, .offset = offset, .size = size};
}

static vkbert_status ensure_staging(vkbert_context *ctx, VkDeviceSize size)
{
    if (ctx->staging.buffer && ctx->staging.size >= size) return VKBERT_OK;
    vkb_buffer_destroy(ctx, &ctx->staging);
    return vkb_buffer_create_host(ctx, size, &ctx->staging);
}

static vkbert_status staged_copy(vkbert_context *ctx, VkBuffer src, VkDeviceSize src_offset,
                                 VkBuffer dst, VkDeviceSize dst_offset, VkDeviceSize size)
{
    VkCommandBuffer cmd = ctx->transfer_cmd;
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult result = vkBeginCommandBuffer(cmd, &begin);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkBeginCommandBuffer");
    vkb_cmd_barrier(cmd);
    VkBufferCopy region = {src_offset, dst_offset, size};
    vkCmdCopyBuffer(cmd, src, dst, 1, &region);
    vkb_cmd_barrier_to_host(cmd);
    vkb_cmd_barrier(cmd);
    result = vkEndCommandBuffer(cmd);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkEndCommandBuffer");
    return vkb_submit_wait(ctx, cmd);
}

static VkDeviceSize staging_piece(VkDeviceSize size)
{
    return size < STAGING_BYTES ? size : STAGING_BYTES;
}

vkbert_status vkb_buffer_upload(vkbert_context *ctx, vkb_buffer *dst, VkDeviceSize offset,
                                const void *src, VkDeviceSize size)
{
    if (dst->mapped) {
        memcpy(dst->mapped + offset, src, size);
        return VKBERT_OK;
    }
    vkbert_status status = ensure_staging(ctx, staging_piece(size));
    for (VkDeviceSize done = 0; done < size && !status; done += STAGING_BYTES) {
        VkDeviceSize n = staging_piece(size - done);
        memcpy(ctx->staging.mapped, (const uint8_t *)src + done, n);
        status = staged_copy(ctx, ctx->staging.buffer, 0, dst->buffer, offset + done, n);
    }
    return status;
}

vkbert_status vkb_write(vkb_writer *w, vkb_buffer *dst, VkDeviceSize offset, const void *src,
                        VkDeviceSize size)
{
    if (w->locked || dst->mapped) return vkb_buffer_upload(w->ctx, dst, offset, src, size);
    vkb_lock(w->ctx);
    vkbert_status status = vkb_buffer_upload(w->ctx, dst, offset, src, size);
    if (status) vkb_write_fail(w, status, "%s", vkb_last_error(w->ctx));
    vkb_unlock(w->ctx);
    return status;
}

vkbert_status vkb_buffer_download(vkbert_context *ctx, const vkb_buffer *src, VkDeviceSize offset,
                                  void *dst, VkDeviceSize size)
{
    if (src->mapped) {
        memcpy(dst, src->mapped + offset, size);
        return VKBERT_OK;
    }
    vkbert_status status = ensure_staging(ctx, staging_piece(size));
    for (VkDeviceSize done = 0; done < size && !status; done += STAGING_BYTES) {
        VkDeviceSize n = staging_piece(size - done);
        status = staged_copy(ctx, src->buffer, offset + done, ctx->staging.buffer, 0, n);
        if (!status) memcpy((uint8_t *)dst + done, ctx->staging.mapped, n);
    }
    return status;
}
