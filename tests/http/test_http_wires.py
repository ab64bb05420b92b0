"""The two server wires side by side: h11 (:class:`~mcp_sansio.http._wire.ServerWire`, the
reference) and httptools (:class:`~mcp_sansio.http._wire_httptools.HttptoolsWire`), driven
through the same calls. Both must produce the same exchange events from the same bytes and
write the same response bytes for the same answers (keep-alive, pipelining, HEAD, chunked
bodies both ways, HTTP/1.0, 100-continue, an upgrade request answered without switching);
and choosing a wire by name says clearly when one is unknown or not installed. The hardening
rules (tests/http/test_http_rfc9112.py) and the fuzzers (fuzz/test_http_raw.py,
fuzz/test_http_wires_differential.py) run on both wires too."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio import ServerConnection
from mcp_sansio.http import HTTPServer
from mcp_sansio.http._exchange import (
    RequestData,
    RequestStarted,
    ResponseData,
    ResponseEnded,
    ResponseStarted,
)
from mcp_sansio.http._wire import ServerWire
from mcp_sansio.http._wire_httptools import DIFFERENCES, HttptoolsWire, MissingParser
from mcp_sansio.http._wires import WIRES
from tests.paths import ROOT

WIRE_CLASSES = [ServerWire, HttptoolsWire]
BOTH = pytest.mark.parametrize("make", WIRE_CLASSES, ids=["h11", "httptools"])

POST = (b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
        b"Content-Length: 7\r\n\r\n{\"a\":1}")
GET = b"GET /mcp HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n"
HEAD = b"HEAD /mcp HTTP/1.1\r\nHost: h\r\n\r\n"
CHUNKED = (b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"3;ext=1\r\n{\"a\r\n4\r\n\":1}\r\n0\r\nTrailer-Field: x\r\n\r\n")


def events(wire: Any) -> list[object]:
    """The wire's exchange events as comparable values: a head's fields as their list, and
    the body as its bytes (how the pieces are cut is each parser's own)."""
    out: list[object] = []
    while (event := wire.next_event()) is not None:
        if isinstance(event, RequestStarted):
            out.append((event.method, event.target, list(map(tuple, event.headers.raw)),
                        event.http_version))
        elif isinstance(event, RequestData):
            if out and isinstance(out[-1], bytes):
                out[-1] += event.data
            else:
                out.append(bytes(event.data))
        else:
            out.append(event)
    return out


def drive(make: Any, data: bytes, answer: Any, *, pieces: int = 1) -> tuple[list[object], bytes]:
    """Feed ``data`` (cut into ``pieces`` reads), answer each request with ``answer(wire)``;
    the exchange events seen and every byte written."""
    wire = make(max_body_size=1000, max_header_size=1000)
    seen: list[object] = []
    out = bytearray()
    step = max(1, len(data) // pieces)
    for i in range(0, len(data), step):
        wire.receive_data(data[i:i + step])
        while True:
            got = events(wire)
            if seen and got and isinstance(seen[-1], bytes) and isinstance(got[0], bytes):
                seen[-1] += got.pop(0)  # one body, whatever the reads
            seen.extend(got)
            out += wire.data_to_send()
            if not wire.busy:
                break
            answer(wire)
            out += wire.data_to_send()
    return seen, bytes(out)


def json_answer(wire: Any) -> None:
    wire.respond(200, [("content-type", "application/json")], b'{"ok":true}')


def sse_answer(wire: Any) -> None:
    wire.start_response(200, [("content-type", "text/event-stream")])
    wire.send_body(b"data: 1\n\n")
    wire.send_body(b"data: 2\n\n")
    wire.end_response()


@pytest.mark.parametrize("data", [
    POST, POST + POST, GET + POST + HEAD, CHUNKED, CHUNKED + POST,
    b"GET /mcp HTTP/1.0\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
    b"GET /mcp HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n" + POST,
    b"GET /mcp HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n" + POST,
    b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2000\r\n\r\n",
    b"GET /mcp HTTP/1.1\r\nHost: h\r\n b\r\n\r\n",
    b"GET /mcp HTTP/2.0\r\nHost: h\r\n\r\n",
    b"NOT HTTP AT ALL\r\n\r\n",
])
@pytest.mark.parametrize("answer", [json_answer, sse_answer])
@pytest.mark.parametrize("pieces", [1, 7, 1000])
def test_both_wires_give_the_same_events_and_write_the_same_bytes(
    data: bytes, answer: Any, pieces: int,
) -> None:
    reference = drive(ServerWire, data, answer, pieces=pieces)
    fast = drive(HttptoolsWire, data, answer, pieces=pieces)
    assert fast[0] == reference[0]
    # The same bytes out, but for the text of a refusal (each parser words its own).
    assert fast[1].split(b"\r\n\r\n", 1)[0] == reference[1].split(b"\r\n\r\n", 1)[0] or (
        b"connection: close" in fast[1] and b"connection: close" in reference[1])
    if b"connection: close" not in reference[1]:
        assert fast[1] == reference[1]


@BOTH
def test_keep_alive_pipelining_and_head(make: Any) -> None:
    seen, out = drive(make, POST + HEAD + POST, json_answer)
    assert [type(e).__name__ for e in seen].count("RequestEnded") == 3
    # Three answers, in order; the HEAD one with the GET's Content-Length and no content
    # (RFC 9110 section 9.3.2).
    assert out.count(b"HTTP/1.1 200 OK\r\n") == 3
    assert out.count(b'{"ok":true}') == 2


@BOTH
def test_a_chunked_request_body_is_reassembled_and_trailers_dropped(make: Any) -> None:
    wire = make(max_body_size=100)
    wire.receive_data(CHUNKED)
    request = wire.next_request()
    assert request is not None and request.body == b'{"a":1}'
    assert request.headers.get("trailer-field") is None


@BOTH
def test_a_stream_to_an_http_1_0_client_is_close_delimited(make: Any) -> None:
    # RFC 9112 section 6.3 item 8: no chunked coding for HTTP/1.0; the close ends the body.
    wire = make(max_body_size=100)
    wire.receive_data(b"GET /mcp HTTP/1.0\r\n\r\n")
    assert wire.next_request() is not None
    wire.send(ResponseStarted(status=200, headers=(("content-type", "text/event-stream"),)))
    wire.send(ResponseData(b"data: 1\n\n"))
    wire.send(ResponseEnded())
    out = wire.data_to_send()
    assert b"transfer-encoding" not in out.lower() and out.endswith(b"\r\n\r\ndata: 1\n\n")
    assert b"Connection: close" in out and wire.closed


@BOTH
def test_pipelined_bytes_are_bounded_while_a_response_is_under_way(make: Any) -> None:
    wire = make(max_body_size=10, max_header_size=100)
    wire.receive_data(b"GET / HTTP/1.1\r\nhost: h\r\n\r\n")
    assert wire.next_request() is not None
    wire.receive_data(b"x" * 200)
    assert wire.closed


@BOTH
def test_fail_answers_a_request_read_and_cuts_a_stream_short(make: Any) -> None:
    wire = make(max_body_size=100)
    wire.receive_data(GET)
    assert wire.next_request() is not None
    wire.fail(500, "boom")
    assert wire.data_to_send().startswith(b"HTTP/1.1 500 ") and wire.closed
    wire = make(max_body_size=100)
    wire.receive_data(GET)
    assert wire.next_request() is not None
    wire.start_response(200, [("content-type", "text/event-stream")])
    wire.data_to_send()
    wire.fail(500, "boom")
    assert wire.data_to_send() == b"" and wire.closed


@BOTH
@settings(max_examples=100)
@given(st.binary(max_size=300))
def test_garbage_never_raises_and_is_answered_as_http(make: Any, garbage: bytes) -> None:
    wire = make(max_body_size=50, max_header_size=100)
    wire.receive_data(garbage)
    while wire.next_request() is not None:
        wire.respond(200)
    wire.receive_data(b"")
    wire.next_request()
    out = wire.data_to_send()
    assert out == b"" or out.startswith(b"HTTP/1.1 ")


def test_a_header_value_that_would_split_the_response_is_refused() -> None:
    # CR or LF in a field value would let a value start a header of its own (response
    # splitting, RFC 9110 section 5.5); h11 refuses such a value, and so does this wire.
    wire = HttptoolsWire(max_body_size=100)
    wire.receive_data(GET)
    assert wire.next_request() is not None
    with pytest.raises(ValueError, match="CR, LF or NUL"):
        wire.respond(200, [("x-bad", "a\r\nset-cookie: x")], b"")


def _factory() -> ServerConnection:
    return ServerConnection(info={"name": "t", "version": "1"}, capabilities={})


def test_a_server_takes_a_wire_by_name_and_says_which_names_exist() -> None:
    assert set(WIRES) == {"h11", "httptools"}
    server = HTTPServer(_factory, new_session_id=lambda: "s", wire="httptools")
    assert isinstance(server.new_channel().wire, HttptoolsWire)
    server = HTTPServer(_factory, new_session_id=lambda: "s", wire="h11")
    assert isinstance(server.new_channel().wire, ServerWire)
    # unnamed: httptools where it is installed (as here), h11 otherwise (test_default_wire.py)
    assert isinstance(HTTPServer(_factory, new_session_id=lambda: "s").new_channel().wire,
                      HttptoolsWire)
    with pytest.raises(ValueError, match="unknown wire 'llhttp': one of h11, httptools"):
        HTTPServer(_factory, new_session_id=lambda: "s", wire="llhttp")


def test_a_missing_httptools_is_said_when_the_server_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "httptools", None)  # the import now fails
    with pytest.raises(MissingParser, match=r"pip install 'mcp-sansio\[fast\]'"):
        HTTPServer(_factory, new_session_id=lambda: "s", wire="httptools")
    assert issubclass(MissingParser, ImportError)
    HTTPServer(_factory, new_session_id=lambda: "s")  # h11 needs nothing more


def test_every_documented_difference_cites_its_rfc_and_is_on_the_docs_page() -> None:
    page = " ".join((ROOT / "docs" / "wires.rst").read_text().split())
    for name, (h11_answer, llhttp_answer, reason) in DIFFERENCES.items():
        assert h11_answer and llhttp_answer and "RFC 9" in reason, name
        assert name in page.replace("- ", ""), f"docs/wires.rst does not list {name!r}"
