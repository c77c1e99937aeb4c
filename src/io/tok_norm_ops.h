/* The normalized string's operations that the normalizers share (tok_norm.c), each as
 * tokenizers' NormalizedString method of the same name does it (tokenizer/normalizer.rs), and
 * the UTF-8 steps they take. Not for use outside src/io. */
#ifndef VKBERT_IO_TOK_NORM_OPS_H
#define VKBERT_IO_TOK_NORM_OPS_H

#include "tok_pipeline.h"

/* The code point at s[0..n) (n > 0) and its length in *len; a byte that starts no valid
 * sequence is read as one character of that byte's value. */
int32_t tok_utf8_next(const char *s, size_t n, size_t *len);
/* Writes c as UTF-8 into out (4 bytes of room); returns the length. */
size_t tok_utf8_put(int32_t c, char *out);

/* A growable list of changes. */
typedef struct tok_changes {
    tok_change *v;
    size_t n, cap;
} tok_changes;

int tok_changes_push(const err_ctx *c, tok_changes *a, int32_t ch, int change);
void tok_changes_free(tok_changes *a);

/* NormalizedString::transform over the whole text. */
int tok_norm_transform_all(const err_ctx *c, tok_norm *t, const tok_changes *ch,
                           size_t initial_offset);
/* filter: keeps the characters for which keep(ch, ctx) is non-zero. */
int tok_norm_filter(const err_ctx *c, tok_norm *t, int (*keep)(int32_t ch, const void *ctx),
                    const void *ctx);
/* map: each character to map(ch, ctx). */
int tok_norm_map(const err_ctx *c, tok_norm *t, int32_t (*map)(int32_t ch, const void *ctx),
                 const void *ctx);
/* lstrip / rstrip / strip: White_Space at either end removed. */
int tok_norm_strip(const err_ctx *c, tok_norm *t, int left, int right);
/* prepend: s[0..n) before the first character (nothing when the text is empty). */
int tok_norm_prepend(const err_ctx *c, tok_norm *t, const char *s, size_t n);
/* replace: each of the matches (sorted, not overlapping) by content[0..n). */
int tok_norm_replace(const err_ctx *c, tok_norm *t, const tok_span *matches, size_t count,
                     const char *content, size_t n);

/* ---- tok_nf.c: the Unicode normalization forms ---- */

/* NFD (0, 0), NFKD (1, 0), NFC (0, 1) or NFKC (1, 1) of t, in place. */
int tok_nf_run(const err_ctx *c, tok_norm *t, int compat, int compose);
/* The combining marks StripAccents drops (Mn, Mc and Me of Unicode 9.0). */
int tok_nf_is_mark(int32_t c);

/* ---- tok_charsmap.c: SentencePiece's precompiled_charsmap ---- */

typedef struct tok_charsmap tok_charsmap;

/* Reads the base64 text b64[0..n); an empty text is a map that changes nothing. */
int tok_charsmap_load(const err_ctx *c, const char *b64, size_t n, tok_charsmap **out);
void tok_charsmap_free(tok_charsmap *m);
/* The Precompiled normalizer: t mapped grapheme by grapheme, in place. */
int tok_charsmap_run(const err_ctx *c, const tok_charsmap *m, tok_norm *t);

#endif
