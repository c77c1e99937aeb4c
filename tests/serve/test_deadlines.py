"""Deadlines that keep the server answering: a total one for receiving a request (a client
trickling its headers a byte at a time never holds a connection past it), the connections one
client address may hold, and the drain after SIGTERM, kept whatever is in flight. Loopback only,
with small limits, so that each test takes seconds."""

import select
import socket
import threading
import time

import numpy as np

import rawhttp
from conftest import TEXTS, close, long_text, unchanged, unit

HEALTH = b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"


def health_from(s, source):
    """GET /health from the loopback address `source`; (response, seconds taken)."""
    start = time.monotonic()
    with socket.socket() as sock:
        sock.settimeout(5)
        sock.bind((source, 0))
        sock.connect((s.host, s.port))
        sock.sendall(HEALTH)
        r = rawhttp.read_response(sock)
    return r, time.monotonic() - start


def closed(sock):
    """Whether the server has closed the socket (end of file or a reset)."""
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        return sock.recv(1) == b""
    except OSError:
        return True


def test_slow_headers_are_cut_at_the_request_deadline(serve, models):
    """More connections than one address may hold, each sending a partial header and then a
    byte every 0.2 s (never idle long enough for the idle timeout): /health still answers at
    once from another address, every slow connection is closed by the 1 s request deadline
    however busy it keeps, and the server answers as before afterwards."""
    s = serve("st", "--quiet", "--max-concurrent-requests", "4", "--max-connections-per-ip", "6",
              env={"VKBERT_SERVE_REQUEST_DEADLINE_MS": "1000"})
    with unchanged(s):
        slow = [rawhttp.connect(s, timeout=5) for _ in range(10)]
        opened = time.monotonic()
        for sock in slow:
            try:
                sock.sendall(b"POST /embed HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
            except OSError:
                pass  # past the per-address limit: closed at once
        stop = threading.Event()

        def trickle():
            while not stop.wait(0.2):
                for sock in slow:
                    try:
                        sock.send(b"a")
                    except OSError:
                        pass

        feeder = threading.Thread(target=trickle)
        feeder.start()
        try:
            r, took = health_from(s, "127.0.0.2")
            assert r is not None and r.status == 200 and took < 2, (r, took)
            while not all(closed(sock) for sock in slow) and time.monotonic() - opened < 10:
                time.sleep(0.05)
            waited = time.monotonic() - opened
            all_closed = all(closed(sock) for sock in slow)
        finally:
            stop.set()
            feeder.join()
            for sock in slow:
                sock.close()
        assert all_closed and waited < 3, \
            f"the slow connections were closed only after {waited:.1f} s"
        r, took = health_from(s, "127.0.0.1")
        assert r is not None and r.status == 200 and took < 2, (r, took)
        close(s.ok("/embed", {"inputs": TEXTS}), models("st").embed(TEXTS, normalize=True))


def test_a_request_in_time_is_answered(serve, models):
    """A body sent in pieces within the request deadline is answered as usual."""
    s = serve("st", "--quiet", "--request-deadline-ms", "2000")
    with unchanged(s):
        raw = rawhttp.request_bytes("POST", "/embed", {"inputs": TEXTS[0]})
        with rawhttp.connect(s, timeout=10) as sock:
            for i in range(0, len(raw), len(raw) // 4 + 1):
                sock.sendall(raw[i:i + len(raw) // 4 + 1])
                time.sleep(0.1)
            r = rawhttp.read_response(sock)
        assert r is not None and r.status == 200, r
        close(r.json(), models("st").embed([TEXTS[0]], normalize=True))


def test_sigterm_keeps_the_drain_deadline(serve, models):
    """SIGTERM with a body trickling in (the request deadline set far off) and big requests in
    flight: the process exits 0 within the 1 s drain deadline and a few seconds, each big
    request answered correctly, refused with 503, or closed, never left hanging."""
    s = serve("st", "--quiet", "--drain-deadline-ms", "1000", "--request-deadline-ms", "60000")
    texts = [long_text(120, offset=k) for k in range(32)]
    raw = rawhttp.request_bytes("POST", "/embed", {"inputs": TEXTS})
    trickled = rawhttp.connect(s, timeout=30)
    trickled.sendall(raw[:len(raw) // 2])
    out = []

    def client():
        try:
            out.append(s.request("POST", "/embed", {"inputs": texts}, timeout=30))
        except OSError:
            out.append(None)  # closed at the deadline

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    start = time.monotonic()
    s.terminate()
    try:
        s.proc.wait(30)
    finally:
        took = time.monotonic() - start
        trickled.close()
        for t in threads:
            t.join(30)
    assert took < 1 + 3, f"exit {took:.1f} s after SIGTERM, with a 1 s drain deadline"
    want = unit(np.stack([models("st").embed([t], normalize=False)[0] for t in texts]))
    for r in out:
        assert r is None or r.status in (200, 503), r
        if r is not None and r.status == 200:
            close(r.json(), want)
    # The fixture's teardown checks the exit: 0, `vkbert serve: stopped` last.
