/* The tokenizer's text path, in the order of HuggingFace tokenizers' encode
 * (tokenizer/mod.rs): added tokens out of the raw text (added_vocabulary.rs), the normalizer
 * (normalizers/bert.rs), normalized added tokens, the pre-tokenizer (pre_tokenizers/bert.rs),
 * WordPiece (models/wordpiece/mod.rs), truncation (utils/truncation.rs), then the template
 * (processors/template.rs). The character classes are tokenizer_chars.c's; NFD comes from
 * libutf8proc.
 *
 * Where HuggingFace's two implementations differ, this follows the fast one: no NFC before
 * splitting, and its list of CJK blocks (U+2B820..U+2B91F is not among them). */
#include "tokenizer_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---- characters ---- */

/* The code point at s[i] (valid UTF-8), its length in *len. */
static int32_t char_at(const char *s, size_t n, size_t i, size_t *len)
{
    utf8proc_int32_t c = 0;
    utf8proc_ssize_t k =
        utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &c);
    *len = k > 0 ? (size_t)k : 1;
    return c;
}

/* The start of the code point before s[i]. */
static size_t char_before(const char *s, size_t i)
{
    do
        i--;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80);
    return i;
}

/* ---- the normalizer ---- */

/* clean_text and handle_chinese_chars on one code point, appended to `stage`. */
static int clean_char(const tokenizer *t, ints *stage, int32_t c)
{
    if (t->clean) {
        if (c == 0xFFFD || tok_is_control(c)) return 0;
        if (tok_is_ws(c)) c = ' ';
    }
    if (t->chinese && tok_is_cjk(c))
        return ints_push(stage, ' ') || ints_push(stage, c) || ints_push(stage, ' ') ? -1 : 0;
    return ints_push(stage, c);
}

/* Rust's char::to_lowercase takes the full mapping, where U+0130 alone has two code points. */
static int put_lower(bytes *b, int32_t c)
{
    if (c == 0x130) return bytes_put_char(b, 'i') || bytes_put_char(b, 0x307) ? -1 : 0;
    return bytes_put_char(b, tok_lower(c));
}

/* BertNormalizer::normalize, in its order: clean, CJK, NFD and drop Mn, lowercase. `stage`
 * and `nfd` hold the code points between the steps. */
static int normalize(const tokenizer *t, const char *s, size_t n, ints *stage, ints *nfd,
                     bytes *out)
{
    if (!t->normalize) return bytes_put(out, s, n);
    stage->n = 0;
    for (size_t i = 0, len; i < n; i += len)
        if (clean_char(t, stage, char_at(s, n, i, &len)) != 0) return -1;
    if (t->strip && tok_nfd(stage->v, stage->n, nfd) != 0) return -1;
    const ints *cps = t->strip ? nfd : stage;
    for (size_t i = 0; i < cps->n; i++) {
        int32_t c = cps->v[i];
        if (t->strip && tok_is_mark(c)) continue;
        if ((t->lower ? put_lower(out, c) : bytes_put_char(out, c)) != 0) return -1;
    }
    return 0;
}

int tok_normalize(const tokenizer *t, const char *s, size_t n, bytes *out)
{
    ints stage = {0}, nfd = {0};
    int rc = normalize(t, s, n, &stage, &nfd, out);
    free(stage.v);
    free(nfd.v);
    return rc;
}

/* ---- added tokens ---- */

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

/* refresh_added_tokens: a normalized token is searched for as the normalizer's output of its
 * content, in the normalized text; the others as they are, in the raw text. */
int tok_prepare_added(const err_ctx *c, tokenizer *t)
{
    for (size_t i = 0; i < t->n_added; i++) {
        tok_added *a = &t->added[i];
        if (tok_utf8_prefix(a->content, a->content_len) != a->content_len)
            return io_fail(c, "added token %d is not valid UTF-8", (int)a->id);
        bytes m = {0};
        int rc = a->normalized ? tok_normalize(t, a->content, a->content_len, &m)
                               : bytes_put(&m, a->content, a->content_len);
        if (rc == 0) rc = tok_set_string(&a->match, m.v ? m.v : "", m.n);
        free(m.v);
        if (rc != 0) return io_fail_oom(c, "out of memory");
        a->match_len = m.n;
    }
    return 0;
}

/* The longest token of the set (normalized or not) that s[0..n) starts with. */
static const tok_added *longest_at(const tokenizer *t, int normalized, const char *s, size_t n)
{
    const tok_added *best = NULL;
    for (size_t i = 0; i < t->n_added; i++) {
        const tok_added *a = &t->added[i];
        /* an empty pattern would match everywhere; HuggingFace skips empty contents */
        if (a->normalized != normalized || a->match_len == 0 || a->match_len > n) continue;
        if ((!best || a->match_len > best->match_len) && memcmp(a->match, s, a->match_len) == 0)
            best = a;
    }
    return best;
}

/* single_word: neither neighbour is a word character. */
static int single_word_ok(const char *s, size_t n, size_t start, size_t end)
{
    size_t len;
    if (start > 0 && tok_is_word_char(char_at(s, n, char_before(s, start), &len))) return 0;
    return end == n || !tok_is_word_char(char_at(s, n, end, &len));
}

static size_t spaces_before(const char *s, size_t n, size_t i, size_t floor)
{
    size_t len;
    while (i > floor && tok_is_ws(char_at(s, n, char_before(s, i), &len)))
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

/* find_matches' next split: the leftmost-longest token of the set in s[from..n), or NULL. A
 * single_word token with a word character beside it is passed over, and the search goes on
 * after it; lstrip and rstrip take in the spaces beside it (lstrip none before `from`). The
 * search then goes on after the spaces rstrip took, where Aho-Corasick's would go on before
 * them: the two differ only for a token that begins with a space. */
static const tok_added *next_added(const tokenizer *t, int normalized, const char *s, size_t n,
                                   size_t from, size_t *start, size_t *end)
{
    for (size_t i = from; i < n; i++) {
        const tok_added *a = longest_at(t, normalized, s + i, n - i);
        if (!a) continue;
        size_t e = i + a->match_len;
        if (a->single_word && !single_word_ok(s, n, i, e)) {
            i = e - 1;
            continue;
        }
        *start = a->lstrip ? spaces_before(s, n, i, from) : i;
        *end = a->rstrip ? spaces_after(s, n, e) : e;
        return a;
    }
    return NULL;
}

/* ---- pre-tokenizer and WordPiece ---- */

typedef struct encoder {
    const tokenizer *t;
    ints *ids;  /* where the ids go */
    ints stage; /* the normalizer's code points after cleaning and CJK spacing */
    ints nfd;   /* and after NFD */
    bytes norm; /* the normalizer's output for one piece of text */
    bytes word; /* UTF-8 of one word */
    size_t word_chars;
    ints off; /* the word's code point offsets */
} encoder;

/* The id of the longest vocabulary piece at code point `start` (after the first, with the
 * prefix), and in *end where it stops; -1 when none matches. */
static int32_t longest_match(const encoder *e, size_t start, size_t n, size_t *end)
{
    const int32_t *off = e->off.v;
    const char *s = e->word.v + off[start];
    for (*end = n; *end > start; --*end) {
        int32_t id = tok_lookup(e->t, start > 0, s, (size_t)(off[*end] - off[start]));
        if (id >= 0) return id;
    }
    return -1;
}

/* Greedy longest-match-first over the word's code points: a word is [UNK] as a whole when
 * some position has no match, or when it is longer than max_input_chars_per_word. */
static int wordpiece(encoder *e)
{
    const tokenizer *t = e->t;
    if (e->word_chars > t->max_word_chars) return ints_push(e->ids, t->unk);
    e->off.n = 0;
    if (ints_reserve(&e->off, e->word_chars + 1) != 0) return -1;
    for (size_t i = 0; i < e->word.n; i++)
        if (((unsigned char)e->word.v[i] & 0xC0) != 0x80) e->off.v[e->off.n++] = (int32_t)i;
    size_t n = e->off.n, first = e->ids->n;
    e->off.v[n] = (int32_t)e->word.n;
    for (size_t start = 0, end; start < n; start = end) {
        int32_t id = longest_match(e, start, n, &end);
        if (id < 0) {
            e->ids->n = first;
            return ints_push(e->ids, t->unk);
        }
        if (ints_push(e->ids, id) != 0) return -1;
    }
    return 0;
}

static int flush_word(encoder *e)
{
    int rc = e->word.n ? wordpiece(e) : 0;
    e->word.n = 0;
    e->word_chars = 0;
    return rc;
}

static int word_add(encoder *e, const char *s, size_t len)
{
    e->word_chars++;
    return bytes_put(&e->word, s, len);
}

/* BertPreTokenizer: whitespace ends a word and is dropped; each punctuation character is a
 * word of its own. Without it the whole piece is one word. */
static int add_words(encoder *e, const char *s, size_t n)
{
    for (size_t i = 0, len; i < n; i += len) {
        int32_t c = char_at(s, n, i, &len);
        int rc;
        if (!e->t->pre_split)
            rc = word_add(e, s + i, len);
        else if (tok_is_ws(c))
            rc = flush_word(e);
        else if (tok_is_punct(c))
            rc = flush_word(e) || word_add(e, s + i, len) || flush_word(e);
        else
            rc = word_add(e, s + i, len);
        if (rc != 0) return -1;
    }
    return flush_word(e);
}

/* A piece of raw text between added tokens: normalized, then split on normalized ones. */
static int add_piece(encoder *e, const char *s, size_t n)
{
    e->norm.n = 0;
    if (normalize(e->t, s, n, &e->stage, &e->nfd, &e->norm) != 0) return -1;
    const char *m = e->norm.v;
    size_t mn = e->norm.n, pos = 0, start, end;
    for (const tok_added *a; pos < mn; pos = end) {
        a = next_added(e->t, 1, m, mn, pos, &start, &end);
        if (add_words(e, m + pos, (a ? start : mn) - pos) != 0) return -1;
        if (!a) break;
        if (ints_push(e->ids, a->id) != 0) return -1;
    }
    return 0;
}

static int add_text(encoder *e, const char *s, size_t n)
{
    size_t pos = 0, start, end;
    for (const tok_added *a; pos < n; pos = end) {
        a = next_added(e->t, 0, s, n, pos, &start, &end);
        size_t stop = a ? start : n;
        if (stop > pos && add_piece(e, s + pos, stop - pos) != 0) return -1;
        if (!a) break;
        if (ints_push(e->ids, a->id) != 0) return -1;
    }
    return 0;
}

/* Appends the ids of `text` to ids; `what` names the input in messages. */
static int tokenize(const tokenizer *t, const char *text, const char *what, ints *ids, char *err,
                    size_t err_size)
{
    err_ctx c = {what, err, err_size};
    size_t n = strlen(text);
    size_t valid = tok_utf8_prefix(text, n);
    if (valid != n) return io_fail(&c, "invalid UTF-8 at byte %zu", valid);
    encoder e = {.t = t, .ids = ids};
    int rc = add_text(&e, text, n);
    free(e.stage.v);
    free(e.nfd.v);
    free(e.norm.v);
    free(e.word.v);
    free(e.off.v);
    return rc == 0 ? 0 : io_fail_oom(&c, "out of memory");
}

/* ---- truncation and the template ---- */

/* truncation.rs, LongestFirst with a pair: with n1 the shorter, it keeps its length and the
 * longer gets the rest when that leaves the longer no shorter; else both get half of the
 * room, the longer (the second on a tie) the odd one. */
static void truncate_pair(size_t *n1, size_t *n2, size_t room)
{
    if (*n1 + *n2 <= room) return;
    int swap = *n1 > *n2;
    size_t lo = swap ? *n2 : *n1, hi;
    hi = lo > room ? lo : (lo > room - lo ? lo : room - lo);
    if (lo + hi > room) {
        lo = room / 2;
        hi = lo + room % 2;
    }
    size_t a = swap ? hi : lo, b = swap ? lo : hi;
    *n1 = a < *n1 ? a : *n1;
    *n2 = b < *n2 ? b : *n2;
}

static int assemble(const tokenizer *t, const tok_template *tp, const ints *seqs, tok_ids *out)
{
    size_t n = 0;
    for (size_t i = 0; i < tp->n; i++)
        n += tp->pieces[i].seq < 0 ? tp->pieces[i].count : seqs[tp->pieces[i].seq].n;
    size_t alloc = n ? n : 1;
    out->ids = malloc(alloc * sizeof *out->ids);
    out->type_ids = malloc(alloc * sizeof *out->type_ids);
    out->mask = malloc(alloc * sizeof *out->mask);
    if (!out->ids || !out->type_ids || !out->mask) return -1;
    for (size_t i = 0; i < tp->n; i++) {
        const tok_piece *p = &tp->pieces[i];
        const int32_t *src = p->seq < 0 ? t->tpl_ids + p->first : seqs[p->seq].v;
        size_t len = p->seq < 0 ? p->count : seqs[p->seq].n;
        for (size_t j = 0; j < len; j++) {
            out->ids[out->count] = src[j];
            out->type_ids[out->count] = p->type_id;
            out->mask[out->count++] = 1;
        }
    }
    return 0;
}

/* Keeps the last n of each sequence that was cut, instead of the first: truncation.rs's
 * Encoding::truncate with TruncationDirection::Left. */
static void keep_ends(ints *seqs, const size_t *full)
{
    for (int k = 0; k < 2; k++)
        if (seqs[k].n < full[k])
            memmove(seqs[k].v, seqs[k].v + (full[k] - seqs[k].n), seqs[k].n * sizeof *seqs[k].v);
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
    const tok_template *tp = pair ? &t->pair : &t->single;
    if (max_len < tp->added)
        return io_fail(&c, "max_len %d leaves no room for the %d special tokens of %s", max_len,
                       tp->added, pair ? "a pair" : "one text");
    ints seqs[2] = {{0}, {0}};
    int rc = tokenize(t, text, "text", &seqs[0], err, err_size);
    if (rc == 0 && pair) rc = tokenize(t, text_pair, "text pair", &seqs[1], err, err_size);
    if (rc == 0) {
        size_t room = (size_t)(max_len - tp->added), full[2] = {seqs[0].n, seqs[1].n};
        if (pair)
            truncate_pair(&seqs[0].n, &seqs[1].n, room);
        else if (seqs[0].n > room)
            seqs[0].n = room;
        if (left) keep_ends(seqs, full);
        rc = assemble(t, tp, seqs, out);
        if (rc != 0) {
            tok_ids_free(out);
            io_fail_oom(&c, "out of memory");
        } else {
            out->full_count = (int)(full[0] + full[1]) + tp->added;
        }
    }
    free(seqs[0].v);
    free(seqs[1].v);
    return rc;
}

void tok_ids_free(tok_ids *ids)
{
    if (!ids) return;
    free(ids->ids);
    free(ids->type_ids);
    free(ids->mask);
    memset(ids, 0, sizeof *ids);
}
