"""U+0000 inside a text: JSON's \\u0000 escape must not end the text there. HF tokenizers'
BertNormalizer with clean_text drops U+0000, so such a folder's text gives the tokens of the
text without it; a tokenizer that keeps U+0000 (clean_text false) is refused, not cut short."""

import json
import os
import shutil

import numpy as np

from conftest import close, error_body, folder, openai_error, unchanged

WITH, WITHOUT = "the c\x00at sat\x00", "the cat sat"


def test_embed_drops_nul(plain_server, models):
    with unchanged(plain_server):
        got = plain_server.ok("/embed", {"inputs": [WITH, "a\x00\x00dog"], "normalize": False})
        want = models("plain").embed([WITHOUT, "adog"])
        close(got, want)


def test_tokenize_drops_nul(plain_server, models):
    with unchanged(plain_server):
        got = plain_server.ok("/tokenize", {"inputs": WITH})[0]
        assert [t["id"] for t in got] == models("plain").tokenize(WITHOUT)["input_ids"]


def test_openai_drops_nul(st_server, models):
    with unchanged(st_server):
        body = st_server.ok("/v1/embeddings", {"input": WITH})
        want = models("st").embed([WITHOUT], normalize=True)
        close([body["data"][0]["embedding"]], want)


def test_rerank_drops_nul(cross_server, models):
    with unchanged(cross_server):
        got = cross_server.ok("/rerank", {"query": "the\x00 cat", "texts": [WITH, "hello"]})
        want = models("cross").rerank("the cat", [WITHOUT, "hello"])
        close([g["score"] for g in sorted(got, key=lambda g: g["index"])], want)


def test_escaped_backslash_is_not_nul(plain_server, models):
    """\\\\u0000 is a backslash and the text u0000, no NUL."""
    with unchanged(plain_server):
        r = plain_server.post("/tokenize", '{"inputs":"a\\\\u0000"}')
        assert r.status == 200, r
        ids = [t["id"] for t in r.json()[0]]
        assert ids == models("plain").tokenize("a\\u0000")["input_ids"]


def _keeping_folder(src, dst):
    """A copy of `src` whose tokenizer.json's BertNormalizer does not clean text."""
    shutil.copytree(src, dst)
    vocab = {t: i for i, t in enumerate(folder.VOCAB)}
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": {"type": "BertNormalizer", "clean_text": False,
                       "handle_chinese_chars": True, "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
        "decoder": None,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }
    with open(os.path.join(dst, "tokenizer.json"), "w") as f:
        json.dump(tok, f)
    return dst


def test_kept_nul_is_refused(serve, folders, tmp_path):
    s = serve(_keeping_folder(folders["plain"], str(tmp_path / "keeps")), "--quiet")
    with unchanged(s):
        r = s.post("/embed", {"inputs": WITH})
        assert r.status == 422, r
        assert "U+0000" in error_body(r, ("Tokenizer",))
        r = s.post("/v1/embeddings", {"input": WITH})
        assert r.status == 422, r
        assert "U+0000" in openai_error(r)
        # without a NUL the folder serves as before
        assert s.post("/embed", {"inputs": WITHOUT}).status == 200


def test_nul_in_field_name_is_refused(plain_server):
    with unchanged(plain_server):
        r = plain_server.post("/embed", '{"inputs":"a","x\\u0000":1}')
        assert r.status == 422, r
