"""Raw HTTP/1.1 bytes for the hardening tests (tests/http/test_http_rfc9112.py in memory,
tests/adapters/common/test_http_isolation.py over loopback): requests written byte by byte, so that
they can be malformed on purpose, and a reader of the responses a server wrote that checks each
status line and field line as it goes."""

from __future__ import annotations

import json

import attrs

from tests.http_util import init_body

INIT = json.dumps(init_body()).encode()
HOST = b"localhost:8000"


@attrs.frozen
class Reply:
    status: int
    headers: dict[str, list[str]]
    body: bytes
    #: The head carried a Content-Length or Transfer-Encoding field (framing).
    framed: bool

    def header(self, name: str) -> str | None:
        values = self.headers.get(name)
        return ", ".join(values) if values else None


def parse(data: bytes, methods: list[str]) -> list[Reply]:
    """The responses in ``data``, in order (``methods``: the requests' methods, so that a
    response to HEAD is read without content, RFC 9112 section 6.3 item 1)."""
    replies: list[Reply] = []
    i = 0
    final = 0  # final responses so far (interim 1xx ones answer no request of their own)
    while i < len(data):
        end = data.index(b"\r\n\r\n", i)
        lines = data[i:end].split(b"\r\n")
        version, status_text = lines[0].split(b" ")[:2]
        assert version == b"HTTP/1.1", lines[0]  # RFC 9112 section 2.3: our version
        status = int(status_text)
        headers: dict[str, list[str]] = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            assert name == name.strip() and name, line  # RFC 9112 section 5.1
            headers.setdefault(name.decode().lower(), []).append(value.strip().decode())
        i = end + 4
        method = methods[final] if final < len(methods) else "GET"
        framed = "content-length" in headers or "transfer-encoding" in headers
        body = b""
        if method == "HEAD" or status < 200 or status in (204, 304):
            pass  # no content, whatever the head says (RFC 9112 section 6.3 item 1)
        elif "content-length" in headers:
            length = int(headers["content-length"][0])
            body, i = data[i:i + length], i + length
        elif headers.get("transfer-encoding") == ["chunked"]:
            while True:
                line_end = data.find(b"\r\n", i)
                if line_end < 0:  # a stream still open: what came so far
                    i = len(data)
                    break
                size = int(data[i:line_end].split(b";")[0], 16)
                i = line_end + 2
                if size == 0:
                    i = data.index(b"\r\n", i) + 2  # no trailers from us
                    break
                body, i = body + data[i:i + size], i + size + 2
        else:
            body, i = data[i:], len(data)
        replies.append(Reply(status, headers, body, framed))
        if status >= 200:
            final += 1
    return replies


def post(body: bytes = INIT, *, extra: bytes = b"", target: bytes = b"/mcp",
         version: bytes = b"HTTP/1.1", length: bool = True) -> bytes:
    head = (b"POST " + target + b" " + version + b"\r\nHost: " + HOST + b"\r\n"
            b"Accept: application/json, text/event-stream\r\n"
            b"Content-Type: application/json\r\n" + extra)
    if length:
        head += b"Content-Length: %d\r\n" % len(body)
    return head + b"\r\n" + body


def chunked(body: bytes, extension: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n0\r\n\r\n" % (len(body), extension, body)


def ping(request_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode()
