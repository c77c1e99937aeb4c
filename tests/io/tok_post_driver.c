/* The post-processors and decoders (src/io/tok_post*.c, tok_decoders*.c) driven from Python
 * (tests/parity/test_tok_post_decoders.py), which compares what they give with tokenizers
 * itself. Reads one JSON object on stdin and writes one on stdout. Every string travels as the
 * hex of its UTF-8 bytes, so that any byte (NUL too) passes through JSON unchanged.
 *
 *   {"decoder": {...}, "cases": [[hex token, ...], ...]}
 *     -> {"describe": s, "results": [{"tokens": [hex, ...]} | {"error": s}, ...]}
 *   {"post_processor": {...}, "vocab": [hex token or null by id, ...],
 *    "cases": [{"a": enc, "b": enc or null, "texts": [hex, hex], "add_special": bool}, ...]}
 *     -> {"describe": s, "added": [single, pair],
 *         "results": [{"ids", "type_ids", "special", "offsets"} | {"error": s}, ...]}
 *   where enc is {"ids": [...], "special": [...], "offsets": [[start, end], ...]} with offsets
 *   in characters of its text, as tokenizers' Python Encoding gives them, and so back. */
#include "io/tok_pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[512];
static const err_ctx ctx = {"driver", err, sizeof err};

/* ------------------------------------------------------------------ hex strings ---- */

static char *unhex(const char *h, size_t *n)
{
    size_t len = strlen(h) / 2;
    char *s = malloc(len + 1);
    if (!s) return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned v;
        if (sscanf(h + 2 * i, "%2x", &v) != 1) v = 0;
        s[i] = (char)v;
    }
    s[len] = 0;
    *n = len;
    return s;
}

static cJSON *hex(const char *s, size_t n)
{
    char *h = malloc(2 * n + 1);
    if (!h) return NULL;
    for (size_t i = 0; i < n; i++)
        sprintf(h + 2 * i, "%02x", (unsigned char)s[i]);
    h[2 * n] = 0;
    cJSON *j = cJSON_CreateString(h);
    free(h);
    return j;
}

/* ------------------------------------------------------------------------ decoders ---- */

static cJSON *decode_case(const tok_decoder *d, const cJSON *list)
{
    tok_strs toks = {0};
    cJSON *r = cJSON_CreateObject();
    for (const cJSON *t = list->child; t; t = t->next) {
        size_t n;
        char *s = unhex(t->valuestring, &n);
        if (!s || tok_strs_push(&ctx, &toks, s, n) != 0) abort();
        free(s);
    }
    if (tok_decoder_run(&ctx, d, &toks) != 0) {
        cJSON_AddStringToObject(r, "error", err);
    } else {
        cJSON *out = cJSON_AddArrayToObject(r, "tokens");
        for (size_t i = 0; i < toks.n; i++)
            cJSON_AddItemToArray(out, hex(toks.v[i], toks.lens[i]));
    }
    tok_strs_free(&toks);
    return r;
}

static int run_decoders(const cJSON *in, cJSON *out)
{
    tok_decoder *d;
    char desc[256];
    if (tok_decoder_load(&ctx, cJSON_GetObjectItem(in, "decoder"), &d) != 0) return -1;
    tok_decoder_describe(d, desc, sizeof desc);
    cJSON_AddStringToObject(out, "describe", desc);
    cJSON *results = cJSON_AddArrayToObject(out, "results");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(in, "cases"))
        cJSON_AddItemToArray(results, decode_case(d, c));
    tok_decoder_free(d);
    return 0;
}

/* ---------------------------------------------------------------- post-processors ---- */

typedef struct vocab {
    char **v;
    size_t *lens, n;
} vocab;

static const char *vocab_token(const void *p, int32_t id, size_t *len)
{
    const vocab *v = p;
    if (id < 0 || (size_t)id >= v->n || !v->v[id]) return NULL;
    *len = v->lens[id];
    return v->v[id];
}

/* A text's character <-> byte tables: to_byte[k] is where character k starts (k up to the
 * count), to_char[i] how many characters start before byte i (i up to n). */
typedef struct text_map {
    size_t *to_byte, *to_char;
} text_map;

static void map_text(const char *text, size_t n, text_map *m)
{
    m->to_byte = malloc((n + 1) * sizeof *m->to_byte);
    m->to_char = malloc((n + 1) * sizeof *m->to_char);
    if (!m->to_byte || !m->to_char) abort();
    size_t chars = 0;
    for (size_t i = 0; i < n; i++) {
        m->to_char[i] = chars;
        if (((unsigned char)text[i] & 0xC0) != 0x80) m->to_byte[chars++] = i;
    }
    m->to_char[n] = chars;
    m->to_byte[chars] = n;
}

/* poison: a value no real encoding has, so a field left unset shows */
#define POISON 0x5A5A5A5A

static void read_enc(const cJSON *j, const text_map *m, int32_t seq, tok_enc *e)
{
    const cJSON *id = cJSON_GetObjectItem(j, "ids")->child;
    const cJSON *sp = cJSON_GetObjectItem(j, "special")->child;
    const cJSON *o = cJSON_GetObjectItem(j, "offsets")->child;
    for (; id && sp && o; id = id->next, sp = sp->next, o = o->next) {
        size_t s = m->to_byte[(size_t)o->child->valuedouble];
        size_t t = m->to_byte[(size_t)o->child->next->valuedouble];
        if (tok_enc_push(&ctx, e, (int32_t)id->valuedouble, POISON, (int)sp->valuedouble, s, t,
                         seq) != 0)
            abort();
    }
}

static cJSON *int_array(const int32_t *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static cJSON *write_enc(const tok_enc *e, const text_map maps[2])
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "ids", int_array(e->ids, e->n));
    cJSON_AddItemToObject(r, "type_ids", int_array(e->type_ids, e->n));
    cJSON_AddItemToObject(r, "special", int_array(e->special, e->n));
    cJSON_AddItemToObject(r, "seq", int_array(e->seq, e->n));
    cJSON *offs = cJSON_AddArrayToObject(r, "offsets");
    for (size_t i = 0; i < e->n; i++) {
        const text_map *m = e->seq[i] == 0 || e->seq[i] == 1 ? &maps[e->seq[i]] : NULL;
        double s = (double)(m ? m->to_char[e->starts[i]] : e->starts[i]);
        double t = (double)(m ? m->to_char[e->ends[i]] : e->ends[i]);
        cJSON *o = cJSON_CreateArray();
        cJSON_AddItemToArray(o, cJSON_CreateNumber(s));
        cJSON_AddItemToArray(o, cJSON_CreateNumber(t));
        cJSON_AddItemToArray(offs, o);
    }
    return r;
}

static cJSON *post_case(const tok_post *p, const tok_vocab_view *view, const cJSON *c)
{
    char *texts[2] = {NULL, NULL};
    size_t lens[2] = {0, 0};
    const cJSON *tx = cJSON_GetObjectItem(c, "texts");
    text_map maps[2];
    for (int i = 0; i < 2; i++) {
        if (!(texts[i] = unhex(cJSON_GetArrayItem(tx, i)->valuestring, &lens[i]))) abort();
        map_text(texts[i], lens[i], &maps[i]);
    }
    tok_enc a = {0}, b = {0}, out = {0};
    const cJSON *jb = cJSON_GetObjectItem(c, "b");
    read_enc(cJSON_GetObjectItem(c, "a"), &maps[0], 0, &a);
    if (cJSON_IsObject(jb)) read_enc(jb, &maps[1], 1, &b);
    int add = cJSON_IsTrue(cJSON_GetObjectItem(c, "add_special"));
    const char *const tconst[2] = {texts[0], texts[1]};
    cJSON *r;
    if (tok_post_run(&ctx, p, view, &a, cJSON_IsObject(jb) ? &b : NULL, tconst, add, &out) != 0) {
        r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "error", err);
    } else {
        r = write_enc(&out, maps);
    }
    tok_enc_free(&a);
    tok_enc_free(&b);
    tok_enc_free(&out);
    for (int i = 0; i < 2; i++) {
        free(texts[i]);
        free(maps[i].to_byte);
        free(maps[i].to_char);
    }
    return r;
}

static int run_post(const cJSON *in, cJSON *out)
{
    tok_post *p;
    char desc[256];
    if (tok_post_load(&ctx, cJSON_GetObjectItem(in, "post_processor"), &p) != 0) return -1;
    const cJSON *jv = cJSON_GetObjectItem(in, "vocab");
    vocab v = {calloc((size_t)cJSON_GetArraySize(jv) + 1, sizeof(char *)),
               calloc((size_t)cJSON_GetArraySize(jv) + 1, sizeof(size_t)),
               (size_t)cJSON_GetArraySize(jv)};
    if (!v.v || !v.lens) abort();
    size_t i = 0;
    for (const cJSON *t = jv ? jv->child : NULL; t; t = t->next, i++)
        if (cJSON_IsString(t) && !(v.v[i] = unhex(t->valuestring, &v.lens[i]))) abort();
    const tok_vocab_view view = {vocab_token, &v};
    tok_post_describe(p, desc, sizeof desc);
    cJSON_AddStringToObject(out, "describe", desc);
    cJSON *added = cJSON_AddArrayToObject(out, "added");
    cJSON_AddItemToArray(added, cJSON_CreateNumber((double)tok_post_added(p, 0)));
    cJSON_AddItemToArray(added, cJSON_CreateNumber((double)tok_post_added(p, 1)));
    cJSON *results = cJSON_AddArrayToObject(out, "results");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(in, "cases"))
        cJSON_AddItemToArray(results, post_case(p, &view, c));
    for (i = 0; i < v.n; i++)
        free(v.v[i]);
    free(v.v);
    free(v.lens);
    tok_post_free(p);
    return 0;
}

static char *read_all(FILE *f)
{
    size_t n = 0, cap = 1 << 16;
    char *s = malloc(cap);
    for (size_t got; s && (got = fread(s + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) s = realloc(s, cap *= 2);
    }
    if (s) s[n] = 0;
    return s;
}

int main(void)
{
    char *text = read_all(stdin);
    cJSON *in = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!in) {
        fprintf(stderr, "tok_post_driver: no JSON on stdin\n");
        return 2;
    }
    cJSON *out = cJSON_CreateObject();
    int rc = cJSON_GetObjectItem(in, "decoder") ? run_decoders(in, out) : run_post(in, out);
    if (rc != 0) cJSON_AddStringToObject(out, "load_error", err);
    char *s = cJSON_PrintUnformatted(out);
    if (!s) abort();
    puts(s);
    free(s);
    cJSON_Delete(out);
    cJSON_Delete(in);
    return 0;
}
