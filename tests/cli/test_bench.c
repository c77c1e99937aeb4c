/* The benchmark API (peaks, matmul, attention, memory counters) and `vkbert bench` end to end:
 * times positive and ordered, flops by the case's formula, clean errors without timestamps,
 * and the JSON the tool writes. */
#define _POSIX_C_SOURCE 200809L

#include "bench_mixed.h"
#include "bench_stats.h"
#include "st_folder.h"
#include "support.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

TestSuite(bench, .timeout = 120);

static void expect_times(const vkbert_bench_result *r)
{
    cr_assert(r->gpu_min_ms > 0 && isfinite(r->gpu_median_ms), "gpu %g / %g ms", r->gpu_min_ms,
              r->gpu_median_ms);
    cr_assert_leq(r->gpu_min_ms, r->gpu_median_ms);
    cr_assert(r->wall_min_ms > 0 && isfinite(r->wall_median_ms));
    cr_assert_leq(r->wall_min_ms, r->wall_median_ms);
    cr_assert_gt(r->device_memory_bytes, 0);
    cr_assert_gt(strlen(r->config), 0, "empty config");
}

Test(bench, peaks_are_positive_and_finite)
{
    vkbert_context *ctx = test_context(1);
    vkbert_peaks peaks = VKBERT_PEAKS_INIT;
    TEST_OK(vkbert_measure_peaks(ctx, &peaks));
    cr_assert(peaks.fma_gflops > 0 && isfinite(peaks.fma_gflops), "%g", peaks.fma_gflops);
    cr_assert(peaks.copy_gbs > 0 && isfinite(peaks.copy_gbs), "%g", peaks.copy_gbs);
    test_context_done(ctx);
}

Test(bench, matmul_small)
{
    vkbert_context *ctx = test_context(1);
    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    TEST_OK(vkbert_bench_matmul(ctx, 64, 48, 40, VKBERT_PRECISION_FP32, 2, &r));
    expect_times(&r);
    cr_assert_float_eq(r.flops, 2.0 * 64 * 48 * 40, 1e-6);
    cr_assert_eq(r.kernel_count, 1);
    cr_assert_str_eq(r.kernels[0].name, "matmul");
    cr_assert_float_eq(r.kernels[0].milliseconds, r.gpu_median_ms, 1e-12);
    test_context_done(ctx);
}

Test(bench, encoder_small)
{
    vkbert_context *ctx = test_context(1);
    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    vkbert_bench_encoder_shape shape = {
        sizeof(vkbert_bench_encoder_shape), 2, 32, 4, 48, 40, 2, 16, NULL, 0, 0};
    TEST_OK(vkbert_bench_encoder(ctx, &shape, VKBERT_PRECISION_FP32, 2, &r));
    expect_times(&r);
    double b = 2, s = 16, h = 32;
    cr_assert_float_eq(r.flops, 2 * (8 * b * s * h * h + 4 * b * s * s * h + 4 * b * s * h * 48),
                       1e-6);
    cr_assert(strstr(r.config, "2 layers"), "%s", r.config);
    test_context_done(ctx);
}

Test(bench, encoder_small_fp16)
{
    vkbert_context *ctx = test_context(1);
    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    vkbert_bench_encoder_shape shape = {
        sizeof(vkbert_bench_encoder_shape), 2, 32, 4, 48, 40, 2, 16, NULL, 0, 0};
    TEST_OK(vkbert_bench_encoder(ctx, &shape, VKBERT_PRECISION_FP16, 2, &r));
    expect_times(&r);
    cr_assert(strstr(r.config, "fp16"), "%s", r.config);
    test_context_done(ctx);
}

Test(bench, attention_small)
{
    vkbert_context *ctx = test_context(1);
    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    TEST_OK(vkbert_bench_attention(ctx, 1, 16, 64, 4, VKBERT_PRECISION_FP32, 2, &r));
    expect_times(&r);
    cr_assert_float_eq(r.flops, 8.0 * 16 * 64 * 64 + 4.0 * 16 * 16 * 64, 1e-6);
    cr_assert_geq(r.kernel_count, 3);
    cr_assert_leq(r.kernel_count, VKBERT_BENCH_MAX_KERNELS);
    double sum = 0;
    for (uint32_t i = 0; i < r.kernel_count; i++) {
        cr_assert(r.kernels[i].name && *r.kernels[i].name);
        cr_assert_geq(r.kernels[i].milliseconds, 0);
        sum += r.kernels[i].milliseconds;
    }
    /* Medians of parts need not add up to the median of the whole, but they are close. */
    cr_assert(sum > 0.5 * r.gpu_min_ms, "kernels %g ms, whole %g ms", sum, r.gpu_min_ms);
    test_context_done(ctx);
}

Test(bench, errors_are_clean)
{
    vkbert_context *ctx = test_context(0);
    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    vkbert_peaks peaks = VKBERT_PEAKS_INIT;
    cr_assert_eq(vkbert_bench_matmul(ctx, 64, 48, 40, VKBERT_PRECISION_FP32, 2, &r),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(ctx), "timestamps"), "%s", vkbert_last_error(ctx));
    cr_assert_eq(vkbert_bench_attention(ctx, 1, 16, 64, 4, VKBERT_PRECISION_FP32, 2, &r),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(vkbert_measure_peaks(ctx, &peaks), VKBERT_ERROR_INVALID_ARGUMENT);
    test_context_done(ctx);

    ctx = test_context(1);
    cr_assert_eq(vkbert_bench_matmul(ctx, 0, 48, 40, VKBERT_PRECISION_FP32, 2, &r),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(vkbert_bench_matmul(ctx, 64, 48, 40, VKBERT_PRECISION_FP32, 0, &r),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(vkbert_bench_attention(ctx, 1, 16, 64, 3, VKBERT_PRECISION_FP32, 1, &r),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(vkbert_bench_matmul(NULL, 64, 48, 40, VKBERT_PRECISION_FP32, 2, &r),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(vkbert_bench_matmul(ctx, 64, 48, 40, VKBERT_PRECISION_FP32, 2, NULL),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    /* The context still works after the errors. */
    TEST_OK(vkbert_bench_matmul(ctx, 8, 8, 8, VKBERT_PRECISION_FP32, 1, &r));
    test_context_done(ctx);
}

Test(bench, memory_counters_follow_tensors)
{
    vkbert_context *ctx = test_context(0);
    uint64_t allocated0, in_use0, allocated1, in_use1, allocated2, in_use2;
    TEST_OK(vkbert_context_memory(ctx, &allocated0, &in_use0));
    vkbert_tensor *t = NULL;
    int64_t shape[2] = {256, 1024};
    TEST_OK(vkbert_tensor_create(ctx, 2, shape, &t));
    TEST_OK(vkbert_context_memory(ctx, &allocated1, &in_use1));
    cr_assert_geq(in_use1, in_use0 + 256 * 1024 * 4);
    cr_assert_geq(allocated1, in_use1);
    vkbert_tensor_destroy(ctx, t);
    TEST_OK(vkbert_context_memory(ctx, &allocated2, &in_use2));
    cr_assert_eq(in_use2, in_use0);
    cr_assert_eq(allocated2, allocated1, "blocks are kept for reuse");
    cr_assert_eq(vkbert_context_memory(NULL, &allocated2, &in_use2), VKBERT_ERROR_INVALID_ARGUMENT);
    test_context_done(ctx);
}

/* ---- the tool's statistics (tools/vkbert/bench/bench_stats.c) ---- */

Test(bench, spread_is_median_min_max)
{
    double odd[] = {3.0, 1.0, 2.0}, even[] = {4.0, 1.0, 3.0, 2.0}, one[] = {7.0};
    bench_spread s = bench_spread_of(odd, 3);
    cr_assert(s.median == 2.0 && s.min == 1.0 && s.max == 3.0, "%g %g %g", s.median, s.min, s.max);
    s = bench_spread_of(even, 4);
    cr_assert(s.median == 2.5 && s.min == 1.0 && s.max == 4.0, "%g %g %g", s.median, s.min, s.max);
    s = bench_spread_of(one, 1);
    cr_assert(s.median == 7.0 && s.min == 7.0 && s.max == 7.0);
}

Test(bench, fraction_takes_the_higher_adjacent_ceiling)
{
    /* A dip (40) between two higher measurements, then two that failed (0). */
    const double ceilings[] = {50.0, 80.0, 40.0, 0.0, 0.0};
    cr_assert_float_eq(bench_ceiling(ceilings, 0), 80.0, 1e-12);
    cr_assert_float_eq(bench_fraction(ceilings, 0, 40.0), 40.0 / 80.0, 1e-12);
    cr_assert_float_eq(bench_fraction(ceilings, 1, 40.0), 40.0 / 80.0, 1e-12);
    cr_assert_float_eq(bench_fraction(ceilings, 2, 20.0), 20.0 / 40.0, 1e-12, "one unmeasured");
    cr_assert_eq(bench_fraction(ceilings, 3, 20.0), 0.0, "neither measured");
}

/* ---- the mixed-length texts (tools/vkbert/bench/bench_mixed.c) ---- */

static int compare_ints(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

Test(bench, mixed_lengths_have_their_median)
{
    int lengths[BENCH_MIXED_TEXTS];
    bench_mixed_lengths(lengths, BENCH_MIXED_TEXTS);
    qsort(lengths, BENCH_MIXED_TEXTS, sizeof *lengths, compare_ints);
    double median = 0.5 * (lengths[127] + lengths[128]);
    /* The sample median of 256 log-normal draws: its log has standard error
     * sqrt(pi/2) * sigma / sqrt(256) = 0.063 at sigma 0.8; three of them either side. */
    cr_assert(median >= 32 * exp(-0.19) && median <= 32 * exp(0.19), "median %g", median);
    /* sigma 0.8: about 15.9% of the draws lie below exp(-sigma) * 32 = 14.4 tokens. */
    int below = 0;
    for (int i = 0; i < BENCH_MIXED_TEXTS; i++)
        below += lengths[i] < 14.4;
    cr_assert(below >= 0.159 * 256 - 3 * 5.85 && below <= 0.159 * 256 + 3 * 5.85, "%d", below);
}

Test(bench, mixed_lengths_are_clipped_and_fixed)
{
    enum { N = 4096 };
    static int a[N], b[N];
    bench_mixed_lengths(a, N);
    bench_mixed_lengths(b, N);
    cr_assert(!memcmp(a, b, sizeof a), "two calls differ");
    int low = 0, high = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(a[i] >= BENCH_MIXED_MIN && a[i] <= BENCH_MIXED_MAX, "a[%d] = %d", i, a[i]);
        low += a[i] == BENCH_MIXED_MIN, high += a[i] == BENCH_MIXED_MAX;
    }
    /* P(x < 3.5) = 0.28% and P(x > 256) = 0.47%: about 11 and 19 of 4096 reach the clips. */
    cr_assert(low > 0 && high > 0, "%d at the low clip, %d at the high", low, high);
    /* The first texts do not depend on how many are asked for. */
    int first[BENCH_MIXED_TEXTS];
    bench_mixed_lengths(first, BENCH_MIXED_TEXTS);
    cr_assert(!memcmp(first, a, sizeof first));
}

Test(bench, mixed_sort_is_longest_first)
{
    int lengths[BENCH_MIXED_TEXTS], sorted[BENCH_MIXED_TEXTS];
    bench_mixed_lengths(lengths, BENCH_MIXED_TEXTS);
    memcpy(sorted, lengths, sizeof sorted);
    bench_mixed_sort(sorted, BENCH_MIXED_TEXTS);
    for (int i = 1; i < BENCH_MIXED_TEXTS; i++)
        cr_assert_geq(sorted[i - 1], sorted[i], "at %d", i);
    qsort(lengths, BENCH_MIXED_TEXTS, sizeof *lengths, compare_ints);
    for (int i = 0; i < BENCH_MIXED_TEXTS; i++)
        cr_assert_eq(sorted[i], lengths[BENCH_MIXED_TEXTS - 1 - i], "the same lengths");
    long sum = 0;
    for (int i = 0; i < BENCH_MIXED_TEXTS; i++)
        sum += lengths[i];
    cr_assert_eq(bench_mixed_tokens(sorted, BENCH_MIXED_TEXTS), sum);
}

/* Texts of lengths 1, 7, 3, 16, 2 in batches of 2: the flops of their real tokens only. */
static void expect_mixed(int ragged)
{
    vkbert_context *ctx = test_context(1);
    vkbert_bench_result r = VKBERT_BENCH_RESULT_INIT;
    const int lengths[] = {1, 7, 3, 16, 2};
    vkbert_bench_encoder_shape shape = {
        sizeof(vkbert_bench_encoder_shape), 2, 32, 4, 48, 40, 2, 16, lengths, 5, ragged};
    TEST_OK(vkbert_bench_encoder(ctx, &shape, VKBERT_PRECISION_FP32, 2, &r));
    expect_times(&r);
    double flops = 0, h = 32;
    for (int i = 0; i < 5; i++)
        flops += 2 * (8 * lengths[i] * h * h + 4.0 * lengths[i] * lengths[i] * h +
                      4 * lengths[i] * h * 48);
    cr_assert_float_eq(r.flops, flops, 1e-6);
    cr_assert(strstr(r.config, ragged ? "packed" : "padded"), "%s", r.config);
    int bad[] = {1, 17, 3, 16, 2};
    shape.lengths = bad;
    cr_assert_eq(vkbert_bench_encoder(ctx, &shape, VKBERT_PRECISION_FP32, 2, &r),
                 VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(ctx), "lengths[1]"), "%s", vkbert_last_error(ctx));
    test_context_done(ctx);
}

Test(bench, encoder_mixed_padded)
{
    expect_mixed(0);
}

Test(bench, encoder_mixed_ragged)
{
    expect_mixed(1);
}

/* ---- the command line: `$VKBERT_CLI bench ...` ---- */

typedef test_cli_result run_result;

static void run_cli(const char *dir, const char *const *args, run_result *r)
{
    test_run_cli(dir, args, r);
}

static cJSON *field(const cJSON *object, const char *name)
{
    cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    cr_assert_not_null(item, "the JSON lacks \"%s\"", name);
    return item;
}

static void expect_number(const cJSON *object, const char *name)
{
    cJSON *item = field(object, name);
    cr_assert(cJSON_IsNumber(item) && item->valuedouble > 0, "\"%s\" is not a positive number",
              name);
}

static cJSON *read_json(const char *path)
{
    static char text[65536];
    test_read_text(path, text, sizeof text);
    cJSON *root = cJSON_Parse(text);
    cr_assert_not_null(root, "%s is not JSON:\n%s", path, text);
    return root;
}

static void expect_measured_case(const cJSON *c, int cpu)
{
    cr_assert_null(cJSON_GetObjectItem(c, "skipped"), "skipped: %s",
                   cJSON_GetStringValue(cJSON_GetObjectItem(c, "skipped")));
    cr_assert_str_eq(cJSON_GetStringValue(field(c, "name")), "matmul-1024x768x768");
    cr_assert_str_eq(cJSON_GetStringValue(field(c, "precision")), "fp32");
    const char *numbers[] = {"median_ms", "min_ms",        "wall_median_ms",
                             "gflops",    "peak_fraction", "device_memory_bytes"};
    for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++)
        expect_number(c, numbers[i]);
    cr_assert_leq(field(c, "min_ms")->valuedouble, field(c, "median_ms")->valuedouble);
    cr_assert_gt(strlen(cJSON_GetStringValue(field(c, "config"))), 0);
    cJSON *kernels = field(c, "kernels");
    cr_assert_eq(cJSON_GetArraySize(kernels), 1);
    cr_assert_str_eq(cJSON_GetStringValue(field(cJSON_GetArrayItem(kernels, 0), "name")), "matmul");
    expect_number(cJSON_GetArrayItem(kernels, 0), "median_ms");
    if (cpu) {
        expect_number(c, "cpu_median_ms");
        expect_number(c, "gpu_cpu_ratio");
    }
}

Test(bench, cli_writes_json)
{
    char dir[TEST_DIR_SIZE], json[TEST_DIR_SIZE + 16];
    test_dir_make(dir, "bench");
    snprintf(json, sizeof json, "%s/bench.json", dir);
#ifdef VKBERT_HAVE_OPENBLAS
    const int cpu = 1;
#else
    const int cpu = 0;
#endif
    const char *args[] = {
        "bench", "--quick", "--case", "matmul-1024x768x768", "--json", json, cpu ? "--cpu" : NULL,
        NULL};
    run_result r;
    run_cli(dir, args, &r);
    cr_assert_eq(r.code, 0, "exit %d; stderr:\n%s", r.code, r.err);
    cr_assert(strstr(r.out, "device: ") && strstr(r.out, "GFLOP/s"), "stdout:\n%s", r.out);
    cr_assert(strstr(r.err, "matmul-1024x768x768"), "no progress line:\n%s", r.err);
    cJSON *root = read_json(json);
    cJSON *device = field(root, "device");
    const char *strings[] = {"name", "type", "driver", "api_version"};
    for (size_t i = 0; i < sizeof strings / sizeof *strings; i++)
        cr_assert(cJSON_IsString(field(device, strings[i])), "device.%s", strings[i]);
    expect_number(root, "peak_gflops");
    expect_number(root, "bandwidth_gbs");
    cJSON *startup = field(root, "startup");
    expect_number(startup, "cold_context_ms");
    expect_number(startup, "warm_pipelines_ms");
    cJSON *cases = field(root, "cases");
    cr_assert_eq(cJSON_GetArraySize(cases), 1);
    expect_measured_case(cJSON_GetArrayItem(cases, 0), cpu);
    cJSON_Delete(root);
    test_dir_remove(dir);
}

Test(bench, cli_fp16_cases)
{
    char dir[TEST_DIR_SIZE], json[TEST_DIR_SIZE + 16];
    test_dir_make(dir, "bench");
    snprintf(json, sizeof json, "%s/bench.json", dir);
    const char *args[] = {"bench",
                          "--quick",
                          "--precision",
                          "fp16",
                          "--case",
                          "attention-base-b1-s128",
                          "--case=matmul-1024x768x768",
                          "--json",
                          json,
                          NULL};
    run_result r;
    run_cli(dir, args, &r);
    cr_assert_eq(r.code, 0, "exit %d; stderr:\n%s", r.code, r.err);
    cJSON *root = read_json(json);
    cJSON *cases = field(root, "cases");
    cr_assert_eq(cJSON_GetArraySize(cases), 2);
    for (int i = 0; i < 2; i++) {
        cJSON *c = cJSON_GetArrayItem(cases, i);
        cr_assert_str_eq(cJSON_GetStringValue(field(c, "precision")), "fp16");
        cr_assert_null(cJSON_GetObjectItem(c, "skipped"), "an fp16 case was skipped");
        cr_assert(cJSON_GetNumberValue(field(c, "median_ms")) > 0.0);
        cr_assert(cJSON_GetNumberValue(field(c, "gflops")) > 0.0);
        const char *config = cJSON_GetStringValue(field(c, "config"));
        cr_assert(strstr(config, "fp16"), "config \"%s\" does not say fp16", config);
    }
    cJSON_Delete(root);
    test_dir_remove(dir);
}

Test(bench, cli_unknown_case_lists_the_cases)
{
    char dir[TEST_DIR_SIZE];
    test_dir_make(dir, "bench");
    const char *args[] = {"bench", "--case", "matmul-1x1x1", NULL};
    run_result r;
    run_cli(dir, args, &r);
    cr_assert_eq(r.code, 2, "exit %d; stderr:\n%s", r.code, r.err);
    const char *names[] = {
        "matmul-1024x768x768",    "matmul-1024x3072x768",     "matmul-1024x768x3072",
        "attention-base-b1-s128", "attention-base-b8-s128",   "attention-base-b32-s128",
        "attention-base-b1-s512", "attention-minilm-b8-s128", "attention-base-b1-s4096",
        "encoder-base-b8-s128",   "encoder-minilm-b32-s128"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        cr_assert(strstr(r.err, names[i]), "stderr lacks %s:\n%s", names[i], r.err);
    test_dir_remove(dir);
}

Test(bench, cli_repeat_out_of_range)
{
    char dir[TEST_DIR_SIZE];
    test_dir_make(dir, "bench");
    const char *values[] = {"0", "-1", "101", "99999999999999999999", "2x", ""};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        const char *args[] = {"bench", "--quick", "--repeat", values[i], NULL};
        run_result r;
        run_cli(dir, args, &r);
        cr_assert_eq(r.code, 2, "--repeat '%s': exit %d; stderr:\n%s", values[i], r.code, r.err);
        cr_assert(strstr(r.err, "--repeat"), "--repeat '%s': stderr:\n%s", values[i], r.err);
        cr_assert_null(strstr(r.out, "device: "), "--repeat '%s' ran:\n%s", values[i], r.out);
    }
    test_dir_remove(dir);
}

static double number_at(const cJSON *array, int i)
{
    cJSON *item = cJSON_GetArrayItem(array, i);
    cr_assert(cJSON_IsNumber(item), "item %d is not a number", i);
    return item->valuedouble;
}

/* The median of two or three numbers, derived here rather than taken from the tool. */
static double median_of(const double *v, int n)
{
    if (n == 2) return 0.5 * (v[0] + v[1]);
    double lo = fmin(v[0], fmin(v[1], v[2])), hi = fmax(v[0], fmax(v[1], v[2]));
    return v[0] + v[1] + v[2] - lo - hi;
}

/* `name` is the median of `samples`, and spread.name is their [min, max]. */
static void expect_summary(const cJSON *c, const char *name, const double *samples, int n)
{
    double median = median_of(samples, n), lo = samples[0], hi = samples[0];
    for (int i = 1; i < n; i++)
        lo = fmin(lo, samples[i]), hi = fmax(hi, samples[i]);
    cr_assert_float_eq(field(c, name)->valuedouble, median, 1e-9 * median, "%s", name);
    cJSON *pair = field(field(c, "spread"), name);
    cr_assert_eq(cJSON_GetArraySize(pair), 2, "spread.%s", name);
    cr_assert_float_eq(number_at(pair, 0), lo, 1e-9 * lo, "spread.%s min", name);
    cr_assert_float_eq(number_at(pair, 1), hi, 1e-9 * hi, "spread.%s max", name);
}

/* Each repeat's fraction is its GFLOP/s over the higher of the FMA peaks measured just before
 * and after it (its slot and the next), and the case reports their median and spread. */
static void expect_repeats(const cJSON *c, const cJSON *fma, int repeat)
{
    cJSON *repeats = field(c, "repeats");
    cr_assert_eq(cJSON_GetArraySize(repeats), repeat);
    double gflops[3], fractions[3], ms[3];
    for (int i = 0; i < repeat; i++) {
        cJSON *r = cJSON_GetArrayItem(repeats, i);
        int slot = (int)field(r, "slot")->valuedouble;
        cr_assert_eq(slot, i, "one case per repeat: slot %d in repeat %d", slot, i);
        double ceiling = fmax(number_at(fma, slot), number_at(fma, slot + 1));
        gflops[i] = field(r, "gflops")->valuedouble;
        ms[i] = field(r, "median_ms")->valuedouble;
        fractions[i] = field(r, "peak_fraction")->valuedouble;
        cr_assert_float_eq(fractions[i], gflops[i] / ceiling, 1e-9, "repeat %d", i);
    }
    expect_summary(c, "gflops", gflops, repeat);
    expect_summary(c, "median_ms", ms, repeat);
    expect_summary(c, "peak_fraction", fractions, repeat);
}

Test(bench, cli_repeat_reports_medians_and_spreads)
{
    char dir[TEST_DIR_SIZE], json[TEST_DIR_SIZE + 16];
    test_dir_make(dir, "bench");
    snprintf(json, sizeof json, "%s/bench.json", dir);
    const char *args[] = {"bench",  "--quick", "--repeat", "3", "--case", "matmul-1024x768x768",
                          "--json", json,      NULL};
    run_result r;
    run_cli(dir, args, &r);
    cr_assert_eq(r.code, 0, "exit %d; stderr:\n%s", r.code, r.err);
    cr_assert(strstr(r.out, "of 3 repeats"), "stdout:\n%s", r.out);
    cJSON *root = read_json(json);
    cr_assert_eq(field(root, "repeat")->valuedouble, 3);
    /* One measurement before the case and one after each repeat. */
    cJSON *fma = field(field(root, "peaks"), "fma_gflops");
    cJSON *copy = field(field(root, "peaks"), "copy_gbs");
    cr_assert_eq(cJSON_GetArraySize(fma), 4);
    cr_assert_eq(cJSON_GetArraySize(copy), 4);
    double sum = 0.0, lo = INFINITY, hi = 0.0;
    for (int i = 0; i < 4; i++) {
        double p = number_at(fma, i);
        sum += p, lo = fmin(lo, p), hi = fmax(hi, p);
    }
    double median = 0.5 * (sum - lo - hi); /* of four: the mean of the middle two */
    cr_assert_float_eq(field(root, "peak_gflops")->valuedouble, median, 1e-9 * median);
    cJSON *pair = field(field(root, "spread"), "peak_gflops");
    cr_assert_float_eq(number_at(pair, 0), lo, 1e-9 * lo);
    cr_assert_float_eq(number_at(pair, 1), hi, 1e-9 * hi);
    cJSON *c = cJSON_GetArrayItem(field(root, "cases"), 0);
    expect_measured_case(c, 0);
    expect_repeats(c, fma, 3);
    cJSON_Delete(root);
    test_dir_remove(dir);
}

/* load-base on a small folder: a load time, a peak RSS over the file's size (read here with
 * stat), and without --model a skip saying what it needs. */
Test(bench, cli_load_case)
{
    static const char *const vocab[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat"};
    char dir[TEST_DIR_SIZE], json[TEST_DIR_SIZE + 16], model[TEST_DIR_SIZE + 8],
        file[TEST_DIR_SIZE + 32];
    test_dir_make(dir, "bench");
    snprintf(json, sizeof json, "%s/bench.json", dir);
    snprintf(model, sizeof model, "%s/model", dir);
    snprintf(file, sizeof file, "%s/model.safetensors", model);
    bert_config c = tiny_bert_small(6, 0);
    tiny_bert_folder(model, &c, 3, vocab, 6, NULL);
    struct stat st;
    cr_assert_eq(stat(file, &st), 0);
    for (int given = 0; given < 2; given++) {
        const char *args[] = {
            "bench", "--quick", "--case", "load-base", "--json", json, given ? "--model" : NULL,
            model,   NULL};
        run_result r;
        run_cli(dir, args, &r);
        cr_assert_eq(r.code, 0, "exit %d; stderr:\n%s", r.code, r.err);
        cJSON *root = read_json(json);
        cJSON *cases = field(root, "cases");
        cr_assert_eq(cJSON_GetArraySize(cases), 1);
        cJSON *one = cJSON_GetArrayItem(cases, 0);
        cr_assert_str_eq(cJSON_GetStringValue(field(one, "name")), "load-base");
        if (!given) {
            const char *why = cJSON_GetStringValue(field(one, "skipped"));
            cr_assert(why && strstr(why, "--model"), "skipped: %s", why);
        } else {
            cr_assert_null(cJSON_GetObjectItem(one, "skipped"), "skipped: %s",
                           cJSON_GetStringValue(cJSON_GetObjectItem(one, "skipped")));
            expect_number(one, "load_median_ms");
            cr_assert_eq(field(one, "file_bytes")->valuedouble, (double)st.st_size);
            /* The process's resident set alone exceeds this small file. */
            cr_assert_gt(field(one, "peak_rss_ratio")->valuedouble, 1.0);
            cr_assert(strstr(r.out, "peak RSS"), "stdout:\n%s", r.out);
        }
        cJSON_Delete(root);
    }
    test_dir_remove(dir);
}
