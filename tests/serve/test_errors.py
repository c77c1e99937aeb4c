"""Bad input through the sockets-only client and plain HTTP: every answer is TEI's error body
(OpenAI's on /v1/embeddings) with TEI's status, and the server goes on serving correctly."""

import json
import threading
import time

import numpy as np
import pytest

import rawhttp
import vkbert
from conftest import (TEXTS, close, error_body, folder, openai_error, still_serves, unchanged,
                      unit)

# TEI's ErrorType -> status (router/src/http/server.rs, From<&ErrorType> for StatusCode): Empty 400,
# Tokenizer 422, Backend 424, Overloaded 429, Unhealthy 503. Validation is 413 in TEI;
# docs/serving.md lists bad input as 400 or 422, so a Validation error may be either of 413/422.
BAD_INPUT = (400, 422)
VALIDATION = (413, 422)


@pytest.mark.parametrize("path", ["/embed", "/tokenize"])
@pytest.mark.parametrize("body", [b'{"inputs": ', b"not json", b"", b"[1, 2", b'{"inputs": "a"}}'])
def test_malformed_json(st_server, models, path, body):
    with unchanged(st_server):
        r = rawhttp.send(st_server, rawhttp.request_bytes("POST", path, body,
                                                          length=len(body)))
        assert r is not None and r.status in BAD_INPUT, r
        error_body(r)
        still_serves(st_server, models)


def test_malformed_json_openai_shape(st_server, models):
    with unchanged(st_server):
        r = rawhttp.send(st_server, rawhttp.request_bytes("POST", "/v1/embeddings", b"{oops"))
        assert r is not None and r.status in BAD_INPUT, r
        openai_error(r)
        still_serves(st_server, models)


@pytest.mark.parametrize("body", [
    {"inputs": 5}, {"inputs": [1.5]}, {"inputs": {"a": 1}}, {"inputs": ["ok", 3]},
    {"inputs": "ok", "normalize": "yes"}, {"inputs": "ok", "truncate": 1},
    {"inputs": "ok", "truncation_direction": "Up"}, {"inputs": "ok", "dimensions": "8"},
    {"inputs": "ok", "dimensions": 0}, {"inputs": "ok", "dimensions": 100000},
    {"text": "no inputs field"}, [1, 2], "just a string",
])
def test_wrong_types_on_embed(st_server, models, body):
    with unchanged(st_server):
        r = st_server.post("/embed", body)
        assert r.status in BAD_INPUT + VALIDATION, r
        error_body(r)


@pytest.mark.parametrize("body", [
    {"input": 5}, {"input": [[1, "a"]]}, {"input": [-1]}, {"input": "ok", "encoding_format": "hex"},
    {"input": "ok", "dimensions": -3}, {"model": "m"}, {"input": [[0.5]]},
])
def test_wrong_types_on_openai(st_server, body):
    with unchanged(st_server):
        r = st_server.post("/v1/embeddings", body)
        assert r.status in BAD_INPUT + VALIDATION, r
        openai_error(r)


def test_token_id_outside_the_vocabulary(plain_server):
    with unchanged(plain_server):
        r = plain_server.post("/v1/embeddings", {"input": [2, 100000, 3]})
        assert r.status in BAD_INPUT + VALIDATION, r
        openai_error(r)


@pytest.mark.parametrize("body", [{"query": "q"}, {"query": 1, "texts": ["a"]},
                                  {"query": "q", "texts": "a"}, {"query": "q", "texts": [1]}])
def test_wrong_types_on_rerank(cross_server, body):
    with unchanged(cross_server):
        r = cross_server.post("/rerank", body)
        assert r.status in BAD_INPUT + VALIDATION, r
        error_body(r)


def test_invalid_utf8(st_server, models):
    with unchanged(st_server):
        for path in ("/embed", "/tokenize", "/v1/embeddings"):
            key = "input" if path == "/v1/embeddings" else "inputs"
            body = b'{"' + key.encode() + b'": "caf\xc3 \xff\xfe bad"}'
            r = rawhttp.send(st_server, rawhttp.request_bytes("POST", path, body))
            assert r is not None and r.status in BAD_INPUT + VALIDATION, r
            (openai_error if path == "/v1/embeddings" else error_body)(r)
        still_serves(st_server, models)


def test_empty_input(st_server, models):
    """TEI: an empty list is ErrorType::Empty (400); an empty string is refused too."""
    with unchanged(st_server):
        r = st_server.post("/embed", {"inputs": []})
        assert r.status == 400 and r.json()["error_type"] == "Empty", r
        r = st_server.post("/v1/embeddings", {"input": []})
        assert r.status == 400, r
        openai_error(r)
        for body in ({"inputs": ""}, {"inputs": ["ok", ""]}):
            r = st_server.post("/embed", body)
            assert r.status in BAD_INPUT + VALIDATION, r
            assert r.json()["error_type"] in ("Empty", "Validation"), r
        still_serves(st_server, models)


def test_over_max_client_batch_size(serve, models):
    """TEI: "batch size {n} > maximum allowed batch size {max}", a Validation error."""
    s = serve("st", "--max-client-batch-size", "3", "--quiet")
    with unchanged(s):
        r = s.post("/embed", {"inputs": TEXTS[:4]})
        assert r.status in VALIDATION, r
        assert r.json()["error_type"] == "Validation", r
        assert "batch size 4 > maximum allowed batch size 3" in r.json()["error"], r
        r = s.post("/v1/embeddings", {"input": TEXTS[:4]})
        assert r.status in VALIDATION, r
        assert "batch size 4 > maximum allowed batch size 3" in openai_error(r)
        close(s.ok("/embed", {"inputs": TEXTS[:3]}),
              unit(models("st").embed(TEXTS[:3], normalize=False)))


def test_payload_limit_413(serve, models):
    s = serve("st", "--payload-limit", "1000", "--quiet")
    with unchanged(s):
        body = json.dumps({"inputs": ["the cat sat on the mat"] * 60}).encode()
        assert len(body) > 1000
        r = rawhttp.send(s, rawhttp.request_bytes("POST", "/embed", body))
        assert r is not None and r.status == 413, r
        r = s.post("/embed", {"inputs": TEXTS[:2]})
        assert r.status == 200, r


def test_content_length_lies(st_server, models):
    # Longer than what comes, then the client stops sending: an error or a close, never a hang.
    with unchanged(st_server):
        with rawhttp.connect(st_server, timeout=60) as sock:
            sock.sendall(rawhttp.request_bytes("POST", "/embed", b'{"inputs": "hi"}', length=500))
            sock.shutdown(rawhttp.socket.SHUT_WR)
            r = rawhttp.read_response(sock)
        assert r is None or 400 <= r.status < 500, r
        # Shorter than what comes: the first bytes are the body, and they are not JSON.
        r = rawhttp.send(st_server, rawhttp.request_bytes("POST", "/embed", b'{"inputs": "hi"}',
                                                          length=5))
        assert r is not None and r.status in BAD_INPUT, r
        # Not a number.
        r = rawhttp.send(st_server, rawhttp.request_bytes("POST", "/embed", b'{"inputs": "hi"}',
                                                          length="lots"))
        assert r is None or 400 <= r.status < 500, r
        still_serves(st_server, models)


def test_unknown_route_404_and_wrong_method_405(st_server):
    with unchanged(st_server):
        assert st_server.get("/nothing/here").status == 404
        assert st_server.post("/v2/embeddings", {"input": "a"}).status == 404
        assert st_server.get("/embed").status == 405
        assert st_server.post("/health", {}).status == 405
        r = rawhttp.send(st_server, rawhttp.request_bytes("DELETE", "/rerank"))
        assert r is not None and r.status == 405, r


def test_api_key(serve, models):
    """TEI: with --api-key every model route wants `Authorization: Bearer KEY`, else 401."""
    s = serve("st", "--api-key", "s3cret", "--quiet")
    assert s.post("/embed", {"inputs": "hello"}).status == 401
    assert s.post("/embed", {"inputs": "hello"},
                  {"Authorization": "Bearer wrong"}).status == 401
    assert s.post("/v1/embeddings", {"input": "hello"},
                  {"Authorization": "s3cret"}).status == 401
    r = s.post("/embed", {"inputs": "hello"}, {"Authorization": "Bearer s3cret"})
    assert r.status == 200, r
    close(r.json(), models("st").embed(["hello"], normalize=True))
    # TEI's public routes (server.rs): /health and /metrics need no key (probes, scrapers);
    # /info is behind it.
    assert s.get("/health").status == 200
    assert s.get("/metrics").status == 200
    assert s.get("/info").status == 401
    assert s.get("/info", {"Authorization": "Bearer s3cret"}).status == 200


def test_slow_client_does_not_hold_up_others(st_server, models):
    """A request sent one byte every 10 ms (about 2 s) while other clients are answered."""
    with unchanged(st_server):
        raw = rawhttp.request_bytes("POST", "/embed", {"inputs": [TEXTS[1]]})
        result = {}
        slow = threading.Thread(target=lambda: result.update(r=rawhttp.send_slowly(st_server, raw,
                                                                                     0.01)))
        slow.start()
        time.sleep(0.2)
        done = 0
        while slow.is_alive() and done < 5:
            start = time.monotonic()
            close(st_server.ok("/embed", {"inputs": TEXTS[0]}),
                  models("st").embed([TEXTS[0]], normalize=True))
            assert time.monotonic() - start < 1.5
            done += 1
        assert done >= 3 and slow.is_alive(), "the others should finish while the slow one sends"
        slow.join(60)
        r = result["r"]
        assert r is not None and r.status == 200, r
        close(r.json(), models("st").embed([TEXTS[1]], normalize=True))


def test_client_disconnects_mid_request(st_server, models):
    with unchanged(st_server):
        raw = rawhttp.request_bytes("POST", "/embed", {"inputs": TEXTS})
        for cut in (10, len(raw) // 2, len(raw) - 3):
            with rawhttp.connect(st_server) as sock:
                sock.sendall(raw[:cut])
        # And one that hangs up before reading its answer.
        with rawhttp.connect(st_server) as sock:
            sock.sendall(raw)
        still_serves(st_server, models)


@pytest.mark.parametrize("path,body", [
    ("/embed", b'{"inputs": "the cat", "inputs": "a dog ran far away"}'),
    ("/v1/embeddings", b'{"input": "the cat", "dimensions": 4, "input": "hello"}'),
])
def test_duplicate_field_is_refused(st_server, models, path, body):
    """serde's derived structs refuse a field given twice (422 through axum); taking either
    copy would answer a request another reader of the same body sees differently."""
    with unchanged(st_server):
        r = rawhttp.send(st_server, rawhttp.request_bytes("POST", path, body))
        assert r is not None and r.status == 422, r
        message = (r.json()["error"]["message"] if path.startswith("/v1") else r.json()["error"])
        assert "duplicate field" in message, r
        still_serves(st_server, models)


def _largest_batch(make_body, item, limit=2_000_000):
    """The body with the most copies of `item` under the default payload limit."""
    n = limit // (len(json.dumps(item)) + 2)
    body = json.dumps(make_body([item] * n)).encode()
    while len(body) > limit:
        n -= 1000
        body = json.dumps(make_body([item] * n)).encode()
    return body


@pytest.mark.parametrize("server,path,make_body,item", [
    ("classifier_server", "/predict", lambda xs: {"inputs": xs}, ["a"]),
    ("st_server", "/embed", lambda xs: {"inputs": xs}, "a"),
    ("st_server", "/tokenize", lambda xs: {"inputs": xs}, "a"),
    ("st_server", "/v1/embeddings", lambda xs: {"input": xs}, "a"),
    ("cross_server", "/rerank", lambda xs: {"query": "q", "texts": xs}, "a"),
])
def test_a_huge_batch_is_refused_at_once(request, models, server, path, make_body, item):
    """A body just under the payload limit holds ~300k inputs: the batch size is checked before
    any of them is read (an indexed walk of cJSON's list took minutes)."""
    s = request.getfixturevalue(server)
    with unchanged(s):
        body = _largest_batch(make_body, item)
        with rawhttp.connect(s, timeout=30) as sock:
            start = time.monotonic()
            sock.sendall(rawhttp.request_bytes("POST", path, body))
            r = rawhttp.read_response(sock)
            took = time.monotonic() - start
        assert r is not None and r.status == 413, r
        assert "maximum allowed batch size 32" in r.body, r
        assert took < 2, f"{path}: {took:.3f} s to refuse {len(body)} bytes"
        print(f"{path}: 413 after {took * 1000:.1f} ms")
        assert s.get("/health").status == 200
        assert s.post(path, make_body([item] * 2)).status == 200
        if server == "st_server":
            still_serves(s, models)


def test_half_close_after_the_request(st_server, models):
    """A half-close reads as the same FIN as a close: the request is taken as gone
    (docs/serving.md), or answered if it ran first; either way the server goes on."""
    with unchanged(st_server):
        with rawhttp.connect(st_server, timeout=30) as sock:
            sock.sendall(rawhttp.request_bytes("POST", "/embed", {"inputs": TEXTS[:2]}))
            sock.shutdown(rawhttp.socket.SHUT_WR)
            r = rawhttp.read_response(sock)
        assert r is None or r.status == 200, r
        still_serves(st_server, models)


def _infinite_world(tensors):
    """The word "world" embedded as infinity: only the texts holding it come out NaN (the
    probes hold none)."""
    tensors["embeddings.word_embeddings.weight"][folder.VOCAB.index("world")] = np.inf


def test_non_finite_rows_fail_only_their_request(serve, tmp_path):
    """Requests sent together, likely in one batch: those with a non-finite row get TEI's
    Backend error (424), the others their embeddings."""
    path = folder.write_bert(str(tmp_path / "inf"), seed=3, edit=_infinite_world)
    s = serve(path, "--quiet")
    calls = [("/embed", {"inputs": ["hello", "hello world"]}, 424),
             ("/v1/embeddings", {"input": "big world"}, 424),
             ("/embed", {"inputs": TEXTS[0], "normalize": False}, 200),
             ("/v1/embeddings", {"input": [TEXTS[2]]}, 200)] * 2
    out = [None] * len(calls)
    start = threading.Barrier(len(calls))

    def client(k):
        start.wait()
        out[k] = s.post(calls[k][0], calls[k][1])

    with unchanged(s), vkbert.Model(path) as model:
        threads = [threading.Thread(target=client, args=(k,)) for k in range(len(calls))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for (route, body, status), r in zip(calls, out):
            assert r.status == status, (route, body, r)
            if status == 424:
                message = (openai_error(r) if route.startswith("/v1")
                           else error_body(r, ("Backend",)))
                assert "non-finite values (inf or NaN)" in message, r
            elif route == "/embed":
                close(r.json(), model.embed([TEXTS[0]]))
            else:
                close([r.json()["data"][0]["embedding"]], model.embed([TEXTS[2]], normalize=True))
