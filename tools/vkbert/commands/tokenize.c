/* vkbert tokenize: a model folder's token ids for texts, as JSON, through the public tokenizer. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert tokenize --model DIR [--pair TEXT] [--max-length N | --no-truncate] TEXT...\n"
    "\n"
    "Prints the ids HuggingFace's fast tokenizer gives each TEXT ([CLS] TEXT [SEP], or with\n"
    "--pair [CLS] TEXT [SEP] PAIR [SEP]; no padding) as JSON:\n"
    "{\"input_ids\": [[...], ...], \"token_type_ids\": [[...], ...], \"attention_mask\": [[...], "
    "...]}\n"
    "  --model DIR      folder with tokenizer.json, or vocab.txt (and optionally\n"
    "                   tokenizer_config.json and special_tokens_map.json)\n"
    "  --pair TEXT      the second text of a pair, the same for every TEXT\n"
    "  --max-length N   truncate to N ids (default: the folder's limit, see `vkbert info`)\n"
    "  --no-truncate    keep every token\n"
    "  TEXT             UTF-8 texts, one row each; '--' ends the options\n";

typedef struct tokenize_args {
    const char *model, *pair;
    int max_length, no_truncate;
    char **texts;
    int text_count;
} tokenize_args;

static int parse_args(int argc, char **argv, tokenize_args *a)
{
    memset(a, 0, sizeof *a);
    const cli_option options[] = {
        {"model", CLI_STRING, &a->model, 1, 0, 0},
        {"pair", CLI_STRING, &a->pair, 0, 0, 0},
        {"max-length", CLI_INT, &a->max_length, 0, 2, 1 << 20},
        {"no-truncate", CLI_FLAG, &a->no_truncate, 0, 0, 0},
    };
    int code = cli_parse_texts(usage, argc, argv, options, 4, &a->texts, &a->text_count);
    if (code == CLI_CONTINUE && a->text_count == 0)
        code = cli_usage_error(usage, "no TEXT to tokenize");
    if (code == CLI_CONTINUE && a->no_truncate && a->max_length)
        code = cli_usage_error(usage, "--max-length and --no-truncate contradict each other");
    return code;
}

static void print_field(const char *name, const vkbert_encoding *e, int count, int which)
{
    printf("\"%s\": [", name);
    for (int i = 0; i < count; i++) {
        printf("%s[", i ? ", " : "");
        for (int j = 0; j < e[i].count; j++) {
            int v = which == 0 ? e[i].ids[j] : which == 1 ? e[i].type_ids[j] : 1;
            printf("%s%d", j ? ", " : "", v);
        }
        putchar(']');
    }
    putchar(']');
}

static void print_json(const vkbert_encoding *e, int count)
{
    putchar('{');
    print_field("input_ids", e, count, 0);
    fputs(", ", stdout);
    print_field("token_type_ids", e, count, 1);
    fputs(", ", stdout);
    print_field("attention_mask", e, count, 2);
    puts("}");
}

int cli_tokenize(int argc, char **argv)
{
    tokenize_args a;
    vkbert_tokenizer *t = NULL;
    vkbert_encoding *e = NULL;
    int code = parse_args(argc, argv, &a);
    if (code != CLI_CONTINUE) return free(a.texts), code;
    code = 0;
    if (vkbert_tokenizer_load(a.model, &t)) code = cli_api_error(NULL, NULL);
    if (!code && !(e = calloc((size_t)a.text_count, sizeof *e)))
        code = cli_error("out of host memory");
    int max_length = a.no_truncate ? -1 : a.max_length;
    for (int i = 0; !code && i < a.text_count; i++)
        e[i] = (vkbert_encoding)VKBERT_ENCODING_INIT;
    for (int i = 0; !code && i < a.text_count; i++)
        if (vkbert_tokenizer_encode(t, a.texts[i], a.pair, max_length, &e[i]))
            code = cli_error("text %d: %s", i + 1, vkbert_last_error(NULL));
    if (!code) print_json(e, a.text_count);
    for (int i = 0; e && i < a.text_count; i++)
        vkbert_encoding_free(&e[i]);
    free(e);
    vkbert_tokenizer_destroy(t);
    free(a.texts);
    return code;
}
