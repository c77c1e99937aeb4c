/* shaders/softmax.comp alone: scale, every mask stride form, causal, fully masked rows,
 * dropout, against the double-precision reference. */
#include "support.h"

#include <stdlib.h>
#include <string.h>

typedef struct sm_case {
    uint32_t batch, heads, seq;
    uint32_t mask_dims[4]; /* each 1 (broadcast) or full; all 0 for no mask */
    bool causal;
    float dropout;
    uint64_t seed;
    double masked_share; /* share of mask entries that are 0 */
} sm_case;

/* HuggingFace's additive mask semantics for the cases run while set. */
static bool additive;

static uint32_t pad4(uint32_t x)
{
    return (x + 3) / 4 * 4;
}

/* Random 0/1 mask of the given 4-D shape, laid out with padded rows like a vkbert tensor;
 * fills strides for the shader and the reference. */
static float *make_mask(sm_case c, ref_rng *rng, uint32_t stride[4], size_t *n)
{
    uint32_t *d = c.mask_dims, pitch = pad4(d[3]);
    *n = (size_t)d[0] * d[1] * d[2] * pitch;
    float *mask = malloc(*n * 4);
    for (size_t i = 0; i < *n; i++)
        mask[i] = ref_uniform(rng, 0, 1) < c.masked_share ? 0.0f : 1.0f;
    uint32_t dense[4] = {d[1] * d[2] * pitch, d[2] * pitch, pitch, 1};
    for (int i = 0; i < 4; i++)
        stride[i] = d[i] == 1 ? 0 : dense[i];
    return mask;
}

static void check(vkbert_context *ctx, sm_case c)
{
    uint32_t s = c.seq, ld = pad4(s) + 4, rows = c.batch * c.heads * s;
    size_t n = (size_t)rows * ld;
    float *scores = malloc(n * 4), *got = malloc(n * 4);
    ref_rng rng = {c.seed + s};
    ref_fill(&rng, scores, n, -6, 6);
    bool has_mask = c.mask_dims[0] != 0;
    uint32_t stride[4] = {0};
    size_t mask_n = 1;
    float one = 1.0f, *mask = has_mask ? make_mask(c, &rng, stride, &mask_n) : &one;

    vkb_buffer bs = test_buffer(ctx, scores, n), bm = test_buffer(ctx, mask, mask_n);
    VkDescriptorPool pool = test_pool(ctx);
    double scale = 1.0 / sqrt(64.0);
    vkb_softmax_desc d = {c.batch,  c.heads, s,         ld,     (float)scale, has_mask,
                          c.causal, {0},     c.dropout, c.seed, additive};
    memcpy(d.mask_stride, stride, sizeof stride);
    vkb_dispatch dispatch = {0};
    TEST_OK(vkb_op_softmax(ctx, pool, &d, vkb_whole(&bs), vkb_whole(&bm), &dispatch));
    test_run(ctx, &dispatch, 1);
    test_buffer_read(ctx, &bs, got, n);

    size_t count = (size_t)rows * s;
    double *in = malloc(count * 8), *want = malloc(count * 8);
    float *packed = malloc(count * 4);
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < s; j++) {
            in[r * s + j] = scores[r * ld + j];
            packed[r * s + j] = got[r * ld + j];
        }
    ref_mask rm = {has_mask ? mask : NULL, {stride[0], stride[1], stride[2], stride[3]}};
    ref_options opt = {c.causal, c.dropout, c.seed, additive};
    ref_softmax(in, (int)c.batch, (int)c.heads, (int)s, scale, &rm, &opt, want);
    for (size_t r = 0; r < rows; r++)
        for (size_t j = s; j < ld; j++)
            cr_assert(got[r * ld + j] == scores[r * ld + j], "padding of row %zu written", r);
    char what[96];
    snprintf(what, sizeof what, "softmax B %u H %u S %u mask %u%s p %.2f", c.batch, c.heads, s,
             has_mask, c.causal ? " causal" : "", (double)c.dropout);
    test_assert_fp32_close(packed, want, count, what);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &bs), vkb_buffer_destroy(ctx, &bm);
    if (has_mask) free(mask);
    free(scores), free(got), free(in), free(want), free(packed);
}

Test(softmax, plain_and_causal)
{
    vkbert_context *ctx = test_context(0);
    uint32_t seqs[] = {1, 7, 64, 129, 384};
    for (int i = 0; i < 5; i++) {
        check(ctx, (sm_case){2, 3, seqs[i], {0}, false, 0, 1, 0});
        check(ctx, (sm_case){1, 2, seqs[i], {0}, true, 0, 2, 0});
    }
    test_context_done(ctx);
}

Test(softmax, every_mask_form)
{
    vkbert_context *ctx = test_context(0);
    uint32_t b = 3, h = 2, s = 37;
    uint32_t forms[][4] = {{b, 1, 1, s}, {b, 1, s, s}, {b, h, s, s}, {1, 1, s, s},
                           {1, 1, 1, s}, {1, h, 1, s}, {b, h, 1, s}};
    for (int i = 0; i < 7; i++) {
        sm_case c = {b, h, s, {0}, i % 2 == 0, 0, 10 + i, 0.4};
        memcpy(c.mask_dims, forms[i], sizeof forms[i]);
        check(ctx, c);
    }
    test_context_done(ctx);
}

Test(softmax, fully_masked_rows_are_zero)
{
    vkbert_context *ctx = test_context(0);
    /* 90% masked over 5 keys: many rows have no key left. */
    check(ctx, (sm_case){2, 2, 5, {2, 1, 5, 5}, false, 0, 3, 0.9});
    check(ctx, (sm_case){1, 1, 9, {1, 1, 1, 9}, false, 0, 4, 1.0});
    test_context_done(ctx);
}

Test(softmax, additive_mask)
{
    vkbert_context *ctx = test_context(0);
    additive = true;
    check(ctx, (sm_case){2, 2, 5, {2, 1, 5, 5}, false, 0, 3, 0.9}); /* many empty rows */
    check(ctx, (sm_case){1, 2, 64, {1, 1, 64, 64}, true, 0.3f, 7, 0.3});
    test_context_done(ctx);
}

Test(softmax, dropout_matches_reference)
{
    vkbert_context *ctx = test_context(0);
    check(ctx, (sm_case){2, 3, 129, {0}, false, 0.1f, 42, 0});
    check(ctx, (sm_case){1, 2, 64, {1, 1, 64, 64}, true, 0.5f, 7, 0.3});
    check(ctx, (sm_case){1, 1, 8, {0}, false, 1.0f, 9, 0});
    test_context_done(ctx);
}

/* Dropout statistics on P itself: the share zeroed is p within 4 standard deviations, every
 * kept weight is the eval-mode weight times 1/(1-p), and seeds reproduce bitwise. */
static float *weights(vkbert_context *ctx, uint32_t rows, uint32_t s, float p, uint64_t seed,
                      const float *scores)
{
    vkb_buffer b = test_buffer(ctx, scores, (size_t)rows * s), m = test_buffer(ctx, scores, 4);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_softmax_desc d = {1, rows / s, s, s, 0.125f, false, false, {0}, p, seed, false};
    vkb_dispatch dispatch = {0};
    TEST_OK(vkb_op_softmax(ctx, pool, &d, vkb_whole(&b), vkb_whole(&m), &dispatch));
    test_run(ctx, &dispatch, 1);
    float *out = malloc((size_t)rows * s * 4);
    test_buffer_read(ctx, &b, out, (size_t)rows * s);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &b), vkb_buffer_destroy(ctx, &m);
    return out;
}

Test(softmax, dropout_statistics)
{
    vkbert_context *ctx = test_context(0);
    uint32_t s = 128, rows = 8 * s;
    size_t n = (size_t)rows * s;
    float *scores = malloc(n * 4);
    ref_rng rng = {99};
    ref_fill(&rng, scores, n, -4, 4);
    float *eval = weights(ctx, rows, s, 0.0f, 0, scores);
    float ps[] = {0.1f, 0.5f};
    for (int k = 0; k < 2; k++) {
        double p = ps[k];
        float *a = weights(ctx, rows, s, ps[k], 1234, scores);
        float *again = weights(ctx, rows, s, ps[k], 1234, scores);
        float *other = weights(ctx, rows, s, ps[k], 1235, scores);
        size_t zeros = 0;
        for (size_t i = 0; i < n; i++) {
            if (a[i] == 0.0f) {
                zeros++;
                continue;
            }
            double want = eval[i] / (1.0 - p);
            cr_assert(fabs(a[i] - want) <= 1e-6 * want, "kept weight %g != %g", a[i], want);
        }
        double share = (double)zeros / n, sigma = sqrt(p * (1 - p) / n);
        cr_assert(fabs(share - p) <= 4 * sigma, "p %.2f: share zeroed %.5f, 4 sigma %.5f", p, share,
                  4 * sigma);
        cr_assert(!memcmp(a, again, n * 4), "the same seed gave a different result");
        cr_assert(memcmp(a, other, n * 4), "another seed gave the same result");
        free(a), free(again), free(other);
    }
    free(scores), free(eval);
    test_context_done(ctx);
}
