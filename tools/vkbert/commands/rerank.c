/* vkbert rerank: scores documents against a query with a cross-encoder folder
 * (BertForSequenceClassification, one label), highest first. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: vkbert rerank --model DIR --query Q [--raw-scores] [--json] [--max-length N]\n"
    "                     [--no-truncate] [--device N] [--precision fp32|fp16|int8] [DOC...]\n"
    "\n"
    "Scores each (Q, DOC) pair in one batch (without DOC: each non-empty line of stdin) and\n"
    "prints the documents sorted by score, highest first, one \"score<TAB>index<TAB>DOC\" line\n"
    "each. The score is the logit through the folder's activation_fn (a cross-encoder folder's,\n"
    "else the sigmoid), as sentence-transformers' CrossEncoder gives.\n"
    "  --model DIR      a BertForSequenceClassification folder with one label\n"
    "  --query Q        the query, the first text of every pair\n"
    "  --raw-scores     print the logits instead\n"
    "  --json           print [{\"index\": i, \"score\": s}, ...] (text-embeddings-inference's\n"
    "                   /rerank), highest first\n"
    "  --max-length N   truncate each pair to N ids, longest first (default: the folder's limit)\n"
    "  --no-truncate    a pair over the limit is an error instead\n"
    "  --device N       device index or name substring\n"
    "  --precision P    fp32 (default), fp16 or int8: dense weights stored as fp16 or Q8_0\n";

typedef struct rerank_args {
    cli_model_args m;
    const char *query;
    int raw_scores, json;
} rerank_args;

static int parse_args(int argc, char **argv, rerank_args *a)
{
    memset(a, 0, sizeof *a);
    const cli_option options[] = {
        {"query", CLI_STRING, &a->query, 1, 0, 0},
        {"raw-scores", CLI_FLAG, &a->raw_scores, 0, 0, 0},
        {"json", CLI_FLAG, &a->json, 0, 0, 0},
    };
    return cli_parse_model(usage, argc, argv, &a->m, options, 3);
}

typedef struct ranked {
    float score;
    int index;
} ranked;

/* Highest score first, NaN last, ties in input order. */
static int higher_first(const void *x, const void *y)
{
    const ranked *a = x, *b = y;
    int a_nan = isnan(a->score), b_nan = isnan(b->score);
    if (a_nan != b_nan) return a_nan - b_nan;
    if (!a_nan && a->score != b->score) return a->score < b->score ? 1 : -1;
    return a->index - b->index;
}

static void print_ranked(const rerank_args *a, const cli_texts *t, const ranked *r)
{
    if (a->json) putchar('[');
    for (int i = 0; i < t->count; i++) {
        if (a->json) {
            printf("%s{\"index\": %d, \"score\": ", i ? ", " : "", r[i].index);
            cli_print_json_number(r[i].score);
            putchar('}');
        } else
            printf("%.7g\t%d\t%s\n", r[i].score, r[i].index, t->texts[r[i].index]);
    }
    if (a->json) puts("]");
}

static int rerank(const rerank_args *a, const cli_texts *t, vkbert_context **ctx, ranked *r)
{
    vkbert_model *model = NULL;
    float *scores = malloc((size_t)t->count * sizeof *scores);
    int code = scores ? 0 : cli_error("out of host memory");
    if (!code) code = cli_model_open(a->m.device, a->m.model, &a->m.config, 0, ctx, &model);
    if (!code) code = cli_texts_check_nul(t, model);
    if (!code && vkbert_model_rerank(model, a->query, (const char *const *)t->texts, t->count,
                                     a->raw_scores, scores))
        code = cli_api_error(*ctx, a->m.model);
    for (int i = 0; !code && i < t->count; i++)
        r[i] = (ranked){scores[i], i};
    if (!code) qsort(r, (size_t)t->count, sizeof *r, higher_first);
    vkbert_model_destroy(model);
    free(scores);
    return code;
}

int cli_rerank(int argc, char **argv)
{
    rerank_args a;
    int code = parse_args(argc, argv, &a);
    if (code != CLI_CONTINUE) return free(a.m.texts), code;
    cli_texts t;
    vkbert_context *ctx = NULL;
    ranked *r = NULL;
    code = cli_texts_load(&t, a.m.texts, a.m.text_count, "document to rank");
    if (!code && !(r = malloc((size_t)t.count * sizeof *r))) code = cli_error("out of host memory");
    if (!code) code = rerank(&a, &t, &ctx, r);
    if (ctx) code = cli_close(ctx, code);
    if (!code) print_ranked(&a, &t, r);
    free(r);
    cli_texts_free(&t);
    return code;
}
