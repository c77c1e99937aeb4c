/* Per-device choices. CPU-backed devices (lavapipe, SwiftShader) run each invocation as one
 * SIMD lane and cache-tile on their own: big register tiles pay there (docs/drivers.md). GPUs get
 * moderate tiles that keep register pressure low. Every choice is clamped to the limits. */
#include "tune/tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool cpu_backed(const vkbert_context *ctx)
{
    return ctx->info.type == VKBERT_DEVICE_CPU;
}

/* Halving keeps the power of two that the reductions' shared-memory trees need
 * (shaders/reduce.glsl), whatever limits a device (or VKBERT_LIMITS) sets. */
static uint32_t clamp_workgroup(const vkbert_context *ctx, uint32_t size)
{
    const VkPhysicalDeviceLimits *l = &ctx->props.limits;
    while (size > 1 &&
           (size > l->maxComputeWorkGroupInvocations || size > l->maxComputeWorkGroupSize[0]))
        size /= 2;
    return size;
}

vkb_family vkb_tune_family(const vkbert_context *ctx)
{
    vkb_env_kernels forced = ctx->tuning->env.kernels;
    if (forced == VKB_KERNELS_SIMD) return VKB_FAMILY_SIMD;
    if (forced == VKB_KERNELS_GPU) return VKB_FAMILY_GPU;
    return cpu_backed(ctx) ? VKB_FAMILY_SIMD : VKB_FAMILY_GPU;
}

const char *vkb_family_name(vkb_family family)
{
    return family == VKB_FAMILY_SIMD ? "simd" : "gpu";
}

/* The gpu family's shared-memory tiles (shaders/matmul_gpu.comp), largest first. Bigger
 * micro-tiles reuse each shared-memory read more but make fewer workgroups. */
static const vkb_matmul_tiles gpu_tiles[] = {
    /* 128x128, 8x8 per invocation: 16.5 KiB, more than the 16 KiB Vulkan guarantees */
    {VKB_FAMILY_GPU, 16, 16, 8, 2, 0, 0, 16},
    /* 64x64, 4x4 per invocation: 8.5 KiB, 256 invocations */
    {VKB_FAMILY_GPU, 16, 16, 4, 1, 0, 0, 16},
    /* 64x64, 8x4 per invocation: 128 invocations, the least maxComputeWorkGroupInvocations */
    {VKB_FAMILY_GPU, 16, 8, 8, 1, 0, 0, 16},
    /* 32x32, 4x4 per invocation: small problems, where bigger blocks leave the GPU idle */
    {VKB_FAMILY_GPU, 8, 8, 4, 1, 0, 0, 16},
};

static vkb_matmul_tiles with_block(vkb_matmul_tiles t)
{
    t.bm = t.wg_y * t.tm;
    t.bn = 4 * t.wg_x * t.tn4;
    return t;
}

uint32_t vkb_matmul_shared_bytes(const vkb_matmul_tiles *t)
{
    /* One vec4 of padding per row of each slice, against bank conflicts (matmul_gpu.comp). */
    return t->bk * (t->bm + 4 + t->bn + 4) * 4;
}

static bool workgroup_fits(const vkbert_context *ctx, uint32_t x, uint32_t y)
{
    const VkPhysicalDeviceLimits *l = &ctx->props.limits;
    return x * y <= l->maxComputeWorkGroupInvocations && x <= l->maxComputeWorkGroupSize[0] &&
           y <= l->maxComputeWorkGroupSize[1];
}

/* Whether the shared-memory kernel can run these tiles here. A workgroup that is not a whole
 * number of subgroups leaves lanes idle at every barrier, so that is refused too. */
static bool gpu_tile_fits(const vkbert_context *ctx, const vkb_matmul_tiles *t)
{
    uint32_t subgroup = ctx->subgroup.subgroupSize;
    uint32_t invocations = t->wg_x * t->wg_y;
    return t->bk > 0 && t->bk % 4 == 0 && t->tm > 0 && t->tm % 4 == 0 && t->tn4 > 0 &&
           invocations > 0 && workgroup_fits(ctx, t->wg_x, t->wg_y) &&
           vkb_matmul_shared_bytes(t) <= ctx->props.limits.maxComputeSharedMemorySize &&
           (!subgroup || invocations % subgroup == 0);
}

/* Vulkan does not say how many compute units a device has: a discrete GPU has tens (an H100
 * 132 SMs, a big AMD part 60-96 CUs) and wants a workgroup or more on each; an integrated GPU
 * a handful. */
static uint64_t workgroups_wanted(const vkbert_context *ctx)
{
    return ctx->info.type == VKBERT_DEVICE_DISCRETE_GPU ? 128 : 32;
}

/* The largest gpu tile that fits the device and still makes enough workgroups; else the
 * fitting one that makes the most. `found` false: none fits, the caller falls back. */
static vkb_matmul_tiles pick_gpu_tile(const vkbert_context *ctx, uint32_t m, uint32_t n,
                                      uint32_t batch, bool *found)
{
    vkb_matmul_tiles best = {0};
    *found = false;
    for (size_t i = 0; i < sizeof gpu_tiles / sizeof *gpu_tiles; i++) {
        vkb_matmul_tiles t = with_block(gpu_tiles[i]);
        if (!gpu_tile_fits(ctx, &t)) continue;
        uint64_t groups = (uint64_t)((m + t.bm - 1) / t.bm) * ((n + t.bn - 1) / t.bn) * batch;
        best = t, *found = true;
        if (groups >= workgroups_wanted(ctx)) break;
    }
    return best;
}

/* Tiles of the kernels without shared memory (simd, and the gpu fallback): fewer rows or
 * columns per invocation for small problems, so that enough workgroups exist; the workgroup
 * clamped to the device. */
static vkb_matmul_tiles shrink(const vkbert_context *ctx, vkb_matmul_tiles t, uint32_t m,
                               uint32_t n)
{
    if (m < t.wg_y * t.tm) t.tm = m < 4 ? 1 : 4;
    if ((n + 3) / 4 < t.wg_x * t.tn4) t.tn4 = 1;
    while (!workgroup_fits(ctx, t.wg_x, t.wg_y) && t.wg_y > 1)
        t.wg_y /= 2;
    return t;
}

/* The simd family's register tiles are those compiled in (cmake/shader_variants.cmake). */
static vkb_matmul_tiles snap_simd(vkb_matmul_tiles t)
{
    vkb_tune_snap_simd(&t.tm, &t.tn4);
    return t;
}

vkb_matmul_tiles vkb_tune_matmul(const vkbert_context *ctx, uint32_t m, uint32_t n, uint32_t k,
                                 uint64_t a_texels, uint64_t b_texels)
{
    return vkb_tune_matmul_batched(ctx, m, n, k, 1, a_texels, b_texels);
}

bool vkb_tune_tiles_fit(const vkbert_context *ctx, vkb_matmul_tiles *t)
{
    *t = with_block(*t);
    if (t->family == VKB_FAMILY_GPU) return gpu_tile_fits(ctx, t);
    if (t->family != VKB_FAMILY_SIMD || t->bk || !t->wg_x || !t->wg_y ||
        !workgroup_fits(ctx, t->wg_x, t->wg_y))
        return false;
    return vkb_tune_simd_compiled(t->tm, t->tn4);
}

bool vkb_tune_texels_fit(const vkbert_context *ctx, uint32_t texel_bindings, uint32_t bindings,
                         uint64_t texels)
{
    const VkPhysicalDeviceLimits *l = &ctx->props.limits;
    return texels <= l->maxTexelBufferElements &&
           texel_bindings <= l->maxPerStageDescriptorSampledImages &&
           bindings <= l->maxPerStageResources;
}

/* Each family's starting tiles, before the problem shrinks them. The simd family reads A and
 * B through texel views, which have limits of their own: past them, the gpu family's kernel
 * without shared memory, on storage buffers. */
static vkb_matmul_tiles base_tiles(const vkbert_context *ctx, uint64_t a_texels, uint64_t b_texels)
{
    if (vkb_tune_family(ctx) == VKB_FAMILY_GPU)
        return (vkb_matmul_tiles){VKB_FAMILY_GPU, 16, 8, 4, 1, 0, 0, 0};
    if (!vkb_tune_texels_fit(ctx, 2, 4, a_texels > b_texels ? a_texels : b_texels))
        return (vkb_matmul_tiles){VKB_FAMILY_GPU, 8, 4, 8, 2, 0, 0, 0};
    return (vkb_matmul_tiles){VKB_FAMILY_SIMD, 8, 4, 16, 4, 0, 0, 0};
}

/* VKBERT_MATMUL_TILES="wg_x,wg_y,tm,tn4[,bk]", for sweeps: simd snaps to a compiled tile, and
 * gpu tiles that do not fit run without shared memory. */
static bool tiles_from_env(const vkbert_context *ctx, vkb_matmul_tiles base, bool shared,
                           vkb_matmul_tiles *out)
{
    const vkb_env_tiles *env = &ctx->tuning->env.tiles;
    if (!env->set) return false;
    vkb_matmul_tiles t = base;
    t.wg_x = env->wg_x, t.wg_y = env->wg_y, t.tm = env->tm, t.tn4 = env->tn4;
    if (t.family == VKB_FAMILY_SIMD) {
        *out = with_block(snap_simd(t));
        return true;
    }
    if (shared) t.bk = env->bk;
    t = with_block(t);
    if (!gpu_tile_fits(ctx, &t)) t.bk = 0;
    *out = t;
    return true;
}

vkb_matmul_tiles vkb_tune_matmul_batched(const vkbert_context *ctx, uint32_t m, uint32_t n,
                                         uint32_t k, uint32_t batch, uint64_t a_texels,
                                         uint64_t b_texels)
{
    vkb_matmul_tiles t = base_tiles(ctx, a_texels, b_texels), chosen;
    /* Not for the simd family's storage-buffer fallback, which has no shared-memory tiles. */
    bool shared = vkb_tune_family(ctx) == VKB_FAMILY_GPU && !ctx->tuning->env.matmul_fallback;
    if (tiles_from_env(ctx, t, shared, &chosen)) return chosen;

    /* What `vkbert tune` measured on this device comes before the table; it measured the
     * simd kernel and the shared-memory one, not the fallbacks. */
    bool measured = shared || t.family == VKB_FAMILY_SIMD;
    if (measured && vkb_tune_cache_matmul(ctx, t.family, m, n, k, batch, &chosen)) return chosen;
    if (shared) {
        bool found;
        chosen = pick_gpu_tile(ctx, m, n, batch, &found);
        if (found) return chosen;
        /* No shared-memory tile fits this device's limits: the kernel without shared memory. */
    }
    t = shrink(ctx, t, m, n);
    return with_block(t.family == VKB_FAMILY_SIMD ? snap_simd(t) : t);
}

void vkb_matmul_describe(const vkb_matmul_tiles *t, char *out, size_t size)
{
    const char *family = vkb_family_name(t->family);
    if (t->bk)
        snprintf(out, size, "%s smem %ux%ux%u wg %ux%u tile %ux%u", family, t->bm, t->bn, t->bk,
                 t->wg_x, t->wg_y, t->tm, 4 * t->tn4);
    else
        snprintf(out, size, "%s%s wg %ux%u tile %ux%u", family,
                 t->family == VKB_FAMILY_GPU ? " fallback" : "", t->wg_x, t->wg_y, t->tm,
                 4 * t->tn4);
}

uint32_t vkb_tune_softmax_workgroup(const vkbert_context *ctx, uint32_t row_length)
{
    uint32_t size = cpu_backed(ctx) ? 32 : 128;
    while (size > 32 && size / 2 >= row_length)
        size /= 2;
    return clamp_workgroup(ctx, size);
}

uint32_t vkb_tune_fused_workgroup(const vkbert_context *ctx, uint32_t seq_len)
{
    /* One query row per invocation: enough rows per group to share K and V reads, small
     * enough that short sequences still spread over the cores. */
    uint32_t size = cpu_backed(ctx) ? 8 : 64;
    while (size > 8 && size / 2 >= seq_len)
        size /= 2;
    return clamp_workgroup(ctx, size);
}

bool vkb_tune_attention_fused(const vkbert_context *ctx, uint64_t score_bytes)
{
    vkb_env_attention forced = ctx->tuning->env.attention;
    bool too_big = score_bytes > ctx->props.limits.maxStorageBufferRange ||
                   score_bytes > ctx->info.device_local_bytes / 4;
    if (too_big) return true; /* the unfused path cannot run at all */
    if (forced == VKB_ATTENTION_FUSED) return true;
    if (forced == VKB_ATTENTION_UNFUSED) return false;
    /* Where `vkbert tune` measured both paths on this device, the faster. */
    int measured = vkb_tune_cache_fused(ctx, score_bytes);
    return measured >= 0 ? measured == 1 : true;
}

uint32_t vkb_tune_elementwise_workgroup(const vkbert_context *ctx)
{
    return clamp_workgroup(ctx, 256);
}

vkbert_status vkb_tune_int8_dot(vkbert_context *ctx, bool *dot)
{
    vkb_env_int8 forced = ctx->tuning->env.int8_path;
    *dot = false;
    if (forced == VKB_INT8_DEQUANT) return VKBERT_OK;
    if (forced == VKB_INT8_DOT && !ctx->int8_dot)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                        "VKBERT_INT8_PATH is dot, but %s has no 4x8-bit packed integer dot "
                        "product (VK_KHR_shader_integer_dot_product, enabled by vkbert)",
                        ctx->info.name);
    int measured = vkb_tune_cache_int8_dot(ctx);
    *dot = forced == VKB_INT8_DOT ||
           (ctx->int8_dot && (measured >= 0 ? measured == 1 : ctx->int8_dot_fast));
    return VKBERT_OK;
}
