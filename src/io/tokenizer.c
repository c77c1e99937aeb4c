/* BERT's WordPiece tokenizer; see tokenizer.h. Unicode properties, case mapping and NFD come
 * from libutf8proc; the only table here is BERT's own list of CJK blocks.
 *
 * Where HuggingFace's two implementations differ, this follows the fast one (Rust
 * `tokenizers`, what AutoTokenizer gives): no NFC before splitting (the Python BertTokenizer
 * applies one, which only matters with do_lower_case off and decomposed input). */
#include "tokenizer.h"

#include "io_error.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* HuggingFace's max_input_chars_per_word: a longer word is [UNK] without a search. */
#define MAX_WORD_CHARS 100

struct tokenizer {
    char *text;    /* the file, line ends replaced by NULs; tokens point into it */
    char **tokens; /* by id */
    size_t *lens;  /* by id; a token may contain no NUL but the table compares lengths */
    int32_t count;
    int32_t *slots; /* open addressing, linear probing: an id, or -1 for empty */
    size_t slot_mask;
    int lower;
    int32_t unk, cls, sep, pad;
};

/* ---- growable arrays ---- */

typedef struct ints {
    int32_t *v;
    size_t n, cap;
} ints;

typedef struct bytes {
    char *v;
    size_t n, cap;
} bytes;

static size_t grown(size_t cap, size_t need)
{
    size_t c = cap ? cap : 64;
    while (c < need)
        c *= 2;
    return c;
}

static int ints_reserve(ints *a, size_t more)
{
    if (a->n + more <= a->cap) return 0;
    size_t cap = grown(a->cap, a->n + more);
    int32_t *v = realloc(a->v, cap * sizeof *v);
    if (!v) return -1;
    a->v = v;
    a->cap = cap;
    return 0;
}

static int ints_push(ints *a, int32_t x)
{
    if (ints_reserve(a, 1) != 0) return -1;
    a->v[a->n++] = x;
    return 0;
}

static int bytes_put_char(bytes *b, int32_t c)
{
    if (b->n + 4 > b->cap) {
        size_t cap = grown(b->cap, b->n + 4);
        char *v = realloc(b->v, cap);
        if (!v) return -1;
        b->v = v;
        b->cap = cap;
    }
    b->n += (size_t)utf8proc_encode_char(c, (utf8proc_uint8_t *)b->v + b->n);
    return 0;
}

/* ---- the vocabulary's hash table ---- */

static uint32_t fnv1a(uint32_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

/* A piece inside a word is looked up as "##" + piece without building that string. */
static size_t piece_hash(int inner, const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    if (inner) h = fnv1a(h, "##", 2);
    return fnv1a(h, s, n);
}

static int piece_is(const tokenizer *t, int32_t id, int inner, const char *s, size_t n)
{
    size_t skip = inner ? 2 : 0;
    const char *tok = t->tokens[id];
    return t->lens[id] == n + skip && (!inner || memcmp(tok, "##", 2) == 0) &&
           memcmp(tok + skip, s, n) == 0;
}

/* The table is at most half full, so a probe always reaches an empty slot. */
static size_t probe(const tokenizer *t, int inner, const char *s, size_t n)
{
    size_t i = piece_hash(inner, s, n) & t->slot_mask;
    while (t->slots[i] >= 0 && !piece_is(t, t->slots[i], inner, s, n))
        i = (i + 1) & t->slot_mask;
    return i;
}

static int32_t lookup(const tokenizer *t, int inner, const char *s, size_t n)
{
    return t->slots[probe(t, inner, s, n)];
}

static int build_table(const err_ctx *c, tokenizer *t)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)t->count)
        cap *= 2;
    t->slots = malloc(cap * sizeof *t->slots);
    if (!t->slots) return io_fail(c, "out of memory for %d tokens", t->count);
    memset(t->slots, 0xff, cap * sizeof *t->slots); /* all -1 */
    t->slot_mask = cap - 1;
    /* A token listed twice keeps its last line's id, as HuggingFace's dict does. */
    for (int32_t id = 0; id < t->count; id++)
        t->slots[probe(t, 0, t->tokens[id], t->lens[id])] = id;
    return 0;
}

/* ---- loading ---- */

/* Reads the whole file, NUL-terminated. A failed open leaves fopen's errno for the caller. */
static int read_file(const err_ctx *c, const char *path, char **text, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        io_fail(c, "cannot open: %s", strerror(e));
        errno = e;
        return -1;
    }
    bytes b = {0};
    int oom = 0;
    for (size_t got = 1; got > 0 && !oom;) {
        if (b.n + 1 >= b.cap) { /* grown only when full: a small file takes one block */
            size_t cap = grown(b.cap, b.n + 65536);
            char *v = realloc(b.v, cap);
            oom = !v;
            if (oom) break;
            b.v = v;
            b.cap = cap;
        }
        got = fread(b.v + b.n, 1, b.cap - b.n - 1, f); /* one byte kept for the NUL */
        b.n += got;
    }
    /* fopen succeeds on a directory; the read is what fails. */
    int e = errno, failed = oom || ferror(f);
    fclose(f);
    if (failed) {
        free(b.v);
        return io_fail(c, "cannot read: %s", oom ? "out of memory" : strerror(e));
    }
    b.v[b.n] = '\0';
    *text = b.v;
    *size = b.n;
    return 0;
}

/* One token per line; the line ending (\n or \r\n) is not part of it. */
static int split_lines(const err_ctx *c, tokenizer *t, size_t size)
{
    size_t lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += t->text[i] == '\n';
    if (size > 0 && t->text[size - 1] != '\n') lines++;
    if (lines > INT32_MAX) return io_fail(c, "too many tokens (%zu lines)", lines);
    t->tokens = malloc((lines ? lines : 1) * sizeof *t->tokens);
    t->lens = malloc((lines ? lines : 1) * sizeof *t->lens);
    if (!t->tokens || !t->lens) return io_fail(c, "out of memory for %zu tokens", lines);
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        int line_end = i < size ? t->text[i] == '\n' : i > start; /* or a last line without \n */
        if (!line_end) continue;
        size_t end = i > start && t->text[i - 1] == '\r' ? i - 1 : i;
        t->text[end] = '\0';
        t->tokens[t->count] = t->text + start;
        t->lens[t->count++] = end - start;
        start = i + 1;
    }
    return 0;
}

static int find_specials(const err_ctx *c, tokenizer *t)
{
    static const char *const names[] = {"[UNK]", "[CLS]", "[SEP]", "[PAD]"};
    int32_t *ids[] = {&t->unk, &t->cls, &t->sep, &t->pad};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *ids[i] = tok_id(t, names[i]);
        if (*ids[i] < 0) return io_fail(c, "the vocabulary has no %s token", names[i]);
    }
    return 0;
}

int tok_load(const char *vocab_path, int do_lower_case, tokenizer **out, char *err, size_t err_size)
{
    err_ctx c = {vocab_path, err, err_size};
    if (!out) return io_fail(&c, "no output given");
    *out = NULL;
    if (!vocab_path) return io_fail(&c, "no path given");
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) return io_fail(&c, "out of memory");
    t->lower = do_lower_case != 0;
    size_t size;
    if (read_file(&c, vocab_path, &t->text, &size) != 0 || split_lines(&c, t, size) != 0 ||
        build_table(&c, t) != 0 || find_specials(&c, t) != 0) {
        tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

void tok_free(tokenizer *t)
{
    if (!t) return;
    free(t->text);
    free(t->tokens);
    free(t->lens);
    free(t->slots);
    free(t);
}

int tok_load_config(const char *tokenizer_config_json_path, int *do_lower_case)
{
    err_ctx c = {tokenizer_config_json_path, NULL, 0}; /* no message: the result says it all */
    char *text;
    size_t size;
    if (!tokenizer_config_json_path || !do_lower_case) return -1;
    if (read_file(&c, tokenizer_config_json_path, &text, &size) != 0)
        return errno == ENOENT ? 0 : -1;
    cJSON *root = cJSON_ParseWithLength(text, size);
    free(text);
    int rc = -1;
    if (cJSON_IsObject(root)) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "do_lower_case");
        rc = v ? (cJSON_IsBool(v) ? 1 : -1) : 0;
        if (rc == 1) *do_lower_case = cJSON_IsTrue(v) ? 1 : 0;
    }
    cJSON_Delete(root);
    return rc;
}

int32_t tok_id(const tokenizer *t, const char *token)
{
    if (!t || !token) return -1;
    return lookup(t, 0, token, strlen(token));
}

const char *tok_token(const tokenizer *t, int32_t id)
{
    return t && id >= 0 && id < t->count ? t->tokens[id] : NULL;
}

/* ---- character classes (BERT's definitions) ---- */

/* BERT spaces out these ideographs only; Hangul, kana and other CJK blocks stay in words. */
static int is_cjk(int32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Zs per BERT; line and paragraph separators too, because HuggingFace's final split on
 * whitespace (Python's str.split, Rust's char::is_whitespace) breaks words at them. */
static int is_space(int32_t c)
{
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return 1;
    utf8proc_category_t k = utf8proc_category(c);
    return k == UTF8PROC_CATEGORY_ZS || k == UTF8PROC_CATEGORY_ZL || k == UTF8PROC_CATEGORY_ZP;
}

/* HuggingFace drops every "other" category (Cc, Cf, Co, Cn; its test is category "C*"), not
 * only the Cc and Cf of Google's original; U+FFFD is what decoders leave for bad bytes. Checked
 * after is_space, which claims tab, newline and CR. */
static int is_dropped(int32_t c)
{
    if (c == 0 || c == 0xFFFD) return 1;
    utf8proc_category_t k = utf8proc_category(c);
    return k == UTF8PROC_CATEGORY_CN || k >= UTF8PROC_CATEGORY_CC;
}

/* BERT counts every ASCII non-alphanumeric symbol ($, +, ^, ...) as punctuation, though
 * Unicode files several of them under S*. */
static int is_punct(int32_t c)
{
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
        (c >= 123 && c <= 126))
        return 1;
    utf8proc_category_t k = utf8proc_category(c);
    return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

/* ---- text to ids ---- */

typedef struct encoder {
    const tokenizer *t;
    ints *ids;   /* where the word pieces go */
    bytes clean; /* the cleaned text: words separated by ASCII spaces */
    ints cps;    /* one word's code points, decomposed when lowercasing */
    bytes piece; /* UTF-8 of a run of the word without punctuation */
    size_t piece_chars;
} encoder;

/* Lowercasing maps one code point to one, so it can happen here, before the word split. */
static int clean_char(encoder *e, int32_t c)
{
    bytes *b = &e->clean;
    if (is_space(c)) return bytes_put_char(b, ' ');
    if (is_dropped(c)) return 0;
    if (is_cjk(c))
        return bytes_put_char(b, ' ') || bytes_put_char(b, c) || bytes_put_char(b, ' ') ? -1 : 0;
    return bytes_put_char(b, e->t->lower ? utf8proc_tolower(c) : c);
}

/* 0, -1 when out of memory, or 1 with *bad the offset of the first invalid byte sequence. */
static int clean_text(encoder *e, const char *text, size_t *bad)
{
    const utf8proc_uint8_t *s = (const utf8proc_uint8_t *)text;
    size_t len = strlen(text);
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t n = utf8proc_iterate(s + i, (utf8proc_ssize_t)(len - i), &c);
        if (n < 0) {
            *bad = i;
            return 1;
        }
        i += (size_t)n;
        if (clean_char(e, c) != 0) return -1;
    }
    return 0;
}

/* The id of the longest vocabulary piece at code point `start` (after the first, with "##"),
 * and in *end where it stops; -1 when none matches. */
static int32_t longest_match(const encoder *e, const size_t *off, size_t start, size_t n,
                             size_t *end)
{
    const char *s = e->piece.v + off[start];
    for (*end = n; *end > start; --*end) {
        int32_t id = lookup(e->t, start > 0, s, off[*end] - off[start]);
        if (id >= 0) return id;
    }
    return -1;
}

/* Greedy longest-match-first over the piece's code points: a piece is [UNK] as a whole when
 * some position has no match, never a partial split. */
static int wordpiece(encoder *e)
{
    const tokenizer *t = e->t;
    if (e->piece_chars > MAX_WORD_CHARS) return ints_push(e->ids, t->unk);
    size_t off[MAX_WORD_CHARS + 1], n = 0;
    for (size_t i = 0; i < e->piece.n; i++)
        if (((unsigned char)e->piece.v[i] & 0xC0) != 0x80) off[n++] = i;
    off[n] = e->piece.n;
    size_t first = e->ids->n;
    for (size_t start = 0, end; start < n; start = end) {
        int32_t id = longest_match(e, off, start, n, &end);
        if (id < 0) {
            e->ids->n = first;
            return ints_push(e->ids, t->unk);
        }
        if (ints_push(e->ids, id) != 0) return -1;
    }
    return 0;
}

static int flush_piece(encoder *e)
{
    int rc = e->piece.n ? wordpiece(e) : 0;
    e->piece.n = 0;
    e->piece_chars = 0;
    return rc;
}

static int piece_add(encoder *e, int32_t c)
{
    e->piece_chars++;
    return bytes_put_char(&e->piece, c);
}

/* The word's code points, in NFD when lowercasing: the whole word at once, so that combining
 * marks are put in canonical order before the Mn among them are dropped. */
static int decode_word(encoder *e, const char *s, size_t n)
{
    utf8proc_option_t opt = e->t->lower ? UTF8PROC_DECOMPOSE : 0;
    for (;;) {
        utf8proc_ssize_t got = utf8proc_decompose((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n,
                                                  e->cps.v, (utf8proc_ssize_t)e->cps.cap, opt);
        if (got < 0) return -1; /* only out of memory: the text was validated */
        if ((size_t)got <= e->cps.cap) {
            e->cps.n = (size_t)got;
            return 0;
        }
        if (ints_reserve(&e->cps, (size_t)got) != 0) return -1;
    }
}

/* Accents are stripped (Mn dropped) only when lowercasing, as BertTokenizer's default does;
 * each punctuation character is a word of its own. */
static int add_word(encoder *e, const char *s, size_t n)
{
    e->cps.n = 0;
    if (decode_word(e, s, n) != 0) return -1;
    for (size_t i = 0; i < e->cps.n; i++) {
        int32_t c = e->cps.v[i];
        if (e->t->lower && utf8proc_category(c) == UTF8PROC_CATEGORY_MN) continue;
        if (!is_punct(c)) {
            if (piece_add(e, c) != 0) return -1;
        } else if (flush_piece(e) != 0 || piece_add(e, c) != 0 || flush_piece(e) != 0) {
            return -1;
        }
    }
    return flush_piece(e);
}

static int add_words(encoder *e)
{
    if (e->clean.n == 0) return 0; /* clean.v is NULL then, and NULL + 0 is undefined */
    const char *s = e->clean.v, *end = s + e->clean.n;
    while (s < end) {
        const char *w = s;
        while (w < end && *w != ' ')
            w++;
        if (w > s && add_word(e, s, (size_t)(w - s)) != 0) return -1;
        s = w + 1;
    }
    return 0;
}

/* Appends the word pieces of `text` to ids; `what` names the input in messages. */
static int tokenize(const tokenizer *t, const char *text, const char *what, ints *ids, char *err,
                    size_t err_size)
{
    err_ctx c = {what, err, err_size};
    encoder e = {.t = t, .ids = ids};
    size_t bad = 0;
    int rc = clean_text(&e, text, &bad);
    if (rc == 0) rc = add_words(&e);
    free(e.clean.v);
    free(e.cps.v);
    free(e.piece.v);
    if (rc == 1) return io_fail(&c, "invalid UTF-8 at byte %zu", bad);
    return rc == 0 ? 0 : io_fail(&c, "out of memory");
}

/* HuggingFace's "longest_first": one token at a time from the end of the longer sequence, from
 * the pair's second sequence when they tie. */
static void truncate_longest_first(ints *a, ints *b, size_t room)
{
    while (a->n + b->n > room) {
        if (a->n > b->n)
            a->n--;
        else
            b->n--;
    }
}

static void put_segment(tok_ids *out, const int32_t *ids, size_t n, int32_t sep, int32_t type)
{
    for (size_t i = 0; i < n; i++) {
        out->ids[out->count] = ids[i];
        out->type_ids[out->count++] = type;
    }
    out->ids[out->count] = sep;
    out->type_ids[out->count++] = type;
}

static int assemble(const tokenizer *t, const ints *a, const ints *b, int pair, tok_ids *out)
{
    size_t n = a->n + b->n + (pair ? 3 : 2);
    out->ids = malloc(n * sizeof *out->ids);
    out->type_ids = malloc(n * sizeof *out->type_ids);
    out->mask = malloc(n * sizeof *out->mask);
    if (!out->ids || !out->type_ids || !out->mask) return -1;
    out->ids[0] = t->cls;
    out->type_ids[0] = 0;
    out->count = 1;
    put_segment(out, a->v, a->n, t->sep, 0);
    if (pair) put_segment(out, b->v, b->n, t->sep, 1);
    for (size_t i = 0; i < n; i++)
        out->mask[i] = 1;
    return 0;
}

int tok_encode(const tokenizer *t, const char *text, const char *text_pair, int max_len,
               tok_ids *out, char *err, size_t err_size)
{
    err_ctx c = {"tok_encode", err, err_size};
    if (!out) return io_fail(&c, "no output given");
    memset(out, 0, sizeof *out);
    if (!t || !text) return io_fail(&c, "no tokenizer or text given");
    int pair = text_pair != NULL, specials = pair ? 3 : 2;
    if (max_len < specials)
        return io_fail(&c, "max_len %d leaves no room for the %d special tokens of %s", max_len,
                       specials, pair ? "a pair" : "one text");
    ints a = {0}, b = {0};
    int rc = tokenize(t, text, "text", &a, err, err_size);
    if (rc == 0 && pair) rc = tokenize(t, text_pair, "text pair", &b, err, err_size);
    if (rc == 0) {
        truncate_longest_first(&a, &b, (size_t)(max_len - specials));
        rc = assemble(t, &a, &b, pair, out);
        if (rc != 0) {
            tok_ids_free(out);
            io_fail(&c, "out of memory");
        }
    }
    free(a.v);
    free(b.v);
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
