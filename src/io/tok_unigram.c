/* Unigram, as tokenizers' tokenizers/src/models/unigram/model.rs (Unigram::from,
 * encode_optimized, tokenize), trie.rs (common_prefix_search) and serialization.rs read and run
 * it: the best path over the text's pieces by score, each position's best kept at the first
 * piece that reaches it with a strictly higher score, pieces tried shortest first and then the
 * unknown character (score: the lowest score - 10) where no piece is exactly that character;
 * consecutive unknowns fused into one; a result that is no token becomes its bytes' <0xNN>
 * tokens (byte_fallback, each over the whole result) or unk_id. (lattice.rs's Viterbi is the
 * unoptimized path tokenizers does not take.) */
#include "tok_models.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An edge of the pieces' byte trie: (node, byte) -> child; child -1 marks an empty slot. */
typedef struct trie_edge {
    uint64_t key;
    int32_t child;
} trie_edge;

struct tok_unigram {
    tok_vocab vocab;
    double *scores;
    double min_score;
    int32_t unk_id; /* -1: none */
    int byte_fallback;
    trie_edge *edges;
    size_t edge_mask;
    int32_t *leaf; /* per trie node: the id of the piece ending there, or -1 */
    int32_t nodes;
    int32_t byte_ids[256];
};

static const double UNK_PENALTY = 10.0; /* model.rs's K_UNK_PENALTY */

static const char *const UNIGRAM_KEYS[] = {"type", "unk_id", "vocab", "byte_fallback", NULL};

/* ---- the trie ---- */

static size_t edge_slot(const tok_unigram *m, uint64_t key)
{
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & m->edge_mask;
    while (m->edges[i].child >= 0 && m->edges[i].key != key)
        i = (i + 1) & m->edge_mask;
    return i;
}

static int32_t trie_child(const tok_unigram *m, int32_t node, unsigned char b)
{
    return m->edges[edge_slot(m, (uint64_t)node << 8 | b)].child;
}

static int trie_alloc(const err_ctx *c, tok_unigram *m, size_t bytes)
{
    size_t cap = 16;
    while (cap < 2 * bytes)
        cap *= 2;
    m->edges = malloc(cap * sizeof *m->edges);
    m->leaf = malloc((bytes + 1) * sizeof *m->leaf);
    if (!m->edges || !m->leaf) return io_fail_oom(c, "out of memory for the pieces' trie");
    for (size_t i = 0; i < cap; i++)
        m->edges[i].child = -1;
    for (size_t i = 0; i <= bytes; i++)
        m->leaf[i] = -1;
    m->edge_mask = cap - 1;
    m->nodes = 1; /* the root */
    return 0;
}

/* A piece given again ends at the same node and takes its later id, as token_to_ids does. */
static void trie_insert(tok_unigram *m, const char *s, size_t n, int32_t id)
{
    int32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = (uint64_t)node << 8 | (unsigned char)s[i];
        size_t slot = edge_slot(m, key);
        if (m->edges[slot].child < 0) m->edges[slot] = (trie_edge){key, m->nodes++};
        node = m->edges[slot].child;
    }
    m->leaf[node] = id;
}

/* ---- loading ---- */

static int round_trips(double x, int digits, char *buf, size_t size)
{
    snprintf(buf, size, "%.*e", digits - 1, x);
    return strtod(buf, NULL) == x;
}

/* The shortest decimal form of x > 0 (what tokenizers and Python write): its digits as an
 * integer and the power of ten they are scaled by. `within15`: 15 digits are known to be
 * enough (else 16 or 17 are needed, the usual case, found in two tries). */
static void shortest_decimal(double x, int within15, uint64_t *digits, int *exp10)
{
    char buf[40];
    int p = 1;
    if (within15) {
        while (p < 15 && !round_trips(x, p, buf, sizeof buf))
            p++;
    } else {
        p = round_trips(x, 16, buf, sizeof buf) ? 16 : 17;
    }
    round_trips(x, p, buf, sizeof buf);
    uint64_t d = 0;
    char *s = buf;
    for (; *s != 'e'; s++)
        if (*s >= '0' && *s <= '9') d = d * 10 + (uint64_t)(*s - '0');
    *digits = d;
    *exp10 = atoi(s + 1) - (p - 1);
}

static double power_of_ten(int k)
{
    char buf[16];
    snprintf(buf, sizeof buf, "1e%d", k);
    return strtod(buf, NULL);
}

/* A score as tokenizers reads it: serde_json without its float_roundtrip feature turns the
 * digits into a double and then multiplies or divides by a power of ten (serde_json's
 * src/de.rs, f64_from_parts), which can be one unit in the last place off the nearest double.
 * Where the digits are at most 15 and the power at most 22 that is exact, and x (cJSON's
 * correctly rounded reading) is kept. */
static double serde_f64(double x)
{
    if (x == 0 || !isfinite(x)) return x;
    double a = fabs(x);
    char buf[40];
    int within15 = round_trips(a, 15, buf, sizeof buf);
    if (within15 && abs(atoi(strchr(buf, 'e') + 1)) <= 7) return x;
    uint64_t digits;
    int exp10, count = 0;
    shortest_decimal(a, within15, &digits, &exp10);
    for (uint64_t d = digits; d; d /= 10)
        count++;
    if (exp10 >= 0 && count + exp10 <= 16) {
        /* a whole number is written "1234.0": its digits, then zeros and one more */
        for (int i = 0; i <= exp10; i++)
            digits *= 10;
        exp10 = -1;
    }
    double f = (double)digits;
    while (abs(exp10) > 308) {
        if (f == 0 || exp10 > 0) break;
        f /= 1e308;
        exp10 += 308;
    }
    if (abs(exp10) <= 308) f = exp10 >= 0 ? f * power_of_ten(exp10) : f / power_of_ten(-exp10);
    return x < 0 ? -f : f;
}

static int read_piece(const err_ctx *c, tok_unigram *m, const cJSON *e, int32_t id)
{
    const cJSON *s = cJSON_GetArrayItem(e, 0), *score = cJSON_GetArrayItem(e, 1);
    if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(s) ||
        !cJSON_IsNumber(score))
        return io_fail(c, "model: Unigram: vocab: entry %d: expected [piece, score]", (int)id);
    m->scores[id] = serde_f64(score->valuedouble);
    if (m->scores[id] < m->min_score) m->min_score = m->scores[id];
    return tok_vocab_add(c, &m->vocab, id, s->valuestring, strlen(s->valuestring));
}

static int read_vocab(const err_ctx *c, tok_unigram *m, const cJSON *list)
{
    if (!cJSON_IsArray(list)) return io_fail(c, "model: Unigram: vocab: expected a list");
    int n = cJSON_GetArraySize(list);
    if (tok_vocab_init(c, &m->vocab, n, (size_t)n) != 0) return -1;
    m->scores = malloc((n ? (size_t)n : 1) * sizeof *m->scores);
    if (!m->scores) return io_fail_oom(c, "out of memory for %d scores", n);
    m->min_score = INFINITY;
    int32_t id = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        if (read_piece(c, m, e, id++) != 0) return -1;
    }
    size_t bytes = 0;
    for (int32_t i = 0; i < n; i++)
        bytes += m->vocab.lens[i];
    if (trie_alloc(c, m, bytes) != 0) return -1;
    for (int32_t i = 0; i < n; i++)
        trie_insert(m, m->vocab.tokens[i], m->vocab.lens[i], i);
    return 0;
}

static int read_unk_id(const err_ctx *c, tok_unigram *m, const cJSON *j)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "unk_id");
    m->unk_id = -1;
    if (!v || cJSON_IsNull(v)) return 0;
    double id;
    if (tok_field_number(c, v, "model: Unigram", "unk_id", INT32_MAX - 1, &id) != 0) return -1;
    if (m->vocab.count == 0)
        return io_fail(c, "model: Unigram: the vocabulary is empty but unk_id is given");
    if (id >= m->vocab.count)
        return io_fail(c, "model: Unigram: unk_id %.0f is past the vocabulary's %d pieces", id,
                       (int)m->vocab.count);
    m->unk_id = (int32_t)id;
    return 0;
}

static int unigram_read(const err_ctx *c, const cJSON *j, tok_unigram *m)
{
    if (tok_fields_known(c, j, "model: Unigram", UNIGRAM_KEYS) != 0 ||
        tok_field_bool(c, j, "model: Unigram", "byte_fallback", 0, &m->byte_fallback) != 0)
        return -1;
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(j, "vocab");
    if (!vocab) return io_fail(c, "model: Unigram: vocab: missing");
    if (read_vocab(c, m, vocab) != 0 || read_unk_id(c, m, j) != 0) return -1;
    tok_vocab_byte_ids(&m->vocab, m->byte_ids);
    return 0;
}

int tok_unigram_load(const err_ctx *c, const cJSON *j, tok_unigram **out)
{
    *out = NULL;
    tok_unigram *m = calloc(1, sizeof *m);
    if (!m) return io_fail_oom(c, "out of memory for the Unigram model");
    if (unigram_read(c, j, m) != 0) {
        tok_unigram_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void tok_unigram_free(tok_unigram *m)
{
    if (!m) return;
    tok_vocab_free(&m->vocab);
    free(m->scores);
    free(m->edges);
    free(m->leaf);
    free(m);
}

const tok_vocab *tok_unigram_vocab(const tok_unigram *m)
{
    return &m->vocab;
}

void tok_unigram_describe(const tok_unigram *m, char *out, size_t size)
{
    size_t len = 0;
    const char *unk = m->unk_id >= 0 ? tok_vocab_token(&m->vocab, m->unk_id, &len) : NULL;
    snprintf(out, size, "Unigram(%d pieces, unk %s%s)", (int)m->vocab.count, unk ? unk : "none",
             m->byte_fallback ? ", byte_fallback" : "");
}

/* ---- running ---- */

/* The best path's last piece ending at each byte: where it starts (-1: none yet), its id,
 * the path's score. */
typedef struct best_paths {
    double *score;
    ptrdiff_t *start;
    int32_t *id;
} best_paths;

static void offer(best_paths *b, size_t end, size_t start, int32_t id, double score)
{
    if (b->start[end] < 0 || score > b->score[end]) {
        b->score[end] = score;
        b->start[end] = (ptrdiff_t)start;
        b->id[end] = id;
    }
}

/* Every piece that starts at `at`, then the unknown character where no piece is exactly it. */
static int extend_from(const err_ctx *c, const tok_unigram *m, const char *s, size_t n, size_t at,
                       best_paths *b)
{
    size_t mblen = tok_model_char_len((unsigned char)s[at]);
    if (mblen > n - at) mblen = n - at;
    double base = b->score[at];
    int single = 0;
    int32_t node = 0;
    for (size_t k = at; k < n && (node = trie_child(m, node, (unsigned char)s[k])) >= 0; k++) {
        int32_t id = m->leaf[node];
        if (id < 0) continue;
        offer(b, k + 1, at, id, m->scores[id] + base);
        single |= k + 1 - at == mblen;
    }
    if (single) return 0;
    double score = m->min_score - UNK_PENALTY + base;
    if (b->start[at + mblen] >= 0 && !(score > b->score[at + mblen])) return 0;
    if (m->unk_id < 0)
        return io_fail(c, "model: Unigram: a character no piece covers, and no unk_id");
    offer(b, at + mblen, at, m->unk_id, score);
    return 0;
}

/* One result of the path, s[a..b): its token, or its bytes' tokens, or unk_id. */
static int emit_piece(const err_ctx *c, const tok_unigram *m, const char *s, size_t a, size_t b,
                      tok_toks *out)
{
    int32_t id = tok_vocab_find(&m->vocab, s + a, b - a);
    if (id >= 0) return tok_toks_push(c, out, id, a, b);
    if (m->byte_fallback) {
        size_t i = a;
        while (i < b && m->byte_ids[(unsigned char)s[i]] >= 0)
            i++;
        if (i == b) {
            for (i = a; i < b; i++)
                if (tok_toks_push(c, out, m->byte_ids[(unsigned char)s[i]], a, b) != 0) return -1;
            return 0;
        }
    }
    if (m->unk_id < 0) return io_fail(c, "model: Unigram: an unknown piece, and no unk_id");
    return tok_toks_push(c, out, m->unk_id, a, b);
}

/* A piece of the path: s[a..b). */
typedef struct path_piece {
    size_t a, b;
} path_piece;

/* The path's pieces from the end back, an unknown after an unknown joined to it (fuse_unk,
 * always on), then put out in text order. `pieces` has room for n. */
static int emit_path(const err_ctx *c, const tok_unigram *m, const char *s, size_t n,
                     const best_paths *b, path_piece *pieces, tok_toks *out)
{
    size_t count = 0, at = n;
    int joining = 0;
    while (at > 0) {
        size_t start = (size_t)b->start[at];
        int unk = m->unk_id >= 0 && b->id[at] == m->unk_id;
        if (unk && joining)
            pieces[count - 1].a = start;
        else
            pieces[count++] = (path_piece){start, at};
        joining = unk;
        at = start;
    }
    while (count > 0) {
        count--;
        if (emit_piece(c, m, s, pieces[count].a, pieces[count].b, out) != 0) return -1;
    }
    return 0;
}

static int best_path(const err_ctx *c, const tok_unigram *m, const char *s, size_t n, best_paths *b)
{
    for (size_t i = 0; i <= n; i++) {
        b->score[i] = 0;
        b->start[i] = -1;
        b->id[i] = -1;
    }
    for (size_t at = 0; at < n;) {
        if (extend_from(c, m, s, n, at, b) != 0) return -1;
        size_t len = tok_model_char_len((unsigned char)s[at]);
        at += len < n - at ? len : n - at;
    }
    return 0;
}

int tok_unigram_run(const err_ctx *c, const tok_unigram *m, const char *s, size_t n, tok_toks *out)
{
    if (n == 0) return 0;
    best_paths b = {malloc((n + 1) * sizeof *b.score), malloc((n + 1) * sizeof *b.start),
                    malloc((n + 1) * sizeof *b.id)};
    path_piece *pieces = malloc(n * sizeof *pieces);
    int rc = !b.score || !b.start || !b.id || !pieces
                 ? io_fail_oom(c, "out of memory for a text of %zu bytes", n)
                 : best_path(c, m, s, n, &b);
    if (rc == 0) rc = emit_path(c, m, s, n, &b, pieces, out);
    free(b.score);
    free(b.start);
    free(b.id);
    free(pieces);
    return rc;
}
