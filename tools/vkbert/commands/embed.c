/* vkbert embed: sentence embeddings of texts with a model folder's own pipeline (prompt,
 * truncation, pooling, Dense modules, normalization), all through the public model API. */
#include "cli.h"
#include "io/npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert embed --model DIR [--pooling MODES] [--normalize | --no-normalize]\n"
    "                    [--prompt-name NAME | --prompt TEXT] [--max-length N] [--no-truncate]\n"
    "                    [--output E.npy] [--device N] [--precision fp32|fp16|int8]\n"
    "                    [--timings T.json] [TEXT...]\n"
    "\n"
    "Embeds each TEXT (without TEXT: each non-empty line of stdin) as\n"
    "SentenceTransformer(DIR).encode(texts) does: the folder's modules.json, pooling, Dense\n"
    "modules, Normalize, max_seq_length and prompts. A folder without modules.json (a plain\n"
    "BertModel) mean-pools the last hidden states over the text's tokens and does not normalize.\n"
    "  --model DIR        a sentence-transformers or HuggingFace BERT folder\n"
    "  --pooling MODES    override the pooling: cls_token, max_tokens, mean_tokens,\n"
    "                     mean_sqrt_len_tokens, weightedmean_tokens, lasttoken (or cls, max,\n"
    "                     mean, weightedmean), several joined by ','\n"
    "  --normalize        divide each embedding by its L2 norm; --no-normalize: never\n"
    "  --prompt-name N    prepend the folder's prompt N (config_sentence_transformers.json);\n"
    "                     by default its default_prompt_name, if any\n"
    "  --prompt TEXT      prepend TEXT\n"
    "  --max-length N     truncate each text to N ids (default: the folder's limit)\n"
    "  --no-truncate      a text over the limit is an error instead\n"
    "  --output E         float32 .npy written with shape [N, dimension]; without it the\n"
    "                     embeddings are printed as JSON {\"embeddings\": [[...], ...]}\n"
    "  --device N         device index or name substring (default: VKBERT_DEVICE, else the best)\n"
    "  --precision P      fp32 (default), fp16 or int8: dense weights stored as fp16 or Q8_0\n"
    "  --timings T        where the run's time went, written as JSON to T ('-': stderr):\n"
    "                     reading the texts, opening the device, loading the model,\n"
    "                     tokenizing, preparing passes, waiting for the device (and its own\n"
    "                     time), reading back, freeing the model, closing the device, writing\n"
    "                     the output, and the command's whole time, in milliseconds\n"
    "  TEXT               UTF-8 texts; '--' ends the options\n";

typedef struct embed_args {
    cli_model_args m;
    const char *pooling, *output, *prompt_name, *prompt, *timings;
    int normalize, no_normalize;
} embed_args;

/* The phases of one run, for --timings: the library's split plus the command's own steps. */
typedef struct embed_clock {
    double start, texts_ms, open_ms, free_ms, close_ms, write_ms;
    vkbert_time_split split;
} embed_clock;

static int parse_args(int argc, char **argv, embed_args *a)
{
    memset(a, 0, sizeof *a);
    const cli_option options[] = {
        {"pooling", CLI_STRING, &a->pooling, 0, 0, 0},
        {"normalize", CLI_FLAG, &a->normalize, 0, 0, 0},
        {"no-normalize", CLI_FLAG, &a->no_normalize, 0, 0, 0},
        {"prompt-name", CLI_STRING, &a->prompt_name, 0, 0, 0},
        {"prompt", CLI_STRING, &a->prompt, 0, 0, 0},
        {"output", CLI_STRING, &a->output, 0, 0, 0},
        {"timings", CLI_STRING, &a->timings, 0, 0, 0},
    };
    int code = cli_parse_model(usage, argc, argv, &a->m, options, 7);
    if (code != CLI_CONTINUE) return code;
    if (a->normalize && a->no_normalize)
        return cli_usage_error(usage, "--normalize and --no-normalize contradict each other");
    if (a->prompt && a->prompt_name)
        return cli_usage_error(usage, "give --prompt or --prompt-name, not both");
    a->m.config.pooling = a->pooling;
    a->m.config.normalize = a->normalize ? 1 : a->no_normalize ? -1 : 0;
    return CLI_CONTINUE;
}

static void print_json(const float *e, int count, int dim)
{
    fputs("{\"embeddings\": [", stdout);
    for (int i = 0; i < count; i++) {
        printf("%s[", i ? ", " : "");
        for (int k = 0; k < dim; k++) {
            if (k) fputs(", ", stdout);
            cli_print_json_number(e[(size_t)i * dim + k]);
        }
        putchar(']');
    }
    puts("]}");
}

static int write_output(const embed_args *a, const float *e, int count, int dim)
{
    char err[1024];
    int64_t shape[2] = {count, dim};
    if (!a->output) return print_json(e, count, dim), 0;
    if (npy_save_f32(a->output, 2, shape, e, err, sizeof err)) return cli_error("%s", err);
    return 0;
}

static int embed(const embed_args *a, const cli_texts *t, vkbert_context **ctx, float **out,
                 int *dim, embed_clock *clock)
{
    vkbert_model *model = NULL;
    double start = plat_now_ms();
    int code =
        cli_model_open(a->m.device, a->m.model, &a->m.config, a->timings != NULL, ctx, &model);
    clock->open_ms = plat_now_ms() - start;
    if (!code) code = cli_texts_check_nul(t, model);
    if (!code) {
        *dim = vkbert_model_dimension(model);
        *out = malloc((size_t)t->count * (size_t)*dim * sizeof **out);
        if (!*out) code = cli_error("out of host memory");
    }
    vkbert_embed_options options = VKBERT_EMBED_OPTIONS_INIT;
    options.prompt_name = a->prompt_name;
    options.prompt = a->prompt;
    if (!code && vkbert_model_embed(model, (const char *const *)t->texts, t->count, &options, *out))
        code = cli_api_error(*ctx, a->m.model);
    if (!code && vkbert_model_time_split(model, &clock->split)) code = cli_api_error(*ctx, NULL);
    start = plat_now_ms();
    vkbert_model_destroy(model);
    clock->free_ms = plat_now_ms() - start;
    return code;
}

static int write_timings(const char *path, const embed_clock *c, int count)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stderr;
    if (!f) return cli_error("cannot write %s", path);
    const vkbert_time_split *s = &c->split;
    fprintf(f,
            "{\"texts\": %d, \"read_texts_ms\": %.3f, \"open_ms\": %.3f, \"context_ms\": %.3f, "
            "\"load_ms\": %.3f, \"tokenize_ms\": %.3f, \"prepare_ms\": %.3f, \"wait_ms\": %.3f, "
            "\"gpu_ms\": %.3f, \"read_ms\": %.3f, \"passes\": %llu, \"free_ms\": %.3f, "
            "\"close_ms\": %.3f, "
            "\"write_ms\": %.3f, \"command_ms\": %.3f}\n",
            count, c->texts_ms, c->open_ms, c->open_ms - s->load_ms, s->load_ms, s->tokenize_ms,
            s->prepare_ms, s->wait_ms, s->gpu_ms, s->read_ms, (unsigned long long)s->passes,
            c->free_ms, c->close_ms, c->write_ms, plat_now_ms() - c->start);
    int failed = ferror(f);
    if (f != stderr) failed |= fclose(f) != 0;
    return failed ? cli_error("cannot write %s", path) : 0;
}

int cli_embed(int argc, char **argv)
{
    embed_args a;
    int code = parse_args(argc, argv, &a);
    if (code != CLI_CONTINUE) return free(a.m.texts), code;
    cli_texts t;
    vkbert_context *ctx = NULL;
    float *embeddings = NULL;
    int dim = 0;
    embed_clock clock = {.start = plat_now_ms(), .split = VKBERT_TIME_SPLIT_INIT};
    code = cli_texts_load(&t, a.m.texts, a.m.text_count, "text to embed");
    clock.texts_ms = plat_now_ms() - clock.start;
    if (!code) code = embed(&a, &t, &ctx, &embeddings, &dim, &clock);
    /* The device work ends first, so that a validation message fails the run before anything
     * is written. */
    double step = plat_now_ms();
    if (ctx) code = cli_close(ctx, code);
    clock.close_ms = plat_now_ms() - step;
    step = plat_now_ms();
    if (!code) code = write_output(&a, embeddings, t.count, dim);
    clock.write_ms = plat_now_ms() - step;
    if (!code && a.timings) code = write_timings(a.timings, &clock, t.count);
    free(embeddings);
    cli_texts_free(&t);
    return code;
}
