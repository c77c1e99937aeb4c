/* vkbert classify: each text's labels with their probabilities, from a sequence classifier
 * folder (BertForSequenceClassification). */
#define _POSIX_C_SOURCE 200809L

#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert classify --model DIR [--query Q] [--json] [--max-length N] [--no-truncate]\n"
    "                       [--device N] [--precision fp32|fp16|int8] [TEXT...]\n"
    "\n"
    "Classifies each TEXT (without TEXT: each non-empty line of stdin) and prints its labels,\n"
    "highest score first: the softmax of the logits for a single-label classifier, the sigmoid of\n"
    "each for one label or problem_type multi_label_classification, the logits for regression\n"
    "(the rule of transformers' text-classification pipeline); a cross-encoder folder's saved\n"
    "activation_fn instead, as CrossEncoder.predict applies it.\n"
    "  --model DIR      a BertForSequenceClassification folder\n"
    "  --query Q        classify each pair (Q, TEXT), as CrossEncoder.predict scores pairs\n"
    "  --json           one list per text of {\"label\": name, \"score\": p}, highest first\n"
    "                   (text-embeddings-inference's /predict)\n"
    "  --max-length N   truncate each text to N ids (default: the folder's limit)\n"
    "  --no-truncate    a text over the limit is an error instead\n"
    "  --device N       device index or name substring\n"
    "  --precision P    fp32 (default), fp16 or int8: dense weights stored as fp16 or Q8_0\n";

typedef struct classify_args {
    cli_model_args m;
    const char *query;
    int json;
} classify_args;

static int parse_args(int argc, char **argv, classify_args *a)
{
    memset(a, 0, sizeof *a);
    const cli_option options[] = {{"query", CLI_STRING, &a->query, 0, 0, 0},
                                  {"json", CLI_FLAG, &a->json, 0, 0, 0}};
    return cli_parse_model(usage, argc, argv, &a->m, options, 2);
}

typedef struct label_score {
    const char *label;
    float score;
    int index;
} label_score;

/* Highest score first, NaN last, ties in input order. */
static int higher_first(const void *x, const void *y)
{
    const label_score *a = x, *b = y;
    int a_nan = isnan(a->score), b_nan = isnan(b->score);
    if (a_nan != b_nan) return a_nan - b_nan;
    if (!a_nan && a->score != b->score) return a->score < b->score ? 1 : -1;
    return a->index - b->index;
}

/* One text's labels, sorted in place. */
static void print_text(const classify_args *a, const char *text, label_score *row, int labels,
                       int first)
{
    qsort(row, (size_t)labels, sizeof *row, higher_first);
    if (!a->json) printf("%s\n", text);
    if (a->json) printf("%s[", first ? "" : ", ");
    for (int j = 0; j < labels; j++) {
        if (a->json) {
            printf("%s{\"label\": ", j ? ", " : "");
            cli_print_json_string(row[j].label);
            fputs(", \"score\": ", stdout);
            cli_print_json_number(row[j].score);
            putchar('}');
        } else
            printf("  %-20s %.7g\n", row[j].label, row[j].score);
    }
    if (a->json) putchar(']');
}

/* Each (query, text) pair tokenized and scored as vkbert_model_classify scores texts. */
static vkbert_status score_pairs(vkbert_model *model, const char *query, const cli_texts *t,
                                 float *scores)
{
    vkbert_encoding *in = calloc((size_t)t->count, sizeof *in);
    vkbert_status status = in ? VKBERT_OK : VKBERT_ERROR_OUT_OF_MEMORY;
    for (int i = 0; !status && i < t->count; i++) {
        in[i] = (vkbert_encoding)VKBERT_ENCODING_INIT;
        status = vkbert_model_encode(model, query, t->texts[i], NULL, &in[i]);
    }
    if (!status) status = vkbert_model_score_inputs(model, in, t->count, 0, scores);
    for (int i = 0; in && i < t->count; i++)
        vkbert_encoding_free(&in[i]);
    free(in);
    return status;
}

static int classify(const classify_args *a, const cli_texts *t, vkbert_context **ctx,
                    label_score **out, int *labels)
{
    vkbert_model *model = NULL;
    float *scores = NULL;
    int code = cli_model_open(a->m.device, a->m.model, &a->m.config, 0, ctx, &model);
    if (!code) code = cli_texts_check_nul(t, model);
    if (!code && (*labels = vkbert_model_labels(model)) == 0)
        code = cli_error("%s: not a sequence classifier (no classifier weights)", a->m.model);
    size_t n = (size_t)t->count * (size_t)*labels;
    if (!code && (!(scores = malloc(n * sizeof *scores)) || !(*out = calloc(n, sizeof **out))))
        code = cli_error("out of host memory");
    if (!code &&
        (a->query ? score_pairs(model, a->query, t, scores)
                  : vkbert_model_classify(model, (const char *const *)t->texts, t->count, scores)))
        code = cli_api_error(*ctx, a->m.model);
    for (size_t i = 0; !code && i < n; i++) {
        int j = (int)(i % (size_t)*labels);
        /* Label names live in the model: copied before it goes. */
        (*out)[i] = (label_score){strdup(vkbert_model_label(model, j)), scores[i], j};
        if (!(*out)[i].label) code = cli_error("out of host memory");
    }
    vkbert_model_destroy(model);
    free(scores);
    return code;
}

int cli_classify(int argc, char **argv)
{
    classify_args a;
    int code = parse_args(argc, argv, &a);
    if (code != CLI_CONTINUE) return free(a.m.texts), code;
    cli_texts t;
    vkbert_context *ctx = NULL;
    label_score *scores = NULL;
    int labels = 0;
    code = cli_texts_load(&t, a.m.texts, a.m.text_count, "text to classify");
    if (!code) code = classify(&a, &t, &ctx, &scores, &labels);
    if (ctx) code = cli_close(ctx, code);
    if (!code && a.json) putchar('[');
    for (int i = 0; !code && i < t.count; i++)
        print_text(&a, t.texts[i], scores + (size_t)i * labels, labels, i == 0);
    if (!code && a.json) puts("]");
    for (size_t i = 0; scores && i < (size_t)t.count * (size_t)labels; i++)
        free((char *)scores[i].label);
    free(scores);
    cli_texts_free(&t);
    return code;
}
