/* The shader variants' table (cmake/shader_variants.cmake) and the selection over it
 * (src/tune/tune_variants.c): every module an op may ask for is compiled, a simd register tile
 * request snaps to the largest compiled tile it covers, and the reductions follow the device's
 * subgroup arithmetic. No device: the choices are plain functions of their inputs. */
#include "support.h"
#include "tune/tune.h"

#include <stdlib.h>

static bool covers(uint32_t tm, uint32_t tn4, const vkb_variant *v)
{
    return v->tm <= tm && v->tn4 <= tn4;
}

/* The tile a request snaps to: compiled, covered by the request where any is, and no covered
 * tile has more rows, or as many rows and more columns. */
static void assert_snap(uint32_t tm, uint32_t tn4)
{
    uint32_t got_tm = tm, got_tn4 = tn4;
    vkb_tune_snap_simd(&got_tm, &got_tn4);
    cr_assert(vkb_tune_simd_compiled(got_tm, got_tn4), "%ux%u snapped to %ux%u", tm, tn4, got_tm,
              got_tn4);
    const vkb_variant_set *set = &vkb_variants_matmul_simd;
    for (uint32_t i = 0; i < set->count; i++) {
        const vkb_variant *v = &set->variants[i];
        if (!covers(tm, tn4, v)) continue;
        cr_assert(got_tm <= tm && got_tn4 <= tn4, "%ux%u covers %ux%u, not its snap %ux%u", tm, tn4,
                  v->tm, v->tn4, got_tm, got_tn4);
        bool larger = v->tm > got_tm || (v->tm == got_tm && v->tn4 > got_tn4);
        cr_assert(!larger, "%ux%u snapped to %ux%u, not %ux%u", tm, tn4, got_tm, got_tn4, v->tm,
                  v->tn4);
    }
}

Test(variants, simd_requests_snap_to_the_largest_covered_tile)
{
    for (uint32_t tm = 0; tm <= 20; tm++)
        for (uint32_t tn4 = 0; tn4 <= 6; tn4++)
            assert_snap(tm, tn4);
    uint32_t tm = 12, tn4 = 4;
    vkb_tune_snap_simd(&tm, &tn4);
    cr_assert(tm == 8 && tn4 == 4, "12x4 snapped to %ux%u", tm, tn4);
    tm = 1, tn4 = 1; /* below every tile: the smallest */
    vkb_tune_snap_simd(&tm, &tn4);
    cr_assert(tm == 4 && tn4 == 1, "1x1 snapped to %ux%u", tm, tn4);
}

Test(variants, every_simd_tile_has_its_q8_and_shuffle_modules)
{
    const vkb_variant_set *set = &vkb_variants_matmul_simd;
    uint32_t tiles = 0;
    for (uint32_t i = 0; i < set->count; i++) {
        const vkb_variant *v = &set->variants[i];
        if (v->axes) continue;
        tiles++;
        cr_assert(vkb_variant_find(set, VKB_AXIS_Q8, v->tm, v->tn4));
        /* Shuffles share A's rows in subgroups of 8 lanes, so only tiles of 8 rows or more. */
        bool sharing = v->tm >= 8;
        cr_assert_eq(vkb_variant_find(set, VKB_AXIS_SHUFFLE, v->tm, v->tn4) != NULL, sharing);
        cr_assert_eq(vkb_variant_find(set, VKB_AXIS_SHUFFLE | VKB_AXIS_Q8, v->tm, v->tn4) != NULL,
                     sharing);
    }
    cr_assert_gt(tiles, 0);
}

static vkbert_context *fake_context(bool arithmetic)
{
    vkbert_context *ctx = calloc(1, sizeof *ctx);
    cr_assert(ctx);
    ctx->subgroup_arithmetic = arithmetic;
    return ctx;
}

Test(variants, reductions_follow_subgroup_arithmetic)
{
    vkbert_context *with = fake_context(true), *without = fake_context(false);
    cr_assert_eq(vkb_tune_variant(with, &vkb_variants_softmax, 0), &vkb_shader_softmax);
    cr_assert_eq(vkb_tune_variant(without, &vkb_variants_softmax, 0), &vkb_shader_softmax_shared);
    cr_assert_eq(vkb_tune_variant(with, &vkb_variants_pool, VKB_AXIS_RAGGED),
                 &vkb_shader_pool_ragged);
    cr_assert_eq(vkb_tune_variant(without, &vkb_variants_embedding, VKB_AXIS_RAGGED),
                 &vkb_shader_embedding_ragged_shared);
    /* Fused attention has no shared-memory reductions to fall back to: the same module. */
    uint32_t texel_ragged = VKB_AXIS_TEXEL | VKB_AXIS_RAGGED;
    cr_assert_eq(vkb_tune_variant(without, &vkb_variants_attention_fused, texel_ragged),
                 &vkb_shader_attention_fused_texel_ragged);
    /* Axes no module answers to: none, which the pipeline refuses. */
    cr_assert_null(vkb_tune_variant(with, &vkb_variants_softmax, VKB_AXIS_RAGGED));
    free(with);
    free(without);
}
