"""Requests whose body's end is ambiguous (RFC 9112 6.3): a proxy in front may read another end
than the server and pass the rest along as a request of its own. Each is refused at once and
its connection closed, and the server goes on answering."""

import time

import pytest

import rawhttp
from conftest import still_serves, unchanged

BODY = b'{"inputs": "hi"}'
# What a smuggler hides after the body the server was meant to read.
SMUGGLED = b"GET /info HTTP/1.1\r\nHost: localhost\r\n\r\n"


def head(*lines):
    """A kept-alive POST /embed with these framing headers."""
    return ("\r\n".join(["POST /embed HTTP/1.1", "Host: localhost",
                         "Content-Type: application/json", *lines]) + "\r\n\r\n").encode()


def chunked(body):
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


@pytest.mark.parametrize("raw,status", [
    # two lengths: the first would end the body early and the rest run as a request
    (head("Content-Length: 5", f"Content-Length: {len(BODY)}") + BODY + SMUGGLED, 400),
    (head(f"Content-Length: {len(BODY)}", "Content-Length: 5") + BODY + SMUGGLED, 400),
    # a length and chunks: read as chunks, the connection stayed open
    (head("Content-Length: 4", "Transfer-Encoding: chunked") + chunked(BODY) + SMUGGLED, 400),
    (head("Transfer-Encoding: chunked", "Content-Length: 4") + chunked(BODY) + SMUGGLED, 400),
    # a coding it cannot decode: waited 60 s for a body
    (head("Transfer-Encoding: gzip") + BODY, 501),
    (head("Transfer-Encoding: gzip", "Transfer-Encoding: chunked") + chunked(BODY), 501),
])
def test_ambiguous_framing_is_refused_and_closed(st_server, models, raw, status):
    with unchanged(st_server):
        start = time.monotonic()
        data, closed = rawhttp.exchange(st_server, raw, timeout=10)
        took = time.monotonic() - start
        assert data.startswith(b"HTTP/1.1 %d " % status), data[:300]
        assert data.count(b"HTTP/1.1 ") == 1, data
        assert b"connection: close" in data.lower(), data[:300]
        assert closed and took < 5, (closed, took)
        still_serves(st_server, models)


def test_the_same_length_twice_is_one_length(st_server, models):
    """RFC 9112 6.3 lets a server take repeated identical lengths as one."""
    with unchanged(st_server):
        n = f"Content-Length: {len(BODY)}"
        data, _ = rawhttp.exchange(st_server, head(n, n, "Connection: close") + BODY)
        assert data.startswith(b"HTTP/1.1 200 "), data[:300]
        still_serves(st_server, models)
