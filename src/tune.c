/* Per-device choices. CPU-backed devices (lavapipe, SwiftShader) run each invocation as one
 * SIMD lane and cache-tile on their own: big register tiles pay there (LAVAPIPE.md). GPUs get
 * moderate tiles that keep register pressure low. Every choice is clamped to the limits. */
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool cpu_backed(const vkbert_context *ctx)
{
    return ctx->info.type == VKBERT_DEVICE_CPU;
}

static uint32_t clamp_workgroup(const vkbert_context *ctx, uint32_t size)
{
    uint32_t max = ctx->props.limits.maxComputeWorkGroupInvocations;
    if (size > ctx->props.limits.maxComputeWorkGroupSize[0])
        size = ctx->props.limits.maxComputeWorkGroupSize[0];
    while (size > max)
        size /= 2;
    return size;
}

vkb_family vkb_tune_family(const vkbert_context *ctx)
{
    const char *forced = getenv("VKBERT_KERNELS");
    if (forced && !strcmp(forced, "simd")) return VKB_FAMILY_SIMD;
    if (forced && !strcmp(forced, "gpu")) return VKB_FAMILY_GPU;
    return cpu_backed(ctx) ? VKB_FAMILY_SIMD : VKB_FAMILY_GPU;
}

const char *vkb_family_name(vkb_family family)
{
    return family == VKB_FAMILY_SIMD ? "simd" : "gpu";
}

vkb_matmul_tiles vkb_tune_matmul(const vkbert_context *ctx, uint32_t m, uint32_t n, uint32_t k,
                                 uint64_t a_texels, uint64_t b_texels)
{
    (void)k;
    vkb_matmul_tiles t = {vkb_tune_family(ctx), 16, 8, 4, 1};
    if (t.family == VKB_FAMILY_SIMD) t = (vkb_matmul_tiles){VKB_FAMILY_SIMD, 8, 4, 16, 3};
    uint32_t limit = ctx->props.limits.maxTexelBufferElements;
    if (t.family == VKB_FAMILY_SIMD && (a_texels > limit || b_texels > limit))
        t = (vkb_matmul_tiles){VKB_FAMILY_GPU, 8, 4, 8, 2}; /* storage buffers have no such cap */
    const char *env = getenv("VKBERT_MATMUL_TILES");        /* "wg_x,wg_y,tm,tn4", for sweeps */
    if (env && sscanf(env, "%u,%u,%u,%u", &t.wg_x, &t.wg_y, &t.tm, &t.tn4) == 4) return t;
    /* Small problems: fewer rows per invocation so that enough workgroups exist. */
    if (m < t.wg_y * t.tm) t.tm = m < 4 ? 1 : 4;
    if ((n + 3) / 4 < t.wg_x * t.tn4) t.tn4 = 1;
    while (t.wg_x * t.wg_y > ctx->props.limits.maxComputeWorkGroupInvocations ||
           t.wg_y > ctx->props.limits.maxComputeWorkGroupSize[1])
        t.wg_y /= 2;
    return t;
}

uint32_t vkb_tune_softmax_workgroup(const vkbert_context *ctx, uint32_t row_length)
{
    uint32_t size = cpu_backed(ctx) ? 32 : 128;
    while (size > 32 && size / 2 >= row_length)
        size /= 2;
    return clamp_workgroup(ctx, size);
}

uint32_t vkb_tune_elementwise_workgroup(const vkbert_context *ctx)
{
    return clamp_workgroup(ctx, 256);
}
