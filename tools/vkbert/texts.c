/* What the text commands share: TEXT arguments or stdin lines, and a model on a new context. */

#include "cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int add_line(cli_texts *t, char *line, size_t *capacity)
{
    if ((size_t)t->line_count == *capacity) {
        size_t n = *capacity ? 2 * *capacity : 16;
        char **grown = realloc(t->lines, n * sizeof *grown);
        if (!grown) return -1;
        t->lines = grown;
        *capacity = n;
    }
    t->lines[t->line_count++] = line;
    return 0;
}

/* The next line of `in` without its newline, malloc'd, *n its length: a NUL byte is part of
 * it. NULL at the end of the input, or out of memory (*failed). Standard C's getc: getline is
 * POSIX only. */
static char *read_line(FILE *in, size_t *n, int *failed)
{
    size_t size = 256;
    char *line = malloc(size);
    int c = EOF;
    *n = 0;
    while (line && (c = getc(in)) != EOF && c != '\n') {
        if (*n + 1 == size) {
            char *grown = realloc(line, 2 * size);
            if (!grown) free(line);
            line = grown, size *= 2;
        }
        if (line) line[(*n)++] = (char)c;
    }
    *failed = !line;
    if (line && c == EOF && *n == 0) free(line), line = NULL;
    if (line) line[*n] = 0;
    return line;
}

/* Drops the NUL bytes of s[0..n); returns how many are left. */
static size_t drop_nuls(char *s, size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i]) s[kept++] = s[i];
    s[kept] = 0;
    return kept;
}

static int read_stdin(cli_texts *t)
{
    size_t capacity = 0, n;
    int failed = 0;
    for (char *line; (line = read_line(stdin, &n, &failed));) {
        while (n > 0 && line[n - 1] == '\r')
            line[--n] = 0;
        t->lines_read++;
        /* kept for now: whether the model's tokenizer drops NULs is known once it is loaded */
        if (drop_nuls(line, n) != n && !t->nul_line) t->nul_line = t->lines_read;
        if (n > 0 && add_line(t, line, &capacity)) failed = 1;
        if (n == 0 || failed) free(line);
        if (failed) return -1;
    }
    if (failed) return -1;
    free(t->texts);
    t->texts = t->lines;
    t->count = t->line_count;
    return 0;
}

int cli_texts_load(cli_texts *t, char **given, int count, const char *what)
{
    memset(t, 0, sizeof *t);
    t->texts = given;
    t->count = count;
    if (t->count == 0 && read_stdin(t)) return cli_error("out of host memory reading stdin");
    if (t->count == 0) return cli_error("no %s (none given, stdin empty)", what);
    return 0;
}

void cli_texts_free(cli_texts *t)
{
    for (int i = 0; i < t->line_count; i++)
        free(t->lines[i]);
    if (t->texts != t->lines) free(t->texts);
    free(t->lines);
    memset(t, 0, sizeof *t);
}

int cli_model_drops_nul(vkbert_model *model)
{
    char *json = NULL;
    if (vkbert_model_describe(model, &json) != VKBERT_OK) return 0;
    cJSON *root = cJSON_Parse(json);
    vkbert_free(json);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "tokenizer");
    int drops = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "normalizer")) &&
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "clean_text"));
    cJSON_Delete(root);
    return drops;
}

int cli_texts_check_nul(const cli_texts *t, vkbert_model *model)
{
    if (!t->nul_line || cli_model_drops_nul(model)) return 0;
    return cli_error("stdin line %d holds a NUL byte, which this model's tokenizer keeps (its "
                     "normalizer does not clean text): not supported",
                     t->nul_line);
}

int cli_model_open(const char *device, const char *model_dir, const vkbert_model_config *config,
                   int timestamps, vkbert_context **ctx, vkbert_model **model)
{
    *model = NULL;
    if (cli_open(device, timestamps, ctx)) return CLI_EXIT_FAILURE;
    if (vkbert_model_load(*ctx, model_dir, config, model)) return cli_api_error(*ctx, model_dir);
    return 0;
}

int cli_parse_model(const char *usage, int argc, char **argv, cli_model_args *a,
                    const cli_option *extra, int extra_count)
{
    memset(a, 0, sizeof *a);
    cli_option options[16] = {
        {"model", CLI_STRING, &a->model, 1, 0, 0},
        {"max-length", CLI_INT, &a->max_length, 0, 2, 1 << 20},
        {"no-truncate", CLI_FLAG, &a->no_truncate, 0, 0, 0},
        {"device", CLI_STRING, &a->device, 0, 0, 0},
        {"precision", CLI_STRING, &a->precision_name, 0, 0, 0},
    };
    int common = 5;
    if (extra_count > 16 - common) return cli_error("internal: too many options");
    memcpy(options + common, extra, (size_t)extra_count * sizeof *extra);
    int code = cli_parse_texts(usage, argc, argv, options, common + extra_count, &a->texts,
                               &a->text_count);
    a->config.struct_size = sizeof a->config;
    if (code == CLI_CONTINUE) code = cli_precision(usage, a->precision_name, &a->config.precision);
    if (code == CLI_CONTINUE && a->max_length && a->no_truncate)
        code = cli_usage_error(usage, "--max-length and --no-truncate contradict each other");
    a->config.max_length = a->max_length;
    a->config.no_truncate = a->no_truncate;
    return code;
}
