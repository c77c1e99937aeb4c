/* vkbert tokenize: a model folder's token ids for texts, as JSON, through the public tokenizer. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert tokenize --model DIR [--pair TEXT]\n"
    "                       [--max-length N | --no-truncate | --file-rules] TEXT...\n"
    "\n"
    "Prints what HuggingFace's fast tokenizer gives each TEXT ([CLS] TEXT [SEP], or with\n"
    "--pair [CLS] TEXT [SEP] PAIR [SEP]; no padding but the file's with --file-rules) as\n"
    "JSON, one row per TEXT:\n"
    "{\"input_ids\": [[...], ...], \"token_type_ids\": [[...], ...], \"attention_mask\": [[...], "
    "...],\n"
    " \"special_tokens_mask\": [[...], ...], \"offsets\": [[[start, stop], ...], ...]}\n"
    "special_tokens_mask is 1 for the tokens the template (or padding) added; offsets are each\n"
    "token's [start, stop) in characters of the text it came from, [0, 0] for added ones.\n"
    "  --model DIR      folder with tokenizer.json, or vocab.txt (and optionally\n"
    "                   tokenizer_config.json and special_tokens_map.json)\n"
    "  --pair TEXT      the second text of a pair, the same for every TEXT\n"
    "  --max-length N   truncate to N ids (default: the folder's limit, see `vkbert info`)\n"
    "  --no-truncate    keep every token\n"
    "  --file-rules     the tokenizer.json's own truncation and padding sections, as\n"
    "                   tokenizers' Tokenizer.from_file(path).encode applies them\n"
    "  TEXT             UTF-8 texts, one row each; '--' ends the options\n";

typedef struct tokenize_args {
    const char *model, *pair;
    int max_length, no_truncate, file_rules;
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
        {"file-rules", CLI_FLAG, &a->file_rules, 0, 0, 0},
    };
    int code = cli_parse_texts(usage, argc, argv, options, 5, &a->texts, &a->text_count);
    if (code == CLI_CONTINUE && a->text_count == 0)
        code = cli_usage_error(usage, "no TEXT to tokenize");
    if (code == CLI_CONTINUE && (a->no_truncate != 0) + (a->max_length != 0) + a->file_rules > 1)
        code = cli_usage_error(usage,
                               "--max-length, --no-truncate and --file-rules exclude each other");
    return code;
}

/* One value per token; an array the library left NULL (a hand-made encoding's masks) reads as
 * its default: type 0, attention 1. */
static int token_value(const vkbert_encoding *e, int which, int j)
{
    switch (which) {
    case 0:
        return e->ids[j];
    case 1:
        return e->type_ids ? e->type_ids[j] : 0;
    case 2:
        return e->attention_mask ? e->attention_mask[j] : 1;
    default:
        return e->special_tokens_mask[j];
    }
}

static void print_field(const char *name, const vkbert_encoding *e, int count, int which)
{
    printf("\"%s\": [", name);
    for (int i = 0; i < count; i++) {
        printf("%s[", i ? ", " : "");
        for (int j = 0; j < e[i].count; j++)
            printf("%s%d", j ? ", " : "", token_value(&e[i], which, j));
        putchar(']');
    }
    putchar(']');
}

static void print_offsets(const vkbert_encoding *e, int count)
{
    fputs("\"offsets\": [", stdout);
    for (int i = 0; i < count; i++) {
        printf("%s[", i ? ", " : "");
        for (int j = 0; j < e[i].count; j++)
            printf("%s[%d, %d]", j ? ", " : "", e[i].offsets[2 * j], e[i].offsets[2 * j + 1]);
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
    fputs(", ", stdout);
    print_field("special_tokens_mask", e, count, 3);
    fputs(", ", stdout);
    print_offsets(e, count);
    puts("}");
}

static int encode_one(vkbert_tokenizer *t, const char *text, const char *pair, int max_length,
                      int index, vkbert_encoding *e)
{
    *e = (vkbert_encoding)VKBERT_ENCODING_INIT;
    if (vkbert_tokenizer_encode(t, text, pair, max_length, e))
        return cli_error("text %d: %s", index + 1, vkbert_last_error(NULL));
    if (e->count > 0 && (!e->special_tokens_mask || !e->offsets))
        return cli_error("text %d: the tokenizer gave no special-tokens mask or offsets",
                         index + 1);
    return 0;
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
    int max_length = a.file_rules ? VKBERT_TOKENIZER_FILE_RULES : a.no_truncate ? -1 : a.max_length;
    for (int i = 0; !code && i < a.text_count; i++)
        e[i] = (vkbert_encoding)VKBERT_ENCODING_INIT;
    for (int i = 0; !code && i < a.text_count; i++)
        code = encode_one(t, a.texts[i], a.pair, max_length, i, &e[i]);
    if (!code) print_json(e, a.text_count);
    for (int i = 0; e && i < a.text_count; i++)
        vkbert_encoding_free(&e[i]);
    free(e);
    vkbert_tokenizer_destroy(t);
    free(a.texts);
    return code;
}
