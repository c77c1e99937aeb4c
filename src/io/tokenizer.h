/* BERT's WordPiece tokenizer (vocab.txt), with HuggingFace BertTokenizer's semantics: clean the
 * text, space out CJK ideographs, split on whitespace, optionally lowercase and strip accents,
 * split off punctuation, then greedy longest-match WordPiece. Plain C, no Vulkan. */
#ifndef VKBERT_IO_TOKENIZER_H
#define VKBERT_IO_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tokenizer tokenizer;

/* One encoded input: [CLS] A [SEP] (B [SEP]), `count` entries in each array (owned). */
typedef struct tok_ids {
    int32_t *ids;
    int32_t *type_ids; /* 0 for [CLS] A [SEP], 1 for B [SEP] */
    int32_t *mask;     /* all 1: no padding is added */
    int count;
} tok_ids;

/* Reads vocab.txt: one token per line, its id the line number from 0 (a trailing \r is
 * stripped; empty lines are tokens too, as in HuggingFace). [UNK], [CLS], [SEP] and [PAD] must
 * be present. On failure returns -1, sets *out to NULL and writes "<path>: <problem>" to err. */
int tok_load(const char *vocab_path, int do_lower_case, tokenizer **out, char *err,
             size_t err_size);
void tok_free(tokenizer *t);

/* Sets *do_lower_case from tokenizer_config.json's boolean "do_lower_case". Returns 1 when it
 * was read, 0 when the file or the key is absent (the value unchanged; BERT uncased models
 * want 1), -1 when the file cannot be read or parsed or the key is not a boolean (unchanged). */
int tok_load_config(const char *tokenizer_config_json_path, int *do_lower_case);

/* The id of `token`, or -1 when it is not in the vocabulary. */
int32_t tok_id(const tokenizer *t, const char *token);
/* The token of `id`, or NULL when out of range. */
const char *tok_token(const tokenizer *t, int32_t id);

/* Encodes `text` (and `text_pair`, which may be NULL), both UTF-8, into at most `max_len` ids,
 * truncating like HuggingFace's "longest_first": one token at a time from the end of the longer
 * sequence (of the pair when they tie). max_len must be at least 2, or 3 with a pair. On failure
 * returns -1, leaves *out zeroed and writes the problem (e.g. "text: invalid UTF-8 at byte 7")
 * to err. */
int tok_encode(const tokenizer *t, const char *text, const char *text_pair, int max_len,
               tok_ids *out, char *err, size_t err_size);
void tok_ids_free(tok_ids *ids);

#endif
