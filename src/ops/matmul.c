/* Host side of the matmul kernels: shaders/matmul_gpu.comp (gpu family, shared memory),
 * shaders/matmul.comp (its fallback without shared memory) and shaders/matmul_simd.comp (simd
 * family). All three take the same bindings and push constants; src/tune/tune.c picks one. */
#include "ops/ops.h"
#include "shader_variants.h"
#include "tune/tune.h"

#include <stdlib.h>
#include <string.h>

/* The three kernels share one Push block, vkb_matmul_push (ops/ops.h). */
_Static_assert(sizeof(vkb_matmul_push) == VKB_PUSH_BYTES_MATMUL,
               "vkb_matmul_push matches shaders/matmul.comp's Push block");
_Static_assert(sizeof(vkb_matmul_push) == VKB_PUSH_BYTES_MATMUL_GPU,
               "vkb_matmul_push matches shaders/matmul_gpu.comp's Push block");
_Static_assert(sizeof(vkb_matmul_push) == VKB_PUSH_BYTES_MATMUL_SIMD,
               "vkb_matmul_push matches shaders/matmul_simd.comp's Push block");

/* An operand's vec4 texel count; fp16 where fp16 texels are missing must take storage
 * buffers (tune.c then skips the simd family). */
static uint64_t texel_count(const vkbert_context *ctx, vkb_view v, bool half)
{
    if (!half) return v.size / 16;
    return ctx->fp16_texels ? v.size / 8 : UINT64_MAX;
}

static bool aligned4(uint64_t x)
{
    return x % 4 == 0;
}

/* The storages the kernels read and write (ops.h); the integer-dot path checks its own. */
static vkbert_status check_formats(vkbert_context *ctx, const vkb_matmul_desc *d)
{
    if (!vkb_format_valid(d->a) || !vkb_format_valid(d->b) || !vkb_format_valid(d->c))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "matmul: an operand's format (%d, %d, %d) is none of vkb_format's",
                        (int)d->a, (int)d->b, (int)d->c);
    if (!vkb_format_is_float(d->c) || vkb_format_is_q8(d->a) || d->b == VKB_FORMAT_Q8_ROWS)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "matmul: C must be fp32 or fp16, A fp32, fp16 or quantized rows, and B "
                        "fp32, fp16 or int8 blocks");
    if (d->a == VKB_FORMAT_Q8_ROWS && d->b != VKB_FORMAT_Q8_0_DOT)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "matmul: an A of int8 rows needs a B of int8 blocks in the dot order");
    return VKBERT_OK;
}

/* Q8_0 B has [K,N] paths only, and none in the gpu family's shared tiles yet (docs/int8.md):
 * there its fallback runs, with the tiles' geometry recomputed. */
static vkbert_status q8_tiles(vkbert_context *ctx, const vkb_matmul_desc *d, vkb_matmul_tiles *t)
{
    if (d->b_trans || d->batch != 1)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "matmul: an int8 B must be [K,N], with a batch of 1");
    if (t->family == VKB_FAMILY_SIMD) return VKBERT_OK;
    t->bk = 0;
    t->bm = t->wg_y * t->tm, t->bn = 4 * t->wg_x * t->tn4;
    return VKBERT_OK;
}

vkbert_status vkb_op_matmul(vkbert_context *ctx, VkDescriptorPool pool, const vkb_matmul_desc *d,
                            vkb_view a, vkb_view b, const vkb_view *bias, vkb_view c,
                            vkb_dispatch *out)
{
    if (!d->m || !d->n || !d->k || !d->batch)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "matmul: empty shape");
    if (!aligned4(d->lda) || !aligned4(d->ldb) || !aligned4(d->ldc) || !aligned4(d->batch_a) ||
        !aligned4(d->batch_b) || !aligned4(d->batch_c) || !aligned4(d->batch_bias))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "matmul: pitches and strides must be multiples of 4 floats");
    if (d->batch_a / 4 > UINT32_MAX || d->batch_b / 4 > UINT32_MAX || d->batch_c / 4 > UINT32_MAX ||
        d->batch_bias / 4 > UINT32_MAX)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT, "matmul: batch stride too large");
    vkbert_status status = check_formats(ctx, d);
    if (status) return status;
    if (d->b == VKB_FORMAT_Q8_0_DOT) return vkb_op_matmul_dot(ctx, pool, d, a, b, bias, c, out);
    bool a_half = d->a == VKB_FORMAT_F16_PAIRS, b_half = d->b == VKB_FORMAT_F16_PAIRS;
    bool c_half = d->c == VKB_FORMAT_F16_PAIRS, b_q8 = d->b == VKB_FORMAT_Q8_0;
    vkb_matmul_tiles t = vkb_tune_matmul_batched(
        ctx, d->m, d->n, d->k, d->batch, texel_count(ctx, a, a_half), texel_count(ctx, b, b_half));
    if (b_q8) status = q8_tiles(ctx, d, &t);
    if (status) return status;
    bool simd = t.family == VKB_FAMILY_SIMD;
    uint32_t lanes;
    const vkb_spirv *shader = vkb_tune_matmul_module(ctx, &t, b_q8, &lanes);
    /* Ids 0-5 and 7 (the activation, shaders/epilogue.glsl) are common to the three shaders;
     * 6, the slice depth, is matmul_gpu.comp's and has no effect elsewhere. 8-10: C, A and B
     * in fp16, packed pairs of halves; the simd family reads A and B through fp16 texel views
     * instead, so it ignores 9 and 10. 11: B in Q8_0, matmul.comp's only. */
    uint32_t spec[] = {t.wg_x, t.wg_y,        t.tm,   t.tn4,  d->b_trans, bias != NULL,
                       t.bk,   d->activation, c_half, a_half, b_half,     b_q8};
    uint32_t spec_count = 12;
    /* Without a bias, binding 2 still needs a storage buffer: C, never read. */
    vkb_view views[4] = {a, b, bias ? *bias : c, c};
    if (a_half) views[0].format = VK_FORMAT_R16G16B16A16_SFLOAT;
    if (b_half) views[1].format = VK_FORMAT_R16G16B16A16_SFLOAT;
    if (b_q8) views[1].format = VK_FORMAT_R32G32B32A32_UINT;
    static const VkDescriptorType texel[4] = {
        VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
        VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    vkb_matmul_push push = {d->m,
                            d->n,
                            d->k,
                            d->lda / 4,
                            d->ldb / 4,
                            d->ldc / 4,
                            (uint32_t)(d->batch_a / 4),
                            (uint32_t)(d->batch_b / 4),
                            (uint32_t)(d->batch_c / 4),
                            (uint32_t)(d->batch_bias / 4)};
    vkb_kernel kernel = {shader, simd ? texel : NULL, spec, spec_count, views, 4,
                         &push,  sizeof push,         lanes};
    status = vkb_dispatch_prepare(ctx, pool, &kernel, out);
    if (status) return status;
    /* Every kernel computes a block of bm rows x bn columns per workgroup. */
    out->groups[0] = (d->n + t.bn - 1) / t.bn;
    out->groups[1] = (d->m + t.bm - 1) / t.bm;
    out->groups[2] = d->batch;
    return vkb_check_groups(ctx, out);
}
