/* The model of a tokenizer.json (tok_pipeline.h's tok_model_*): its "type" picks WordPiece,
 * BPE or Unigram, as tokenizers' tokenizers/src/models/mod.rs (ModelWrapper's Deserialize)
 * does; without a "type", the keys say which, in the order that file tries them (BPE, WordPiece,
 * WordLevel, Unigram). */
#include "tok_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum model_kind { MODEL_WORDPIECE, MODEL_BPE, MODEL_UNIGRAM } model_kind;

struct tok_model {
    model_kind kind;
    union {
        tok_wordpiece *wordpiece;
        tok_bpe *bpe;
        tok_unigram *unigram;
    } u;
};

/* ---- UTF-8 ---- */

size_t tok_model_char_len(unsigned char b)
{
    return b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
}

/* ---- which model ---- */

static int has(const cJSON *j, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(j, key) != NULL;
}

/* The model a "type"-less object deserializes to, as models/mod.rs's untagged fallback tries
 * them: BPE needs vocab and merges, WordPiece its four keys, WordLevel vocab and unk_token,
 * Unigram a vocab list. */
static int guess_kind(const err_ctx *c, const cJSON *j, model_kind *kind)
{
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(j, "vocab");
    if (cJSON_IsObject(vocab) && has(j, "merges")) {
        *kind = MODEL_BPE;
    } else if (cJSON_IsObject(vocab) && has(j, "unk_token") &&
               has(j, "continuing_subword_prefix") && has(j, "max_input_chars_per_word")) {
        *kind = MODEL_WORDPIECE;
    } else if (cJSON_IsObject(vocab) && has(j, "unk_token")) {
        return io_fail(c, "model: no \"type\", and its keys make it WordLevel, which is not "
                          "supported (WordPiece, BPE and Unigram are)");
    } else if (cJSON_IsArray(vocab)) {
        *kind = MODEL_UNIGRAM;
    } else {
        return io_fail(c, "model: no \"type\", and its keys fit none of WordPiece, BPE and "
                          "Unigram");
    }
    return 0;
}

static int model_kind_of(const err_ctx *c, const cJSON *j, model_kind *kind)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!type) return guess_kind(c, j, kind);
    if (!cJSON_IsString(type)) return io_fail(c, "model: type: expected a string");
    const char *t = type->valuestring;
    if (strcmp(t, "WordPiece") == 0) {
        *kind = MODEL_WORDPIECE;
    } else if (strcmp(t, "BPE") == 0) {
        *kind = MODEL_BPE;
    } else if (strcmp(t, "Unigram") == 0) {
        *kind = MODEL_UNIGRAM;
    } else {
        return io_fail(c, "model: type \"%s\" is not supported (WordPiece, BPE and Unigram are)",
                       t);
    }
    return 0;
}

int tok_model_load(const err_ctx *c, const cJSON *j, tok_model **out)
{
    *out = NULL;
    if (!cJSON_IsObject(j)) return io_fail(c, "model: expected an object");
    model_kind kind = MODEL_WORDPIECE;
    if (model_kind_of(c, j, &kind) != 0) return -1;
    tok_model *m = calloc(1, sizeof *m);
    if (!m) return io_fail_oom(c, "out of memory for the model");
    m->kind = kind;
    int rc = kind == MODEL_WORDPIECE ? tok_wordpiece_load(c, j, &m->u.wordpiece)
             : kind == MODEL_BPE     ? tok_bpe_load(c, j, &m->u.bpe)
                                     : tok_unigram_load(c, j, &m->u.unigram);
    if (rc != 0) {
        free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void tok_model_free(tok_model *m)
{
    if (!m) return;
    switch (m->kind) {
    case MODEL_WORDPIECE:
        tok_wordpiece_free(m->u.wordpiece);
        break;
    case MODEL_BPE:
        tok_bpe_free(m->u.bpe);
        break;
    case MODEL_UNIGRAM:
        tok_unigram_free(m->u.unigram);
        break;
    }
    free(m);
}

int tok_model_run(const err_ctx *c, const tok_model *m, const char *s, size_t n, tok_toks *out)
{
    switch (m->kind) {
    case MODEL_WORDPIECE:
        return tok_wordpiece_run(c, m->u.wordpiece, s, n, out);
    case MODEL_BPE:
        return tok_bpe_run(c, m->u.bpe, s, n, out);
    case MODEL_UNIGRAM:
        return tok_unigram_run(c, m->u.unigram, s, n, out);
    }
    return io_fail(c, "model: unknown kind");
}

static const tok_vocab *model_vocab(const tok_model *m)
{
    switch (m->kind) {
    case MODEL_WORDPIECE:
        return tok_wordpiece_vocab(m->u.wordpiece);
    case MODEL_BPE:
        return tok_bpe_vocab(m->u.bpe);
    case MODEL_UNIGRAM:
        return tok_unigram_vocab(m->u.unigram);
    }
    return NULL;
}

int32_t tok_model_id(const tok_model *m, const char *s, size_t n)
{
    return tok_vocab_find(model_vocab(m), s, n);
}

const char *tok_model_token(const tok_model *m, int32_t id, size_t *len)
{
    return tok_vocab_token(model_vocab(m), id, len);
}

int32_t tok_model_size(const tok_model *m)
{
    return model_vocab(m)->count;
}

void tok_model_describe(const tok_model *m, char *out, size_t size)
{
    switch (m->kind) {
    case MODEL_WORDPIECE:
        tok_wordpiece_describe(m->u.wordpiece, out, size);
        break;
    case MODEL_BPE:
        tok_bpe_describe(m->u.bpe, out, size);
        break;
    case MODEL_UNIGRAM:
        tok_unigram_describe(m->u.unigram, out, size);
        break;
    }
}
