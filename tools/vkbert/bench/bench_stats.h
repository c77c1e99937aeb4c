/* What `vkbert bench --repeat N` reports of each figure: its median and its spread over the
 * repeats, and the ceiling each fraction of peak is taken against. Pure functions on numbers,
 * so that the tests check them without a device or a clock. */
#ifndef VKBERT_BENCH_STATS_H
#define VKBERT_BENCH_STATS_H

/* The most repeats --repeat accepts: a full set takes minutes on lavapipe. */
#define BENCH_MAX_REPEAT 100

typedef struct bench_spread {
    double median, min, max;
} bench_spread;

/* The median, min and max of samples[0..n), n >= 1; reorders the samples. */
bench_spread bench_spread_of(double *samples, int n);

/* The ceiling for the case run between ceilings[slot] and ceilings[slot + 1]: the higher of
 * the two, 0 where neither was measured (0). */
double bench_ceiling(const double *ceilings, int slot);

/* The fraction of the FMA ceiling that `gflops` reaches, for the case run between
 * ceilings[slot] and ceilings[slot + 1]; 0 where neither was measured (0). */
double bench_fraction(const double *ceilings, int slot, double gflops);

#endif
