/* Q8_0 quantization of weight rows while loading (src/io/q8.h). */
#include "q8.h"

#include <math.h>

uint64_t q8_blocks(uint64_t k)
{
    return k / Q8_BLOCK + (k % Q8_BLOCK != 0);
}

/* Nearest integer, ties away from zero, as ggml's roundf. The quotient is taken in double so
 * that it is the correctly rounded x / d: float's x * (1 / d) can land on the wrong side of a
 * tie. |x| <= 127 d, and d is amax / 127 rounded, so the clamp only absorbs that rounding. */
static int8_t quantize(float x, float d)
{
    double r = round((double)x / (double)d);
    return (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
}

/* One block of n <= 32 values; the rest of its 32 quants are padding. */
static bool quantize_block(const float *x, uint64_t n, int8_t *q, float *scale)
{
    float amax = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) return false;
        amax = fmaxf(amax, fabsf(x[i]));
    }
    float d = amax / 127;
    *scale = d;
    for (uint64_t i = 0; i < Q8_BLOCK; i++)
        q[i] = i < n && d > 0 ? quantize(x[i], d) : 0;
    return true;
}

bool q8_quantize_row(const float *x, uint64_t k, int8_t *q, float *scales)
{
    for (uint64_t b = 0; b * Q8_BLOCK < k; b++) {
        uint64_t n = k - b * Q8_BLOCK < Q8_BLOCK ? k - b * Q8_BLOCK : Q8_BLOCK;
        if (!quantize_block(x + b * Q8_BLOCK, n, q + b * Q8_BLOCK, scales + b)) return false;
    }
    return true;
}

void q8_dequantize_row(const int8_t *q, const float *scales, uint64_t k, float *out)
{
    for (uint64_t i = 0; i < k; i++)
        out[i] = (float)q[i] * scales[i / Q8_BLOCK];
}
