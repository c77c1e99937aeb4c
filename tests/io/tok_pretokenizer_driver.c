/* A test driver for the pre-tokenizers (tests/parity/test_tok_pretokenizers.py):
 *   tok_pretokenizer_driver PRETOKENIZER.json TEXTS.json
 * loads the pre-tokenizer from the first file (one tokenizer.json "pre_tokenizer" object), runs
 * it on each text of the second (a JSON array of strings), nothing normalized, and prints a JSON
 * array with, for each text, its pieces as [piece, start, end], the offsets in characters of the
 * original text, as tokenizers' pre_tokenize_str reports them. A failure prints
 * {"error": message} and exits 1.
 *   tok_pretokenizer_driver --regex PATTERN TEXTS.json
 * prints each text's matches of the pattern (tok_regex_all) as [start, end] in characters.
 *   tok_pretokenizer_driver --describe PRETOKENIZER.json
 * prints the pre-tokenizer's one-line description. */
#include "io/tok_pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    for (size_t got; s && (got = fread(s + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (cap - n - 1 == 0) {
            char *grown = realloc(s, cap * 2);
            if (!grown) free(s);
            s = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (s) s[n] = 0;
    return s;
}

/* chars[i]: how many characters of s come before byte i (i up to n). */
static size_t *char_index(const char *s, size_t n)
{
    size_t *chars = malloc((n + 1) * sizeof *chars);
    if (!chars) return NULL;
    size_t count = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && ((unsigned char)s[i] & 0xC0) != 0x80) count++;
        chars[i] = i < n && ((unsigned char)s[i] & 0xC0) != 0x80 ? count - 1 : count;
    }
    return chars;
}

static cJSON *span_json(const size_t *chars, size_t start, size_t end)
{
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber((double)chars[start]));
    cJSON_AddItemToArray(a, cJSON_CreateNumber((double)chars[end]));
    return a;
}

/* A split that already has its tokens, put before the text: every pre-tokenizer must leave it
 * as it is. */
static const char done_text[] = "\xe2\x96\x81"
                                "done split";

static int push_done(const err_ctx *c, tok_splits *s)
{
    tok_norm t;
    if (tok_norm_init(c, &t, done_text, strlen(done_text), 1000) != 0) return -1;
    if (tok_splits_push(c, s, &t) != 0) {
        tok_norm_free(&t);
        return -1;
    }
    s->v[s->n - 1].done = 1;
    return tok_toks_push(c, &s->v[s->n - 1].toks, 7, 0, 3);
}

static int done_intact(const tok_splits *s)
{
    const tok_split *d = &s->v[0];
    return s->n > 0 && d->done && d->text.n == strlen(done_text) &&
           memcmp(d->text.s, done_text, d->text.n) == 0 && d->text.align[0] == 1000 &&
           d->toks.n == 1 && d->toks.v[0].id == 7 && d->toks.v[0].end == 3;
}

static cJSON *pretokenize(const err_ctx *c, const tok_pretokenizer *p, const char *text)
{
    size_t n = strlen(text);
    tok_splits s = {0};
    tok_norm t;
    if (push_done(c, &s) != 0 || tok_norm_init(c, &t, text, n, 0) != 0) {
        tok_splits_free(&s);
        return NULL;
    }
    if (tok_splits_push(c, &s, &t) != 0 || tok_pretokenizer_run(c, p, &s) != 0) {
        tok_norm_free(&t);
        tok_splits_free(&s);
        return NULL;
    }
    if (!done_intact(&s)) {
        snprintf(c->err, c->size, "the split with its tokens was changed");
        tok_splits_free(&s);
        return NULL;
    }
    size_t *chars = char_index(text, n);
    cJSON *pieces = cJSON_CreateArray();
    for (size_t i = 1; chars && i < s.n; i++) {
        const tok_norm *piece = &s.v[i].text;
        size_t start, end;
        tok_norm_span(piece, 0, piece->n, &start, &end);
        cJSON *one = span_json(chars, start, end);
        cJSON_InsertItemInArray(one, 0, cJSON_CreateString(piece->s));
        cJSON_AddItemToArray(pieces, one);
    }
    free(chars);
    tok_splits_free(&s);
    return pieces;
}

/* The matches are appended after what the list holds: a poisoned first entry stays. */
static cJSON *regex_matches(const err_ctx *c, const tok_regex *r, const char *text)
{
    size_t n = strlen(text), count = 1, cap = 1;
    tok_span *m = malloc(sizeof *m);
    if (!m) return NULL;
    m[0] = (tok_span){SIZE_MAX, SIZE_MAX - 1};
    if (tok_regex_all(c, r, text, n, &m, &count, &cap) != 0 || m[0].start != SIZE_MAX ||
        m[0].end != SIZE_MAX - 1 || cap < count) {
        free(m);
        return NULL;
    }
    size_t *chars = char_index(text, n);
    cJSON *out = cJSON_CreateArray();
    for (size_t i = 1; chars && i < count; i++)
        cJSON_AddItemToArray(out, span_json(chars, m[i].start, m[i].end));
    free(chars);
    free(m);
    return out;
}

static int fail(const char *message)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "error", message);
    char *s = cJSON_PrintUnformatted(e);
    puts(s);
    free(s);
    cJSON_Delete(e);
    return 1;
}

static int describe(const char *path)
{
    char err[512] = "", line[512];
    err_ctx c = {"driver", err, sizeof err};
    char *spec = read_file(path);
    cJSON *j = spec ? cJSON_Parse(spec) : NULL;
    free(spec);
    tok_pretokenizer *p = NULL;
    int rc = j ? tok_pretokenizer_load(&c, j, &p) : -1;
    cJSON_Delete(j);
    if (rc != 0) return fail(err);
    tok_pretokenizer_describe(p, line, sizeof line);
    puts(line);
    tok_pretokenizer_free(p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--describe") == 0) return describe(argv[2]);
    if (argc != 3 && !(argc == 4 && strcmp(argv[1], "--regex") == 0)) {
        fprintf(stderr, "usage: %s PRETOKENIZER.json TEXTS.json | --regex PATTERN TEXTS.json\n",
                argv[0]);
        return 2;
    }
    char err[512] = "";
    err_ctx c = {"driver", err, sizeof err};
    char *texts_file = read_file(argv[argc - 1]);
    cJSON *texts = texts_file ? cJSON_Parse(texts_file) : NULL;
    free(texts_file);
    if (!cJSON_IsArray(texts)) return fail("cannot read the texts");
    tok_pretokenizer *p = NULL;
    tok_regex *r = NULL;
    int loaded;
    if (argc == 4) {
        loaded = tok_regex_compile(&c, argv[2], strlen(argv[2]), &r);
    } else {
        char *spec = read_file(argv[1]);
        cJSON *j = spec ? cJSON_Parse(spec) : NULL;
        free(spec);
        loaded = j ? tok_pretokenizer_load(&c, j, &p) : (snprintf(err, sizeof err, "bad json"), -1);
        cJSON_Delete(j);
    }
    if (loaded != 0) {
        cJSON_Delete(texts);
        return fail(err);
    }
    cJSON *out = cJSON_CreateArray();
    int rc = 0;
    for (const cJSON *t = texts->child; t && rc == 0; t = t->next) {
        cJSON *one = r ? regex_matches(&c, r, t->valuestring) : pretokenize(&c, p, t->valuestring);
        if (!one) rc = 1;
        cJSON_AddItemToArray(out, one ? one : cJSON_CreateNull());
    }
    if (rc == 0) {
        char *s = cJSON_PrintUnformatted(out);
        puts(s);
        free(s);
    }
    cJSON_Delete(out);
    cJSON_Delete(texts);
    tok_pretokenizer_free(p);
    tok_regex_free(r);
    return rc ? fail(err) : 0;
}
