"""vkbert's pre-tokenizers (src/io/tok_pretokenizers.c, tok_pretokenize.c, tok_split.c,
tok_regex.c) against tokenizers' own pre_tokenize_str, on the shared text set (tok_texts.py):
every type and option, loaded from the same JSON on both sides. The C side is reached through
tests/io/tok_pretokenizer_driver.c, which prints each text's pieces with their offsets in
characters of the original text."""

import json
import os
import subprocess

import pytest

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is not installed")
from tokenizers import Tokenizer  # noqa: E402

import tok_texts  # noqa: E402

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
# Llama 3's and GPT-4's pattern (what ModernBERT-era byte-level files split with), and Qwen2's.
CL100K = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
         r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
BEHAVIORS = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]


def metaspace(scheme, split, replacement="\u2581"):
    return {"type": "Metaspace", "replacement": replacement, "prepend_scheme": scheme,
            "split": split}


def byte_level(prefix, regex):
    return {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True,
            "use_regex": regex}


def split(pattern, behavior, invert=False, regex=True):
    return {"type": "Split", "pattern": {"Regex" if regex else "String": pattern},
            "behavior": behavior, "invert": invert}


CASES = {}
for scheme in ["first", "always", "never"]:
    for flag in [True, False]:
        CASES[f"metaspace_{scheme}_{'split' if flag else 'whole'}"] = metaspace(scheme, flag)
CASES["metaspace_old_add_prefix_space"] = {"type": "Metaspace", "replacement": "\u2581",
                                           "add_prefix_space": True, "str_rep": "\u2581"}
CASES["metaspace_old_no_prefix"] = {"type": "Metaspace", "replacement": "\u2581",
                                    "add_prefix_space": False, "prepend_scheme": "never"}
CASES["metaspace_other_replacement"] = metaspace("always", True, "_")
for prefix in [True, False]:
    for regex in [True, False]:
        CASES[f"byte_level_prefix_{prefix}_regex_{regex}"] = byte_level(prefix, regex)
for simple in ["Whitespace", "WhitespaceSplit", "BertPreTokenizer"]:
    CASES[simple] = {"type": simple}
for behavior in BEHAVIORS:
    CASES[f"punctuation_{behavior}"] = {"type": "Punctuation", "behavior": behavior}
CASES["punctuation_default"] = {"type": "Punctuation"}
for individual in [True, False]:
    CASES[f"digits_{individual}"] = {"type": "Digits", "individual_digits": individual}
SPLIT_PATTERNS = {
    "space": (" ", False), "dash_dash": ("--", False), "dot": (".", False),
    "empty_string": ("", False), "gpt2": (GPT2, True), "cl100k": (CL100K, True),
    "lookahead_upper": (r"(?=\p{Lu})", True), "spaces": (r"\s+", True),
    "digits_1_3": (r"\p{N}{1,3}", True), "empty_matches": ("x*", True),
    "word": (r"\w+", True), "line_anchor": ("^.|.$", True),
}
for name, (pattern, regex) in SPLIT_PATTERNS.items():
    for behavior in BEHAVIORS:
        for invert in [False, True]:
            CASES[f"split_{name}_{behavior}_{'invert' if invert else 'plain'}"] = \
                split(pattern, behavior, invert, regex)
CASES["sequence_xlm_roberta"] = {"type": "Sequence", "pretokenizers": [
    {"type": "WhitespaceSplit"}, metaspace("always", True)]}
CASES["sequence_whitespace_metaspace_first"] = {"type": "Sequence", "pretokenizers": [
    {"type": "WhitespaceSplit"}, metaspace("first", True)]}
CASES["sequence_split_byte_level"] = {"type": "Sequence", "pretokenizers": [
    split(CL100K, "Isolated"), byte_level(False, False)]}
CASES["sequence_qwen2"] = {"type": "Sequence", "pretokenizers": [
    split(QWEN2, "Isolated"), byte_level(False, False)]}
CASES["sequence_digits_byte_level"] = {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": True}, byte_level(False, True)]}
CASES["sequence_punctuation_metaspace_bert"] = {"type": "Sequence", "pretokenizers": [
    {"type": "Punctuation", "behavior": "Contiguous"}, metaspace("first", True),
    {"type": "BertPreTokenizer"}]}
CASES["sequence_empty"] = {"type": "Sequence", "pretokenizers": []}


def find_driver():
    path = os.environ.get("VKBERT_TOK_PRETOKENIZER_DRIVER")
    if not path and os.environ.get("VKBERT_CLI"):
        path = os.path.join(os.path.dirname(os.environ["VKBERT_CLI"]), "tests",
                            "tok_pretokenizer_driver")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("no tok_pretokenizer_driver (build it; set VKBERT_TOK_PRETOKENIZER_DRIVER "
                    "or VKBERT_CLI to the build's programs)")
    return path


@pytest.fixture(scope="module")
def driver():
    return find_driver()


@pytest.fixture(scope="module")
def texts_file(tmp_path_factory):
    texts = tok_texts.make_texts(20261207, specials=tok_texts.SENTENCEPIECE_SPECIALS)
    path = tmp_path_factory.mktemp("pretok") / "texts.json"
    path.write_text(json.dumps(texts))
    return str(path), texts


def python_pretokenizer(spec):
    """tokenizers' own pre-tokenizer, read from the same JSON."""
    base = json.loads(Tokenizer(tokenizers.models.WordLevel({"a": 0}, unk_token="a")).to_str())
    base["pre_tokenizer"] = spec
    return Tokenizer.from_str(json.dumps(base)).pre_tokenizer


def run_driver(driver, args, tmp_path):
    out = subprocess.run([driver, *args], capture_output=True, timeout=600)
    return out.returncode, json.loads(out.stdout.decode("utf-8")), out.stderr.decode()


def compare(expected, got, texts):
    bad = [i for i, (e, g) in enumerate(zip(expected, got)) if e != g]
    lines = [f"{len(bad)} of {len(texts)} texts differ"]
    for i in bad[:3]:
        diff = next(k for k in range(max(len(expected[i]), len(got[i])))
                    if k >= len(expected[i]) or k >= len(got[i]) or expected[i][k] != got[i][k])
        lines.append(f"text {i} {texts[i][:200]!r}: piece {diff}: tokenizers "
                     f"{expected[i][diff:diff + 2]} vkbert {got[i][diff:diff + 2]}")
    assert not bad, "\n".join(lines)


@pytest.mark.parametrize("name", sorted(CASES))
def test_pretokenizer(name, driver, texts_file, tmp_path):
    path, texts = texts_file
    spec = CASES[name]
    pt = python_pretokenizer(spec)
    expected = [[[piece, start, end] for piece, (start, end) in pt.pre_tokenize_str(t)]
                for t in texts]
    spec_path = tmp_path / "pretokenizer.json"
    spec_path.write_text(json.dumps(spec))
    rc, got, err = run_driver(driver, [str(spec_path), path], tmp_path)
    assert rc == 0, (got, err)
    assert len(got) == len(texts)
    compare(expected, got, texts)


REGEXES = {"gpt2": GPT2, "cl100k": CL100K, "lookahead": r"\s+(?!\S)|\p{L}+(?=\p{N})",
           "lookbehind": r"(?<=\p{L})\p{N}+", "classes": r"[\w\-]+|[^\w\s]", "case": "(?i:th)e",
           "scripts_and_escapes": r"\u0020\p{Han}+|\p{Hiragana}+|\p{^L}\p{Latin}|\h+",
           "oniguruma_dotall": "(?m:e.)|^.|.$"}


@pytest.mark.parametrize("name", sorted(REGEXES))
def test_regex_matches(name, driver, texts_file, tmp_path):
    """tok_regex_all's non-empty matches are the pieces that Split(Removed, invert) keeps."""
    path, texts = texts_file
    pt = python_pretokenizer(split(REGEXES[name], "Removed", True))
    expected = [[[start, end] for _, (start, end) in pt.pre_tokenize_str(t)] for t in texts]
    rc, got, err = run_driver(driver, ["--regex", REGEXES[name], path], tmp_path)
    assert rc == 0, (got, err)
    compare(expected, [[m for m in matches if m[0] != m[1]] for matches in got], texts)


REFUSED = {
    "unknown type": ({"type": "UnicodeScripts"}, "unsupported type \"UnicodeScripts\""),
    "unknown key": ({"type": "Whitespace", "foo": 1}, "unknown key \"foo\""),
    "bad behavior": ({"type": "Punctuation", "behavior": "isolated"}, "behavior"),
    "missing invert": ({"type": "Split", "pattern": {"String": "a"}, "behavior": "Removed"},
                       "invert"),
    "bad regex": (split("(", "Isolated"), "pattern"),
    "two-character replacement": (metaspace("always", True, "ab"), "replacement"),
    "contradicting schemes": ({"type": "Metaspace", "replacement": "\u2581",
                               "add_prefix_space": False, "prepend_scheme": "first"},
                              "add_prefix_space"),
    "add_prefix_space false alone": ({"type": "Metaspace", "replacement": "\u2581",
                                      "add_prefix_space": False}, "add_prefix_space"),
    "unknown property": (split(r"\p{Klingon}", "Isolated"), "Klingon"),
    "byte level without trim_offsets": ({"type": "ByteLevel", "add_prefix_space": True},
                                        "trim_offsets"),
    "class escape in a class": (split(r"[\W]", "Isolated"), "not supported"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(name, driver, tmp_path):
    spec, words = REFUSED[name]
    spec_path = tmp_path / "pretokenizer.json"
    spec_path.write_text(json.dumps(spec))
    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps(["a b"]))
    rc, got, _ = run_driver(driver, [str(spec_path), str(texts)], tmp_path)
    assert rc == 1 and words in got["error"] and "pre_tokenizer" in got["error"], got


def test_hostile_pattern_stops(driver, tmp_path):
    """A catastrophic pattern fails with a message instead of running for ever."""
    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps(["a" * 5000 + "b"]))
    rc, got, _ = run_driver(driver, ["--regex", "(a|aa)+$|(a+)+c", str(texts)], tmp_path)
    assert rc == 1 and "limit" in got["error"], got


def test_describe(driver, tmp_path):
    spec_path = tmp_path / "pretokenizer.json"
    spec_path.write_text(json.dumps(CASES["sequence_split_byte_level"]))
    out = subprocess.run([driver, "--describe", str(spec_path)], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.startswith("Sequence[Split(/(?i:'s|") and out.stdout.endswith(
        ", Isolated), ByteLevel]\n"), out.stdout
