/* Host side of shaders/fma_peak.comp and shaders/copy_bandwidth.comp. */
#include "ops/peak.h"
#include "shader_variants.h"

/* The copy's grid: 512K invocations keep a large GPU's memory system busy, and on lavapipe,
 * which pays per workgroup, measured about 1.5x the bandwidth of one workgroup per 64 vec4. */
#define COPY_MAX_GROUPS 8192

/* Neither shader has specialization constants (a pointer all the same: memcpy of NULL is
 * undefined even for zero bytes). */
static const uint32_t no_spec[1] = {0};

typedef struct fma_push {
    uint32_t iterations;
    float scale, add;
} fma_push;
_Static_assert(sizeof(fma_push) == VKB_PUSH_BYTES_FMA_PEAK,
               "fma_push matches shaders/fma_peak.comp's Push block");

typedef struct copy_push {
    uint32_t count; /* vec4 */
} copy_push;
_Static_assert(sizeof(copy_push) == VKB_PUSH_BYTES_COPY_BANDWIDTH,
               "copy_push matches shaders/copy_bandwidth.comp's Push block");

/* Spreads `groups` over x and y: x is capped at 65535, the least every device allows. */
static void grid(const vkbert_context *ctx, uint64_t groups, uint32_t out[3])
{
    vkb_grid_1d(ctx, groups * VKB_PEAK_WORKGROUP, VKB_PEAK_WORKGROUP, out);
}

vkbert_status vkb_op_fma_peak(vkbert_context *ctx, VkDescriptorPool pool, uint32_t groups,
                              uint32_t iterations, vkb_view result, vkb_dispatch *out)
{
    uint32_t shape[3];
    grid(ctx, groups, shape);
    /* flat_invocation() covers the whole x*y grid, so the result must too. */
    uint64_t invocations = (uint64_t)shape[0] * shape[1] * VKB_PEAK_WORKGROUP;
    if (result.size < invocations * 16)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "fma_peak: the result holds %llu vec4, the grid has %llu invocations",
                        (unsigned long long)(result.size / 16), (unsigned long long)invocations);
    fma_push push = {iterations, 0.999f, 0.001f};
    vkb_kernel kernel = {&vkb_shader_fma_peak, NULL, no_spec, 0, &result, 1, &push, sizeof push, 0};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, out);
    if (status) return status;
    grid(ctx, groups, out->groups);
    return vkb_check_groups(ctx, out);
}

double vkb_fma_peak_flops(const vkbert_context *ctx, uint32_t groups, uint32_t iterations)
{
    uint32_t shape[3];
    grid(ctx, groups, shape);
    double invocations = (double)shape[0] * shape[1] * VKB_PEAK_WORKGROUP;
    return 2.0 * 4.0 * VKB_FMA_CHAINS * VKB_FMA_STEPS * (double)iterations * invocations;
}

vkbert_status vkb_op_copy(vkbert_context *ctx, VkDescriptorPool pool, vkb_view src, vkb_view dst,
                          vkb_dispatch *out)
{
    uint64_t count = dst.size / 16;
    if (src.size < dst.size || count > UINT32_MAX)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "copy: bad sizes");
    copy_push push = {(uint32_t)count};
    vkb_view views[2] = {src, dst};
    vkb_kernel kernel = {
        &vkb_shader_copy_bandwidth, NULL, no_spec, 0, views, 2, &push, sizeof push, 0};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, out);
    if (status) return status;
    uint64_t groups = (count + VKB_PEAK_WORKGROUP - 1) / VKB_PEAK_WORKGROUP;
    grid(ctx, groups < COPY_MAX_GROUPS ? groups : COPY_MAX_GROUPS, out->groups);
    return vkb_check_groups(ctx, out);
}
