/* The tokenizer.json families fuzz_tokenize runs text through, shared with the regression test
 * that replays its inputs: which seed of tests/fuzz/corpus/tokenizer_json each family loads, and
 * what an encoding and its decoding must keep, as tokenizers guarantees it. */
#ifndef VKBERT_FUZZ_TOK_FAMILIES_H
#define VKBERT_FUZZ_TOK_FAMILIES_H

#include "io/tokenizer.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* fuzz_tokenize's flags byte, bits 2-3: 0 is the vocab.txt WordPiece tokenizer, 1-3 these (the
 * files' names in tests/fuzz/corpus/tokenizer_json). */
static const char *const tok_family_files[4] = {NULL, "unigram", "byte_level_bpe",
                                                "bpe_byte_fallback"};
enum { TOK_FAMILY_UNIGRAM = 1, TOK_FAMILY_BYTE_LEVEL = 2, TOK_FAMILY_BYTE_FALLBACK = 3 };

/* A family input's max_len byte: 0 the file's own rules, 255 none, else itself. */
static inline int tok_family_max_len(unsigned char byte)
{
    return byte == 0 ? TOK_FILE_RULES : byte == 255 ? INT_MAX : byte;
}

static inline size_t tok_family_chars(const char *s)
{
    size_t k = 0;
    for (; *s; s++)
        k += ((unsigned char)*s & 0xC0) != 0x80;
    return k;
}

static inline int tok_family_utf8(const char *s)
{
    for (size_t i = 0; s[i];) {
        unsigned char b = (unsigned char)s[i];
        size_t len = b < 0x80             ? 1
                     : (b & 0xE0) == 0xC0 ? 2
                     : (b & 0xF0) == 0xE0 ? 3
                     : (b & 0xF8) == 0xF0 ? 4
                                          : 0;
        if (!len) return 0;
        for (size_t k = 1; k < len; k++)
            if (((unsigned char)s[i + k] & 0xC0) != 0x80) return 0;
        i += len;
    }
    return 1;
}

/* Ids inside the vocabulary; each offset inside its text; the starts of the tokens a text gave
 * never going back, but once where the pair's begin. NULL when kept, else what broke. */
static inline const char *tok_family_check_ids(const tokenizer *t, const tok_ids *ids,
                                               const char *text, const char *pair)
{
    tok_info info;
    tok_describe(t, &info);
    size_t most = tok_family_chars(text), drops = 0;
    if (pair && tok_family_chars(pair) > most) most = tok_family_chars(pair);
    int32_t last = 0;
    for (int i = 0; i < ids->count; i++) {
        int32_t start = ids->offsets[2 * i], end = ids->offsets[2 * i + 1];
        if (ids->ids[i] < 0 || ids->ids[i] >= info.vocab_size)
            return "an id outside the vocabulary";
        if (start < 0 || start > end || (size_t)end > most) return "an offset outside the text";
        if (ids->special[i]) continue;
        if (start < last) drops++;
        last = start;
    }
    return drops > (pair ? 1u : 0u) ? "offsets going back" : NULL;
}

/* Decoding gives UTF-8; where tokenizers gives the text back (byte-level BPE and byte_fallback
 * BPE, one text not cut, no added token's '<' in it, for byte_fallback no U+2581), it is the
 * text. NULL when kept, else what broke. */
static inline const char *tok_family_check_decode(const tokenizer *t, int family,
                                                  const tok_ids *ids, const char *text,
                                                  int cut_or_pair, int skip_special)
{
    char err[256], *back = NULL;
    if (tok_decode(t, ids->ids, (size_t)ids->count, skip_special, &back, err, sizeof err) != 0)
        return "decoding failed";
    const char *broke = tok_family_utf8(back) ? NULL : "a decoded text that is not UTF-8";
    int exact = family == TOK_FAMILY_BYTE_LEVEL ||
                (family == TOK_FAMILY_BYTE_FALLBACK && !strstr(text, "\u2581"));
    if (!broke && exact && skip_special && !cut_or_pair && !strchr(text, '<') &&
        strcmp(back, text) != 0)
        broke = "decoding did not give the text back";
    free(back);
    return broke;
}

#endif
