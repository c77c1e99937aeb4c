"""vkbert's tokenizer models (src/io/tok_model.c: WordPiece, BPE, Unigram) against tokenizers'
own `model.tokenize(word)`, word by word: the same ids and byte offsets, or an error where
tokenizers raises one.

The models are made here, by the libraries: Unigram from a SentencePiece model trained on the
shared text set and converted by transformers (XLMRobertaTokenizer), with byte_fallback, without
unk_id, and trained by tokenizers' UnigramTrainer; byte-level BPE (ByteLevelBPETokenizer), BPE
with byte_fallback / fuse_unk / no unk_token, with continuing_subword_prefix, with
end_of_word_suffix (CharBPETokenizer), with ignore_merges, with merges as "a b" strings and
without "type"; WordPiece trained by WordPieceTrainer, and with a short
max_input_chars_per_word. The words are the shared texts (tests/parity/tok_texts.py) cut by the
pre-tokenizer each model is used with, and whole texts too (up to 10,000 characters).
The model JSON and the words go to tests/io/tok_model_driver (the build's program:
VKBERT_TOK_MODEL_DRIVER, else beside VKBERT_CLI in tests/).

    VKBERT_CLI=build/vkbert python -m pytest tests/parity/test_tok_models.py
"""

import json
import os
import subprocess
import warnings

import pytest


def _skip_module(reason):
    warnings.warn(f"tests/parity/test_tok_models.py skipped: {reason}", stacklevel=2)
    pytest.skip(reason, allow_module_level=True)


def _driver():
    path = os.environ.get("VKBERT_TOK_MODEL_DRIVER")
    cli = os.environ.get("VKBERT_CLI")
    if not path and cli:
        path = os.path.join(os.path.dirname(cli), "tests", "tok_model_driver")
    return path if path and os.access(path, os.X_OK) else None


DRIVER = _driver()
if not DRIVER:
    _skip_module("no tok_model_driver (set VKBERT_TOK_MODEL_DRIVER, or VKBERT_CLI to a build's "
                 "vkbert with tests/tok_model_driver beside it)")
try:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from tokenizers import ByteLevelBPETokenizer, CharBPETokenizer
except ImportError:
    _skip_module("the Python package tokenizers is not installed (tests/requirements.txt)")

from tok_texts import SENTENCEPIECE_SPECIALS, make_texts  # noqa: E402

MIN_WORDS = 3000
CORPUS = [t for t in make_texts(101, count=1500, specials=SENTENCEPIECE_SPECIALS) if t.strip()]
TEXTS = make_texts(202, count=2000, specials=SENTENCEPIECE_SPECIALS)


def _words(split):
    """Every text's pieces by `split` (text -> list of strings), then the texts whole; each word
    once, in order, empty ones left out."""
    seen, out = set(), []
    for t in TEXTS:
        for w in split(t) + [t]:
            if w and w not in seen:
                seen.add(w)
                out.append(w)
    return out


def _pieces(normalizer, pre_tokenizer):
    def split(t):
        n = normalizer.normalize_str(t) if normalizer else t
        return [p for p, _ in pre_tokenizer.pre_tokenize_str(n)]
    return split


def _model_json(tokenizer):
    return json.loads(tokenizer.to_str())["model"]


def _expected(model, word):
    try:
        return [[t.id, t.offsets[0], t.offsets[1]] for t in model.tokenize(word)]
    except Exception as e:  # tokenizers raises its errors as Exception
        return {"error": str(e)}


def _check(tmp_path, model_json, words, name):
    """The driver on every word against tokenizers' model loaded from the same JSON."""
    assert len(words) >= MIN_WORDS, f"{name}: only {len(words)} words"
    model = Tokenizer.from_str(json.dumps({"version": "1.0", "model": model_json})).model
    (tmp_path / "model.json").write_text(json.dumps(model_json), encoding="utf-8")
    (tmp_path / "words.json").write_text(json.dumps(words), encoding="utf-8")
    run = subprocess.run([DRIVER, str(tmp_path / "model.json"), str(tmp_path / "words.json")],
                         capture_output=True, text=True, encoding="utf-8")
    assert run.returncode == 0, f"{name}: {run.stderr}"
    got = json.loads(run.stdout)
    assert len(got) == len(words)
    bad = []
    errors = 0
    for w, g in zip(words, got):
        want = _expected(model, w)
        if isinstance(want, dict):
            errors += 1
            same = isinstance(g, dict)
        else:
            same = g == want
        if not same:
            bad.append((w[:80], want if isinstance(want, dict) else want[:8],
                        g if isinstance(g, dict) else g[:8]))
    assert not bad, f"{name}: {len(bad)} of {len(words)} words differ, first: {bad[:3]}"
    return errors


# ---- Unigram ----

@pytest.fixture(scope="module")
def spm_tokenizer(tmp_path_factory):
    """A SentencePiece Unigram model trained on the corpus, as transformers converts it."""
    spm = pytest.importorskip("sentencepiece", reason="sentencepiece is not installed")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    folder = tmp_path_factory.mktemp("spm")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(t.replace("\n", " ") for t in CORPUS), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(folder / "sentencepiece.bpe"), vocab_size=6000,
        model_type="unigram", character_coverage=0.98, hard_vocab_limit=False, minloglevel=2,
        max_sentence_length=100000)
    out = folder / "converted"
    transformers.XLMRobertaTokenizer.from_pretrained(str(folder)).save_pretrained(str(out))
    return Tokenizer.from_file(str(out / "tokenizer.json"))


def _spm_words(tok):
    return _words(_pieces(tok.normalizer, tok.pre_tokenizer))


def test_unigram_sentencepiece(tmp_path, spm_tokenizer):
    model = _model_json(spm_tokenizer)
    assert model["type"] == "Unigram"
    _check(tmp_path, model, _spm_words(spm_tokenizer), "SentencePiece Unigram")


def test_unigram_byte_fallback(tmp_path, spm_tokenizer):
    """Its pieces and most bytes' <0xNN> pieces (not 0x80..0x8F: the unk path stays)."""
    model = _model_json(spm_tokenizer)
    vocab = [tuple(p) for p in model["vocab"]]
    vocab += [(f"<0x{b:02X}>", -20.0) for b in range(256) if not 0x80 <= b <= 0x8F]
    tok = Tokenizer(models.Unigram(vocab, model["unk_id"], True))
    _check(tmp_path, _model_json(tok), _spm_words(spm_tokenizer), "Unigram byte_fallback")


def _unigram_trained():
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.train_from_iterator(CORPUS, trainers.UnigramTrainer(
        vocab_size=8000, special_tokens=["<unk>"], unk_token="<unk>", show_progress=False))
    return tok


def test_unigram_trainer(tmp_path):
    tok = _unigram_trained()
    _check(tmp_path, _model_json(tok), _words(_pieces(None, tok.pre_tokenizer)),
           "UnigramTrainer")


def test_unigram_without_unk_id(tmp_path):
    """An unknown character is an error in both."""
    tok = _unigram_trained()
    model = _model_json(tok)
    model["unk_id"] = None
    errors = _check(tmp_path, model, _words(_pieces(None, tok.pre_tokenizer)), "no unk_id")
    assert errors > 0


# ---- BPE ----

@pytest.fixture(scope="module")
def byte_level():
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(CORPUS, vocab_size=3000, show_progress=False)
    return tok


def _byte_level_words():
    return _words(_pieces(None, pre_tokenizers.ByteLevel(add_prefix_space=False)))


def test_bpe_byte_level(tmp_path, byte_level):
    _check(tmp_path, _model_json(byte_level), _byte_level_words(), "byte-level BPE")


def test_bpe_ignore_merges(tmp_path, byte_level):
    model = _model_json(byte_level)
    model["ignore_merges"] = True
    _check(tmp_path, model, _byte_level_words(), "BPE ignore_merges")


def test_bpe_legacy_merges_no_type(tmp_path, byte_level):
    """Merges as merges.txt's "a b" lines, and no "type": tokenizers guesses BPE."""
    model = _model_json(byte_level)
    model["merges"] = ["#version: 0.2"] + [f"{a} {b}" for a, b in model["merges"]]
    del model["type"]
    _check(tmp_path, model, _byte_level_words(), "BPE legacy merges")


def _bpe_trained(limit_alphabet, prefix=None):
    kw = {"continuing_subword_prefix": prefix} if prefix else {}
    tok = Tokenizer(models.BPE(unk_token="<unk>", **kw))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=3000, special_tokens=["<unk>"], limit_alphabet=limit_alphabet,
        show_progress=False, **kw))
    return tok


@pytest.mark.parametrize("byte_fallback,fuse_unk,unk", [
    (True, True, "<unk>"), (True, False, "<unk>"), (False, True, "<unk>"),
    (False, False, "<unk>"), (False, False, None)])
def test_bpe_unknowns(tmp_path, byte_fallback, fuse_unk, unk):
    """A small alphabet, so that many characters are unknown: their bytes' tokens (most bytes
    in the vocabulary, not 0x80..0x8F), unk_token fused or not, or dropped without one."""
    model = _model_json(_bpe_trained(150))
    model.update(byte_fallback=byte_fallback, fuse_unk=fuse_unk, unk_token=unk)
    top = max(model["vocab"].values())
    for b in range(256):
        if not 0x80 <= b <= 0x8F:
            top += 1
            model["vocab"][f"<0x{b:02X}>"] = top
    _check(tmp_path, model, _words(_pieces(None, pre_tokenizers.WhitespaceSplit())),
           f"BPE byte_fallback={byte_fallback} fuse_unk={fuse_unk} unk={unk}")


def test_bpe_continuing_subword_prefix(tmp_path):
    tok = _bpe_trained(400, prefix="##")
    model = _model_json(tok)
    assert model["continuing_subword_prefix"] == "##"
    _check(tmp_path, model, _words(_pieces(None, tok.pre_tokenizer)), "BPE ##")


def test_bpe_end_of_word_suffix(tmp_path):
    tok = CharBPETokenizer()
    tok.train_from_iterator(CORPUS, vocab_size=3000, show_progress=False)
    model = _model_json(tok)
    assert model["end_of_word_suffix"] == "</w>"
    _check(tmp_path, model, _words(_pieces(tok.normalizer, tok.pre_tokenizer)),
           "CharBPETokenizer")


# ---- WordPiece ----

def _wordpiece_trained():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(
        vocab_size=3000, special_tokens=["[UNK]"], show_progress=False))
    return tok


@pytest.mark.parametrize("max_chars", [None, 7])
def test_wordpiece(tmp_path, max_chars):
    tok = _wordpiece_trained()
    model = _model_json(tok)
    if max_chars:
        model["max_input_chars_per_word"] = max_chars
    _check(tmp_path, model, _words(_pieces(tok.normalizer, tok.pre_tokenizer)),
           f"WordPiece max_input_chars_per_word={model['max_input_chars_per_word']}")
