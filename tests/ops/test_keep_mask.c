/* shaders/keep_mask.comp alone, against the host API's rule for attention masks (an element
 * keeps when it is not 0, shared with encoder_record.c's fill_masks): int32 masks of 0, 1 and
 * other values, float32 masks of 0.0, -0.0, 1.0, 2.0, -1.0, a denormal, infinities and NaN;
 * odd shapes, the padding of the input NaN and of the pooling's output poisoned. */
#include "support.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

/* The raw bits of element `at`: from lists holding every case above, in turn or at random. */
static uint32_t element(bool is_float, size_t at, ref_rng *rng)
{
    static const int32_t ints[] = {0, 1, 0, -1, 2, INT32_MIN, 0, 7, INT32_MAX};
    static const float floats[] = {0.0f, -0.0f,    1.0f,      2.0f, -1.0f, FLT_TRUE_MIN,
                                   0.0f, INFINITY, -INFINITY, NAN,  0.5f,  -FLT_MIN};
    uint32_t bits;
    size_t pick = at % 3 == 2 ? (size_t)ref_uniform(rng, 0, 1000) : at;
    if (is_float)
        memcpy(&bits, &floats[pick % (sizeof floats / sizeof *floats)], 4);
    else
        memcpy(&bits, &ints[pick % (sizeof ints / sizeof *ints)], 4);
    return bits;
}

/* 1 where the host API keeps the element: the C comparison with zero, by dtype. */
static float host_rule(bool is_float, uint32_t bits)
{
    if (is_float) {
        float f;
        memcpy(&f, &bits, 4);
        return f != 0.0f ? 1.0f : 0.0f;
    }
    int32_t i;
    memcpy(&i, &bits, 4);
    return i != 0 ? 1.0f : 0.0f;
}

static void check(vkbert_context *ctx, uint32_t batch, uint32_t seq_len, uint32_t ld, bool is_float,
                  uint64_t seed)
{
    size_t n = (size_t)batch * ld;
    uint32_t *in = malloc(n * 4);
    float *keep = test_poisoned(n), *pooling = test_poisoned(n);
    ref_rng rng = {seed};
    for (size_t i = 0; i < n; i++) {
        float nan = NAN;
        if (i % ld < seq_len)
            in[i] = element(is_float, i, &rng);
        else
            memcpy(&in[i], &nan, 4); /* a tensor's padding: must come out 0 */
    }
    vkb_buffer bk, bp = test_buffer(ctx, pooling, n);
    TEST_OK(vkb_buffer_create(ctx, n * 4, &bk));
    TEST_OK(vkb_buffer_upload(ctx, &bk, 0, in, n * 4));
    VkDescriptorPool pool = test_pool(ctx);
    vkb_keep_mask_desc d = {batch, seq_len, ld, is_float};
    vkb_dispatch dispatch = {0};
    TEST_OK(vkb_op_keep_mask(ctx, pool, &d, vkb_whole(&bk), vkb_whole(&bp), &dispatch));
    test_run(ctx, &dispatch, 1);
    test_buffer_read(ctx, &bk, keep, n);
    test_buffer_read(ctx, &bp, pooling, n);
    for (size_t i = 0; i < n; i++) {
        float want = i % ld < seq_len ? host_rule(is_float, in[i]) : 0.0f;
        cr_assert(keep[i] == want && pooling[i] == want,
                  "%s B %u S %u ld %u: [%zu] (bits 0x%08x) keep %g pooling %g, want %g",
                  is_float ? "float32" : "int32", batch, seq_len, ld, i, in[i], keep[i], pooling[i],
                  want);
    }
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &bk), vkb_buffer_destroy(ctx, &bp);
    free(in), free(keep), free(pooling);
}

Test(keep_mask, shapes)
{
    vkbert_context *ctx = test_context(0);
    for (int f = 0; f < 2; f++) {
        check(ctx, 1, 1, 4, f, 1);
        check(ctx, 3, 7, 8, f, 2);
        check(ctx, 5, 33, 40, f, 3);    /* a pitch wider than the tensors' */
        check(ctx, 37, 129, 132, f, 4); /* over one workgroup */
    }
    test_context_done(ctx);
}

Test(keep_mask, bad_shapes_are_refused)
{
    vkbert_context *ctx = test_context(0);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_buffer buffer;
    TEST_OK(vkb_buffer_create(ctx, 256, &buffer));
    vkb_dispatch dispatch = {0};
    vkb_keep_mask_desc bad[] = {{0, 4, 4, false}, {2, 0, 4, false}, {2, 5, 4, true}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_eq(
            vkb_op_keep_mask(ctx, pool, &bad[i], vkb_whole(&buffer), vkb_whole(&buffer), &dispatch),
            VKBERT_ERROR_INVALID_ARGUMENT, "case %zu", i);
    vkb_buffer_destroy(ctx, &buffer);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    test_context_done(ctx);
}
