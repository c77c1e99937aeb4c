#!/usr/bin/env python3
"""Writes src/io/tok_regex_tables.h: the Unicode classes of the regular expressions that
HuggingFace tokenizers' pre-tokenizers and normalizers match with, read off the installed
`tokenizers` by asking it about every code point, each written as PCRE2 class items.

tokenizers matches Split's and ByteLevel's patterns with Oniguruma and Whitespace's with the
regex crate, each with the Unicode tables of its own version; the system's PCRE2 has another
(10.42: Unicode 14.0), and its \\w, \\d, \\p{Han} mean other sets besides. Each class here is a
PCRE2 base (\\p{L}, \\p{sc:Han}, ...) that it contains, plus the code points the base lacks; a
class that the base cannot reach without removing code points is left out (tok_regex.c then
refuses it by name). The char::is_numeric of Rust that Digits splits on is a plain range table.

    .venv/bin/python tools/tok_regex_tables.py > src/io/tok_regex_tables.h
"""

import ctypes
import ctypes.util
import sys

import tokenizers
from c_tables import ranges
from tokenizers import Regex
from tokenizers.pre_tokenizers import Digits, Split, Whitespace

CODE_POINTS = [c for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF]
ALL = "".join(map(chr, CODE_POINTS))

CATEGORIES = ("L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So "
              "Z Zs Zl Zp Cc Cf Co").split()
SCRIPTS = ("Latin Greek Cyrillic Armenian Hebrew Arabic Syriac Thaana Devanagari Bengali "
           "Gurmukhi Gujarati Oriya Tamil Telugu Kannada Malayalam Sinhala Thai Lao Tibetan "
           "Myanmar Georgian Hangul Ethiopic Cherokee Khmer Mongolian Hiragana Katakana Bopomofo "
           "Han Yi Common Inherited").split()


class Pcre2:
    """The system's PCRE2, through ctypes: the code points a class matches."""

    def __init__(self):
        self.lib = ctypes.CDLL(ctypes.util.find_library("pcre2-8"))
        self.lib.pcre2_compile_8.restype = ctypes.c_void_p
        self.lib.pcre2_compile_8.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32,
                                             ctypes.POINTER(ctypes.c_int),
                                             ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p]
        self.lib.pcre2_match_data_create_from_pattern_8.restype = ctypes.c_void_p
        self.lib.pcre2_match_data_create_from_pattern_8.argtypes = [ctypes.c_void_p,
                                                                    ctypes.c_void_p]
        self.lib.pcre2_match_8.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                           ctypes.c_size_t, ctypes.c_uint32, ctypes.c_void_p,
                                           ctypes.c_void_p]
        self.lib.pcre2_get_ovector_pointer_8.restype = ctypes.POINTER(ctypes.c_size_t)
        self.lib.pcre2_get_ovector_pointer_8.argtypes = [ctypes.c_void_p]
        self.subject = ALL.encode("utf-8")

    def matched(self, items):
        pattern = f"[{items}]+".encode()
        err, at = ctypes.c_int(), ctypes.c_size_t()
        utf_ucp = 0x00080000 | 0x00020000
        code = self.lib.pcre2_compile_8(pattern, len(pattern), utf_ucp, ctypes.byref(err),
                                        ctypes.byref(at), None)
        if not code:
            raise ValueError(f"PCRE2 refuses {pattern!r}")
        data = self.lib.pcre2_match_data_create_from_pattern_8(code, None)
        found, start = set(), 0
        while self.lib.pcre2_match_8(code, self.subject, len(self.subject), start, 0x40000000,
                                     data, None) > 0:
            ov = self.lib.pcre2_get_ovector_pointer_8(data)
            found.update(map(ord, self.subject[ov[0]:ov[1]].decode("utf-8")))
            start = ov[1]
        return found


def onig_set(pattern):
    """The code points Oniguruma's pattern (one character's class) matches."""
    split = Split(Regex(f"(?:{pattern})+"), "removed", invert=True)
    found = set()
    for piece, _ in split.pre_tokenize_str(ALL):
        found.update(map(ord, piece))
    return found


def rust_sets():
    """The regex crate's \\w and \\s, as Whitespace (\\w+|[^\\w\\s]+) sees them: each code point
    between two letters, then a '!', tells which of the two it is in."""
    word, space = set(), set()
    candidates = [c for c in CODE_POINTS if chr(c) not in "a!"]
    for i in range(0, len(candidates), 20000):
        chunk = candidates[i:i + 20000]
        starts = {start: end for _, (start, end) in Whitespace().pre_tokenize_str(
            "".join("a" + chr(c) + "a!" for c in chunk))}
        for k, c in enumerate(chunk):
            if starts.get(4 * k) == 4 * k + 3:
                word.add(c)
            elif starts.get(4 * k) == 4 * k + 1 and (4 * k + 1) not in starts:
                space.add(c)
    return word | {ord("a")}, space


def numeric_set():
    """Digits isolates each numeric character; every other joins the letters around it."""
    text = "a" + "".join(chr(c) + "a" for c in CODE_POINTS if c != ord("a"))
    pieces = Digits(individual_digits=True).pre_tokenize_str(text)
    return {ord(p) for p, _ in pieces if len(p) == 1 and p != "a"}




def items(base, extra):
    parts = [base]
    for lo, hi in ranges(extra):
        parts.append(f"\\x{{{lo:X}}}" if lo == hi else f"\\x{{{lo:X}}}-\\x{{{hi:X}}}")
    return "".join(parts)


def c_string(s):
    return '"' + s.replace("\\", "\\\\") + '"'


def c_lines(s, indent):
    """s as adjacent C string literals, split between class items, one line each."""
    pieces, line = [], ""
    for item in s.replace("\\", "\0\\").split("\0"):
        if line and len(c_string(line + item)) + indent > 99:
            pieces.append(line)
            line = ""
        line += item
    pieces.append(line)
    return ("\n" + " " * indent).join(c_string(p) for p in pieces)


def class_entry(pcre, name, target, bases, negated):
    """The first base that the target contains: its entry, or None."""
    for base in bases:
        have = pcre.matched(base)
        if have <= target:
            extra = target - have
            neg = c_string(negated) if negated and not extra else "NULL"
            return (f"    {{{c_string(name)},\n     {c_lines(items(base, extra), 5)},\n"
                    f"     {neg}}},")
    return None


def main():
    pcre = Pcre2()
    entries, left_out = [], []
    wanted = [(c.lower(), f"\\p{{{c}}}", [f"\\p{{{c}}}"], f"\\P{{{c}}}") for c in CATEGORIES]
    wanted += [(s.lower(), f"\\p{{{s}}}", [f"\\p{{sc:{s}}}", "\\p{Cs}"], None) for s in SCRIPTS]
    wanted += [("\\w", "\\w", ["\\p{L}\\p{M}\\p{N}\\p{Pc}", "\\p{L}\\p{M}\\p{Nd}\\p{Pc}"], None),
               ("\\d", "\\d", ["\\p{Nd}"], None),
               ("\\s", "\\s", ["\\p{White_Space}"], "\\P{White_Space}")]
    for name, pattern, bases, negated in wanted:
        entry = class_entry(pcre, name, onig_set(pattern), bases, negated)
        (entries.append(entry) if entry else left_out.append(name))
    word, space = rust_sets()
    for name, target, bases, negated in [
            ("rust\\w", word, ["\\p{L}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}",
                               "\\p{L}\\p{M}\\p{Nd}\\p{Pc}"], None),
            ("rust\\s", space, ["\\p{White_Space}"], "\\P{White_Space}")]:
        entry = class_entry(pcre, name, target, bases, negated)
        (entries.append(entry) if entry else left_out.append(name))
    numeric = ranges(numeric_set())

    print(f"""/* Generated by tools/tok_regex_tables.py from tokenizers {tokenizers.__version__}: do not edit.
 * The Unicode classes of tokenizers' regular expressions (Oniguruma's: general categories,
 * scripts, \\w \\d \\s; the regex crate's \\w and \\s, named rust\\w and rust\\s), each as
 * PCRE2 class items: a base PCRE2 knows and the code points its Unicode lacks. `negated` is
 * the class's complement as one item, where it has one. Left out (no base reaches them):
 * {", ".join(left_out) or "none"}. tok_numeric: Rust's char::is_numeric, as Digits splits. */
#ifndef VKBERT_IO_TOK_REGEX_TABLES_H
#define VKBERT_IO_TOK_REGEX_TABLES_H

/* clang-format off */
static const tok_uclass tok_uclasses[] = {{""")
    print("\n".join(entries))
    print("};\n\nstatic const tok_urange tok_numeric[] = {")
    line = "   "
    for lo, hi in numeric:
        item = f" {{0x{lo:04X}, 0x{hi:04X}}},"
        if len(line) + len(item) > 99:
            print(line)
            line = "   "
        line += item
    print(line)
    print("};\n/* clang-format on */\n\n#endif")


if __name__ == "__main__":
    sys.exit(main())
