/* What the tokenizer's files share: the tokenizer itself (tokenizer.c: the added vocabulary
 * and the calls on a loaded tokenizer), the encode path (tokenizer_text.c) and the folder
 * loader (tokenizer_json.c). The components it runs are tok_pipeline.h's. Not for use outside
 * src/io. */
#ifndef VKBERT_IO_TOKENIZER_INTERNAL_H
#define VKBERT_IO_TOKENIZER_INTERNAL_H

#include "io_error.h"
#include "tok_pipeline.h"
#include "tokenizer.h"

#include <stddef.h>
#include <stdint.h>

/* A growable byte string (the decoders build their strings in one). */
typedef struct bytes {
    char *v;
    size_t n, cap;
} bytes;

int bytes_put(bytes *b, const char *s, size_t n);
int bytes_put_char(bytes *b, int32_t c);

/* A string kept whole when it appears in text (tokenizers' AddedToken). */
typedef struct tok_added {
    char *content;
    size_t content_len;
    char *match; /* what is searched for: the content, or the normalizer's output of it */
    size_t match_len;
    int32_t id;
    int normalized, lstrip, rstrip, single_word, special;
} tok_added;

/* tokenizers' TruncationParams (utils/truncation.rs). */
typedef enum { TOK_LONGEST_FIRST, TOK_ONLY_FIRST, TOK_ONLY_SECOND } tok_strategy;

typedef struct tok_truncation {
    size_t max_length, stride;
    tok_strategy strategy;
    int left;
} tok_truncation;

/* tokenizers' PaddingParams (utils/padding.rs); `fixed` 0 is BatchLongest. */
typedef struct tok_padding {
    size_t fixed, multiple;
    int32_t pad_id, pad_type_id;
    int left;
} tok_padding;

/* The special tokens tok_describe names, in this order. */
enum { TOK_UNK, TOK_SEP, TOK_PAD, TOK_CLS, TOK_MASK, TOK_SPECIALS };

enum { TOK_DESC_SIZE = 256 };

struct tokenizer {
    const char *source; /* "tokenizer.json" or "vocab.txt" */
    tok_model *model;   /* never NULL once loaded */
    tok_normalizer *normalizer;
    tok_pretokenizer *pre_tokenizer;
    tok_post *post;
    tok_decoder *decoder;

    tok_added *added;
    size_t n_added;
    unsigned char first_bytes[2][32]; /* bit b: some added token's match starts with byte b */

    int has_truncation, has_padding; /* the tokenizer.json's own sections */
    tok_truncation truncation;
    tok_padding padding;

    /* what tok_describe reports of a BertNormalizer and a WordPiece model */
    int bert_normalizer, lowercase, strip_accents, chinese_chars, clean_text;
    char *subword_prefix;
    size_t max_word_chars;

    int model_max_length; /* 0 for none */
    char *special[TOK_SPECIALS];
    char desc[5][TOK_DESC_SIZE]; /* model, normalizer, pre-tokenizer, post-processor, decoder */
};

/* ---- tokenizer.c ---- */

/* An empty tokenizer with BertTokenizer's special tokens, or NULL when out of memory. */
tokenizer *tok_new(void);
int tok_set_string(char **field, const char *s, size_t n);
/* tokenizers' AddedVocabulary::add_tokens for one token: its id the vocabulary's when the
 * content has one, else the next past the vocabulary; a content given again takes the later
 * flags; an empty content is ignored. The match text is set by tok_prepare_added. */
int tok_add(const err_ctx *c, tokenizer *t, const tok_added *a);
const tok_added *tok_find_added(const tokenizer *t, const char *s, size_t n);
/* Keeps each special token (t->special) that has an id whole in text, as transformers adds
 * them; with `require`, all but [MASK] must have one. */
int tok_add_specials(const err_ctx *c, tokenizer *t, int require);
/* Each added token's match text (normalized ones through the normalizer), once the
 * normalizer is known; fills the descriptions too. The last step of every load. */
int tok_prepare_added(const err_ctx *c, tokenizer *t);

/* ---- tokenizer_text.c ---- */

/* How many bytes of s[0..n) are valid UTF-8 before the first that is not (n: all). */
size_t tok_utf8_prefix(const char *s, size_t n);

/* ---- tokenizer_chars.c: the character classes added tokens are matched with ---- */

int tok_is_ws(int32_t c);        /* White_Space (Rust regex's \s) */
int tok_is_word_char(int32_t c); /* Rust regex's \w */
int tok_is_cjk(int32_t c);       /* handle_chinese_chars' ideographs */
int tok_is_control(int32_t c);   /* what clean_text drops */
int tok_is_punct(int32_t c);     /* a word of its own in BertPreTokenizer */
int tok_is_mark(int32_t c);      /* what strip_accents drops after NFD */
int32_t tok_lower(int32_t c);    /* one code point's lowercase, but U+0130's second */

/* The combining class tokenizers' NFD orders marks by (0 for one newer than its tables). */
int32_t tok_combining_class(int32_t c);

#endif
