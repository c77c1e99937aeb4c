/* The benchmarks' shared pieces: statistics of runs and a GPU timer (perf_timer.h). */
#include "perf/perf_timer.h"

#include <stdlib.h>
#include <string.h>

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of `n` values (sorted in place); the mean of the middle two when n is even. */
double vkb_bench_median(double *values, uint32_t n)
{
    qsort(values, n, sizeof *values, compare_doubles);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double vkb_bench_minimum(const double *values, uint32_t n)
{
    double m = values[0];
    for (uint32_t i = 1; i < n; i++)
        m = values[i] < m ? values[i] : m;
    return m;
}

/* Uniform in [-bound, bound] from a 64-bit LCG (Knuth's MMIX constants): the data only has to
 * be finite and not trivially compressible, and the same on every run. */
void vkb_bench_fill_random(float *data, size_t n, uint64_t seed, float bound)
{
    uint64_t s = seed * 2862933555777941757ull + 3037000493ull;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        data[i] = bound * ((float)(s >> 40) * (2.0f / 16777216.0f) - 1.0f);
    }
}

vkbert_status vkb_bench_need_timestamps(vkbert_context *ctx)
{
    if (ctx->timestamps) return VKBERT_OK;
    return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                    "benchmarks need a context made with timestamps "
                    "(vkbert_context_options.timestamps = 1)");
}

/* ---- a GPU timer: one command buffer with a timestamp before and after its work ---- */

void vkb_gpu_timer_destroy(vkbert_context *ctx, vkb_gpu_timer *t)
{
    vkb_settle(ctx); /* a timed-out run may still use what is freed from here on */
    if (t->cmd) vkFreeCommandBuffers(ctx->device, ctx->command_pool, 1, &t->cmd);
    vkDestroyQueryPool(ctx->device, t->queries, NULL);
    memset(t, 0, sizeof *t);
}

vkbert_status vkb_gpu_timer_create(vkbert_context *ctx, vkb_gpu_timer *t)
{
    memset(t, 0, sizeof *t);
    vkbert_status status = vkb_command_buffer(ctx, &t->cmd);
    return status ? status : vkb_timestamp_pool(ctx, 2, &t->queries);
}

/* Records `repeats` copies of the dispatch, barriers between them (each rewrites the same
 * output), between the two timestamps. The command buffer is replayed by vkb_gpu_timer_run. */
vkbert_status vkb_gpu_timer_record(vkbert_context *ctx, vkb_gpu_timer *t, const vkb_dispatch *d,
                                   uint32_t repeats)
{
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VkResult result = vkBeginCommandBuffer(t->cmd, &begin);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkBeginCommandBuffer");
    /* Orders this replay after the previous one's writes. */
    vkb_cmd_barrier(t->cmd);
    vkCmdResetQueryPool(t->cmd, t->queries, 0, 2);
    vkCmdWriteTimestamp(t->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, t->queries, 0);
    for (uint32_t i = 0; i < repeats; i++) {
        if (i > 0) vkb_cmd_barrier(t->cmd);
        vkb_cmd_dispatch(t->cmd, d);
    }
    vkCmdWriteTimestamp(t->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, t->queries, 1);
    result = vkEndCommandBuffer(t->cmd);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkEndCommandBuffer");
    return VKBERT_OK;
}

vkbert_status vkb_gpu_timer_run(vkbert_context *ctx, vkb_gpu_timer *t, double *gpu_ms,
                                double *wall_ms)
{
    double start = plat_now_ms();
    vkbert_status status = vkb_submit_wait(ctx, t->cmd);
    if (status) return status;
    if (wall_ms) *wall_ms = plat_now_ms() - start;
    uint64_t ticks[2];
    VkResult result =
        vkGetQueryPoolResults(ctx->device, t->queries, 0, 2, sizeof ticks, ticks, sizeof ticks[0],
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkGetQueryPoolResults");
    *gpu_ms = (double)(ticks[1] - ticks[0]) * ctx->timestamp_ns * 1e-6;
    return VKBERT_OK;
}
