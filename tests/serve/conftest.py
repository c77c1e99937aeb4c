"""Shared fixtures of the `vkbert serve` tests: the model folders (python/tests/folder.py), the
library's own results through the vkbert package to compare with, and servers started on a free
loopback port (`--port 0`) whose teardown checks the graceful exit (SIGTERM: exit 0, `vkbert
serve: stopped` last)."""

import contextlib
import http.client
import importlib.util
import json
import os
import re
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import rawhttp
import vkbert

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location(
    "folder", os.path.join(ROOT, "python", "tests", "folder.py"))
folder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(folder)

# fp32 on the device, batched or alone: the same sums in another order.
RTOL, ATOL = 1e-4, 1e-5

# Words of folder.VOCAB that are one token each, so a text cut by words is its ids cut by hand.
WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "away", "hello", "world",
         "big", "small", "red", "blue", "run", "fast", "slow", "and", "or", "is", "was", "good"]
TEXTS = [
    "the cat sat on the mat.",
    "a dog ran far away!",
    "hello",
    "the big red dog and the small blue cat was running very fast , or slow .",
    "it was good",
]

LISTENING = re.compile(r"^vkbert serve: listening on http://(\S+):(\d+) \(model (.+) on (.+)\)$")
LOG_LINE = re.compile(r"^(GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH) (\S+) (\d{3}) (\d+) tokens "
                      r"(\d+\.\d) ms$")
STOPPED = "vkbert serve: stopped"


def long_text(words, offset=0):
    """A text of `words` one-token words."""
    return " ".join(WORDS[(offset + i) % len(WORDS)] for i in range(words))


def cli_path():
    path = os.environ.get("VKBERT_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("no vkbert program to serve with (set VKBERT_CLI)")
    return path


@pytest.fixture(scope="session")
def folders(tmp_path_factory):
    return folder.write_test_folders(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def models(folders):
    """The library's own models, by folder key: what every route is compared with."""
    opened = {}

    def get(key):
        if key not in opened:
            opened[key] = vkbert.Model(folders[key])
        return opened[key]

    yield get
    for m in opened.values():
        m.close()


Response = rawhttp.RawResponse


class Server:
    """One `vkbert serve` process. Its stderr is read by a thread into self.lines."""

    def __init__(self, model, args=(), env=None):
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.args = [cli_path(), "serve", "--model", model, "--port", "0", *args]
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=full_env)
        self.lines, self.lock = [], threading.Lock()
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not self.ready.wait(120) or self.port is None:
            self.proc.kill()
            self.proc.wait()
            self.reader.join(5)
            raise AssertionError(f"{self.args} printed no listening line: {self.text()}")
        self.pid = self.proc.pid
        self.stopped = self.signalled = self.checked = False

    port = None

    def _read(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self.lock:
                self.lines.append(line)
            m = LISTENING.match(line)
            if m and self.port is None:
                self.host, self.port = m.group(1), int(m.group(2))
                self.model_name, self.devices = m.group(3), m.group(4)
                self.ready.set()
        self.ready.set()

    def text(self):
        with self.lock:
            return "\n".join(self.lines)

    def log_lines(self):
        with self.lock:
            return [LOG_LINE.match(line) for line in self.lines if LOG_LINE.match(line)]

    @property
    def url(self):
        return f"http://{self.host}:{self.port}"

    def request(self, method, path, body=None, headers=None, timeout=120):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            if body is not None and not isinstance(body, (bytes, str)):
                body = json.dumps(body)
            hdrs = {"Content-Type": "application/json"} if body is not None else {}
            hdrs.update(headers or {})
            conn.request(method, path, body=body, headers=hdrs)
            r = conn.getresponse()
            data = r.read()
            return Response(r.status, dict(r.getheaders()), data.decode("utf-8", "replace"), data)
        finally:
            conn.close()

    def post(self, path, body, headers=None):
        return self.request("POST", path, body, headers)

    def get(self, path, headers=None):
        return self.request("GET", path, None, headers)

    def ok(self, path, body):
        """POST, asserting 200; the parsed JSON."""
        r = self.post(path, body)
        assert r.status == 200, r
        return r.json()

    def metrics(self):
        r = self.get("/metrics")
        assert r.status == 200, r
        return parse_prometheus(r.body)

    def rss_kib(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def sanitized(self):
        """Whether the process runs under AddressSanitizer (.ci/sanitize.sh's serve_asan): its
        runtime, clang's or gcc's shared one, is mapped."""
        with open(f"/proc/{self.pid}/maps") as f:
            return any("libclang_rt.asan" in line or "libasan.so" in line for line in f)

    def terminate(self):
        """SIGTERM, once: a second one during the shutdown may end the process at once."""
        if not self.signalled:
            self.signalled = True
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout=120):
        """SIGTERM (unless sent already) and the wait; the exit code."""
        if self.stopped:
            return self.proc.returncode
        self.stopped = True
        self.terminate()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"no exit {timeout} s after SIGTERM: {self.text()}")
        self.reader.join(10)
        return code

    def assert_graceful_stop(self):
        """Once per server: a test that checked it leaves nothing for the fixture."""
        if self.checked:
            return
        self.checked = True
        code = self.stop()
        assert code == 0, f"exit {code} after SIGTERM: {self.text()}"
        with self.lock:
            last = self.lines[-1] if self.lines else ""
        assert last == STOPPED, f"last line {last!r}, not {STOPPED!r}: {self.text()}"


@pytest.fixture
def serve(folders):
    """serve(key or path, *flags, env=None): a started server; every one is stopped with SIGTERM
    at teardown, which must exit 0 printing `vkbert serve: stopped` last."""
    started = []

    def start(model, *args, env=None):
        s = Server(folders.get(model, model), args, env)
        started.append(s)
        return s

    yield start
    errors = []
    for s in started:
        try:
            s.assert_graceful_stop()
        except AssertionError as e:
            errors.append(str(e))
    assert not errors, "\n".join(errors)


def _module_server(folders, key, *args):
    s = Server(folders[key], args)
    yield s
    s.assert_graceful_stop()


@pytest.fixture(scope="module")
def st_server(folders):
    yield from _module_server(folders, "st", "--quiet")


@pytest.fixture(scope="module")
def plain_server(folders):
    yield from _module_server(folders, "plain", "--quiet")


@pytest.fixture(scope="module")
def cross_server(folders):
    yield from _module_server(folders, "cross", "--quiet")


@pytest.fixture(scope="module")
def classifier_server(folders):
    yield from _module_server(folders, "classifier", "--quiet")


# ---------------------------------------------------------------- Prometheus text ---------

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$')
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')


def _labels(text):
    out, pos = {}, 0
    while pos < len(text):
        m = _LABEL.match(text, pos)
        assert m, f"bad labels {text!r}"
        out[m.group(1)] = m.group(2)
        pos = m.end()
    return out


def parse_prometheus(text):
    """The text exposition format 0.0.4: every line a comment (# HELP, # TYPE with a known
    type), blank, or `name{labels} value`. Returns {"types": {name: type}, "samples": [(name,
    labels, value)]}; any other line fails the test."""
    types, samples = {}, []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 2 and parts[1] == "TYPE":
                assert len(parts) == 4 and parts[3] in (
                    "counter", "gauge", "histogram", "summary", "untyped"), line
                types[parts[2]] = parts[3]
            continue
        m = _SAMPLE.match(line)
        assert m, f"not a Prometheus sample: {line!r}"
        value = float(m.group(4))  # also takes +Inf, -Inf, NaN
        samples.append((m.group(1), _labels(m.group(3) or ""), value))
    return {"types": types, "samples": samples}


def metric(parsed, name, **labels):
    """The sum of the samples named `name` whose labels include `labels`."""
    return sum(v for n, lab, v in parsed["samples"]
               if n == name and all(lab.get(k) == str(x) for k, x in labels.items()))


def histogram_count(parsed, name, le=None):
    """A histogram's _count, or its bucket le (a cumulative count) when given."""
    if le is None:
        return metric(parsed, name + "_count")
    for n, lab, v in parsed["samples"]:
        if n == name + "_bucket" and float(lab["le"]) == float(le):
            return v
    raise AssertionError(f"{name} has no bucket le={le}")


def unit(rows):
    rows = np.asarray(rows, dtype=np.float64)
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def close(got, want):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                               np.asarray(want, dtype=np.float64), rtol=RTOL, atol=ATOL)


def error_body(r, types=None):
    """TEI's {"error": message, "error_type": type}; the message."""
    body = r.json()
    assert isinstance(body.get("error"), str) and body["error"], r
    allowed = types or ("Validation", "Tokenizer", "Backend", "Overloaded", "Empty", "Unhealthy")
    assert body.get("error_type") in allowed, r
    return body["error"]


def openai_error(r):
    """OpenAI's {"error": {"message", "type", "code"}}; the message."""
    body = r.json()
    err = body.get("error")
    assert isinstance(err, dict), r
    assert isinstance(err.get("message"), str) and err["message"], r
    assert isinstance(err.get("type"), str), r
    assert "code" in err, r
    return err["message"]


def still_serves(server, models):
    """After any bad request: a good one answers what the library computes."""
    got = server.ok("/embed", {"inputs": TEXTS[0]})
    close(got, models("st").embed([TEXTS[0]], normalize=True))
    assert server.get("/health").status == 200


# A fixed normal request per kind of model (GET /info's model_type), the probes `unchanged`
# sends before and after an attack.
PROBES = {
    "embedding": [("/embed", {"inputs": TEXTS[:3]}), ("/v1/embeddings", {"input": TEXTS[:3]})],
    "reranker": [("/rerank", {"query": TEXTS[0], "texts": TEXTS[1:4]})],
    "classifier": [("/predict", {"inputs": TEXTS[0]})],
}


def probe(server):
    """/health answers 200; {path: raw body bytes} of the server's probes, each sent alone."""
    r = server.get("/health")
    assert r.status == 200, r
    (kind,) = server.get("/info").json()["model_type"]
    answers = {}
    for path, body in PROBES[kind]:
        r = server.post(path, body)
        assert r.status == 200, (path, r)
        answers[path] = r.raw
    return answers


@contextlib.contextmanager
def unchanged(server):
    """Around an attack: the same process sent the same request alone in its batch answers the
    same bytes after as before, and /health still answers."""
    before = probe(server)
    yield
    for path, after in probe(server).items():
        assert after == before[path], \
            f"{path} answers other bytes after the attack: {before[path][:200]!r}, {after[:200]!r}"


def wait_for(predicate, timeout=30, every=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(every)
    return predicate()
