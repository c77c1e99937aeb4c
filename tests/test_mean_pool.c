/* shaders/mean_pool.comp alone: masked mean and its unit vector, against double. Masked
 * tokens hold NaN, so using one fails; a sequence without tokens gives zeros. */
#include "support.h"

#include <stdlib.h>

static void check(vkbert_context *ctx, uint32_t batch, uint32_t seq, uint32_t hidden, uint64_t seed)
{
    uint32_t ld = (hidden + 3) / 4 * 4, mask_ld = (seq + 3) / 4 * 4;
    size_t nh = (size_t)batch * seq * ld, nm = (size_t)batch * mask_ld, no = (size_t)batch * ld;
    float *h = malloc(nh * 4), *mask = malloc(nm * 4);
    float *mean = test_poisoned(no), *unit = test_poisoned(no);
    ref_rng rng = {seed};
    ref_fill(&rng, h, nh, -2, 2);
    for (uint32_t b = 0; b < batch; b++)
        for (uint32_t s = 0; s < mask_ld; s++) {
            /* sequence b keeps its first seq - b tokens; the last sequence none when batch > 2 */
            int keep = s < seq && s + b < seq && !(batch > 2 && b == batch - 1);
            mask[b * mask_ld + s] = (float)keep;
            for (uint32_t j = 0; !keep && s < seq && j < ld; j++)
                h[((size_t)b * seq + s) * ld + j] = NAN;
        }
    vkb_buffer bh = test_buffer(ctx, h, nh), bm = test_buffer(ctx, mask, nm);
    vkb_buffer bo = test_buffer(ctx, mean, no), bu = test_buffer(ctx, unit, no);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_mean_pool_desc d = {batch, seq, hidden, ld, mask_ld};
    vkb_dispatch dispatch = {0};
    TEST_OK(vkb_op_mean_pool(ctx, pool, &d, vkb_whole(&bh), vkb_whole(&bm), vkb_whole(&bo),
                             vkb_whole(&bu), &dispatch));
    test_run(ctx, &dispatch, 1);
    test_buffer_read(ctx, &bo, mean, no);
    test_buffer_read(ctx, &bu, unit, no);
    for (uint32_t b = 0; b < batch; b++) {
        double *want = calloc(hidden, sizeof *want), norm = 0;
        int count = 0;
        for (uint32_t s = 0; s < seq; s++) {
            if (mask[b * mask_ld + s] == 0) continue;
            count++;
            for (uint32_t j = 0; j < hidden; j++)
                want[j] += h[((size_t)b * seq + s) * ld + j];
        }
        for (uint32_t j = 0; j < hidden; j++) {
            want[j] = count ? want[j] / count : 0.0;
            norm += want[j] * want[j];
        }
        norm = sqrt(norm);
        for (uint32_t j = 0; j < ld; j++) {
            double m = j < hidden ? want[j] : 0.0, u = norm > 0 ? m / norm : 0.0;
            cr_assert(fabs(mean[b * ld + j] - m) <= 1e-5 * (1 + fabs(m)), "mean b%u j%u: %g vs %g",
                      b, j, mean[b * ld + j], m);
            cr_assert(fabs(unit[b * ld + j] - u) <= 1e-5, "unit b%u j%u: %g vs %g", b, j,
                      unit[b * ld + j], u);
        }
        free(want);
    }
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &bh), vkb_buffer_destroy(ctx, &bm);
    vkb_buffer_destroy(ctx, &bo), vkb_buffer_destroy(ctx, &bu);
    free(h), free(mask), free(mean), free(unit);
}

Test(mean_pool, shapes)
{
    vkbert_context *ctx = test_context(0);
    check(ctx, 1, 1, 16, 1);
    check(ctx, 3, 7, 20, 2);
    check(ctx, 4, 33, 384, 3);
    test_context_done(ctx);
}
