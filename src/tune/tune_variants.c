/* Which of an op's compiled modules (cmake/shader_variants.cmake) runs on this device. The ops
 * ask for the axes their arguments set (ragged, Q8_0 weights); the axes the device decides
 * (subgroup arithmetic, shuffles, texel reads, the simd family's register tile) are set here. */
#include "tune/tune.h"

/* The lanes of a subgroup sharing A's rows: SUBGROUP_A of matmul_simd's shuffle modules. */
enum { SHARING_LANES = 8 };

const vkb_spirv *vkb_variant_find(const vkb_variant_set *set, uint32_t axes, uint32_t tm,
                                  uint32_t tn4)
{
    for (uint32_t i = 0; i < set->count; i++) {
        const vkb_variant *v = &set->variants[i];
        if (v->axes == axes && v->tm == tm && v->tn4 == tn4) return v->module;
    }
    return NULL;
}

const vkb_spirv *vkb_tune_variant(const vkbert_context *ctx, const vkb_variant_set *set,
                                  uint32_t axes)
{
    if (!ctx->subgroup_arithmetic) axes |= set->axes & VKB_AXIS_SHARED_REDUCE;
    return vkb_variant_find(set, axes, 0, 0);
}

bool vkb_tune_share_rows(const vkbert_context *ctx, uint32_t lanes, uint32_t invocations)
{
    if (!ctx->tuning->env.simd_shuffle) return false;
    return vkb_subgroup_fits(ctx, lanes, invocations, VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
}

/* More rows first, then more columns: the order requests are matched in. */
static bool larger_tile(const vkb_variant *a, const vkb_variant *b)
{
    return a->tm > b->tm || (a->tm == b->tm && a->tn4 > b->tn4);
}

void vkb_tune_snap_simd(uint32_t *tm, uint32_t *tn4)
{
    const vkb_variant_set *set = &vkb_variants_matmul_simd;
    const vkb_variant *best = NULL, *smallest = NULL;
    for (uint32_t i = 0; i < set->count; i++) {
        const vkb_variant *v = &set->variants[i];
        if (v->axes) continue; /* every tile has a plain module */
        if (!smallest || larger_tile(smallest, v)) smallest = v;
        bool covered = v->tm <= *tm && v->tn4 <= *tn4;
        if (covered && (!best || larger_tile(v, best))) best = v;
    }
    if (!best) best = smallest;
    *tm = best->tm, *tn4 = best->tn4;
}

bool vkb_tune_simd_compiled(uint32_t tm, uint32_t tn4)
{
    return vkb_variant_find(&vkb_variants_matmul_simd, 0, tm, tn4) != NULL;
}

/* Subgroups of exactly 8 lanes that run along x can share A (shaders/matmul_simd.comp):
 * compute subgroups with shuffles, a workgroup 8 wide, and subgroups of 8, the device's own
 * size or one it can require (vkb_subgroup_fits). */
static const vkb_spirv *simd_module(const vkbert_context *ctx, vkb_matmul_tiles *t, bool q8,
                                    uint32_t *lanes)
{
    /* tune.c snaps to the same tiles; snapping again here keeps a stale request safe. */
    vkb_tune_snap_simd(&t->tm, &t->tn4);
    t->bm = t->wg_y * t->tm, t->bn = 4 * t->wg_x * t->tn4;
    uint32_t axes = q8 ? VKB_AXIS_Q8 : 0;
    const vkb_variant_set *set = &vkb_variants_matmul_simd;
    const vkb_spirv *shared = vkb_variant_find(set, axes | VKB_AXIS_SHUFFLE, t->tm, t->tn4);
    if (shared && t->wg_x == SHARING_LANES &&
        vkb_tune_share_rows(ctx, SHARING_LANES, t->wg_x * t->wg_y)) {
        *lanes = SHARING_LANES;
        return shared;
    }
    return vkb_variant_find(set, axes, t->tm, t->tn4);
}

const vkb_spirv *vkb_tune_matmul_module(const vkbert_context *ctx, vkb_matmul_tiles *t, bool q8,
                                        uint32_t *lanes)
{
    *lanes = 0;
    if (t->family == VKB_FAMILY_SIMD) return simd_module(ctx, t, q8, lanes);
    /* The gpu family reads Q8_0 B in its fallback only, through a specialization constant. */
    return vkb_variant_find(t->bk ? &vkb_variants_matmul_gpu : &vkb_variants_matmul, 0, 0, 0);
}

uint32_t vkb_tune_fused_read(const vkbert_context *ctx, bool rows_half, uint64_t row_texels,
                             uint32_t workgroup)
{
    bool texel = vkb_tune_family(ctx) == VKB_FAMILY_SIMD && (!rows_half || ctx->fp16_texels) &&
                 vkb_tune_texels_fit(ctx, 1, 3, row_texels);
    if (!texel) return 0;
    /* K and V rows shared by shuffles need one subgroup that is the whole workgroup. */
    bool shared = vkb_tune_share_rows(ctx, workgroup, workgroup);
    return shared ? VKB_AXIS_TEXEL | VKB_AXIS_SHUFFLE : VKB_AXIS_TEXEL;
}
