/* vkbert embed: sentence embeddings of texts with a BERT model: mean pooling (and its
 * normalization) on the device, the [CLS] row from the hidden states. */
#define _POSIX_C_SOURCE 200809L

#include "cli.h"
#include "io/npy.h"
#include "io/tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert embed --model DIR [--pooling mean|cls] [--normalize] [--max-length N]\n"
    "                    [--output E.npy] [--device N] [--precision fp32|fp16] [TEXT...]\n"
    "\n"
    "Tokenizes each TEXT (without TEXT: each non-empty line of stdin), pads the batch to the\n"
    "longest, runs the encoder and pools its hidden states into one embedding per text.\n"
    "  --model DIR      a BertModel folder: config.json, model.safetensors, tokenizer.json\n"
    "                   or vocab.txt (and optionally tokenizer_config.json)\n"
    "  --pooling P      mean (default): the mean over the text's tokens, padding excluded;\n"
    "                   cls: the hidden state of the first token, [CLS]\n"
    "  --normalize      divide each embedding by its L2 norm\n"
    "  --max-length N   truncate each text to N ids, 2 <= N (default 512)\n"
    "  --output E       float32 .npy written with shape [N, hidden]; without it the\n"
    "                   embeddings are printed as JSON {\"embeddings\": [[...], ...]}\n"
    "  --device N       device index or name substring (default: VKBERT_DEVICE, else the best)\n"
    "  --precision P    fp32 (default) or fp16: dense weights stored as fp16\n"
    "  TEXT             UTF-8 texts; '--' ends the options\n";

typedef struct embed_args {
    const char *model, *pooling, *output, *device, *precision_name;
    int normalize, max_length, cls;
    vkbert_precision precision;
} embed_args;

/* Everything the run owns, released by finish(). */
typedef struct embed_run {
    char **texts, **lines; /* texts points into argv, or is lines (owned) */
    int count, line_count, seq_len, hidden_size;
    tok_ids *tokens;
    int32_t *ids, *types, *mask; /* [count][seq_len], padded */
    float *hidden, *embeddings;
    vkbert_context *ctx;
    vkbert_encoder *encoder;
} embed_run;

static int parse_args(int argc, char **argv, embed_args *a, embed_run *run)
{
    const cli_option options[] = {
        {"model", CLI_STRING, &a->model, 1, 0, 0},
        {"pooling", CLI_STRING, &a->pooling, 0, 0, 0},
        {"normalize", CLI_FLAG, &a->normalize, 0, 0, 0},
        {"max-length", CLI_INT, &a->max_length, 0, 2, 1 << 20},
        {"output", CLI_STRING, &a->output, 0, 0, 0},
        {"device", CLI_STRING, &a->device, 0, 0, 0},
        {"precision", CLI_STRING, &a->precision_name, 0, 0, 0},
    };
    memset(a, 0, sizeof *a);
    a->max_length = 512;
    int code = cli_parse_texts(usage, argc, argv, options, (int)(sizeof options / sizeof *options),
                               &run->texts, &run->count);
    if (code == CLI_CONTINUE) code = cli_precision(usage, a->precision_name, &a->precision);
    if (code != CLI_CONTINUE) return code;
    if (a->pooling && strcmp(a->pooling, "mean") != 0 && strcmp(a->pooling, "cls") != 0)
        return cli_usage_error(usage, "--pooling must be mean or cls, not '%s'", a->pooling);
    a->cls = a->pooling && strcmp(a->pooling, "cls") == 0;
    return CLI_CONTINUE;
}

/* ---- the texts ---- */

static int add_line(embed_run *run, char *line, size_t *capacity)
{
    if ((size_t)run->line_count == *capacity) {
        size_t n = *capacity ? 2 * *capacity : 16;
        char **grown = realloc(run->lines, n * sizeof *grown);
        if (!grown) return -1;
        run->lines = grown;
        *capacity = n;
    }
    run->lines[run->line_count++] = line;
    return 0;
}

static int read_stdin(embed_run *run)
{
    char *line = NULL;
    size_t size = 0, capacity = 0;
    for (ssize_t n; (n = getline(&line, &size, stdin)) >= 0;) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        if (n == 0) continue;
        char *copy = strdup(line);
        if (!copy || add_line(run, copy, &capacity)) return free(copy), free(line), -1;
    }
    free(line);
    free(run->texts);
    run->texts = run->lines;
    run->count = run->line_count;
    return 0;
}

static int load_texts(embed_run *run)
{
    if (run->count == 0 && read_stdin(run)) return cli_error("out of host memory reading stdin");
    if (run->count == 0) return cli_error("no text to embed (none given, stdin empty)");
    return 0;
}

/* ---- tokens, padded to the longest ---- */

static int pad_batch(embed_run *run, int32_t pad_id)
{
    for (int i = 0; i < run->count; i++)
        if (run->tokens[i].count > run->seq_len) run->seq_len = run->tokens[i].count;
    size_t n = (size_t)run->count * (size_t)run->seq_len;
    run->ids = malloc(n * sizeof *run->ids);
    run->types = calloc(n, sizeof *run->types);
    run->mask = calloc(n, sizeof *run->mask);
    if (!run->ids || !run->types || !run->mask) return cli_error("out of host memory");
    for (int i = 0; i < run->count; i++) {
        const tok_ids *t = &run->tokens[i];
        size_t row = (size_t)i * (size_t)run->seq_len;
        for (int j = 0; j < run->seq_len; j++)
            run->ids[row + j] = j < t->count ? t->ids[j] : pad_id;
        memcpy(run->types + row, t->type_ids, (size_t)t->count * sizeof *t->type_ids);
        memcpy(run->mask + row, t->mask, (size_t)t->count * sizeof *t->mask);
    }
    return 0;
}

static int tokenize(const embed_args *a, embed_run *run)
{
    tokenizer *t = NULL;
    if (cli_tokenizer_load(a->model, &t)) return CLI_EXIT_FAILURE;
    int code = 0;
    if (!(run->tokens = calloc((size_t)run->count, sizeof *run->tokens)))
        code = cli_error("out of host memory");
    if (!code) code = cli_tokenize_all(t, run->texts, run->count, a->max_length, run->tokens);
    if (!code) code = pad_batch(run, tok_pad_id(t));
    tok_free(t);
    return code;
}

/* ---- the encoder and the pooling ---- */

static int forward(const embed_args *a, embed_run *run)
{
    if (cli_open(a->device, &run->ctx)) return CLI_EXIT_FAILURE;
    vkbert_encoder_config config = {a->precision};
    if (vkbert_encoder_load_ex(run->ctx, a->model, &config, &run->encoder))
        return cli_api_error(run->ctx, a->model);
    run->hidden_size = vkbert_encoder_hidden_size(run->encoder);
    size_t h = (size_t)run->hidden_size, rows = (size_t)run->count * (size_t)run->seq_len;
    run->hidden = malloc(rows * h * sizeof *run->hidden);
    run->embeddings = calloc((size_t)run->count * h, sizeof *run->embeddings);
    if (!run->hidden || !run->embeddings) return cli_error("out of host memory");
    vkbert_status status =
        a->cls ? vkbert_encoder_forward_host(run->encoder, run->count, run->seq_len, run->ids,
                                             run->types, run->mask, run->hidden, NULL)
               : vkbert_encoder_embed_host(run->encoder, run->count, run->seq_len, run->ids,
                                           run->types, run->mask, a->normalize, run->embeddings);
    if (status) return cli_api_error(run->ctx, "the encoder");
    return 0;
}

static void normalize(float *v, int n)
{
    double sum = 0;
    for (int k = 0; k < n; k++)
        sum += (double)v[k] * v[k];
    double norm = sqrt(sum);
    if (norm > 0)
        for (int k = 0; k < n; k++)
            v[k] = (float)(v[k] / norm);
}

/* [CLS] pooling: each text's first hidden state (mean pooling came from the device). */
static void pool(const embed_args *a, embed_run *run)
{
    size_t h = (size_t)run->hidden_size;
    for (int i = 0; a->cls && i < run->count; i++) {
        float *out = run->embeddings + (size_t)i * h;
        memcpy(out, run->hidden + (size_t)i * run->seq_len * h, h * sizeof *out);
        if (a->normalize) normalize(out, (int)h);
    }
}

/* ---- the output ---- */

static void print_json(const embed_run *run)
{
    fputs("{\"embeddings\": [", stdout);
    for (int i = 0; i < run->count; i++) {
        const float *v = run->embeddings + (size_t)i * run->hidden_size;
        printf("%s[", i ? ", " : "");
        for (int k = 0; k < run->hidden_size; k++)
            printf("%s%.7g", k ? ", " : "", v[k]);
        putchar(']');
    }
    puts("]}");
}

static int write_output(const embed_args *a, const embed_run *run)
{
    char err[1024];
    int64_t shape[2] = {run->count, run->hidden_size};
    if (!a->output) return print_json(run), 0;
    if (npy_save_f32(a->output, 2, shape, run->embeddings, err, sizeof err))
        return cli_error("%s", err);
    return 0;
}

/* Ends the device work first, so that a validation message fails the run before anything is
 * written. */
static int finish(const embed_args *a, embed_run *run, int code)
{
    vkbert_encoder_destroy(run->encoder);
    if (run->ctx) code = cli_close(run->ctx, code);
    if (!code) code = write_output(a, run);
    for (int i = 0; run->tokens && i < run->count; i++)
        tok_ids_free(&run->tokens[i]);
    for (int i = 0; i < run->line_count; i++)
        free(run->lines[i]);
    if (run->texts != run->lines) free(run->texts);
    free(run->lines);
    free(run->tokens);
    free(run->ids);
    free(run->types);
    free(run->mask);
    free(run->hidden);
    free(run->embeddings);
    return code;
}

int cli_embed(int argc, char **argv)
{
    embed_args args;
    embed_run run;
    memset(&run, 0, sizeof run);
    int code = parse_args(argc, argv, &args, &run);
    if (code != CLI_CONTINUE) return free(run.texts), code;
    code = load_texts(&run);
    if (!code) code = tokenize(&args, &run);
    if (!code) code = forward(&args, &run);
    if (!code) pool(&args, &run);
    return finish(&args, &run, code);
}
