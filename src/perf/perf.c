/* The benchmarks of the public API: one matmul as the attention layer runs it, the whole
 * layer and a whole encoder (the device's ceilings are in perf_peaks.c). GPU times come from
 * timestamp queries around the work, wall times from the host clock around submit and fence wait;
 * both are reported as the median (robust to a shared machine's hiccups) and the minimum (the best
 * the device did) of several runs after a warm-up, so that pipeline creation, first-touch page
 * faults and cold caches stay out of the numbers. */
#include "api/api.h"
#include "perf/perf_texts.h"
#include "perf/perf_timer.h"
#include "io/bert_model.h"
#include "nn/attention/attention.h"
#include "nn/encoder/encoder.h"
#include "ops/ops.h"
#include "io/half.h"
#include "vk/tensor.h"
#include "tune/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RUNS 1000000

/* ---- the matmul benchmark ---- */

/* C[M,N] = A[M,K] * W + bias with W repacked to [K,N], as the attention layer stores its
 * weights, so the numbers are those of the layer's projections. */
typedef struct matmul_bench {
    vkb_buffer a, w, bias, c;
    VkDescriptorPool pool;
    vkb_dispatch dispatch;
    vkb_gpu_timer t;
} matmul_bench;

static void matmul_bench_free(vkbert_context *ctx, matmul_bench *b)
{
    vkb_gpu_timer_destroy(ctx, &b->t);
    vkb_dispatch_release(ctx, &b->dispatch);
    vkDestroyDescriptorPool(ctx->device, b->pool, NULL);
    vkb_buffer_destroy(ctx, &b->a);
    vkb_buffer_destroy(ctx, &b->w);
    vkb_buffer_destroy(ctx, &b->bias);
    vkb_buffer_destroy(ctx, &b->c);
}

/* A buffer of `count` random floats (padding included: kernels never read it into results). */
static vkbert_status random_buffer(vkbert_context *ctx, uint64_t count, uint64_t seed,
                                   vkb_buffer *out)
{
    float *data = malloc(count * sizeof *data);
    if (!data) return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    vkb_bench_fill_random(data, count, seed, 1.0f);
    vkbert_status status = vkb_buffer_create(ctx, count * 4, out);
    if (!status) status = vkb_buffer_upload(ctx, out, 0, data, count * 4);
    free(data);
    return status;
}

/* `count` random values, stored as fp32 or fp16. */
static vkbert_status random_values(vkbert_context *ctx, uint64_t count, uint64_t seed,
                                   vkb_format format, vkb_buffer *out)
{
    if (format == VKB_FORMAT_F32) return random_buffer(ctx, count, seed, out);
    float *data = malloc(count * sizeof *data);
    uint16_t *halves = malloc(count * sizeof *halves);
    vkbert_status status = VKBERT_OK;
    if (!data || !halves) status = vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (!status) {
        vkb_bench_fill_random(data, count, seed, 1.0f);
        for (uint64_t i = 0; i < count; i++)
            halves[i] = float_to_half(data[i]);
        status = vkb_buffer_create(ctx, count * 2, out);
    }
    if (!status) status = vkb_buffer_upload(ctx, out, 0, halves, count * 2);
    free(data);
    free(halves);
    return status;
}

static vkbert_status matmul_setup(vkbert_context *ctx, const vkb_matmul_desc *d, matmul_bench *b)
{
    vkbert_status status = random_values(ctx, (uint64_t)d->m * d->lda, 1, d->a, &b->a);
    if (!status) status = random_values(ctx, (uint64_t)d->k * d->ldb, 2, d->b, &b->w);
    if (!status) status = random_buffer(ctx, d->ldc, 3, &b->bias);
    uint64_t c_bytes = (uint64_t)d->m * d->ldc * vkb_format_float_bytes(d->c);
    if (!status) status = vkb_buffer_create(ctx, c_bytes, &b->c);
    if (!status) status = vkb_descriptor_pool(ctx, 1, &b->pool);
    if (!status) status = vkb_gpu_timer_create(ctx, &b->t);
    if (status) return status;
    vkb_view bias = vkb_whole(&b->bias);
    b->dispatch.name = "matmul";
    status = vkb_op_matmul(ctx, b->pool, d, vkb_whole(&b->a), vkb_whole(&b->w), &bias,
                           vkb_whole(&b->c), &b->dispatch);
    return status ? status : vkb_gpu_timer_record(ctx, &b->t, &b->dispatch, 1);
}

/* The warm-up, then `runs` timed passes into gpu[] and wall[]. */
static vkbert_status matmul_runs(vkbert_context *ctx, matmul_bench *b, int runs, double *gpu,
                                 double *wall)
{
    double ignored;
    vkbert_status status = vkb_gpu_timer_run(ctx, &b->t, &ignored, NULL);
    for (int i = 0; i < runs && !status; i++)
        status = vkb_gpu_timer_run(ctx, &b->t, &gpu[i], &wall[i]);
    return status;
}

static void describe_matmul(const vkbert_context *ctx, const vkb_matmul_desc *d,
                            const matmul_bench *b, char *out, size_t size)
{
    uint32_t a_texel = 4 * vkb_format_float_bytes(d->a), w_texel = 4 * vkb_format_float_bytes(d->b);
    vkb_matmul_tiles t = vkb_tune_matmul_batched(ctx, d->m, d->n, d->k, d->batch,
                                                 b->a.size / a_texel, b->w.size / w_texel);
    vkb_matmul_describe(&t, out, size);
    size_t used = strlen(out);
    if (d->b == VKB_FORMAT_F16_PAIRS && used < size)
        snprintf(out + used, size - used, ", fp16 weights and activations");
}

static void fill_times(vkbert_bench_result *r, double *gpu, double *wall, uint32_t runs)
{
    r->gpu_min_ms = vkb_bench_minimum(gpu, runs);
    r->gpu_median_ms = vkb_bench_median(gpu, runs);
    r->wall_min_ms = vkb_bench_minimum(wall, runs);
    r->wall_median_ms = vkb_bench_median(wall, runs);
}

static vkbert_status check_bench_args(vkbert_context *ctx, vkbert_precision precision, int runs,
                                      vkbert_bench_result *result)
{
    CHECK_ALIVE(ctx);
    if ((unsigned)precision > VKBERT_PRECISION_INT8)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "unknown precision %d", (int)precision);
    memset(result, 0, sizeof *result);
    if (runs < 1 || runs > MAX_RUNS)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "runs %d is outside [1, %d]", runs,
                        MAX_RUNS);
    return vkb_bench_need_timestamps(ctx);
}

static vkbert_status bench_matmul(vkbert_context *ctx, const vkb_matmul_desc *d, int runs,
                                  vkbert_bench_result *r)
{
    matmul_bench b;
    memset(&b, 0, sizeof b);
    double *gpu = malloc((size_t)runs * sizeof *gpu), *wall = malloc((size_t)runs * sizeof *wall);
    vkbert_status status = VKBERT_OK;
    if (!gpu || !wall) status = vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (!status) status = matmul_setup(ctx, d, &b);
    if (!status) status = matmul_runs(ctx, &b, runs, gpu, wall);
    if (!status) {
        fill_times(r, gpu, wall, (uint32_t)runs);
        r->flops = 2.0 * d->m * d->n * d->k;
        r->kernel_count = 1;
        r->kernels[0] = (vkbert_timing){"matmul", r->gpu_median_ms};
        r->device_memory_bytes = ctx->allocated_bytes;
        describe_matmul(ctx, d, &b, r->config, sizeof r->config);
    }
    matmul_bench_free(ctx, &b);
    free(gpu);
    free(wall);
    return status;
}

static vkbert_status matmul_checked(vkbert_context *ctx, int m, int n, int k,
                                    vkbert_precision precision, int runs,
                                    vkbert_bench_result *result)
{
    vkbert_status status = check_bench_args(ctx, precision, runs, result);
    if (status) return status;
    if (precision == VKBERT_PRECISION_INT8)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "the matmul benchmark takes fp32 or fp16; int8 weights are benchmarked "
                        "in attention layers and encoders");
    if (m < 1 || n < 1 || k < 1 || m > 1 << 20 || n > 1 << 20 || k > 1 << 20)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "matmul %d x %d x %d: each dimension must be in [1, 2^20]", m, n, k);
    vkb_format format = precision == VKBERT_PRECISION_FP16 ? VKB_FORMAT_F16_PAIRS : VKB_FORMAT_F32;
    vkb_matmul_desc d = {.m = (uint32_t)m,
                         .n = (uint32_t)n,
                         .k = (uint32_t)k,
                         .batch = 1,
                         .lda = vkb_pitch((uint64_t)k),
                         .ldb = vkb_pitch((uint64_t)n),
                         .ldc = vkb_pitch((uint64_t)n),
                         .a = format,
                         .b = format,
                         .c = format};
    uint32_t before = ctx->validation_count;
    status = bench_matmul(ctx, &d, runs, result);
    return status ? status : vkb_check_validation(ctx, before);
}

/* The caller's result: not NULL, and a struct_size this library can fill. */
static vkbert_status result_size(vkbert_context *ctx, const vkbert_bench_result *result,
                                 uint32_t *size)
{
    CHECK_ARG(ctx, result, "result is NULL");
    return vkb_struct_out_size(ctx, result, VKB_SIZE_THROUGH(vkbert_bench_result, config),
                               "vkbert_bench_result", size);
}

/* Ends a benchmark's public call: the result written when it succeeded, the lock released. */
static vkbert_status result_out(vkbert_context *ctx, vkbert_status status,
                                vkbert_bench_result *result, uint32_t size,
                                const vkbert_bench_result *r)
{
    if (!status) vkb_struct_out(result, size, r, sizeof *r);
    return vkb_unlock_return(ctx, status);
}

vkbert_status vkbert_bench_matmul(vkbert_context *ctx, int m, int n, int k,
                                  vkbert_precision precision, int runs, vkbert_bench_result *result)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    vkb_lock(ctx);
    vkbert_bench_result r;
    uint32_t size = 0;
    vkbert_status status = result_size(ctx, result, &size);
    if (!status) status = matmul_checked(ctx, m, n, k, precision, runs, &r);
    return result_out(ctx, status, result, size, &r);
}

/* ---- the attention benchmark ---- */

typedef struct attention_bench {
    float *weights[8]; /* q, k, v, out: weight [E][E], bias [E] */
    vkbert_attention *layer;
    vkbert_tensor *x, *y;
} attention_bench;

static void attention_bench_free(vkbert_context *ctx, attention_bench *b)
{
    vkb_attention_free(b->layer);
    vkb_tensor_free(ctx, b->x);
    vkb_tensor_free(ctx, b->y);
    for (int i = 0; i < 8; i++)
        free(b->weights[i]);
}

/* Weights uniform in +-1/sqrt(E) like nn.Linear's initialisation, x uniform in [-1, 1]. */
static vkbert_status attention_setup(vkbert_context *ctx, const int shape[4],
                                     vkbert_precision precision, attention_bench *b)
{
    int batch = shape[0], seq_len = shape[1], embed_dim = shape[2], heads = shape[3];
    size_t e = (size_t)embed_dim, n = (size_t)batch * (size_t)seq_len * e;
    float bound = (float)(1.0 / sqrt((double)embed_dim));
    for (int i = 0; i < 8; i++) {
        size_t count = i % 2 ? e : e * e;
        b->weights[i] = malloc(count * sizeof(float));
        if (!b->weights[i]) return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
        vkb_bench_fill_random(b->weights[i], count, 10 + (uint64_t)i, bound);
    }
    float **w = b->weights;
    vkbert_attention_weights weights = {sizeof weights, w[0], w[1], w[2], w[3],
                                        w[4],           w[5], w[6], w[7]};
    vkbert_attention_config config = {sizeof config, precision};
    vkbert_status status = vkb_attention_new(ctx, embed_dim, heads, &weights, &config, &b->layer);
    int64_t dims[3] = {batch, seq_len, embed_dim};
    if (!status) status = vkb_tensor_new(ctx, 3, dims, &b->x);
    if (!status) status = vkb_tensor_new(ctx, 3, dims, &b->y);
    float *x = status ? NULL : malloc(n * sizeof *x);
    if (!status && !x) status = vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (!status) vkb_bench_fill_random(x, n, 20, 1.0f);
    if (!status) status = vkb_tensor_write(ctx, b->x, x);
    free(x);
    return status;
}

/* Per-run times: gpu[] (the sum of the dispatches), wall[], and per_kernel[run][kernel]. */
typedef struct attention_times {
    double *gpu, *wall, *per_kernel;
    uint32_t kernel_count;
    const char *names[VKBERT_BENCH_MAX_KERNELS];
} attention_times;

static vkbert_status attention_pass(vkbert_context *ctx, attention_bench *b, attention_times *t,
                                    int run)
{
    double start = plat_now_ms();
    vkbert_status status = vkb_attention_forward(b->layer, b->x, NULL, NULL, b->y);
    double wall = plat_now_ms() - start;
    if (status || run < 0) return status;
    const vkbert_timing *timings = b->layer->timings; /* the context has timestamps */
    uint32_t count = b->layer->timing_count;
    if (count > VKBERT_BENCH_MAX_KERNELS)
        return vkb_fail(ctx, VKBERT_ERROR_DEVICE_LIMIT,
                        "the layer ran %u dispatches; at most %d "
                        "are reported",
                        count, VKBERT_BENCH_MAX_KERNELS);
    t->kernel_count = count;
    t->wall[run] = wall;
    t->gpu[run] = 0.0;
    for (uint32_t i = 0; i < count; i++) {
        t->names[i] = timings[i].name;
        t->gpu[run] += timings[i].milliseconds;
        t->per_kernel[(size_t)run * VKBERT_BENCH_MAX_KERNELS + i] = timings[i].milliseconds;
    }
    return VKBERT_OK;
}

static void attention_results(const vkbert_context *ctx, const attention_bench *b,
                              attention_times *t, int runs, vkbert_bench_result *r)
{
    fill_times(r, t->gpu, t->wall, (uint32_t)runs);
    double *column = t->wall; /* free again once the wall times are summarised */
    r->kernel_count = t->kernel_count;
    for (uint32_t k = 0; k < t->kernel_count; k++) {
        for (int i = 0; i < runs; i++)
            column[i] = t->per_kernel[(size_t)i * VKBERT_BENCH_MAX_KERNELS + k];
        r->kernels[k] = (vkbert_timing){t->names[k], vkb_bench_median(column, (uint32_t)runs)};
    }
    r->device_memory_bytes = ctx->allocated_bytes;
    vkb_attention_describe(b->layer, r->config, sizeof r->config);
}

static vkbert_status bench_attention(vkbert_context *ctx, const int shape[4],
                                     vkbert_precision precision, int runs, vkbert_bench_result *r)
{
    attention_bench b;
    memset(&b, 0, sizeof b);
    attention_times t = {.gpu = malloc((size_t)runs * sizeof(double)),
                         .wall = malloc((size_t)runs * sizeof(double)),
                         .per_kernel =
                             malloc((size_t)runs * VKBERT_BENCH_MAX_KERNELS * sizeof(double))};
    vkbert_status status = VKBERT_OK;
    if (!t.gpu || !t.wall || !t.per_kernel)
        status = vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (!status) status = attention_setup(ctx, shape, precision, &b);
    for (int i = -1; i < runs && !status; i++) /* run -1 is the warm-up */
        status = attention_pass(ctx, &b, &t, i);
    if (!status) attention_results(ctx, &b, &t, runs, r);
    attention_bench_free(ctx, &b);
    free(t.gpu);
    free(t.wall);
    free(t.per_kernel);
    return status;
}

static vkbert_status attention_checked(vkbert_context *ctx, const int shape[4],
                                       vkbert_precision precision, int runs,
                                       vkbert_bench_result *result)
{
    int batch = shape[0], seq_len = shape[1], embed_dim = shape[2], num_heads = shape[3];
    vkbert_status status = check_bench_args(ctx, precision, runs, result);
    if (status) return status;
    /* Checked before the host weights are made; the layer checks E % H itself. */
    if (batch < 1 || seq_len < 1 || embed_dim < 1 || embed_dim > 65536 || num_heads < 1)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "attention bench: batch %d, seq_len %d, embed_dim %d (at most 65536) and "
                        "num_heads %d must be positive",
                        batch, seq_len, embed_dim, num_heads);
    double b = batch, s = seq_len, e = embed_dim;
    uint32_t before = ctx->validation_count;
    status = bench_attention(ctx, shape, precision, runs, result);
    if (!status) result->flops = 8.0 * b * s * e * e + 4.0 * b * s * s * e;
    return status ? status : vkb_check_validation(ctx, before);
}

vkbert_status vkbert_bench_attention(vkbert_context *ctx, int batch, int seq_len, int embed_dim,
                                     int num_heads, vkbert_precision precision, int runs,
                                     vkbert_bench_result *result)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    vkb_lock(ctx);
    const int shape[4] = {batch, seq_len, embed_dim, num_heads};
    vkbert_bench_result r;
    uint32_t size = 0;
    vkbert_status status = result_size(ctx, result, &size);
    if (!status) status = attention_checked(ctx, shape, precision, runs, &r);
    return result_out(ctx, status, result, size, &r);
}

/* ---- the encoder benchmark ---- */

/* Random input ids and a full attention mask; `runs` timed passes after a warm-up. */
/* An encoder's dense weights, as its result's config says them. */
static const char *weights_description(vkb_format weights)
{
    switch (weights) {
    case VKB_FORMAT_Q8_0_DOT:
        return "int8 weights, integer dot products";
    case VKB_FORMAT_Q8_0:
        return "int8 weights, dequantized";
    case VKB_FORMAT_F16_PAIRS:
        return "fp16 dense weights, fp32 attention";
    default:
        return "fp32";
    }
}

static vkbert_status encoder_runs(vkbert_context *ctx, vkbert_encoder *e, int batch, int seq,
                                  int runs, double *gpu, double *wall)
{
    size_t n = (size_t)batch * seq, h = (size_t)e->config.hidden_size;
    int32_t *ids = malloc(n * sizeof *ids);
    float *hidden = malloc(n * h * sizeof *hidden);
    vkbert_status status = VKBERT_OK;
    if (!ids || !hidden) status = vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; !status && i < n; i++)
        ids[i] = (int32_t)((i * 7919) % (size_t)e->config.vocab_size);
    for (int r = -1; r < runs && !status; r++) { /* run -1 is the warm-up */
        double start = plat_now_ms();
        status = vkb_encoder_forward_host(e, batch, seq, ids, NULL, NULL, hidden, NULL);
        if (!status && r >= 0) gpu[r] = e->plan->gpu_ms, wall[r] = plat_now_ms() - start;
    }
    free(ids);
    free(hidden);
    return status;
}

static vkbert_status encoder_checked(vkbert_context *ctx,
                                     const vkbert_bench_encoder_shape *caller_shape,
                                     vkbert_precision precision, int runs,
                                     vkbert_bench_result *result)
{
    CHECK_ARG(ctx, caller_shape, "shape is NULL");
    vkbert_bench_encoder_shape full;
    const vkbert_bench_encoder_shape *shape = &full;
    vkbert_status status = STRUCT_IN(ctx, vkbert_bench_encoder_shape, seq_len, caller_shape, &full);
    if (!status) status = check_bench_args(ctx, precision, runs, result);
    if (status) return status;
    bert_config c = {.hidden_size = shape->hidden,
                     .num_hidden_layers = shape->layers,
                     .num_attention_heads = shape->heads,
                     .intermediate_size = shape->intermediate,
                     .max_position_embeddings = shape->seq_len,
                     .type_vocab_size = 2,
                     .vocab_size = shape->vocab,
                     .layer_norm_eps = 1e-12,
                     .hidden_act = "gelu"};
    bert_weights w;
    if (shape->lengths && (status = vkb_bench_mixed_check(ctx, shape))) return status;
    if (shape->batch < 1 || shape->seq_len < 1 || bert_weights_random(&c, 77, &w))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "bad encoder shape or out of memory");
    vkbert_encoder *e = NULL;
    double *gpu = malloc((size_t)runs * sizeof *gpu), *wall = malloc((size_t)runs * sizeof *wall);
    uint32_t before = ctx->validation_count;
    if (!gpu || !wall) status = vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    if (!status) { /* vkb_encoder_new takes the lock for its device steps only */
        vkb_unlock(ctx);
        status = vkb_encoder_new(ctx, &c, &w, precision, &e);
        vkb_lock(ctx);
    }
    bert_weights_free(&w);
    if (!status)
        status = shape->lengths
                     ? vkb_bench_mixed_runs(ctx, e, shape, runs, gpu, wall)
                     : encoder_runs(ctx, e, shape->batch, shape->seq_len, runs, gpu, wall);
    if (!status) {
        fill_times(result, gpu, wall, (uint32_t)runs);
        double b = shape->batch, s = shape->seq_len, h = shape->hidden;
        result->flops = shape->lengths
                            ? vkb_bench_mixed_flops(shape)
                            : shape->layers * (8.0 * b * s * h * h + 4.0 * b * s * s * h +
                                               4.0 * b * s * h * shape->intermediate);
        result->kernel_count = 1;
        result->kernels[0] = (vkbert_timing){"encoder", result->gpu_median_ms};
        result->device_memory_bytes = ctx->allocated_bytes;
        int n = snprintf(result->config, sizeof result->config, "%s, %d layers, %s kernels",
                         weights_description(e->weight_format), shape->layers,
                         vkb_family_name(vkb_tune_family(ctx)));
        /* What the last batch's plan ran, not what was asked: the library may pack a padded
         * call (test_bench checks the padded case stays padded). */
        if (shape->lengths)
            snprintf(result->config + n, sizeof result->config - (size_t)n,
                     ", %d texts in batches of %d, %s", shape->texts, shape->batch,
                     e->plan && e->plan->ragged ? "packed" : "padded");
    }
    vkb_encoder_free(e);
    free(gpu);
    free(wall);
    return status ? status : vkb_check_validation(ctx, before);
}

vkbert_status vkbert_bench_encoder(vkbert_context *ctx, const vkbert_bench_encoder_shape *shape,
                                   vkbert_precision precision, int runs,
                                   vkbert_bench_result *result)
{
    CHECK_HANDLE(ctx, BAD_HANDLE);
    vkb_lock(ctx);
    vkbert_bench_result r;
    uint32_t size = 0;
    vkbert_status status = result_size(ctx, result, &size);
    if (!status) status = encoder_checked(ctx, shape, precision, runs, &r);
    return result_out(ctx, status, result, size, &r);
}
