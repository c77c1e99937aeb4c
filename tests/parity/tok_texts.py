"""The text set every tokenizer parity test uses: generated from a fixed seed, so that a failure
is reproducible: words, accented and ligature forms, many scripts, combining marks, emoji and ZWJ
sequences, punctuation, control, zero-width and space characters, unassigned and private-use code
points, typed special tokens, very long words, empty and whitespace-only texts, texts of 10,000
characters. None holds NUL: argv cannot carry it, nor can the C API's NUL-terminated strings."""

import random

BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SENTENCEPIECE_SPECIALS = ["<s>", "</s>", "<pad>", "<unk>", "<mask>"]


WORDS = """the of and to in is was for on that with as by at from his her it an were are which
this be or has had not but first one their its new after who they have two been other all she
when time can would will there more between during into most only over city some world about
year later school where also these may national team then under state known three united used
game many both season played team music album film song series group war life history people
quick brown fox jumps lazy dog capital france paris largest running played happier unbelievable
tokenization transformer embedding sentence""".split()
ACCENTED = ["café", "naïve", "résumé", "Ångström", "Straße", "Œuvre", "façade", "jalapeño",
            "Zürich", "São", "Ελληνικά", "русский", "Dvořák", "Łódź", "İstanbul", "ǅemal",
            "ﬁnance", "Ⅻ", "Ⓐbc", "K\u212a", "\u1e9e"]


def _block(lo, hi):
    return [chr(c) for c in range(lo, hi + 1) if not 0xD800 <= c <= 0xDFFF]


# Each block whole, unassigned holes and all: categories matter more than glyphs.
SCRIPTS = {
    "latin": _block(0xC0, 0x24F) + _block(0x1E00, 0x1EFF),
    "greek": _block(0x370, 0x3FF), "cyrillic": _block(0x400, 0x4FF),
    "cjk": _block(0x4E00, 0x4EFF) + _block(0x9F00, 0x9FFF) + _block(0x3400, 0x34FF)
    + _block(0x20000, 0x200FF) + _block(0x2B800, 0x2B93F) + _block(0xF900, 0xF9FF)
    + _block(0x2F800, 0x2F8FF) + _block(0x30000, 0x300FF),
    "kana": _block(0x3040, 0x30FF), "hangul": _block(0xAC00, 0xACFF) + _block(0x1100, 0x11FF),
    "arabic": _block(0x600, 0x6FF) + _block(0x870, 0x8FF), "hebrew": _block(0x590, 0x5FF),
    "indic": _block(0x900, 0xA7F) + _block(0xC00, 0xC7F), "thai": _block(0xE00, 0xEFF),
    "newer": _block(0x11000, 0x111FF) + _block(0x11400, 0x1147F) + _block(0x13430, 0x1345F)
    + _block(0x1E900, 0x1E95F) + _block(0x1CF00, 0x1CFCF) + _block(0x10D40, 0x10D8F)
    + _block(0x16EA0, 0x16EDF),
    "cased": _block(0x1C80, 0x1C8F) + _block(0xA7C0, 0xA7DF) + _block(0x10400, 0x1044F)
    + list("İıΣσςǅǄǆΩKÅẞ"),
}
MARKS = (_block(0x300, 0x36F) + _block(0x1AB0, 0x1AFF) + _block(0x1DC0, 0x1DFF)
         + _block(0x20D0, 0x20F0) + _block(0xFE20, 0xFE2F) + ["\u093f", "\u0e31", "\u302a"])
PUNCT = (list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + _block(0x2010, 0x205E)
         + _block(0x2E00, 0x2E5F) + _block(0x3000, 0x303F) + _block(0xFF01, 0xFF0F)
         + list("¡¿«»§¶·¢£€¥©®™°±×÷‽")
         + ["\u166d", "\u111c9", "\u1734", "\u060c", "\u061d", "\u066a", "\u05be", "\u0964"])
SPACES = list(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") \
    + _block(0x2000, 0x200A)
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e", "\u034f",
             "\u061c", "\u0600", "\u06dd", "\u0890", "\u08e2", "\u110cd", "\ufffd", "\ufe0f",
             "\U000e0001", "\U000e0067", "\U000e0100"]
CONTROLS = [chr(c) for c in list(range(1, 32)) + list(range(0x7F, 0xA0))]
ODD = ["\u0378", "\u0380", "\ufdd0", "\ufffe", "\uffff", "\ue000", "\uf8ff", "\U000f0000",
       "\U0010fffd", "\U0001fae9", "\U0001fa8f", "\U0004a000", "\U000dffff", "\u0560"]
EMOJI = (_block(0x1F600, 0x1F64F) + _block(0x1F90C, 0x1F9FF) + _block(0x1FA70, 0x1FAFF)
         + ["👨‍👩‍👧", "👍🏽", "🧑🏿‍💻", "🏳️‍🌈", "🇫🇷", "🇯🇵", "❤️", "1️⃣", "#️⃣", "🏴󠁧󠁢󠁳󠁣󠁴󠁿",
            "👩🏻‍❤️‍💋‍👨🏼", "🫱🏻‍🫲🏿"])


def word(rng, words):
    w = rng.choice(words)
    r = rng.random()
    return w.upper() if r < 0.1 else w.capitalize() if r < 0.25 else w


def _run_of(rng, pool, most):
    return "".join(rng.choice(pool) for _ in range(rng.randint(1, most)))


def _marked(rng, words):
    """A word with combining marks after some of its letters (NFD's reordering included)."""
    return "".join(c + (_run_of(rng, MARKS, 3) if rng.random() < 0.4 else "")
                   for c in word(rng, words))


def _long_word(rng, words):
    base = rng.choice([rng.choice(words), "é", "İ", "ß", "x", rng.choice(SCRIPTS["greek"])])
    n = rng.choice([20, 25, 50, 99, 100, 101, 150, 300]) // max(1, len(base))
    return base * max(1, n) + rng.choice(["", "é", "\u0301", "s"])


def _random_code_point(rng):
    while True:
        c = rng.randrange(1, 0x110000)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def _piece(rng, words, specials):
    """One piece of a text, from one of the generators, by weight."""
    kind = rng.choices(range(14), weights=[30, 6, 4, 10, 4, 6, 5, 4, 3, 3, 3, 3, 2, 3])[0]
    if kind == 0:
        return word(rng, words)
    if kind == 1:
        return rng.choice(ACCENTED)
    if kind == 2:
        return _marked(rng, words)
    if kind == 3:
        return _run_of(rng, SCRIPTS[rng.choice(sorted(SCRIPTS))], 8)
    if kind == 4:
        return _run_of(rng, EMOJI, 3)
    if kind == 5:
        return _run_of(rng, PUNCT, 3)
    if kind == 6:
        return rng.choice(specials + ["[cls]", "[Mask]", "[ MASK ]", "[SEP", "SEP]", "<s", "</s >"])
    if kind == 7:
        return _run_of(rng, SPACES, 3)
    if kind == 8:
        return rng.choice(INVISIBLE)
    if kind == 9:
        return rng.choice(CONTROLS)
    if kind == 10:
        return rng.choice(ODD)
    if kind == 11:
        return _random_code_point(rng)
    if kind == 12:
        return _long_word(rng, words)
    return str(rng.randrange(10 ** rng.randint(1, 12)))


def text(rng, words, most, specials=BERT_SPECIALS):
    """One generated text of up to `most` pieces."""
    glue = [" "] * 12 + ["", "", "  ", "\t", "\n", "\xa0", "\u3000"]
    out = []
    for _ in range(rng.randint(1, most)):
        out.append(_piece(rng, words, specials))
        out.append(rng.choice(glue))
    return "".join(out[:-1] if rng.random() < 0.8 else out)


FIXED = ["", " ", "   ", "\t\n\r", "\xa0\u2003\u3000", "\u200b", "\u200b\u200d\ufeff", "\x7f",
         "a", "?", "[CLS]", "[SEP][SEP]", "[MASK]x[MASK]", "x[UNK]y", " [PAD] ", "[cls]",
         "[MASK" + "]" * 3, "x" * 99, "x" * 100, "x" * 101, "é" * 100, "e\u0301" * 60,
         "İ" * 60, "İ" * 100, "ß" * 101, "\u0378" * 3, "a\u0378b", "\U0001fae9", "🫩👍🏽",
         "Hello, World!", "don't stop-believing...", "3.14159 1,000,000", "北京是首都。",
         "日本語のテキスト", "한국어 텍스트", "ﬁ ﬂ Ⅻ ǅ", "\u0130stanbul \u0049\u0307",
         "word " * 600, "東京 " * 300, "a" * 5000]


def make_texts(seed, words=WORDS, count=3000, most=12, long_most=300, specials=BERT_SPECIALS):
    """FIXED, then `count` generated texts of up to `most` pieces; every tenth has up to
    `long_most` (by default over a 512 limit), and two of 10,000 characters or more. `specials`
    are typed into some texts whole."""
    rng = random.Random(seed)
    texts = list(FIXED)
    for i in range(count):
        texts.append(text(rng, words, long_most if i % 10 == 9 else most, specials))
    for _ in range(2):
        long = ""
        while len(long) < 10000:
            long += text(rng, words, most, specials) + " "
        texts.append(long)
    return texts
