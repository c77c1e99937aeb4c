/* vkbert bench: the device's measured ceilings, then fixed matmul and attention cases timed
 * by the library's benchmarks, optionally against OpenBLAS on the host, printed and written
 * as JSON. Each case runs in a context of its own, so the device memory it reports is its
 * own and a failure in one case leaves nothing behind for the next. The ceilings are measured
 * again between cases, in a context kept open for them, so that each fraction of peak is
 * taken against what the device did just before and just after the case. */
#include "bench_case.h"
#include "bench_load.h"
#include "bench_mixed.h"
#include "bench_stats.h"
#include "cli.h"
#include "vkbert_bench.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert bench [--device N] [--case NAME]... [--precision fp32|fp16|int8] [--json FILE]\n"
    "                    [--quick] [--cpu] [--repeat N] [--model DIR]\n"
    "\n"
    "Measures the device's FMA and copy peaks, then times each case (all by default; --case\n"
    "may repeat): GPU time from timestamps (median and min of 10 runs, 3 with --quick, after\n"
    "a warm-up), wall time from submit to fence, GFLOP/s, the fraction of the FMA peak,\n"
    "device memory, the kernel configuration and each kernel's time. The peaks are measured\n"
    "again after each case; a case's fraction is taken against the higher of the FMA peaks\n"
    "measured just before and just after it. --repeat N (1 to 100, default 1) runs the whole\n"
    "set N times, interleaved, and reports each figure's median over the N and its spread\n"
    "(min..max). --cpu also times the case with OpenBLAS on the host. --json writes the\n"
    "results to FILE. With int8 the matmul cases are skipped: int8 weights are timed in\n"
    "attention layers and encoders. The case load-base, run only when named, times\n"
    "vkbert_encoder_load of the folder --model DIR and its peak host memory (RSS) over\n"
    "model.safetensors' size.\n";

static bool is_load(const bench_case *c)
{
    return !c->m && !c->batch;
}

typedef struct bench_args {
    const char *device, *precision, *json, *model;
    vkbert_precision weights; /* the --precision named */
    int quick, cpu, runs, repeat;
    int selected[BENCH_CASE_COUNT];
} bench_args;

/* One case in one repeat. */
typedef struct case_outcome {
    char skipped[1280]; /* why it did not run (status and message); empty when it ran */
    vkbert_bench_result r;
    double cpu_ms; /* 0 without --cpu */
    double tokens; /* the real tokens of a mixed case's set, else 0 */
    bench_load_result load;
    int slot; /* it ran between the peaks measured in slots `slot` and `slot + 1` */
} case_outcome;

/* The whole run: the peaks in the order they were measured (0 where one failed), one more
 * than the cases run, and each case's outcomes, repeat by repeat. */
typedef struct bench_run {
    bench_args a;
    vkbert_context *peaks_ctx;
    double *fma, *copy;
    int slots;
    case_outcome *outcomes; /* [BENCH_CASE_COUNT][repeat] */
} bench_run;

/* ---- options ---- */

static int find_case(const char *name)
{
    for (size_t i = 0; i < BENCH_CASE_COUNT; i++)
        if (strcmp(bench_cases[i].name, name) == 0) return (int)i;
    return -1;
}

static int unknown_case(const char *name)
{
    char list[1024] = "";
    for (size_t i = 0; i < BENCH_CASE_COUNT; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "\n  %s", bench_cases[i].name);
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
    for (size_t i = 0; i < BENCH_CASE_COUNT && !any; i++)
        a->selected[i] = !is_load(&bench_cases[i]); /* seconds each, and it needs a folder */
    return CLI_CONTINUE;
}

static int parse_args(int argc, char **argv, bench_args *a)
{
    memset(a, 0, sizeof *a);
    a->precision = "fp32";
    a->repeat = 1;
    int code = take_cases(&argc, argv, a);
    const cli_option options[] = {
        {"device", CLI_STRING, &a->device, 0, 0, 0},
        {"precision", CLI_STRING, &a->precision, 0, 0, 0},
        {"json", CLI_STRING, &a->json, 0, 0, 0},
        {"quick", CLI_FLAG, &a->quick, 0, 0, 0},
        {"cpu", CLI_FLAG, &a->cpu, 0, 0, 0},
        {"repeat", CLI_INT, &a->repeat, 0, 1, BENCH_MAX_REPEAT},
        {"model", CLI_STRING, &a->model, 0, 0, 0},
    };
    if (code == CLI_CONTINUE)
        code = cli_parse(usage, argc, argv, options, (int)(sizeof options / sizeof *options));
    if (code != CLI_CONTINUE) return code;
    code = cli_precision(usage, a->precision, &a->weights);
    if (code != CLI_CONTINUE) return code;
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

/* Measures the peaks into the next slot. One that cannot be measured is reported and left 0;
 * the cases still run. */
static void measure_peaks(bench_run *b)
{
    vkbert_peaks peaks = VKBERT_PEAKS_INIT;
    int slot = b->slots++;
    fprintf(stderr, "vkbert bench: measuring the FMA and copy peaks\n");
    if (vkbert_measure_peaks(b->peaks_ctx, &peaks)) {
        fprintf(stderr, "vkbert bench: peaks not measured: %s\n", vkbert_last_error(b->peaks_ctx));
        return;
    }
    b->fma[slot] = peaks.fma_gflops, b->copy[slot] = peaks.copy_gbs;
    fprintf(stderr, "vkbert bench: peaks %.1f GFLOP/s, %.1f GB/s\n", peaks.fma_gflops,
            peaks.copy_gbs);
}
/* ---- the cases ---- */

/* Runs one case in a fresh context. Returns the exit code of closing it (validation). */
static int run_case(const bench_args *a, const bench_case *c, case_outcome *out)
{
    vkbert_context *ctx = NULL;
    out->r = (vkbert_bench_result)VKBERT_BENCH_RESULT_INIT;
    if (is_load(c))
        return bench_load(a->device, a->model, strcmp(a->precision, "fp16") == 0, a->runs,
                          &out->load, out->skipped, sizeof out->skipped);
    if (open_context(a, &ctx)) {
        snprintf(out->skipped, sizeof out->skipped, "%s", vkbert_last_error(NULL));
        return 0;
    }
    vkbert_precision precision = a->weights;
    vkbert_bench_encoder_shape encoder = {sizeof(vkbert_bench_encoder_shape),
                                          c->layers,
                                          c->embed,
                                          c->heads,
                                          c->intermediate,
                                          30522,
                                          c->batch,
                                          c->seq_len,
                                          NULL,
                                          0,
                                          0};
    int lengths[BENCH_MIXED_TEXTS];
    if (c->mixed) {
        bench_mixed_lengths(lengths, BENCH_MIXED_TEXTS);
        if (c->mixed == BENCH_MIXED_SORTED) bench_mixed_sort(lengths, BENCH_MIXED_TEXTS);
        encoder.lengths = lengths, encoder.texts = BENCH_MIXED_TEXTS;
        encoder.ragged = c->mixed == BENCH_MIXED_RAGGED;
        out->tokens = (double)bench_mixed_tokens(lengths, BENCH_MIXED_TEXTS);
    }
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
    if (!status && a->cpu && !c->layers) out->cpu_ms = bench_cpu_time(c, a->runs);
    return code;
}

static double gflops(const vkbert_bench_result *r)
{
    return r->flops / (r->gpu_median_ms * 1e6);
}

/* ---- each figure over the repeats ---- */

/* The figures summarised over the repeats, by their JSON names. */
enum {
    FIG_GPU_MEDIAN,
    FIG_GPU_MIN,
    FIG_WALL,
    FIG_GFLOPS,
    FIG_FRACTION,
    FIG_CEILING,
    FIG_CPU,
    FIG_RATIO,
    FIG_TOKENS,
    FIG_LOAD,
    FIG_RSS,
    FIG_COUNT
};
static const char *const figure_names[FIG_COUNT] = {
    "median_ms",     "min_ms",         "wall_median_ms", "gflops",
    "peak_fraction", "ceiling_gflops", "cpu_median_ms",  "gpu_cpu_ratio",
    "tokens_per_s",  "load_median_ms", "peak_rss_ratio"};

typedef struct case_summary {
    const case_outcome *first; /* memory, config and kernel names: the same in every repeat */
    const char *skipped;       /* the first repeat's reason when any did not run, else NULL */
    bench_spread figure[FIG_COUNT];
    bench_spread kernel[VKBERT_BENCH_MAX_KERNELS];
} case_summary;

static double figure_of(const bench_run *b, const case_outcome *o, int figure)
{
    const vkbert_bench_result *r = &o->r;
    double values[FIG_COUNT] = {r->gpu_median_ms,
                                r->gpu_min_ms,
                                r->wall_median_ms,
                                gflops(r),
                                bench_fraction(b->fma, o->slot, gflops(r)),
                                bench_ceiling(b->fma, o->slot),
                                o->cpu_ms,
                                o->cpu_ms / r->gpu_median_ms,
                                o->tokens / (r->gpu_median_ms * 1e-3),
                                o->load.median_ms,
                                bench_load_rss_ratio(&o->load)};
    return values[figure];
}

static case_summary summarize(const bench_run *b, size_t index)
{
    const case_outcome *o = &b->outcomes[index * (size_t)b->a.repeat];
    case_summary s = {.first = o};
    for (int i = b->a.repeat - 1; i >= 0; i--)
        s.skipped = o[i].skipped[0] ? o[i].skipped : s.skipped;
    if (s.skipped) return s;
    double samples[BENCH_MAX_REPEAT];
    for (int f = 0; f < FIG_COUNT; f++) {
        for (int i = 0; i < b->a.repeat; i++)
            samples[i] = figure_of(b, &o[i], f);
        s.figure[f] = bench_spread_of(samples, b->a.repeat);
    }
    for (uint32_t k = 0; k < o->r.kernel_count; k++) {
        for (int i = 0; i < b->a.repeat; i++)
            samples[i] = o[i].r.kernels[k].milliseconds;
        s.kernel[k] = bench_spread_of(samples, b->a.repeat);
    }
    return s;
}

/* ---- the table ---- */

/* "12.3", and over several repeats "12.3 (11.9..12.8)", between two texts. */
static void print_spread(const char *before, bench_spread s, int digits, int repeat,
                         const char *after)
{
    printf("%s%.*f", before, digits, s.median);
    if (repeat > 1) printf(" (%.*f..%.*f)", digits, s.min, digits, s.max);
    fputs(after, stdout);
}

static void print_case(const bench_run *b, const bench_case *c, const case_summary *s)
{
    const vkbert_bench_result *r = &s->first->r;
    const bench_spread *f = s->figure;
    int n = b->a.repeat;
    printf("\n%s (%s)", c->name, b->a.precision);
    if (n > 1) printf(", median (min..max) of %d repeats", n);
    printf("\n");
    if (s->skipped) {
        printf("  skipped: %s\n", s->skipped);
        return;
    }
    if (is_load(c)) {
        bench_load_print(f[FIG_LOAD], f[FIG_RSS], &s->first->load, n);
        return;
    }
    print_spread("  gpu      ", f[FIG_GPU_MEDIAN], 3, n, " ms median, ");
    print_spread("", f[FIG_GPU_MIN], 3, n, " ms min; wall ");
    print_spread("", f[FIG_WALL], 3, n, " ms median\n");
    if (f[FIG_TOKENS].min > 0) print_spread("  tokens   ", f[FIG_TOKENS], 0, n, " real tokens/s\n");
    print_spread("  speed    ", f[FIG_GFLOPS], 1, n, " GFLOP/s");
    if (f[FIG_CEILING].min > 0) {
        print_spread(", ", f[FIG_FRACTION], 2, n, " of the FMA peak (the higher of those before ");
        print_spread("and after it: ", f[FIG_CEILING], 1, n, " GFLOP/s)");
    }
    printf("\n  memory   %.1f MiB of device memory\n",
           (double)r->device_memory_bytes / (1024.0 * 1024.0));
    printf("  config   %s\n", r->config);
    for (uint32_t i = 0; i < r->kernel_count; i++) {
        printf("  kernel   %-16s", r->kernels[i].name);
        print_spread(" ", s->kernel[i], 3, n, " ms\n");
    }
    if (f[FIG_CPU].min > 0) {
        print_spread("  cpu      ", f[FIG_CPU], 3, n, " ms (OpenBLAS); the GPU is ");
        print_spread("", f[FIG_RATIO], 2, n, "x as fast\n");
    }
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

/* The median as `name` in `object`, and [min, max] as `name` in `spread`; null where it was
 * not measured. */
static void add_spread(cJSON *object, cJSON *spread, const char *name, bench_spread s, int measured)
{
    add_number(object, name, s.median, measured);
    if (!measured) return;
    double pair[2] = {s.min, s.max};
    cJSON_AddItemToObject(spread, name, cJSON_CreateDoubleArray(pair, 2));
}

/* Each repeat's slot among the peaks and its figures, so that a reader can check the ceiling
 * each fraction was taken against. */
static cJSON *json_repeats(const bench_run *b, const case_outcome *o)
{
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; i < b->a.repeat; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "slot", o[i].slot);
        cJSON_AddNumberToObject(r, "median_ms", o[i].r.gpu_median_ms);
        cJSON_AddNumberToObject(r, "gflops", figure_of(b, &o[i], FIG_GFLOPS));
        add_number(r, "peak_fraction", figure_of(b, &o[i], FIG_FRACTION),
                   figure_of(b, &o[i], FIG_CEILING) > 0);
        cJSON_AddItemToArray(list, r);
    }
    return list;
}

static cJSON *json_kernels(const case_summary *s)
{
    cJSON *kernels = cJSON_CreateArray();
    for (uint32_t i = 0; i < s->first->r.kernel_count; i++) {
        cJSON *k = cJSON_CreateObject(), *spread = cJSON_CreateObject();
        cJSON_AddStringToObject(k, "name", s->first->r.kernels[i].name);
        add_spread(k, spread, "median_ms", s->kernel[i], 1);
        cJSON_AddItemToObject(k, "spread", spread);
        cJSON_AddItemToArray(kernels, k);
    }
    return kernels;
}

static cJSON *json_case(const bench_run *b, const bench_case *c, const case_summary *s)
{
    const vkbert_bench_result *r = &s->first->r;
    cJSON *j = cJSON_CreateObject(), *spread = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", c->name);
    cJSON_AddStringToObject(j, "precision", b->a.precision);
    if (s->skipped) {
        cJSON_AddStringToObject(j, "skipped", s->skipped);
        cJSON_Delete(spread);
        return j;
    }
    for (int f = 0; f < FIG_COUNT; f++) {
        if ((f == FIG_LOAD || f == FIG_RSS) != is_load(c)) continue; /* its own figures */
        int measured = f == FIG_FRACTION || f == FIG_CEILING ? s->figure[FIG_CEILING].min > 0
                       : f == FIG_CPU || f == FIG_RATIO      ? s->figure[FIG_CPU].min > 0
                       : f == FIG_RSS                        ? s->figure[FIG_RSS].min > 0
                                                             : 1;
        if (f == FIG_TOKENS && !c->mixed) continue;
        if (b->a.cpu || (f != FIG_CPU && f != FIG_RATIO))
            add_spread(j, spread, figure_names[f], s->figure[f], measured);
    }
    if (is_load(c)) {
        cJSON_AddNumberToObject(j, "file_bytes", s->first->load.file_bytes);
        cJSON_AddNumberToObject(j, "rss_before_bytes", s->first->load.rss_before_bytes);
        cJSON_AddItemToObject(j, "spread", spread);
        return j;
    }
    cJSON_AddNumberToObject(j, "device_memory_bytes", (double)r->device_memory_bytes);
    cJSON_AddStringToObject(j, "config", r->config);
    cJSON_AddItemToObject(j, "kernels", json_kernels(s));
    cJSON_AddItemToObject(j, "spread", spread);
    cJSON_AddItemToObject(j, "repeats", json_repeats(b, s->first));
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

/* The peaks' median and spread over the slots where they were measured; median 0 where none
 * was. */
static bench_spread peaks_spread(const bench_run *b, const double *peaks)
{
    double samples[BENCH_MAX_REPEAT * BENCH_CASE_COUNT + 1];
    int n = 0;
    for (int i = 0; i < b->slots; i++)
        if (peaks[i] > 0) samples[n++] = peaks[i];
    return n ? bench_spread_of(samples, n) : (bench_spread){0, 0, 0};
}

/* Every measurement in order, null where one failed. */
static cJSON *json_slots(const bench_run *b, const double *peaks)
{
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; i < b->slots; i++)
        cJSON_AddItemToArray(list,
                             peaks[i] > 0 ? cJSON_CreateNumber(peaks[i]) : cJSON_CreateNull());
    return list;
}

static cJSON *json_peaks(const bench_run *b, cJSON *root)
{
    bench_spread fma = peaks_spread(b, b->fma), copy = peaks_spread(b, b->copy);
    cJSON *spread = cJSON_CreateObject(), *slots = cJSON_CreateObject();
    add_spread(root, spread, "peak_gflops", fma, fma.median > 0);
    add_spread(root, spread, "bandwidth_gbs", copy, copy.median > 0);
    cJSON_AddItemToObject(slots, "fma_gflops", json_slots(b, b->fma));
    cJSON_AddItemToObject(slots, "copy_gbs", json_slots(b, b->copy));
    cJSON_AddItemToObject(root, "peaks", slots);
    return spread;
}

static int write_json(FILE *file, const bench_run *b, const vkbert_device_info *device,
                      const cli_startup *startup)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "device", json_device(device));
    cJSON_AddNumberToObject(root, "repeat", b->a.repeat);
    cJSON *spread = json_peaks(b, root);
    cJSON_AddItemToObject(root, "spread", spread);
    cJSON_AddItemToObject(root, "startup", json_startup(startup));
    cJSON *list = cJSON_AddArrayToObject(root, "cases");
    for (size_t i = 0; i < BENCH_CASE_COUNT; i++) {
        if (!b->a.selected[i]) continue;
        case_summary s = summarize(b, i);
        cJSON_AddItemToArray(list, json_case(b, &bench_cases[i], &s));
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    int failed = !text || fputs(text, file) < 0 || fputc('\n', file) < 0;
    free(text);
    failed |= fclose(file) != 0;
    return failed ? cli_error("cannot write %s", b->a.json) : 0;
}

/* ---- the command ---- */

/* Every repeat of the cases in table order, the peaks measured after each; a case is printed
 * once its last repeat has run. Returns non-zero when a context's validation failed. */
static int run_cases(bench_run *b)
{
    int code = 0, total = 0, done = 0, n = b->a.repeat;
    for (size_t i = 0; i < BENCH_CASE_COUNT; i++)
        total += b->a.selected[i] * n;
    for (int rep = 0; rep < n; rep++)
        for (size_t i = 0; i < BENCH_CASE_COUNT; i++) {
            if (!b->a.selected[i]) continue;
            case_outcome *o = &b->outcomes[i * (size_t)n + (size_t)rep];
            fprintf(stderr, "vkbert bench: [%d/%d] %s\n", ++done, total, bench_cases[i].name);
            o->slot = b->slots - 1;
            int closed = run_case(&b->a, &bench_cases[i], o);
            code = code ? code : closed;
            measure_peaks(b);
            if (rep < n - 1) continue;
            case_summary s = summarize(b, i);
            print_case(b, &bench_cases[i], &s);
        }
    return code;
}

static void print_peaks(const bench_run *b)
{
    bench_spread fma = peaks_spread(b, b->fma), copy = peaks_spread(b, b->copy);
    if (fma.median <= 0 || copy.median <= 0) {
        printf("\npeaks: not measured\n");
        return;
    }
    printf("\npeaks, median (min..max) of %d measurements, one before the cases and one after "
           "each:\n",
           b->slots);
    print_spread("  ", fma, 1, 2, " GFLOP/s fp32 FMA\n");
    print_spread("  ", copy, 1, 2, " GB/s copy (read + write)\n");
}

/* Opens the device for its description and the peaks, kept open for the peaks measured between
 * the cases; failing here is the one failure that ends the command. */
static int device_and_peaks(bench_run *b, vkbert_device_info *info)
{
    if (open_context(&b->a, &b->peaks_ctx))
        return cli_api_error(NULL, "cannot create a Vulkan context");
    vkbert_context_device(b->peaks_ctx, info);
    print_device(info);
    measure_peaks(b);
    return 0;
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

static int bench_alloc(bench_run *b)
{
    size_t slots = BENCH_CASE_COUNT * (size_t)b->a.repeat + 1;
    b->fma = calloc(slots, sizeof *b->fma);
    b->copy = calloc(slots, sizeof *b->copy);
    b->outcomes = calloc(BENCH_CASE_COUNT * (size_t)b->a.repeat, sizeof *b->outcomes);
    return b->fma && b->copy && b->outcomes ? 0 : cli_error("out of host memory");
}

static int bench_free(bench_run *b, int code)
{
    int closed = b->peaks_ctx ? cli_close(b->peaks_ctx, 0) : 0;
    free(b->fma);
    free(b->copy);
    free(b->outcomes);
    return code ? code : closed;
}

int cli_bench(int argc, char **argv)
{
    bench_run b = {0};
    int code = parse_args(argc, argv, &b.a);
    if (code != CLI_CONTINUE) return code;
    FILE *json = NULL; /* opened first, so a bad path fails before the long run */
    if (b.a.json && !(json = fopen(b.a.json, "w")))
        return cli_error("cannot open %s for writing", b.a.json);
    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    cli_startup startup;
    code = bench_alloc(&b);
    if (!code) code = device_and_peaks(&b, &info);
    if (!code) report_startup(&b.a, &startup);
    if (!code) code = run_cases(&b);
    if (!code) print_peaks(&b);
    if (json && !code)
        code = write_json(json, &b, &info, &startup);
    else if (json)
        fclose(json);
    return bench_free(&b, code);
}
