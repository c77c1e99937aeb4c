/* The growable lists the tokenizer's components pass between them (tok_pipeline.h): tokens,
 * splits, encodings and strings, and the normalized string's plain operations (its transform is
 * in tok_norm.c). */
#include "tok_pipeline.h"

#include <stdlib.h>
#include <string.h>

/* Grows *v (elements of `size` bytes, *cap of them) to hold `need`; 0, or -1 when out of memory
 * or the size overflows. */
static int grow(void **v, size_t size, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / size) return -1;
        c *= 2;
    }
    void *p = realloc(*v, c * size);
    if (!p) return -1;
    *v = p;
    *cap = c;
    return 0;
}

/* The length of the UTF-8 character at s (n > 0 bytes left); a stray byte is one. */
static size_t char_len(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0xC0 ? 1 : s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
    return len <= n ? len : 1;
}

int tok_norm_init(const err_ctx *c, tok_norm *t, const char *s, size_t n, size_t base)
{
    memset(t, 0, sizeof *t);
    t->s = malloc(n + 1);
    t->align = malloc((n ? n : 1) * 2 * sizeof *t->align);
    if (!t->s || !t->align) {
        tok_norm_free(t);
        return io_fail_oom(c, "out of memory for a text of %zu bytes", n);
    }
    if (n) memcpy(t->s, s, n);
    t->s[n] = 0;
    t->n = t->cap = n;
    t->origin = base;
    /* every byte of a character comes from the whole character, as tokenizers' From<String> */
    for (size_t i = 0; i < n;) {
        size_t len = char_len((const unsigned char *)s + i, n - i);
        for (size_t k = i; k < i + len; k++) {
            t->align[2 * k] = base + i;
            t->align[2 * k + 1] = base + i + len;
        }
        i += len;
    }
    return 0;
}

void tok_norm_free(tok_norm *t)
{
    if (!t) return;
    free(t->s);
    free(t->align);
    memset(t, 0, sizeof *t);
}

int tok_norm_slice(const err_ctx *c, const tok_norm *t, size_t a, size_t b, tok_norm *out)
{
    size_t start, end;
    tok_norm_span(t, a, b, &start, &end);
    if (tok_norm_init(c, out, t->s + a, b - a, start) != 0) return -1;
    if (b > a) memcpy(out->align, t->align + 2 * a, (b - a) * 2 * sizeof *t->align);
    return 0;
}

void tok_norm_span(const tok_norm *t, size_t a, size_t b, size_t *start, size_t *end)
{
    if (a >= b) {
        /* convert_offsets gives an empty range back as it is, now read as original offsets
         * (relative to the slice's start: t->origin) */
        *start = *end = t->origin + a;
    } else if (b > t->n) {
        *start = *end = t->origin; /* outside the text: convert_offsets has nothing */
    } else {
        *start = t->align[2 * a];
        *end = t->align[2 * (b - 1) + 1];
    }
}

int tok_toks_push(const err_ctx *c, tok_toks *a, int32_t id, size_t start, size_t end)
{
    if (grow((void **)&a->v, sizeof *a->v, &a->cap, a->n + 1) != 0)
        return io_fail_oom(c, "out of memory for %zu tokens", a->n + 1);
    a->v[a->n++] = (tok_tok){id, start, end};
    return 0;
}

int tok_splits_push(const err_ctx *c, tok_splits *s, tok_norm *t)
{
    if (grow((void **)&s->v, sizeof *s->v, &s->cap, s->n + 1) != 0)
        return io_fail_oom(c, "out of memory for %zu pieces of text", s->n + 1);
    memset(&s->v[s->n], 0, sizeof s->v[s->n]);
    s->v[s->n++].text = *t;
    memset(t, 0, sizeof *t);
    return 0;
}

void tok_splits_free(tok_splits *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        tok_norm_free(&s->v[i].text);
        free(s->v[i].toks.v);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* The encoding's arrays, grown together to `need` entries. */
static int enc_reserve(tok_enc *e, size_t need)
{
    if (need <= e->cap) return 0;
    size_t cap = e->cap;
    size_t c32 = cap, c32b = cap, c32c = cap, cs = cap, ce = cap, cq = cap;
    if (grow((void **)&e->ids, sizeof *e->ids, &c32, need) != 0 ||
        grow((void **)&e->type_ids, sizeof *e->type_ids, &c32b, need) != 0 ||
        grow((void **)&e->special, sizeof *e->special, &c32c, need) != 0 ||
        grow((void **)&e->starts, sizeof *e->starts, &cs, need) != 0 ||
        grow((void **)&e->ends, sizeof *e->ends, &ce, need) != 0 ||
        grow((void **)&e->seq, sizeof *e->seq, &cq, need) != 0)
        return -1;
    /* every array now holds at least the smallest of the new capacities */
    size_t least = c32;
    const size_t all[] = {c32b, c32c, cs, ce, cq};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] < least) least = all[i];
    e->cap = least;
    return 0;
}

int tok_enc_push(const err_ctx *c, tok_enc *e, int32_t id, int32_t type_id, int special,
                 size_t start, size_t end, int32_t seq)
{
    if (enc_reserve(e, e->n + 1) != 0)
        return io_fail_oom(c, "out of memory for %zu tokens", e->n + 1);
    size_t i = e->n++;
    e->ids[i] = id;
    e->type_ids[i] = type_id;
    e->special[i] = special;
    e->starts[i] = start;
    e->ends[i] = end;
    e->seq[i] = seq;
    return 0;
}

void tok_enc_free(tok_enc *e)
{
    if (!e) return;
    free(e->ids);
    free(e->type_ids);
    free(e->special);
    free(e->starts);
    free(e->ends);
    free(e->seq);
    memset(e, 0, sizeof *e);
}

int tok_strs_push(const err_ctx *c, tok_strs *a, const char *s, size_t n)
{
    size_t cap = a->cap, lcap = a->cap;
    if (grow((void **)&a->v, sizeof *a->v, &cap, a->n + 1) != 0 ||
        grow((void **)&a->lens, sizeof *a->lens, &lcap, a->n + 1) != 0)
        return io_fail_oom(c, "out of memory for %zu strings", a->n + 1);
    a->cap = cap < lcap ? cap : lcap;
    char *copy = malloc(n + 1);
    if (!copy) return io_fail_oom(c, "out of memory for a string of %zu bytes", n);
    if (n) memcpy(copy, s, n);
    copy[n] = 0;
    a->v[a->n] = copy;
    a->lens[a->n++] = n;
    return 0;
}

void tok_strs_free(tok_strs *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    free(a->lens);
    memset(a, 0, sizeof *a);
}
