/* shaders/head_merge.comp alone: [B,H,S,Dp] -> [B*S, H*Dp], heads' padding zeroed, the row's
 * padding past H*Dp untouched. */
#include "support.h"

#include <stdlib.h>

static void check(vkbert_context *ctx, uint32_t batch, uint32_t seq, uint32_t heads, uint32_t dim)
{
    uint32_t dp = (dim + 3) / 4 * 4, e = heads * dp, ld = e + 4;
    size_t n_in = (size_t)batch * heads * seq * dp, n_out = (size_t)batch * seq * ld;
    float *in = malloc(n_in * 4), *out = test_poisoned(n_out);
    ref_rng rng = {batch * 77 + seq};
    ref_fill(&rng, in, n_in, -1, 1);
    for (size_t r = 0; r < n_in / dp; r++) /* the heads' padding must not be read */
        for (uint32_t t = dim; t < dp; t++)
            in[r * dp + t] = NAN;
    vkb_buffer bin = test_buffer(ctx, in, n_in), bout = test_buffer(ctx, out, n_out);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_heads_desc d = {batch, seq, heads, dim, ld, dp};
    vkb_dispatch dispatch = {0};
    TEST_OK(vkb_op_head_merge(ctx, pool, &d, vkb_whole(&bin), vkb_whole(&bout), &dispatch));
    test_run(ctx, &dispatch, 1);
    test_buffer_read(ctx, &bout, out, n_out);
    for (uint32_t m = 0; m < batch * seq; m++)
        for (uint32_t col = 0; col < ld; col++) {
            float got = out[(size_t)m * ld + col];
            if (col >= e) {
                cr_assert(isnan(got), "padding written at row %u col %u", m, col);
                continue;
            }
            uint32_t b = m / seq, s = m % seq, h = col / dp, t = col % dp;
            float want = t < dim ? in[(((size_t)b * heads + h) * seq + s) * dp + t] : 0.0f;
            cr_assert_eq(got, want, "row %u col %u: %g != %g", m, col, got, want);
        }
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &bin), vkb_buffer_destroy(ctx, &bout);
    free(in), free(out);
}

Test(head_merge, shapes)
{
    vkbert_context *ctx = test_context(0);
    check(ctx, 1, 1, 1, 16);
    check(ctx, 2, 7, 3, 17);
    check(ctx, 3, 129, 4, 80);
    check(ctx, 1, 64, 2, 256);
    test_context_done(ctx);
}
