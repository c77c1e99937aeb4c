/* Device limits lowered as small devices have them (vkbert_context_options.limits, the form
 * of VKBERT_LIMITS): bad lists are refused, work over a limit is split where the math allows
 * (dispatches in pieces, batches in halves) and checked against double, and what cannot be
 * split is refused with an error naming the limit. */
#include "nn/attention/attention.h"
#include "shaders.h"
#include "support.h"
#include "tune/tune.h"
#include "vk/vk.h"

#include <stdlib.h>
#include <string.h>

/* A layer with random weights (kept in *w for the reference). */
static vkbert_attention *random_layer(vkbert_context *ctx, int e, int heads, uint64_t seed,
                                      test_weights *w)
{
    *w = test_weights_random(e, seed);
    vkbert_attention_weights api = test_weights_api(w);
    vkbert_attention *layer = NULL;
    TEST_OK(vkbert_attention_create(ctx, e, heads, &api, NULL, &layer));
    return layer;
}

/* Runs a layer E = heads * 16 over B x S with key padding, against double; `whole`: whether
 * the batch must have run in one piece. */
static void check_layer(vkbert_context *ctx, int batch, int seq_len, int heads, uint64_t seed,
                        bool whole)
{
    int e = heads * 16;
    size_t n = (size_t)batch * seq_len * e;
    test_weights w;
    vkbert_attention *layer = random_layer(ctx, e, heads, seed, &w);
    float *x = malloc(n * sizeof *x), *y = test_poisoned(n);
    float *keep = malloc((size_t)batch * seq_len * sizeof *keep);
    double *want = malloc(n * sizeof *want);
    ref_rng rng = {seed};
    ref_fill(&rng, x, n, -1, 1);
    for (int i = 0; i < batch * seq_len; i++) /* sequence b keeps its first S - b % 5 keys */
        keep[i] = i % seq_len < seq_len - (i / seq_len) % 5 ? 1.0f : 0.0f;
    vkbert_mask mask = {sizeof(vkbert_mask), keep, VKBERT_DTYPE_FLOAT32, 2, {batch, seq_len}};
    vkbert_status status = vkbert_attention_forward_host(layer, batch, seq_len, x, &mask, NULL, y);
    cr_assert_eq(status, VKBERT_OK, "forward: %s", vkbert_last_error(ctx));
    ref_layer ref = test_weights_ref(&w, heads);
    ref_mask rmask = {keep, {(size_t)seq_len, 0, 0, 1}};
    ref_options opt = {0};
    ref_attention(&ref, batch, seq_len, x, &rmask, &opt, want);
    char what[96];
    snprintf(what, sizeof what, "B %d S %d E %d under limits", batch, seq_len, e);
    test_assert_fp32_close(y, want, n, what);
    bool one_plan = layer->plan_count == 1 && layer->plans[0]->batch == (uint32_t)batch;
    cr_assert_eq(one_plan, whole, "%s: %u plans, the first for batch %u", what, layer->plan_count,
                 layer->plans[0]->batch);
    vkbert_attention_destroy(layer);
    test_weights_free(&w);
    free(x), free(y), free(keep), free(want);
}

Test(limits, bad_lists_are_refused)
{
    test_limits_refused("max_storage_buffer_rang=1024",
                        "unknown limit \"max_storage_buffer_rang\"");
    test_limits_refused("max_storage_buffer_range", "not name=value");
    test_limits_refused("max_storage_buffer_range=0", "not name=value");
    test_limits_refused("max_storage_buffer_range=12q", "not name=value");
    test_limits_refused("max_storage_buffer_range=-5", "not name=value");
    test_limits_refused("max_storage_buffer_range=1m,,", "not name=value");
    setenv("VKBERT_LIMITS", "nonsense=1", 1);
    test_limits_refused(NULL, "VKBERT_LIMITS: unknown limit \"nonsense\"");
    unsetenv("VKBERT_LIMITS");
}

Test(limits, caps_lower_and_never_raise)
{
    vkbert_context *ctx =
        test_context_limited("max_storage_buffer_range=1m,max_compute_shared_memory_size=16k,"
                             "max_compute_work_group_count=7,device_memory_budget=1g");
    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    TEST_OK(vkbert_context_device(ctx, &info));
    cr_assert_eq(info.max_storage_buffer_range, 1u << 20);
    cr_assert_eq(info.shared_memory_bytes, 16u << 10);
    cr_assert_eq(ctx->props.limits.maxComputeWorkGroupCount[2], 7u);
    cr_assert_eq(ctx->budget, 1ull << 30);
    test_context_done(ctx);
    ctx = test_context_limited("max_compute_work_group_invocations=4000000000");
    cr_assert_lt(ctx->props.limits.maxComputeWorkGroupInvocations, 4000000000u);
    test_context_done(ctx);
}

Test(limits, batches_over_the_group_count_run_in_halves)
{
    /* Fused attention takes B*H workgroups in y: 4 x 3 = 12 > 8, so the batch is halved;
     * with 3 heads and one sequence of 37 every dispatch fits. */
    vkbert_context *ctx = test_context_limited("max_compute_work_group_count=8");
    check_layer(ctx, 4, 37, 3, 1, false);
    check_layer(ctx, 1, 37, 3, 2, true);
    test_context_done(ctx);
}

Test(limits, batches_over_the_storage_range_run_in_halves)
{
    /* Q, K, V of 24 x 64 tokens of E 64 are 1.1 MiB: over 1 MiB, so the batch is halved. */
    vkbert_context *ctx = test_context_limited("max_storage_buffer_range=1m");
    check_layer(ctx, 24, 64, 4, 2, false);
    check_layer(ctx, 23, 64, 4, 3, false); /* odd halves */
    test_context_done(ctx);
}

/* Device tensors of B 128, S 64, E 64 with a [B,S] mask under `limits`, which B 128 exceeds:
 * the layer runs slices of them. Its halves are [64, 64] masks, which must not be read as
 * [S, S]. */
static void check_device_halves(const char *limits)
{
    vkbert_context *ctx = test_context_limited(limits);
    int batch = 128, s = 64, e = 64, heads = 4;
    size_t n = (size_t)batch * s * e;
    test_weights w;
    vkbert_attention *layer = random_layer(ctx, e, heads, 9, &w);
    float *x = malloc(n * sizeof *x), *y = test_poisoned(n);
    float *keep = malloc((size_t)batch * s * sizeof *keep);
    double *want = malloc(n * sizeof *want);
    ref_rng rng = {9};
    ref_fill(&rng, x, n, -1, 1);
    for (int i = 0; i < batch * s; i++)
        keep[i] = i % s < s - 3 * ((i / s) % 7) ? 1.0f : 0.0f;
    vkbert_tensor *tx = NULL, *ty = NULL, *tm = NULL;
    int64_t shape[3] = {batch, s, e}, mask_shape[2] = {batch, s};
    TEST_OK(vkbert_tensor_create(ctx, 3, shape, &tx));
    TEST_OK(vkbert_tensor_create(ctx, 3, shape, &ty));
    TEST_OK(vkbert_tensor_create(ctx, 2, mask_shape, &tm));
    TEST_OK(vkbert_tensor_write(ctx, tx, x, n));
    TEST_OK(vkbert_tensor_write(ctx, ty, y, n)); /* poisoned */
    TEST_OK(vkbert_tensor_write(ctx, tm, keep, (size_t)batch * s));
    vkbert_status status = vkbert_attention_forward(layer, tx, tm, NULL, ty);
    cr_assert_eq(status, VKBERT_OK, "forward: %s", vkbert_last_error(ctx));
    TEST_OK(vkbert_tensor_read(ctx, ty, y, n));
    ref_layer ref = test_weights_ref(&w, heads);
    ref_mask rmask = {keep, {(size_t)s, 0, 0, 1}};
    ref_options opt = {0};
    ref_attention(&ref, batch, s, x, &rmask, &opt, want);
    test_assert_fp32_close(y, want, n, "device tensors in halves");
    for (uint32_t i = 0; i < layer->plan_count; i++)
        cr_assert_lt(layer->plans[i]->batch, (uint32_t)batch, "the batch ran in one piece");
    vkbert_tensor_destroy(ctx, tx), vkbert_tensor_destroy(ctx, ty), vkbert_tensor_destroy(ctx, tm);
    vkbert_attention_destroy(layer);
    test_weights_free(&w);
    free(x), free(y), free(keep), free(want);
    test_context_done(ctx);
}

Test(limits, device_tensors_over_a_limit_run_in_halves)
{
    check_device_halves("max_storage_buffer_range=2m");     /* x, y 2 MiB fit; Q, K, V 6 MiB not */
    check_device_halves("max_compute_work_group_count=64"); /* B*H = 512 fused groups */
}

Test(limits, small_shared_memory_and_allocations)
{
    vkbert_context *ctx =
        test_context_limited("max_compute_shared_memory_size=16k,max_memory_allocation_size=2m");
    check_layer(ctx, 8, 40, 4, 4, true);
    vkbert_tensor *t = NULL;
    int64_t big[2] = {1024, 1024}; /* 4 MiB in one buffer */
    cr_assert_eq(vkbert_tensor_create(ctx, 2, big, &t), VKBERT_ERROR_DEVICE_LIMIT);
    cr_assert(strstr(vkbert_last_error(ctx), "maxMemoryAllocationSize"), "%s",
              vkbert_last_error(ctx));
    test_context_done(ctx);
}

/* A forward of B x S with E = 16 * heads under `limits` that cannot be split: refused with
 * VKBERT_ERROR_DEVICE_LIMIT and a message naming `limit`, the layer left usable. */
static void expect_refused_forward(const char *limits, int batch, int seq_len, int heads,
                                   const char *limit)
{
    vkbert_context *ctx = test_context_limited(limits);
    test_weights w;
    vkbert_attention *layer = random_layer(ctx, 16 * heads, heads, 5, &w);
    size_t n = (size_t)batch * seq_len * 16 * heads;
    float *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
    cr_assert_eq(vkbert_attention_forward_host(layer, batch, seq_len, x, NULL, NULL, y),
                 VKBERT_ERROR_DEVICE_LIMIT, "%s: not refused", limits);
    cr_assert(strstr(vkbert_last_error(ctx), limit), "%s: %s", limits, vkbert_last_error(ctx));
    free(x), free(y);
    vkbert_attention_destroy(layer);
    test_weights_free(&w);
    test_context_done(ctx);
}

Test(limits, what_cannot_be_split_is_refused)
{
    /* One sequence of 37 needs more than 2 workgroups somewhere. */
    expect_refused_forward("max_compute_work_group_count=2", 1, 37, 3, "maxComputeWorkGroupCount");
    /* One sequence's Q, K, V: 768 KiB over 256 KiB. */
    expect_refused_forward("max_storage_buffer_range=256k", 2, 1024, 4, "maxStorageBufferRange");
    /* Even the simd family binds two storage buffers. */
    expect_refused_forward("max_per_stage_descriptor_storage_buffers=1", 1, 5, 2,
                           "maxPerStageDescriptorStorageBuffers");
}

Test(limits, the_memory_budget)
{
    /* 8 MiB: the weights fit, a large batch's activations do not even in halves of one. */
    vkbert_context *ctx = test_context_limited("device_memory_budget=8m");
    test_weights w;
    vkbert_attention *layer = random_layer(ctx, 128, 4, 6, &w);
    int s = 4096; /* Q, K, V, O, x and y: 12 MiB */
    size_t n = (size_t)s * 128;
    float *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
    vkbert_status status = vkbert_attention_forward_host(layer, 1, s, x, NULL, NULL, y);
    cr_assert_eq(status, VKBERT_ERROR_OUT_OF_MEMORY, "%s", vkbert_status_name(status));
    cr_assert(strstr(vkbert_last_error(ctx), "device_memory_budget"), "%s", vkbert_last_error(ctx));
    cr_assert_leq(ctx->allocated_bytes, 8u << 20);
    free(x), free(y);
    vkbert_attention_destroy(layer);
    test_weights_free(&w);
    check_layer(ctx, 4, 33, 2, 7, true); /* smaller work still runs */
    test_context_done(ctx);
}

/* The memory blocks' table grows: with allocations capped at 64 KiB, each 64 KiB tensor takes
 * a block of its own, well past the 64 the table once held. Buffers keep pointers to their
 * blocks, so every tensor must still read back what was written to it. */
Test(limits, more_memory_blocks_than_the_old_table)
{
    vkbert_context *ctx = test_context_limited("max_memory_allocation_size=64k");
    enum { COUNT = 100, ROWS = 128, COLS = 128 };
    vkbert_tensor *t[COUNT];
    int64_t shape[2] = {ROWS, COLS};
    float *values = malloc(ROWS * COLS * sizeof *values), *back = test_poisoned(ROWS * COLS);
    for (int i = 0; i < COUNT; i++) {
        TEST_OK(vkbert_tensor_create(ctx, 2, shape, &t[i]));
        for (int k = 0; k < ROWS * COLS; k++)
            values[k] = (float)(i * ROWS * COLS + k);
        TEST_OK(vkbert_tensor_write(ctx, t[i], values, ROWS * COLS));
    }
    cr_assert_geq(ctx->block_count, COUNT, "%u blocks", ctx->block_count);
    for (int i = 0; i < COUNT; i++) {
        TEST_OK(vkbert_tensor_read(ctx, t[i], back, ROWS * COLS));
        for (int k = 0; k < ROWS * COLS; k++)
            cr_assert_eq(back[k], (float)(i * ROWS * COLS + k), "tensor %d [%d]: %g", i, k,
                         back[k]);
    }
    for (int i = 0; i < COUNT; i++)
        vkbert_tensor_destroy(ctx, t[i]);
    free(values), free(back);
    check_layer(ctx, 2, 9, 2, 8, true); /* the layer's buffers among those blocks */
    test_context_done(ctx);
}

/* The pipelines' table grows past the 32 it once held, and a pipeline handed out earlier
 * stays where it was: dispatches keep pointers to it. */
Test(limits, more_pipelines_than_the_old_table)
{
    vkbert_context *ctx = test_context(0);
    enum { COUNT = 48 };
    const vkb_pipeline *made[COUNT];
    for (uint32_t i = 0; i < COUNT; i++) { /* workgroup sizes 1..48: 48 variants */
        uint32_t size = i + 1;
        TEST_OK(vkb_pipeline_get(ctx, &vkb_shader_l2_normalize_shared, NULL, 2, 12, &size, 1,
                                 &made[i]));
    }
    cr_assert_geq(ctx->pipeline_count, COUNT);
    for (uint32_t i = 0; i < COUNT; i++) {
        uint32_t size = i + 1;
        const vkb_pipeline *again = NULL;
        TEST_OK(
            vkb_pipeline_get(ctx, &vkb_shader_l2_normalize_shared, NULL, 2, 12, &size, 1, &again));
        cr_assert_eq(again, made[i], "pipeline %u moved or was made twice", i);
        cr_assert_eq(made[i]->spec[0], size);
    }
    test_context_done(ctx);
}
