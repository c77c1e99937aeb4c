/* The Q8_0 quantizer (src/io/q8.c) against its rule, checked in double: the scale is
 * max|x| / 127 rounded to float once, and each quant is the integer nearest x / scale, ties away
 * from zero. Rows of every length around the block size, blocks of zeros, and non-finite
 * values refused. */
#include "io/q8.h"
#include "support.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Quantizes x with every output poisoned first, so that padding left unwritten shows. */
static void quantize(const float *x, uint64_t k, int8_t *q, float *scales)
{
    uint64_t blocks = q8_blocks(k);
    memset(q, 0x55, blocks * Q8_BLOCK);
    for (uint64_t b = 0; b < blocks; b++)
        scales[b] = NAN;
    cr_assert(q8_quantize_row(x, k, q, scales), "k %llu", (unsigned long long)k);
}

/* One block's scale: the quotient in double, rounded to float once (a float division is
 * correctly rounded, and double's 53 bits make the double-then-float result the same). */
static void check_scale(const float *x, uint64_t n, float got)
{
    double amax = 0;
    for (uint64_t i = 0; i < n; i++)
        amax = fmax(amax, fabs((double)x[i]));
    cr_assert_eq(got, (float)(amax / 127.0), "scale %.9g for max %.9g", (double)got, amax);
}

static void check_quant(float x, float d, int8_t q)
{
    if (d == 0) {
        cr_assert_eq(q, 0, "%.9g with a zero scale gave %d", (double)x, q);
        return;
    }
    double e = (double)x / (double)d, gap = fabs(e - q);
    cr_assert_neq(q, -128, "-128 is outside the symmetric range");
    cr_assert(gap <= 0.5, "%.9g / %.9g = %.9g gave %d", (double)x, (double)d, e, q);
    if (gap == 0.5) cr_assert(fabs((double)q) > fabs(e), "tie %.9g not away from zero: %d", e, q);
}

/* Every block of the row: its scale, its quants, its padding zeros, and the dequantized row. */
static void check_row(const float *x, uint64_t k)
{
    uint64_t blocks = q8_blocks(k);
    cr_assert_eq(blocks, (k + 31) / 32);
    int8_t *q = malloc(blocks * Q8_BLOCK);
    float *scales = malloc(blocks * sizeof *scales), *back = test_poisoned(k);
    quantize(x, k, q, scales);
    q8_dequantize_row(q, scales, k, back);
    for (uint64_t b = 0; b < blocks; b++) {
        uint64_t n = k - b * 32 < 32 ? k - b * 32 : 32;
        check_scale(x + b * 32, n, scales[b]);
        for (uint64_t i = 0; i < 32; i++) {
            int8_t got = q[b * 32 + i];
            if (i >= n)
                cr_assert_eq(got, 0, "padding %llu of block %llu", (unsigned long long)i,
                             (unsigned long long)b);
            else
                check_quant(x[b * 32 + i], scales[b], got);
        }
    }
    for (uint64_t i = 0; i < k; i++)
        cr_assert_eq(back[i], (float)((double)q[i] * scales[i / 32]), "dequantized %llu",
                     (unsigned long long)i);
    free(q), free(scales), free(back);
}

Test(q8, hand_worked_block)
{
    /* max 127: the scale is exactly 1, so each quant is x rounded, ties away from zero. */
    float x[32] = {127, 2.5f, -2.5f, 0.4f, -0.5f, 126.5f, -127, 0.5f, 1.49f, -64.5f};
    int8_t want[32] = {127, 3, -3, 0, -1, 127, -127, 1, 1, -65};
    int8_t q[32];
    float scale;
    quantize(x, 32, q, &scale);
    cr_assert_eq(scale, 1.0f);
    for (int i = 0; i < 32; i++)
        cr_assert_eq(q[i], want[i], "element %d: %d, not %d", i, q[i], want[i]);
}

Test(q8, rows_of_every_length_around_a_block)
{
    static const uint64_t lengths[] = {1, 7, 31, 32, 33, 63, 64, 65, 100, 768, 773, 3072};
    ref_rng rng = {13};
    float *x = malloc(3072 * sizeof *x);
    for (size_t t = 0; t < sizeof lengths / sizeof *lengths; t++) {
        /* Magnitudes that differ between blocks, as trained weights' do. */
        for (uint64_t i = 0; i < lengths[t]; i++)
            x[i] = (float)(ref_uniform(&rng, -1, 1) * pow(10, ref_uniform(&rng, -3, 1)));
        check_row(x, lengths[t]);
    }
    free(x);
}

Test(q8, zero_blocks_and_tiny_values)
{
    /* Block 1 all zeros between two that are not; block 2 so small that its scale is
     * subnormal; the last block short (70 = 2 * 32 + 6). */
    float x[70] = {0};
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i - 16) / 8;
    for (int i = 64; i < 70; i++)
        x[i] = (float)(i - 66) * 1e-39f;
    check_row(x, 70);
    int8_t q[96];
    float scales[3];
    quantize(x, 70, q, scales);
    cr_assert_eq(scales[1], 0.0f);
    for (int i = 32; i < 64; i++)
        cr_assert_eq(q[i], 0);
    float all_zero[5] = {0};
    check_row(all_zero, 5);
}

Test(q8, non_finite_values_refused)
{
    float x[40] = {0};
    int8_t q[64];
    float scales[2];
    float bad[] = {NAN, INFINITY, -INFINITY};
    for (int i = 0; i < 3; i++) {
        x[35] = bad[i];
        cr_assert_not(q8_quantize_row(x, 40, q, scales), "value %g accepted", (double)bad[i]);
    }
}
