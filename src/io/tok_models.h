/* What the tokenizer's models share (tok_model.c, tok_vocab.c, tok_wordpiece.c, tok_bpe.c,
 * tok_unigram.c): the string <-> id table and each model's
 * calls, which tok_model.c dispatches to by the model's "type" (tok_pipeline.h's tok_model_*).
 * Not for use outside src/io. */
#ifndef VKBERT_IO_TOK_MODELS_H
#define VKBERT_IO_TOK_MODELS_H

#include "tok_fields.h"
#include "tok_pipeline.h"

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ the vocabulary ---- */

/* Ids to strings (holes allowed) and strings to ids: open addressing with linear probing over a
 * table kept at most half full. A string entered twice maps to its later id, as a map that is
 * filled in order does; each id keeps its own string. */
typedef struct tok_vocab {
    char **tokens; /* tokens[id], NUL-terminated, NULL where no token has the id */
    size_t *lens;
    int32_t count; /* one past the largest id */
    size_t entries, longest;
    int32_t *slots; /* an id, or -1 for an empty slot */
    size_t slot_mask;
} tok_vocab;

/* Room for ids below `count` and for `entries` strings. */
int tok_vocab_init(const err_ctx *c, tok_vocab *v, int32_t count, size_t entries);
void tok_vocab_free(tok_vocab *v);
/* Copies s[0..n) in as the token of `id` (below count, not yet given). */
int tok_vocab_add(const err_ctx *c, tok_vocab *v, int32_t id, const char *s, size_t n);
/* The id of the string a[0..na) followed by b[0..nb), without building it; -1 when absent. */
int32_t tok_vocab_find2(const tok_vocab *v, const char *a, size_t na, const char *b, size_t nb);
int32_t tok_vocab_find(const tok_vocab *v, const char *s, size_t n);
const char *tok_vocab_token(const tok_vocab *v, int32_t id, size_t *len);
/* A JSON object {"token": id, ...} (WordPiece's and BPE's "vocab"); `what` names it in
 * messages ("model: BPE: vocab"). A token or an id given twice is refused. */
int tok_vocab_from_object(const err_ctx *c, const cJSON *obj, const char *what, tok_vocab *v);

/* The length of the UTF-8 character whose first byte is b (1 for a byte that starts none). */
size_t tok_model_char_len(unsigned char b);

/* "<0xNN>"'s id for each byte (-1 where the vocabulary lacks it): byte fallback's tokens. */
void tok_vocab_byte_ids(const tok_vocab *v, int32_t ids[256]);

/* ------------------------------------------------------------------- the models ---- */

typedef struct tok_wordpiece tok_wordpiece;
typedef struct tok_bpe tok_bpe;
typedef struct tok_unigram tok_unigram;

int tok_wordpiece_load(const err_ctx *c, const cJSON *j, tok_wordpiece **out);
void tok_wordpiece_free(tok_wordpiece *m);
int tok_wordpiece_run(const err_ctx *c, const tok_wordpiece *m, const char *s, size_t n,
                      tok_toks *out);
const tok_vocab *tok_wordpiece_vocab(const tok_wordpiece *m);
void tok_wordpiece_describe(const tok_wordpiece *m, char *out, size_t size);

int tok_bpe_load(const err_ctx *c, const cJSON *j, tok_bpe **out);
void tok_bpe_free(tok_bpe *m);
int tok_bpe_run(const err_ctx *c, const tok_bpe *m, const char *s, size_t n, tok_toks *out);
const tok_vocab *tok_bpe_vocab(const tok_bpe *m);
void tok_bpe_describe(const tok_bpe *m, char *out, size_t size);

int tok_unigram_load(const err_ctx *c, const cJSON *j, tok_unigram **out);
void tok_unigram_free(tok_unigram *m);
int tok_unigram_run(const err_ctx *c, const tok_unigram *m, const char *s, size_t n, tok_toks *out);
const tok_vocab *tok_unigram_vocab(const tok_unigram *m);
void tok_unigram_describe(const tok_unigram *m, char *out, size_t size);

#endif
