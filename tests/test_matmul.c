/* shaders/matmul.comp alone: batched, strided, both B layouts, odd sizes, against double. */
#include "support.h"

#include <stdlib.h>

typedef struct mm_case {
    uint32_t m, n, k, batch;
    bool b_trans, bias;
} mm_case;

static uint32_t pad4(uint32_t x)
{
    return (x + 3) / 4 * 4;
}

static void check(vkbert_context *ctx, mm_case c, uint64_t seed)
{
    /* Pitches a little past the padding, so that strides are really used. */
    uint32_t lda = pad4(c.k) + 4, ldc = pad4(c.n) + 4;
    uint32_t ldb = c.b_trans ? pad4(c.k) : pad4(c.n) + 8;
    uint32_t b_rows = c.b_trans ? c.n : c.k;
    size_t na = (size_t)c.batch * c.m * lda, nb = (size_t)c.batch * b_rows * ldb;
    size_t nc = (size_t)c.batch * c.m * ldc;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *bias = malloc(pad4(c.n) * 4);
    float *got = test_poisoned(nc);
    ref_rng rng = {seed};
    ref_fill(&rng, a, na, -1, 1);
    ref_fill(&rng, b, nb, -1, 1);
    ref_fill(&rng, bias, pad4(c.n), -1, 1);
    /* Padding holds NaN: a kernel that multiplies padding fails. */
    for (size_t r = 0; r < (size_t)c.batch * c.m; r++)
        for (uint32_t k = c.k; k < lda; k++)
            a[r * lda + k] = NAN;
    if (c.b_trans)
        for (size_t r = 0; r < (size_t)c.batch * b_rows; r++)
            for (uint32_t k = c.k; k < ldb; k++)
                b[r * ldb + k] = NAN;

    vkb_buffer ba = test_buffer(ctx, a, na), bb = test_buffer(ctx, b, nb);
    vkb_buffer bbias = test_buffer(ctx, bias, pad4(c.n)), bc = test_buffer(ctx, got, nc);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_matmul_desc d = {c.m,
                         c.n,
                         c.k,
                         c.batch,
                         lda,
                         ldb,
                         ldc,
                         (uint64_t)c.m * lda,
                         (uint64_t)b_rows * ldb,
                         (uint64_t)c.m * ldc,
                         c.b_trans};
    vkb_dispatch dispatch = {0};
    vkb_view bias_view = vkb_whole(&bbias);
    TEST_OK(vkb_op_matmul(ctx, pool, &d, vkb_whole(&ba), vkb_whole(&bb), c.bias ? &bias_view : NULL,
                          vkb_whole(&bc), &dispatch));
    test_run(ctx, &dispatch, 1);
    test_buffer_read(ctx, &bc, got, nc);

    size_t count = (size_t)c.batch * c.m * c.n;
    double *want = malloc(count * sizeof *want);
    float *packed = malloc(count * sizeof *packed);
    for (size_t z = 0; z < c.batch; z++)
        for (size_t i = 0; i < c.m; i++)
            for (size_t j = 0; j < c.n; j++) {
                double acc = c.bias ? bias[j] : 0.0;
                for (size_t k = 0; k < c.k; k++) {
                    double bv =
                        c.b_trans ? b[(z * b_rows + j) * ldb + k] : b[(z * b_rows + k) * ldb + j];
                    acc += (double)a[(z * c.m + i) * lda + k] * bv;
                }
                size_t o = (z * c.m + i) * c.n + j;
                want[o] = acc;
                packed[o] = got[(z * c.m + i) * ldc + j];
            }
    char what[96];
    snprintf(what, sizeof what, "matmul M %u N %u K %u batch %u %s%s", c.m, c.n, c.k, c.batch,
             c.b_trans ? "B^T" : "B", c.bias ? " +bias" : "");
    test_assert_fp32_close(packed, want, count, what);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &ba), vkb_buffer_destroy(ctx, &bb);
    vkb_buffer_destroy(ctx, &bbias), vkb_buffer_destroy(ctx, &bc);
    free(a), free(b), free(bias), free(got), free(want), free(packed);
}

Test(matmul, fixed_shapes)
{
    vkbert_context *ctx = test_context(0);
    check(ctx, (mm_case){1, 1, 1, 1, false, true}, 1);
    check(ctx, (mm_case){1, 4, 4, 1, true, false}, 7);
    check(ctx, (mm_case){64, 64, 64, 1, false, true}, 2);
    check(ctx, (mm_case){129, 77, 35, 1, false, true}, 3);
    check(ctx, (mm_case){129, 77, 35, 1, true, true}, 4);
    check(ctx, (mm_case){7, 7, 17, 6, true, false}, 5);
    check(ctx, (mm_case){33, 80, 130, 3, false, false}, 6);
    test_context_done(ctx);
}

Test(matmul, random_shapes)
{
    vkbert_context *ctx = test_context(0);
    ref_rng rng = {2024};
    for (int t = 0; t < 12; t++) {
        mm_case c = {(uint32_t)ref_uniform(&rng, 1, 200), (uint32_t)ref_uniform(&rng, 1, 200),
                     (uint32_t)ref_uniform(&rng, 1, 300), (uint32_t)ref_uniform(&rng, 1, 4),
                     ref_uniform(&rng, 0, 1) < 0.5,       ref_uniform(&rng, 0, 1) < 0.5};
        check(ctx, c, 100 + t);
    }
    test_context_done(ctx);
}
