/* vkbert_measure_peaks: the device's own ceilings, by two micro-kernels (an FMA chain and a
 * vec4 copy), each grown until a run is long enough, then timed as the median of several. */
#include "api/api.h"
#include "perf/perf_timer.h"
#include "ops/peak.h"

#include <string.h>

#define PEAK_RUNS 5
/* A run this long dwarfs the submit overhead (~0.1 ms on lavapipe) and the timer's tick. */
#define PEAK_MIN_RUN_MS 20.0
#define FMA_GROUPS 4096 /* 262144 invocations: enough to fill a large discrete GPU */
#define FMA_MAX_ITERATIONS (1u << 24)
#define COPY_BYTES ((VkDeviceSize)64 << 20)
#define COPY_MAX_REPEATS 4096u

/* ---- peaks: grow the work until a run is long enough, then take the median ---- */

/* One micro-kernel measurement: `record` makes the timer's command buffer do `scale` units of
 * work (FMA iterations, copy repeats). */
typedef struct peak_work {
    vkbert_status (*record)(vkbert_context *ctx, struct peak_work *w, uint32_t scale);
    uint32_t scale, max_scale;
    vkb_gpu_timer t;
    VkDescriptorPool pool;
    vkb_dispatch dispatch;
    vkb_buffer a, b;
} peak_work;

/* The factor by which to grow the work after a run of `ms`: a little past the target so the
 * next run lands above it, at least 2 so calibration ends quickly. */
static double growth(double ms)
{
    double g = ms > 0.0 ? PEAK_MIN_RUN_MS * 1.25 / ms : 64.0;
    return g < 2.0 ? 2.0 : g > 64.0 ? 64.0 : g;
}

/* The calibration's last run doubles as the warm-up. */
static vkbert_status time_peak(vkbert_context *ctx, peak_work *w, double *median_ms)
{
    double ms = 0.0, runs[PEAK_RUNS];
    for (;;) {
        vkbert_status status = w->record(ctx, w, w->scale);
        if (!status) status = vkb_gpu_timer_run(ctx, &w->t, &ms, NULL);
        if (status) return status;
        if (ms >= PEAK_MIN_RUN_MS || w->scale >= w->max_scale) break;
        double next = (double)w->scale * growth(ms);
        w->scale = next >= (double)w->max_scale ? w->max_scale : (uint32_t)next;
    }
    for (int i = 0; i < PEAK_RUNS; i++) {
        vkbert_status status = vkb_gpu_timer_run(ctx, &w->t, &runs[i], NULL);
        if (status) return status;
    }
    *median_ms = vkb_bench_median(runs, PEAK_RUNS);
    return *median_ms > 0.0 ? VKBERT_OK
                            : vkb_fail(ctx, VKBERT_ERROR_VULKAN, "the timestamps measured 0 ns");
}

static void peak_work_free(vkbert_context *ctx, peak_work *w)
{
    vkb_gpu_timer_destroy(ctx, &w->t);
    vkb_dispatch_release(ctx, &w->dispatch);
    vkDestroyDescriptorPool(ctx->device, w->pool, NULL);
    vkb_buffer_destroy(ctx, &w->a);
    vkb_buffer_destroy(ctx, &w->b);
}

/* The iteration count is a push constant: each scale prepares the dispatch anew. */
static vkbert_status record_fma(vkbert_context *ctx, peak_work *w, uint32_t iterations)
{
    vkb_dispatch_release(ctx, &w->dispatch);
    memset(&w->dispatch, 0, sizeof w->dispatch);
    VkResult result = vkResetDescriptorPool(ctx->device, w->pool, 0);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkResetDescriptorPool");
    vkbert_status status =
        vkb_op_fma_peak(ctx, w->pool, FMA_GROUPS, iterations, vkb_whole(&w->a), &w->dispatch);
    return status ? status : vkb_gpu_timer_record(ctx, &w->t, &w->dispatch, 1);
}

static vkbert_status record_copy(vkbert_context *ctx, peak_work *w, uint32_t repeats)
{
    return vkb_gpu_timer_record(ctx, &w->t, &w->dispatch, repeats);
}

static vkbert_status measure_fma(vkbert_context *ctx, double *gflops)
{
    peak_work w = {.record = record_fma, .scale = 16, .max_scale = FMA_MAX_ITERATIONS};
    double ms = 0.0;
    vkbert_status status = vkb_gpu_timer_create(ctx, &w.t);
    if (!status) status = vkb_descriptor_pool(ctx, 1, &w.pool);
    if (!status)
        status = vkb_buffer_create(ctx, (VkDeviceSize)FMA_GROUPS * VKB_PEAK_WORKGROUP * 16, &w.a);
    if (!status) status = time_peak(ctx, &w, &ms);
    if (!status) *gflops = vkb_fma_peak_flops(ctx, FMA_GROUPS, w.scale) / (ms * 1e6);
    peak_work_free(ctx, &w);
    return status;
}

/* 64 MiB per side is far beyond any cache the copy could hide in; a device whose storage
 * buffers are smaller copies half its range. */
static VkDeviceSize copy_bytes(const vkbert_context *ctx)
{
    VkDeviceSize half = ctx->props.limits.maxStorageBufferRange / 2;
    VkDeviceSize bytes = half < COPY_BYTES ? half : COPY_BYTES;
    return bytes / 16 * 16;
}

static vkbert_status measure_copy(vkbert_context *ctx, double *gbs)
{
    peak_work w = {.record = record_copy, .scale = 1, .max_scale = COPY_MAX_REPEATS};
    VkDeviceSize bytes = copy_bytes(ctx);
    double ms = 0.0;
    vkbert_status status = vkb_gpu_timer_create(ctx, &w.t);
    if (!status) status = vkb_descriptor_pool(ctx, 1, &w.pool);
    if (!status) status = vkb_buffer_create(ctx, bytes, &w.a);
    if (!status) status = vkb_buffer_create(ctx, bytes, &w.b);
    if (!status) status = vkb_op_copy(ctx, w.pool, vkb_whole(&w.a), vkb_whole(&w.b), &w.dispatch);
    if (!status) status = time_peak(ctx, &w, &ms);
    if (!status) *gbs = 2.0 * (double)bytes * w.scale / (ms * 1e6);
    peak_work_free(ctx, &w);
    return status;
}

static vkbert_status measure_peaks(vkbert_context *ctx, vkbert_peaks *out)
{
    CHECK_ARG(ctx, out, "peaks is NULL");
    uint32_t size;
    vkbert_status status = vkb_struct_out_size(ctx, out, VKB_SIZE_THROUGH(vkbert_peaks, copy_gbs),
                                               "vkbert_peaks", &size);
    if (!status) status = vkb_bench_need_timestamps(ctx);
    vkbert_peaks peaks = {0};
    uint32_t before = ctx->validation_count;
    if (!status) status = measure_fma(ctx, &peaks.fma_gflops);
    if (!status) status = measure_copy(ctx, &peaks.copy_gbs);
    if (!status) status = vkb_check_validation(ctx, before);
    if (!status) vkb_struct_out(out, size, &peaks, sizeof peaks);
    return status;
}

vkbert_status vkbert_measure_peaks(vkbert_context *ctx, vkbert_peaks *peaks)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    vkb_lock(ctx);
    return vkb_unlock_return(ctx, measure_peaks(ctx, peaks));
}
