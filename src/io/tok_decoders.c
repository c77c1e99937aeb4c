/* The decoders (tok_pipeline.h): each as tokenizers' decode_chain in
 * tokenizers/src/decoders/mod.rs (DecoderWrapper's reading), decoders/bpe.rs, byte_fallback.rs,
 * fuse.rs, sequence.rs, strip.rs, wordpiece.rs, pre_tokenizers/metaspace.rs,
 * pre_tokenizers/byte_level.rs and normalizers/replace.rs (with tokenizer/pattern.rs's
 * find_matches). The reading of each is in tok_decoders_load.c. */
#include "tok_decoders_internal.h"
#include "tok_fields.h"
#include "tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

#define REPLACEMENT_CHARACTER 0xFFFD

static int push_bytes(const err_ctx *c, tok_strs *out, const bytes *b)
{
    return tok_strs_push(c, out, b->v ? b->v : "", b->n);
}

static int oom(const err_ctx *c)
{
    return io_fail_oom(c, "decoder: out of memory");
}

/* Rust's str::replace: every non-overlapping `pat` from the left by `rep`; an empty `pat`
 * matches before every character and at the end. */
static int put_replaced(bytes *b, const char *s, size_t n, const char *pat, size_t pn,
                        const char *rep, size_t rn)
{
    size_t i = 0, len;
    while (i <= n) {
        if (pn == 0) {
            if (bytes_put(b, rep, rn) != 0) return -1;
            if (i == n) break;
            tok_utf8_decode(s + i, n - i, &len);
            if (bytes_put(b, s + i, len) != 0) return -1;
            i += len;
        } else if (i + pn <= n && memcmp(s + i, pat, pn) == 0) {
            if (bytes_put(b, rep, rn) != 0) return -1;
            i += pn;
        } else {
            if (i == n || bytes_put(b, s + i, 1) != 0) return i == n ? 0 : -1;
            i++;
        }
    }
    return 0;
}

/* metaspace.rs: the replacement back to spaces, all of them dropped from the first token
 * unless prepend_scheme is never. */
static int run_metaspace(const err_ctx *c, const tok_decoder *d, const tok_strs *in, tok_strs *out,
                         bytes *b)
{
    for (size_t i = 0; i < in->n; i++) {
        b->n = 0;
        for (size_t k = 0, len; k < in->lens[i]; k += len) {
            int32_t ch = tok_utf8_decode(in->v[i] + k, in->lens[i] - k, &len);
            int rc = 0;
            if (ch != d->replacement)
                rc = bytes_put(b, in->v[i] + k, len);
            else if (i > 0 || d->prepend_never)
                rc = bytes_put(b, " ", 1);
            if (rc != 0) return oom(c);
        }
        if (push_bytes(c, out, b) != 0) return -1;
    }
    return 0;
}

/* byte_level.rs's CHAR_BYTES: the byte a byte-level character stands for, -1 for none. The
 * printable bytes stand for themselves; the 68 others, in order, for U+0100 on. */
static int byte_of_char(int32_t ch)
{
    if ((ch >= '!' && ch <= '~') || (ch >= 0xA1 && ch <= 0xAC) || (ch >= 0xAE && ch <= 0xFF))
        return ch;
    int n = ch - 0x100;
    if (n < 0 || n >= 68) return -1;
    return n < 33 ? n : n < 67 ? 0x7F + (n - 33) : 0xAD;
}

/* The length of the valid UTF-8 sequence at s[0..n), or 0 with *bad the bytes that one U+FFFD
 * replaces (Rust's from_utf8_lossy: the longest prefix of a valid sequence, at least one). */
static size_t utf8_valid(const unsigned char *s, size_t n, size_t *bad)
{
    unsigned char b = s[0];
    size_t need = b < 0x80                 ? 1
                  : b >= 0xC2 && b <= 0xDF ? 2
                  : b >= 0xE0 && b <= 0xEF ? 3
                  : b >= 0xF0 && b <= 0xF4 ? 4
                                           : 0;
    if (need == 0) return *bad = 1, 0;
    for (size_t k = 1; k < need; k++) {
        unsigned char lo = 0x80, hi = 0xBF;
        if (k == 1 && b == 0xE0) lo = 0xA0;
        if (k == 1 && b == 0xED) hi = 0x9F;
        if (k == 1 && b == 0xF0) lo = 0x90;
        if (k == 1 && b == 0xF4) hi = 0x8F;
        if (k >= n || s[k] < lo || s[k] > hi) return *bad = k, 0;
    }
    return need;
}

static int put_lossy(bytes *b, const char *s, size_t n)
{
    for (size_t i = 0, len, bad; i < n; i += len ? len : bad) {
        len = utf8_valid((const unsigned char *)s + i, n - i, &bad);
        if ((len ? bytes_put(b, s + i, len) : bytes_put_char(b, REPLACEMENT_CHARACTER)) != 0)
            return -1;
    }
    return 0;
}

/* byte_level.rs: every token's characters back to bytes (a token with a character outside
 * the byte-level alphabet as it is), then one string of them all, made valid. */
static int run_byte_level(const err_ctx *c, const tok_strs *in, tok_strs *out, bytes *raw, bytes *b)
{
    for (size_t i = 0; i < in->n; i++) {
        size_t mark = raw->n, len;
        for (size_t k = 0; k < in->lens[i]; k += len) {
            int byte = byte_of_char(tok_utf8_decode(in->v[i] + k, in->lens[i] - k, &len));
            if (byte < 0) {
                raw->n = mark;
                if (bytes_put(raw, in->v[i], in->lens[i]) != 0) return oom(c);
                break;
            }
            char ch = (char)byte;
            if (bytes_put(raw, &ch, 1) != 0) return oom(c);
        }
    }
    if (put_lossy(b, raw->v, raw->n) != 0) return oom(c);
    return push_bytes(c, out, b);
}

static const char *const cleanups[][2] = {
    {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
    {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
    {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
};

/* wordpiece.rs: the prefix off a continuing piece, a space before any other but the first,
 * then the cleanup's replacements one after the other. */
static int run_wordpiece(const err_ctx *c, const tok_decoder *d, const tok_strs *in, tok_strs *out,
                         bytes *b, bytes *tmp)
{
    for (size_t i = 0; i < in->n; i++) {
        const char *s = in->v[i];
        size_t n = in->lens[i];
        b->n = 0;
        if (i > 0 && n >= d->prefix_len && memcmp(s, d->prefix, d->prefix_len) == 0)
            s += d->prefix_len, n -= d->prefix_len;
        else if (i > 0 && bytes_put(b, " ", 1) != 0)
            return oom(c);
        if (bytes_put(b, s, n) != 0) return oom(c);
        for (size_t k = 0; d->cleanup && k < sizeof cleanups / sizeof cleanups[0]; k++) {
            tmp->n = 0;
            if (put_replaced(tmp, b->v ? b->v : "", b->n, cleanups[k][0], strlen(cleanups[k][0]),
                             cleanups[k][1], strlen(cleanups[k][1])) != 0)
                return oom(c);
            bytes swap = *b;
            *b = *tmp;
            *tmp = swap;
        }
        if (push_bytes(c, out, b) != 0) return -1;
    }
    return 0;
}

/* A "<0xHH>" token's byte (Rust's u8::from_str_radix(HH, 16), which takes a '+' sign), or -1. */
static int fallback_byte(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int value = 0;
    for (size_t i = s[3] == '+' ? 4 : 3; i < 5; i++) {
        char ch = s[i];
        int digit = ch >= '0' && ch <= '9'   ? ch - '0'
                    : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                    : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                             : -1;
        if (digit < 0) return -1;
        value = value * 16 + digit;
    }
    return value;
}

/* The bytes of a run of byte tokens: one string when valid UTF-8, else a U+FFFD each. */
static int flush_bytes(const err_ctx *c, tok_strs *out, bytes *run)
{
    size_t bad, at = 0, len = 1;
    while (at < run->n &&
           (len = utf8_valid((const unsigned char *)run->v + at, run->n - at, &bad)) > 0)
        at += len;
    int rc = 0;
    if (at == run->n && run->n > 0) rc = push_bytes(c, out, run);
    for (size_t i = 0; at < run->n && i < run->n && rc == 0; i++)
        rc = tok_strs_push(c, out, "\xEF\xBF\xBD", 3);
    run->n = 0;
    return rc;
}

/* byte_fallback.rs */
static int run_byte_fallback(const err_ctx *c, const tok_strs *in, tok_strs *out, bytes *run)
{
    for (size_t i = 0; i < in->n; i++) {
        int byte = fallback_byte(in->v[i], in->lens[i]);
        if (byte >= 0) {
            char ch = (char)byte;
            if (bytes_put(run, &ch, 1) != 0) return oom(c);
            continue;
        }
        if (flush_bytes(c, out, run) != 0 || tok_strs_push(c, out, in->v[i], in->lens[i]) != 0)
            return -1;
    }
    return flush_bytes(c, out, run);
}

static int run_fuse(const err_ctx *c, const tok_strs *in, tok_strs *out, bytes *b)
{
    for (size_t i = 0; i < in->n; i++)
        if (bytes_put(b, in->v[i], in->lens[i]) != 0) return oom(c);
    return push_bytes(c, out, b);
}

/* strip.rs: up to `start` contents off the front and `stop` off the back, by characters.
 * Where tokenizers panics (a token all content and shorter than stop; the cuts crossing),
 * an error. */
static int strip_one(const err_ctx *c, const tok_decoder *d, const char *s, size_t n, tok_strs *out)
{
    size_t from = 0, to = n, len, chars = 0;
    for (size_t i = 0; i < n; i += len, chars++)
        tok_utf8_decode(s + i, n - i, &len);
    for (size_t i = 0; i < d->start && from < n; i++) {
        if (tok_utf8_decode(s + from, n - from, &len) != d->content) break;
        from += len;
    }
    for (size_t i = 0; i < d->stop; i++) {
        if (i == chars)
            return io_fail(c,
                           "decoder: Strip: a token of %zu characters, all \"content\", "
                           "cannot lose %u from its end",
                           chars, (unsigned)d->stop);
        size_t at = to - 1;
        while (at > 0 && ((unsigned char)s[at] & 0xC0) == 0x80)
            at--;
        if (tok_utf8_decode(s + at, to - at, &len) != d->content) break;
        to = at;
    }
    if (from > to) return io_fail(c, "decoder: Strip: the start and stop cuts cross in a token");
    return tok_strs_push(c, out, s + from, to - from);
}

static int run_strip(const err_ctx *c, const tok_decoder *d, const tok_strs *in, tok_strs *out)
{
    for (size_t i = 0; i < in->n; i++)
        if (strip_one(c, d, in->v[i], in->lens[i], out) != 0) return -1;
    return 0;
}

/* replace.rs's decode_chain: each match of the pattern in a token by the content. */
static int replace_one(const err_ctx *c, const tok_decoder *d, const char *s, size_t n,
                       tok_span **spans, size_t *cap, bytes *b)
{
    b->n = 0;
    if (n == 0) return 0; /* pattern.rs: an empty text has no match, not even an empty one */
    if (!d->regex) {
        if (put_replaced(b, s, n, d->pattern, d->pattern_len, d->content_str, d->content_len) != 0)
            return oom(c);
        return 0;
    }
    size_t count = 0, at = 0;
    if (tok_regex_all(c, d->regex, s, n, spans, &count, cap) != 0) return -1;
    for (size_t k = 0; k < count; k++) {
        if (bytes_put(b, s + at, (*spans)[k].start - at) != 0 ||
            bytes_put(b, d->content_str, d->content_len) != 0)
            return oom(c);
        at = (*spans)[k].end;
    }
    return bytes_put(b, s + at, n - at) != 0 ? oom(c) : 0;
}

static int run_replace(const err_ctx *c, const tok_decoder *d, const tok_strs *in, tok_strs *out,
                       bytes *b)
{
    tok_span *spans = NULL;
    size_t cap = 0;
    int rc = 0;
    for (size_t i = 0; i < in->n && rc == 0; i++)
        if ((rc = replace_one(c, d, in->v[i], in->lens[i], &spans, &cap, b)) == 0)
            rc = push_bytes(c, out, b);
    free(spans);
    return rc;
}

/* bpe.rs: the suffix to a space, but to nothing in the last token. */
static int run_bpe(const err_ctx *c, const tok_decoder *d, const tok_strs *in, tok_strs *out,
                   bytes *b)
{
    for (size_t i = 0; i < in->n; i++) {
        b->n = 0;
        const char *rep = i + 1 == in->n ? "" : " ";
        if (put_replaced(b, in->v[i], in->lens[i], d->suffix, d->suffix_len, rep, strlen(rep)))
            return oom(c);
        if (push_bytes(c, out, b) != 0) return -1;
    }
    return 0;
}

static int run_one(const err_ctx *c, const tok_decoder *d, const tok_strs *in, tok_strs *out,
                   bytes *b, bytes *tmp)
{
    switch (d->kind) {
    case DEC_METASPACE:
        return run_metaspace(c, d, in, out, b);
    case DEC_BYTE_LEVEL:
        return run_byte_level(c, in, out, tmp, b);
    case DEC_WORDPIECE:
        return run_wordpiece(c, d, in, out, b, tmp);
    case DEC_BYTE_FALLBACK:
        return run_byte_fallback(c, in, out, b);
    case DEC_FUSE:
        return run_fuse(c, in, out, b);
    case DEC_STRIP:
        return run_strip(c, d, in, out);
    case DEC_REPLACE:
        return run_replace(c, d, in, out, b);
    case DEC_BPE:
        return run_bpe(c, d, in, out, b);
    case DEC_SEQUENCE:
        break;
    }
    return 0;
}

/* The decoded tokens may be at most this many times the tokens' bytes, plus GROWTH_SLACK:
 * far more than any real decoder makes, while a hostile sequence of Replaces of an empty
 * pattern would multiply the text at every step. */
enum { GROWTH_FACTOR = 64, GROWTH_SLACK = 4096 };

static size_t total_bytes(const tok_strs *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += s->lens[i];
    return n;
}

static int run_chain(const err_ctx *c, const tok_decoder *d, tok_strs *tokens, size_t limit)
{
    if (d->kind == DEC_SEQUENCE) {
        for (size_t i = 0; i < d->n_decoders; i++)
            if (run_chain(c, d->decoders[i], tokens, limit) != 0) return -1;
        return 0;
    }
    tok_strs out = {0};
    bytes b = {0}, tmp = {0};
    int rc = run_one(c, d, tokens, &out, &b, &tmp);
    free(b.v);
    free(tmp.v);
    if (rc != 0) {
        tok_strs_free(&out);
        return -1;
    }
    tok_strs_free(tokens);
    *tokens = out;
    size_t n = total_bytes(tokens);
    return n <= limit ? 0
                      : io_fail(c,
                                "decoder: the text would grow to %zu bytes, past %d times the "
                                "tokens'",
                                n, GROWTH_FACTOR);
}

int tok_decoder_run(const err_ctx *c, const tok_decoder *d, tok_strs *tokens)
{
    size_t n = total_bytes(tokens);
    size_t limit = n <= (SIZE_MAX - GROWTH_SLACK) / GROWTH_FACTOR ? n * GROWTH_FACTOR + GROWTH_SLACK
                                                                  : SIZE_MAX;
    return run_chain(c, d, tokens, limit);
}
