/* shaders/layer_norm.comp alone: LayerNorm(x + residual) against double, odd widths, with
 * and without the residual, padding written as zero. */
#include "support.h"

#include <stdlib.h>

static void check(vkbert_context *ctx, uint32_t rows, uint32_t hidden, bool with_residual,
                  uint64_t seed)
{
    uint32_t ld = (hidden + 3) / 4 * 4 + 4;
    size_t n = (size_t)rows * ld;
    float *x = malloc(n * 4), *r = malloc(n * 4), *params = malloc(2 * ld * 4);
    float *got = test_poisoned(n);
    ref_rng rng = {seed};
    ref_fill(&rng, x, n, -3, 5); /* an offset mean, so centring matters */
    ref_fill(&rng, r, n, -1, 1);
    ref_fill(&rng, params, 2 * ld, 0.5, 1.5);
    vkb_buffer bx = test_buffer(ctx, x, n), br = test_buffer(ctx, r, n);
    vkb_buffer bp = test_buffer(ctx, params, 2 * ld), bo = test_buffer(ctx, got, n);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_layer_norm_desc d = {rows, hidden, ld, 1e-12f};
    vkb_view residual = vkb_whole(&br);
    vkb_dispatch dispatch = {0};
    TEST_OK(vkb_op_layer_norm(ctx, pool, &d, vkb_whole(&bx), with_residual ? &residual : NULL,
                              vkb_whole(&bp), vkb_whole(&bo), &dispatch));
    test_run(ctx, &dispatch, 1);
    test_buffer_read(ctx, &bo, got, n);

    size_t count = (size_t)rows * hidden;
    double *want = malloc(count * 8);
    float *packed = malloc(count * 4);
    for (size_t i = 0; i < rows; i++) {
        double mean = 0, var = 0;
        for (size_t j = 0; j < hidden; j++)
            mean += x[i * ld + j] + (with_residual ? (double)r[i * ld + j] : 0.0);
        mean /= hidden;
        for (size_t j = 0; j < hidden; j++) {
            double v = x[i * ld + j] + (with_residual ? (double)r[i * ld + j] : 0.0) - mean;
            var += v * v;
        }
        var /= hidden;
        for (size_t j = 0; j < ld; j++) {
            if (j >= hidden) {
                cr_assert_eq(got[i * ld + j], 0.0f, "padding of row %zu not zero", i);
                continue;
            }
            double v = x[i * ld + j] + (with_residual ? (double)r[i * ld + j] : 0.0);
            want[i * hidden + j] = (v - mean) / sqrt(var + 1e-12) * params[j] + params[ld + j];
            packed[i * hidden + j] = got[i * ld + j];
        }
    }
    char what[80];
    snprintf(what, sizeof what, "layer norm rows %u H %u residual %d", rows, hidden, with_residual);
    test_assert_fp32_close(packed, want, count, what);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &bx), vkb_buffer_destroy(ctx, &br);
    vkb_buffer_destroy(ctx, &bp), vkb_buffer_destroy(ctx, &bo);
    free(x), free(r), free(params), free(got), free(want), free(packed);
}

Test(layer_norm, shapes)
{
    vkbert_context *ctx = test_context(0);
    check(ctx, 1, 1, false, 1);
    check(ctx, 7, 20, true, 2);
    check(ctx, 33, 768, true, 3);
    check(ctx, 5, 1023, false, 4);
    check(ctx, 130, 37, true, 5);
    test_context_done(ctx);
}
