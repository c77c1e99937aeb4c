/* Regular expressions for the tokenizer's components, on PCRE2, read as tokenizers reads its
 * patterns with Oniguruma: the iteration over matches follows the onig crate's find_iter as
 * tokenizers' tokenizers/src/utils/onig.rs and tokenizers/src/tokenizer/pattern.rs use it (an
 * empty match right at the previous match's end is skipped and the search moves one character
 * on), and Oniguruma's Unicode classes are spelled out as properties, since PCRE2's \s, \w and \d
 * differ from them: \s is White_Space, \w is Alphabetic, marks, Nd, Pc and Join_Control, \d is
 * Nd, \h a hexadecimal digit. Matching has a limit, so that a hostile pattern fails instead of
 * running for ever. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tok_pipeline.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

struct tok_regex {
    pcre2_code *code;
    pcre2_match_context *limits;
};

/* Enough for any real tokenizer pattern on a 10,000-character text; a catastrophic pattern hits
 * it quickly instead of hanging the caller. */
enum { MATCH_LIMIT = 10000000, DEPTH_LIMIT = 100000 };

/* A growable pattern text. */
typedef struct pat_buf {
    char *s;
    size_t n, cap;
} pat_buf;

static int put(pat_buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) return -1;
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
    return 0;
}

static int puts_(pat_buf *b, const char *s)
{
    return put(b, s, strlen(s));
}

/* Oniguruma's meaning of a class escape, as PCRE2 text: `in_class` for inside [...], where only
 * the items go, without the brackets. NULL for an escape left as it is; "" for one that has no
 * spelling inside a class. */
static const char *class_escape(char e, int in_class)
{
    static const char word[] = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}";
    switch (e) {
    case 's':
        return in_class ? "\\p{White_Space}" : "[\\p{White_Space}]";
    case 'S':
        return in_class ? "\\P{White_Space}" : "[^\\p{White_Space}]";
    case 'd':
        return in_class ? "\\p{Nd}" : "[\\p{Nd}]";
    case 'D':
        return in_class ? "\\P{Nd}" : "[^\\p{Nd}]";
    case 'h':
        return in_class ? "0-9a-fA-F" : "[0-9a-fA-F]";
    case 'H':
        return in_class ? "" : "[^0-9a-fA-F]";
    case 'w':
        return in_class ? word : "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]";
    case 'W':
        return in_class ? "" : "[^\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]";
    default:
        return NULL;
    }
}

/* The pattern with Oniguruma's class escapes spelled as PCRE2 reads them; everything else is
 * copied, escapes whole (so that "\\s" stays a backslash and an s). */
static int translate(const err_ctx *c, const char *p, size_t n, pat_buf *out)
{
    int in_class = 0;
    for (size_t i = 0; i < n; i++) {
        int ok = 0;
        if (p[i] == '\\' && i + 1 < n) {
            const char *spelled = class_escape(p[i + 1], in_class);
            if (spelled && !*spelled)
                return io_fail(c, "regex: \\%c inside a character class is not supported",
                               p[i + 1]);
            ok = spelled ? puts_(out, spelled) : put(out, p + i, 2);
            i++;
        } else {
            if (p[i] == '[' && !in_class) {
                in_class = 1;
                ok = put(out, p + i, 1);
                /* a ']' first in a class (or after '^') is a member, not the end */
                if (i + 1 < n && p[i + 1] == '^') ok = ok ? ok : put(out, p + ++i, 1);
                if (i + 1 < n && p[i + 1] == ']') ok = ok ? ok : put(out, p + ++i, 1);
            } else if (in_class && p[i] == '[' && i + 1 < n && p[i + 1] == ':') {
                /* a POSIX class, [:alpha:], copied whole */
                size_t len = 2;
                while (i + len < n && !(p[i + len - 1] == ':' && p[i + len] == ']'))
                    len++;
                len = i + len < n ? len + 1 : 1;
                ok = put(out, p + i, len);
                i += len - 1;
            } else {
                if (p[i] == ']') in_class = 0;
                ok = put(out, p + i, 1);
            }
        }
        if (ok != 0) return io_fail_oom(c, "regex: out of memory for a pattern");
    }
    return put(out, "", 0) == 0 ? 0 : io_fail_oom(c, "regex: out of memory for a pattern");
}

void tok_regex_free(tok_regex *r)
{
    if (!r) return;
    pcre2_code_free(r->code);
    pcre2_match_context_free(r->limits);
    free(r);
}

static int compile_translated(const err_ctx *c, const char *pattern, size_t n, tok_regex *r)
{
    pat_buf text = {0};
    if (translate(c, pattern, n, &text) != 0) {
        free(text.s);
        return -1;
    }
    int code = 0;
    PCRE2_SIZE at = 0;
    /* Oniguruma's ^ and $ match at line ends, and a newline is "\n" alone. */
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    if (!cc) {
        free(text.s);
        return io_fail_oom(c, "regex: out of memory");
    }
    pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
    r->code = pcre2_compile((PCRE2_SPTR)text.s, text.n, PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE,
                            &code, &at, cc);
    pcre2_compile_context_free(cc);
    free(text.s);
    if (!r->code) {
        PCRE2_UCHAR why[160];
        pcre2_get_error_message(code, why, sizeof why);
        return io_fail(c, "regex: pattern \"%.*s\": %s", (int)(n > 200 ? 200 : n), pattern,
                       (const char *)why);
    }
    return 0;
}

int tok_regex_compile(const err_ctx *c, const char *pattern, size_t n, tok_regex **out)
{
    *out = NULL;
    tok_regex *r = calloc(1, sizeof *r);
    if (!r) return io_fail_oom(c, "regex: out of memory");
    if (compile_translated(c, pattern, n, r) != 0) {
        tok_regex_free(r);
        return -1;
    }
    r->limits = pcre2_match_context_create(NULL);
    if (!r->limits) {
        tok_regex_free(r);
        return io_fail_oom(c, "regex: out of memory");
    }
    pcre2_set_match_limit(r->limits, MATCH_LIMIT);
    pcre2_set_depth_limit(r->limits, DEPTH_LIMIT);
    *out = r;
    return 0;
}

static int push_span(const err_ctx *c, tok_span **out, size_t *count, size_t *cap, size_t start,
                     size_t end)
{
    if (*count == *cap) {
        size_t grown = *cap ? *cap * 2 : 16;
        if (grown > SIZE_MAX / sizeof **out) return io_fail_oom(c, "regex: too many matches");
        tok_span *p = realloc(*out, grown * sizeof **out);
        if (!p) return io_fail_oom(c, "regex: out of memory for %zu matches", grown);
        *out = p;
        *cap = grown;
    }
    (*out)[(*count)++] = (tok_span){start, end};
    return 0;
}

/* The length of the UTF-8 character at s[0] (1 for a stray byte, so the search moves on). */
static size_t char_len(const char *s, size_t left)
{
    unsigned char b = (unsigned char)s[0];
    size_t len = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
    return len > left ? left : len;
}

int tok_regex_all(const err_ctx *c, const tok_regex *r, const char *s, size_t n, tok_span **out,
                  size_t *count, size_t *cap)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(r->code, NULL);
    if (!md) return io_fail_oom(c, "regex: out of memory for a match");
    size_t from = 0, last_end = 0;
    int any = 0, rc = 0;
    uint32_t checked = 0; /* the text's UTF-8 is checked by the first search only */
    while (from <= n) {
        int m = pcre2_match(r->code, (PCRE2_SPTR)s, n, from, checked, md, r->limits);
        checked = PCRE2_NO_UTF_CHECK;
        if (m == PCRE2_ERROR_NOMATCH) break;
        if (m < 0) {
            PCRE2_UCHAR why[160];
            pcre2_get_error_message(m, why, sizeof why);
            rc = io_fail(c, "regex: matching a text of %zu bytes: %s", n, (const char *)why);
            break;
        }
        const PCRE2_SIZE *v = pcre2_get_ovector_pointer(md);
        size_t start = v[0], end = v[1];
        if (start == end && any && end == last_end) {
            /* the empty match right after the last one: skipped, one character on */
            if (from >= n) break;
            from += char_len(s + from, n - from);
            continue;
        }
        if (push_span(c, out, count, cap, start, end) != 0) {
            rc = -1;
            break;
        }
        any = 1;
        from = last_end = end;
    }
    pcre2_match_data_free(md);
    return rc;
}
