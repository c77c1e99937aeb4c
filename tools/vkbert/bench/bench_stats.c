/* Medians, spreads and the ceiling of `vkbert bench` (bench_stats.h). */
#include "bench_stats.h"

#include <stdlib.h>

static int compare_doubles(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

bench_spread bench_spread_of(double *samples, int n)
{
    qsort(samples, (size_t)n, sizeof *samples, compare_doubles);
    double median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    return (bench_spread){median, samples[0], samples[n - 1]};
}

/* A ceiling measured while other work shared the machine reads low, and a fraction against it
 * reads high; the higher of the two measurements around a case is the nearer to what the
 * device could do while the case ran (lavapipe on a shared machine gave 44 to 79 GFLOP/s within
 * minutes). */
double bench_ceiling(const double *ceilings, int slot)
{
    double before = ceilings[slot], after = ceilings[slot + 1];
    return before > after ? before : after;
}

double bench_fraction(const double *ceilings, int slot, double gflops)
{
    double ceiling = bench_ceiling(ceilings, slot);
    return ceiling > 0.0 ? gflops / ceiling : 0.0;
}
