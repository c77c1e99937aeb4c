/* The normalized string's transformation and the operations built on it, as tokenizers'
 * tokenizers/src/tokenizer/normalizer.rs does them (NormalizedString::transform_range, filter,
 * map, lrstrip, prepend, replace). Alignments are absolute byte offsets of the original text;
 * tokenizers' are relative to the slice's original_shift, which is t->origin here. */
#include "tok_norm_ops.h"

#include <stdlib.h>
#include <string.h>

int32_t tok_utf8_next(const char *s, size_t n, size_t *len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t need = u[0] < 0x80 ? 1 : u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : u[0] >= 0xC0 ? 2 : 0;
    if (need == 0 || need > n) {
        *len = 1;
        return u[0];
    }
    int32_t c = need == 1 ? u[0] : u[0] & (0x7F >> need);
    for (size_t i = 1; i < need; i++)
        c = (c << 6) | (u[i] & 0x3F);
    *len = need;
    return c;
}

size_t tok_utf8_put(int32_t c, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (c < 0x80) {
        o[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (unsigned char)(0xC0 | (c >> 6));
        o[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (c >> 12));
        o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (c >> 18));
    o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

int tok_changes_push(const err_ctx *c, tok_changes *a, int32_t ch, int change)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        tok_change *v = cap > SIZE_MAX / sizeof *v ? NULL : realloc(a->v, cap * sizeof *v);
        if (!v) return io_fail_oom(c, "normalizer: out of memory for %zu characters", cap);
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = (tok_change){ch, change};
    return 0;
}

void tok_changes_free(tok_changes *a)
{
    free(a->v);
    memset(a, 0, sizeof *a);
}

/* The new bytes and alignments of a transformed range, before they are spliced in. */
typedef struct piece {
    char *s;
    size_t *align;
    size_t n;
} piece;

static int piece_alloc(const err_ctx *c, piece *p, size_t chars)
{
    memset(p, 0, sizeof *p);
    if (chars > SIZE_MAX / 8 / sizeof *p->align)
        return io_fail_oom(c, "normalizer: %zu characters", chars);
    p->s = malloc(chars * 4 + 1);
    p->align = malloc((chars ? chars : 1) * 4 * 2 * sizeof *p->align);
    if (!p->s || !p->align) {
        free(p->s);
        free(p->align);
        return io_fail_oom(c, "normalizer: out of memory for %zu characters", chars);
    }
    return 0;
}

/* A normalized text may be at most this many times its original span, plus GROWTH_SLACK bytes:
 * far more than any real normalizer makes (NFKD's longest expansion is 11 times), while a
 * hostile sequence of Replaces of empty matches would multiply the text at every step. */
enum { GROWTH_FACTOR = 64, GROWTH_SLACK = 4096 };

/* 0 when t may become n bytes long, else -1 with the error. */
static int check_growth(const err_ctx *c, const tok_norm *t, size_t n)
{
    size_t end = t->n ? t->align[2 * t->n - 1] : t->origin;
    size_t span = end > t->origin ? end - t->origin : 0;
    if (span <= (SIZE_MAX - GROWTH_SLACK) / GROWTH_FACTOR &&
        n <= span * GROWTH_FACTOR + GROWTH_SLACK)
        return 0;
    return io_fail(c,
                   "normalizer: the text would grow to %zu bytes from %zu of the original, past "
                   "%d times",
                   n, span, GROWTH_FACTOR);
}

/* Replaces t's bytes [a, b) by p's (which it frees). */
static int splice(const err_ctx *c, tok_norm *t, size_t a, size_t b, piece *p)
{
    size_t n = t->n - (b - a) + p->n;
    if (n > t->n && check_growth(c, t, n) != 0) {
        free(p->s);
        free(p->align);
        return -1;
    }
    if (n > t->cap) {
        char *s = realloc(t->s, n + 1);
        if (s) t->s = s;
        size_t *al = s ? realloc(t->align, n * 2 * sizeof *al) : NULL;
        if (!s || !al) {
            free(p->s);
            free(p->align);
            return io_fail_oom(c, "normalizer: out of memory for a text of %zu bytes", n);
        }
        t->align = al;
        t->cap = n;
    }
    memmove(t->s + a + p->n, t->s + b, t->n - b);
    memmove(t->align + 2 * (a + p->n), t->align + 2 * b, (t->n - b) * 2 * sizeof *t->align);
    memcpy(t->s + a, p->s, p->n);
    memcpy(t->align + 2 * a, p->align, p->n * 2 * sizeof *t->align);
    t->n = n;
    t->s[n] = 0;
    free(p->s);
    free(p->align);
    return 0;
}

/* Skips `count` old characters at t->s[*at..b), adding their bytes to *at. */
static void skip_chars(const tok_norm *t, size_t *at, size_t b, size_t count)
{
    for (size_t k = 0; k < count && *at < b; k++) {
        size_t len;
        tok_utf8_next(t->s + *at, b - *at, &len);
        *at += len;
    }
}

int tok_norm_transform(const err_ctx *c, tok_norm *t, size_t a, size_t b, const tok_change *changes,
                       size_t count, size_t initial_offset)
{
    piece p;
    if (piece_alloc(c, &p, count) != 0) return -1;
    size_t old = a; /* the next old character to be replaced: tokenizers' replaced_normalized */
    skip_chars(t, &old, b, initial_offset);
    size_t offset = old; /* tokenizers' offset: where the next character's alignment is read */
    for (size_t i = 0; i < count; i++) {
        int ch = changes[i].change;
        size_t from_start, from_end;
        if (ch > 0) {
            /* an inserted character shares the alignment of the one before it */
            from_start = offset < 1 ? t->origin : t->align[2 * (offset - 1)];
            from_end = offset < 1 ? t->origin : t->align[2 * (offset - 1) + 1];
        } else if (offset < t->n) {
            from_start = t->align[2 * offset];
            from_end = t->align[2 * offset + 1];
        } else {
            free(p.s);
            free(p.align);
            return io_fail(c, "normalizer: a transformation reads past the text's end");
        }
        size_t before = old;
        if (ch <= 0) skip_chars(t, &old, b, 1 + (size_t)(-(long long)ch));
        offset += old - before;
        size_t len = tok_utf8_put(changes[i].c, p.s + p.n);
        for (size_t k = 0; k < len; k++) {
            p.align[2 * (p.n + k)] = from_start;
            p.align[2 * (p.n + k) + 1] = from_end;
        }
        p.n += len;
    }
    return splice(c, t, a, b, &p);
}

int tok_norm_transform_all(const err_ctx *c, tok_norm *t, const tok_changes *ch,
                           size_t initial_offset)
{
    return tok_norm_transform(c, t, 0, t->n, ch->v, ch->n, initial_offset);
}

int tok_norm_filter(const err_ctx *c, tok_norm *t, int (*keep)(int32_t ch, const void *ctx),
                    const void *ctx)
{
    tok_changes out = {0};
    size_t removed = 0, removed_start = 0;
    int32_t last = -1;
    for (size_t i = 0, len; i < t->n; i += len) {
        int32_t ch = tok_utf8_next(t->s + i, t->n - i, &len);
        if (!keep(ch, ctx)) {
            removed++;
            continue;
        }
        /* a kept character carries the count of the removed ones after it */
        if (last >= 0 && tok_changes_push(c, &out, last, -(int)removed) != 0) goto fail;
        if (last < 0) removed_start = removed;
        last = ch;
        removed = 0;
    }
    if (last >= 0 && tok_changes_push(c, &out, last, -(int)removed) != 0) goto fail;
    int rc = tok_norm_transform_all(c, t, &out, removed_start);
    tok_changes_free(&out);
    return rc;
fail:
    tok_changes_free(&out);
    return -1;
}

int tok_norm_map(const err_ctx *c, tok_norm *t, int32_t (*map)(int32_t ch, const void *ctx),
                 const void *ctx)
{
    tok_changes out = {0};
    for (size_t i = 0, len; i < t->n; i += len) {
        int32_t ch = tok_utf8_next(t->s + i, t->n - i, &len);
        if (tok_changes_push(c, &out, map(ch, ctx), 0) != 0) {
            tok_changes_free(&out);
            return -1;
        }
    }
    int rc = tok_norm_transform_all(c, t, &out, 0);
    tok_changes_free(&out);
    return rc;
}

/* Rust's char::is_whitespace (White_Space), as lrstrip tests it. */
static int is_white(int32_t c)
{
    if ((c >= 0x9 && c <= 0xD) || c == ' ' || c == 0x85 || c == 0xA0 || c == 0x1680) return 1;
    return (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

int tok_norm_strip(const err_ctx *c, tok_norm *t, int left, int right)
{
    size_t start = 0, end = t->n, leading = 0, len;
    while (left && start < end && is_white(tok_utf8_next(t->s + start, end - start, &len))) {
        start += len;
        leading++;
    }
    size_t trailing = 0;
    while (right && end > start) {
        size_t back = end - 1;
        while (back > start && ((unsigned char)t->s[back] & 0xC0) == 0x80)
            back--;
        if (!is_white(tok_utf8_next(t->s + back, end - back, &len))) break;
        end = back;
        trailing++;
    }
    if (leading == 0 && trailing == 0) return 0;
    /* the kept characters as they are, the leading ones skipped and the trailing ones cut by
     * the splice; lrstrip's "-trailing" on the last kept character changes no alignment */
    tok_changes out = {0};
    for (size_t i = start; i < end; i += len) {
        int32_t ch = tok_utf8_next(t->s + i, end - i, &len);
        if (tok_changes_push(c, &out, ch, 0) != 0) {
            tok_changes_free(&out);
            return -1;
        }
    }
    int rc = tok_norm_transform_all(c, t, &out, leading);
    tok_changes_free(&out);
    return rc;
}

int tok_norm_prepend(const err_ctx *c, tok_norm *t, const char *s, size_t n)
{
    if (t->n == 0) return 0;
    tok_changes out = {0};
    size_t first_len, len;
    int32_t first = tok_utf8_next(t->s, t->n, &first_len);
    int rc = 0;
    /* the prefix's first character replaces the text's first (taking its alignment), the
     * rest and that first character again are inserted after it */
    for (size_t i = 0; i < n && rc == 0; i += len)
        rc = tok_changes_push(c, &out, tok_utf8_next(s + i, n - i, &len), i != 0);
    if (rc == 0) rc = tok_changes_push(c, &out, first, 1);
    if (rc == 0) rc = tok_norm_transform(c, t, 0, first_len, out.v, out.n, 0);
    tok_changes_free(&out);
    return rc;
}

int tok_norm_replace(const err_ctx *c, tok_norm *t, const tok_span *matches, size_t count,
                     const char *content, size_t n)
{
    if (count == 0) return 0;
    size_t size = t->n;
    for (size_t i = 0; i < count; i++) {
        size_t match = matches[i].end - matches[i].start;
        if (n > match && size > SIZE_MAX / 2 - (n - match))
            return io_fail_oom(c, "normalizer: Replace: a text too long");
        size = size - match + n;
    }
    if (size > t->n && check_growth(c, t, size) != 0) return -1;
    piece p;
    if (piece_alloc(c, &p, (size + 3) / 4) != 0) return -1;
    size_t last = 0;
    for (size_t i = 0; i <= count; i++) {
        size_t start = i < count ? matches[i].start : t->n;
        memcpy(p.s + p.n, t->s + last, start - last);
        memcpy(p.align + 2 * p.n, t->align + 2 * last, (start - last) * 2 * sizeof *p.align);
        p.n += start - last;
        if (i == count) break;
        /* the content is inserted after the match is removed: it takes the alignment of the
         * match's last byte */
        size_t end = matches[i].end;
        size_t from_start = end < 1 ? t->origin : t->align[2 * (end - 1)];
        size_t from_end = end < 1 ? t->origin : t->align[2 * (end - 1) + 1];
        memcpy(p.s + p.n, content, n);
        for (size_t k = 0; k < n; k++) {
            p.align[2 * (p.n + k)] = from_start;
            p.align[2 * (p.n + k) + 1] = from_end;
        }
        p.n += n;
        last = end;
    }
    return splice(c, t, 0, t->n, &p);
}
