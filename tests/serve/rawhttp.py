"""A client written with nothing but sockets, for what real clients never send: broken bodies,
lying lengths, a byte at a time, a hang-up in the middle."""

import json
import socket
import time


def connect(server, timeout=60):
    s = socket.create_connection((server.host, server.port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def request_bytes(method, path, body=b"", headers=None, length=None):
    """One HTTP/1.1 request; `length` overrides the Content-Length (a lie)."""
    if isinstance(body, str):
        body = body.encode()
    elif not isinstance(body, bytes):
        body = json.dumps(body).encode()
    lines = [f"{method} {path} HTTP/1.1", "Host: localhost", "Connection: close"]
    if body or length is not None:
        lines += ["Content-Type: application/json",
                  f"Content-Length: {len(body) if length is None else length}"]
    for k, v in (headers or {}).items():
        lines.append(f"{k}: {v}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class RawResponse:
    def __init__(self, status, headers, body, raw=None):
        self.status, self.headers, self.body = status, headers, body
        self.raw = raw  # the body's bytes as they came, where kept

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<{self.status} {self.body[:300]!r}>"


def read_response(sock):
    """Reads until the server closes (every request says Connection: close); None when it
    closed without a word."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        data += chunk
    if not data:
        return None
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip()
               for k, _, v in (line.partition(":") for line in lines[1:])}
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(body)
    return RawResponse(status, headers, body.decode("utf-8", "replace"))


def _unchunk(data):
    out = b""
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        data = rest[size + 2:]
    return out


def send(server, raw, timeout=60):
    """Sends raw bytes on a new connection; the response (None: closed without one)."""
    with connect(server, timeout) as s:
        s.sendall(raw)
        return read_response(s)


def send_slowly(server, raw, gap):
    """One byte at a time, `gap` seconds apart."""
    with connect(server) as s:
        for i in range(len(raw)):
            s.sendall(raw[i:i + 1])
            time.sleep(gap)
        return read_response(s)


def exchange(server, raw, timeout=10):
    """Sends raw bytes on a kept-alive connection; (everything the server sent, whether it
    closed the connection within `timeout` seconds)."""
    data, closed = b"", False
    with connect(server, timeout) as s:
        s.sendall(raw)
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                closed = True
                break
            except socket.timeout:
                break
            if not chunk:
                closed = True
                break
            data += chunk
    return data, closed
