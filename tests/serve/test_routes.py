"""Every route against the library's own results for the same texts (vkbert.Model), each text
embedded alone; the expectations of OpenAI's and TEI's API derived here in numpy."""

import base64

import numpy as np
import pytest

import rawhttp
from conftest import TEXTS, close, long_text, unchanged, unit


def alone(model, texts, **options):
    """The library's embeddings of each text by itself (no batch with the others)."""
    return np.stack([model.embed([t], **options)[0] for t in texts])


# ---------------------------------------------------------------- /embed (TEI) ------------


def test_embed_normalizes_by_default(st_server, models):
    got = st_server.ok("/embed", {"inputs": TEXTS})
    assert isinstance(got, list) and len(got) == len(TEXTS)
    close(got, alone(models("st"), TEXTS, normalize=True))


def test_embed_one_string_gives_a_list_of_one(st_server, models):
    """TEI's EmbedResponse is a list of embeddings for a single input too."""
    got = st_server.ok("/embed", {"inputs": TEXTS[0]})
    assert len(got) == 1
    close(got, alone(models("st"), TEXTS[:1], normalize=True))


def test_embed_normalize_false(st_server, models):
    got = st_server.ok("/embed", {"inputs": TEXTS, "normalize": False})
    want = alone(models("st"), TEXTS, normalize=False)
    close(got, want)
    assert not np.allclose(np.linalg.norm(want, axis=1), 1)


def test_embed_plain_folder_normalize_true(plain_server, models):
    got = plain_server.ok("/embed", {"inputs": TEXTS, "normalize": True})
    close(got, unit(alone(models("plain"), TEXTS, normalize=False)))


@pytest.mark.parametrize("name", ["query", "passage"])
def test_embed_prompt_name(st_server, models, name):
    got = st_server.ok("/embed", {"inputs": TEXTS, "prompt_name": name})
    close(got, alone(models("st"), TEXTS, prompt_name=name, normalize=True))


def test_embed_unknown_prompt_name_is_refused(st_server):
    """TEI (core/src/infer.rs): an unknown prompt name is a Validation error naming it."""
    with unchanged(st_server):
        r = st_server.post("/embed", {"inputs": TEXTS[0], "prompt_name": "nope"})
        assert r.status in (413, 422) and r.json()["error_type"] == "Validation", r
        assert "nope" in r.json()["error"], r


@pytest.mark.parametrize("normalize", [True, False])
def test_embed_dimensions_truncate_then_normalize(st_server, models, normalize):
    """TEI (core/src/infer.rs, embed_pooled): the embedding is cut to `dimensions`, then
    normalized when `normalize`."""
    raw = alone(models("st"), TEXTS, normalize=False)
    got = st_server.ok("/embed", {"inputs": TEXTS, "dimensions": 8, "normalize": normalize})
    want = raw[:, :8]
    close(got, unit(want) if normalize else want)


def test_embed_truncate_true_cuts_to_the_limit(plain_server, models):
    model = models("plain")
    text = long_text(100)
    full = model.tokenize(text, max_length=-1)["input_ids"]
    cut = model.tokenize(text)["input_ids"]
    assert len(full) > len(cut)
    got = plain_server.ok("/embed", {"inputs": text, "truncate": True, "normalize": False})
    # The library's default for a folder cuts at the same limit, from the end (TEI's Right).
    words = text.split()[: len(cut) - 2]
    assert model.tokenize(" ".join(words))["input_ids"] == cut
    close(got, alone(model, [" ".join(words)], normalize=False))


def test_embed_truncate_false_over_the_limit_is_refused(st_server, models):
    """TEI (core/src/tokenization.rs, encode_input): "`inputs` must have less than {max} tokens.
    Given: {n}", a Validation error; n counts the prompt and the special tokens."""
    with unchanged(st_server):
        model = models("st")
        text = long_text(80)
        limit = len(model.tokenize(text)["input_ids"])
        given = len(model.tokenize("query: " + text, max_length=-1)["input_ids"])
        r = st_server.post("/embed", {"inputs": text, "truncate": False})
        # TEI answers a Validation error with 413 (server.rs, From<&ErrorType> for StatusCode);
        # docs/serving.md lists bad input as 400 or 422.
        assert r.status in (413, 422), r
        body = r.json()
        assert body["error_type"] == "Validation", r
        assert f"must have less than {limit} tokens" in body["error"], r
        assert f"Given: {given}" in body["error"], r


def test_embed_truncation_direction_left(plain_server, models):
    """TEI's truncation_direction "Left" keeps the end of the text: the ids are the full ids
    with the first ones after [CLS] cut away by hand."""
    model = models("plain")
    text = long_text(100, offset=3)
    full = model.tokenize(text, max_length=-1)["input_ids"]
    limit = len(model.tokenize(text)["input_ids"])
    keep = limit - 2
    by_hand = [full[0]] + full[1:-1][-keep:] + [full[-1]]
    cut_text = " ".join(text.split()[-keep:])
    assert model.tokenize(cut_text)["input_ids"] == by_hand
    got = plain_server.ok("/embed", {"inputs": text, "truncate": True,
                                     "truncation_direction": "Left", "normalize": False})
    close(got, alone(model, [cut_text], normalize=False))


# ---------------------------------------------------------------- /v1/embeddings ----------


def _openai_rows(body, count):
    assert body["object"] == "list"
    assert [d["index"] for d in body["data"]] == list(range(count))
    assert all(d["object"] == "embedding" for d in body["data"])
    return [d["embedding"] for d in body["data"]]


def _tokens(model, texts, prompt=""):
    return sum(len(model.tokenize(prompt + t, max_length=-1)["input_ids"]) for t in texts)


def test_openai_string(st_server, models):
    body = st_server.ok("/v1/embeddings", {"input": TEXTS[1], "model": "anything"})
    close(_openai_rows(body, 1), alone(models("st"), TEXTS[1:2], normalize=True))
    # The served name: --served-model-name, else the folder's last path component.
    assert body["model"] == st_server.model_name == "st"
    usage = body["usage"]
    assert usage["prompt_tokens"] == usage["total_tokens"] == _tokens(models("st"), TEXTS[1:2],
                                                                       "query: ")


def test_openai_list(st_server, models):
    body = st_server.ok("/v1/embeddings", {"input": TEXTS, "user": "tester"})
    close(_openai_rows(body, len(TEXTS)), alone(models("st"), TEXTS, normalize=True))
    assert body["usage"]["prompt_tokens"] == _tokens(models("st"), TEXTS, "query: ")


def test_openai_null_options_are_the_defaults(st_server, models):
    """OpenAI's optional fields may come as null from clients: float, full width."""
    body = st_server.ok("/v1/embeddings", {"input": TEXTS[0], "encoding_format": None,
                                           "model": None, "user": None})
    close(_openai_rows(body, 1), alone(models("st"), TEXTS[:1], normalize=True))


def test_openai_token_ids(plain_server, models):
    """Token ids are the input's tokens as given (TEI's EncodingInput::Ids: no special tokens
    added, no prompt); a plain folder's ids of a text embed as that text."""
    model = models("plain")
    ids = model.tokenize(TEXTS[0])["input_ids"]
    body = plain_server.ok("/v1/embeddings", {"input": ids})
    close(_openai_rows(body, 1), unit(alone(model, TEXTS[:1], normalize=False)))
    assert body["usage"]["prompt_tokens"] == len(ids)


def test_openai_lists_of_token_ids(plain_server, models):
    model = models("plain")
    ids = [model.tokenize(t)["input_ids"] for t in TEXTS[:3]]
    body = plain_server.ok("/v1/embeddings", {"input": ids, "encoding_format": "float"})
    close(_openai_rows(body, 3), unit(alone(model, TEXTS[:3], normalize=False)))
    assert body["usage"]["total_tokens"] == sum(map(len, ids))


def test_openai_base64_is_little_endian_float32(st_server, models):
    body = st_server.ok("/v1/embeddings", {"input": TEXTS, "encoding_format": "base64"})
    rows = []
    for s in _openai_rows(body, len(TEXTS)):
        assert isinstance(s, str)
        rows.append(np.frombuffer(base64.b64decode(s, validate=True), dtype="<f4"))
    close(rows, alone(models("st"), TEXTS, normalize=True))


def test_openai_dimensions(st_server, models):
    """OpenAI's `dimensions`: the embedding cut, then normalized again."""
    body = st_server.ok("/v1/embeddings", {"input": TEXTS, "dimensions": 5})
    rows = _openai_rows(body, len(TEXTS))
    assert all(len(r) == 5 for r in rows)
    close(rows, unit(alone(models("st"), TEXTS, normalize=False)[:, :5]))


def test_openai_served_model_name(serve, folders):
    s = serve("st", "--served-model-name", "my-embedder", "--quiet")
    assert s.model_name == "my-embedder"
    assert s.ok("/v1/embeddings", {"input": "hello"})["model"] == "my-embedder"
    assert s.get("/info").json()["served_model_name"] == "my-embedder"


# ---------------------------------------------------------------- /rerank, /predict -------

QUERY = "the cat sat on the mat"
DOCS = ["a cat sat on a mat", "the dog ran far away", "hello world", "red and blue"]


@pytest.mark.parametrize("raw_scores", [False, True])
def test_rerank_sorted_highest_first(cross_server, models, raw_scores):
    want = models("cross").rerank(QUERY, DOCS, raw_scores=raw_scores)
    got = cross_server.ok("/rerank", {"query": QUERY, "texts": DOCS, "raw_scores": raw_scores})
    assert sorted(g["index"] for g in got) == list(range(len(DOCS)))
    scores = [g["score"] for g in got]
    assert scores == sorted(scores, reverse=True)
    close([g["score"] for g in got], [want[g["index"]] for g in got])
    assert all("text" not in g for g in got)
    if not raw_scores:
        assert all(0 < s < 1 for s in scores)


def test_rerank_return_text(cross_server):
    got = cross_server.ok("/rerank", {"query": QUERY, "texts": DOCS, "return_text": True})
    assert all(g["text"] == DOCS[g["index"]] for g in got)


def test_rerank_on_an_embedding_model_is_refused(st_server):
    with unchanged(st_server):
        r = st_server.post("/rerank", {"query": QUERY, "texts": DOCS})
        assert 400 <= r.status < 500, r
        assert r.json()["error"], r


def test_predict_one_and_many(classifier_server, models):
    """TEI's /predict: one input gives [{"label", "score"}] sorted by score, a list of inputs
    a list of those."""
    model = models("classifier")
    labels = model.labels
    one = classifier_server.ok("/predict", {"inputs": TEXTS[0]})
    # TEI's PredictInput (router/src/http/types.rs): a batch is a list of [text] or
    # [text, pair] lists; a flat list of two strings would be one pair.
    many = classifier_server.ok("/predict", {"inputs": [[t] for t in TEXTS[:3]]})
    assert len(many) == 3
    for got, text in [(one, TEXTS[0])] + list(zip(many, TEXTS[:3])):
        want = model.classify([text])[0]
        assert sorted(g["label"] for g in got) == sorted(labels)
        scores = [g["score"] for g in got]
        assert scores == sorted(scores, reverse=True)
        close(scores, [want[labels.index(g["label"])] for g in got])


def test_predict_raw_scores(classifier_server, models):
    probs = models("classifier").classify([TEXTS[1]])[0].astype(np.float64)
    got = classifier_server.ok("/predict", {"inputs": TEXTS[1], "raw_scores": True})
    labels = models("classifier").labels
    logits = np.array([next(g["score"] for g in got if g["label"] == name) for name in labels])
    # softmax(logits) is the library's score; logits only up to a constant.
    close(np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum(), probs)


# ---------------------------------------------------------------- /tokenize, /info, /health


def test_tokenize(plain_server, models):
    """TEI's /tokenize: per input, its tokens {id, text, special, start, stop}."""
    got = plain_server.ok("/tokenize", {"inputs": [TEXTS[0], TEXTS[2]]})
    assert len(got) == 2
    for tokens, t in zip(got, [TEXTS[0], TEXTS[2]]):
        assert [tok["id"] for tok in tokens] == models("plain").tokenize(t)["input_ids"]
        assert [tok["special"] for tok in tokens] == [True] + [False] * (len(tokens) - 2) + [True]
        assert tokens[0]["text"] == "[CLS]" and tokens[-1]["text"] == "[SEP]"
        assert tokens[0]["start"] is None and tokens[0]["stop"] is None
        # Every word of these texts is one token: its text is the word.
        assert [tok["text"] for tok in tokens[1:-1]] == t.replace(".", " .").replace(
            "!", " !").split()


def test_tokenize_offsets(plain_server):
    """TEI's SimpleToken (router/src/http/types.rs, core/src/tokenization.rs into_tokens): a
    token that is not special carries the byte offsets of its text in the input (test_tokens.py
    has texts where bytes and characters differ)."""
    text = TEXTS[0]
    for tok in plain_server.ok("/tokenize", {"inputs": text})[0][1:-1]:
        assert text.encode()[tok["start"]:tok["stop"]].decode() == tok["text"], tok


def test_health(st_server):
    assert st_server.get("/health").status == 200


def test_info(serve, models):
    s = serve("st", "--max-batch-tokens", "4096", "--max-client-batch-size", "7",
              "--max-concurrent-requests", "9", "--quiet")
    info = s.get("/info").json()
    limit = len(models("st").tokenize(long_text(80))["input_ids"])
    assert info["max_input_length"] == limit
    assert info["max_batch_tokens"] == 4096
    assert info["max_client_batch_size"] == 7
    assert info["max_concurrent_requests"] == 9
    assert info["max_batch_requests"] is None  # TEI's Info: null when not set
    assert info["served_model_name"] == s.model_name
    assert info["model_id"]
    assert "model_dtype" in info and "model_type" in info


def test_info_defaults_are_teis(st_server):
    """TEI's router/src/main.rs defaults: 16384 batch tokens, 32 inputs a request, 512
    concurrent requests."""
    info = st_server.get("/info").json()
    assert (info["max_batch_tokens"], info["max_client_batch_size"],
            info["max_concurrent_requests"]) == (16384, 32, 512)


@pytest.mark.parametrize("path", ["/health", "/info", "/metrics"])
def test_head_is_get_without_the_body(st_server, path):
    """RFC 9110 9.3.2; load balancers probe with HEAD. A second request on the same connection
    starts right after the first one's headers: no body was sent."""
    get = st_server.get(path)
    assert get.status == 200, get
    raw = (f"HEAD {path} HTTP/1.1\r\nHost: localhost\r\n\r\n"
           "GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").encode()
    data, closed = rawhttp.exchange(st_server, raw)
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), data[:300]
    length = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    if path != "/metrics":  # its counters move between the two requests
        assert length == [b"Content-Length: %d" % len(get.body.encode())], head
    assert rest.startswith(b"HTTP/1.1 200 "), data[:600]
    assert closed


def test_head_on_a_post_route_is_405(st_server):
    with unchanged(st_server):
        r = rawhttp.send(st_server, rawhttp.request_bytes("HEAD", "/embed"))
        assert r is not None and r.status == 405 and r.headers["allow"] == "POST", r
        r = rawhttp.send(st_server, rawhttp.request_bytes("POST", "/health", {}))
        assert r is not None and r.status == 405 and r.headers["allow"] == "GET, HEAD", r
