/* Splitting a normalized string at a pattern's matches, by behaviour, as tokenizers'
 * NormalizedString::split does (tokenizers/src/tokenizer/normalizer.rs, with the matches laid
 * out as tokenizers/src/tokenizer/pattern.rs's find_matches lays them: the whole text covered,
 * matches and the gaps between them in order; pattern.rs's Invert for Split's `invert`,
 * tokenizers/src/pre_tokenizers/split.rs). Empty pieces are dropped, as PreTokenizedString::split
 * (tokenizers/src/tokenizer/pre_tokenizer.rs) drops them. */
#include "tok_pipeline.h"

#include <stdlib.h>

/* One stretch of the text: a match or the gap before one. */
typedef struct segment {
    size_t start, end;
    int match; /* as a match: the delimiter; once the behaviour is applied, "to be removed" */
} segment;

/* The text covered by its matches and the gaps between them; an empty text is one empty gap. */
static size_t lay_out(const tok_norm *t, const tok_span *matches, size_t count, int invert,
                      segment *out)
{
    size_t n = 0, prev = 0;
    if (t->n == 0) {
        out[n++] = (segment){0, 0, invert};
        return n;
    }
    for (size_t i = 0; i < count; i++) {
        if (prev != matches[i].start) out[n++] = (segment){prev, matches[i].start, invert};
        out[n++] = (segment){matches[i].start, matches[i].end, !invert};
        prev = matches[i].end;
    }
    if (prev != t->n) out[n++] = (segment){prev, t->n, invert};
    return n;
}

/* Contiguous, MergedWithPrevious: a segment joins the one kept before it when it repeats the
 * previous segment's kind (Contiguous) or is a match after a gap (MergedWithPrevious). */
static size_t merge_forward(segment *s, size_t n, tok_behavior behavior)
{
    size_t kept = 0;
    int previous_match = 0;
    for (size_t i = 0; i < n; i++) {
        int joins = behavior == TOK_CONTIGUOUS ? s[i].match == previous_match
                                               : s[i].match && !previous_match;
        previous_match = s[i].match;
        if (joins && kept > 0) {
            s[kept - 1].end = s[i].end;
        } else {
            s[kept++] = (segment){s[i].start, s[i].end, 0};
        }
    }
    return kept;
}

/* MergedWithNext: the same from the end, a match after a gap joining the gap kept after it. */
static size_t merge_backward(segment *s, size_t n)
{
    size_t kept = 0; /* kept segments gather at the end of s, in order */
    int previous_match = 0;
    for (size_t i = n; i-- > 0;) {
        int joins = s[i].match && !previous_match;
        previous_match = s[i].match;
        if (joins && kept > 0) {
            s[n - kept].start = s[i].start;
        } else {
            kept++;
            s[n - kept] = (segment){s[i].start, s[i].end, 0};
        }
    }
    for (size_t i = 0; i < kept; i++)
        s[i] = s[n - kept + i];
    return kept;
}

static size_t apply_behavior(segment *s, size_t n, tok_behavior behavior)
{
    switch (behavior) {
    case TOK_REMOVED:
        return n;
    case TOK_ISOLATED:
        for (size_t i = 0; i < n; i++)
            s[i].match = 0;
        return n;
    case TOK_MERGED_WITH_NEXT:
        return merge_backward(s, n);
    case TOK_CONTIGUOUS:
    case TOK_MERGED_WITH_PREVIOUS:
        return merge_forward(s, n, behavior);
    }
    return n;
}

static int push_piece(const err_ctx *c, const tok_norm *t, size_t a, size_t b, tok_splits *out)
{
    tok_norm piece;
    if (tok_norm_slice(c, t, a, b, &piece) != 0) return -1;
    if (tok_splits_push(c, out, &piece) != 0) {
        tok_norm_free(&piece);
        return -1;
    }
    return 0;
}

int tok_split_at(const err_ctx *c, const tok_norm *t, const tok_span *matches, size_t count,
                 tok_behavior behavior, int invert, tok_splits *out)
{
    if (count > (SIZE_MAX / sizeof(segment) - 1) / 2)
        return io_fail_oom(c, "split: too many matches (%zu)", count);
    segment *s = malloc((2 * count + 1) * sizeof *s);
    if (!s) return io_fail_oom(c, "split: out of memory for %zu matches", count);
    size_t n = apply_behavior(s, lay_out(t, matches, count, invert, s), behavior);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (!s[i].match && s[i].end > s[i].start) rc = push_piece(c, t, s[i].start, s[i].end, out);
    free(s);
    return rc;
}
