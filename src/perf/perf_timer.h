/* What the benchmarks (perf.c, perf_peaks.c) share: statistics of runs and a GPU timer. */
#ifndef VKBERT_PERF_TIMER_H
#define VKBERT_PERF_TIMER_H

#include "vk/vk.h"

/* Median of `n` values (sorted in place); the mean of the middle two when n is even. */
double vkb_bench_median(double *values, uint32_t n);
double vkb_bench_minimum(const double *values, uint32_t n);
/* Uniform in [-bound, bound], the same on every run. */
void vkb_bench_fill_random(float *data, size_t n, uint64_t seed, float bound);
/* Fails unless the context records timestamps. */
vkbert_status vkb_bench_need_timestamps(vkbert_context *ctx);

/* One command buffer with a timestamp before and after its work. */
typedef struct vkb_gpu_timer {
    VkCommandBuffer cmd;
    VkQueryPool queries;
} vkb_gpu_timer;

vkbert_status vkb_gpu_timer_create(vkbert_context *ctx, vkb_gpu_timer *t);
void vkb_gpu_timer_destroy(vkbert_context *ctx, vkb_gpu_timer *t);
/* Records `repeats` copies of the dispatch, barriers between them, between the timestamps. */
vkbert_status vkb_gpu_timer_record(vkbert_context *ctx, vkb_gpu_timer *t, const vkb_dispatch *d,
                                   uint32_t repeats);
/* Replays the command buffer: its GPU time, and the host's from submit to fence (may be NULL). */
vkbert_status vkb_gpu_timer_run(vkbert_context *ctx, vkb_gpu_timer *t, double *gpu_ms,
                                double *wall_ms);

#endif
