/* The cases of `vkbert bench`, shared by the command (bench.c) and its OpenBLAS comparison
 * (bench_cpu.c). */
#ifndef VKBERT_BENCH_CASE_H
#define VKBERT_BENCH_CASE_H

typedef struct bench_case {
    const char *name;
    int m, n, k;                      /* a matmul when m > 0 */
    int batch, seq_len, embed, heads; /* else an attention layer */
    int layers, intermediate;         /* or, with layers > 0, a whole encoder */
    int mixed; /* an encoder over bench_mixed.h's texts: BENCH_MIXED_* (0: none) */
} bench_case;

enum { BENCH_MIXED_PADDED = 1, BENCH_MIXED_SORTED, BENCH_MIXED_RAGGED };

/* Every case (bench_cases.c, which checks the count at compile time). */
#define BENCH_CASE_COUNT 19
extern const bench_case bench_cases[];

/* Median host time of `runs` passes of a matmul or attention case with OpenBLAS, after a
 * warm-up; 0 when out of memory or without OpenBLAS. */
double bench_cpu_time(const bench_case *c, int runs);

#endif
