"""Real clients: curl with the README's example requests, and Node (its global fetch and the
official `openai` npm package, tests/serve/node) against numbers the library computes here."""

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import TEXTS, close, unit

NODE_DIR = os.path.join(os.path.dirname(__file__), "node")
QUERY = "the cat sat on the mat"
DOCS = ["a cat sat on a mat", "the dog ran far away", "hello world"]


def curl(server, method, path, body=None):
    curl_path = shutil.which("curl")
    if not curl_path:
        pytest.skip("curl is not installed (Debian: curl)")
    args = [curl_path, "-sS", "-X", method, "-w", "\n%{http_code}", server.url + path]
    if body is not None:
        args += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text, _, code = done.stdout.rpartition("\n")
    return int(code), text


def test_curl_embed(st_server, models):
    code, text = curl(st_server, "POST", "/embed", {"inputs": "What is Vulkan?"})
    assert code == 200, text
    close(json.loads(text), models("st").embed(["What is Vulkan?"], normalize=True))


def test_curl_openai_embeddings(st_server, models):
    code, text = curl(st_server, "POST", "/v1/embeddings",
                      {"input": ["What is Vulkan?", "hello world"], "model": "st"})
    assert code == 200, text
    rows = [d["embedding"] for d in json.loads(text)["data"]]
    close(rows, np.stack([models("st").embed([t], normalize=True)[0]
                          for t in ["What is Vulkan?", "hello world"]]))


def test_curl_rerank(cross_server, models):
    code, text = curl(cross_server, "POST", "/rerank", {"query": QUERY, "texts": DOCS})
    assert code == 200, text
    want = models("cross").rerank(QUERY, DOCS)
    got = json.loads(text)
    assert [g["index"] for g in got] == list(np.argsort(-want, kind="stable"))
    close([g["score"] for g in got], [want[g["index"]] for g in got])


def test_curl_health(st_server):
    code, _ = curl(st_server, "GET", "/health")
    assert code == 200


def _node():
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed (Debian: nodejs)")
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "openai")):
        pytest.skip("the openai npm package is not installed (npm ci --prefix tests/serve/node)")
    return node


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
    done = subprocess.run([node, "--test", "--test-reporter=tap", "openai.test.mjs"], cwd=NODE_DIR, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout and "# pass 0" not in done.stdout, done.stdout
