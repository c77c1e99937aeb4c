/* What the tokenizer's files share: the tokenizer itself (tokenizer.c: the vocabulary and the
 * calls on it), the character classes (tokenizer_chars.c), the text path (tokenizer_text.c)
 * and the folder loader (tokenizer_json.c). Not for use outside src/io. */
#ifndef VKBERT_IO_TOKENIZER_INTERNAL_H
#define VKBERT_IO_TOKENIZER_INTERNAL_H

#include "io_error.h"
#include "tokenizer.h"

#include <stddef.h>
#include <stdint.h>

/* ---- growable arrays ---- */

typedef struct ints {
    int32_t *v;
    size_t n, cap;
} ints;

typedef struct bytes {
    char *v;
    size_t n, cap;
} bytes;

int ints_reserve(ints *a, size_t more);
int ints_push(ints *a, int32_t x);
int bytes_put(bytes *b, const char *s, size_t n);
int bytes_put_char(bytes *b, int32_t c);

/* A string kept whole when it appears in text (HuggingFace's AddedToken). */
typedef struct tok_added {
    char *content;
    size_t content_len;
    char *match; /* what is searched for: the content, or its normalized form */
    size_t match_len;
    int32_t id;
    int normalized, lstrip, rstrip, single_word, special;
} tok_added;

/* One piece of a post-processing template: an input sequence or a special token's ids. */
typedef struct tok_piece {
    int seq;             /* 0 for A, 1 for B, -1 for a special token */
    int32_t type_id;     /* for every id the piece puts out */
    size_t first, count; /* a special token's ids in tokenizer.tpl_ids */
} tok_piece;

typedef struct tok_template {
    tok_piece *pieces;
    size_t n;
    int added; /* how many special-token ids it puts out */
} tok_template;

/* The special tokens tok_describe names, in this order. */
enum { TOK_UNK, TOK_SEP, TOK_PAD, TOK_CLS, TOK_MASK, TOK_SPECIALS };

struct tokenizer {
    /* the model's vocabulary: tokens[id] (NULL where no token has the id) */
    char *text; /* the tokens' storage */
    char **tokens;
    size_t *lens;  /* a token may contain no NUL but the table compares lengths */
    int32_t count; /* one past the largest id */
    int32_t entries;
    int32_t *slots; /* open addressing, linear probing: an id, or -1 for empty */
    size_t slot_mask;
    const char *source; /* "tokenizer.json" or "vocab.txt" */

    /* BertNormalizer; `normalize` 0 when there is none */
    int normalize, clean, chinese, strip, lower;
    int pre_split; /* BertPreTokenizer, or the whole text as one word */
    /* WordPiece */
    char *prefix;
    size_t prefix_len;
    size_t max_word_chars;
    int32_t unk;

    tok_added *added;
    size_t n_added;
    int32_t *tpl_ids;
    size_t n_tpl_ids;
    tok_template single, pair;

    int model_max_length; /* 0 for none */
    char *special[TOK_SPECIALS];
};

/* ---- tokenizer.c ---- */

/* An empty tokenizer with BertTokenizer's defaults, or NULL when out of memory. */
tokenizer *tok_new(void);
int tok_set_string(char **field, const char *s, size_t n);
/* Sizes the vocabulary for ids below `count` (holes NULL) and its hash table for `entries`. */
int tok_vocab_alloc(const err_ctx *c, tokenizer *t, int32_t count, size_t entries);
/* Enters tokens[id]; a string entered twice keeps the later id. */
void tok_vocab_insert(tokenizer *t, int32_t id);
/* vocab.txt's text (owned by t from here): one token per line, the id the line number. */
int tok_vocab_lines(const err_ctx *c, tokenizer *t, char *text, size_t size);
/* The id of s[0..n) in the model's vocabulary, after the continuing-subword prefix when
 * `inner`; -1 when absent. */
int32_t tok_lookup(const tokenizer *t, int inner, const char *s, size_t n);
/* Keeps each special token (t->special) that has an id whole in text, as transformers adds
 * them to the fast tokenizer; with `require`, all but [MASK] must have one. */
int tok_add_specials(const err_ctx *c, tokenizer *t, int require);
/* vocab.txt's special tokens, required, then BERT's templates and the added tokens' match
 * texts: the last step of loading vocab.txt. */
int tok_vocab_specials(const err_ctx *c, tokenizer *t);
/* BERT's two templates over the ids of [CLS] and [SEP]. */
int tok_bert_template(tokenizer *t, int32_t cls, int32_t sep);
/* Appends an added token; its match text is set by tok_prepare_added. */
int tok_add(tokenizer *t, const tok_added *a);
const tok_added *tok_find_added(const tokenizer *t, const char *s, size_t n);

/* ---- tokenizer_chars.c: HuggingFace tokenizers' character classes ---- */

int tok_is_cjk(int32_t c);     /* handle_chinese_chars' ideographs */
int tok_is_ws(int32_t c);      /* White_Space */
int tok_is_control(int32_t c); /* what clean_text drops */
int tok_is_punct(int32_t c);   /* a word of its own in BertPreTokenizer */
int tok_is_mark(int32_t c);    /* what strip_accents drops after NFD */
int32_t tok_lower(int32_t c);  /* one code point's lowercase, but U+0130's second */
/* The combining class tokenizers' NFD orders marks by (0 for one newer than its tables). */
int32_t tok_combining_class(int32_t c);
/* NFD of in[0..n) into out, its marks in tokenizers' canonical order. */
int tok_nfd(const int32_t *in, size_t n, ints *out);
int tok_is_word_char(int32_t c);

/* ---- tokenizer_text.c ---- */

/* How many bytes of s[0..n) are valid UTF-8 before the first that is not (n: all). */
size_t tok_utf8_prefix(const char *s, size_t n);
/* The normalizer's output for s[0..n) (valid UTF-8), appended to out. */
int tok_normalize(const tokenizer *t, const char *s, size_t n, bytes *out);
/* Fills each added token's match text once the normalizer is known. */
int tok_prepare_added(const err_ctx *c, tokenizer *t);

#endif
