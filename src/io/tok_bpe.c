/* BPE, as tokenizers' tokenizers/src/models/bpe/model.rs (BpeBuilder::build, merge_word,
 * tokenize), word.rs (Word::merge_all) and serialization.rs read and run it: each character
 * (continuing_subword_prefix before all but the first, end_of_word_suffix after the last) is a
 * symbol, or its bytes' <0xNN> tokens (byte_fallback), or unk_token (fused with the unknown
 * before it under fuse_unk, dropped without an unk_token); then the merges are applied lowest
 * rank first, leftmost first among equals, by a priority queue whose stale entries are skipped
 * when the pair at their place no longer makes the same token. Offsets are the symbols' byte
 * lengths added up, as word.rs's get_offsets_iter does. */
#include "tok_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One merge: the pair (a, b) becomes new_id; new_id -1 marks an empty slot. */
typedef struct merge_slot {
    uint64_t pair;
    uint32_t rank;
    int32_t new_id;
} merge_slot;

struct tok_bpe {
    tok_vocab vocab;
    merge_slot *merges;
    size_t merge_mask, n_merges;
    char *unk, *prefix, *suffix;
    size_t prefix_len, suffix_len;
    int32_t unk_id; /* -1: unk_token is not in the vocabulary (an error when needed) */
    int fuse_unk, byte_fallback, ignore_merges;
    int32_t byte_ids[256];
};

static const char *const BPE_KEYS[] = {"type",
                                       "dropout",
                                       "unk_token",
                                       "continuing_subword_prefix",
                                       "end_of_word_suffix",
                                       "fuse_unk",
                                       "byte_fallback",
                                       "ignore_merges",
                                       "vocab",
                                       "merges",
                                       NULL};

/* ---- the merges' table ---- */

static uint64_t pair_key(int32_t a, int32_t b)
{
    return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}

static size_t merge_slot_of(const tok_bpe *m, uint64_t pair)
{
    size_t i = (size_t)((pair * 0x9E3779B97F4A7C15ull) >> 20) & m->merge_mask;
    while (m->merges[i].new_id >= 0 && m->merges[i].pair != pair)
        i = (i + 1) & m->merge_mask;
    return i;
}

static const merge_slot *merge_find(const tok_bpe *m, int32_t a, int32_t b)
{
    const merge_slot *s = &m->merges[merge_slot_of(m, pair_key(a, b))];
    return s->new_id >= 0 ? s : NULL;
}

static int merges_alloc(const err_ctx *c, tok_bpe *m, size_t count)
{
    size_t cap = 16;
    while (cap < 2 * count)
        cap *= 2;
    m->merges = malloc(cap * sizeof *m->merges);
    if (!m->merges) return io_fail_oom(c, "out of memory for %zu merges", count);
    for (size_t i = 0; i < cap; i++)
        m->merges[i].new_id = -1;
    m->merge_mask = cap - 1;
    return 0;
}

/* Enters merge number `rank`: a + b (b's first prefix_len bytes left out, as build() does)
 * must be in the vocabulary; a pair given again takes its later rank, as the merges' map does. */
static int merge_add(const err_ctx *c, tok_bpe *m, const char *a, size_t na, const char *b,
                     size_t nb, uint32_t rank)
{
    const char *what = "model: BPE: merges";
    int32_t ia = tok_vocab_find(&m->vocab, a, na), ib = tok_vocab_find(&m->vocab, b, nb);
    if (ia < 0 || ib < 0)
        return io_fail(c, "%s: \"%.*s\" of merge %u is not in the vocabulary", what,
                       (int)(ia < 0 ? na : nb), ia < 0 ? a : b, (unsigned)rank);
    if (nb < m->prefix_len)
        return io_fail(c, "%s: \"%.*s\" of merge %u is shorter than continuing_subword_prefix",
                       what, (int)nb, b, (unsigned)rank);
    int32_t made = tok_vocab_find2(&m->vocab, a, na, b + m->prefix_len, nb - m->prefix_len);
    if (made < 0)
        return io_fail(c, "%s: \"%.*s%.*s\" that merge %u makes is not in the vocabulary", what,
                       (int)na, a, (int)(nb - m->prefix_len), b + m->prefix_len, (unsigned)rank);
    size_t i = merge_slot_of(m, pair_key(ia, ib));
    m->merges[i] = (merge_slot){pair_key(ia, ib), rank, made};
    return 0;
}

/* [["a", "b"], ...], tokenizers' form since 0.20. */
static int merges_pairs(const err_ctx *c, tok_bpe *m, const cJSON *list)
{
    uint32_t rank = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        const cJSON *a = cJSON_GetArrayItem(e, 0), *b = cJSON_GetArrayItem(e, 1);
        if (merge_add(c, m, a->valuestring, strlen(a->valuestring), b->valuestring,
                      strlen(b->valuestring), rank++) != 0)
            return -1;
    }
    return 0;
}

/* ["a b", ...], merges.txt's lines: "#version" lines skipped, the others split at their one
 * space (convert_merges_to_hashmap). */
static int merges_lines(const err_ctx *c, tok_bpe *m, const cJSON *list)
{
    uint32_t rank = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        const char *s = e->valuestring;
        if (strncmp(s, "#version", 8) == 0) continue;
        const char *space = strchr(s, ' ');
        if (!space || strchr(space + 1, ' '))
            return io_fail(c, "model: BPE: merges: line %u \"%s\" is not two tokens and a space",
                           (unsigned)rank + 1, s);
        if (merge_add(c, m, s, (size_t)(space - s), space + 1, strlen(space + 1), rank++) != 0)
            return -1;
    }
    return 0;
}

static int is_pair(const cJSON *e)
{
    return cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 &&
           cJSON_IsString(cJSON_GetArrayItem(e, 0)) && cJSON_IsString(cJSON_GetArrayItem(e, 1));
}

static int read_merges(const err_ctx *c, tok_bpe *m, const cJSON *list)
{
    if (!cJSON_IsArray(list)) return io_fail(c, "model: BPE: merges: expected a list");
    int pairs = 1, lines = 1;
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        pairs &= is_pair(e);
        lines &= cJSON_IsString(e);
    }
    if (!pairs && !lines)
        return io_fail(c, "model: BPE: merges: expected a list of [\"a\", \"b\"] pairs or of "
                          "\"a b\" strings");
    m->n_merges = (size_t)cJSON_GetArraySize(list);
    if (merges_alloc(c, m, m->n_merges) != 0) return -1;
    return pairs ? merges_pairs(c, m, list) : merges_lines(c, m, list);
}

/* ---- loading ---- */

static int read_dropout(const err_ctx *c, const cJSON *j)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "dropout");
    if (!d || cJSON_IsNull(d)) return 0;
    if (!cJSON_IsNumber(d)) return io_fail(c, "model: BPE: dropout: expected a number or null");
    /* 0 merges as null does; any other value is random */
    if (d->valuedouble != 0)
        return io_fail(c, "model: BPE: dropout %g is not supported (it is random; only null)",
                       d->valuedouble);
    return 0;
}

static int read_options(const err_ctx *c, const cJSON *j, tok_bpe *m)
{
    const char *what = "model: BPE", *unk, *prefix, *suffix;
    if (tok_fields_known(c, j, what, BPE_KEYS) != 0 || read_dropout(c, j) != 0 ||
        tok_field_opt_string(c, j, what, "unk_token", &unk) != 0 ||
        tok_field_opt_string(c, j, what, "continuing_subword_prefix", &prefix) != 0 ||
        tok_field_opt_string(c, j, what, "end_of_word_suffix", &suffix) != 0 ||
        tok_field_opt_bool(c, j, what, "fuse_unk", &m->fuse_unk) != 0 ||
        tok_field_opt_bool(c, j, what, "byte_fallback", &m->byte_fallback) != 0 ||
        tok_field_opt_bool(c, j, what, "ignore_merges", &m->ignore_merges) != 0)
        return -1;
    if (tok_strdup(c, unk, &m->unk) != 0 || tok_strdup(c, prefix, &m->prefix) != 0 ||
        tok_strdup(c, suffix, &m->suffix) != 0)
        return -1;
    m->prefix_len = prefix ? strlen(prefix) : 0;
    m->suffix_len = suffix ? strlen(suffix) : 0;
    return 0;
}

static int bpe_read(const err_ctx *c, const cJSON *j, tok_bpe *m)
{
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(j, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(j, "merges");
    if (read_options(c, j, m) != 0) return -1;
    if (!vocab || !merges) return io_fail(c, "model: BPE: vocab and merges are required");
    if (tok_vocab_from_object(c, vocab, "model: BPE: vocab", &m->vocab) != 0 ||
        read_merges(c, m, merges) != 0)
        return -1;
    m->unk_id = m->unk ? tok_vocab_find(&m->vocab, m->unk, strlen(m->unk)) : -1;
    tok_vocab_byte_ids(&m->vocab, m->byte_ids);
    return 0;
}

int tok_bpe_load(const err_ctx *c, const cJSON *j, tok_bpe **out)
{
    *out = NULL;
    tok_bpe *m = calloc(1, sizeof *m);
    if (!m) return io_fail_oom(c, "out of memory for the BPE model");
    if (bpe_read(c, j, m) != 0) {
        tok_bpe_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void tok_bpe_free(tok_bpe *m)
{
    if (!m) return;
    tok_vocab_free(&m->vocab);
    free(m->merges);
    free(m->unk);
    free(m->prefix);
    free(m->suffix);
    free(m);
}

const tok_vocab *tok_bpe_vocab(const tok_bpe *m)
{
    return &m->vocab;
}

void tok_bpe_describe(const tok_bpe *m, char *out, size_t size)
{
    snprintf(out, size, "BPE(%d tokens, %zu merges%s%s%s%s%s%s)", (int)m->vocab.count, m->n_merges,
             m->unk ? ", unk_token " : "", m->unk ? m->unk : "",
             m->byte_fallback ? ", byte_fallback" : "", m->fuse_unk ? ", fuse_unk" : "",
             m->ignore_merges ? ", ignore_merges" : "",
             m->prefix || m->suffix ? ", subword affixes" : "");
}

/* ---- running ---- */

/* A symbol of the word; len 0 marks one merged into the symbol before it. */
typedef struct bpe_sym {
    int32_t c;
    ptrdiff_t prev, next;
    size_t len;
} bpe_sym;

typedef struct bpe_word {
    bpe_sym *v;
    size_t n, cap;
} bpe_word;

/* A merge waiting in the queue: the pair at pos (its left symbol) and what it makes. */
typedef struct bpe_cand {
    uint32_t rank;
    int32_t new_id;
    size_t pos;
} bpe_cand;

typedef struct bpe_queue {
    bpe_cand *v;
    size_t n, cap;
} bpe_queue;

static int word_add(const err_ctx *c, bpe_word *w, int32_t id, size_t len)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        bpe_sym *v = realloc(w->v, cap * sizeof *v);
        if (!v) return io_fail_oom(c, "out of memory for a word of %zu symbols", cap);
        w->v = v;
        w->cap = cap;
    }
    if (w->n) w->v[w->n - 1].next = (ptrdiff_t)w->n;
    w->v[w->n] = (bpe_sym){id, (ptrdiff_t)w->n - 1, -1, len};
    w->n++;
    return 0;
}

static int cand_less(const bpe_cand *a, const bpe_cand *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

/* The queue never holds more than the word's pairs plus two per merge, so it is sized once. */
static void queue_push(bpe_queue *q, bpe_cand x)
{
    size_t i = q->n++;
    while (i > 0 && cand_less(&x, &q->v[(i - 1) / 2])) {
        q->v[i] = q->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->v[i] = x;
}

static bpe_cand queue_pop(bpe_queue *q)
{
    bpe_cand top = q->v[0], last = q->v[--q->n];
    size_t i = 0;
    for (;;) {
        size_t kid = 2 * i + 1;
        if (kid >= q->n) break;
        if (kid + 1 < q->n && cand_less(&q->v[kid + 1], &q->v[kid])) kid++;
        if (!cand_less(&q->v[kid], &last)) break;
        q->v[i] = q->v[kid];
        i = kid;
    }
    if (q->n) q->v[i] = last;
    return top;
}

static void queue_pair(const tok_bpe *m, bpe_queue *q, const bpe_word *w, size_t pos)
{
    const merge_slot *s = merge_find(m, w->v[pos].c, w->v[w->v[pos].next].c);
    if (s) queue_push(q, (bpe_cand){s->rank, s->new_id, pos});
}

/* Merges the symbol at top.pos with the one after it, unless the entry is stale, and queues
 * the pairs the new symbol makes with its neighbours. */
static void merge_at(const tok_bpe *m, bpe_queue *q, bpe_word *w, bpe_cand top)
{
    bpe_sym *left = &w->v[top.pos];
    if (left->len == 0 || left->next < 0) return;
    bpe_sym right = w->v[left->next];
    const merge_slot *s = merge_find(m, left->c, right.c);
    if (!s || s->new_id != top.new_id) return;
    w->v[left->next].len = 0;
    left->c = top.new_id;
    left->len += right.len;
    left->next = right.next;
    if (right.next >= 0) w->v[right.next].prev = (ptrdiff_t)top.pos;
    if (left->prev >= 0) queue_pair(m, q, w, (size_t)left->prev);
    if (left->next >= 0) queue_pair(m, q, w, top.pos);
}

static int merge_all(const err_ctx *c, const tok_bpe *m, bpe_word *w)
{
    bpe_queue q = {NULL, 0, 3 * w->n + 1};
    q.v = malloc(q.cap * sizeof *q.v);
    if (!q.v) return io_fail_oom(c, "out of memory for a word of %zu symbols", w->n);
    for (size_t i = 0; i + 1 < w->n; i++)
        queue_pair(m, &q, w, i);
    while (q.n)
        merge_at(m, &q, w, queue_pop(&q));
    free(q.v);
    return 0;
}

/* The unknown character's token waiting to be added (fuse_unk grows it). */
typedef struct bpe_unk {
    int pending;
    size_t len;
} bpe_unk;

static int flush_unk(const err_ctx *c, const tok_bpe *m, bpe_word *w, bpe_unk *unk)
{
    if (!unk->pending) return 0;
    unk->pending = 0;
    return word_add(c, w, m->unk_id, unk->len);
}

/* A character with no token of its own: its bytes' tokens when all are there, else unk. */
static int unknown_char(const err_ctx *c, const tok_bpe *m, bpe_word *w, bpe_unk *unk,
                        const char *piece, size_t piece_len, size_t char_len)
{
    if (m->byte_fallback) {
        size_t i = 0;
        while (i < piece_len && m->byte_ids[(unsigned char)piece[i]] >= 0)
            i++;
        if (i == piece_len) {
            for (i = 0; i < piece_len; i++)
                if (word_add(c, w, m->byte_ids[(unsigned char)piece[i]], 1) != 0) return -1;
            return 0; /* an unk waiting stays waiting, as merge_word leaves it */
        }
    }
    if (!m->unk) return 0;
    if (unk->pending && m->fuse_unk) {
        unk->len += char_len;
        return 0;
    }
    if (flush_unk(c, m, w, unk) != 0) return -1;
    if (m->unk_id < 0)
        return io_fail(c, "model: BPE: unk_token \"%s\" is not in the vocabulary", m->unk);
    *unk = (bpe_unk){1, char_len};
    return 0;
}

/* merge_word's symbols before merging: one per character, affixes added. `piece` has room for
 * the prefix, a character and the suffix. */
static int split_word(const err_ctx *c, const tok_bpe *m, const char *s, size_t n, char *piece,
                      bpe_word *w)
{
    bpe_unk unk = {0, 0};
    for (size_t i = 0; i < n;) {
        size_t len = tok_model_char_len((unsigned char)s[i]), k = 0;
        if (len > n - i) len = n - i;
        if (i > 0 && m->prefix) {
            memcpy(piece, m->prefix, m->prefix_len);
            k = m->prefix_len;
        }
        memcpy(piece + k, s + i, len);
        k += len;
        if (i + len == n && m->suffix) {
            memcpy(piece + k, m->suffix, m->suffix_len);
            k += m->suffix_len;
        }
        int32_t id = tok_vocab_find(&m->vocab, piece, k);
        int rc = id >= 0 ? flush_unk(c, m, w, &unk) || word_add(c, w, id, len)
                         : unknown_char(c, m, w, &unk, piece, k, len);
        if (rc != 0) return -1;
        i += len;
    }
    return flush_unk(c, m, w, &unk);
}

static int emit(const err_ctx *c, const bpe_word *w, tok_toks *out)
{
    size_t at = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (w->v[i].len == 0) continue;
        if (tok_toks_push(c, out, w->v[i].c, at, at + w->v[i].len) != 0) return -1;
        at += w->v[i].len;
    }
    return 0;
}

int tok_bpe_run(const err_ctx *c, const tok_bpe *m, const char *s, size_t n, tok_toks *out)
{
    if (n == 0) return 0;
    if (m->ignore_merges) {
        int32_t id = tok_vocab_find(&m->vocab, s, n);
        if (id >= 0) return tok_toks_push(c, out, id, 0, n);
    }
    char *piece = malloc(m->prefix_len + 4 + m->suffix_len);
    if (!piece) return io_fail_oom(c, "out of memory for a word");
    bpe_word w = {NULL, 0, 0};
    int rc = split_word(c, m, s, n, piece, &w);
    if (rc == 0) rc = merge_all(c, m, &w);
    if (rc == 0) rc = emit(c, &w, out);
    free(piece);
    free(w.v);
    return rc;
}
