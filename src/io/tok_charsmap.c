/* The Precompiled normalizer: SentencePiece's precompiled_charsmap read as the spm_precompiled
 * crate reads it (src/lib.rs: a u32 little-endian trie size in bytes, that many bytes of
 * double-array trie units, the rest the normalized strings' NUL-separated pool; a lookup is the
 * first of the common-prefix matches) and applied as tokenizers'
 * tokenizers/src/normalizers/precompiled.rs does: grapheme by grapheme (extended grapheme
 * clusters, here from utf8proc), a grapheme under 6 bytes looked up whole, else each of its
 * characters, with the changes its `replace` gives. The blob is untrusted: every offset is
 * checked, and a bad one is an error where the crate would panic. */
#include "tok_norm_ops.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

struct tok_charsmap {
    uint32_t *units; /* the double array; NULL for the empty map */
    size_t count;
    char *pool; /* the normalized strings, valid UTF-8 */
    size_t pool_len;
};

void tok_charsmap_free(tok_charsmap *m)
{
    if (!m) return;
    free(m->units);
    free(m->pool);
    free(m);
}

static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

/* Standard base64 with its padding into out (n / 4 * 3 bytes of room); the length, or -1. */
static long long b64_decode(const char *s, size_t n, unsigned char *out)
{
    if (n % 4) return -1;
    size_t w = 0;
    for (size_t i = 0; i < n; i += 4) {
        int pad = (s[i + 3] == '=') + (s[i + 2] == '=' && s[i + 3] == '=');
        if (pad && i + 4 != n) return -1;
        uint32_t v = 0;
        for (int k = 0; k < 4; k++) {
            int d = k >= 4 - pad ? 0 : b64_value((unsigned char)s[i + k]);
            if (d < 0) return -1;
            v = (v << 6) | (uint32_t)d;
        }
        for (int k = 0; k < 3 - pad; k++)
            out[w++] = (unsigned char)(v >> (16 - 8 * k));
    }
    return (long long)w;
}

static uint32_t read_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int parse(const err_ctx *c, const unsigned char *b, size_t n, tok_charsmap *m)
{
    const char *what = "normalizer: Precompiled: precompiled_charsmap";
    if (n < 4) return io_fail(c, "%s: %zu bytes, too short for its trie's size", what, n);
    size_t count = read_u32(b) / 4; /* a size not a multiple of 4 leaves bytes to the pool */
    if (count == 0) return io_fail(c, "%s: an empty trie", what);
    if (count > (n - 4) / 4)
        return io_fail(c, "%s: a trie of %zu units in %zu bytes", what, count, n - 4);
    m->units = malloc(count * sizeof *m->units);
    m->pool_len = n - 4 - count * 4;
    m->pool = malloc(m->pool_len + 1);
    if (!m->units || !m->pool) return io_fail_oom(c, "%s: out of memory", what);
    for (size_t i = 0; i < count; i++)
        m->units[i] = read_u32(b + 4 + 4 * i);
    m->count = count;
    memcpy(m->pool, b + 4 + count * 4, m->pool_len);
    m->pool[m->pool_len] = 0;
    if (utf8proc_decompose((const utf8proc_uint8_t *)m->pool, (utf8proc_ssize_t)m->pool_len, NULL,
                           0, 0) < 0)
        return io_fail(c, "%s: the normalized strings are not UTF-8", what);
    return 0;
}

int tok_charsmap_load(const err_ctx *c, const char *b64, size_t n, tok_charsmap **out)
{
    *out = NULL;
    tok_charsmap *m = calloc(1, sizeof *m);
    unsigned char *blob = malloc(n / 4 * 3 + 1);
    if (!m || !blob) {
        free(m);
        free(blob);
        return io_fail_oom(c, "normalizer: Precompiled: out of memory for %zu bytes", n);
    }
    long long len = b64_decode(b64, n, blob);
    int rc = 0;
    if (len < 0)
        rc = io_fail(c, "normalizer: Precompiled: precompiled_charsmap: not base64");
    else if (len > 0)
        rc = parse(c, blob, (size_t)len, m);
    free(blob);
    if (rc != 0) {
        tok_charsmap_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

/* ------------------------------------------------------------------------------ lookups ---- */

/* The double array's unit fields, as spm_precompiled's ArrayUnit reads them. */
static int has_leaf(uint32_t u)
{
    return (u >> 8) & 1;
}

static uint32_t unit_value(uint32_t u)
{
    return u & 0x7FFFFFFFu;
}

static uint32_t unit_label(uint32_t u)
{
    return u & 0x800000FFu;
}

static size_t unit_offset(uint32_t u)
{
    return (size_t)(u >> 10) << ((u & (1u << 9)) >> 6);
}

/* The first (shortest) key that prefixes s[0..n): its normalized string in *norm, *norm_len;
 * 1 when found, 0 when none, -1 on a malformed trie. */
static int lookup(const err_ctx *c, const tok_charsmap *m, const char *s, size_t n,
                  const char **norm, size_t *norm_len)
{
    size_t pos = unit_offset(m->units[0]);
    for (size_t i = 0; i < n && s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        pos ^= ch;
        if (pos >= m->count) goto bad;
        uint32_t u = m->units[pos];
        if (unit_label(u) != ch) return 0;
        pos ^= unit_offset(u);
        if (!has_leaf(u)) continue;
        if (pos >= m->count) goto bad;
        size_t at = unit_value(m->units[pos]);
        /* the string runs from a character boundary of the pool to its NUL */
        if (at > m->pool_len || (at < m->pool_len && ((unsigned char)m->pool[at] & 0xC0) == 0x80))
            goto bad;
        *norm = m->pool + at;
        *norm_len = strlen(m->pool + at);
        return 1;
    }
    return 0;
bad:
    return io_fail(c, "normalizer: Precompiled: precompiled_charsmap: a trie offset out of "
                      "bounds");
}

/* ---------------------------------------------------------------------------- applying ---- */

static size_t count_chars(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* precompiled.rs's replace: the new characters, the surplus marked inserted at the end, or a
 * shortfall taken off the last change (even one of an earlier part, as tokenizers does). */
static int replace(const err_ctx *c, tok_changes *out, size_t old_chars, const char *s, size_t n)
{
    for (size_t i = 0, len; i < n; i += len)
        if (tok_changes_push(c, out, tok_utf8_next(s + i, n - i, &len), 0) != 0) return -1;
    long long diff = (long long)count_chars(s, n) - (long long)old_chars;
    for (long long k = 0; k < diff; k++)
        out->v[out->n - 1 - (size_t)k].change = 1;
    if (diff < 0 && out->n) out->v[out->n - 1].change += (int)diff;
    return 0;
}

/* One grapheme, whole if short and known, else character by character; *modified set when a
 * lookup hit. */
static int map_grapheme(const err_ctx *c, const tok_charsmap *m, const char *g, size_t n,
                        tok_changes *out, int *modified)
{
    const char *norm = NULL;
    size_t norm_len = 0;
    int hit = 0;
    if (n < 6 && (hit = lookup(c, m, g, n, &norm, &norm_len)) < 0) return -1;
    if (hit) {
        *modified = 1;
        return replace(c, out, count_chars(g, n), norm, norm_len);
    }
    for (size_t i = 0, len; i < n; i += len) {
        int32_t ch = tok_utf8_next(g + i, n - i, &len);
        if ((hit = lookup(c, m, g + i, len, &norm, &norm_len)) < 0) return -1;
        *modified |= hit;
        if ((hit ? replace(c, out, 1, norm, norm_len) : tok_changes_push(c, out, ch, 0)) != 0)
            return -1;
    }
    return 0;
}

int tok_charsmap_run(const err_ctx *c, const tok_charsmap *m, tok_norm *t)
{
    if (!m->units || t->n == 0) return 0;
    tok_changes out = {0};
    int modified = 0, rc = 0;
    utf8proc_int32_t state = 0, prev = -1;
    size_t start = 0; /* the current grapheme's first byte */
    for (size_t i = 0, len; i <= t->n && rc == 0; i += len) {
        int32_t ch = i < t->n ? tok_utf8_next(t->s + i, t->n - i, &len) : -1;
        if (i == t->n) len = 1;
        if (prev >= 0 && (ch < 0 || utf8proc_grapheme_break_stateful(prev, ch, &state))) {
            rc = map_grapheme(c, m, t->s + start, i - start, &out, &modified);
            start = i;
        }
        prev = ch;
    }
    if (rc == 0 && modified) rc = tok_norm_transform_all(c, t, &out, 0);
    tok_changes_free(&out);
    return rc;
}
