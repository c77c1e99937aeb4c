#!/usr/bin/env python3
"""Writes src/io/tokenizer_tables.h: the character classes of HuggingFace tokenizers' BERT
normalizer and pre-tokenizer, read off the installed `tokenizers` by asking it about every code
point.

tokenizers takes its Cc/Cf/Co, P* and Mn classes from the unicode_categories crate, whose
tables are Unicode 8.0's, the combining classes of its NFD from unicode-normalization-alignments
(as old), and its lowercase from Rust's char::to_lowercase, whose tables are those of the Rust
that built it (Unicode 16.0 for 0.23). A C library's own tables (utf8proc's) are of another
version, and differ on every character assigned or recategorized since: these tables are what
the tokenizer reads instead.

    .venv/bin/python tools/tokenizer_tables.py > src/io/tokenizer_tables.h
"""

import sys
import unicodedata

import tokenizers
from tokenizers.normalizers import NFD, BertNormalizer
from tokenizers.pre_tokenizers import BertPreTokenizer

CLEAN = BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                       lowercase=False)
STRIP = BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True,
                       lowercase=False)
LOWER = BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=False,
                       lowercase=True)
PRE = BertPreTokenizer()
DECOMPOSE = NFD()


def code_points():
    return (c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


def is_other(c):
    """bert.rs's is_control without its exceptions: the cleaner drops the character (U+FFFD
    is dropped by name, not by class); tab, newline and return are Cc, kept as whitespace."""
    if c in (0x9, 0xA, 0xD):
        return True
    return c != 0xFFFD and CLEAN.normalize_str(f"a{chr(c)}b") == "ab"


def is_punct(c):
    """is_bert_punc: the pre-tokenizer makes the character a word of its own."""
    return len(PRE.pre_tokenize_str(f"a{chr(c)}b")) == 3 and not chr(c).isspace()


def is_mark(c):
    """is_mark_nonspacing, asked of characters that NFD leaves alone (the filter sees NFD's
    output): strip_accents drops it after a letter."""
    ch = chr(c)
    return unicodedata.normalize("NFD", ch) == ch and STRIP.normalize_str("a" + ch) == "a"


def combining_class(c):
    """The class tokenizers' NFD orders the mark by: Python's for a mark it moves before
    U+0345 (class 240; U+0301, class 230, for a mark of class 240 itself), 0 for one it leaves
    in place: one that its tables predate."""
    ch, k = chr(c), unicodedata.combining(chr(c))
    if k == 0:
        return 0
    nfd = DECOMPOSE.normalize_str
    if k < 240:
        moved = nfd("a\u0345" + ch) == "a" + nfd(ch) + "\u0345"
    else:
        moved = nfd("a" + ch + "\u0301") == "a\u0301" + nfd(ch)
    return k if moved else 0


def ranges(points):
    out = []
    for c in points:
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def class_runs(classes):
    """(first, last, class) for runs of code points of one class."""
    runs = []
    for c, k in classes:
        if runs and runs[-1][1] == c - 1 and runs[-1][2] == k:
            runs[-1][1] = c
        else:
            runs.append([c, c, k])
    return runs


def case_runs(pairs):
    """(first, last, delta, step): every step-th code point from first to last maps to itself
    plus delta (step 2 for the alternating upper/lower pairs of the Latin blocks)."""
    runs = []
    for c, d in pairs:
        r = runs[-1] if runs else None
        if r and r[2] == d and (r[3] == c - r[1] or (r[0] == r[1] and c - r[1] in (1, 2))):
            r[3] = c - r[1]
            r[1] = c
        else:
            runs.append([c, c, d, 1])
    return runs


def table(name, kind, rows, fmt):
    lines = [f"static const {kind} {name}[] = {{"]
    cells = [fmt(r) for r in rows]
    line = "   "
    for cell in cells:
        if len(line) + len(cell) + 2 > 100:
            lines.append(line)
            line = "   "
        line += " " + cell + ","
    lines.append(line)
    lines.append("};")
    return "\n".join(lines)


def main():
    other, punct, mark, lower, classes = [], [], [], [], []
    for c in code_points():
        if is_other(c):
            other.append(c)
        if is_punct(c):
            punct.append(c)
        if is_mark(c):
            mark.append(c)
        k = combining_class(c)
        if k:
            classes.append((c, k))
        low = LOWER.normalize_str(chr(c))
        if len(low) == 1 and low != chr(c):
            lower.append((c, ord(low) - c))
        elif len(low) != 1 and c != 0x130:
            sys.exit(f"U+{c:04X} lowercases to {len(low)} characters; only U+0130 is expected")
    rng = lambda r: f"{{0x{r[0]:04X}, 0x{r[1]:04X}}}"  # noqa: E731
    cls = lambda r: f"{{0x{r[0]:04X}, 0x{r[1]:04X}, {r[2]}}}"  # noqa: E731
    case = lambda r: f"{{0x{r[0]:04X}, 0x{r[1]:04X}, {r[2]}, {r[3]}}}"  # noqa: E731
    print(f"""/* Generated by tools/tokenizer_tables.py from tokenizers {tokenizers.__version__}: \
do not edit.
 * Sorted ranges of code points: the Cc, Cf and Co (tok_other), P* and ASCII punctuation
 * (tok_punct) and Mn (tok_mark) classes of HuggingFace's BERT normalizer and pre-tokenizer
 * (Unicode 8.0), the canonical combining classes its NFD orders marks by (tok_ccc), and its
 * lowercase mappings (tok_lower_runs; U+0130 to two code points apart). */
#ifndef VKBERT_IO_TOKENIZER_TABLES_H
#define VKBERT_IO_TOKENIZER_TABLES_H

/* clang-format would set the tables in columns, twice the lines */
/* clang-format off */
{table("tok_other", "tok_range", ranges(other), rng)}

{table("tok_punct", "tok_range", ranges(punct), rng)}

{table("tok_mark", "tok_range", ranges(mark), rng)}

{table("tok_ccc", "tok_class", class_runs(classes), cls)}

{table("tok_lower_runs", "tok_case", case_runs(lower), case)}
/* clang-format on */

#endif""")


if __name__ == "__main__":
    main()
