/* The models' string <-> id table (tok_models.h): FNV-1a hashing and linear probing, as
 * tokenizer.c's WordPiece vocabulary has it, as a table of its own. A token given again maps to
 * its later id, as tokenizers' maps (AHashMap filled in order: tokenizers'
 * tokenizers/src/models/unigram/model.rs, Unigram::from) keep it. */
#include "tok_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t fnv1a(uint32_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static int is_concat(const tok_vocab *v, int32_t id, const char *a, size_t na, const char *b,
                     size_t nb)
{
    const char *t = v->tokens[id];
    return v->lens[id] == na + nb && memcmp(t, a, na) == 0 && memcmp(t + na, b, nb) == 0;
}

/* The slot of a + b: where its id is, or the empty slot where it would go. The table is at most
 * half full, so a probe always ends. */
static size_t probe(const tok_vocab *v, const char *a, size_t na, const char *b, size_t nb)
{
    size_t i = fnv1a(fnv1a(2166136261u, a, na), b, nb) & v->slot_mask;
    while (v->slots[i] >= 0 && !is_concat(v, v->slots[i], a, na, b, nb))
        i = (i + 1) & v->slot_mask;
    return i;
}

int tok_vocab_init(const err_ctx *c, tok_vocab *v, int32_t count, size_t entries)
{
    memset(v, 0, sizeof *v);
    size_t cap = 16;
    while (cap < 2 * entries) {
        if (cap > SIZE_MAX / 4 / sizeof *v->slots)
            return io_fail_oom(c, "out of memory for %zu tokens", entries);
        cap *= 2;
    }
    size_t n = count > 0 ? (size_t)count : 1;
    v->tokens = calloc(n, sizeof *v->tokens);
    v->lens = calloc(n, sizeof *v->lens);
    v->slots = malloc(cap * sizeof *v->slots);
    if (!v->tokens || !v->lens || !v->slots) {
        tok_vocab_free(v);
        return io_fail_oom(c, "out of memory for %zu tokens", entries);
    }
    memset(v->slots, 0xff, cap * sizeof *v->slots); /* all -1 */
    v->slot_mask = cap - 1;
    v->count = count;
    return 0;
}

void tok_vocab_free(tok_vocab *v)
{
    if (!v) return;
    if (v->tokens)
        for (int32_t i = 0; i < v->count; i++)
            free(v->tokens[i]);
    free(v->tokens);
    free(v->lens);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

int tok_vocab_add(const err_ctx *c, tok_vocab *v, int32_t id, const char *s, size_t n)
{
    if (v->entries * 2 >= v->slot_mask + 1)
        return io_fail(c, "vocabulary: more tokens than its table was sized for");
    char *copy = malloc(n + 1);
    if (!copy) return io_fail_oom(c, "out of memory for a token of %zu bytes", n);
    memcpy(copy, s, n);
    copy[n] = 0;
    v->tokens[id] = copy;
    v->lens[id] = n;
    v->slots[probe(v, s, n, "", 0)] = id;
    v->entries++;
    if (n > v->longest) v->longest = n;
    return 0;
}

int32_t tok_vocab_find2(const tok_vocab *v, const char *a, size_t na, const char *b, size_t nb)
{
    if (na + nb > v->longest) return -1;
    return v->slots[probe(v, a, na, b, nb)];
}

int32_t tok_vocab_find(const tok_vocab *v, const char *s, size_t n)
{
    return tok_vocab_find2(v, s, n, "", 0);
}

const char *tok_vocab_token(const tok_vocab *v, int32_t id, size_t *len)
{
    if (id < 0 || id >= v->count || !v->tokens[id]) return NULL;
    if (len) *len = v->lens[id];
    return v->tokens[id];
}

/* How far a vocabulary's ids may run past its count (tokenizers' are a map; real ones have few
 * holes). */
enum { SPARSE_FACTOR = 4, SPARSE_SLACK = 1 << 16 };

/* The largest id of the object's values, each checked to be a whole number in u32's range that
 * also fits an int32 id. */
static int object_ids(const err_ctx *c, const cJSON *obj, const char *what, double *top)
{
    *top = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, obj)
    {
        double id;
        if (tok_field_number(c, e, what, e->string, INT32_MAX - 1, &id) != 0) return -1;
        if (id > *top) *top = id;
    }
    return 0;
}

int tok_vocab_from_object(const err_ctx *c, const cJSON *obj, const char *what, tok_vocab *v)
{
    if (!cJSON_IsObject(obj)) return io_fail(c, "%s: expected an object", what);
    double top;
    if (object_ids(c, obj, what, &top) != 0) return -1;
    size_t entries = (size_t)cJSON_GetArraySize(obj);
    /* the id table is dense: a few tokens at ids in the billions would take gigabytes */
    if (top >= (double)entries * SPARSE_FACTOR + SPARSE_SLACK)
        return io_fail(c,
                       "%s: id %.0f among %zu tokens: ids past %d times the count plus %d are "
                       "refused",
                       what, top, entries, SPARSE_FACTOR, SPARSE_SLACK);
    if (tok_vocab_init(c, v, (int32_t)(top + 1), entries) != 0) return -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, obj)
    {
        int32_t id = (int32_t)e->valuedouble;
        size_t n = strlen(e->string);
        if (v->tokens[id]) return io_fail(c, "%s: id %d given twice", what, (int)id);
        if (tok_vocab_find(v, e->string, n) >= 0)
            return io_fail(c, "%s: token \"%s\" given twice", what, e->string);
        if (tok_vocab_add(c, v, id, e->string, n) != 0) return -1;
    }
    return 0;
}

void tok_vocab_byte_ids(const tok_vocab *v, int32_t ids[256])
{
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        ids[b] = tok_vocab_find(v, name, 6);
    }
}
