"""vkbert's tokenizer against HuggingFace tokenizers itself on every family of tokenizer.json
that popular encoders ship (tok_zoo.py builds them at test time: SentencePiece Unigram with the
Precompiled normalizer, byte-level BPE, BPE with byte fallback, WordPiece variants, Split regex
pre-tokenizers, added tokens with every flag, truncation and padding sections) and the real
files of all-mpnet-base-v2 and all-MiniLM-L6-v2.

For each family, vkbert.Tokenizer(folder) and tokenizers.Tokenizer.from_file(tokenizer.json)
encode the whole text set of tok_texts.py (thousands of texts in many scripts, two of 10,000
characters), as single texts and a few hundred pairs, in FILE_RULES mode (the file's own
truncation and padding, as from_file applies them): ids, type ids, special-tokens mask,
attention mask and offsets must be equal; then decode of tokenizers' ids, skipping special
tokens and keeping them, must give the same strings. The counts per family (compared, equal)
are printed at the end of the run.

    VKBERT_LIBRARY=build/libvkbert.so PYTHONPATH=python \\
        .venv/bin/python -m pytest -q tests/parity/test_tokenizer_families.py
"""

import json
import os
import random
import shutil
import subprocess
import zlib

import pytest

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is not installed")
pytest.importorskip("sentencepiece", reason="sentencepiece is not installed (tests/python-env.sh)")
pytest.importorskip("transformers", reason="transformers is not installed")
vkbert = pytest.importorskip("vkbert", reason="the vkbert package is not importable (python/)",
                             exc_type=ImportError)  # its library not found, too
if not hasattr(vkbert, "Tokenizer"):
    pytest.skip("this vkbert package has no Tokenizer", allow_module_level=True)

import tok_zoo  # noqa: E402
from tok_texts import (ACCENTED, BERT_SPECIALS, SENTENCEPIECE_SPECIALS, WORDS,  # noqa: E402
                       make_texts, text, word)

FIELDS = ("ids", "type_ids", "special_tokens_mask", "attention_mask", "offsets")
TEXTS = 3000  # generated texts per family, besides tok_texts' FIXED and its two long ones
PAIR_FIRSTS = 60  # generated first texts; with FIXED and the long ones, each with 5 seconds
# family -> {what: [compared, equal]}, printed by conftest.py's terminal summary
TOK_PARITY_COUNTS = {}

# the real files: (conftest's fixture of the checkpoint, the specials its file has)
REAL = {"mpnet-real": ("mpnet", SENTENCEPIECE_SPECIALS), "minilm-real": ("minilm", BERT_SPECIALS)}
NAMES = list(tok_zoo.FAMILIES) + list(REAL)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tokenizer_families"))


def _real_folder(name, root, request):
    """The real checkpoint's tokenizer.json in a folder of its own (conftest's fixtures unpack
    the checkpoints, once a session)."""
    source = request.getfixturevalue(REAL[name][0])
    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    shutil.copy(os.path.join(source, "tokenizer.json"), folder)
    return folder


_FOLDERS = {}


@pytest.fixture
def family(request, root):
    """(name, folder, specials typed in its texts), each folder built once."""
    name = request.param
    if name not in _FOLDERS:
        if name in REAL:
            _FOLDERS[name] = _real_folder(name, root, request)
        else:
            _FOLDERS[name] = tok_zoo.build(name, root)
    specials = (REAL.get(name) or tok_zoo.FAMILIES[name])[1]
    return name, _FOLDERS[name], specials


def _tokenizers(folder):
    ref = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    return ref, vkbert.Tokenizer(folder)


# ---- comparing ----

def _fields(encoding):
    return {f: [tuple(x) for x in getattr(encoding, f)] if f == "offsets"
            else list(getattr(encoding, f)) for f in FIELDS}


def _short(s, n=120):
    r = repr(s)
    return r if len(r) <= n else r[:n] + f"... ({len(s)} chars)"


def _difference(ref, want, got):
    """The fields that differ and, for the first, both sides from where they part."""
    bad = [f for f in FIELDS if want[f] != got[f]]
    f = bad[0]
    at = next((i for i, (a, b) in enumerate(zip(want[f], got[f])) if a != b),
              min(len(want[f]), len(got[f])))
    tokens = [ref.id_to_token(x) for x in want["ids"][at:at + 6]]
    return (f"    differ: {bad}; {f} from {at}: tokenizers {want[f][at:at + 6]} "
            f"({len(want[f])}, tokens {tokens}), vkbert {got[f][at:at + 6]} ({len(got[f])})")


def _record(name, what, compared, equal):
    counts = TOK_PARITY_COUNTS.setdefault(name, {})
    before = counts.get(what, [0, 0])
    counts[what] = [before[0] + compared, before[1] + equal]


def compare(ref, name, what, inputs, want, got):
    """want and got: per input, the _fields dicts (or strings for decode)."""
    assert len(want) == len(got), f"{name} {what}: {len(got)} results for {len(want)} inputs"
    bad = [i for i, (w, g) in enumerate(zip(want, got)) if w != g]
    _record(name, what, len(want), len(want) - len(bad))
    if not bad:
        return
    lines = [f"{name} {what}: {len(bad)} of {len(want)} differ; the first:"]
    for i in bad[:5]:
        lines.append(f"  input {i}: {' | '.join(_short(t) for t in inputs[i])}")
        if isinstance(want[i], str):
            lines.append(f"    tokenizers {_short(want[i])}\n    vkbert     {_short(got[i])}")
        else:
            lines.append(_difference(ref, want[i], got[i]))
    pytest.fail("\n".join(lines), pytrace=False)


def _texts(name, specials, count=TEXTS):
    return make_texts(zlib.crc32(name.encode()), WORDS + ACCENTED, count, specials=specials)


_REFERENCE = {}


def _reference(name, folder, specials):
    """The family's text set and tokenizers' encodings of it, once a run."""
    if name not in _REFERENCE:
        ref = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        texts = _texts(name, specials)
        _REFERENCE[name] = texts, ref.encode_batch(texts)
    return _REFERENCE[name]


@pytest.mark.parametrize("family", NAMES, indirect=True)
def test_single(family):
    name, folder, specials = family
    ref, ours = _tokenizers(folder)
    texts, encodings = _reference(name, folder, specials)
    want = [_fields(e) for e in encodings]
    got = [_fields(e) for e in ours.encode_batch(texts, max_length=vkbert.FILE_RULES)]
    compare(ref, name, "single", [(t,) for t in texts], want, got)


def _seconds(rng, specials):
    words = WORDS + ACCENTED
    return ["", word(rng, words), text(rng, words, 4, specials), text(rng, words, 12, specials),
            text(rng, words, 60, specials)]


@pytest.mark.parametrize("family", NAMES, indirect=True)
def test_pair(family):
    """Every first text with each second one (encode_batch takes one second text a call)."""
    name, folder, specials = family
    ref, ours = _tokenizers(folder)
    rng = random.Random(zlib.crc32(name.encode()) + 1)
    firsts = make_texts(rng.randrange(1000), WORDS + ACCENTED, PAIR_FIRSTS, most=20,
                        long_most=60, specials=specials)
    inputs, want, got = [], [], []
    for second in _seconds(rng, specials):
        pairs = [(f, second) for f in firsts]
        inputs += pairs
        want += [_fields(e) for e in ref.encode_batch(pairs)]
        got += [_fields(e) for e in
                ours.encode_batch(firsts, pair=second, max_length=vkbert.FILE_RULES)]
    compare(ref, name, "pair", inputs, want, got)


@pytest.mark.parametrize("skip", [True, False], ids=["skip_special", "keep_special"])
@pytest.mark.parametrize("family", NAMES, indirect=True)
def test_decode(family, skip):
    """tokenizers' own ids of the text set, decoded by both."""
    name, folder, specials = family
    ref, ours = _tokenizers(folder)
    texts, encodings = _reference(name, folder, specials)
    ids = [e.ids for e in encodings]
    want = ref.decode_batch(ids, skip_special_tokens=skip)
    got = ours.decode_batch(ids, skip_special_tokens=skip)
    compare(ref, name, "decode " + ("skip" if skip else "keep"), [(t,) for t in texts],
            list(want), list(got))


# ---- the CLI: `vkbert tokenize --file-rules` and `vkbert decode` on a sample ----

CLI_FIELDS = {"ids": "input_ids", "type_ids": "token_type_ids",
              "special_tokens_mask": "special_tokens_mask", "attention_mask": "attention_mask",
              "offsets": "offsets"}


def _cli(cli, *args):
    done = subprocess.run([cli, *args], capture_output=True, text=True)
    assert done.returncode == 0, f"vkbert {args[0]}: exit {done.returncode}: {done.stderr[:500]}"
    return json.loads(done.stdout)


@pytest.mark.parametrize("family", NAMES, indirect=True)
def test_cli_sample(cli, family):
    """150 texts (short enough for one command line) in one `vkbert tokenize`, and 20 id lists
    through `vkbert decode`, keeping special tokens and not."""
    name, folder, specials = family
    ref = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    texts = [t for t in _texts(name, specials, 400) if len(t) < 300][:150]
    rows = _cli(cli, "tokenize", "--model", folder, "--file-rules", "--", *texts)
    got = [{f: [tuple(x) for x in rows[k][i]] if f == "offsets" else rows[k][i]
            for f, k in CLI_FIELDS.items()} for i in range(len(rows["input_ids"]))]
    compare(ref, name, "cli tokenize", [(t,) for t in texts],
            [_fields(e) for e in ref.encode_batch(texts)], got)
    sample = [e.ids for e in ref.encode_batch(texts[:20]) if e.ids]
    for keep in (False, True):
        flag = ["--keep-special-tokens"] if keep else []
        got = [_cli(cli, "decode", "--model", folder, *flag, "--", *map(str, ids))
               for ids in sample]
        compare(ref, name, "cli decode " + ("keep" if keep else "skip"),
                [(ids,) for ids in sample],
                ref.decode_batch(sample, skip_special_tokens=not keep), got)


@pytest.mark.parametrize("name", list(tok_zoo.REFUSED))
def test_out_of_scope_component_is_refused_by_name(root, name):
    """A component vkbert does not read is refused, naming its type: never tokenized otherwise."""
    folder = tok_zoo.build(name, root)
    kind = tok_zoo.REFUSED[name][1]
    with pytest.raises(vkbert.Error) as refused:
        vkbert.Tokenizer(folder)
    assert kind in str(refused.value), str(refused.value)
