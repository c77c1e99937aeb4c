/* Running the pre-tokenizers, as tokenizers' tokenizers/src/pre_tokenizers/ do:
 * metaspace.rs (replace, prepend by scheme, split MergedWithNext), byte_level.rs (prefix space,
 * GPT-2's pattern Isolated, then every byte to its character of bytes_char), whitespace.rs,
 * punctuation.rs, digits.rs, split.rs, bert.rs, sequence.rs, over PreTokenizedString::split
 * (tokenizers/src/tokenizer/pre_tokenizer.rs: a split that has its tokens is left alone, empty
 * pieces are dropped). The character predicates are Rust's: char::is_whitespace,
 * char::is_numeric, and bert.rs's punctuation. */
#include "tok_norm_ops.h"
#include "tok_pretokenizers.h"
#include "tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* Appends to out the pieces of one split's text (which it may change first). */
typedef int (*split_fn)(const err_ctx *c, const tok_pretokenizer *p, tok_norm *text,
                        tok_splits *out);

/* Moves a split that already has its tokens to the end of out. */
static int move_done(const err_ctx *c, tok_split *from, tok_splits *out)
{
    if (tok_splits_push(c, out, &from->text) != 0) return -1;
    tok_split *to = &out->v[out->n - 1];
    to->toks = from->toks;
    to->done = 1;
    memset(&from->toks, 0, sizeof from->toks);
    return 0;
}

/* Drops the empty pieces of out from index `from` on. */
static void drop_empty(tok_splits *out, size_t from)
{
    size_t kept = from;
    for (size_t i = from; i < out->n; i++) {
        if (out->v[i].text.n == 0) {
            tok_norm_free(&out->v[i].text);
            free(out->v[i].toks.v);
        } else {
            out->v[kept++] = out->v[i];
        }
    }
    out->n = kept;
}

/* PreTokenizedString::split: every split not done through fn, in place. */
static int split_each(const err_ctx *c, const tok_pretokenizer *p, split_fn fn, tok_splits *s)
{
    tok_splits next = {0};
    for (size_t i = 0; i < s->n; i++) {
        size_t from = next.n;
        int rc = s->v[i].done ? move_done(c, &s->v[i], &next) : fn(c, p, &s->v[i].text, &next);
        if (rc != 0) {
            tok_splits_free(&next);
            return -1;
        }
        if (!s->v[i].done) drop_empty(&next, from);
    }
    tok_splits_free(s);
    *s = next;
    return 0;
}

/* ---------------------------------------------------------------- splitting by pattern ---- */

/* Each character for which `is` holds, a match of its own (pattern.rs's Fn(char) -> bool). */
static int split_chars(const err_ctx *c, const tok_norm *t, int (*is)(int32_t),
                       tok_behavior behavior, tok_splits *out)
{
    tok_span *m = NULL;
    size_t count = 0, len;
    for (size_t i = 0; i < t->n; i += len)
        if (is(tok_utf8_next(t->s + i, t->n - i, &len))) count++;
    if (count) {
        m = malloc(count * sizeof *m);
        if (!m) return io_fail_oom(c, "pre_tokenizer: out of memory for %zu matches", count);
    }
    count = 0;
    for (size_t i = 0; i < t->n; i += len)
        if (is(tok_utf8_next(t->s + i, t->n - i, &len))) m[count++] = (tok_span){i, i + len};
    int rc = tok_split_at(c, t, m, count, behavior, 0, out);
    free(m);
    return rc;
}

static int split_regex(const err_ctx *c, const tok_norm *t, const tok_regex *r,
                       tok_behavior behavior, int invert, tok_splits *out)
{
    if (t->n == 0) return 0; /* find_matches has no match there: one empty piece, dropped */
    tok_span *m = NULL;
    size_t count = 0, cap = 0;
    int rc = tok_regex_all(c, r, t->s, t->n, &m, &count, &cap);
    if (rc == 0) rc = tok_split_at(c, t, m, count, behavior, invert, out);
    free(m);
    return rc;
}

/* Rust's char::is_numeric: the general categories Nd, Nl and No. */
static int is_numeric(int32_t ch)
{
    utf8proc_category_t cat = utf8proc_category(ch);
    return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
           cat == UTF8PROC_CATEGORY_NO;
}

static int whitespace_split(const err_ctx *c, const tok_pretokenizer *p, tok_norm *t,
                            tok_splits *out)
{
    (void)p;
    return split_chars(c, t, tok_is_ws, TOK_REMOVED, out);
}

static int punctuation(const err_ctx *c, const tok_pretokenizer *p, tok_norm *t, tok_splits *out)
{
    return split_chars(c, t, tok_is_punct, p ? p->behavior : TOK_ISOLATED, out);
}

static int digits(const err_ctx *c, const tok_pretokenizer *p, tok_norm *t, tok_splits *out)
{
    return split_chars(c, t, is_numeric, p->individual_digits ? TOK_ISOLATED : TOK_CONTIGUOUS, out);
}

/* Whitespace: the words and runs of other non-space characters kept, the rest removed. */
static int whitespace(const err_ctx *c, const tok_pretokenizer *p, tok_norm *t, tok_splits *out)
{
    return split_regex(c, t, p->regex, TOK_REMOVED, 1, out);
}

static int split(const err_ctx *c, const tok_pretokenizer *p, tok_norm *t, tok_splits *out)
{
    return split_regex(c, t, p->regex, p->behavior, p->invert, out);
}

/* ------------------------------------------------------------------------- Metaspace ---- */

static int starts_with(const tok_norm *t, const char *s, size_t n)
{
    return t->n >= n && memcmp(t->s, s, n) == 0;
}

/* The bytes [i, i + n) of every occurrence of s[0..n) in t (n > 0), as matches. */
static int find_all(const err_ctx *c, const tok_norm *t, const char *s, size_t n, tok_span **m,
                    size_t *count)
{
    *m = NULL;
    *count = 0;
    size_t found = 0;
    for (size_t i = 0; i + n <= t->n; i++)
        if (memcmp(t->s + i, s, n) == 0) found++, i += n - 1;
    if (!found) return 0;
    *m = malloc(found * sizeof **m);
    if (!*m) return io_fail_oom(c, "pre_tokenizer: out of memory for %zu matches", found);
    for (size_t i = 0; i + n <= t->n; i++)
        if (memcmp(t->s + i, s, n) == 0) (*m)[(*count)++] = (tok_span){i, i + n}, i += n - 1;
    return 0;
}

static int metaspace(const err_ctx *c, const tok_pretokenizer *p, tok_norm *t, tok_splits *out)
{
    tok_span *m;
    size_t count;
    if (find_all(c, t, " ", 1, &m, &count) != 0) return -1;
    int rc = tok_norm_replace(c, t, m, count, p->replacement_utf8, p->replacement_len);
    free(m);
    if (rc != 0) return -1;
    /* "first": only the split that starts the original text */
    int prepend = p->prepend == PREPEND_ALWAYS || (p->prepend == PREPEND_FIRST && t->origin == 0);
    if (prepend && !starts_with(t, p->replacement_utf8, p->replacement_len) &&
        tok_norm_prepend(c, t, p->replacement_utf8, p->replacement_len) != 0)
        return -1;
    if (!p->split) {
        tok_norm whole = *t;
        memset(t, 0, sizeof *t);
        if (tok_splits_push(c, out, &whole) == 0) return 0;
        *t = whole;
        return -1;
    }
    if (find_all(c, t, p->replacement_utf8, p->replacement_len, &m, &count) != 0) return -1;
    rc = tok_split_at(c, t, m, count, TOK_MERGED_WITH_NEXT, 0, out);
    free(m);
    return rc;
}

/* ------------------------------------------------------------------------- ByteLevel ---- */

/* bytes_char: the printable bytes stand for themselves, the others (0-32, 127-160, 173) for
 * 256 on, in order. */
static int32_t byte_char(unsigned char b)
{
    if (b <= 32) return 256 + b;
    if (b >= 127 && b <= 160) return 256 + 33 + (b - 127);
    if (b == 173) return 256 + 33 + 34;
    return b;
}

static int byte_level_split(const err_ctx *c, const tok_pretokenizer *p, tok_norm *t,
                            tok_splits *out)
{
    if (p->add_prefix_space && !starts_with(t, " ", 1) && tok_norm_prepend(c, t, " ", 1) != 0)
        return -1;
    if (p->use_regex) return split_regex(c, t, p->regex, TOK_ISOLATED, 0, out);
    tok_norm whole = *t;
    memset(t, 0, sizeof *t);
    if (tok_splits_push(c, out, &whole) == 0) return 0;
    *t = whole;
    return -1;
}

/* Every byte of the text to its character: a character's first byte replaces it, the others
 * are inserted after. */
static int byte_level_map(const err_ctx *c, tok_norm *t)
{
    tok_changes ch = {0};
    size_t len;
    int rc = 0;
    for (size_t i = 0; i < t->n && rc == 0; i += len) {
        tok_utf8_next(t->s + i, t->n - i, &len);
        for (size_t k = 0; k < len && rc == 0; k++)
            rc = tok_changes_push(c, &ch, byte_char((unsigned char)t->s[i + k]), k > 0);
    }
    if (rc == 0) rc = tok_norm_transform_all(c, t, &ch, 0);
    tok_changes_free(&ch);
    return rc;
}

static int byte_level(const err_ctx *c, const tok_pretokenizer *p, tok_splits *s)
{
    if (split_each(c, p, byte_level_split, s) != 0) return -1;
    for (size_t i = 0; i < s->n; i++)
        if (!s->v[i].done && byte_level_map(c, &s->v[i].text) != 0) return -1;
    return 0;
}

/* -------------------------------------------------------------------------------- run ---- */

int tok_pretokenizer_run(const err_ctx *c, const tok_pretokenizer *p, tok_splits *s)
{
    switch (p->kind) {
    case PRETOK_METASPACE:
        return split_each(c, p, metaspace, s);
    case PRETOK_BYTE_LEVEL:
        return byte_level(c, p, s);
    case PRETOK_WHITESPACE:
        return split_each(c, p, whitespace, s);
    case PRETOK_WHITESPACE_SPLIT:
        return split_each(c, p, whitespace_split, s);
    case PRETOK_PUNCTUATION:
        return split_each(c, p, punctuation, s);
    case PRETOK_DIGITS:
        return split_each(c, p, digits, s);
    case PRETOK_SPLIT:
        return split_each(c, p, split, s);
    case PRETOK_BERT:
        /* whitespace removed, then punctuation isolated */
        if (split_each(c, p, whitespace_split, s) != 0) return -1;
        return split_each(c, NULL, punctuation, s);
    case PRETOK_SEQUENCE:
        for (size_t i = 0; i < p->count; i++)
            if (tok_pretokenizer_run(c, p->children[i], s) != 0) return -1;
        return 0;
    }
    return 0;
}
