/* The encoder benchmark over texts of mixed lengths (perf_texts.c), for perf.c. */
#ifndef VKBERT_PERF_TEXTS_H
#define VKBERT_PERF_TEXTS_H

#include "nn/encoder/encoder.h"
#include "api/api.h"
#include "vkbert_bench.h"

/* Checks the lengths against the shape. */
vkbert_status vkb_bench_mixed_check(vkbert_context *ctx, const vkbert_bench_encoder_shape *s);
/* `runs` timed passes over the whole set after a warm-up: gpu[r] the sum of its batches'. */
vkbert_status vkb_bench_mixed_runs(vkbert_context *ctx, vkbert_encoder *e,
                                   const vkbert_bench_encoder_shape *s, int runs, double *gpu,
                                   double *wall);
/* The set's flops over its real tokens. */
double vkb_bench_mixed_flops(const vkbert_bench_encoder_shape *s);

#endif
