/* NFD, NFKD, NFC and NFKC with tokenizers' alignments: the (char, change) stream that
 * unicode-normalization-alignments gives NormalizedString::transform (tokenizers'
 * tokenizers/src/tokenizer/normalizer.rs, nfd/nfkd/nfc/nfkc), as that crate's decompose.rs
 * and recompose.rs produce it: a decomposition's first character replaces the old one (0) and
 * the rest are inserted (1); marks are put in canonical order carrying their changes; a
 * composition of two characters sums their changes less one. Which characters decompose (and
 * which composites exist) is the crate's Unicode 9.0 (tok_nf_tables.h); the mappings are
 * utf8proc's, which never change once assigned. */
#include "tok_norm_ops.h"
#include "tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

typedef struct nf_run {
    int32_t lo, hi, v;
} nf_run;

#include "tok_nf_tables.h"

enum { NF_CANONICAL = 1, NF_COMPAT = 2 };

/* The value of the run that holds c, or 0. */
static int32_t run_value(const nf_run *runs, size_t n, int32_t c)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (runs[mid].lo <= c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && c <= runs[lo - 1].hi ? runs[lo - 1].v : 0;
}

#define COUNT(a) (sizeof(a) / sizeof *(a))

int tok_nf_is_mark(int32_t c)
{
    return c >= 0x300 && run_value(tok_nf_marks, COUNT(tok_nf_marks), c) != 0;
}

static int32_t decomposable(int32_t c)
{
    return c < 0xA0 ? 0 : run_value(tok_nf_decomposed, COUNT(tok_nf_decomposed), c);
}

/* c's full decomposition into out (room for 32); its length. */
static size_t decompose_char(int32_t c, int compat, int32_t *out)
{
    int32_t kind = decomposable(c);
    if (kind == 0 || (kind == NF_COMPAT && !compat)) {
        out[0] = c;
        return 1;
    }
    int boundary = 0;
    utf8proc_ssize_t k = utf8proc_decompose_char(
        c, out, 32, UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0), &boundary);
    if (k < 1 || k > 32) { /* no decomposition is longer than 18 */
        out[0] = c;
        return 1;
    }
    return (size_t)k;
}

/* Appends the pending marks [from, a->n) in canonical order: a stable sort by class. */
static void sort_pending(tok_changes *a, size_t from)
{
    for (size_t i = from + 1; i < a->n; i++) {
        tok_change x = a->v[i];
        int32_t cc = tok_combining_class(x.c);
        size_t at = i;
        while (at > from && tok_combining_class(a->v[at - 1].c) > cc) {
            a->v[at] = a->v[at - 1];
            at--;
        }
        a->v[at] = x;
    }
}

static int decompose(const err_ctx *c, const tok_norm *t, int compat, tok_changes *out)
{
    size_t pending = 0; /* where the marks not yet in order start */
    for (size_t i = 0, len; i < t->n; i += len) {
        int32_t d[32];
        size_t k = decompose_char(tok_utf8_next(t->s + i, t->n - i, &len), compat, d);
        for (size_t j = 0; j < k; j++) {
            if (tok_combining_class(d[j]) == 0) {
                sort_pending(out, pending);
                pending = out->n;
            }
            if (tok_changes_push(c, out, d[j], j != 0) != 0) return -1;
        }
    }
    sort_pending(out, pending);
    return 0;
}

/* The primary composite of a and b as the crate's compose has it, or -1. */
static int32_t compose_pair(int32_t a, int32_t b)
{
    if (b < 0x300) return -1; /* every second half of a composition is U+0300 or above */
    utf8proc_int32_t pair[2] = {a, b};
    utf8proc_ssize_t n = utf8proc_normalize_utf32(pair, 2, UTF8PROC_COMPOSE | UTF8PROC_STABLE);
    if (n != 1 || decomposable(pair[0]) != NF_CANONICAL) return -1; /* or newer than 9.0 */
    return pair[0];
}

/* The recomposition's state: the starter being composed and the marks blocked after it. */
typedef struct composer {
    tok_changes *out;
    tok_change composee;
    int has_composee;
    int32_t last_ccc; /* -1: none */
    tok_changes blocked;
} composer;

static int purge(const err_ctx *c, composer *m)
{
    for (size_t i = 0; i < m->blocked.n; i++)
        if (tok_changes_push(c, m->out, m->blocked.v[i].c, m->blocked.v[i].change) != 0) return -1;
    m->blocked.n = 0;
    return 0;
}

/* One character of the decomposed stream, as recompose.rs's Composing state takes it. */
static int compose_next(const err_ctx *c, composer *m, tok_change x)
{
    int32_t cc = tok_combining_class(x.c);
    if (!m->has_composee) {
        if (cc != 0) return tok_changes_push(c, m->out, x.c, x.change);
        m->composee = x;
        m->has_composee = 1;
        return 0;
    }
    tok_change k = m->composee;
    int blocked = m->last_ccc >= 0 && m->last_ccc >= cc;
    if (!blocked) {
        int32_t r = compose_pair(k.c, x.c);
        if (r >= 0) {
            m->composee = (tok_change){r, k.change + x.change - 1};
            return 0;
        }
    }
    if (cc == 0) { /* a new starter: the old one out, then the marks it blocked */
        m->composee = x;
        m->last_ccc = -1;
        if (tok_changes_push(c, m->out, k.c, k.change) != 0) return -1;
        return purge(c, m);
    }
    m->last_ccc = cc;
    return tok_changes_push(c, &m->blocked, x.c, x.change);
}

static int recompose(const err_ctx *c, const tok_changes *in, tok_changes *out)
{
    composer m = {.out = out, .last_ccc = -1};
    int rc = 0;
    for (size_t i = 0; i < in->n && rc == 0; i++)
        rc = compose_next(c, &m, in->v[i]);
    if (rc == 0 && m.has_composee) rc = tok_changes_push(c, out, m.composee.c, m.composee.change);
    if (rc == 0) rc = purge(c, &m);
    tok_changes_free(&m.blocked);
    return rc;
}

int tok_nf_run(const err_ctx *c, tok_norm *t, int compat, int compose)
{
    tok_changes decomposed = {0}, composed = {0};
    int rc = decompose(c, t, compat, &decomposed);
    if (rc == 0 && compose) rc = recompose(c, &decomposed, &composed);
    if (rc == 0) rc = tok_norm_transform_all(c, t, compose ? &composed : &decomposed, 0);
    tok_changes_free(&decomposed);
    tok_changes_free(&composed);
    return rc;
}
