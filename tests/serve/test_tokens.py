"""TEI's /tokenize offsets and /decode against the library's own results (vkbert.Tokenizer, the
model's tokenizer), in TEI's shapes: router/src/http/types.rs (SimpleToken, DecodeRequest,
DecodeResponse), router/src/http/server.rs (tokenize, decode) and core/src/tokenization.rs
(into_tokens: byte offsets into the text the tokenizer saw, the prompt's included)."""

import pytest

from conftest import TEXTS, folder, unchanged

# Characters of two, three and four bytes, so that byte offsets differ from characters.
UNICODE = ["мир the cat", "the 中文 cat sat", "🐈 hello 🐕 world !", "café au lait"]


def byte_offsets(text, encoding):
    """The library's character offsets as the bytes of `text` they cover."""
    at = [len(text[:i].encode()) for i in range(len(text) + 1)]
    return [(at[a], at[b]) for a, b in encoding.offsets]


def expected_tokens(tokenizer, seen, add_special=True):
    """TEI's SimpleTokens of `seen` (the text the tokenizer saw) by the library's encoding."""
    e = tokenizer.encode(seen)
    out = []
    for i, (start, stop) in enumerate(byte_offsets(seen, e)):
        if e.special_tokens_mask[i]:
            if add_special:
                out.append({"id": e.ids[i], "text": tokenizer.token(e.ids[i]), "special": True,
                            "start": None, "stop": None})
            continue
        out.append({"id": e.ids[i], "text": seen.encode()[start:stop].decode(), "special": False,
                    "start": start, "stop": stop})
    return out


@pytest.mark.parametrize("add_special", [True, False])
def test_tokenize_gives_the_librarys_tokens_and_byte_offsets(plain_server, models, add_special):
    texts = TEXTS + UNICODE
    got = plain_server.ok("/tokenize", {"inputs": texts, "add_special_tokens": add_special})
    tokenizer = models("plain").tokenizer
    assert got == [expected_tokens(tokenizer, t, add_special) for t in texts]


def test_tokenize_offsets_cover_the_prompt(st_server, models):
    """An embedding model's default prompt ("query: ") is part of the text TEI tokenizes: its
    tokens come first and every offset counts its bytes."""
    tokenizer = models("st").tokenizer
    for text in TEXTS[:2] + UNICODE:
        got = st_server.ok("/tokenize", {"inputs": text})[0]
        assert got == expected_tokens(tokenizer, folder.PROMPTS["query"] + text)
        named = st_server.ok("/tokenize", {"inputs": text, "prompt_name": "passage"})[0]
        assert named == expected_tokens(tokenizer, folder.PROMPTS["passage"] + text)


def test_tokenize_a_classifier_has_no_default_prompt(classifier_server, models):
    got = classifier_server.ok("/tokenize", {"inputs": UNICODE})
    assert got == [expected_tokens(models("classifier").tokenizer, t) for t in UNICODE]


def test_decode_one_list_and_a_batch(plain_server, models):
    tokenizer = models("plain").tokenizer
    lists = [tokenizer.encode(t).ids for t in TEXTS + UNICODE]
    assert plain_server.ok("/decode", {"ids": lists[0]}) == [tokenizer.decode(lists[0])]
    assert plain_server.ok("/decode", {"ids": lists}) == tokenizer.decode_batch(lists)
    kept = plain_server.ok("/decode", {"ids": lists, "skip_special_tokens": False})
    assert kept == tokenizer.decode_batch(lists, skip_special_tokens=False)
    assert kept[0].startswith("[CLS] ") and kept[0].endswith(" [SEP]")


@pytest.mark.parametrize("body, status, error_type, words", [
    ({"ids": []}, 400, "Empty", "`input_ids` cannot be empty"),
    ({"ids": [[5], []]}, 400, "Empty", "`input_ids` cannot be empty"),
    ({"ids": [5, len(folder.VOCAB)]}, 422, "Tokenizer", str(len(folder.VOCAB))),
    ({"ids": [5, -1]}, 422, "Validation", "token id"),
    ({"ids": [5, 1.5]}, 422, "Validation", "token id"),
    ({"ids": [5, 2**32]}, 422, "Validation", "token id"),
    ({"ids": ["5"]}, 422, "Validation", "`ids`"),
    ({"ids": [[5], 6]}, 422, "Validation", "`ids`"),
    ({"ids": 5}, 422, "Validation", "`ids`"),
    ({}, 422, "Validation", "missing field `ids`"),
    ({"ids": [5], "skip_special_tokens": "yes"}, 422, "Validation", "skip_special_tokens"),
    ({"ids": [5], "skip_special_tokens": None}, 422, "Validation", "skip_special_tokens"),
])
def test_decode_errors_are_teis(plain_server, body, status, error_type, words):
    with unchanged(plain_server):
        r = plain_server.post("/decode", body)
        assert r.status == status, r
        assert r.json()["error_type"] == error_type and words in r.json()["error"], r


def test_decode_batch_size_is_limited(serve, models):
    s = serve("plain", "--max-client-batch-size", "2", "--quiet")
    ids = models("plain").tokenizer.encode("the cat").ids
    assert s.ok("/decode", {"ids": [ids, ids]}) == ["the cat", "the cat"]
    r = s.post("/decode", {"ids": [ids, ids, ids]})
    assert r.status == 413 and r.json()["error_type"] == "Validation", r
    assert r.json()["error"] == "batch size 3 > maximum allowed batch size 2", r
    assert s.ok("/decode", {"ids": ids}) == ["the cat"]  # one list is not a batch


def test_decode_is_counted_under_its_route(plain_server):
    plain_server.ok("/decode", {"ids": [2, 5, 3]})
    samples = plain_server.metrics()["samples"]
    assert any(labels.get("route") == "/decode" for _, labels, _ in samples), samples
