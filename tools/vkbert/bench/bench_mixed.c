/* The mixed-length texts' lengths (bench_mixed.h). */
#include "bench_mixed.h"

#include "io/random.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* The log-normal's sigma: with median 32, the 90th percentile is about 90 tokens and 1 text in
 * 100 reaches the clip at 256, a spread like that of a search corpus's passages. */
#define SIGMA 0.8
#define SEED 0x5eed13u

/* Uniform in (0, 1): 53 random bits, never 0, so that log() stays finite. */
static double uniform(uint64_t *state)
{
    return ((double)(vkb_random_next(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

void bench_mixed_lengths(int *lengths, int count)
{
    uint64_t state = SEED;
    const double two_pi = 6.283185307179586;
    for (int i = 0; i < count; i++) {
        /* Box-Muller's cosine half only; the draws in separate statements, since C leaves
         * the order of calls within one expression open. */
        double radius = sqrt(-2.0 * log(uniform(&state)));
        double normal = radius * cos(two_pi * uniform(&state));
        double length = round(BENCH_MIXED_MEDIAN * exp(SIGMA * normal));
        lengths[i] = length < BENCH_MIXED_MIN   ? BENCH_MIXED_MIN
                     : length > BENCH_MIXED_MAX ? BENCH_MIXED_MAX
                                                : (int)length;
    }
}

void bench_mixed_sort(int *lengths, int count)
{
    /* Insertion sort: stable, and 256 items. */
    for (int i = 1; i < count; i++) {
        int v = lengths[i], j = i;
        for (; j > 0 && lengths[j - 1] < v; j--)
            lengths[j] = lengths[j - 1];
        lengths[j] = v;
    }
}

long bench_mixed_tokens(const int *lengths, int count)
{
    long sum = 0;
    for (int i = 0; i < count; i++)
        sum += lengths[i];
    return sum;
}
