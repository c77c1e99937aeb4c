/* vkbert encode: runs a BERT encoder on token ids from npy files. */
#include "cli.h"
#include "io/npy.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert encode --model DIR --input-ids I.npy --output H.npy\n"
    "                     [--attention-mask M.npy] [--token-type-ids T.npy] [--pooled P.npy]\n"
    "                     [--device N] [--precision fp32|fp16|int8]\n"
    "\n"
    "Runs a HuggingFace BertModel folder (config.json, model.safetensors) on token ids.\n"
    "  --model DIR           the model folder\n"
    "  --input-ids I         int32 or int64 .npy of shape [B, S]\n"
    "  --attention-mask M    int32, int64, bool or uint8 .npy [B, S]; 0 = padding (default 1)\n"
    "  --token-type-ids T    int32 or int64 .npy [B, S] (default 0)\n"
    "  --output H            float32 .npy written with the hidden states [B, S, hidden]\n"
    "  --pooled P            float32 .npy written with the pooler output [B, hidden]\n"
    "  --device N            device index or name substring (default: VKBERT_DEVICE, else the\n"
    "                        best)\n"
    "  --precision P         fp32 (default), fp16 or int8: dense weights stored as fp16 or\n"
    "                        Q8_0 (int8, one scale per 32 inputs)\n";

typedef struct encode_args {
    const char *model, *ids, *mask, *types, *output, *pooled, *device, *precision_name;
    vkbert_precision precision;
} encode_args;

/* Everything the run owns, released by finish(). */
typedef struct encode_run {
    int32_t *ids, *mask, *types;
    int batch, seq_len, hidden_size;
    float *hidden, *pooled;
    vkbert_context *ctx;
    vkbert_encoder *encoder;
} encode_run;

static int parse_args(int argc, char **argv, encode_args *a)
{
    const cli_option options[] = {
        {"model", CLI_STRING, &a->model, 1, 0, 0},
        {"input-ids", CLI_STRING, &a->ids, 1, 0, 0},
        {"output", CLI_STRING, &a->output, 1, 0, 0},
        {"attention-mask", CLI_STRING, &a->mask, 0, 0, 0},
        {"token-type-ids", CLI_STRING, &a->types, 0, 0, 0},
        {"pooled", CLI_STRING, &a->pooled, 0, 0, 0},
        {"device", CLI_STRING, &a->device, 0, 0, 0},
        {"precision", CLI_STRING, &a->precision_name, 0, 0, 0},
    };
    memset(a, 0, sizeof *a);
    int code = cli_parse(usage, argc, argv, options, (int)(sizeof options / sizeof *options));
    if (code == CLI_CONTINUE) code = cli_precision(usage, a->precision_name, &a->precision);
    return code;
}

/* ---- the inputs ---- */

static int dtype_ok(npy_dtype dtype, int is_mask)
{
    if (dtype == NPY_INT32 || dtype == NPY_INT64) return 1;
    return is_mask && (dtype == NPY_BOOL || dtype == NPY_UINT8);
}

static int check_shape(const char *path, const npy_array *x, const encode_run *run)
{
    char shape[160];
    cli_format_shape(shape, sizeof shape, x->ndim, x->shape);
    if (x->ndim != 2 || x->shape[0] < 1 || x->shape[1] < 1 || x->shape[0] > INT_MAX ||
        x->shape[1] > INT_MAX)
        return cli_error("%s: must have shape [B, S] with B, S >= 1, not %s", path, shape);
    if (run->batch && (x->shape[0] != run->batch || x->shape[1] != run->seq_len))
        return cli_error("%s: shape %s differs from the input ids' [%d, %d]", path, shape,
                         run->batch, run->seq_len);
    return 0;
}

static int32_t element(const npy_array *x, size_t i)
{
    switch (x->dtype) {
    case NPY_INT64:
        return (int32_t)((const int64_t *)x->data)[i];
    case NPY_INT32:
        return ((const int32_t *)x->data)[i];
    default:
        return ((const uint8_t *)x->data)[i];
    }
}

static int copy_ints(const char *path, const npy_array *x, int32_t *out)
{
    for (size_t i = 0; i < x->count; i++) {
        if (x->dtype == NPY_INT64) {
            int64_t v = ((const int64_t *)x->data)[i];
            if (v < INT32_MIN || v > INT32_MAX)
                return cli_error("%s: value %lld at index %zu does not fit in int32", path,
                                 (long long)v, i);
        }
        out[i] = element(x, i);
    }
    return 0;
}

/* Reads an integer [B, S] array into *out (allocated); the first fixes B and S. */
static int load_ints(const char *path, int is_mask, encode_run *run, int32_t **out)
{
    char err[1024];
    npy_array x;
    if (npy_load(path, &x, err, sizeof err)) return cli_error("%s", err);
    int code = 0;
    if (!dtype_ok(x.dtype, is_mask))
        code = cli_error("%s: the dtype must be int32 or int64%s, not %s", path,
                         is_mask ? " (or bool, uint8)" : "", npy_dtype_name(x.dtype));
    if (!code) code = check_shape(path, &x, run);
    if (!code && !(*out = malloc(x.count * sizeof **out))) code = cli_error("out of host memory");
    if (!code) code = copy_ints(path, &x, *out);
    if (!code && !run->batch) {
        run->batch = (int)x.shape[0];
        run->seq_len = (int)x.shape[1];
    }
    npy_free(&x);
    return code;
}

static int load_inputs(const encode_args *a, encode_run *run)
{
    if (load_ints(a->ids, 0, run, &run->ids)) return CLI_EXIT_FAILURE;
    if (a->mask && load_ints(a->mask, 1, run, &run->mask)) return CLI_EXIT_FAILURE;
    if (a->types && load_ints(a->types, 0, run, &run->types)) return CLI_EXIT_FAILURE;
    return 0;
}

/* ---- the run ---- */

static int forward(const encode_args *a, encode_run *run)
{
    if (cli_open(a->device, 0, &run->ctx)) return CLI_EXIT_FAILURE;
    vkbert_encoder_config config = {sizeof(vkbert_encoder_config), a->precision};
    if (vkbert_encoder_load(run->ctx, a->model, &config, &run->encoder))
        return cli_api_error(run->ctx, a->model);
    run->hidden_size = vkbert_encoder_hidden_size(run->encoder);
    size_t rows = (size_t)run->batch * (size_t)run->seq_len, h = (size_t)run->hidden_size;
    run->hidden = malloc(rows * h * sizeof *run->hidden);
    if (a->pooled) run->pooled = malloc((size_t)run->batch * h * sizeof *run->pooled);
    if (!run->hidden || (a->pooled && !run->pooled)) return cli_error("out of host memory");
    if (vkbert_encoder_forward_host(run->encoder, run->batch, run->seq_len, run->ids, run->types,
                                    run->mask, run->hidden, run->pooled))
        return cli_api_error(run->ctx, a->ids);
    return 0;
}

static int save_outputs(const encode_args *a, const encode_run *run)
{
    char err[1024];
    int64_t shape[3] = {run->batch, run->seq_len, run->hidden_size};
    if (npy_save_f32(a->output, 3, shape, run->hidden, err, sizeof err))
        return cli_error("%s", err);
    int64_t pooled_shape[2] = {run->batch, run->hidden_size};
    if (a->pooled && npy_save_f32(a->pooled, 2, pooled_shape, run->pooled, err, sizeof err))
        return cli_error("%s", err);
    return 0;
}

/* Ends the device work first, so that a validation message fails the run before anything is
 * written. */
static int finish(const encode_args *a, encode_run *run, int code)
{
    vkbert_encoder_destroy(run->encoder);
    if (run->ctx) code = cli_close(run->ctx, code);
    if (!code) code = save_outputs(a, run);
    free(run->ids);
    free(run->mask);
    free(run->types);
    free(run->hidden);
    free(run->pooled);
    return code;
}

int cli_encode(int argc, char **argv)
{
    encode_args args;
    encode_run run;
    int code = parse_args(argc, argv, &args);
    if (code != CLI_CONTINUE) return code;
    memset(&run, 0, sizeof run);
    code = load_inputs(&args, &run);
    if (!code) code = forward(&args, &run);
    return finish(&args, &run, code);
}
