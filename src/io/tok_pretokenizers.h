/* The pre-tokenizers as loaded (tok_pretokenizers.c) and run (tok_pretokenize.c): one struct
 * for every type, the fields a type does not use left zero. Not for use outside src/io. */
#ifndef VKBERT_IO_TOK_PRETOKENIZERS_H
#define VKBERT_IO_TOK_PRETOKENIZERS_H

#include "tok_pipeline.h"

typedef enum pretok_kind {
    PRETOK_METASPACE,
    PRETOK_BYTE_LEVEL,
    PRETOK_WHITESPACE,
    PRETOK_WHITESPACE_SPLIT,
    PRETOK_PUNCTUATION,
    PRETOK_DIGITS,
    PRETOK_SPLIT,
    PRETOK_BERT,
    PRETOK_SEQUENCE,
} pretok_kind;

/* Metaspace's prepend_scheme. */
typedef enum pretok_prepend {
    PREPEND_ALWAYS,
    PREPEND_FIRST,
    PREPEND_NEVER,
} pretok_prepend;

struct tok_pretokenizer {
    pretok_kind kind;
    tok_behavior behavior; /* Punctuation, Split */
    int invert;            /* Split */
    int individual_digits; /* Digits */
    /* Metaspace: the replacement character (as UTF-8 too), how it is prepended, whether the
     * text is split at it */
    int32_t replacement;
    char replacement_utf8[5];
    size_t replacement_len;
    pretok_prepend prepend;
    int split;
    /* ByteLevel: trim_offsets is the post-processor's business, kept for describe */
    int add_prefix_space, trim_offsets, use_regex;
    /* Split's pattern (String or Regex, as written), ByteLevel's GPT-2 pattern, Whitespace's */
    tok_regex *regex;
    char *pattern;
    int pattern_is_regex;
    /* Sequence */
    tok_pretokenizer **children;
    size_t count;
};

#endif
