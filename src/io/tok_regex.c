/* Regular expressions for the tokenizer's components, on PCRE2, read as tokenizers reads its
 * patterns: with Oniguruma (Split, ByteLevel, Replace) or the regex crate (Whitespace). The
 * iteration over matches follows the onig crate's find_iter as tokenizers' utils/onig.rs and
 * tokenizer/pattern.rs use it: an empty match right at the previous match's end is skipped and
 * the search moves one character on. Oniguruma's ^ and $ are line anchors and its (?m) is
 * PCRE2's (?s). The Unicode classes (\p{..}, \w, \s, \d) are spelled out as PCRE2 class
 * items from tables read off tokenizers itself (tok_regex_tables.h): PCRE2's Unicode is of
 * another version, and its \w, \d and scripts mean other sets. Matching has a limit, so that a
 * hostile pattern fails instead of running for ever. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tok_pipeline.h"

#include "tok_pretokenizers.h"

#include <pcre2.h>
#include <stdio.h>
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

/* A Unicode class as PCRE2 class items (tok_regex_tables.h). */
typedef struct tok_uclass {
    const char *name;    /* lowercase, without spaces, '_' or '-', as Oniguruma compares them */
    const char *items;   /* the class's members, for inside [...] */
    const char *negated; /* its complement as one item, or NULL where it has none */
} tok_uclass;

typedef struct tok_urange {
    int32_t lo, hi;
} tok_urange;

#include "tok_regex_tables.h"

#define COUNT(a) (sizeof(a) / sizeof *(a))

static const tok_uclass *find_class(const char *name)
{
    for (size_t i = 0; i < COUNT(tok_uclasses); i++)
        if (strcmp(tok_uclasses[i].name, name) == 0) return &tok_uclasses[i];
    return NULL;
}

int tok_is_numeric(int32_t ch)
{
    size_t lo = 0, hi = COUNT(tok_numeric);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tok_numeric[mid].hi < ch)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < COUNT(tok_numeric) && tok_numeric[lo].lo <= ch;
}

/* Which regular expression library's meaning the pattern has. */
typedef enum dialect { ONIGURUMA, RUST_REGEX } dialect;

/* A class written in PCRE2: inside [...] its items (or its one negated item), outside a class
 * of its own. */
static int put_class(const err_ctx *c, pat_buf *out, const tok_uclass *u, int negate, int in_class,
                     const char *written)
{
    int ok;
    if (in_class && negate) {
        if (!u->negated)
            return io_fail(c, "regex: %s inside a character class is not supported", written);
        ok = puts_(out, u->negated);
    } else if (in_class) {
        ok = puts_(out, u->items);
    } else {
        ok = puts_(out, negate ? "[^" : "[") || puts_(out, u->items) || puts_(out, "]");
    }
    return ok == 0 ? 0 : io_fail_oom(c, "regex: out of memory for a pattern");
}

/* \p{Name}, \p{^Name}, \P{Name}, \pL at p[0..n) (p[0] is the backslash): *used is its length. */
static int put_property(const err_ctx *c, const char *p, size_t n, int in_class, pat_buf *out,
                        size_t *used)
{
    int negate = p[1] == 'P';
    char name[64];
    size_t k = 0, i = 2;
    if (i < n && p[i] == '{') {
        for (i++; i < n && p[i] != '}'; i++) {
            if (p[i] == '^' && k == 0) {
                negate = !negate;
            } else if (p[i] != ' ' && p[i] != '_' && p[i] != '-' && k + 1 < sizeof name) {
                name[k++] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]);
            }
        }
        if (i == n) return io_fail(c, "regex: \\%c{ without its }", p[1]);
        i++;
    } else if (i < n) {
        name[k++] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]);
        i++;
    }
    name[k] = 0;
    *used = i;
    const tok_uclass *u = find_class(name);
    if (!u) return io_fail(c, "regex: the property \"%.*s\" is not supported", (int)i, p);
    return put_class(c, out, u, negate, in_class, "a negated property");
}

/* \w \W \s \S \d \D (\h \H too, in Oniguruma: a hexadecimal digit); 1 when e is none of them. */
static int put_shorthand(const err_ctx *c, char e, int in_class, dialect d, pat_buf *out)
{
    static const tok_uclass hex = {"\\h", "0-9a-fA-F", NULL};
    char lower = (char)(e >= 'A' && e <= 'Z' ? e + 32 : e);
    if (!strchr("wsdh", lower) || (lower == 'h' && d != ONIGURUMA)) return 1;
    char name[8];
    snprintf(name, sizeof name, "%s\\%c", d == RUST_REGEX && lower != 'd' ? "rust" : "", lower);
    const tok_uclass *u = lower == 'h' ? &hex : find_class(name);
    char written[4] = {'\\', e, 0};
    return put_class(c, out, u, e != lower, in_class, written);
}

static int is_hex4(const char *p, size_t n)
{
    if (n < 4) return 0;
    for (int i = 0; i < 4; i++)
        if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i]) return 0;
    return 1;
}

/* The (?imx-imx) flags: Oniguruma's m is PCRE2's s (a dot matches a newline). */
static size_t put_flags(const char *p, size_t n, pat_buf *out, int *ok)
{
    size_t len = 2;
    while (len < n && strchr("imx-", p[len]))
        len++;
    if (len == 2 || len == n || (p[len] != ':' && p[len] != ')')) {
        *ok = put(out, p, 2);
        return 2;
    }
    *ok = put(out, "(?", 2);
    for (size_t i = 2; i < len && *ok == 0; i++)
        *ok = put(out, p[i] == 'm' ? "s" : p + i, 1);
    return len;
}

/* The pattern with the dialect's Unicode classes spelled as PCRE2 class items; everything else
 * is copied, escapes whole (so that "\\\\s" stays a backslash and an s). */
static int translate(const err_ctx *c, const char *p, size_t n, dialect d, pat_buf *out)
{
    int in_class = 0;
    for (size_t i = 0; i < n; i++) {
        int ok = 0;
        if (p[i] == '\\' && i + 1 < n) {
            size_t used = 2;
            int rc = (p[i + 1] == 'p' || p[i + 1] == 'P')
                         ? put_property(c, p + i, n - i, in_class, out, &used)
                         : put_shorthand(c, p[i + 1], in_class, d, out);
            if (rc < 0) return -1;
            if (rc == 1 && p[i + 1] == 'u' && is_hex4(p + i + 2, n - i - 2)) {
                /* Oniguruma's \uHHHH is PCRE2's \x{HHHH} */
                ok = put(out, "\\x{", 3) || put(out, p + i + 2, 4) || put(out, "}", 1);
                used = 6;
            } else if (rc == 1) {
                ok = put(out, p + i, 2);
            }
            i += used - 1;
        } else if (!in_class && p[i] == '(' && i + 1 < n && p[i + 1] == '?') {
            i += put_flags(p + i, n - i, out, &ok) - 1;
        } else if (p[i] == '[' && !in_class) {
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

static int compile_translated(const err_ctx *c, const char *pattern, size_t n, dialect d,
                              tok_regex *r)
{
    pat_buf text = {0};
    if (translate(c, pattern, n, d, &text) != 0) {
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
    /* \C (one byte, even inside a character) is refused, as Oniguruma refuses it alone: a
     * match must end on a character boundary for the splits cut there */
    r->code = pcre2_compile((PCRE2_SPTR)text.s, text.n,
                            PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE | PCRE2_NEVER_BACKSLASH_C,
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

static int compile(const err_ctx *c, const char *pattern, size_t n, dialect d, tok_regex **out)
{
    *out = NULL;
    tok_regex *r = calloc(1, sizeof *r);
    if (!r) return io_fail_oom(c, "regex: out of memory");
    if (compile_translated(c, pattern, n, d, r) != 0) {
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

int tok_regex_compile(const err_ctx *c, const char *pattern, size_t n, tok_regex **out)
{
    return compile(c, pattern, n, ONIGURUMA, out);
}

/* Every ASCII character but letters and digits escaped: PCRE2 reads an escaped one of those as
 * itself, and no escape is left for the translation to read as a class. */
int tok_regex_compile_literal(const err_ctx *c, const char *s, size_t n, tok_regex **out)
{
    *out = NULL;
    if (n > (SIZE_MAX - 1) / 2) return io_fail_oom(c, "regex: a literal too long");
    char *escaped = malloc(2 * n + 1);
    if (!escaped) return io_fail_oom(c, "regex: out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        int plain = b >= 0x80 || (b >= '0' && b <= '9') || ((b | 0x20) >= 'a' && (b | 0x20) <= 'z');
        if (!plain) escaped[k++] = '\\';
        escaped[k++] = s[i];
    }
    int rc = compile(c, escaped, k, ONIGURUMA, out);
    free(escaped);
    return rc;
}

int tok_regex_compile_rust(const err_ctx *c, const char *pattern, size_t n, tok_regex **out)
{
    return compile(c, pattern, n, RUST_REGEX, out);
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
