/* The decoders' loaded form, shared by their loader (tok_decoders_load.c) and their run
 * (tok_decoders.c). */
#ifndef VKBERT_IO_TOK_DECODERS_INTERNAL_H
#define VKBERT_IO_TOK_DECODERS_INTERNAL_H

#include "tok_pipeline.h"

typedef enum dec_kind {
    DEC_METASPACE,
    DEC_BYTE_LEVEL,
    DEC_WORDPIECE,
    DEC_BYTE_FALLBACK,
    DEC_FUSE,
    DEC_STRIP,
    DEC_REPLACE,
    DEC_BPE,
    DEC_SEQUENCE,
} dec_kind;

struct tok_decoder {
    dec_kind kind;
    int32_t replacement; /* Metaspace */
    int prepend_never;
    char *prefix; /* WordPiece */
    size_t prefix_len;
    int cleanup;
    int32_t content; /* Strip: the character cut */
    uint32_t start, stop;
    char *pattern; /* Replace: a String pattern, or regex for a Regex one */
    size_t pattern_len;
    tok_regex *regex;
    char *content_str; /* Replace's content */
    size_t content_len;
    char *suffix; /* BPEDecoder */
    size_t suffix_len;
    tok_decoder **decoders; /* Sequence */
    size_t n_decoders;
};

#endif
