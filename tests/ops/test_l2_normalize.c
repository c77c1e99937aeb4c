/* shaders/l2_normalize.comp alone, against double: x / max(||x||_2, 1e-12) as torch's
 * F.normalize, in place and in -> out, zero and tiny rows, padding NaN on input and zero on
 * output. */
#include "support.h"

#include <stdlib.h>

static void check(vkbert_context *ctx, uint32_t rows, uint32_t width, bool in_place, uint64_t seed)
{
    uint32_t ld = (width + 3) / 4 * 4 + 4;
    size_t n = (size_t)rows * ld;
    float *x = malloc(n * 4), *got = test_poisoned(n);
    ref_rng rng = {seed};
    ref_fill(&rng, x, n, -3, 3);
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t j = 0; j < ld; j++) {
            if (j >= width)
                x[(size_t)r * ld + j] = NAN;
            else if (r % 4 == 1)
                x[(size_t)r * ld + j] = 0.0f; /* the norm clamps to eps */
            else if (r % 4 == 2)
                x[(size_t)r * ld + j] *= 1e-15f; /* below eps: x / eps */
        }
    vkb_buffer bx = test_buffer(ctx, x, n), bo = test_buffer(ctx, got, n);
    const vkb_buffer *out = in_place ? &bx : &bo;
    VkDescriptorPool pool = test_pool(ctx);
    vkb_l2_normalize_desc d = {rows, width, ld};
    vkb_dispatch dispatch = {0};
    TEST_OK(vkb_op_l2_normalize(ctx, pool, &d, vkb_whole(&bx), vkb_whole(out), &dispatch));
    test_run(ctx, &dispatch, 1);
    test_buffer_read(ctx, out, got, n);
    for (uint32_t r = 0; r < rows; r++) {
        const float *row = x + (size_t)r * ld;
        double norm = 0;
        for (uint32_t j = 0; j < width; j++)
            norm += (double)row[j] * row[j];
        norm = sqrt(norm);
        double denom = norm > 1e-12 ? norm : 1e-12;
        for (uint32_t j = 0; j < ld; j++) {
            double want = j < width ? row[j] / denom : 0.0;
            float g = got[(size_t)r * ld + j];
            cr_assert(fabs(g - want) <= 1e-5 * (1 + fabs(want)), "row %u j %u: %g vs %g", r, j, g,
                      want);
        }
    }
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &bx), vkb_buffer_destroy(ctx, &bo);
    free(x), free(got);
}

Test(l2_normalize, shapes)
{
    vkbert_context *ctx = test_context(0);
    /* Then the shared-memory reduction, which devices without subgroup arithmetic run. */
    for (int shared = 0; shared < 2; shared++) {
        ctx->subgroup_arithmetic = ctx->subgroup_arithmetic && !shared;
        check(ctx, 1, 1, false, 1);
        check(ctx, 9, 20, false, 2);
        check(ctx, 9, 20, true, 3);
        check(ctx, 5, 1536, true, 4);
        check(ctx, 300, 37, false, 5);
    }
    test_context_done(ctx);
}
