"""Real clients: curl with the example requests of docs/serving.md (read from the page), and Node
(its global fetch and the official `openai` npm package, tests/serve/node) against numbers the
library computes here."""

import json
import os
import resource
import shlex
import shutil
import subprocess

import numpy as np
import pytest

from conftest import ROOT, TEXTS, close, unit

NODE_DIR = os.path.join(os.path.dirname(__file__), "node")
QUERY = "the cat sat on the mat"
DOCS = ["a cat sat on a mat", "the dog ran far away", "hello world"]


SERVING_DOC = os.path.join(ROOT, "docs", "serving.md")


def _curl_path():
    path = shutil.which("curl")
    if not path:
        pytest.skip("curl is not installed (Debian: curl)")
    return path


def run_curl(args):
    """curl with `args`; (HTTP status, body)."""
    done = subprocess.run([_curl_path(), *args, "-w", "\n%{http_code}"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text, _, code = done.stdout.rpartition("\n")
    return int(code), text


def documented_curl(server, route):
    """docs/serving.md's example request to `route` (the page's first sh block), sent as it is
    written but to this server: (HTTP status, body, the request's JSON)."""
    with open(SERVING_DOC, encoding="utf-8") as f:
        section = f.read()
    start = section.index("```sh\n") + len("```sh\n")
    block = section[start:section.index("```", start)].replace("\\\n", " ")
    for line in block.splitlines():
        args = shlex.split(line, comments=True)
        if args[:1] == ["curl"] and any(a.endswith(":8080" + route) for a in args):
            args = [a.replace("localhost:8080", f"{server.host}:{server.port}") for a in args[1:]]
            code, body = run_curl(args)
            return code, body, json.loads(args[args.index("-d") + 1])
    raise AssertionError(f"docs/serving.md has no curl example for {route}")


def test_curl_documented_embed(st_server, models):
    code, text, request = documented_curl(st_server, "/embed")
    assert code == 200, text
    close(json.loads(text), np.stack([models("st").embed([t], normalize=True)[0]
                                      for t in request["inputs"]]))


def test_curl_documented_openai_embeddings(st_server, models):
    code, text, request = documented_curl(st_server, "/v1/embeddings")
    assert code == 200, text
    body = json.loads(text)
    texts = [request["input"]] if isinstance(request["input"], str) else request["input"]
    close([d["embedding"] for d in body["data"]],
          np.stack([models("st").embed([t], normalize=True)[0] for t in texts]))


def test_curl_documented_rerank(cross_server, models):
    code, text, request = documented_curl(cross_server, "/rerank")
    assert code == 200, text
    want = models("cross").rerank(request["query"], request["texts"])
    got = json.loads(text)
    # Sorted by score, highest first; equal scores (texts of the same ids) in either order.
    assert sorted(g["index"] for g in got) == list(range(len(request["texts"])))
    assert [g["score"] for g in got] == sorted((g["score"] for g in got), reverse=True)
    close([g["score"] for g in got], [want[g["index"]] for g in got])


def test_curl_health(st_server):
    code, _ = run_curl(["-s", st_server.url + "/health"])
    assert code == 200


def _node():
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed (Debian: nodejs)")
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "openai")):
        pytest.skip("the openai npm package is not installed (npm ci --prefix tests/serve/node)")
    return node


def _all_the_address_space():
    """Node's fetch compiles its HTTP parser to WebAssembly, whose memory reserves guard regions
    of several GB of address space: under a soft RLIMIT_AS (.ci/swiftshader.sh caps the suite's
    at 8 GB) it fails. The client, not the server under test, gets the hard limit."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def test_node_openai_client_and_fetch(serve, models, tmp_path):
    """The JS side (node/openai.test.mjs) compares what it gets with these numbers."""
    node = _node()
    st = serve("st", "--quiet")
    cross = serve("cross", "--quiet")
    m = models("st")
    raw = np.stack([m.embed([t], normalize=False)[0] for t in TEXTS])
    expected = {
        "embed_url": st.url, "rerank_url": cross.url, "model": st.model_name,
        "texts": TEXTS,
        "embeddings": unit(raw).tolist(),
        "dimensions": 6, "embeddings_dim": unit(raw[:, :6]).tolist(),
        "query": QUERY, "docs": DOCS,
        "rerank": models("cross").rerank(QUERY, DOCS).astype(float).tolist(),
        "rtol": 1e-4, "atol": 1e-5,
    }
    path = tmp_path / "expected.json"
    path.write_text(json.dumps(expected))
    env = dict(os.environ, VKBERT_SERVE_EXPECTED=str(path))
    done = subprocess.run([node, "--test", "--test-reporter=tap", "openai.test.mjs"], cwd=NODE_DIR,
                          env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=_all_the_address_space)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout and "# pass 0" not in done.stdout, done.stdout
