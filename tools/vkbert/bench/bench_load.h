/* The `load-base` case of `vkbert bench` (bench_load.c): how long vkbert_encoder_load takes on
 * a BERT-base-shaped folder, and the peak host memory while it runs (the targets of
 * docs/loading.md). */
#ifndef VKBERT_BENCH_LOAD_H
#define VKBERT_BENCH_LOAD_H

#include "bench_stats.h"
#include "vkbert.h"

#include <stddef.h>

typedef struct bench_load_result {
    double median_ms, min_ms; /* wall time of the loads, after one that warms the page cache */
    double peak_rss_bytes;    /* the highest peak resident set of the timed loads; 0: unknown */
    double rss_before_bytes;  /* the resident set just before that load: the process's own */
    double file_bytes;        /* model.safetensors' size */
} bench_load_result;

/* Loads `dir` (a folder vkbert_encoder_load reads; NULL: the case is skipped, saying how to
 * make one) `runs` + 1 times, each in a fresh context on `device` (so that no load finds the
 * memory of the one before it resident), fp16 weights when `fp16`. A failure's reason goes to
 * why (empty otherwise). Returns the exit code of closing the contexts (validation). */
int bench_load(const char *device, const char *dir, int fp16, int runs, bench_load_result *out,
               char *why, size_t why_size);

/* The peak RSS as a fraction of the file's size; 0 when either is unknown. */
double bench_load_rss_ratio(const bench_load_result *r);

/* The case's lines of the table: load time and peak RSS, each a median over the repeats and,
 * over several, its spread. */
void bench_load_print(bench_spread load_ms, bench_spread rss_ratio, const bench_load_result *first,
                      int repeat);

#endif
