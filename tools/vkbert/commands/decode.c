/* vkbert decode: token ids back to text through a model folder's tokenizer (its decoder), as
 * tokenizers' Tokenizer.decode, printed as one JSON string. */
#include "cli.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert decode --model DIR [--keep-special-tokens] ID...\n"
    "\n"
    "Prints the text of the token ids, as HuggingFace tokenizers' Tokenizer.decode gives it\n"
    "(the tokenizer.json's decoder; for a vocab.txt folder, WordPiece's), as one JSON string.\n"
    "  --model DIR              folder with tokenizer.json, or vocab.txt\n"
    "  --keep-special-tokens    keep [CLS], [SEP], <s> and the like (default: left out, as\n"
    "                           decode(ids, skip_special_tokens=True))\n"
    "  ID                       token ids, decimal; '--' ends the options\n";

/* A decimal int32, the whole argument. */
static int parse_id(const char *arg, int32_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (errno || end == arg || *end || v < INT32_MIN || v > INT32_MAX) return -1;
    *out = (int32_t)v;
    return 0;
}

static int parse_ids(char **args, int count, int32_t *ids)
{
    for (int i = 0; i < count; i++)
        if (parse_id(args[i], &ids[i]))
            return cli_usage_error(usage, "ID %d is \"%s\", not a token id", i + 1, args[i]);
    return CLI_CONTINUE;
}

int cli_decode(int argc, char **argv)
{
    const char *model = NULL;
    int keep = 0, count = 0;
    char **args = NULL;
    const cli_option options[] = {
        {"model", CLI_STRING, &model, 1, 0, 0},
        {"keep-special-tokens", CLI_FLAG, &keep, 0, 0, 0},
    };
    int code = cli_parse_texts(usage, argc, argv, options, 2, &args, &count);
    if (code == CLI_CONTINUE && count == 0) code = cli_usage_error(usage, "no ID to decode");
    int32_t *ids = code == CLI_CONTINUE ? malloc((size_t)count * sizeof *ids) : NULL;
    if (code == CLI_CONTINUE && !ids) code = cli_error("out of host memory");
    if (code == CLI_CONTINUE) code = parse_ids(args, count, ids);
    free(args);
    if (code != CLI_CONTINUE) return free(ids), code;
    vkbert_tokenizer *t = NULL;
    char *text = NULL;
    code = 0;
    if (vkbert_tokenizer_load(model, &t)) code = cli_api_error(NULL, NULL);
    if (!code && vkbert_tokenizer_decode(t, ids, count, !keep, &text))
        code = cli_api_error(NULL, NULL);
    if (!code) {
        cli_print_json_string(text);
        putchar('\n');
    }
    vkbert_free(text);
    vkbert_tokenizer_destroy(t);
    free(ids);
    return code;
}
