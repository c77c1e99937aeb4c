/* The tokenizer as a pipeline of components, each as HuggingFace tokenizers (the Rust crate)
 * defines it: added tokens split out, normalizer, pre-tokenizer, model, truncation,
 * post-processor, padding; and the decoder for the way back. This header is the contract
 * between the pipeline (tokenizer.c, tokenizer_text.c, tokenizer_json.c) and the components,
 * one file each:
 *
 *   tok_norm.c            the normalized string and its alignments
 *   tok_normalizers.c     NFC/NFD/NFKC/NFKD, Lowercase, Strip, StripAccents, Replace, Prepend,
 *                         BertNormalizer, Sequence
 *   tok_charsmap.c        Precompiled (SentencePiece's precompiled_charsmap)
 *   tok_regex.c           regular expressions (PCRE2)
 *   tok_split.c           splitting a normalized string at matches, by behaviour
 *   tok_pretokenizers.c   Metaspace, ByteLevel, Whitespace, WhitespaceSplit, Punctuation,
 *                         Digits, Split, BertPreTokenizer, Sequence
 *   tok_vocab.c           string <-> id tables the models share
 *   tok_wordpiece.c, tok_bpe.c, tok_unigram.c   the models
 *   tok_post.c            TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel,
 *                         Sequence
 *   tok_decoders.c        Metaspace, ByteLevel, WordPiece, ByteFallback, Fuse, Strip, Replace,
 *                         BPEDecoder, Sequence
 *
 * Conventions: every function that can fail returns 0, or -1 after writing the message through
 * io_fail / io_fail_oom (io_error.h) with the err_ctx given; a loader's message names the
 * component and the key ("normalizer: Replace: pattern: ..."), and a type or option outside what
 * is supported is refused by name, never approximated. Offsets are byte offsets: the pipeline
 * turns them into characters at the end, as tokenizers' Python binding reports them. A loaded
 * component is read-only: many threads may run it at once. Plain C, no Vulkan. */
#ifndef VKBERT_IO_TOK_PIPELINE_H
#define VKBERT_IO_TOK_PIPELINE_H

#include "io_error.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------- the normalized string ---- */

/* tokenizers' NormalizedString: the text as the components have changed it so far, and for
 * each of its bytes the span of the original text (absolute byte offsets into the text the
 * caller gave) that byte came from. */
typedef struct tok_norm {
    char *s; /* n bytes of UTF-8, then a NUL */
    size_t n, cap;
    size_t *align; /* 2 * n: byte i came from original [align[2i], align[2i + 1]) */
    size_t origin; /* the original span's start (tokenizers' original_shift), kept as it is */
} tok_norm;

/* s[0..n) unchanged: each byte comes from its whole character, as tokenizers aligns a new
 * string (the character at byte i of length k: [base + i, base + i + k)); origin = base. */
int tok_norm_init(const err_ctx *c, tok_norm *t, const char *s, size_t n, size_t base);
void tok_norm_free(tok_norm *t);

/* One character of a transformation (tokenizers' `(char, isize)` pairs of transform_range):
 * change 0 replaces one character of the old text, 1 is inserted (its alignment that of the
 * character before it, as tokenizers does), -k replaces one and removes k more after it. */
typedef struct tok_change {
    int32_t c;
    int change;
} tok_change;

/* tokenizers' NormalizedString::transform_range over the normalized bytes [a, b) (character
 * boundaries): the characters there are replaced by changes[0..count), `initial_offset` old
 * characters at the start being removed first. */
int tok_norm_transform(const err_ctx *c, tok_norm *t, size_t a, size_t b, const tok_change *changes,
                       size_t count, size_t initial_offset);

/* A new normalized string of t's bytes [a, b) (character boundaries), alignments kept. */
int tok_norm_slice(const err_ctx *c, const tok_norm *t, size_t a, size_t b, tok_norm *out);

/* The original span of t's bytes [a, b): tokenizers' convert_offsets from the normalized to the
 * original range; an empty range [a, a) gives [origin + a, origin + a), as tokenizers does. */
void tok_norm_span(const tok_norm *t, size_t a, size_t b, size_t *start, size_t *end);

/* ------------------------------------------------------------ splits and their tokens ---- */

/* One token: its id and the bytes [start, end) of the split's normalized text it covers. */
typedef struct tok_tok {
    int32_t id;
    size_t start, end;
} tok_tok;

typedef struct tok_toks {
    tok_tok *v;
    size_t n, cap;
} tok_toks;

int tok_toks_push(const err_ctx *c, tok_toks *a, int32_t id, size_t start, size_t end);

/* tokenizers' PreTokenizedString: the text in pieces. A split whose `done` is set already has
 * its tokens (an added token, or the model's output) and is left alone by every later stage. */
typedef struct tok_split {
    tok_norm text;
    tok_toks toks;
    int done;
} tok_split;

typedef struct tok_splits {
    tok_split *v;
    size_t n, cap;
} tok_splits;

/* Takes t (moved in, zeroed in the caller) as a new split at the end. */
int tok_splits_push(const err_ctx *c, tok_splits *s, tok_norm *t);
void tok_splits_free(tok_splits *s);

/* tokenizers' SplitDelimiterBehavior. */
typedef enum tok_behavior {
    TOK_REMOVED,
    TOK_ISOLATED,
    TOK_MERGED_WITH_PREVIOUS,
    TOK_MERGED_WITH_NEXT,
    TOK_CONTIGUOUS,
} tok_behavior;

/* One match of a pattern: the bytes [start, end) of a text. */
typedef struct tok_span {
    size_t start, end;
} tok_span;

/* tokenizers' NormalizedString::split: t cut at the matches (sorted, not overlapping), by
 * behaviour, each piece appended to out (empty pieces dropped, as tokenizers drops them). With
 * `invert` the matches are the pieces kept apart instead (Split's `invert`). */
int tok_split_at(const err_ctx *c, const tok_norm *t, const tok_span *matches, size_t count,
                 tok_behavior behavior, int invert, tok_splits *out);

/* ------------------------------------------------------------------ regular expressions ---- */

/* A compiled pattern: PCRE2 with UTF and Unicode properties, as tokenizers' Oniguruma patterns
 * read. A compiled pattern is shared by threads; each match call has its own match data. */
typedef struct tok_regex tok_regex;

int tok_regex_compile(const err_ctx *c, const char *pattern, size_t n, tok_regex **out);
/* s[0..n) matched as it is written: a String pattern, which tokenizers escapes into a regex. */
int tok_regex_compile_literal(const err_ctx *c, const char *s, size_t n, tok_regex **out);
void tok_regex_free(tok_regex *r);
/* Every match in s[0..n), left to right, appended to *out (grown with realloc, *count and *cap
 * updated), as Oniguruma's find_iter gives them: empty matches too (they cut a text as the
 * others do), but for one right at the previous match's end. */
int tok_regex_all(const err_ctx *c, const tok_regex *r, const char *s, size_t n, tok_span **out,
                  size_t *count, size_t *cap);

/* ------------------------------------------------------------------------- components ---- */

typedef struct tok_normalizer tok_normalizer;
typedef struct tok_pretokenizer tok_pretokenizer;
typedef struct tok_model tok_model;
typedef struct tok_post tok_post;
typedef struct tok_decoder tok_decoder;

/* Each loader reads one tokenizer.json section (cJSON null is not passed: the pipeline treats
 * it as "none"), and each free takes NULL. */
int tok_normalizer_load(const err_ctx *c, const cJSON *j, tok_normalizer **out);
void tok_normalizer_free(tok_normalizer *n);
/* Normalizes t in place. */
int tok_normalizer_run(const err_ctx *c, const tok_normalizer *n, tok_norm *t);
/* A name and a one-line description, for `vkbert info` ("Sequence[Precompiled, Replace]"). */
void tok_normalizer_describe(const tok_normalizer *n, char *out, size_t size);

int tok_pretokenizer_load(const err_ctx *c, const cJSON *j, tok_pretokenizer **out);
void tok_pretokenizer_free(tok_pretokenizer *p);
/* Splits every split that is not done, in place. */
int tok_pretokenizer_run(const err_ctx *c, const tok_pretokenizer *p, tok_splits *s);
void tok_pretokenizer_describe(const tok_pretokenizer *p, char *out, size_t size);

int tok_model_load(const err_ctx *c, const cJSON *j, tok_model **out);
void tok_model_free(tok_model *m);
/* The tokens of s[0..n) (one split's normalized text), appended to out. */
int tok_model_run(const err_ctx *c, const tok_model *m, const char *s, size_t n, tok_toks *out);
/* The vocabulary: id of a token (-1 when absent), token of an id (NULL when none; *len its
 * length), one past the largest id. */
int32_t tok_model_id(const tok_model *m, const char *s, size_t n);
const char *tok_model_token(const tok_model *m, int32_t id, size_t *len);
int32_t tok_model_size(const tok_model *m);
void tok_model_describe(const tok_model *m, char *out, size_t size);

/* One sequence's tokens as an encoding; offsets are bytes of that sequence's original text. */
typedef struct tok_enc {
    int32_t *ids, *type_ids, *special; /* special: 1 for the tokens the post-processor adds */
    size_t *starts, *ends;
    int32_t *seq; /* which text each token came from: 0, 1, or -1 for a special token */
    size_t n, cap;
    /* Optional, not owned by the encoding (tok_enc_push and tok_enc_free leave them alone):
     * each token's text where tokenizers' Token.value is not the vocabulary's string (an added
     * token's: the text it matched, spaces lstrip and rstrip took included), NULL elsewhere;
     * offset trimming reads it. */
    const char *const *values;
    const size_t *value_lens;
} tok_enc;

int tok_enc_push(const err_ctx *c, tok_enc *e, int32_t id, int32_t type_id, int special,
                 size_t start, size_t end, int32_t seq);
void tok_enc_free(tok_enc *e);

/* How a post-processor or decoder sees the tokens' strings: the added vocabulary's and the
 * model's, by id (NULL when none). */
typedef struct tok_vocab_view {
    const char *(*token)(const void *ctx, int32_t id, size_t *len);
    const void *ctx;
} tok_vocab_view;

int tok_post_load(const err_ctx *c, const cJSON *j, tok_post **out);
void tok_post_free(tok_post *p);
/* How many tokens the processor adds to one text (pair 0) or a pair (pair 1): the room
 * truncation leaves (tokenizers' added_tokens). */
size_t tok_post_added(const tok_post *p, int pair);
/* tokenizers' PostProcessor::process: a (seq 0) and b (seq 1, NULL for one text), already
 * truncated, into out (empty on entry); with add_special 0 only what every processor does
 * without special tokens (ByteLevel's and RobertaProcessing's trim_offsets). `texts` are the
 * original texts, for offset trimming. */
int tok_post_run(const err_ctx *c, const tok_post *p, const tok_vocab_view *v, const tok_enc *a,
                 const tok_enc *b, const char *const texts[2], int add_special, tok_enc *out);
void tok_post_describe(const tok_post *p, char *out, size_t size);

/* A list of strings, the decoders' tokens. */
typedef struct tok_strs {
    char **v;
    size_t *lens;
    size_t n, cap;
} tok_strs;

int tok_strs_push(const err_ctx *c, tok_strs *a, const char *s, size_t n);
void tok_strs_free(tok_strs *a);

int tok_decoder_load(const err_ctx *c, const cJSON *j, tok_decoder **out);
void tok_decoder_free(tok_decoder *d);
/* tokenizers' Decoder::decode_chain, in place; the pipeline joins the result. */
int tok_decoder_run(const err_ctx *c, const tok_decoder *d, tok_strs *tokens);
void tok_decoder_describe(const tok_decoder *d, char *out, size_t size);

#endif
