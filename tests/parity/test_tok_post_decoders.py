"""vkbert's post-processors and decoders (src/io/tok_post*.c, tok_decoders*.c) against tokenizers
itself: each component built in Python, its JSON (as tokenizer.json holds it) handed to the
test driver tests/io/tok_post_driver.c with inputs from real tokenizations of the shared text set
(tok_texts.py), and the results compared with what tokenizers gives for the same inputs:
decoders' strings (`decoders.X(...).decode(tokens)`), post-processors' ids, type ids, special
tokens masks and offsets (`processor.process(encoding, pair, add_special_tokens)`)."""

import json
import os
import random
import subprocess

import pytest
from tokenizers import (Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers,
                        processors, trainers)

import tok_texts

SEED = 20261207
# the decoders' cases where tokenizers panics would each print a backtrace
os.environ["RUST_BACKTRACE"] = "0"


@pytest.fixture(scope="module")
def driver():
    path = os.environ.get("VKBERT_TOK_POST_DRIVER")
    if not path and os.environ.get("VKBERT_CLI"):
        path = os.path.join(os.path.dirname(os.environ["VKBERT_CLI"]), "tests", "tok_post_driver")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("no tok_post_driver (build the target; set VKBERT_CLI to the build's vkbert "
                    "or VKBERT_TOK_POST_DRIVER to the driver)")
    return path


def run_driver(driver, request):
    out = subprocess.run([driver], input=json.dumps(request).encode(), capture_output=True,
                         check=True, timeout=600)
    answer = json.loads(out.stdout)
    assert "load_error" not in answer, answer["load_error"]
    return answer


def hexs(s):
    return s.encode("utf-8").hex()


def component_json(key, component):
    """The component as tokenizer.json holds it: tokenizers' own serialization."""
    tok = Tokenizer(models.WordLevel({"a": 0}, unk_token="a"))
    setattr(tok, key, component)
    return json.loads(tok.to_str())[key]


# ------------------------------------------------------------------ the tokenizers ----

@pytest.fixture(scope="module")
def texts():
    return tok_texts.make_texts(SEED, count=3000)


@pytest.fixture(scope="module")
def sp_texts():
    """The text set with SentencePiece's and RoBERTa's special tokens typed into it."""
    return tok_texts.make_texts(SEED, count=3000, specials=tok_texts.SENTENCEPIECE_SPECIALS)


@pytest.fixture(scope="module")
def byte_level_bpe(sp_texts):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    trainer = trainers.BpeTrainer(vocab_size=3000, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=tok_texts.SENTENCEPIECE_SPECIALS)
    tok.train_from_iterator(sp_texts, trainer)
    return tok


@pytest.fixture(scope="module")
def unigram(sp_texts):
    """SentencePiece-style: Metaspace and a Unigram model, byte_fallback pieces in the vocabulary."""
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(vocab_size=16000, show_progress=False, unk_token="<unk>",
                                      special_tokens=tok_texts.SENTENCEPIECE_SPECIALS
                                      + [f"<0x{b:02X}>" for b in range(256)])
    tok.train_from_iterator(sp_texts, trainer)
    return tok


@pytest.fixture(scope="module")
def wordpiece(texts):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=3000, show_progress=False,
                                        special_tokens=tok_texts.BERT_SPECIALS)
    tok.train_from_iterator(texts, trainer)
    return tok


def token_lists(tok, texts):
    return [tok.encode(t, add_special_tokens=False).tokens for t in texts]


def byte_tokens(rng, lists):
    """Token lists with pieces spelled as <0xHH> byte tokens, whole or cut short (invalid
    UTF-8 runs), and a few odd near-misses ("<0x+F>", "<0xZZ>", lowercase hex)."""
    out = []
    for tokens in lists:
        mixed = []
        for t in tokens:
            r = rng.random()
            if r < 0.3:
                data = t.encode("utf-8")
                if rng.random() < 0.2 and len(data) > 1:
                    data = data[:rng.randint(1, len(data) - 1)]
                mixed += [f"<0x{b:02X}>" if rng.random() < 0.9 else f"<0x{b:02x}>" for b in data]
            elif r < 0.32:
                mixed.append(rng.choice(["<0x+F>", "<0xZZ>", "<0x1>", "<0x100>", "<0xé>"]))
            else:
                mixed.append(t)
        out.append(mixed)
    return out


# ------------------------------------------------------------------------ decoders ----

def check_decoder(driver, decoder, lists, label):
    answer = run_driver(driver, {"decoder": component_json("decoder", decoder),
                                 "cases": [[hexs(t) for t in ts] for ts in lists]})
    bad = []
    for tokens, got in zip(lists, answer["results"]):
        try:
            want = decoder.decode(tokens)
        except BaseException as e:  # noqa: B036  tokenizers panics on some inputs
            want = e
        if isinstance(want, BaseException):
            if "error" not in got:
                bad.append((tokens, f"tokenizers fails ({want}), vkbert does not"))
            continue
        if "error" in got:
            bad.append((tokens, got["error"]))
            continue
        text = b"".join(bytes.fromhex(h) for h in got["tokens"]).decode("utf-8")
        if text != want:
            bad.append((tokens, f"{text!r} != {want!r}"))
    assert not bad, f"{label}: {len(bad)} of {len(lists)} differ, first: {bad[:3]}"
    return answer["describe"]


def test_byte_level_decoder(driver, byte_level_bpe, sp_texts):
    lists = token_lists(byte_level_bpe, sp_texts)
    rng = random.Random(SEED)
    # pieces of lists, so that multi-byte characters are cut at token boundaries
    cut = [ts[rng.randint(0, len(ts)):] for ts in lists if ts]
    # tokens outside the byte-level alphabet pass as their own bytes
    odd = [ts + ["\u2581x", "\u0100"] for ts in lists[:200]]
    check_decoder(driver, decoders.ByteLevel(), lists + cut + odd, "ByteLevel")


@pytest.mark.parametrize("scheme", ["always", "first", "never"])
@pytest.mark.parametrize("split", [True, False])
def test_metaspace_decoder(driver, unigram, sp_texts, scheme, split):
    lists = token_lists(unigram, sp_texts)
    check_decoder(driver, decoders.Metaspace(replacement="\u2581", prepend_scheme=scheme,
                                             split=split), lists, f"Metaspace {scheme}")
    check_decoder(driver, decoders.Metaspace(replacement="a", prepend_scheme=scheme,
                                             split=split), lists, f"Metaspace 'a' {scheme}")


@pytest.mark.parametrize("prefix,cleanup", [("##", True), ("##", False), ("", True), ("e", True)])
def test_wordpiece_decoder(driver, wordpiece, texts, prefix, cleanup):
    lists = token_lists(wordpiece, texts)
    extra = [["I", "do", "not", "##n't", "'", "s", "'", "m", "?", "!", ",", "do", "not"]]
    check_decoder(driver, decoders.WordPiece(prefix=prefix, cleanup=cleanup), lists + extra,
                  "WordPiece")


def test_byte_fallback_and_fuse(driver, unigram, sp_texts):
    rng = random.Random(SEED + 1)
    lists = byte_tokens(rng, token_lists(unigram, sp_texts))
    check_decoder(driver, decoders.ByteFallback(), lists, "ByteFallback")
    check_decoder(driver, decoders.Fuse(), lists, "Fuse")


@pytest.mark.parametrize("content,left,right", [(" ", 1, 0), ("\u2581", 1, 0), ("a", 2, 1),
                                                ("\u2581", 3, 3)])
def test_strip_decoder(driver, unigram, sp_texts, content, left, right):
    """tokenizers panics where a token is all content and too short; vkbert fails there."""
    lists = token_lists(unigram, sp_texts)
    spaced = [[t.replace("\u2581", " ") for t in ts] for ts in lists]
    check_decoder(driver, decoders.Strip(content=content, left=left, right=right),
                  lists + spaced, "Strip")


@pytest.mark.parametrize("pattern,content", [("\u2581", " "), ("", "+"), ("ab", "b"),
                                             (Regex("\u2581+"), " "), (Regex("\\s"), "_"),
                                             (Regex("x*"), "-"), (Regex("(?i)[aeiou]"), "")])
def test_replace_decoder(driver, unigram, sp_texts, pattern, content):
    lists = token_lists(unigram, sp_texts)
    check_decoder(driver, decoders.Replace(pattern, content), lists, "Replace")


@pytest.mark.parametrize("suffix", ["</w>", "", "e"])
def test_bpe_decoder(driver, wordpiece, texts, suffix):
    lists = []
    for ts in token_lists(wordpiece, texts):
        # word-final pieces marked as an end-of-word BPE marks them
        words = [t[2:] if t.startswith("##") else t for t in ts]
        ends = [i + 1 == len(ts) or not ts[i + 1].startswith("##") for i in range(len(ts))]
        lists.append([w + ("</w>" if e else "") for w, e in zip(words, ends)])
    check_decoder(driver, decoders.BPEDecoder(suffix=suffix), lists + [[]], "BPEDecoder")


def test_sequences_of_decoders(driver, unigram, sp_texts):
    rng = random.Random(SEED + 2)
    lists = byte_tokens(rng, token_lists(unigram, sp_texts))
    llama = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                               decoders.Fuse(), decoders.Strip(content=" ", left=1, right=0)])
    assert check_decoder(driver, llama, lists, "Llama's") == \
        "Sequence[Replace, ByteFallback, Fuse, Strip]"
    spm = decoders.Sequence([decoders.ByteFallback(),
                             decoders.Metaspace(replacement="\u2581", prepend_scheme="first")])
    check_decoder(driver, spm, lists, "ByteFallback then Metaspace")


# ----------------------------------------------------------------- post-processors ----

def enc_json(enc):
    return {"ids": enc.ids, "special": enc.special_tokens_mask,
            "offsets": [list(o) for o in enc.offsets]}


def check_processor(driver, tok, processor, texts, label):
    vocab = tok.get_vocab(with_added_tokens=True)
    by_id = [None] * (max(vocab.values()) + 1)
    for token, i in vocab.items():
        by_id[i] = hexs(token)
    encs = [tok.encode(t, add_special_tokens=False) for t in texts]
    cases, wants = [], []
    for i, (text, enc) in enumerate(zip(texts, encs)):
        j = (i * 7 + 1) % len(texts)
        for pair in (False, True):
            for add in (True, False):
                b = encs[j] if pair else None
                cases.append({"a": enc_json(enc), "b": enc_json(b) if pair else None,
                              "texts": [hexs(text), hexs(texts[j] if pair else "")],
                              "add_special": add})
                wants.append(processor.process(enc, b, add_special_tokens=add))
    answer = run_driver(driver, {"post_processor": component_json("post_processor", processor),
                                 "vocab": by_id, "cases": cases})
    assert answer["added"] == [processor.num_special_tokens_to_add(False),
                               processor.num_special_tokens_to_add(True)], label
    bad = []
    for case, want, got in zip(cases, wants, answer["results"]):
        if "error" in got:
            bad.append(got["error"])
            continue
        fields = {"ids": want.ids, "type_ids": want.type_ids, "special": want.special_tokens_mask,
                  "offsets": [list(o) for o in want.offsets]}
        for name, value in fields.items():
            if got[name] != value:
                bad.append((bytes.fromhex(case["texts"][0]).decode()[:80], case["add_special"],
                            case["b"] is not None, name, got[name][:12], value[:12]))
                break
    assert not bad, f"{label}: {len(bad)} of {len(cases)} differ, first: {bad[:3]}"
    return answer["describe"]


@pytest.fixture(scope="module")
def post_texts(texts):
    return texts[:600] + texts[-2:]


@pytest.fixture(scope="module")
def sp_post_texts(sp_texts):
    return sp_texts[:600] + sp_texts[-2:]


@pytest.mark.parametrize("trim", [True, False])
@pytest.mark.parametrize("prefix", [True, False])
def test_byte_level_processor(driver, byte_level_bpe, sp_post_texts, trim, prefix):
    check_processor(driver, byte_level_bpe,
                    processors.ByteLevel(trim_offsets=trim, add_prefix_space=prefix),
                    sp_post_texts, "ByteLevel")


@pytest.mark.parametrize("trim", [True, False])
@pytest.mark.parametrize("prefix", [True, False])
def test_roberta_processing(driver, byte_level_bpe, sp_post_texts, trim, prefix):
    check_processor(driver, byte_level_bpe,
                    processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=trim,
                                                 add_prefix_space=prefix),
                    sp_post_texts, "RobertaProcessing")


def test_bert_processing(driver, wordpiece, byte_level_bpe, post_texts):
    check_processor(driver, wordpiece, processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2)),
                    post_texts, "BertProcessing")
    check_processor(driver, byte_level_bpe, processors.BertProcessing(("</s>", 2), ("<s>", 0)),
                    post_texts[:300], "BertProcessing on byte-level tokens")


TEMPLATES = [
    ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1", [("[CLS]", 2), ("[SEP]", 3)]),
    ("$A:3 [SEP]:2", "$B:1 [SEP] $A:0 [SEP]:5", [("[SEP]", 3)]),
    ("$0", "$A $B:7", []),
    ("[X] $A [X]", "$A [X]:1 $B:1 $A:2", [{"id": "[X]", "ids": [7, 8, 9], "tokens": ["a", "b", "c"]}]),
]


@pytest.mark.parametrize("single,pair,specials", TEMPLATES)
def test_template_processing(driver, wordpiece, post_texts, single, pair, specials):
    proc = processors.TemplateProcessing(single=single, pair=pair, special_tokens=specials)
    check_processor(driver, wordpiece, proc, post_texts, f"TemplateProcessing {single} / {pair}")


@pytest.mark.parametrize("prefix", [True, False])
def test_sequence_of_processors(driver, byte_level_bpe, sp_post_texts, prefix):
    """ModernBERT's and Llama's: ByteLevel's trimming then a template; and the other way round,
    where the trimming sees the template's special tokens, one of them spelled with a 'Ġ'."""
    template = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B:1 </s>:1",
        special_tokens=[("<s>", 0), ("</s>", 2)])
    first = processors.Sequence([processors.ByteLevel(trim_offsets=True, add_prefix_space=prefix),
                                 template])
    assert check_processor(driver, byte_level_bpe, first, sp_post_texts, "ByteLevel, Template") == \
        "Sequence[ByteLevel, TemplateProcessing]"
    spaced = processors.TemplateProcessing(
        single="[S] $A", pair="[S] $A [S] $B",
        special_tokens=[{"id": "[S]", "ids": [5, 6], "tokens": ["\u0120x", "\u0120\u0120"]}])
    second = processors.Sequence([spaced, processors.ByteLevel(trim_offsets=True,
                                                               add_prefix_space=prefix),
                                  processors.RobertaProcessing(("</s>", 2), ("<s>", 0))])
    check_processor(driver, byte_level_bpe, second, sp_post_texts[:400], "Template, ByteLevel, Roberta")
