/* The tokenizer's encode path, in the order of tokenizers' Tokenizer::encode_char_offsets
 * (tokenizers/src/tokenizer/mod.rs: encode_single_sequence, do_tokenize, post_process): added
 * tokens out of the raw text, normalizer, added tokens out of each normalized piece
 * (tokenizer/added_vocabulary.rs: extract_and_normalize, find_matches), pre-tokenizer, model,
 * the pieces' tokens as one encoding with byte offsets in the original text
 * (tokenizer/pre_tokenizer.rs: into_encoding), truncation (utils/truncation.rs), post-processor,
 * padding (utils/padding.rs, tokenizer/encoding.rs: pad), then the offsets in characters
 * (pre_tokenizer.rs: BytesToCharOffsetConverter; see to_chars for why last here). */
#include "tokenizer_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

size_t tok_utf8_prefix(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k =
            utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &c);
        if (k < 0) break;
        i += (size_t)k;
    }
    return i;
}

/* ---- added tokens ---- */

/* The code point at s[i] (valid UTF-8). */
static int32_t char_at(const char *s, size_t n, size_t i, size_t *len)
{
    utf8proc_int32_t c = 0;
    utf8proc_ssize_t k =
        utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &c);
    *len = k > 0 ? (size_t)k : 1;
    return c;
}

static size_t char_before(const char *s, size_t i)
{
    do
        i--;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80);
    return i;
}

/* The longest token of the set (normalized or not) that s[0..n) starts with. */
static const tok_added *longest_at(const tokenizer *t, int normalized, const char *s, size_t n)
{
    unsigned char b = (unsigned char)s[0];
    if (!(t->first_bytes[normalized][b >> 3] & (1u << (b & 7)))) return NULL;
    const tok_added *best = NULL;
    for (size_t i = 0; i < t->n_added; i++) {
        const tok_added *a = &t->added[i];
        if (a->normalized != normalized || a->match_len == 0 || a->match_len > n) continue;
        if ((!best || a->match_len > best->match_len) && memcmp(a->match, s, a->match_len) == 0)
            best = a;
    }
    return best;
}

/* single_word: no word character (\w) right before or right after. */
static int single_word_ok(const char *s, size_t n, size_t start, size_t end)
{
    size_t len;
    if (start > 0 && tok_is_word_char(char_at(s, n, char_before(s, start), &len))) return 0;
    return end == n || !tok_is_word_char(char_at(s, n, end, &len));
}

/* Where the whitespace (\s) that ends s[0..i) starts. */
static size_t spaces_before(const char *s, size_t n, size_t i)
{
    size_t len;
    while (i > 0 && tok_is_ws(char_at(s, n, char_before(s, i), &len)))
        i = char_before(s, i);
    return i;
}

static size_t spaces_after(const char *s, size_t n, size_t i)
{
    size_t len;
    while (i < n && tok_is_ws(char_at(s, n, i, &len)))
        i += len;
    return i;
}

/* find_matches: s cut into pieces, an added token's id with each match and -1 with the text
 * between. The search is leftmost-longest and goes on after each match (also after one that
 * single_word turned down, and before the spaces rstrip took, as the Aho-Corasick's does). */
static int find_matches(const err_ctx *c, const tokenizer *t, int normalized, const char *s,
                        size_t n, tok_toks *out)
{
    out->n = 0;
    size_t start_offset = 0;
    for (size_t i = 0; i < n;) {
        const tok_added *a = longest_at(t, normalized, s + i, n - i);
        if (!a) {
            i++;
            continue;
        }
        size_t start = i, stop = i + a->match_len;
        i = stop;
        if (a->single_word && !single_word_ok(s, n, start, stop)) continue;
        if (a->lstrip) {
            size_t from = spaces_before(s, n, start);
            start = from > start_offset ? from : start_offset;
        }
        if (a->rstrip) stop = spaces_after(s, n, stop);
        if (start_offset < start && tok_toks_push(c, out, -1, start_offset, start) != 0) return -1;
        if (tok_toks_push(c, out, a->id, start, stop) != 0) return -1;
        start_offset = stop;
    }
    if (start_offset != n || n == 0) return tok_toks_push(c, out, -1, start_offset, n);
    return 0;
}

/* What one call reuses between its texts. */
typedef struct scratch {
    tok_splits splits[2];
    tok_toks matches;
    size_t *chars[2]; /* the character each byte of each text is part of */
    size_t chars_cap[2];
} scratch;

static void scratch_free(scratch *w)
{
    tok_splits_free(&w->splits[0]);
    tok_splits_free(&w->splits[1]);
    free(w->matches.v);
    free(w->chars[0]);
    free(w->chars[1]);
}

static int reserve(const err_ctx *c, size_t **v, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t *p = realloc(*v, need * sizeof *p);
    if (!p) return io_fail_oom(c, "out of memory for %zu entries", need);
    *v = p;
    *cap = need;
    return 0;
}

/* Appends a split to `to`: the normalized text moved in, its tokens and state with it. */
static int move_split(const err_ctx *c, tok_splits *to, tok_split *from)
{
    if (tok_splits_push(c, to, &from->text) != 0) return -1;
    tok_split *d = &to->v[to->n - 1];
    d->toks = from->toks;
    d->done = from->done;
    memset(&from->toks, 0, sizeof from->toks);
    return 0;
}

/* split_with_indices: the pieces of `text` at the matches, each added token a split that is
 * done; empty pieces dropped, as PreTokenizedString::split drops them. */
static int split_added(const err_ctx *c, const tok_norm *text, const tok_toks *matches,
                       tok_splits *to)
{
    for (size_t i = 0; i < matches->n; i++) {
        const tok_tok *m = &matches->v[i];
        if (m->end == m->start) continue;
        tok_norm piece;
        if (tok_norm_slice(c, text, m->start, m->end, &piece) != 0) return -1;
        size_t len = piece.n;
        if (tok_splits_push(c, to, &piece) != 0) return tok_norm_free(&piece), -1;
        if (m->id < 0) continue;
        tok_split *d = &to->v[to->n - 1];
        d->done = 1;
        if (tok_toks_push(c, &d->toks, m->id, 0, len) != 0) return -1;
    }
    return 0;
}

static int has_added(const tokenizer *t, int normalized)
{
    for (size_t i = 0; i < sizeof t->first_bytes[0]; i++)
        if (t->first_bytes[normalized][i]) return 1;
    return 0;
}

/* A piece of `from` at the added tokens of one set, appended to `to`; without any, the piece
 * moves in whole (unless empty), as the slice of all of it that tokenizers makes: its original
 * span now starts where its first byte came from (what Metaspace's prepend_scheme "first"
 * asks of it). */
static int split_or_move(const err_ctx *c, const tokenizer *t, int normalized, scratch *w,
                         tok_split *from, tok_splits *to)
{
    if (!has_added(t, normalized)) {
        if (!from->text.n) return 0;
        size_t end;
        tok_norm_span(&from->text, 0, from->text.n, &from->text.origin, &end);
        return move_split(c, to, from);
    }
    return find_matches(c, t, normalized, from->text.s, from->text.n, &w->matches) ||
                   split_added(c, &from->text, &w->matches, to)
               ? -1
               : 0;
}

/* extract_and_normalize: splits[0] becomes the text's pieces, added tokens done. */
static int extract_and_normalize(const err_ctx *c, const tokenizer *t, const char *s, size_t n,
                                 scratch *w)
{
    tok_splits *raw = &w->splits[1], *out = &w->splits[0];
    tok_split all = {0};
    if (tok_norm_init(c, &all.text, s, n, 0) != 0) return -1;
    int rc = split_or_move(c, t, 0, w, &all, raw);
    tok_norm_free(&all.text);
    for (size_t i = 0; rc == 0 && i < raw->n; i++) {
        tok_split *sp = &raw->v[i];
        if (sp->done) {
            rc = move_split(c, out, sp);
            continue;
        }
        if (t->normalizer) rc = tok_normalizer_run(c, t->normalizer, &sp->text);
        if (rc == 0) rc = split_or_move(c, t, 1, w, sp, out);
    }
    tok_splits_free(raw);
    return rc;
}

/* ---- one text's encoding ---- */

/* One sequence as do_tokenize gives it. tokenizers' Rust source has an early stop where
 * truncation will cut (tokenize_with_limit), which changes which text longest_first cuts
 * more; its Python binding (0.23.3) tokenizes every piece, as here. */
typedef struct sequence {
    tok_enc enc;
    size_t bytes; /* the text's length */
    /* the added tokens' matched texts (Token.value), for the post-processor's trimming: their
     * bytes one after another in `text`, token i's at `at[i]` (SIZE_MAX: the vocabulary's) */
    bytes text;
    size_t *at, *lens, cap;
    const char **values;
} sequence;

static void sequence_free(sequence *q)
{
    tok_enc_free(&q->enc);
    free(q->text.v);
    free(q->at);
    free(q->lens);
    free(q->values);
}

/* Token q->enc.n - 1's value: s[0..n), or none when s is NULL. */
static int note_value(const err_ctx *c, sequence *q, const char *s, size_t n)
{
    size_t i = q->enc.n - 1;
    if (i >= q->cap) {
        size_t cap = q->enc.cap, *at = realloc(q->at, cap * sizeof *at);
        if (at) q->at = at;
        size_t *lens = at ? realloc(q->lens, cap * sizeof *lens) : NULL;
        if (!lens) return io_fail_oom(c, "out of memory for %zu tokens", cap);
        q->lens = lens;
        q->cap = cap;
    }
    q->at[i] = s ? q->text.n : SIZE_MAX;
    q->lens[i] = n;
    return s && bytes_put(&q->text, s, n) != 0 ? io_fail_oom(c, "out of memory") : 0;
}

/* The values as the encoding's pointers, once its text no longer moves. */
static int point_values(const err_ctx *c, sequence *q)
{
    if (!q->text.n) return 0;
    q->values = malloc(q->enc.n * sizeof *q->values);
    if (!q->values) return io_fail_oom(c, "out of memory for %zu tokens", q->enc.n);
    for (size_t i = 0; i < q->enc.n; i++)
        q->values[i] = q->at[i] == SIZE_MAX ? NULL : q->text.v + q->at[i];
    q->enc.values = q->values;
    q->enc.value_lens = q->lens;
    return 0;
}

/* The character each byte of s[0..n) is part of, in w->chars[seq]. */
static int char_map(const err_ctx *c, const char *s, size_t n, int seq, scratch *w)
{
    if (reserve(c, &w->chars[seq], &w->chars_cap[seq], n ? n : 1) != 0) return -1;
    size_t index = 0, *chars = w->chars[seq];
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && ((unsigned char)s[i] & 0xC0) != 0x80) index++;
        chars[i] = index;
    }
    return 0;
}

/* BytesToCharOffsetConverter::convert: a byte offset inside a character is that character's
 * index, an end at the text's end one past the last character. tokenizers converts before the
 * post-processor trims offsets, this after, so a start the trimming moved to the text's end is
 * that end in characters too (where tokenizers would leave a start already there in bytes: a
 * token no model makes). */
static void to_chars(const size_t *chars, size_t n, size_t *start, size_t *end)
{
    if (n == 0 || *start > n) return;
    size_t s = *start < n ? chars[*start] : chars[n - 1] + 1;
    *end = *end < n ? chars[*end] : chars[n - 1] + 1;
    *start = s;
}

/* The model over every split not done, then into_encoding. */
static int tokenize_splits(const err_ctx *c, const tokenizer *t, int32_t seq, scratch *w,
                           sequence *q)
{
    tok_splits *s = &w->splits[0];
    for (size_t i = 0; i < s->n; i++) {
        tok_split *sp = &s->v[i];
        if (!sp->done && tok_model_run(c, t->model, sp->text.s, sp->text.n, &sp->toks) != 0)
            return -1;
        for (size_t k = 0; k < sp->toks.n; k++) {
            const tok_tok *o = &sp->toks.v[k];
            size_t start, end;
            tok_norm_span(&sp->text, o->start, o->end, &start, &end);
            /* a done split is an added token: its value the text it matched */
            if (tok_enc_push(c, &q->enc, o->id, seq, 0, start, end, seq) != 0 ||
                note_value(c, q, sp->done ? sp->text.s + o->start : NULL, o->end - o->start))
                return -1;
        }
    }
    return 0;
}

/* encode_single_sequence, and the map of the text's bytes to characters. */
static int encode_one(const tokenizer *t, const char *text, int32_t seq, scratch *w, sequence *out,
                      char *err, size_t err_size)
{
    err_ctx c = {seq ? "text pair" : "text", err, err_size};
    size_t n = strlen(text), valid = tok_utf8_prefix(text, n);
    if (valid != n) return io_fail(&c, "invalid UTF-8 at byte %zu", valid);
    tok_splits_free(&w->splits[0]);
    if (extract_and_normalize(&c, t, text, n, w) != 0) return -1;
    if (t->pre_tokenizer && tok_pretokenizer_run(&c, t->pre_tokenizer, &w->splits[0]) != 0)
        return -1;
    if (tokenize_splits(&c, t, seq, w, out) != 0 || point_values(&c, out) != 0) return -1;
    out->bytes = n;
    return char_map(&c, text, n, seq, w);
}

/* ---- truncation ---- */

/* truncate_encodings' kept lengths k[0], k[1] of encodings n[0], n[1] (pair: a second one). */
static int truncated_lengths(const err_ctx *c, const tok_truncation *r, size_t max,
                             const size_t n[2], int pair, size_t k[2])
{
    k[0] = n[0], k[1] = n[1];
    if (max == 0) return k[0] = k[1] = 0, 0;
    size_t total = n[0] + n[1];
    if (total <= max) return 0;
    size_t remove = total - max;
    if (r->strategy == TOK_LONGEST_FIRST && pair) {
        int swap = n[0] > n[1];
        size_t lo = swap ? n[1] : n[0], hi;
        hi = lo > max ? lo : (lo > max - lo ? lo : max - lo);
        if (lo + hi > max) lo = max / 2, hi = lo + max % 2;
        k[0] = swap ? hi : lo, k[1] = swap ? lo : hi;
    } else if (r->strategy == TOK_LONGEST_FIRST) {
        k[0] = max;
    } else {
        int which = r->strategy == TOK_ONLY_SECOND;
        if (which && !pair)
            return io_fail(c, "truncation: only_second, but there is no second text");
        if (n[which] <= remove)
            return io_fail(c, "truncation: %s text is too short to leave %zu tokens",
                           which ? "the second" : "the first", max);
        k[which] = n[which] - remove;
    }
    for (int i = 0; i < 2; i++)
        if (k[i] > 0 && k[i] < n[i] && r->stride >= k[i])
            return io_fail(c, "truncation: stride %zu is not below the %zu tokens kept", r->stride,
                           k[i]);
    return 0;
}

/* A view of k of e's tokens: the first, or the last when `left`. */
static tok_enc kept(const tok_enc *e, size_t k, int left)
{
    if (k == 0) return (tok_enc){0};
    size_t from = left ? e->n - k : 0;
    tok_enc v = {e->ids + from,
                 e->type_ids + from,
                 e->special + from,
                 e->starts + from,
                 e->ends + from,
                 e->seq + from,
                 k,
                 k,
                 NULL,
                 NULL};
    if (e->values) v.values = e->values + from, v.value_lens = e->value_lens + from;
    return v;
}

/* ---- post-processor and padding ---- */

static const char *view_token(const void *ctx, int32_t id, size_t *len)
{
    const tokenizer *t = ctx;
    const char *s = tok_token(t, id);
    *len = s ? strlen(s) : 0;
    return s;
}

/* Without a post-processor: the encodings one after the other (default_process). */
static int concatenate(const err_ctx *c, const tok_enc *a, const tok_enc *b, tok_enc *out)
{
    for (int k = 0; k < 2; k++) {
        const tok_enc *e = k ? b : a;
        for (size_t i = 0; e && i < e->n; i++)
            if (tok_enc_push(c, out, e->ids[i], e->type_ids[i], e->special[i], e->starts[i],
                             e->ends[i], e->seq[i]) != 0)
                return -1;
    }
    return 0;
}

/* pad_encodings for one encoding: to the fixed length (BatchLongest: its own), rounded up to
 * the multiple; the padding's mask 0 is left to the caller (seq -2). */
static int pad(const err_ctx *c, const tok_padding *p, tok_enc *e)
{
    size_t target = p->fixed ? p->fixed : e->n;
    if (p->multiple > 0 && target % p->multiple) target += p->multiple - target % p->multiple;
    size_t more = target > e->n ? target - e->n : 0, old = e->n;
    for (size_t i = 0; i < more; i++)
        if (tok_enc_push(c, e, p->pad_id, p->pad_type_id, 1, 0, 0, -2) != 0) return -1;
    if (!p->left || !more) return 0;
    /* Left: the padding first */
    for (size_t i = old; i-- > 0;) {
        size_t to = i + more;
        e->ids[to] = e->ids[i], e->type_ids[to] = e->type_ids[i], e->special[to] = e->special[i];
        e->starts[to] = e->starts[i], e->ends[to] = e->ends[i], e->seq[to] = e->seq[i];
    }
    for (size_t i = 0; i < more; i++) {
        e->ids[i] = p->pad_id, e->type_ids[i] = p->pad_type_id, e->special[i] = 1;
        e->starts[i] = e->ends[i] = 0, e->seq[i] = -2;
    }
    return 0;
}

/* The final encoding's offsets in characters of the text each token came from (added
 * tokens and padding keep (0, 0)). */
static void final_chars(const scratch *w, const sequence *seqs, tok_enc *e)
{
    for (size_t i = 0; i < e->n; i++)
        if (e->seq[i] == 0 || e->seq[i] == 1)
            to_chars(w->chars[e->seq[i]], seqs[e->seq[i]].bytes, &e->starts[i], &e->ends[i]);
}

static int to_ids(const err_ctx *c, const tok_enc *e, tok_ids *out)
{
    if (e->n > INT_MAX / 2) return io_fail(c, "%zu tokens are too many", e->n);
    size_t n = e->n ? e->n : 1;
    out->ids = malloc(n * sizeof *out->ids);
    out->type_ids = malloc(n * sizeof *out->type_ids);
    out->mask = malloc(n * sizeof *out->mask);
    out->special = malloc(n * sizeof *out->special);
    out->offsets = malloc(2 * n * sizeof *out->offsets);
    if (!out->ids || !out->type_ids || !out->mask || !out->special || !out->offsets)
        return io_fail_oom(c, "out of memory for %zu tokens", e->n);
    for (size_t i = 0; i < e->n; i++) {
        out->ids[i] = e->ids[i];
        out->type_ids[i] = e->type_ids[i];
        out->mask[i] = e->seq[i] != -2;
        out->special[i] = e->special[i] != 0;
        out->offsets[2 * i] = (int32_t)(e->starts[i] < INT32_MAX ? e->starts[i] : INT32_MAX);
        out->offsets[2 * i + 1] = (int32_t)(e->ends[i] < INT32_MAX ? e->ends[i] : INT32_MAX);
    }
    out->count = (int)e->n;
    return 0;
}

/* ---- encode ---- */

typedef struct rules {
    const tok_truncation *truncation; /* NULL: none */
    const tok_padding *padding;
    tok_truncation caller;
} rules;

static int pick_rules(const err_ctx *c, const tokenizer *t, int pair, int max_len, int left,
                      rules *r)
{
    size_t added = t->post ? tok_post_added(t->post, pair) : 0;
    memset(r, 0, sizeof *r);
    if (max_len == TOK_FILE_RULES) {
        r->truncation = t->has_truncation ? &t->truncation : NULL;
        r->padding = t->has_padding ? &t->padding : NULL;
        if (r->truncation && r->truncation->max_length < added)
            return io_fail(c,
                           "truncation: max_length %zu leaves no room for the %zu special "
                           "tokens of %s",
                           r->truncation->max_length, added, pair ? "a pair" : "one text");
        return 0;
    }
    if (max_len < 0 || (size_t)max_len < added)
        return io_fail(c, "max_len %d leaves no room for the %zu special tokens of %s", max_len,
                       added, pair ? "a pair" : "one text");
    if (max_len == INT_MAX) return 0;
    r->caller = (tok_truncation){(size_t)max_len, 0, TOK_LONGEST_FIRST, left != 0};
    r->truncation = &r->caller;
    return 0;
}

/* post_process: truncation, the post-processor, padding; `seqs` encoded already. */
static int post_process(const err_ctx *c, const tokenizer *t, const rules *r, sequence *seqs,
                        int pair, const char *const texts[2], tok_enc *out)
{
    tok_enc a = seqs[0].enc, b = seqs[1].enc;
    const tok_truncation *tr = r->truncation;
    if (tr) {
        size_t added = t->post ? tok_post_added(t->post, pair) : 0, k[2];
        size_t n[2] = {seqs[0].enc.n, pair ? seqs[1].enc.n : 0};
        if (truncated_lengths(c, tr, tr->max_length - added, n, pair, k) != 0) return -1;
        a = kept(&seqs[0].enc, k[0], tr->left);
        b = kept(&seqs[1].enc, pair ? k[1] : 0, tr->left);
    }
    int rc;
    if (t->post) {
        tok_vocab_view v = {view_token, t};
        rc = tok_post_run(c, t->post, &v, &a, pair ? &b : NULL, texts, 1, out);
    } else {
        rc = concatenate(c, &a, pair ? &b : NULL, out);
    }
    return rc == 0 && r->padding ? pad(c, r->padding, out) : rc;
}

int tok_encode(const tokenizer *t, const char *text, const char *text_pair, int max_len,
               tok_ids *out, char *err, size_t err_size)
{
    return tok_encode_cut(t, text, text_pair, max_len, 0, out, err, err_size);
}

int tok_encode_cut(const tokenizer *t, const char *text, const char *text_pair, int max_len,
                   int left, tok_ids *out, char *err, size_t err_size)
{
    err_ctx c = {"tok_encode", err, err_size};
    if (!out) return io_fail(&c, "no output given");
    memset(out, 0, sizeof *out);
    if (!t || !text) return io_fail(&c, "no tokenizer or text given");
    int pair = text_pair != NULL;
    rules r;
    if (pick_rules(&c, t, pair, max_len, left, &r) != 0) return -1;
    scratch w = {0};
    sequence seqs[2];
    memset(seqs, 0, sizeof seqs);
    tok_enc final = {0};
    const char *const texts[2] = {text, text_pair};
    int rc = 0;
    for (int i = 0; rc == 0 && i <= pair; i++)
        rc = encode_one(t, texts[i], i, &w, &seqs[i], err, err_size);
    if (rc == 0) rc = post_process(&c, t, &r, seqs, pair, texts, &final);
    if (rc == 0) final_chars(&w, seqs, &final);
    if (rc == 0) rc = to_ids(&c, &final, out);
    if (rc == 0) {
        size_t added = t->post ? tok_post_added(t->post, pair) : 0;
        size_t full = seqs[0].enc.n + seqs[1].enc.n + added;
        out->full_count = full < INT_MAX ? (int)full : INT_MAX;
    } else {
        tok_ids_free(out);
    }
    sequence_free(&seqs[0]);
    sequence_free(&seqs[1]);
    tok_enc_free(&final);
    scratch_free(&w);
    return rc;
}

void tok_ids_free(tok_ids *ids)
{
    if (!ids) return;
    free(ids->ids);
    free(ids->type_ids);
    free(ids->mask);
    free(ids->special);
    free(ids->offsets);
    memset(ids, 0, sizeof *ids);
}
