/* Host side of shaders/matmul.comp. */
#include "ops/ops.h"
#include "shaders.h"
#include "tune.h"

typedef struct matmul_push {
    uint32_t m, n, k;
    uint32_t lda4, ldb4, ldc4;
    uint32_t batch_a4, batch_b4, batch_c4;
} matmul_push;

static bool aligned4(uint64_t x)
{
    return x % 4 == 0;
}

vkbert_status vkb_op_matmul(vkbert_context *ctx, VkDescriptorPool pool, const vkb_matmul_desc *d,
                            vkb_view a, vkb_view b, const vkb_view *bias, vkb_view c,
                            vkb_dispatch *out)
{
    if (!d->m || !d->n || !d->k || !d->batch)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "matmul: empty shape");
    if (!aligned4(d->lda) || !aligned4(d->ldb) || !aligned4(d->ldc) || !aligned4(d->batch_a) ||
        !aligned4(d->batch_b) || !aligned4(d->batch_c))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "matmul: pitches and strides must be multiples of 4 floats");
    if (d->batch_a / 4 > UINT32_MAX || d->batch_b / 4 > UINT32_MAX || d->batch_c / 4 > UINT32_MAX)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT, "matmul: batch stride too large");
    vkb_matmul_tiles t = vkb_tune_matmul(ctx, d->m, d->n, d->k);
    uint32_t spec[] = {t.wg_x, t.wg_y, t.tm, t.tn4, d->b_trans, bias != NULL};
    vkb_view views[4] = {a, b, bias ? *bias : a, c};
    matmul_push push = {d->m,
                        d->n,
                        d->k,
                        d->lda / 4,
                        d->ldb / 4,
                        d->ldc / 4,
                        (uint32_t)(d->batch_a / 4),
                        (uint32_t)(d->batch_b / 4),
                        (uint32_t)(d->batch_c / 4)};
    vkb_kernel kernel = {&vkb_shader_matmul, spec, 6, views, 4, &push, sizeof push};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, out);
    if (status) return status;
    uint32_t n4 = (d->n + 3) / 4;
    out->groups[0] = (n4 + t.wg_x * t.tn4 - 1) / (t.wg_x * t.tn4);
    out->groups[1] = (d->m + t.wg_y * t.tm - 1) / (t.wg_y * t.tm);
    out->groups[2] = d->batch;
    return vkb_check_groups(ctx, out);
}
