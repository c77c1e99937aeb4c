/* vkbert tokenize: a BERT model's WordPiece ids for texts, as JSON. Also the text helpers
 * that embed shares (declared in cli.h). */
#include "cli.h"
#include "io/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert tokenize --model DIR [--max-length N] TEXT...\n"
    "\n"
    "Prints the ids BertTokenizerFast gives each TEXT ([CLS] TEXT [SEP], no padding) as JSON:\n"
    "{\"input_ids\": [[...], ...], \"token_type_ids\": [[...], ...], \"attention_mask\": [[...], "
    "...]}\n"
    "  --model DIR      folder with tokenizer.json or vocab.txt (and optionally\n"
    "                   tokenizer_config.json, whose do_lower_case defaults to true)\n"
    "  --max-length N   truncate each text to N ids, 2 <= N (default 512)\n"
    "  TEXT             UTF-8 texts, one row each; '--' ends the options\n";

/* ---- the shared helpers ---- */

/* Whether argv[i] is an option whose value is the next argument. */
static int takes_value(const char *arg, const cli_option *options, int count)
{
    if (strncmp(arg, "--", 2) != 0 || strchr(arg, '=')) return 0;
    for (int i = 0; i < count; i++)
        if (strcmp(arg + 2, options[i].name) == 0) return options[i].kind != CLI_FLAG;
    return 0;
}

static int is_option(const char *arg)
{
    return (strncmp(arg, "--", 2) == 0 && arg[2]) || strcmp(arg, "-h") == 0;
}

int cli_parse_texts(const char *usage_text, int argc, char **argv, const cli_option *options,
                    int count, char ***texts, int *text_count)
{
    char **opts = calloc((size_t)argc + 1, sizeof *opts);
    *texts = calloc((size_t)argc + 1, sizeof **texts);
    *text_count = 0;
    if (!opts || !*texts) {
        free(opts);
        return cli_error("out of host memory");
    }
    int n = 0, i = 1;
    opts[n++] = argv[0];
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (!is_option(argv[i])) {
            (*texts)[(*text_count)++] = argv[i];
            continue;
        }
        opts[n++] = argv[i];
        if (takes_value(argv[i], options, count) && i + 1 < argc) opts[n++] = argv[++i];
    }
    for (i++; i < argc; i++)
        (*texts)[(*text_count)++] = argv[i];
    int code = cli_parse(usage_text, n, opts, options, count);
    free(opts);
    return code;
}

int cli_tokenizer_load(const char *model_dir, struct tokenizer **out)
{
    char err[1024];
    *out = NULL;
    if (tok_load_dir(model_dir, out, err, sizeof err)) return cli_error("%s", err);
    return 0;
}

int cli_tokenize_all(const struct tokenizer *t, char *const *texts, int count, int max_len,
                     struct tok_ids *out)
{
    char err[1024];
    for (int i = 0; i < count; i++)
        if (tok_encode(t, texts[i], NULL, max_len, &out[i], err, sizeof err))
            return cli_error("text %d: %s", i + 1, err);
    return 0;
}

/* ---- the command ---- */

typedef struct tokenize_args {
    const char *model;
    int max_length;
    char **texts;
    int text_count;
} tokenize_args;

static int parse_args(int argc, char **argv, tokenize_args *a)
{
    memset(a, 0, sizeof *a);
    a->max_length = 512;
    const cli_option options[] = {
        {"model", CLI_STRING, &a->model, 1, 0, 0},
        {"max-length", CLI_INT, &a->max_length, 0, 2, 1 << 20},
    };
    int code = cli_parse_texts(usage, argc, argv, options, 2, &a->texts, &a->text_count);
    if (code == CLI_CONTINUE && a->text_count == 0)
        code = cli_usage_error(usage, "no TEXT to tokenize");
    return code;
}

static void print_field(const char *name, const tok_ids *ids, int count, int which)
{
    printf("\"%s\": [", name);
    for (int i = 0; i < count; i++) {
        const int32_t *v = which == 0 ? ids[i].ids : which == 1 ? ids[i].type_ids : ids[i].mask;
        printf("%s[", i ? ", " : "");
        for (int j = 0; j < ids[i].count; j++)
            printf("%s%d", j ? ", " : "", (int)v[j]);
        putchar(']');
    }
    putchar(']');
}

static void print_json(const tok_ids *ids, int count)
{
    putchar('{');
    print_field("input_ids", ids, count, 0);
    fputs(", ", stdout);
    print_field("token_type_ids", ids, count, 1);
    fputs(", ", stdout);
    print_field("attention_mask", ids, count, 2);
    puts("}");
}

int cli_tokenize(int argc, char **argv)
{
    tokenize_args a;
    tokenizer *t = NULL;
    tok_ids *ids = NULL;
    int code = parse_args(argc, argv, &a);
    if (code != CLI_CONTINUE) return free(a.texts), code;
    code = cli_tokenizer_load(a.model, &t);
    if (!code && !(ids = calloc((size_t)a.text_count, sizeof *ids)))
        code = cli_error("out of host memory");
    if (!code) code = cli_tokenize_all(t, a.texts, a.text_count, a.max_length, ids);
    if (!code) print_json(ids, a.text_count);
    for (int i = 0; ids && i < a.text_count; i++)
        tok_ids_free(&ids[i]);
    free(ids);
    tok_free(t);
    free(a.texts);
    return code;
}
