/* vkbert bench: the device's measured ceilings, then fixed matmul and attention cases timed
 * by the library's benchmarks, optionally against OpenBLAS on the host, printed and written
 * as JSON. Each case runs in a context of its own, so the device memory it reports is its
 * own and a failure in one case leaves nothing behind for the next. */
#include "cli.h"
#include "vkbert_bench.h"
#include "reference.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef VKBERT_HAVE_OPENBLAS
#include <cblas.h>
#endif

static const char usage[] =
    "usage: vkbert bench [--device N] [--case NAME]... [--precision fp32|fp16] [--json FILE]\n"
    "                    [--quick] [--cpu]\n"
    "\n"
    "Measures the device's FMA and copy peaks, then times each case (all by default; --case\n"
    "may repeat): GPU time from timestamps (median and min of 10 runs, 3 with --quick, after\n"
    "a warm-up), wall time from submit to fence, GFLOP/s, the fraction of the FMA peak,\n"
    "device memory, the kernel configuration and each kernel's time. --cpu also times the\n"
    "case with OpenBLAS on the host. --json writes the results to FILE.\n";

typedef struct bench_case {
    const char *name;
    int m, n, k;                      /* a matmul when m > 0 */
    int batch, seq_len, embed, heads; /* else an attention layer */
    int layers, intermediate;         /* or, with layers > 0, a whole encoder */
} bench_case;

static const bench_case cases[] = {
    {"matmul-1024x768x768", 1024, 768, 768, 0, 0, 0, 0, 0, 0},
    {"matmul-1024x3072x768", 1024, 3072, 768, 0, 0, 0, 0, 0, 0},
    {"matmul-1024x768x3072", 1024, 768, 3072, 0, 0, 0, 0, 0, 0},
    {"attention-base-b1-s128", 0, 0, 0, 1, 128, 768, 12, 0, 0},
    {"attention-base-b8-s128", 0, 0, 0, 8, 128, 768, 12, 0, 0},
    {"attention-base-b32-s128", 0, 0, 0, 32, 128, 768, 12, 0, 0},
    {"attention-base-b1-s512", 0, 0, 0, 1, 512, 768, 12, 0, 0},
    {"attention-minilm-b8-s128", 0, 0, 0, 8, 128, 384, 12, 0, 0},
    {"attention-base-b1-s4096", 0, 0, 0, 1, 4096, 768, 12, 0, 0},
    /* BERT-base (12 layers) and MiniLM-L6 (6 layers, E 384), random weights, 30522 words */
    {"encoder-base-b1-s128", 0, 0, 0, 1, 128, 768, 12, 12, 3072},
    {"encoder-base-b8-s128", 0, 0, 0, 8, 128, 768, 12, 12, 3072},
    {"encoder-base-b32-s128", 0, 0, 0, 32, 128, 768, 12, 12, 3072},
    {"encoder-minilm-b1-s128", 0, 0, 0, 1, 128, 384, 12, 6, 1536},
    {"encoder-minilm-b8-s128", 0, 0, 0, 8, 128, 384, 12, 6, 1536},
    {"encoder-minilm-b32-s128", 0, 0, 0, 32, 128, 384, 12, 6, 1536},
};

#define CASE_COUNT (sizeof cases / sizeof *cases)

typedef struct bench_args {
    const char *device, *precision, *json;
    int quick, cpu, runs;
    int selected[CASE_COUNT];
} bench_args;

typedef struct case_outcome {
    char skipped[1280]; /* why it did not run (status and message); empty when it ran */
    vkbert_bench_result r;
    double cpu_ms; /* 0 without --cpu */
} case_outcome;

/* ---- options ---- */

static int find_case(const char *name)
{
    for (size_t i = 0; i < CASE_COUNT; i++)
        if (strcmp(cases[i].name, name) == 0) return (int)i;
    return -1;
}

static int unknown_case(const char *name)
{
    char list[1024] = "";
    for (size_t i = 0; i < CASE_COUNT; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "\n  %s", cases[i].name);
    return cli_usage_error(usage, "unknown case '%s'; the cases are:%s", name, list);
}

/* Takes the (repeatable) --case options out of argv, which cli_parse does not repeat. */
static int take_cases(int *argc, char **argv, bench_args *a)
{
    int kept = 1, any = 0;
    for (int i = 1; i < *argc; i++) {
        const char *name = NULL;
        if (strcmp(argv[i], "--case") == 0) {
            if (i + 1 == *argc) return cli_usage_error(usage, "--case needs a value");
            name = argv[++i];
        } else if (strncmp(argv[i], "--case=", 7) == 0) {
            name = argv[i] + 7;
        } else {
            argv[kept++] = argv[i];
            continue;
        }
        int index = find_case(name);
        if (index < 0) return unknown_case(name);
        a->selected[index] = any = 1;
    }
    *argc = kept;
    for (size_t i = 0; i < CASE_COUNT && !any; i++)
        a->selected[i] = 1;
    return CLI_CONTINUE;
}

static int parse_args(int argc, char **argv, bench_args *a)
{
    memset(a, 0, sizeof *a);
    a->precision = "fp32";
    int code = take_cases(&argc, argv, a);
    const cli_option options[] = {
        {"device", CLI_STRING, &a->device, 0, 0, 0},
        {"precision", CLI_STRING, &a->precision, 0, 0, 0},
        {"json", CLI_STRING, &a->json, 0, 0, 0},
        {"quick", CLI_FLAG, &a->quick, 0, 0, 0},
        {"cpu", CLI_FLAG, &a->cpu, 0, 0, 0},
    };
    if (code == CLI_CONTINUE)
        code = cli_parse(usage, argc, argv, options, (int)(sizeof options / sizeof *options));
    if (code != CLI_CONTINUE) return code;
    if (strcmp(a->precision, "fp32") && strcmp(a->precision, "fp16"))
        return cli_usage_error(usage, "--precision takes fp32 or fp16, not '%s'", a->precision);
#ifndef VKBERT_HAVE_OPENBLAS
    if (a->cpu) return cli_usage_error(usage, "--cpu needs vkbert built with OpenBLAS");
#endif
    a->runs = a->quick ? 3 : 10;
    return CLI_CONTINUE;
}

/* ---- the device ---- */

static int open_context(const bench_args *a, vkbert_context **ctx)
{
    vkbert_context_options options = {
        .struct_size = sizeof(vkbert_context_options), .device = a->device, .timestamps = 1};
    return vkbert_context_create(&options, ctx) ? -1 : 0;
}

static void format_version(uint32_t v, char *out, size_t size)
{
    snprintf(out, size, "%u.%u.%u", (v >> 22) & 0x7Fu, (v >> 12) & 0x3FFu, v & 0xFFFu);
}

static void print_device(const vkbert_device_info *d)
{
    char version[32];
    format_version(d->api_version, version, sizeof version);
    printf("device: %s (%s)\ndriver: %s\nvulkan: %s\n", d->name, vkbert_device_type_name(d->type),
           d->driver, version);
    fflush(stdout);
}

/* Peaks that cannot be measured are reported and left 0; the cases still run. */
static void measure_peaks(vkbert_context *ctx, vkbert_peaks *peaks)
{
    fprintf(stderr, "vkbert bench: measuring the FMA and copy peaks\n");
    if (vkbert_measure_peaks(ctx, peaks)) {
        printf("peaks: skipped: %s\n", vkbert_last_error(ctx));
        memset(peaks, 0, sizeof *peaks);
    } else {
        printf("peaks: %.1f GFLOP/s fp32 FMA, %.1f GB/s copy (read + write)\n", peaks->fma_gflops,
               peaks->copy_gbs);
    }
    fflush(stdout);
}

/* ---- the CPU comparison ---- */

#ifdef VKBERT_HAVE_OPENBLAS
static int compare_doubles(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* y[rows][n] = x[rows][k] * w[n][k]^T + b: the bias rows first, then sgemm adds (beta 1). */
static void cpu_linear(const float *x, int rows, int n, int k, const float *w, const float *b,
                       float *y)
{
    for (int r = 0; r < rows; r++)
        memcpy(y + (size_t)r * n, b, (size_t)n * sizeof *b);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, k, 1.0f, x, k, w, k, 1.0f, y, n);
}

static void cpu_softmax_rows(float *s, int rows, int cols)
{
    for (int i = 0; i < rows; i++, s += cols) {
        float max = s[0], sum = 0.0f;
        for (int j = 1; j < cols; j++)
            max = s[j] > max ? s[j] : max;
        for (int j = 0; j < cols; j++)
            sum += s[j] = expf(s[j] - max);
        for (int j = 0; j < cols; j++)
            s[j] /= sum;
    }
}

/* Host buffers of one case: x, the weights (w: [4][E][E] then [4][E] biases, or the matmul's
 * W [N][K] and bias), the activations and one head's scores. */
typedef struct cpu_data {
    float *x, *w, *q, *k, *v, *o, *y, *scores;
} cpu_data;

/* Heads are read in place from the [B*S][E] rows (lda E), and P*V is written straight into
 * its columns of o: no head split or merge. */
static void cpu_attention(const bench_case *c, cpu_data *d)
{
    int e = c->embed, rows = c->batch * c->seq_len, s = c->seq_len, hd = e / c->heads;
    size_t ee = (size_t)e * e;
    const float *bias = d->w + 4 * ee;
    float *proj[3] = {d->q, d->k, d->v};
    for (int z = 0; z < 3; z++)
        cpu_linear(d->x, rows, e, e, d->w + z * ee, bias + z * e, proj[z]);
    float scale = 1.0f / sqrtf((float)hd);
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads; h++) {
            size_t at = (size_t)b * s * e + (size_t)h * hd;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, hd, scale, d->q + at, e,
                        d->k + at, e, 0.0f, d->scores, s);
            cpu_softmax_rows(d->scores, s, s);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, hd, s, 1.0f, d->scores, s,
                        d->v + at, e, 0.0f, d->o + at, e);
        }
    cpu_linear(d->o, rows, e, e, d->w + 3 * ee, bias + 3 * e, d->y);
}

static void cpu_run(const bench_case *c, cpu_data *d)
{
    if (c->m)
        cpu_linear(d->x, c->m, c->n, c->k, d->w, d->w + (size_t)c->n * c->k, d->y);
    else
        cpu_attention(c, d);
}

static int cpu_alloc(const bench_case *c, cpu_data *d)
{
    size_t x, w, act, scores = 1;
    if (c->m) {
        x = (size_t)c->m * c->k, w = (size_t)c->n * (c->k + 1), act = (size_t)c->m * c->n;
    } else {
        size_t e = (size_t)c->embed, s = (size_t)c->seq_len;
        x = act = (size_t)c->batch * s * e, w = 4 * e * (e + 1), scores = s * s;
    }
    float **all[] = {&d->x, &d->w, &d->q, &d->k, &d->v, &d->o, &d->y, &d->scores};
    size_t sizes[] = {x, w, act, act, act, act, act, scores};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (!(*all[i] = calloc(sizes[i], sizeof(float)))) return -1;
    ref_rng rng = {0x5eed};
    double bound = 1.0 / sqrt(c->m ? c->k : c->embed); /* like nn.Linear's initialisation */
    ref_fill(&rng, d->x, x, -1.0, 1.0);
    ref_fill(&rng, d->w, w, -bound, bound);
    return 0;
}

#define CPU_MAX_RUNS 16

/* Median host time of `runs` passes after a warm-up; 0 when out of memory. */
static double cpu_time(const bench_case *c, int runs)
{
    cpu_data d = {0};
    double median = 0.0, times[CPU_MAX_RUNS];
    runs = runs < CPU_MAX_RUNS ? runs : CPU_MAX_RUNS;
    if (!cpu_alloc(c, &d)) {
        cpu_run(c, &d);
        for (int i = 0; i < runs; i++) {
            double start = plat_now_ms();
            cpu_run(c, &d);
            times[i] = plat_now_ms() - start;
        }
        qsort(times, (size_t)runs, sizeof *times, compare_doubles);
        median = runs % 2 ? times[runs / 2] : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
    }
    float *all[] = {d.x, d.w, d.q, d.k, d.v, d.o, d.y, d.scores};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    return median;
}
#else
static double cpu_time(const bench_case *c, int runs)
{
    (void)c, (void)runs;
    return 0.0;
}
#endif

/* ---- the cases ---- */

/* Runs one case in a fresh context. Returns the exit code of closing it (validation). */
static int run_case(const bench_args *a, const bench_case *c, case_outcome *out)
{
    vkbert_context *ctx = NULL;
    out->r = (vkbert_bench_result)VKBERT_BENCH_RESULT_INIT;
    if (open_context(a, &ctx)) {
        snprintf(out->skipped, sizeof out->skipped, "%s", vkbert_last_error(NULL));
        return 0;
    }
    vkbert_precision precision =
        strcmp(a->precision, "fp16") ? VKBERT_PRECISION_FP32 : VKBERT_PRECISION_FP16;
    vkbert_bench_encoder_shape encoder = {sizeof(vkbert_bench_encoder_shape),
                                          c->layers,
                                          c->embed,
                                          c->heads,
                                          c->intermediate,
                                          30522,
                                          c->batch,
                                          c->seq_len};
    vkbert_status status =
        c->m        ? vkbert_bench_matmul(ctx, c->m, c->n, c->k, precision, a->runs, &out->r)
        : c->layers ? vkbert_bench_encoder(ctx, &encoder, precision, a->runs, &out->r)
                    : vkbert_bench_attention(ctx, c->batch, c->seq_len, c->embed, c->heads,
                                             precision, a->runs, &out->r);
    if (status)
        snprintf(out->skipped, sizeof out->skipped, "%s: %s", vkbert_status_name(status),
                 vkbert_last_error(ctx));
    int code = cli_close(ctx, 0); /* before the CPU run, so the device is idle */
    /* The OpenBLAS comparison covers matmuls and single layers, not whole encoders. */
    if (!status && a->cpu && !c->layers) out->cpu_ms = cpu_time(c, a->runs);
    return code;
}

static double gflops(const vkbert_bench_result *r)
{
    return r->flops / (r->gpu_median_ms * 1e6);
}

static void print_case(const bench_args *a, const bench_case *c, const case_outcome *o,
                       const vkbert_peaks *peaks)
{
    const vkbert_bench_result *r = &o->r;
    printf("\n%s (%s)\n", c->name, a->precision);
    if (o->skipped[0]) {
        printf("  skipped: %s\n", o->skipped);
        return;
    }
    printf("  gpu      %.3f ms median, %.3f ms min; wall %.3f ms median\n", r->gpu_median_ms,
           r->gpu_min_ms, r->wall_median_ms);
    printf("  speed    %.1f GFLOP/s", gflops(r));
    if (peaks->fma_gflops > 0) printf(", %.2f of the FMA peak", gflops(r) / peaks->fma_gflops);
    printf("\n  memory   %.1f MiB of device memory\n",
           (double)r->device_memory_bytes / (1024.0 * 1024.0));
    printf("  config   %s\n", r->config);
    for (uint32_t i = 0; i < r->kernel_count; i++)
        printf("  kernel   %-16s %.3f ms\n", r->kernels[i].name, r->kernels[i].milliseconds);
    if (o->cpu_ms > 0)
        printf("  cpu      %.3f ms (OpenBLAS); the GPU is %.2fx as fast\n", o->cpu_ms,
               o->cpu_ms / r->gpu_median_ms);
    fflush(stdout);
}

/* ---- JSON ---- */

static cJSON *json_device(const vkbert_device_info *d)
{
    char version[32];
    format_version(d->api_version, version, sizeof version);
    cJSON *device = cJSON_CreateObject();
    cJSON_AddStringToObject(device, "name", d->name);
    cJSON_AddStringToObject(device, "type", vkbert_device_type_name(d->type));
    cJSON_AddNumberToObject(device, "vendor_id", d->vendor_id);
    cJSON_AddStringToObject(device, "driver", d->driver);
    cJSON_AddStringToObject(device, "api_version", version);
    return device;
}

/* A number, or null where it was not measured. */
static void add_number(cJSON *object, const char *name, double value, int measured)
{
    if (measured)
        cJSON_AddNumberToObject(object, name, value);
    else
        cJSON_AddNullToObject(object, name);
}

static cJSON *json_case(const bench_args *a, const bench_case *c, const case_outcome *o,
                        const vkbert_peaks *peaks)
{
    const vkbert_bench_result *r = &o->r;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", c->name);
    cJSON_AddStringToObject(j, "precision", a->precision);
    if (o->skipped[0]) {
        cJSON_AddStringToObject(j, "skipped", o->skipped);
        return j;
    }
    cJSON_AddNumberToObject(j, "median_ms", r->gpu_median_ms);
    cJSON_AddNumberToObject(j, "min_ms", r->gpu_min_ms);
    cJSON_AddNumberToObject(j, "wall_median_ms", r->wall_median_ms);
    cJSON_AddNumberToObject(j, "gflops", gflops(r));
    add_number(j, "peak_fraction", gflops(r) / peaks->fma_gflops, peaks->fma_gflops > 0);
    cJSON_AddNumberToObject(j, "device_memory_bytes", (double)r->device_memory_bytes);
    cJSON_AddStringToObject(j, "config", r->config);
    cJSON *kernels = cJSON_AddArrayToObject(j, "kernels");
    for (uint32_t i = 0; i < r->kernel_count; i++) {
        cJSON *k = cJSON_CreateObject();
        cJSON_AddStringToObject(k, "name", r->kernels[i].name);
        cJSON_AddNumberToObject(k, "median_ms", r->kernels[i].milliseconds);
        cJSON_AddItemToArray(kernels, k);
    }
    if (a->cpu) {
        add_number(j, "cpu_median_ms", o->cpu_ms, o->cpu_ms > 0);
        add_number(j, "gpu_cpu_ratio", o->cpu_ms / r->gpu_median_ms, o->cpu_ms > 0);
    }
    return j;
}

static cJSON *json_startup(const cli_startup *s)
{
    cJSON *startup = cJSON_CreateObject();
    add_number(startup, "cold_context_ms", s->cold_context_ms, s->measured);
    add_number(startup, "cold_pipelines_ms", s->cold_pipelines_ms, s->measured);
    add_number(startup, "warm_context_ms", s->warm_context_ms, s->measured);
    add_number(startup, "warm_pipelines_ms", s->warm_pipelines_ms, s->measured);
    return startup;
}

static int write_json(FILE *file, const bench_args *a, const vkbert_device_info *device,
                      const vkbert_peaks *peaks, const cli_startup *startup,
                      const case_outcome *outcomes)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "device", json_device(device));
    add_number(root, "peak_gflops", peaks->fma_gflops, peaks->fma_gflops > 0);
    add_number(root, "bandwidth_gbs", peaks->copy_gbs, peaks->copy_gbs > 0);
    cJSON_AddItemToObject(root, "startup", json_startup(startup));
    cJSON *list = cJSON_AddArrayToObject(root, "cases");
    for (size_t i = 0; i < CASE_COUNT; i++)
        if (a->selected[i])
            cJSON_AddItemToArray(list, json_case(a, &cases[i], &outcomes[i], peaks));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    int failed = !text || fputs(text, file) < 0 || fputc('\n', file) < 0;
    free(text);
    failed |= fclose(file) != 0;
    return failed ? cli_error("cannot write %s", a->json) : 0;
}

/* ---- the command ---- */

/* The cases in table order; returns non-zero when a context's validation failed. */
static int run_cases(const bench_args *a, const vkbert_peaks *peaks, case_outcome *outcomes)
{
    int code = 0, total = 0, done = 0;
    for (size_t i = 0; i < CASE_COUNT; i++)
        total += a->selected[i];
    for (size_t i = 0; i < CASE_COUNT; i++) {
        if (!a->selected[i]) continue;
        fprintf(stderr, "vkbert bench: [%d/%d] %s\n", ++done, total, cases[i].name);
        int closed = run_case(a, &cases[i], &outcomes[i]);
        code = code ? code : closed;
        print_case(a, &cases[i], &outcomes[i], peaks);
    }
    return code;
}

/* Opens the device once for its description and peaks; failing here is the one failure that
 * ends the command. */
static int device_and_peaks(const bench_args *a, vkbert_device_info *info, vkbert_peaks *peaks)
{
    vkbert_context *ctx = NULL;
    if (open_context(a, &ctx)) return cli_api_error(NULL, "cannot create a Vulkan context");
    vkbert_context_device(ctx, info);
    print_device(info);
    measure_peaks(ctx, peaks);
    return cli_close(ctx, 0);
}

static void report_startup(const bench_args *a, cli_startup *s)
{
    fprintf(stderr, "vkbert bench: start-up, cold and warm\n");
    if (cli_measure_startup(a->device, s)) {
        printf("start-up: not measured (%s)\n", vkbert_last_error(NULL));
        return;
    }
    printf("start-up (context + pipelines of one layer): cold %.1f + %.1f ms, warm %.1f + %.1f "
           "ms\n",
           s->cold_context_ms, s->cold_pipelines_ms, s->warm_context_ms, s->warm_pipelines_ms);
}

int cli_bench(int argc, char **argv)
{
    bench_args args;
    int code = parse_args(argc, argv, &args);
    if (code != CLI_CONTINUE) return code;
    code = 0;
    FILE *json = NULL; /* opened first, so a bad path fails before the long run */
    if (args.json && !(json = fopen(args.json, "w")))
        return cli_error("cannot open %s for writing", args.json);
    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    vkbert_peaks peaks = VKBERT_PEAKS_INIT;
    case_outcome *outcomes = calloc(CASE_COUNT, sizeof *outcomes);
    if (!outcomes) code = cli_error("out of host memory");
    cli_startup startup;
    if (!code) code = device_and_peaks(&args, &info, &peaks);
    if (!code) report_startup(&args, &startup);
    if (!code) code = run_cases(&args, &peaks, outcomes);
    if (json && !code)
        code = write_json(json, &args, &info, &peaks, &startup, outcomes);
    else if (json)
        fclose(json);
    free(outcomes);
    return code;
}
