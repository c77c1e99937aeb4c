/* vkbert attention: runs one attention layer from files. */
#include "cli.h"
#include "io/npy.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert attention --weights W.safetensors --input X.npy --heads H --output Y.npy\n"
    "                        [--mask M.npy] [--causal] [--dropout P] [--seed N] [--device N]\n"
    "                        [--precision fp32|fp16|int8]\n"
    "\n"
    "Runs one attention layer: Y = attention(X).\n"
    "  --weights W    safetensors with q_proj, k_proj, v_proj, out_proj .weight [E,E] and\n"
    "                 .bias [E] (F32, F16, BF16 or F64), optionally under a common prefix\n"
    "                 such as 'attn.'\n"
    "  --input X      float32 .npy of shape [B, S, E]\n"
    "  --heads H      number of heads (E % H == 0)\n"
    "  --output Y     float32 .npy written with shape [B, S, E]\n"
    "  --mask M       .npy mask (bool, uint8, int32, int64 or float32; 0 = masked) of shape\n"
    "                 [S], [B,S], [S,S], [B,S,S], [B,1,1,S], [B,1,S,S], [B,H,S,S] or any\n"
    "                 4-D shape broadcasting to [B,H,S,S]\n"
    "  --causal       also mask keys after the query\n"
    "  --dropout P    training-mode dropout on the attention weights, 0 <= P <= 1\n"
    "  --seed N       dropout seed, an unsigned 64-bit integer (default 0)\n"
    "  --device N     device index or name substring (default: VKBERT_DEVICE, else the best)\n"
    "  --precision P  fp32 (default), fp16 (weights stored as fp16) or int8 (Q8_0 weights);\n"
    "                 arithmetic in fp32 either way\n";

typedef struct attention_args {
    const char *weights, *input, *mask, *output, *device, *precision_name;
    vkbert_precision precision;
    int heads, causal;
    double dropout;
    uint64_t seed;
} attention_args;

/* Everything the run owns, released by release(). */
typedef struct attention_run {
    cli_weights weights;
    npy_array x, mask;
    vkbert_mask mask_view;
    float *y;
    int batch, seq_len;
    vkbert_context *ctx;
    vkbert_attention *layer;
} attention_run;

static int parse_args(int argc, char **argv, attention_args *a)
{
    const cli_option options[] = {
        {"weights", CLI_STRING, &a->weights, 1, 0, 0},
        {"input", CLI_STRING, &a->input, 1, 0, 0},
        {"heads", CLI_INT, &a->heads, 1, 1, 65536},
        {"output", CLI_STRING, &a->output, 1, 0, 0},
        {"mask", CLI_STRING, &a->mask, 0, 0, 0},
        {"causal", CLI_FLAG, &a->causal, 0, 0, 0},
        {"dropout", CLI_REAL, &a->dropout, 0, 0, 1},
        {"seed", CLI_U64, &a->seed, 0, 0, 0},
        {"device", CLI_STRING, &a->device, 0, 0, 0},
        {"precision", CLI_STRING, &a->precision_name, 0, 0, 0},
    };
    memset(a, 0, sizeof *a);
    int code = cli_parse(usage, argc, argv, options, (int)(sizeof options / sizeof *options));
    if (code == CLI_CONTINUE) code = cli_precision(usage, a->precision_name, &a->precision);
    return code;
}

/* ---- the input ---- */

static int load_input(const char *path, int embed_dim, attention_run *run)
{
    char err[1024], shape[160];
    npy_array *x = &run->x;
    if (npy_load(path, x, err, sizeof err)) return cli_error("%s", err);
    cli_format_shape(shape, sizeof shape, x->ndim, x->shape);
    if (x->dtype != NPY_FLOAT32)
        return cli_error("%s: the input must be float32, not %s", path, npy_dtype_name(x->dtype));
    if (x->ndim != 3)
        return cli_error("%s: the input must have 3 dimensions [B, S, E], not shape %s", path,
                         shape);
    if (x->shape[0] < 1 || x->shape[1] < 1 || x->shape[0] > INT_MAX || x->shape[1] > INT_MAX)
        return cli_error("%s: the input shape %s has an empty or too large batch or sequence", path,
                         shape);
    if (x->shape[2] != embed_dim)
        return cli_error("%s: the input shape %s has E = %lld, but the weights have E = %d", path,
                         shape, (long long)x->shape[2], embed_dim);
    run->batch = (int)x->shape[0];
    run->seq_len = (int)x->shape[1];
    return 0;
}

/* ---- the mask ---- */

static int mask_dtype(npy_dtype dtype, vkbert_dtype *out)
{
    switch (dtype) {
    case NPY_BOOL:
        return *out = VKBERT_DTYPE_BOOL, 0;
    case NPY_UINT8:
        return *out = VKBERT_DTYPE_UINT8, 0;
    case NPY_INT32:
        return *out = VKBERT_DTYPE_INT32, 0;
    case NPY_INT64:
        return *out = VKBERT_DTYPE_INT64, 0;
    case NPY_FLOAT32:
        return *out = VKBERT_DTYPE_FLOAT32, 0;
    default:
        return -1;
    }
}

static int load_mask(const char *path, attention_run *run)
{
    char err[1024];
    npy_array *m = &run->mask;
    vkbert_mask *view = &run->mask_view;
    *view = (vkbert_mask)VKBERT_MASK_INIT;
    if (npy_load(path, m, err, sizeof err)) return cli_error("%s", err);
    if (mask_dtype(m->dtype, &view->dtype))
        return cli_error("%s: the mask's dtype %s is not one of bool, uint8, int32, int64, "
                         "float32",
                         path, npy_dtype_name(m->dtype));
    if (m->ndim < 1 || m->ndim > VKBERT_MAX_DIMS)
        return cli_error("%s: the mask has %d dimensions; 1 to %d are accepted", path, m->ndim,
                         VKBERT_MAX_DIMS);
    view->data = m->data;
    view->ndim = m->ndim;
    memcpy(view->shape, m->shape, (size_t)m->ndim * sizeof *m->shape);
    return 0;
}

/* ---- the run ---- */

static int load_files(const attention_args *a, attention_run *run)
{
    if (cli_weights_load(a->weights, &run->weights)) return CLI_EXIT_FAILURE;
    int e = run->weights.embed_dim;
    if (e % a->heads)
        return cli_error("--heads %d does not divide the embedding size E = %d of %s", a->heads, e,
                         a->weights);
    if (load_input(a->input, e, run)) return CLI_EXIT_FAILURE;
    if (a->mask && load_mask(a->mask, run)) return CLI_EXIT_FAILURE;
    run->y = malloc(run->x.count * sizeof *run->y);
    if (!run->y) return cli_error("out of host memory for the output");
    return 0;
}

static int forward(const attention_args *a, attention_run *run)
{
    char what[1200];
    vkbert_attention_options options = VKBERT_ATTENTION_OPTIONS_INIT;
    options.causal = a->causal;
    options.dropout = (float)a->dropout;
    options.seed = a->seed;
    vkbert_attention_weights w = cli_weights_view(&run->weights);
    if (cli_open(a->device, 0, &run->ctx)) return CLI_EXIT_FAILURE;
    vkbert_attention_config config = {sizeof(vkbert_attention_config), a->precision};
    if (vkbert_attention_create(run->ctx, run->weights.embed_dim, a->heads, &w, &config,
                                &run->layer))
        return cli_api_error(run->ctx, a->weights);
    if (vkbert_attention_forward_host(run->layer, run->batch, run->seq_len, run->x.data,
                                      a->mask ? &run->mask_view : NULL, &options, run->y)) {
        snprintf(what, sizeof what, "attention on %s%s%s", a->input, a->mask ? " with mask " : "",
                 a->mask ? a->mask : "");
        return cli_api_error(run->ctx, what);
    }
    return 0;
}

static int save_output(const char *path, const attention_run *run)
{
    char err[1024];
    if (npy_save_f32(path, 3, run->x.shape, run->y, err, sizeof err)) return cli_error("%s", err);
    return 0;
}

/* Ends the device work first, so that a validation message fails the run before Y is
 * written. */
static int finish(const attention_args *a, attention_run *run, int code)
{
    vkbert_attention_destroy(run->layer);
    code = cli_close(run->ctx, code);
    if (!code) code = save_output(a->output, run);
    cli_weights_free(&run->weights);
    npy_free(&run->x);
    npy_free(&run->mask);
    free(run->y);
    return code;
}

int cli_attention(int argc, char **argv)
{
    attention_args args;
    attention_run run;
    int code = parse_args(argc, argv, &args);
    if (code != CLI_CONTINUE) return code;
    memset(&run, 0, sizeof run);
    code = load_files(&args, &run);
    if (!code) code = forward(&args, &run);
    return finish(&args, &run, code);
}
