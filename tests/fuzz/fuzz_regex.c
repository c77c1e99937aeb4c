/* libFuzzer harness for the tokenizer's regular expressions (src/io/tok_regex.c) and what is
 * done with their matches (tok_split.c's splitting, tok_norm.c's Replace): a pattern translated
 * from Oniguruma's or the regex crate's dialect, compiled and matched over a text with the match
 * limit, which must end every search (a hang is a failure: run.sh's -timeout).
 *
 * Input: a flags byte (bit 0: the regex crate's dialect, else Oniguruma's; bits 1-3: the split
 * behaviour in tok_behavior's order, 5 and up none; bit 4: invert), the pattern, a NUL, the
 * text. The matches must be in order, apart, inside the text and on its character boundaries,
 * and the pieces of a split must be the text's own bytes in order. */
#define _GNU_SOURCE /* fuzz_util.h: memfd_create, mkdtemp, nftw */
#include "fuzz_util.h"
#include "io/tok_pipeline.h"
#include "io/tok_norm_ops.h"
#include "io/tok_pretokenizers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int starts_char(const char *s, size_t n, size_t at)
{
    return at == n || ((unsigned char)s[at] & 0xC0) != 0x80;
}

static void check_matches(const char *s, size_t n, const tok_span *m, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (m[i].start > m[i].end || m[i].end > n) abort();
        if (i && m[i].start < m[i - 1].end) abort();
        if (!starts_char(s, n, m[i].start) || !starts_char(s, n, m[i].end)) abort();
    }
}

/* Every piece's bytes are the text's, in order; removed delimiters are the only gaps. */
static void check_pieces(const tok_norm *t, const tok_splits *pieces)
{
    size_t at = 0;
    for (size_t i = 0; i < pieces->n; i++) {
        const tok_norm *p = &pieces->v[i].text;
        if (p->n == 0) abort();
        const char *found = NULL;
        for (size_t k = at; k + p->n <= t->n && !found; k++)
            if (memcmp(t->s + k, p->s, p->n) == 0) found = t->s + k;
        if (!found) abort();
        at = (size_t)(found - t->s) + p->n;
    }
}

static void split_and_replace(int flags, const char *s, size_t n, const tok_span *m, size_t count)
{
    char err[256];
    err_ctx c = {"fuzz_regex", err, sizeof err};
    int behavior = (flags >> 1) & 7;
    tok_norm t = {0};
    tok_splits pieces = {0};
    if (tok_norm_init(&c, &t, s, n, 0) != 0) return;
    if (behavior <= TOK_CONTIGUOUS &&
        tok_split_at(&c, &t, m, count, (tok_behavior)behavior, flags & 16, &pieces) == 0)
        check_pieces(&t, &pieces);
    tok_splits_free(&pieces);
    if (tok_norm_replace(&c, &t, m, count, "<\u2581>", 5) == 0)
        for (size_t i = 0; i < t.n; i++)
            if (t.align[2 * i] > t.align[2 * i + 1] || t.align[2 * i + 1] > n) abort();
    tok_norm_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int flags = data[0];
    const uint8_t *pattern = data + 1, *nul = memchr(pattern, 0, size - 1);
    size_t pattern_len = nul ? (size_t)(nul - pattern) : size - 1;
    char *text = nul ? fuzz_strndup(nul + 1, size - 1 - pattern_len - 1) : fuzz_strndup(data, 0);
    if (!text) return 0;
    size_t n = strlen(text);
    char err[256];
    err_ctx c = {"fuzz_regex", err, sizeof err};
    tok_regex *r;
    int rc = flags & 1 ? tok_regex_compile_rust(&c, (const char *)pattern, pattern_len, &r)
                       : tok_regex_compile(&c, (const char *)pattern, pattern_len, &r);
    if (rc == 0) {
        tok_span *m = NULL;
        size_t count = 0, cap = 0;
        if (tok_regex_all(&c, r, text, n, &m, &count, &cap) == 0) {
            check_matches(text, n, m, count);
            split_and_replace(flags, text, n, m, count);
        }
        free(m);
        tok_regex_free(r);
    }
    free(text);
    return 0;
}
