/* vkbert tune: measures matmul tiles and the attention path on this device and stores the
 * winners in its tuning cache, which later contexts consult before the built-in table
 * (src/tune/tune.c). Tiles are forced with VKBERT_MATMUL_TILES and the path with VKBERT_ATTENTION,
 * the switches a user has too, set on the live context by vkbert_bench_override (a context
 * reads the environment only when it is made), and timed by the public benchmarks (GPU
 * timestamps, median of several runs after a warm-up). Each product is swept in a context of
 * its own, so that one product's pipelines and memory are gone before the next. */
#define _POSIX_C_SOURCE 200809L

#include "cli.h"
#include "vkbert_bench.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert tune [--device N] [--quick]\n"
    "\n"
    "Times the matmul tiles of the kernel family this device uses on BERT-base products, and\n"
    "the fused against the unfused attention path for a few (batch, seq) shapes: GPU time,\n"
    "median of 7 runs (3 with --quick, which also tries fewer products, tiles and shapes).\n"
    "Prints each configuration tried and the one picked, and writes the picks to the device's\n"
    "tuning cache in VKBERT_CACHE_DIR (else $XDG_CACHE_HOME/vkbert or ~/.cache/vkbert), which\n"
    "later runs consult before the built-in table. Then times int8 weights' attention layer\n"
    "(batch 8 x 128) with its matmuls dequantizing and through integer dot products, where the\n"
    "device has them, and stores the faster as \"int8_path\". VKBERT_MATMUL_TILES,\n"
    "VKBERT_ATTENTION and VKBERT_INT8_PATH still override the cache.\n";

typedef struct tune_args {
    const char *device;
    int quick, runs;
} tune_args;

typedef struct tiles {
    int wg_x, wg_y, tm, tn4, bk; /* as VKBERT_MATMUL_TILES takes them */
} tiles;

typedef struct trial {
    tiles t;
    double ms;
} trial;

#define MAX_TRIALS 64

/* BERT-base with batch 8 and sequence 128: 1024 token rows, E 768, FFN 3072. The layer runs
 * the Q, K and V projections as one product batched over three weight blocks; the benchmark
 * times the same work as one product three times as wide. */
typedef struct product {
    const char *name;
    int m, n, k, quick;
} product;

static const product products[] = {
    {"the Q, K, V projections", 1024, 2304, 768, 1},
    {"the output projection", 1024, 768, 768, 1},
    {"the feed-forward expansion", 1024, 3072, 768, 0},
    {"the feed-forward contraction", 1024, 768, 3072, 0},
};

/* The simd family's compiled register tiles, rows x vec4 columns (cmake/shader_variants.cmake;
 * the tool sees no internals, so it names them), tried at the built-in workgroup; then the best of
 * them with these workgroups, which are free. */
static const int simd_registers[][2] = {{16, 3}, {16, 2}, {8, 3}, {8, 2}, {8, 1}, {4, 2}, {4, 1}};
static const int simd_workgroups[][2] = {{8, 4},  {8, 2}, {8, 8}, {16, 2},
                                         {16, 4}, {4, 4}, {4, 8}, {8, 1}};
/* The gpu family's shared-memory tiles (the table in src/tune/tune.c), each with these depths. */
static const tiles gpu_tiles[] = {
    {16, 16, 8, 2, 0}, {16, 16, 4, 1, 0}, {16, 8, 8, 1, 0}, {8, 8, 4, 1, 0}};
static const int gpu_depths[] = {16, 8, 32};

typedef struct attention_shape {
    int batch, seq, quick;
} attention_shape;

static const attention_shape attention_shapes[] = {
    {1, 128, 1}, {8, 128, 1}, {32, 128, 0}, {1, 512, 0}};
#define EMBED 768
#define HEADS 12

#define COUNT(a) (sizeof(a) / sizeof *(a))

/* ---- timing one configuration ---- */

static void describe(const tiles *t, int simd, char *out, size_t size)
{
    if (simd)
        snprintf(out, size, "simd wg %dx%d tile %dx%d", t->wg_x, t->wg_y, t->tm, 4 * t->tn4);
    else
        snprintf(out, size, "gpu smem %dx%dx%d wg %dx%d tile %dx%d", t->wg_y * t->tm,
                 4 * t->wg_x * t->tn4, t->bk, t->wg_x, t->wg_y, t->tm, 4 * t->tn4);
}

static void print_time(const char *what, double ms, const product *p)
{
    double gflops = 2.0 * p->m * p->n * p->k / (ms * 1e6);
    printf("  %-40s %9.3f ms %8.1f GFLOP/s\n", what, ms, gflops);
}

/* The median GPU time with the tiles forced, or -1 (said why) when it could not run. */
static double time_tiles(vkbert_context *ctx, const product *p, const tiles *t, int simd, int runs)
{
    char value[64], what[96];
    snprintf(value, sizeof value, "%d,%d,%d,%d,%d", t->wg_x, t->wg_y, t->tm, t->tn4, t->bk);
    describe(t, simd, what, sizeof what);
    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    if (vkbert_bench_override(ctx, "VKBERT_MATMUL_TILES", value) ||
        vkbert_bench_matmul(ctx, p->m, p->n, p->k, VKBERT_PRECISION_FP32, runs, &r)) {
        printf("  %-40s skipped: %s\n", what, vkbert_last_error(ctx));
        return -1.0;
    }
    if (strstr(r.config, "fallback")) { /* the library found the tile beyond the limits */
        printf("  %-40s skipped: ran as %s\n", what, r.config);
        return -1.0;
    }
    print_time(what, r.gpu_median_ms, p);
    return r.gpu_median_ms;
}

static void try_tiles(vkbert_context *ctx, const product *p, const tiles *t, int simd, int runs,
                      trial *trials, int *count)
{
    for (int i = 0; i < *count; i++)
        if (!memcmp(&trials[i].t, t, sizeof *t)) return; /* tried already */
    double ms = time_tiles(ctx, p, t, simd, runs);
    if (ms > 0.0 && *count < MAX_TRIALS) trials[(*count)++] = (trial){*t, ms};
}

static int by_time(const void *a, const void *b)
{
    double x = ((const trial *)a)->ms, y = ((const trial *)b)->ms;
    return (x > y) - (x < y);
}

/* ---- the sweeps of each family ---- */

static void sweep_simd(vkbert_context *ctx, const tune_args *a, const product *p,
                       const vkbert_device_info *d, trial *trials, int *count)
{
    for (size_t i = 0; i < COUNT(simd_registers); i++) {
        tiles t = {8, 4, simd_registers[i][0], simd_registers[i][1], 0};
        try_tiles(ctx, p, &t, 1, a->runs, trials, count);
    }
    qsort(trials, (size_t)*count, sizeof *trials, by_time);
    int best_registers = a->quick ? 1 : 2; /* the fastest register tiles */
    if (best_registers > *count) best_registers = *count;
    trial best[2];
    memcpy(best, trials, (size_t)best_registers * sizeof *best);
    size_t groups = a->quick ? 5 : COUNT(simd_workgroups);
    for (int r = 0; r < best_registers; r++)
        for (size_t g = 0; g < groups; g++) {
            tiles t = {simd_workgroups[g][0], simd_workgroups[g][1], best[r].t.tm, best[r].t.tn4,
                       0};
            if ((uint32_t)(t.wg_x * t.wg_y) <= d->max_workgroup_invocations)
                try_tiles(ctx, p, &t, 1, a->runs, trials, count);
        }
}

/* What src/tune/tune.c checks before it runs a shared-memory tile, from what the API tells. */
static int gpu_fits(const vkbert_device_info *d, const tiles *t)
{
    uint32_t invocations = (uint32_t)(t->wg_x * t->wg_y);
    uint32_t bm = (uint32_t)(t->wg_y * t->tm), bn = (uint32_t)(4 * t->wg_x * t->tn4);
    uint32_t shared = (uint32_t)t->bk * (bm + 4 + bn + 4) * 4; /* vkb_matmul_shared_bytes */
    return shared <= d->shared_memory_bytes && invocations <= d->max_workgroup_invocations &&
           (!d->subgroup_size || invocations % d->subgroup_size == 0);
}

static void sweep_gpu(vkbert_context *ctx, const tune_args *a, const product *p,
                      const vkbert_device_info *d, trial *trials, int *count)
{
    size_t depths = a->quick ? 1 : COUNT(gpu_depths);
    for (size_t i = 0; i < COUNT(gpu_tiles); i++)
        for (size_t j = 0; j < depths; j++) {
            tiles t = gpu_tiles[i];
            t.bk = gpu_depths[j];
            if (gpu_fits(d, &t))
                try_tiles(ctx, p, &t, 0, a->runs, trials, count);
            else
                printf("  gpu tile %d of the table with depth %d exceeds the device's limits\n",
                       (int)i, t.bk);
        }
    qsort(trials, (size_t)*count, sizeof *trials, by_time);
    for (size_t j = 1; a->quick && *count > 0 && j < COUNT(gpu_depths); j++) {
        tiles t = trials[0].t;
        t.bk = gpu_depths[j];
        if (gpu_fits(d, &t)) try_tiles(ctx, p, &t, 0, a->runs, trials, count);
    }
}

/* ---- one product ---- */

static int open_context(const tune_args *a, vkbert_context **ctx)
{
    vkbert_context_options options = {
        .struct_size = sizeof(vkbert_context_options), .device = a->device, .timestamps = 1};
    if (vkbert_context_create(&options, ctx)) return cli_api_error(NULL, "cannot create a context");
    return 0;
}

static cJSON *matmul_entry(const product *p, const trial *best, int simd, double current_ms)
{
    cJSON *e = cJSON_CreateObject();
    char what[96];
    describe(&best->t, simd, what, sizeof what);
    cJSON_AddStringToObject(e, "product", p->name);
    cJSON_AddStringToObject(e, "family", simd ? "simd" : "gpu");
    const char *names[] = {"m", "n", "k", "batch", "wg_x", "wg_y", "tm", "tn4", "bk"};
    int values[] = {p->m,         p->n,       p->k,        1,         best->t.wg_x,
                    best->t.wg_y, best->t.tm, best->t.tn4, best->t.bk};
    for (size_t i = 0; i < COUNT(names); i++)
        cJSON_AddNumberToObject(e, names[i], values[i]);
    cJSON_AddStringToObject(e, "config", what);
    cJSON_AddNumberToObject(e, "ms", best->ms);
    cJSON_AddNumberToObject(e, "current_ms", current_ms);
    return e;
}

/* The library's current choice (the user's VKBERT_MATMUL_TILES, a cached pick or the table),
 * which also says the family: its description starts with "simd" or "gpu". */
static double time_current(vkbert_context *ctx, const product *p, const tune_args *a, int *simd)
{
    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    if (vkbert_bench_override(ctx, "VKBERT_MATMUL_TILES", NULL) ||
        vkbert_bench_matmul(ctx, p->m, p->n, p->k, VKBERT_PRECISION_FP32, a->runs, &r))
        return -1.0;
    *simd = strncmp(r.config, "simd", 4) == 0;
    char what[300];
    snprintf(what, sizeof what, "current choice: %s", r.config);
    print_time(what, r.gpu_median_ms, p);
    return r.gpu_median_ms;
}

/* Sweeps one product; *simd says which family the device uses. */
static int tune_product(const tune_args *a, const product *p, cJSON *entries, int *simd_out)
{
    vkbert_context *ctx;
    if (open_context(a, &ctx)) return CLI_EXIT_FAILURE;
    vkbert_device_info d = VKBERT_DEVICE_INFO_INIT;
    vkbert_context_device(ctx, &d);
    printf("\nmatmul %dx%dx%d (%s)\n", p->m, p->n, p->k, p->name);
    int simd = 0;
    double current = time_current(ctx, p, a, &simd);
    *simd_out = simd;
    if (current < 0.0) {
        cli_api_error(ctx, "the current choice does not run");
        return cli_close(ctx, CLI_EXIT_FAILURE);
    }
    trial trials[MAX_TRIALS];
    int count = 0;
    if (simd)
        sweep_simd(ctx, a, p, &d, trials, &count);
    else
        sweep_gpu(ctx, a, p, &d, trials, &count);
    qsort(trials, (size_t)count, sizeof *trials, by_time);
    if (count == 0) {
        printf("  no configuration ran: keeping the current choice\n");
        return cli_close(ctx, CLI_EXIT_OK);
    }
    char what[96];
    describe(&trials[0].t, simd, what, sizeof what);
    printf("  picked %s: %.3f ms, %.2fx the speed of the current choice\n", what, trials[0].ms,
           current / trials[0].ms);
    cJSON_AddItemToArray(entries, matmul_entry(p, &trials[0], simd, current));
    return cli_close(ctx, CLI_EXIT_OK);
}

/* ---- attention: fused against unfused ---- */

static double time_path(vkbert_context *ctx, const attention_shape *s, const char *path, int runs)
{
    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    if (vkbert_bench_override(ctx, "VKBERT_ATTENTION", path) ||
        vkbert_bench_attention(ctx, s->batch, s->seq, EMBED, HEADS, VKBERT_PRECISION_FP32, runs,
                               &r)) {
        printf("  b%d s%d %s: skipped: %s\n", s->batch, s->seq, path, vkbert_last_error(ctx));
        return -1.0;
    }
    return r.gpu_median_ms;
}

/* The scores [B,H,S,S'] of the unfused path, rows padded to 4 floats
 * (src/nn/attention/attention_plan.c); the library keys its choice on this size. */
static uint64_t score_bytes(const attention_shape *s)
{
    uint64_t pitch = ((uint64_t)s->seq + 3) / 4 * 4;
    return (uint64_t)s->batch * HEADS * (uint64_t)s->seq * pitch * 4;
}

static void tune_shape(vkbert_context *ctx, const vkbert_device_info *d, const tune_args *a,
                       const attention_shape *s, int simd, cJSON *entries)
{
    uint64_t bytes = score_bytes(s);
    if (bytes > d->max_storage_buffer_range || bytes > d->device_local_bytes / 4) {
        printf("  b%d s%d: the unfused path cannot hold its %.1f MiB of scores: always fused\n",
               s->batch, s->seq, (double)bytes / (1 << 20));
        return;
    }
    double fused = time_path(ctx, s, "fused", a->runs);
    double unfused = time_path(ctx, s, "unfused", a->runs);
    if (fused < 0.0 || unfused < 0.0) return;
    int wins = fused <= unfused;
    printf("  b%-3d s%-5d fused %9.3f ms   unfused %9.3f ms   -> %s (%.2fx)\n", s->batch, s->seq,
           fused, unfused, wins ? "fused" : "unfused", wins ? unfused / fused : fused / unfused);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "family", simd ? "simd" : "gpu");
    const char *names[] = {"batch", "seq", "embed", "heads"};
    int values[] = {s->batch, s->seq, EMBED, HEADS};
    for (size_t i = 0; i < COUNT(names); i++)
        cJSON_AddNumberToObject(e, names[i], values[i]);
    cJSON_AddNumberToObject(e, "score_bytes", (double)bytes);
    cJSON_AddNumberToObject(e, "fused_ms", fused);
    cJSON_AddNumberToObject(e, "unfused_ms", unfused);
    cJSON_AddBoolToObject(e, "fused", wins);
    cJSON_AddItemToArray(entries, e);
}

/* ---- int8 weights: dequantizing against integer dot products ---- */

static double time_int8(vkbert_context *ctx, const char *path, int runs)
{
    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    if (vkbert_bench_override(ctx, "VKBERT_INT8_PATH", path) ||
        vkbert_bench_attention(ctx, 8, 128, EMBED, HEADS, VKBERT_PRECISION_INT8, runs, &r)) {
        printf("  int8 %s: skipped: %s\n", path, vkbert_last_error(ctx));
        return -1.0;
    }
    printf("  int8 %-8s %9.3f ms\n", path, r.gpu_median_ms);
    return r.gpu_median_ms;
}

/* The attention layer at int8 runs four of BERT-base's int8 matmuls (Q, K, V, O), the same
 * kernels as the intermediate and output ones. No entry where the dot path cannot run. */
static void tune_int8(vkbert_context *ctx, const tune_args *a, cJSON *results)
{
    printf("\nint8 weights, attention b8 s128, GPU time of the whole layer\n");
    double dequant = time_int8(ctx, "dequant", a->runs);
    double dot = time_int8(ctx, "dot", a->runs);
    vkbert_bench_override(ctx, "VKBERT_INT8_PATH", NULL);
    if (dequant < 0.0 || dot < 0.0) return;
    int wins = dot < dequant;
    printf("  -> %s (%.2fx)\n", wins ? "dot" : "dequant", wins ? dequant / dot : dot / dequant);
    cJSON_AddStringToObject(results, "int8_path", wins ? "dot" : "dequant");
}

/* ---- storing ---- */

/* Stores the results; the file keeps the entries of a family they do not mention. */
static int save(vkbert_context *ctx, const cJSON *results, const char *done)
{
    char *text = cJSON_PrintUnformatted(results), path[4096];
    if (!text) return cli_error("out of host memory");
    vkbert_status status = vkbert_tune_save(ctx, text, path, sizeof path);
    cJSON_free(text);
    if (status) return cli_api_error(ctx, "cannot store the tuning results");
    if (done) printf("%s %s\n", done, path);
    return 0;
}

/* The matmul picks are stored first, so that the attention layers timed next use them. */
static int tune_attention(const tune_args *a, int simd, cJSON *results)
{
    vkbert_context *ctx;
    if (open_context(a, &ctx)) return CLI_EXIT_FAILURE;
    if (save(ctx, results, NULL)) return cli_close(ctx, CLI_EXIT_FAILURE);
    vkbert_device_info d = VKBERT_DEVICE_INFO_INIT;
    vkbert_context_device(ctx, &d);
    printf("\nattention E %d, %d heads, GPU time of the whole layer\n", EMBED, HEADS);
    const char *forced = getenv("VKBERT_ATTENTION");
    if (forced && *forced)
        printf("  (VKBERT_ATTENTION=%s is set: it overrides the cache until unset)\n", forced);
    cJSON *entries = cJSON_AddArrayToObject(results, "attention");
    for (size_t i = 0; i < COUNT(attention_shapes); i++)
        if (!a->quick || attention_shapes[i].quick)
            tune_shape(ctx, &d, a, &attention_shapes[i], simd, entries);
    tune_int8(ctx, a, results);
    int code = save(ctx, results, "\nwrote");
    return cli_close(ctx, code ? CLI_EXIT_FAILURE : CLI_EXIT_OK);
}

static int print_header(const tune_args *a)
{
    vkbert_context *ctx;
    if (open_context(a, &ctx)) return CLI_EXIT_FAILURE;
    vkbert_device_info d = VKBERT_DEVICE_INFO_INIT;
    double context_ms = 0.0;
    vkbert_context_device(ctx, &d);
    vkbert_context_startup_ms(ctx, &context_ms, NULL);
    printf("device: %s (%s)\ndriver: %s\n", d.name, vkbert_device_type_name(d.type), d.driver);
    printf("context created in %.1f ms; GPU times are medians of %d runs\n", context_ms, a->runs);
    /* Storing nothing new keeps what the file has: a check, before minutes of sweeping, that
     * the results can be stored at all. */
    cJSON *nothing = cJSON_CreateObject();
    int code = nothing ? save(ctx, nothing, "results go to") : cli_error("out of host memory");
    cJSON_Delete(nothing);
    return cli_close(ctx, code ? CLI_EXIT_FAILURE : CLI_EXIT_OK);
}

int cli_tune(int argc, char **argv)
{
    tune_args a = {0};
    const cli_option options[] = {
        {"device", CLI_STRING, &a.device, 0, 0, 0},
        {"quick", CLI_FLAG, &a.quick, 0, 0, 0},
    };
    int code = cli_parse(usage, argc, argv, options, (int)COUNT(options));
    if (code != CLI_CONTINUE) return code;
    a.runs = a.quick ? 3 : 7;
    cJSON *results = cJSON_CreateObject();
    cJSON *matmul = cJSON_AddArrayToObject(results, "matmul");
    code = matmul ? print_header(&a) : cli_error("out of host memory");
    int simd = 0;
    for (size_t i = 0; i < COUNT(products) && !code; i++)
        if (!a.quick || products[i].quick) code = tune_product(&a, &products[i], matmul, &simd);
    if (!code) code = tune_attention(&a, simd, results);
    cJSON_Delete(results);
    return code;
}
