/* The vkbert command-line tool: what the subcommands share (option parsing, messages, the
 * context's lifetime, host weights). Each subcommand lives in its own file. */
#ifndef VKBERT_CLI_H
#define VKBERT_CLI_H

#include "platform/platform.h"
#include "vkbert.h"

#include <stddef.h>
#include <stdint.h>

/* Exit codes. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAILURE 1 /* a runtime failure: a bad file, a library error */
#define CLI_EXIT_USAGE 2   /* an unknown command or option, a missing or malformed value */

/* ---- subcommands: argv[0] is the subcommand's name ---- */

int cli_devices(int argc, char **argv);
int cli_attention(int argc, char **argv);
int cli_demo(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_tune(int argc, char **argv);
int cli_encode(int argc, char **argv);
int cli_tokenize(int argc, char **argv);
int cli_decode(int argc, char **argv);
int cli_embed(int argc, char **argv);
int cli_rerank(int argc, char **argv);
int cli_classify(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_serve(int argc, char **argv);

/* ---- options ---- */

typedef enum cli_kind {
    CLI_FLAG,   /* int *, set to 1 */
    CLI_STRING, /* const char ** */
    CLI_INT,    /* int *, within [min, max] */
    CLI_U64,    /* uint64_t * */
    CLI_REAL,   /* double *, within [min, max] */
} cli_kind;

typedef struct cli_option {
    const char *name; /* without the leading "--" */
    cli_kind kind;
    void *value;
    int required;
    double min, max; /* CLI_INT and CLI_REAL only */
} cli_option;

/* The result of cli_parse when the command should go on. */
#define CLI_CONTINUE (-1)

/* Parses argv[1..argc) as "--name value", "--name=value" or "--flag". Returns CLI_CONTINUE,
 * or the exit code to return: 0 after printing `usage` to stdout for --help, 2 after printing
 * a message and `usage` to stderr. */
int cli_parse(const char *usage, int argc, char **argv, const cli_option *options, int count);

/* Prints a usage error and `usage` to stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *usage, const char *fmt, ...) PLAT_PRINTF(2, 3);

/* "fp32" or "fp16" (NULL: fp32) into *out; returns CLI_CONTINUE, or a usage error. */
int cli_precision(const char *usage, const char *name, vkbert_precision *out);

/* ---- texts, shared by the text commands (texts.c) ---- */

/* cli_parse with positional TEXT arguments (anything not an option or its value; all after a
 * lone "--"): *texts (free() it) points into argv. */
int cli_parse_texts(const char *usage, int argc, char **argv, const cli_option *options, int count,
                    char ***texts, int *text_count);

/* The texts of a command: those given, or else each non-empty line of stdin. */
typedef struct cli_texts {
    char **texts; /* `count`; the given ones point into argv */
    int count;
    char **lines; /* owned, read from stdin, their NUL bytes dropped */
    int line_count;
    int lines_read; /* empty ones too */
    int nul_line;   /* the first stdin line (from 1) that held a NUL byte; 0: none */
} cli_texts;

/* Takes `given` (from cli_parse_texts; owned from now on) or reads stdin when count is 0;
 * prints the problem and returns CLI_EXIT_FAILURE when there is no text. */
int cli_texts_load(cli_texts *t, char **given, int count, const char *what);
void cli_texts_free(cli_texts *t);
/* 0 unless a stdin line held a NUL byte that the model's tokenizer would keep: then prints
 * that the line is not supported and returns CLI_EXIT_FAILURE. */
int cli_texts_check_nul(const cli_texts *t, vkbert_model *model);

/* What every model command takes (--model, --max-length, --no-truncate, --device,
 * --precision) and its TEXT arguments. */
typedef struct cli_model_args {
    const char *model, *device, *precision_name;
    int max_length, no_truncate;
    vkbert_model_config config; /* precision, max_length and no_truncate set from the above */
    char **texts;               /* free() it; points into argv */
    int text_count;
} cli_model_args;

/* cli_parse_texts with the common options followed by the command's own `extra` ones. */
int cli_parse_model(const char *usage, int argc, char **argv, cli_model_args *a,
                    const cli_option *extra, int extra_count);

/* Loads a model folder on a new context (with GPU timestamps when `timestamps`); prints the
 * problem on failure. */
int cli_model_open(const char *device, const char *model_dir, const vkbert_model_config *config,
                   int timestamps, vkbert_context **ctx, vkbert_model **model);

/* Whether the model's tokenizer drops U+0000 (a normalizer with clean_text, as tokenizers'
 * BertNormalizer): then a text without its NULs gives the same tokens. */
int cli_model_drops_nul(vkbert_model *model);

/* ---- start-up (startup.c) ---- */

typedef struct cli_startup {
    int measured;
    double cold_context_ms, cold_pipelines_ms, warm_context_ms, warm_pipelines_ms;
} cli_startup;

/* Times context and pipeline creation with an empty cache directory, then again. */
int cli_measure_startup(const char *device, cli_startup *out);

/* ---- messages ---- */

/* Prints "vkbert: <message>" to stderr; returns CLI_EXIT_FAILURE. */
int cli_error(const char *fmt, ...) PLAT_PRINTF(1, 2);

/* Prints "vkbert: <what>: <vkbert_last_error(ctx)>" (no "<what>: " when what is NULL);
 * returns CLI_EXIT_FAILURE. */
int cli_api_error(const vkbert_context *ctx, const char *what);

/* Prints `text` to stdout as a JSON string, quoted and escaped. */
void cli_print_json_string(const char *text);

/* Prints a number to stdout as JSON: %.7g, or null when it is not finite. */
void cli_print_json_number(double value);

/* Writes "[d0, d1, ...]" into out. */
void cli_format_shape(char *out, size_t size, int ndim, const int64_t *shape);

/* ---- the context ---- */

/* Creates a context on `device` (NULL: the default), recording GPU timestamps when
 * `timestamps`. Prints the error and returns CLI_EXIT_FAILURE on failure, else 0. */
int cli_open(const char *device, int timestamps, vkbert_context **ctx);

/* Fails a successful run when the validation layer reported anything, then destroys the
 * context. Returns the final exit code. */
int cli_close(vkbert_context *ctx, int code);

/* ---- host weights of one attention layer ---- */

enum { CLI_QW, CLI_QB, CLI_KW, CLI_KB, CLI_VW, CLI_VB, CLI_OW, CLI_OB, CLI_TENSORS };

typedef struct cli_weights {
    int embed_dim;
    float *tensor[CLI_TENSORS]; /* weights [E][E], biases [E], in the order above */
} cli_weights;

/* The safetensors names, without a prefix, in the order above. */
extern const char *const cli_weight_names[CLI_TENSORS];

/* Allocates the tensors for embed size `e`; -1 when out of memory (nothing left allocated). */
int cli_weights_alloc(cli_weights *w, int e);
void cli_weights_free(cli_weights *w);

/* Reads a layer from a safetensors file; prints the problem and returns CLI_EXIT_FAILURE on
 * failure, else 0. */
int cli_weights_load(const char *path, cli_weights *w);

vkbert_attention_weights cli_weights_view(const cli_weights *w);

#endif
