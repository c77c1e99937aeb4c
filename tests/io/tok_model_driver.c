/* The tokenizer's models from the outside, for tests/parity/test_tok_models.py: loads a model
 * JSON (a tokenizer.json's "model" section) and runs it on each word of a JSON list of strings
 * (already pre-tokenized), printing one JSON list: per word, [[id, start, end], ...] with byte
 * offsets, or {"error": message}. With --repeat K every word is run K times and the seconds the
 * runs took (not the load) go to stderr: the speed check.
 * Usage: tok_model_driver MODEL.json WORDS.json [--repeat K] */
#include "io/json_file.h"
#include "io/tok_pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One word's result as JSON. The tokens list starts poisoned so a run that reports success
 * without writing shows. */
static cJSON *run_word(const tok_model *m, const char *s, size_t n)
{
    char err[512] = "";
    err_ctx c = {"model", err, sizeof err};
    tok_toks toks = {0};
    if (tok_toks_push(&c, &toks, -77, 999999, 999999) != 0) return NULL;
    toks.n = 0;
    cJSON *out;
    if (tok_model_run(&c, m, s, n, &toks) != 0) {
        out = cJSON_CreateObject();
        cJSON_AddStringToObject(out, "error", err);
    } else {
        out = cJSON_CreateArray();
        for (size_t i = 0; i < toks.n; i++) {
            const double v[3] = {toks.v[i].id, (double)toks.v[i].start, (double)toks.v[i].end};
            cJSON_AddItemToArray(out, cJSON_CreateDoubleArray(v, 3));
        }
    }
    free(toks.v);
    return out;
}

static int run_all(const tok_model *m, const cJSON *words, int repeat)
{
    cJSON *results = cJSON_CreateArray();
    double start = now();
    const cJSON *w;
    cJSON_ArrayForEach(w, words)
    {
        if (!cJSON_IsString(w)) {
            fprintf(stderr, "words: expected strings\n");
            return 1;
        }
        cJSON *r = NULL;
        for (int k = 0; k < repeat; k++) {
            cJSON_Delete(r);
            r = run_word(m, w->valuestring, strlen(w->valuestring));
        }
        cJSON_AddItemToArray(results, r);
    }
    if (repeat > 1) fprintf(stderr, "seconds %.6f\n", now() - start);
    char *text = cJSON_PrintUnformatted(results);
    if (text) puts(text);
    free(text);
    cJSON_Delete(results);
    return text ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 3 && !(argc == 5 && strcmp(argv[3], "--repeat") == 0)) {
        fprintf(stderr, "usage: tok_model_driver MODEL.json WORDS.json [--repeat K]\n");
        return 2;
    }
    int repeat = argc == 5 ? atoi(argv[4]) : 1;
    char err[512] = "";
    err_ctx mc = {argv[1], err, sizeof err}, wc = {argv[2], err, sizeof err};
    cJSON *model_json = io_json_load(&mc), *words = model_json ? io_json_load(&wc) : NULL;
    tok_model *m = NULL;
    if (!words || tok_model_load(&mc, model_json, &m) != 0) {
        fprintf(stderr, "%s\n", err);
        cJSON_Delete(model_json);
        cJSON_Delete(words);
        return 1;
    }
    char about[256];
    tok_model_describe(m, about, sizeof about);
    fprintf(stderr, "%s, size %d\n", about, (int)tok_model_size(m));
    int rc = run_all(m, words, repeat < 1 ? 1 : repeat);
    tok_model_free(m);
    cJSON_Delete(model_json);
    cJSON_Delete(words);
    return rc;
}
