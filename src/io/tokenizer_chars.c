/* The character classes of the tokenizer's text path, as HuggingFace tokenizers has them
 * (normalizers/bert.rs, pre_tokenizers/bert.rs). Its control, punctuation and nonspacing-mark
 * classes and the combining classes of its NFD are Unicode 8.0's, its lowercase that of the
 * Rust that built it, so they come from tables read off tokenizers itself (tokenizer_tables.h),
 * not from utf8proc's Unicode: a character assigned since (a new emoji, a new mark) must be
 * classed as tokenizers classes it. utf8proc gives the decompositions, which do not change. */
#include "tokenizer_internal.h"

#include <utf8proc.h>

typedef struct tok_range {
    int32_t lo, hi;
} tok_range;

typedef struct tok_class {
    int32_t lo, hi, ccc;
} tok_class;

/* Every step-th code point of lo..hi lowercases to itself plus delta. */
typedef struct tok_case {
    int32_t lo, hi, delta, step;
} tok_case;

#include "tokenizer_tables.h"

#define COUNT(a) (sizeof(a) / sizeof *(a))

/* The index of the last entry of a table of `size`-byte entries, sorted by their first member
 * (an int32_t, the first code point of each), that starts at or before c; n when none does. */
static size_t last_at_or_before(const void *table, size_t n, size_t size, int32_t c)
{
    const char *base = table;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (*(const int32_t *)(base + mid * size) <= c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo - 1 : n;
}

static int in_ranges(const tok_range *r, size_t n, int32_t c)
{
    size_t i = last_at_or_before(r, n, sizeof *r, c);
    return i < n && c <= r[i].hi;
}

/* bert.rs's is_chinese_char; its fifth range starts at U+2B920, where Python's starts at
 * U+2B820. Hangul, kana and the other CJK blocks stay in words. */
int tok_is_cjk(int32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Rust's char::is_whitespace and the regex crate's \s: the White_Space property. */
int tok_is_ws(int32_t c)
{
    if ((c >= 0x9 && c <= 0xD) || c == ' ' || c == 0x85 || c == 0xA0 || c == 0x1680) return 1;
    return (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* bert.rs's is_control: Cc, Cf and Co but tab, newline and return. Not Cn: an unassigned
 * code point stays in the text. */
int tok_is_control(int32_t c)
{
    return c != '\t' && c != '\n' && c != '\r' && in_ranges(tok_other, COUNT(tok_other), c);
}

/* is_bert_punc: ASCII punctuation ($, +, ^ too, though Unicode files them under S*) or P*. */
int tok_is_punct(int32_t c)
{
    return in_ranges(tok_punct, COUNT(tok_punct), c);
}

/* What strip_accents drops from NFD's output: Mn. */
int tok_is_mark(int32_t c)
{
    return c >= 0x300 && in_ranges(tok_mark, COUNT(tok_mark), c); /* no mark before U+0300 */
}

/* Rust's char::to_lowercase where it gives one code point (all but U+0130). */
int32_t tok_lower(int32_t c)
{
    if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c; /* most text: no search */
    size_t n = COUNT(tok_lower_runs), i = last_at_or_before(tok_lower_runs, n, sizeof(tok_case), c);
    const tok_case *r = &tok_lower_runs[i];
    return i < n && c <= r->hi && (c - r->lo) % r->step == 0 ? c + r->delta : c;
}

int32_t tok_combining_class(int32_t c)
{
    if (c < 0x300) return 0;
    size_t n = COUNT(tok_ccc), i = last_at_or_before(tok_ccc, n, sizeof(tok_class), c);
    return i < n && c <= tok_ccc[i].hi ? tok_ccc[i].ccc : 0;
}

/* The regex crate's \w, which single_word tokens test: Alphabetic, marks, Nd, Pc and
 * Join_Control. Alphabetic beyond L* and Nl is Other_Alphabetic: marks, and the circled and
 * squared Latin letters below. */
int tok_is_word_char(int32_t c)
{
    if (c == 0x200C || c == 0x200D || (c >= 0x24B6 && c <= 0x24E9) ||
        (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
        (c >= 0x1F170 && c <= 0x1F189))
        return 1;
    utf8proc_category_t k = utf8proc_category(c);
    return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_ND) || k == UTF8PROC_CATEGORY_NL ||
           k == UTF8PROC_CATEGORY_PC;
}
