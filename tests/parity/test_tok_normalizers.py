"""vkbert's normalizers (src/io/tok_normalizers.c, through tests/io/tok_normalizer_driver.c)
against tokenizers' own, on the shared text set (tok_texts.py): the normalized string of each
text as `normalize_str` gives it, and for each of its characters the span of the original it
came from, as tokenizers reports it: a Tokenizer whose pre-tokenizer cuts every character apart
and whose model gives each one a token shows the alignments as the tokens' offsets.

The driver is named by VKBERT_TOK_NORMALIZER_DRIVER, which CTest's tok_normalizers sets; the
whole parity suite skips this file, saying why, so as not to run it twice."""

import base64
import io
import json
import os
import random
import subprocess

import pytest
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

from tok_texts import ACCENTED, SENTENCEPIECE_SPECIALS, WORDS, make_texts

SEED = 20261207


@pytest.fixture(scope="module")
def driver():
    path = os.environ.get("VKBERT_TOK_NORMALIZER_DRIVER")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("no tok_normalizer_driver: CTest's tok_normalizers runs this with "
                    "VKBERT_TOK_NORMALIZER_DRIVER set to the build's")
    return path


@pytest.fixture(scope="module")
def texts():
    return make_texts(SEED, count=3000) + make_texts(SEED + 1, count=500,
                                                     specials=SENTENCEPIECE_SPECIALS)


def section(normalizer):
    """The normalizer's tokenizer.json section, as tokenizers writes it."""
    tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.normalizer = normalizer
    return json.loads(tok.to_str())["normalizer"]


def expected(normalizer, texts):
    """tokenizers' normalized strings, and its alignments as character offsets."""
    tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), "isolated")
    strings = [normalizer.normalize_str(t) for t in texts]
    spans = [[list(o) for o in e.offsets] for e in tok.encode_batch(texts)]
    return strings, spans


def run_driver(driver, tmp_path, config, texts):
    (tmp_path / "normalizer.json").write_text(json.dumps(config), encoding="utf-8")
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    out = subprocess.run([driver, str(tmp_path / "normalizer.json"), str(tmp_path / "texts.json")],
                         capture_output=True, check=False, timeout=600)
    assert out.returncode == 0, out.stderr.decode("utf-8", "replace")
    return json.loads(out.stdout.decode("utf-8"))


def compare(driver, tmp_path, normalizer, texts):
    strings, spans = expected(normalizer, texts)
    got = run_driver(driver, tmp_path, section(normalizer), texts)
    assert len(got) == len(texts)
    bad_strings, bad_spans = [], []
    for text, want_s, want_spans, result in zip(texts, strings, spans, got):
        assert "error" not in result, (text, result["error"])
        if result["s"] != want_s:
            bad_strings.append((text, want_s, result["s"]))
        elif result["spans"] != want_spans:
            first = next(i for i, (a, b) in enumerate(zip(result["spans"] + [None], want_spans
                                                          + [None])) if a != b)
            bad_spans.append((text, want_s, first, want_spans[first:first + 3],
                              result["spans"][first:first + 3]))
    assert not bad_strings, (f"{len(bad_strings)} of {len(texts)} strings differ, e.g. "
                             f"{[tuple(map(ascii, b)) for b in bad_strings[:3]]}")
    assert not bad_spans, (f"{len(bad_spans)} of {len(texts)} alignments differ, e.g. "
                           f"{[ascii(b) for b in bad_spans[:3]]}")


CONFIGS = {
    "NFC": normalizers.NFC(),
    "NFD": normalizers.NFD(),
    "NFKC": normalizers.NFKC(),
    "NFKD": normalizers.NFKD(),
    "Nmt": normalizers.Nmt(),
    "Lowercase": normalizers.Lowercase(),
    "Strip": normalizers.Strip(),
    "StripLeft": normalizers.Strip(left=True, right=False),
    "StripRight": normalizers.Strip(left=False, right=True),
    "StripAccents": normalizers.StripAccents(),
    "ReplaceString": normalizers.Replace("e", "\u00e9\u00e8"),
    "ReplaceSpace": normalizers.Replace(" ", ""),
    "ReplaceSpaces": normalizers.Replace(Regex(" {2,}"), " "),
    "ReplaceRegex": normalizers.Replace(Regex(r"\s+"), "\u2581"),
    "ReplaceEmptyMatches": normalizers.Replace(Regex(r"x*"), "-"),
    "Prepend": normalizers.Prepend("\u2581"),
    "Bert": normalizers.BertNormalizer(),
    "BertCased": normalizers.BertNormalizer(lowercase=False),
    "BertStripOnly": normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False,
                                                strip_accents=True, lowercase=False),
    "BertLowerKeepAccents": normalizers.BertNormalizer(strip_accents=False, lowercase=True),
    "ByteLevel": normalizers.ByteLevel(),
    "Sequence": normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(),
                                      normalizers.Lowercase(), normalizers.Strip()]),
    "SequenceMetaspace": normalizers.Sequence([normalizers.Prepend("\u2581"),
                                               normalizers.Replace(" ", "\u2581")]),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_normalizer(driver, tmp_path, texts, name):
    compare(driver, tmp_path, CONFIGS[name], texts)


def xlmr_normalizer(tmp_path, rule):
    """The normalizer of an XLM-R tokenizer.json that transformers builds from a SentencePiece
    model trained here with the normalization rule `rule`: Precompiled from its charsmap (alone,
    as transformers 5 writes it, or before Replace(" {2,}", " ") as older ones did). The
    charsmap is the rule's whatever the corpus: plain words train it."""
    spm = pytest.importorskip("sentencepiece")
    transformers = pytest.importorskip("transformers")
    rng = random.Random(SEED)
    corpus = [" ".join(rng.choice(WORDS + ACCENTED) for _ in range(12)) for _ in range(2000)]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=model, vocab_size=300,
        model_type="unigram", normalization_rule_name=rule, hard_vocab_limit=False,
        minloglevel=2, character_coverage=1.0)
    folder = tmp_path / f"spm_{rule}"
    folder.mkdir()
    (folder / "sentencepiece.bpe.model").write_bytes(model.getvalue())
    out = tmp_path / f"xlmr_{rule}"
    transformers.XLMRobertaTokenizer.from_pretrained(str(folder)).save_pretrained(str(out))
    config = json.loads(Tokenizer.from_file(str(out / "tokenizer.json")).to_str())["normalizer"]
    parts = config.get("normalizers", [config])
    charsmap = [p["precompiled_charsmap"] for p in parts if p["type"] == "Precompiled"]
    assert charsmap, config
    return normalizers.Precompiled(base64.b64decode(charsmap[0]))


@pytest.mark.parametrize("rule", ["nmt_nfkc", "nfkc_cf"])
def test_precompiled(driver, tmp_path, texts, rule):
    precompiled = xlmr_normalizer(tmp_path, rule)
    compare(driver, tmp_path, precompiled, texts)
    xlmr = normalizers.Sequence([precompiled, normalizers.Replace(Regex(" {2,}"), " ")])
    compare(driver, tmp_path, xlmr, texts)


def every_code_point():
    """Every code point but NUL and the surrogates, each after a letter and before a mark, so
    that compositions, canonical orders and graphemes across it are all exercised."""
    points = [chr(c) for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    return ["".join("a" + c + "\u0301" for c in points[i:i + 500])
            for i in range(0, len(points), 500)]


@pytest.mark.parametrize("name", ["NFC", "NFD", "NFKC", "NFKD", "StripAccents", "nmt_nfkc"])
def test_every_code_point(driver, tmp_path, name):
    normalizer = CONFIGS.get(name) or xlmr_normalizer(tmp_path, name)
    compare(driver, tmp_path, normalizer, every_code_point())


def test_refusals(driver, tmp_path):
    """A type, a key or a charsmap it cannot read is an error naming it, never a crash."""
    cases = [({"type": "Frobnicate"}, "Frobnicate"),
             ({"type": "Strip", "strip_left": True, "strip_right": True, "extra": 1}, "extra"),
             ({"type": "Strip", "strip_left": True}, "strip_right"),
             ({"type": "Replace", "pattern": {"Glob": "*"}, "content": ""}, "pattern"),
             ({"type": "Precompiled", "precompiled_charsmap": "not base64!"}, "base64"),
             ({"type": "Precompiled", "precompiled_charsmap": "AAAA"}, "trie"),
             ({"type": "Precompiled", "precompiled_charsmap": "/////wAAAAA="}, "trie"),
             ({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Nope"}]}, "Nope")]
    for config, word in cases:
        (tmp_path / "n.json").write_text(json.dumps(config))
        (tmp_path / "t.json").write_text(json.dumps(["abc"]))
        out = subprocess.run([driver, str(tmp_path / "n.json"), str(tmp_path / "t.json")],
                             capture_output=True, check=False, timeout=60)
        assert out.returncode == 1 and word in out.stderr.decode(), (config, out)


def test_hostile_charsmaps(driver, tmp_path, texts):
    """Random tries over a real pool: every lookup stays in bounds (an error or a string,
    never a crash or a hang)."""
    rng = random.Random(SEED)
    sample = [t for t in texts if len(t) < 200][:200]
    for _ in range(30):
        units = rng.randrange(1, 64)
        blob = (units * 4).to_bytes(4, "little")
        blob += bytes(rng.randrange(256) for _ in range(units * 4)) + "a\0bc\0".encode()
        config = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(blob).decode()}
        (tmp_path / "n.json").write_text(json.dumps(config))
        (tmp_path / "t.json").write_text(json.dumps(sample))
        out = subprocess.run([driver, str(tmp_path / "n.json"), str(tmp_path / "t.json")],
                             capture_output=True, check=False, timeout=60)
        assert out.returncode in (0, 1), out
