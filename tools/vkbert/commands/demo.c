/* vkbert demo: times the attention layer on seeded random data and checks it against the
 * double-precision reference. */
#include "cli.h"
#include "reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert demo [--device N] [--batch B] [--seq S] [--embed E] [--heads H]\n"
    "                   [--iterations N] [--precision fp32|fp16|int8]\n"
    "\n"
    "Times the attention layer on random weights and input (defaults: batch 8, seq 128,\n"
    "embed 768, heads 12, 10 timed iterations after one warm-up), then checks the output\n"
    "against the double-precision CPU reference (fp16: weights stored as fp16, checked\n"
    "against the fp16 bound of docs/semantics.md; int8: weights as int8 blocks, relative\n"
    "L2 <= 1e-2).\n";

/* docs/semantics.md's bounds: fp32, and fp16 storage (relative L2 only); int8's is
 * tests/nn/test_int8.c's for one layer with nn.Linear-like weights. */
#define DEMO_MAX_RELATIVE_L2 1e-5
#define DEMO_MAX_ABS_FRACTION 1e-4
#define DEMO_FP16_RELATIVE_L2 3e-3
#define DEMO_INT8_RELATIVE_L2 1e-2

typedef struct demo_args {
    const char *device, *precision_name;
    int batch, seq_len, embed_dim, heads, iterations;
    vkbert_precision precision;
} demo_args;

typedef struct demo_data {
    cli_weights weights;
    float *x, *y;
    double *times; /* seconds per timed forward */
} demo_data;

static int parse_args(int argc, char **argv, demo_args *a)
{
    const cli_option options[] = {
        {"device", CLI_STRING, &a->device, 0, 0, 0},
        {"batch", CLI_INT, &a->batch, 0, 1, 65536},
        {"seq", CLI_INT, &a->seq_len, 0, 1, 65536},
        {"embed", CLI_INT, &a->embed_dim, 0, 1, 65536},
        {"heads", CLI_INT, &a->heads, 0, 1, 65536},
        {"iterations", CLI_INT, &a->iterations, 0, 1, 1000000},
        {"precision", CLI_STRING, &a->precision_name, 0, 0, 0},
    };
    a->device = NULL, a->precision_name = NULL;
    a->batch = 8, a->seq_len = 128, a->embed_dim = 768, a->heads = 12, a->iterations = 10;
    int code = cli_parse(usage, argc, argv, options, (int)(sizeof options / sizeof *options));
    if (code == CLI_CONTINUE && a->embed_dim % a->heads)
        return cli_usage_error(usage, "--heads %d does not divide --embed %d", a->heads,
                               a->embed_dim);
    if (code == CLI_CONTINUE) code = cli_precision(usage, a->precision_name, &a->precision);
    return code;
}

static size_t activation_count(const demo_args *a)
{
    return (size_t)a->batch * (size_t)a->seq_len * (size_t)a->embed_dim;
}

/* Weights uniform in +-1/sqrt(E) like nn.Linear's init, x uniform in [-1, 1]. */
static int make_data(const demo_args *a, demo_data *d)
{
    size_t e = (size_t)a->embed_dim, n = activation_count(a);
    double bound = 1.0 / sqrt((double)e);
    ref_rng rng = {0x5eed};
    memset(d, 0, sizeof *d);
    if (cli_weights_alloc(&d->weights, a->embed_dim)) return cli_error("out of host memory");
    d->x = malloc(n * sizeof *d->x);
    d->y = malloc(n * sizeof *d->y);
    d->times = malloc((size_t)a->iterations * sizeof *d->times);
    if (!d->x || !d->y || !d->times) return cli_error("out of host memory");
    for (int i = 0; i < CLI_TENSORS; i++)
        ref_fill(&rng, d->weights.tensor[i], i % 2 ? e : e * e, -bound, bound);
    ref_fill(&rng, d->x, n, -1.0, 1.0);
    return 0;
}

static void free_data(demo_data *d)
{
    cli_weights_free(&d->weights);
    free(d->x);
    free(d->y);
    free(d->times);
}

/* ---- timing ---- */

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, compare_doubles);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

static double flops(const demo_args *a)
{
    double b = a->batch, s = a->seq_len, e = a->embed_dim, h = a->heads, dh = e / h;
    return 2.0 * b * s * e * e * 4.0 + 2.0 * 2.0 * b * h * s * s * dh;
}

/* One warm-up forward, then the timed ones. */
static int run_forwards(vkbert_context *ctx, const demo_args *a, demo_data *d)
{
    vkbert_attention *layer = NULL;
    vkbert_attention_weights w = cli_weights_view(&d->weights);
    vkbert_attention_config config = {sizeof(vkbert_attention_config), a->precision};
    if (vkbert_attention_create(ctx, a->embed_dim, a->heads, &w, &config, &layer))
        return cli_api_error(ctx, "cannot create the attention layer");
    int code = 0;
    for (int i = -1; i < a->iterations && !code; i++) {
        double start = plat_now_ms();
        if (vkbert_attention_forward_host(layer, a->batch, a->seq_len, d->x, NULL, NULL, d->y))
            code = cli_api_error(ctx, "forward pass");
        else if (i >= 0)
            d->times[i] = (plat_now_ms() - start) * 1e-3;
    }
    vkbert_attention_destroy(layer);
    return code;
}

static void report_timing(const demo_args *a, demo_data *d)
{
    double t = median(d->times, a->iterations);
    printf("forward: %.3f ms median of %d (after 1 warm-up), %.3g GFLOP/s\n", t * 1e3,
           a->iterations, flops(a) / t * 1e-9);
}

/* ---- the check ---- */

static int check_output(const demo_args *a, const demo_data *d)
{
    size_t n = activation_count(a);
    double *want = malloc(n * sizeof *want);
    if (!want) return cli_error("out of host memory for the reference");
    const cli_weights *w = &d->weights;
    ref_layer layer = {a->embed_dim,      a->heads,          w->tensor[CLI_QW], w->tensor[CLI_QB],
                       w->tensor[CLI_KW], w->tensor[CLI_KB], w->tensor[CLI_VW], w->tensor[CLI_VB],
                       w->tensor[CLI_OW], w->tensor[CLI_OB]};
    ref_attention(&layer, a->batch, a->seq_len, d->x, NULL, NULL, want);
    ref_error err = ref_compare(d->y, want, n);
    free(want);
    if (a->precision != VKBERT_PRECISION_FP32) {
        int fp16 = a->precision == VKBERT_PRECISION_FP16;
        double bound = fp16 ? DEMO_FP16_RELATIVE_L2 : DEMO_INT8_RELATIVE_L2;
        int ok = err.relative_l2 <= bound;
        printf("check against the float64 reference: relative L2 error %.3g (%s bound %g): "
               "%s\n",
               err.relative_l2, fp16 ? "fp16" : "int8", bound, ok ? "ok" : "FAILED");
        return ok ? 0 : cli_error("the output is outside the %s bound", fp16 ? "fp16" : "int8");
    }
    double abs_bound = DEMO_MAX_ABS_FRACTION * err.max_ref;
    int ok = err.relative_l2 <= DEMO_MAX_RELATIVE_L2 && err.max_abs <= abs_bound;
    printf("check against the float64 reference: relative L2 error %.3g (bound %g), max abs "
           "error %.3g (bound %.3g): %s\n",
           err.relative_l2, DEMO_MAX_RELATIVE_L2, err.max_abs, abs_bound, ok ? "ok" : "FAILED");
    if (!ok) return cli_error("the output is outside docs/semantics.md's fp32 bounds");
    return 0;
}

static int print_device(const vkbert_context *ctx, const demo_args *a)
{
    vkbert_device_info info = VKBERT_DEVICE_INFO_INIT;
    if (vkbert_context_device(ctx, &info)) return cli_api_error(ctx, NULL);
    printf("device: %s (%s)\n", info.name, vkbert_device_type_name(info.type));
    printf("driver: %s\n", info.driver);
    printf("shape: batch %d, seq %d, embed %d, heads %d\n", a->batch, a->seq_len, a->embed_dim,
           a->heads);
    fflush(stdout);
    return 0;
}

int cli_demo(int argc, char **argv)
{
    demo_args args;
    demo_data data;
    vkbert_context *ctx = NULL;
    int code = parse_args(argc, argv, &args);
    if (code != CLI_CONTINUE) return code;
    code = make_data(&args, &data);
    if (!code) code = cli_open(args.device, 0, &ctx);
    if (!code) code = print_device(ctx, &args);
    if (!code) code = run_forwards(ctx, &args, &data);
    code = cli_close(ctx, code);
    if (!code) report_timing(&args, &data);
    if (!code) code = check_output(&args, &data);
    free_data(&data);
    return code;
}
