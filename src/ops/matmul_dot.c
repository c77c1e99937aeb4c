/* Host side of shaders/matmul_dot.comp: C = A_q * B with 4x8-bit packed integer dot products,
 * A quantized per row (vkb_op_quantize_rows), B in Q8_0 blocks in the dot order. */
#include "ops/ops.h"
#include "shader_variants.h"
#include "tune/tune.h"

_Static_assert(sizeof(vkb_matmul_push) == VKB_PUSH_BYTES_MATMUL_DOT,
               "vkb_matmul_push matches shaders/matmul_dot.comp's Push block");

/* The register tile compiled in (shaders/matmul_dot.comp's defaults) and the workgroup: 8 x 8
 * invocations, each 4 rows x 8 columns, fit every Vulkan 1.1 device (128 invocations). */
enum { DOT_TM = 4, DOT_TN4 = 2, DOT_WG_X = 8, DOT_WG_Y = 8 };

static vkbert_status check(vkbert_context *ctx, const vkb_matmul_desc *d, vkb_view a_q, vkb_view b)
{
    if (!ctx->int8_dot)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                        "matmul: %s has no 4x8-bit packed integer dot product "
                        "(VK_KHR_shader_integer_dot_product)",
                        ctx->info.name);
    if (d->b_trans || d->a != VKB_FORMAT_Q8_ROWS || d->b != VKB_FORMAT_Q8_0_DOT ||
        d->c != VKB_FORMAT_F32 || d->batch != 1 || d->lda != vkb_q8_rows_pitch(d->k))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "matmul: the integer-dot path takes quantized rows of A, a [K,N] int8 B "
                        "and fp32 C, with a batch of 1");
    if ((uint64_t)d->m * d->lda * 4 > a_q.size ||
        (uint64_t)(d->ldb / 4) * ((d->k + 31) / 32) * 144 > b.size)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "matmul: the integer-dot operands are smaller than their shape");
    return VKBERT_OK;
}

vkbert_status vkb_op_matmul_dot(vkbert_context *ctx, VkDescriptorPool pool,
                                const vkb_matmul_desc *d, vkb_view a_q, vkb_view b,
                                const vkb_view *bias, vkb_view c, vkb_dispatch *out)
{
    vkbert_status status = check(ctx, d, a_q, b);
    if (status) return status;
    /* Ids 0, 1 (the workgroup), 5 (a bias), 7 and 8 (shaders/epilogue.glsl); the rest unused. */
    uint32_t spec[] = {DOT_WG_X, DOT_WG_Y, 0, 0, 0, bias != NULL, 0, d->activation, false};
    vkb_view views[4] = {a_q, b, bias ? *bias : c, c};
    vkb_matmul_push push = {d->m,       d->n, d->k, d->lda / 4, d->ldb / 4,
                            d->ldc / 4, 0,    0,    0,          (uint32_t)(d->batch_bias / 4)};
    vkb_kernel kernel = {&vkb_shader_matmul_dot, NULL, spec, 9, views, 4, &push, sizeof push, 0};
    status = vkb_dispatch_prepare(ctx, pool, &kernel, out);
    if (status) return status;
    uint32_t bm = DOT_WG_Y * DOT_TM, bn = 4 * DOT_WG_X * DOT_TN4;
    out->groups[0] = (d->n + bn - 1) / bn;
    out->groups[1] = (d->m + bm - 1) / bm;
    out->groups[2] = 1;
    return vkb_check_groups(ctx, out);
}
