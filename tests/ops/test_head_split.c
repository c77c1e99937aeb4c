/* shaders/head_split.comp alone: [B*S, H*Dp] -> [B,H,S,Dp], padding untouched. */
#include "support.h"

#include <stdlib.h>

static void check(vkbert_context *ctx, uint32_t batch, uint32_t seq, uint32_t heads, uint32_t dim)
{
    uint32_t dp = (dim + 3) / 4 * 4, ld = heads * dp + 4;
    size_t n_in = (size_t)batch * seq * ld, n_out = (size_t)batch * heads * seq * dp;
    float *in = malloc(n_in * 4), *out = test_poisoned(n_out);
    ref_rng rng = {batch * 1000 + seq};
    ref_fill(&rng, in, n_in, -1, 1);
    vkb_buffer bin = test_buffer(ctx, in, n_in), bout = test_buffer(ctx, out, n_out);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_heads_desc d = {batch, seq, heads, dim, ld, dp};
    vkb_dispatch dispatch = {0};
    TEST_OK(vkb_op_head_split(ctx, pool, &d, vkb_whole(&bin), vkb_whole(&bout), &dispatch));
    test_run(ctx, &dispatch, 1);
    test_buffer_read(ctx, &bout, out, n_out);
    for (uint32_t b = 0; b < batch; b++)
        for (uint32_t h = 0; h < heads; h++)
            for (uint32_t s = 0; s < seq; s++)
                for (uint32_t t = 0; t < dp; t++) {
                    float got = out[(((size_t)b * heads + h) * seq + s) * dp + t];
                    if (t >= dim) { /* padding: never written */
                        cr_assert(isnan(got), "padding written at b%u h%u s%u d%u", b, h, s, t);
                        continue;
                    }
                    float want = in[((size_t)b * seq + s) * ld + h * dp + t];
                    cr_assert_eq(got, want, "b%u h%u s%u d%u: %g != %g", b, h, s, t, got, want);
                }
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &bin), vkb_buffer_destroy(ctx, &bout);
    free(in), free(out);
}

Test(head_split, shapes)
{
    vkbert_context *ctx = test_context(0);
    check(ctx, 1, 1, 1, 16);
    check(ctx, 2, 7, 3, 17);
    check(ctx, 3, 129, 4, 80);
    check(ctx, 1, 64, 2, 256);
    test_context_done(ctx);
}
