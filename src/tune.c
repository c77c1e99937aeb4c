/* Per-device choices. CPU-backed devices (lavapipe, SwiftShader) run each invocation as one
 * SIMD lane and cache-tile on their own: big register tiles pay there (LAVAPIPE.md). GPUs get
 * moderate tiles that keep register pressure low. Every choice is clamped to the limits. */
#include "tune.h"

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

vkb_matmul_tiles vkb_tune_matmul(const vkbert_context *ctx, uint32_t m, uint32_t n, uint32_t k)
{
    (void)k;
    vkb_matmul_tiles t =
        cpu_backed(ctx) ? (vkb_matmul_tiles){8, 8, 8, 2} : (vkb_matmul_tiles){16, 8, 4, 1};
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
