/* Host side of shaders/matmul.comp. */
#include "ops/ops.h"
#include "shaders.h"
#include "tune.h"

typedef struct matmul_push {
    uint32_t m, n, k;
    uint32_t lda4, ldb4, ldc4;
    uint32_t batch_a4, batch_b4, batch_c4;
} matmul_push;

/* The compiled register tiles of the simd family (CMakeLists.txt); the largest that fits. */
static const struct {
    uint32_t tm, tn4;
    const vkb_spirv *shader;
} simd_tiles[] = {
    {16, 3, &vkb_shader_matmul_simd_16x3}, {16, 2, &vkb_shader_matmul_simd_16x2},
    {8, 3, &vkb_shader_matmul_simd_8x3},   {8, 2, &vkb_shader_matmul_simd_8x2},
    {8, 1, &vkb_shader_matmul_simd_8x1},   {4, 2, &vkb_shader_matmul_simd_4x2},
    {4, 1, &vkb_shader_matmul_simd_4x1},
};

static const vkb_spirv *simd_shader(vkb_matmul_tiles *t)
{
    size_t n = sizeof simd_tiles / sizeof *simd_tiles;
    for (size_t i = 0; i < n; i++)
        if (simd_tiles[i].tm <= t->tm && simd_tiles[i].tn4 <= t->tn4) {
            t->tm = simd_tiles[i].tm, t->tn4 = simd_tiles[i].tn4;
            return simd_tiles[i].shader;
        }
    t->tm = 4, t->tn4 = 1;
    return simd_tiles[n - 1].shader;
}

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
    vkb_matmul_tiles t = vkb_tune_matmul(ctx, d->m, d->n, d->k, a.size / 16, b.size / 16);
    const vkb_spirv *simd_variant = t.family == VKB_FAMILY_SIMD ? simd_shader(&t) : NULL;
    uint32_t spec[] = {t.wg_x, t.wg_y, t.tm, t.tn4, d->b_trans, bias != NULL};
    /* Without a bias, binding 2 still needs a storage buffer: C, never read. */
    vkb_view views[4] = {a, b, bias ? *bias : c, c};
    static const VkDescriptorType texel[4] = {
        VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
        VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    bool simd = t.family == VKB_FAMILY_SIMD;
    matmul_push push = {d->m,
                        d->n,
                        d->k,
                        d->lda / 4,
                        d->ldb / 4,
                        d->ldc / 4,
                        (uint32_t)(d->batch_a / 4),
                        (uint32_t)(d->batch_b / 4),
                        (uint32_t)(d->batch_c / 4)};
    const vkb_spirv *shader = simd ? simd_variant : &vkb_shader_matmul;
    vkb_kernel kernel = {shader, simd ? texel : NULL, spec, 6, views, 4, &push, sizeof push};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, out);
    if (status) return status;
    uint32_t n4 = (d->n + 3) / 4;
    out->groups[0] = (n4 + t.wg_x * t.tn4 - 1) / (t.wg_x * t.tn4);
    out->groups[1] = (d->m + t.wg_y * t.tm - 1) / (t.wg_y * t.tm);
    out->groups[2] = d->batch;
    return vkb_check_groups(ctx, out);
}
