/* binary16 and bfloat16 conversions done on the bit patterns, so the result does not depend on
 * the FPU rounding mode or on compiler support for _Float16. */
#include "half.h"

#include <string.h>

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (exp == 0) {
        /* Subnormal: mant * 2^-24 is exact in float32, and 2^-24 is a power of two. */
        float magnitude = (float)mant * 5.9604644775390625e-8f;
        return sign ? -magnitude : magnitude;
    }
    if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
    /* Rebias the exponent from 15 to 127. */
    return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* Rounds a float32 below 2^-14 to a binary16 subnormal (or zero), ties to even. */
static uint16_t subnormal_to_half(uint32_t absx)
{
    uint32_t exp = absx >> 23;
    /* The half result counts units of 2^-24: value / 2^-24 = mant * 2^(exp - 126). */
    if (exp < 102) return 0; /* below 2^-25: rounds to zero, ties included */
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp; /* 14..24 */
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (q & 1u))) q++;
    return (uint16_t)q; /* q == 0x400 is the smallest normal, which is the right encoding */
}

uint16_t float_to_half(float f)
{
    uint32_t x = float_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t absx = x & 0x7fffffffu;

    if (absx > 0x7f800000u) {
        /* NaN: keep the top payload bits and force the quiet bit so it cannot become inf. */
        return (uint16_t)(sign | 0x7e00u | ((absx >> 13) & 0x3ffu));
    }
    /* 65520 is halfway between 65504 (odd mantissa) and 65536, so it already rounds to inf. */
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (absx < 0x38800000u) return (uint16_t)(sign | subnormal_to_half(absx));

    /* Adding 0xfff plus the lowest kept bit rounds to nearest even; a carry out of the
     * mantissa correctly bumps the exponent. */
    uint32_t rounded = absx + 0xfffu + ((absx >> 13) & 1u);
    return (uint16_t)(sign | ((rounded - 0x38000000u) >> 13));
}

float bf16_to_float(uint16_t b)
{
    return bits_float((uint32_t)b << 16);
}
