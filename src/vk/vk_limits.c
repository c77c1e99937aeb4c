/* The device limits the library works within: the driver's, lowered by VKBERT_LIMITS and by
 * vkbert_context_options.limits ("name=value,..."), so that tests can run every path a small
 * device takes (chunked dispatches, split projections, batches in pieces, refusals) on
 * lavapipe. Every other file reads ctx->props.limits, ctx->max_allocation and ctx->budget. */
#include "vk.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Caps may only lower a limit; a value above the device's changes nothing. */
typedef struct limit_name {
    const char *name; /* VkPhysicalDeviceLimits' field in snake case */
    size_t offset;    /* of a uint32_t (or the first of three) in VkPhysicalDeviceLimits */
    int count;        /* 3 for the per-dimension limits: the cap applies to each */
} limit_name;

#define LIMIT(snake, field, n)                                                                     \
    {                                                                                              \
        snake, offsetof(VkPhysicalDeviceLimits, field), n                                          \
    }
static const limit_name limit_names[] = {
    LIMIT("max_storage_buffer_range", maxStorageBufferRange, 1),
    LIMIT("max_compute_shared_memory_size", maxComputeSharedMemorySize, 1),
    LIMIT("max_compute_work_group_count", maxComputeWorkGroupCount, 3),
    LIMIT("max_compute_work_group_invocations", maxComputeWorkGroupInvocations, 1),
    LIMIT("max_compute_work_group_size", maxComputeWorkGroupSize, 3),
    LIMIT("max_texel_buffer_elements", maxTexelBufferElements, 1),
    LIMIT("max_push_constants_size", maxPushConstantsSize, 1),
    LIMIT("max_per_stage_descriptor_storage_buffers", maxPerStageDescriptorStorageBuffers, 1),
    LIMIT("max_memory_allocation_count", maxMemoryAllocationCount, 1),
};
#undef LIMIT

/* A decimal count, optionally with a k, m or g suffix (powers of 1024). */
static bool parse_size(const char *text, size_t len, uint64_t *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf) return false;
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (!isdigit((unsigned char)buf[0])) return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno) return false;
    int shift = 0;
    if (*end) {
        char s = (char)tolower((unsigned char)*end++);
        shift = s == 'k' ? 10 : s == 'm' ? 20 : s == 'g' ? 30 : -1;
        if (shift < 0 || *end) return false;
    }
    if (v == 0 || v > (UINT64_MAX >> shift)) return false;
    *out = (uint64_t)v << shift;
    return true;
}

static void cap_u32(uint32_t *field, uint64_t value)
{
    if (value < *field) *field = (uint32_t)value;
}

static vkbert_status apply_one(vkbert_context *ctx, const char *item, size_t len, const char *from)
{
    const char *eq = memchr(item, '=', len);
    uint64_t value;
    if (!eq || !parse_size(eq + 1, len - (size_t)(eq + 1 - item), &value))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "%s: \"%.*s\" is not name=value with a positive value (k, m, g allowed)",
                        from, (int)len, item);
    size_t name_len = (size_t)(eq - item);
    for (size_t i = 0; i < sizeof limit_names / sizeof *limit_names; i++) {
        const limit_name *l = &limit_names[i];
        if (strlen(l->name) != name_len || memcmp(l->name, item, name_len)) continue;
        uint32_t *fields = (uint32_t *)((char *)&ctx->props.limits + l->offset);
        for (int d = 0; d < l->count; d++)
            cap_u32(&fields[d], value);
        return VKBERT_OK;
    }
    if (name_len == 26 && !memcmp(item, "max_memory_allocation_size", 26)) {
        if (value < ctx->max_allocation) ctx->max_allocation = value;
        return VKBERT_OK;
    }
    if (name_len == 20 && !memcmp(item, "device_memory_budget", 20)) {
        if (value < ctx->budget) ctx->budget = value;
        return VKBERT_OK;
    }
    return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                    "%s: unknown limit \"%.*s\" (names are VkPhysicalDeviceLimits' in snake case, "
                    "such as max_storage_buffer_range, or max_memory_allocation_size, "
                    "device_memory_budget)",
                    from, (int)name_len, item);
}

static vkbert_status apply_list(vkbert_context *ctx, const char *list, const char *from)
{
    if (!list) return VKBERT_OK;
    const char *at = list;
    while (*at) {
        const char *comma = strchr(at, ',');
        size_t len = comma ? (size_t)(comma - at) : strlen(at);
        vkbert_status status = apply_one(ctx, at, len, from);
        if (status) return status;
        at += len + (comma ? 1 : 0);
    }
    return VKBERT_OK;
}

/* The largest device-local heap: the default memory budget. */
static VkDeviceSize device_local_heap(const vkbert_context *ctx)
{
    VkDeviceSize best = 0;
    for (uint32_t i = 0; i < ctx->memory_props.memoryHeapCount; i++) {
        const VkMemoryHeap *heap = &ctx->memory_props.memoryHeaps[i];
        if ((heap->flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && heap->size > best) best = heap->size;
    }
    return best ? best : UINT64_MAX;
}

vkbert_status vkb_limits_init(vkbert_context *ctx, const char *option)
{
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                         .pNext = &m3};
    vkGetPhysicalDeviceProperties2(ctx->physical, &props);
    ctx->max_allocation = m3.maxMemoryAllocationSize ? m3.maxMemoryAllocationSize : UINT64_MAX;
    ctx->budget = device_local_heap(ctx);
    vkbert_status status = apply_list(ctx, getenv("VKBERT_LIMITS"), "VKBERT_LIMITS");
    if (!status) status = apply_list(ctx, option, "the limits option");
    if (status) return status;
    /* What the rest of the library reports follows the capped values. */
    ctx->info.max_storage_buffer_range = ctx->props.limits.maxStorageBufferRange;
    ctx->info.shared_memory_bytes = ctx->props.limits.maxComputeSharedMemorySize;
    ctx->info.max_storage_buffers = ctx->props.limits.maxPerStageDescriptorStorageBuffers;
    ctx->info.max_workgroup_invocations = ctx->props.limits.maxComputeWorkGroupInvocations;
    if (ctx->budget < ctx->info.device_local_bytes) ctx->info.device_local_bytes = ctx->budget;
    return VKBERT_OK;
}
