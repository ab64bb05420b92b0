"""Regression tests for the defects the raw-bytes HTTP fuzzers found (``fuzz/``), each fed
to the sans-IO server in memory as raw bytes and read back with a client-side h11
connection."""

from __future__ import annotations

import json

import h11
import pytest

from mcp_sansio import Request
from tests.http_util import HOST, Harness, init_body

# Every regression on both server wires (h11 and httptools: docs/wires.rst).
pytestmark = pytest.mark.usefixtures("server_wire")

INIT = json.dumps(init_body()).encode()
POST_INIT = (b"POST /mcp HTTP/1.1\r\nHost: " + HOST.encode() + b"\r\n"
             b"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
             b"Content-Length: %d\r\n\r\n" % len(INIT) + INIT)


def feed(raw: bytes) -> tuple[Harness, bytes, bool]:
    h = Harness()
    channel = h.server.new_channel(now=0.0)
    channel.receive_data(raw, now=0.0)
    h.run()
    return h, bytes(h.raw_out.get(channel, b"")), channel.closed


def read(data: bytes, methods: list[bytes]) -> list[tuple[h11.Response, bytes]]:
    """The responses in ``data``, for requests with these methods, read by h11."""
    client = h11.Connection(h11.CLIENT)
    client.receive_data(data)
    out: list[tuple[h11.Response, bytes]] = []
    for method in methods:
        client.send(h11.Request(method=method, target="/", headers=[("host", "x")]))
        client.send(h11.EndOfMessage())
        head = client.next_event()
        assert isinstance(head, h11.Response), head
        body = b""
        while not isinstance(event := client.next_event(), h11.EndOfMessage):
            assert isinstance(event, h11.Data), event
            body += event.data
        out.append((head, body))
        if client.our_state is h11.DONE and client.their_state is h11.DONE:
            client.start_next_cycle()
    return out


def test_head_is_answered_with_a_head_only_and_the_connection_goes_on() -> None:
    # RFC 9110 section 9.3.2: the response to HEAD is GET's without content; h11 refuses to
    # write content for it, which used to escape receive_data as LocalProtocolError.
    raw = b"HEAD /mcp HTTP/1.1\r\nHost: " + HOST.encode() + b"\r\n\r\n" + POST_INIT
    _, out, closed = feed(raw)
    (head, body), (second, answer) = read(out, [b"HEAD", b"POST"])
    _, got, _ = feed(b"GET /mcp HTTP/1.1\r\nHost: " + HOST.encode() + b"\r\n\r\n")
    [(get, get_body)] = read(got, [b"GET"])
    assert get_body  # GET's answer has content; HEAD's has none, and the same head
    assert head.status_code == get.status_code >= 400 and body == b""
    assert dict(head.headers) == dict(get.headers)  # Content-Length included
    assert second.status_code == 200 and b'"result"' in answer
    assert not closed


def test_head_refused_by_the_wire_has_no_content_either() -> None:
    raw = (b"HEAD /mcp HTTP/1.1\r\nHost: " + HOST.encode()
           + b"\r\nContent-Length: 99999999\r\n\r\n")
    _, out, closed = feed(raw)
    [(head, body)] = read(out, [b"HEAD"])
    assert head.status_code == 413 and body == b"" and closed


def test_transfer_encoding_with_content_length_is_refused_unread() -> None:
    # RFC 9112 section 6.1: both framing fields may be a smuggling attempt. The request is
    # refused with 400 and the connection closed; nothing reaches the MCP layer, and the
    # bytes after it (which another reader may frame differently) are never answered.
    body = b"0\r\n\r\n" + POST_INIT
    raw = (b"POST /mcp HTTP/1.1\r\nHost: " + HOST.encode() + b"\r\n"
           b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
           b"Content-Length: %d\r\n\r\n" % len(body) + body)
    h, out, closed = feed(raw)
    [(head, _)] = read(out, [b"POST"])
    assert head.status_code == 400 and dict(head.headers)[b"connection"] == b"close"
    assert closed and out.count(b"HTTP/1.1 ") == 1
    assert not h.events_of(Request)


def _head_of(size: int) -> bytes:
    """A GET whose head (request line, fields, the empty line) is ``size`` bytes."""
    base = b"GET /mcp HTTP/1.1\r\nHost: " + HOST.encode() + b"\r\nX-Pad: \r\n\r\n"
    return base.replace(b"X-Pad: ", b"X-Pad: " + b"p" * (size - len(base)))


def test_the_head_limit_does_not_depend_on_how_the_bytes_arrive() -> None:
    # h11 enforces its limit only on a head it is still waiting for the end of: a whole head
    # in one read used to pass at any size. RFC 6585 section 5: 431, whether the head came in
    # one read or a byte at a time.
    for size, status in ((1024, 406), (1025, 431), (3000, 431)):
        raw = _head_of(size)
        assert len(raw) == size
        for reads in ([raw], [raw[i:i + 1] for i in range(len(raw))]):
            h = Harness(max_header_size=1024)
            channel = h.server.new_channel(now=0.0)
            for piece in reads:
                channel.receive_data(piece, now=0.0)
                h.run()
            [(head, _)] = read(bytes(h.raw_out[channel]), [b"GET"])
            assert head.status_code == status, (size, len(reads), head)


def test_transfer_encoding_in_http_1_0_is_refused_unread() -> None:
    # RFC 9112 section 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
    # h11 read it as chunked and the request was served; it is refused with 400 instead.
    body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(INIT), INIT)
    raw = (b"POST /mcp HTTP/1.0\r\nHost: " + HOST.encode() + b"\r\n"
           b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n" + body)
    h, out, closed = feed(raw)
    [(head, _)] = read(out, [b"POST"])
    assert head.status_code == 400 and closed
    assert not h.server.sessions  # the initialize was not served
