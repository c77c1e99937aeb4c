"""vkbert.Tokenizer against the C API's own results (the vkbert program's `tokenize` and
`decode`, which call the same library through vkbert.h) and the invariants any encoding keeps:
offsets, the special-tokens and attention masks, decoding, the file's rules. (Parity with
HuggingFace tokenizers is tests/parity's.)"""

import json

import pytest

import folder
import vkbert

TEXTS = [
    "the cat sat on the mat.",
    "Hello, WORLD!",
    "  big   red\tdogs  ",
    "the big red dog and the small blue cat was running very fast , or slow .",
    "мир и the cat",  # characters of two bytes: offsets count characters
    "🐈 the cat 🐕‍🦺",
    "",
]

WORDS = ["the", "cat", "sat", "[MASK]", "running", "мир", "dogs", ",", "Hello"]

# BERT's tokenizer.json over folder.VOCAB, with a truncation (8 ids) and a padding (to 12)
# section: the file's rules that vkbert.FILE_RULES applies.
RULES = {
    "version": "1.0",
    "truncation": {"direction": "Right", "max_length": 8, "strategy": "LongestFirst",
                   "stride": 0},
    "padding": {"strategy": {"Fixed": 12}, "direction": "Right", "pad_to_multiple_of": None,
                "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
    "added_tokens": [
        {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for i, t in enumerate(folder.VOCAB[:5])
    ],
    "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                   "strip_accents": None, "lowercase": True},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(folder.VOCAB)}},
}


@pytest.fixture(scope="module")
def tok(folders):
    with vkbert.Tokenizer(folders["plain"]) as t:
        yield t


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    path = tmp_path_factory.mktemp("rules")
    (path / "tokenizer.json").write_text(json.dumps(RULES))
    with vkbert.Tokenizer(str(path)) as t:
        yield t, str(path)


def _as_cli(encodings):
    """Encodings in the shape of `vkbert tokenize`'s JSON."""
    return {
        "input_ids": [e.ids for e in encodings],
        "token_type_ids": [e.type_ids for e in encodings],
        "attention_mask": [e.attention_mask for e in encodings],
        "special_tokens_mask": [e.special_tokens_mask for e in encodings],
        "offsets": [[list(span) for span in e.offsets] for e in encodings],
    }


@pytest.mark.parametrize("pair", [None, "a dog ran far away"])
def test_encode_matches_the_cli(tok, folders, cli, pair):
    got = tok.encode_batch(TEXTS, pair=pair)
    extra = ["--pair", pair] if pair else []
    assert _as_cli(got) == cli.json("tokenize", "--model", folders["plain"], *extra, "--", *TEXTS)


def test_invariants_of_every_encoding(tok):
    for text in TEXTS + [" ".join(WORDS * 3)]:
        for pair in (None, "hello world"):
            e = tok.encode(text, pair)
            n = len(e)
            assert len(e.type_ids) == len(e.special_tokens_mask) == len(e.attention_mask) == n
            assert len(e.offsets) == n and e.attention_mask == [1] * n
            assert e.special_tokens_mask.count(1) == (3 if pair else 2)
            second = False
            for i, (start, stop) in enumerate(e.offsets):
                token = tok.token(e.ids[i])
                if e.special_tokens_mask[i]:
                    assert (start, stop) == (0, 0) and token in ("[CLS]", "[SEP]")
                    second = second or (pair is not None and i > 0)
                    continue
                source = pair if second and pair else text
                assert 0 <= start < stop <= len(source), (text, i, start, stop)
                piece = source[start:stop].lower()
                if token != "[UNK]":  # a word piece is the text it covers, lowercased
                    assert piece == token.lower().removeprefix("##"), (text, token, piece)


def test_file_rules_truncate_and_pad(rules, cli):
    t, path = rules
    text = "the cat sat on the mat and the dog ran far away"
    e = t.encode(text, max_length=vkbert.FILE_RULES)
    assert len(e) == 12 and e.full_count > 8
    assert e.attention_mask == [1] * 8 + [0] * 4
    assert e.special_tokens_mask == [1] + [0] * 6 + [1] * 5
    assert e.ids[8:] == [0] * 4 and e.offsets[8:] == [(0, 0)] * 4
    want = cli.json("tokenize", "--model", path, "--file-rules", "--", text)
    assert _as_cli([e]) == want
    assert len(t.encode(text, max_length=-1)) == e.full_count  # no rules: nothing cut or added
    assert len(t.encode(text, max_length=5)) == 5


def test_decode_matches_the_cli(tok, folders, cli):
    for text in TEXTS:
        ids = tok.encode(text, "the cat").ids
        for skip in (True, False):
            flag = [] if skip else ["--keep-special-tokens"]
            want = cli.json("decode", "--model", folders["plain"], *flag, "--",
                            *[str(i) for i in ids])
            assert tok.decode(ids, skip_special_tokens=skip) == want
    batch = [tok.encode(t).ids for t in TEXTS]
    assert tok.decode_batch(batch) == [tok.decode(ids) for ids in batch]
    assert tok.decode([]) == ""


def test_decode_gives_back_the_words(tok):
    ids = tok.encode("the big red dogs ran").ids
    assert tok.decode(ids) == "the big red dogs ran"
    assert tok.decode(ids, skip_special_tokens=False) == "[CLS] the big red dogs ran [SEP]"


def test_tokens_and_ids(tok):
    for i, token in enumerate(folder.VOCAB):
        assert tok.token(i) == token and tok.token_id(token) == i
    assert tok.token(len(folder.VOCAB)) is None and tok.token(-1) is None
    assert tok.token(2**40) is None
    assert tok.token_id("no such token") is None


def test_max_length_is_the_folders(folders, tok):
    assert tok.max_length == 64  # config.json's max_position_embeddings
    with vkbert.Tokenizer(folders["st"]) as t:
        assert t.max_length == 48  # sentence_bert_config.json's max_seq_length
        long = " ".join(["cat"] * 100)
        assert len(t.encode(long)) == 48 and t.encode(long).full_count == 102
        assert len(t.encode(long, max_length=-1)) == 102


def test_the_models_tokenizer_lives_with_the_model(folders, tok):
    m = vkbert.Model(folders["plain"])
    t = m.tokenizer
    assert t is m.tokenizer and t.max_length == tok.max_length
    assert t.encode("the cat").ids == tok.encode("the cat").ids
    t.close()  # a model's tokenizer goes with the model, not before
    assert t.encode("the cat").ids == tok.encode("the cat").ids
    m.close()
    assert t.closed
    with pytest.raises(ValueError, match="closed"):
        t.encode("the cat")


def test_model_tokenize_is_the_cli_json(folders, cli):
    with vkbert.Model(folders["plain"]) as m:
        want = cli.json("tokenize", "--model", folders["plain"], "--", *TEXTS)
        assert m.tokenize(TEXTS) == want


def test_bad_arguments(tok):
    with pytest.raises(TypeError):
        tok.encode(3)
    with pytest.raises(TypeError):
        tok.encode("a", pair=b"b")
    with pytest.raises(ValueError, match="NUL"):
        tok.encode("a\0b")
    with pytest.raises(ValueError, match="FILE_RULES"):
        tok.encode("a", max_length=-3)
    with pytest.raises(TypeError):
        tok.encode("a", max_length=True)
    with pytest.raises(TypeError):
        tok.encode_batch("a str")
    with pytest.raises(TypeError):
        tok.decode("5 6")
    with pytest.raises(TypeError):
        tok.decode([5, 6.0])
    with pytest.raises(ValueError, match="not a token id"):
        tok.decode([2**31])
    with pytest.raises(vkbert.Error) as bad:
        tok.decode([5, len(folder.VOCAB)])
    assert bad.value.status == "VKBERT_ERROR_INVALID_ARGUMENT"
    assert str(len(folder.VOCAB)) in bad.value.message
    with pytest.raises(vkbert.Error):
        vkbert.Tokenizer("/nonexistent/folder")
