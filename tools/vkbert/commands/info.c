/* vkbert info: what vkbert read in a model folder and what it will do, from the model's own
 * description (vkbert_model_describe), as text or as that JSON. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert info --model DIR [--json] [--device N] [--precision fp32|fp16|int8]\n"
    "\n"
    "Loads the folder as `vkbert embed` would and prints what it read and will do: the\n"
    "architecture and sizes, the tokenizer (source, options, special tokens, its components:\n"
    "model, normalizer, pre-tokenizer, post-processor, decoder), the maximum length, pooling,\n"
    "Dense modules, normalization, prompts, labels, the parameter count and the precision.\n"
    "  --model DIR      a sentence-transformers or HuggingFace BERT folder\n"
    "  --json           print it as one JSON object\n"
    "  --device N       device index or name substring\n"
    "  --precision P    fp32 (default), fp16 or int8: dense weights stored as fp16 or Q8_0\n";

/* A scalar, or a list of scalars joined by ", ", or an object of scalars as key=value;
 * strings inside a list or object are quoted, so that a prompt's spaces show. */
static void print_value(const cJSON *v, int quoted)
{
    if (cJSON_IsString(v) && quoted)
        cli_print_json_string(v->valuestring);
    else if (cJSON_IsString(v))
        fputs(v->valuestring, stdout);
    else if (cJSON_IsBool(v))
        fputs(cJSON_IsTrue(v) ? "yes" : "no", stdout);
    else if (cJSON_IsNull(v))
        fputs("none", stdout);
    else if (cJSON_IsNumber(v))
        printf("%.15g", v->valuedouble);
    else if (!v->child)
        fputs("none", stdout);
    for (const cJSON *c = v->child; c && (cJSON_IsArray(v) || cJSON_IsObject(v)); c = c->next) {
        if (c != v->child) fputs(", ", stdout);
        if (c->string && cJSON_IsObject(v)) printf("%s=", c->string);
        if (cJSON_IsObject(c)) putchar('(');
        print_value(c, 1);
        if (cJSON_IsObject(c)) putchar(')');
    }
}

static void print_text(const cJSON *root, int depth)
{
    for (const cJSON *item = root->child; item; item = item->next) {
        printf("%*s%-28s ", depth * 2, "", item->string);
        if (cJSON_IsObject(item) && item->child && depth == 0 &&
            strcmp(item->string, "prompts") != 0) {
            putchar('\n');
            print_text(item, depth + 1);
            continue;
        }
        print_value(item, 0);
        putchar('\n');
    }
}

int cli_info(int argc, char **argv)
{
    const char *model_dir = NULL, *device = NULL, *precision_name = NULL;
    int json = 0;
    const cli_option options[] = {
        {"model", CLI_STRING, &model_dir, 1, 0, 0},
        {"json", CLI_FLAG, &json, 0, 0, 0},
        {"device", CLI_STRING, &device, 0, 0, 0},
        {"precision", CLI_STRING, &precision_name, 0, 0, 0},
    };
    vkbert_model_config config = VKBERT_MODEL_CONFIG_INIT;
    int code = cli_parse(usage, argc, argv, options, 4);
    if (code == CLI_CONTINUE) code = cli_precision(usage, precision_name, &config.precision);
    if (code != CLI_CONTINUE) return code;
    vkbert_context *ctx = NULL;
    vkbert_model *model = NULL;
    char *text = NULL;
    code = cli_model_open(device, model_dir, &config, 0, &ctx, &model);
    if (!code && vkbert_model_describe(model, &text)) code = cli_api_error(ctx, model_dir);
    vkbert_model_destroy(model);
    if (ctx) code = cli_close(ctx, code);
    cJSON *root = !code && !json ? cJSON_Parse(text) : NULL;
    if (!code && json) puts(text);
    if (!code && !json && root) print_text(root, 0);
    if (!code && !json && !root) code = cli_error("the model's description is not JSON");
    cJSON_Delete(root);
    vkbert_free(text);
    return code;
}
