/* The device limits and features the library works within: the driver's, lowered by
 * VKBERT_LIMITS and by vkbert_context_options.limits (a comma-separated list), so that tests
 * can run every path a small device takes (chunked dispatches, split projections, batches in
 * pieces, kernels without subgroup arithmetic or 16-bit storage, refusals) on lavapipe. Every
 * other file reads ctx->props.limits, ctx->subgroup, ctx->info, ctx->fp16_texels,
 * ctx->max_allocation and ctx->budget, never the driver's own values. */
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
    LIMIT("max_per_stage_descriptor_sampled_images", maxPerStageDescriptorSampledImages, 1),
    LIMIT("max_per_stage_resources", maxPerStageResources, 1),
    LIMIT("max_bound_descriptor_sets", maxBoundDescriptorSets, 1),
    LIMIT("max_memory_allocation_count", maxMemoryAllocationCount, 1),
};
#undef LIMIT

/* Alignments go the other way: a value raises them, up to the 256 Vulkan allows at most. */
static const struct {
    const char *name;
    size_t offset; /* of a VkDeviceSize in VkPhysicalDeviceLimits */
} alignment_names[] = {
    {"min_storage_buffer_offset_alignment",
     offsetof(VkPhysicalDeviceLimits, minStorageBufferOffsetAlignment)},
    {"min_texel_buffer_offset_alignment",
     offsetof(VkPhysicalDeviceLimits, minTexelBufferOffsetAlignment)},
};

/* `minimum`: what the Vulkan 1.1 specification requires of every device ("Required Limits";
 * docs/drivers.md), for each limit the library reads. */
#define MINIMUM(field, value)                                                                      \
    {                                                                                              \
        offsetof(VkPhysicalDeviceLimits, field), value                                             \
    }
static const struct {
    size_t offset; /* of a uint32_t in VkPhysicalDeviceLimits */
    uint32_t value;
} minimum_limits[] = {
    MINIMUM(maxStorageBufferRange, 1u << 27),
    MINIMUM(maxComputeSharedMemorySize, 16384),
    MINIMUM(maxComputeWorkGroupCount[0], 65535),
    MINIMUM(maxComputeWorkGroupCount[1], 65535),
    MINIMUM(maxComputeWorkGroupCount[2], 65535),
    MINIMUM(maxComputeWorkGroupInvocations, 128),
    MINIMUM(maxComputeWorkGroupSize[0], 128),
    MINIMUM(maxComputeWorkGroupSize[1], 128),
    MINIMUM(maxComputeWorkGroupSize[2], 64),
    MINIMUM(maxTexelBufferElements, 65536),
    MINIMUM(maxPushConstantsSize, 128),
    MINIMUM(maxPerStageDescriptorStorageBuffers, 4),
    MINIMUM(maxPerStageDescriptorSampledImages, 16),
    MINIMUM(maxPerStageResources, 128),
    MINIMUM(maxBoundDescriptorSets, 4),
    MINIMUM(maxMemoryAllocationCount, 4096),
};
#undef MINIMUM
#define MINIMUM_ALIGNMENT 256u          /* the largest minStorage/TexelBufferOffsetAlignment */
#define MINIMUM_ALLOCATION (1ull << 30) /* maxMemoryAllocationSize (maintenance3) */

/* Features Vulkan 1.1 does not require, each turned off alone by name=0 (=1 keeps what the
 * device has). R16G16B16A16_SFLOAT texel buffers are required ("Mandatory format support"),
 * so `minimum` keeps fp16_texels; the switch is there to run the paths without them.
 * subgroup_size_control=0 leaves the device made without it (vk_device.c), as a Vulkan 1.1
 * device lacking VK_EXT_subgroup_size_control is. */
enum {
    SWITCH_FP16_STORAGE,
    SWITCH_FP16_ARITHMETIC,
    SWITCH_FP16_TEXELS,
    SWITCH_SUBGROUP_SIZE_CONTROL,
    SWITCH_INTEGER_DOT_PRODUCT,
    SWITCH_COUNT
};
static const char *const switch_names[SWITCH_COUNT] = {"fp16_storage", "fp16_arithmetic",
                                                       "fp16_texels", "subgroup_size_control",
                                                       "integer_dot_product"};

/* subgroup_operations=basic+shuffle...: VkSubgroupFeatureFlagBits' names in snake case. Basic
 * is always kept: Vulkan 1.1 guarantees it in compute shaders, and nothing more. */
static const struct {
    const char *name;
    VkSubgroupFeatureFlags bit;
} subgroup_operations[] = {
    {"basic", VK_SUBGROUP_FEATURE_BASIC_BIT},
    {"vote", VK_SUBGROUP_FEATURE_VOTE_BIT},
    {"arithmetic", VK_SUBGROUP_FEATURE_ARITHMETIC_BIT},
    {"ballot", VK_SUBGROUP_FEATURE_BALLOT_BIT},
    {"shuffle", VK_SUBGROUP_FEATURE_SHUFFLE_BIT},
    {"shuffle_relative", VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT},
    {"clustered", VK_SUBGROUP_FEATURE_CLUSTERED_BIT},
    {"quad", VK_SUBGROUP_FEATURE_QUAD_BIT},
};

#define COUNT(array) (sizeof array / sizeof *array)

static bool is_name(const char *text, size_t len, const char *name)
{
    return strlen(name) == len && !memcmp(text, name, len);
}

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

static void raise_alignment(vkbert_context *ctx, size_t which, uint64_t value)
{
    VkDeviceSize *field =
        (VkDeviceSize *)((char *)&ctx->props.limits + alignment_names[which].offset);
    if (value > *field) *field = value;
}

static void turn_off(vkbert_context *ctx, int which)
{
    if (which == SWITCH_FP16_STORAGE) ctx->info.fp16_storage = 0;
    if (which == SWITCH_FP16_ARITHMETIC) ctx->info.fp16_arithmetic = 0;
    if (which == SWITCH_FP16_TEXELS) ctx->fp16_texels = false;
    if (which == SWITCH_INTEGER_DOT_PRODUCT) ctx->int8_dot = ctx->int8_dot_fast = false;
    if (which == SWITCH_SUBGROUP_SIZE_CONTROL) {
        ctx->subgroup_size_control = ctx->full_subgroups = false;
        memset(&ctx->subgroup_control, 0, sizeof ctx->subgroup_control);
    }
}

static void apply_minimum(vkbert_context *ctx)
{
    for (size_t i = 0; i < COUNT(minimum_limits); i++)
        cap_u32((uint32_t *)((char *)&ctx->props.limits + minimum_limits[i].offset),
                minimum_limits[i].value);
    for (size_t i = 0; i < COUNT(alignment_names); i++)
        raise_alignment(ctx, i, MINIMUM_ALIGNMENT);
    if (MINIMUM_ALLOCATION < ctx->max_allocation) ctx->max_allocation = MINIMUM_ALLOCATION;
    turn_off(ctx, SWITCH_FP16_STORAGE);
    turn_off(ctx, SWITCH_FP16_ARITHMETIC);
    turn_off(ctx, SWITCH_SUBGROUP_SIZE_CONTROL);
    turn_off(ctx, SWITCH_INTEGER_DOT_PRODUCT);
    ctx->subgroup.supportedOperations &= VK_SUBGROUP_FEATURE_BASIC_BIT;
}

static vkbert_status apply_switch(vkbert_context *ctx, int which, const char *value, size_t len,
                                  const char *from)
{
    if (is_name(value, len, "0"))
        turn_off(ctx, which);
    else if (!is_name(value, len, "1"))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "%s: %s takes 0 (off) or 1 (as the device has it), not \"%.*s\"", from,
                        switch_names[which], (int)len, value);
    return VKBERT_OK;
}

/* Keeps the listed operations ("basic+shuffle"), and basic, of those the device has. */
static vkbert_status apply_subgroup_operations(vkbert_context *ctx, const char *value, size_t len,
                                               const char *from)
{
    VkSubgroupFeatureFlags keep = VK_SUBGROUP_FEATURE_BASIC_BIT;
    for (;;) {
        const char *plus = memchr(value, '+', len);
        size_t n = plus ? (size_t)(plus - value) : len, i = 0;
        while (i < COUNT(subgroup_operations) && !is_name(value, n, subgroup_operations[i].name))
            i++;
        if (i == COUNT(subgroup_operations))
            return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                            "%s: unknown subgroup operation \"%.*s\" (subgroup_operations takes "
                            "basic, vote, arithmetic, ballot, shuffle, shuffle_relative, "
                            "clustered, quad, joined by +)",
                            from, (int)n, value);
        keep |= subgroup_operations[i].bit;
        if (!plus) break;
        len -= n + 1;
        value = plus + 1;
    }
    ctx->subgroup.supportedOperations &= keep;
    return VKBERT_OK;
}

/* name=number items: the limits, the alignments and the memory sizes. */
static vkbert_status apply_number(vkbert_context *ctx, const char *item, size_t len,
                                  const char *from)
{
    const char *eq = memchr(item, '=', len);
    size_t name_len = (size_t)(eq - item);
    int limit = -1, alignment = -1;
    for (size_t i = 0; i < COUNT(limit_names); i++)
        if (is_name(item, name_len, limit_names[i].name)) limit = (int)i;
    for (size_t i = 0; i < COUNT(alignment_names); i++)
        if (is_name(item, name_len, alignment_names[i].name)) alignment = (int)i;
    bool allocation = is_name(item, name_len, "max_memory_allocation_size");
    bool budget = is_name(item, name_len, "device_memory_budget");
    if (limit < 0 && alignment < 0 && !allocation && !budget)
        return vkb_fail(
            ctx, VKBERT_ERROR_INVALID_ARGUMENT,
            "%s: unknown limit \"%.*s\" (names are VkPhysicalDeviceLimits' in snake "
            "case, such as max_storage_buffer_range, or max_memory_allocation_size, "
            "device_memory_budget; the switches fp16_storage, fp16_arithmetic, "
            "fp16_texels, subgroup_size_control, integer_dot_product, subgroup_operations; "
            "or minimum)",
            from, (int)name_len, item);
    uint64_t value;
    if (!parse_size(eq + 1, len - name_len - 1, &value))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "%s: \"%.*s\" is not name=value with a positive value (k, m, g allowed)",
                        from, (int)len, item);
    if (limit >= 0) {
        uint32_t *fields = (uint32_t *)((char *)&ctx->props.limits + limit_names[limit].offset);
        for (int d = 0; d < limit_names[limit].count; d++)
            cap_u32(&fields[d], value);
    } else if (alignment >= 0) {
        if (value > MINIMUM_ALIGNMENT || (value & (value - 1)))
            return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                            "%s: %s takes a power of two up to %u", from,
                            alignment_names[alignment].name, MINIMUM_ALIGNMENT);
        raise_alignment(ctx, (size_t)alignment, value);
    } else if (allocation && value < ctx->max_allocation) {
        ctx->max_allocation = value;
    } else if (budget && value < ctx->budget) {
        ctx->budget = value;
    }
    return VKBERT_OK;
}

static vkbert_status apply_one(vkbert_context *ctx, const char *item, size_t len, const char *from)
{
    if (is_name(item, len, "minimum")) {
        apply_minimum(ctx);
        return VKBERT_OK;
    }
    const char *eq = memchr(item, '=', len);
    if (!eq)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "%s: \"%.*s\" is not name=value, nor minimum", from, (int)len, item);
    size_t name_len = (size_t)(eq - item), value_len = len - name_len - 1;
    for (int i = 0; i < SWITCH_COUNT; i++)
        if (is_name(item, name_len, switch_names[i]))
            return apply_switch(ctx, i, eq + 1, value_len, from);
    if (is_name(item, name_len, "subgroup_operations"))
        return apply_subgroup_operations(ctx, eq + 1, value_len, from);
    return apply_number(ctx, item, len, from);
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
    vkbert_status status = apply_list(ctx, ctx->env.limits, "VKBERT_LIMITS");
    if (!status) status = apply_list(ctx, option, "the limits option");
    if (status) return status;
    /* What the rest of the library reports and chooses by follows the capped values. */
    ctx->info.max_storage_buffer_range = ctx->props.limits.maxStorageBufferRange;
    ctx->info.shared_memory_bytes = ctx->props.limits.maxComputeSharedMemorySize;
    ctx->info.max_storage_buffers = ctx->props.limits.maxPerStageDescriptorStorageBuffers;
    ctx->info.max_workgroup_invocations = ctx->props.limits.maxComputeWorkGroupInvocations;
    ctx->subgroup_arithmetic = ctx->subgroup_arithmetic && (ctx->subgroup.supportedOperations &
                                                            VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    if (ctx->budget < ctx->info.device_local_bytes) ctx->info.device_local_bytes = ctx->budget;
    return VKBERT_OK;
}

vkbert_status vkb_check_layout(vkbert_context *ctx, const char *shader,
                               const VkDescriptorType *types, uint32_t binding_count,
                               uint32_t push_size)
{
    const VkPhysicalDeviceLimits *l = &ctx->props.limits;
    uint32_t storage = 0;
    for (uint32_t i = 0; i < binding_count; i++)
        storage += !types || types[i] == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    /* The other bindings are uniform texel buffers, which count as sampled images. */
    const struct {
        uint32_t need, allowed;
        const char *what, *limit;
    } checks[] = {
        {push_size, l->maxPushConstantsSize, "bytes of push constants", "maxPushConstantsSize"},
        {storage, l->maxPerStageDescriptorStorageBuffers, "storage buffers",
         "maxPerStageDescriptorStorageBuffers"},
        {binding_count - storage, l->maxPerStageDescriptorSampledImages, "uniform texel buffers",
         "maxPerStageDescriptorSampledImages"},
        {binding_count, l->maxPerStageResources, "descriptors", "maxPerStageResources"},
        {1, l->maxBoundDescriptorSets, "descriptor set", "maxBoundDescriptorSets"},
    };
    for (size_t i = 0; i < COUNT(checks); i++)
        if (checks[i].need > checks[i].allowed)
            return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                            "%s needs %u %s; the device allows %u (%s)", shader, checks[i].need,
                            checks[i].what, checks[i].allowed, checks[i].limit);
    return VKBERT_OK;
}
