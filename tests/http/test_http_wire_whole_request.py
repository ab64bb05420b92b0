"""The httptools wire hands out a request whose head and ``Content-Length`` body are both
buffered in one go (``HttptoolsWire._whole_request``); every other request goes through its
exchange events one by one. Both ways must give the same requests, the same answers on the
wire and the same end of the connection, however the bytes are split, pipelined or broken:
checked here against the same wire with the one-go path turned off."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("httptools")

from mcp_sansio.http import _wire_httptools
from mcp_sansio.http._wire_httptools import HttptoolsWire

# Both tests turn a method of the wire off or spy on it: the compiled build's classes take no
# patched method, so they run on the pure build (the reference) only.
pytestmark = pytest.mark.skipif(not str(_wire_httptools.__file__).endswith(".py"),
                                reason="patches a method of the wire (compiled here)")


def _post(body: bytes, *, chunked: bool = False, extra: bytes = b"") -> bytes:
    head = b"POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n" + extra
    if chunked:
        framed = b"".join(b"%x\r\n%s\r\n" % (len(part), part)
                          for part in (body[:3], body[3:]) if part) + b"0\r\n\r\n"
        return head + b"transfer-encoding: chunked\r\n\r\n" + framed
    return head + b"content-length: %d\r\n\r\n" % len(body) + body


REQUESTS = st.one_of(
    st.binary(max_size=40).map(_post),
    st.binary(min_size=1, max_size=40).map(lambda b: _post(b, chunked=True)),
    st.just(b"GET /mcp HTTP/1.1\r\nhost: localhost\r\n\r\n"),
    st.just(b"POST /mcp HTTP/1.0\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"),
    st.just(_post(b"{}", extra=b"connection: close\r\n")),
    st.just(_post(b"{}", extra=b"expect: 100-continue\r\n")),
    st.just(b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-length: 99999999\r\n\r\n"),  # 413
    st.just(b"POST /mcp HTTP/1.1\r\ncontent-length: 1\r\n\r\nx"),  # no Host: 400
    st.just(b"POST /mcp HTTP/1.1\r\nhost: x\r\n folded: y\r\ncontent-length: 0\r\n\r\n"),
    st.just(b"\x16\x03\x01 not http\r\n\r\n"),
)


def _run(stream: bytes, cuts: list[int], whole: bool) -> list[Any]:
    wire = HttptoolsWire(max_body_size=1000)
    if not whole:
        wire._whole_request = lambda: None  # type: ignore[method-assign]
    seen: list[Any] = []
    bounds = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    for start, end in itertools.pairwise(bounds):
        wire.receive_data(stream[start:end])
        while (request := wire.next_request()) is not None:
            seen.append((request.method, request.target, list(request.headers.raw),
                         request.body, request.http_version))
            seen.append((wire.next_request(), wire.busy))  # none while it is answered
            wire.respond(200, [("content-type", "text/plain")], b"ok")
        seen.append(wire.data_to_send())
    wire.receive_data(b"")
    seen.append((wire.next_request(), wire.data_to_send(), wire.closed))
    return seen


@settings(max_examples=300, deadline=None)
@given(st.lists(REQUESTS, min_size=1, max_size=4), st.lists(st.integers(0, 2000), max_size=6))
def test_whole_requests_read_as_the_events_read_them(requests: list[bytes],
                                                     cuts: list[int]) -> None:
    stream = b"".join(requests)
    assert _run(stream, cuts, whole=True) == _run(stream, cuts, whole=False)


def test_a_whole_request_takes_the_one_go_path() -> None:
    wire = HttptoolsWire(max_body_size=1000)
    taken: list[object] = []
    general = HttptoolsWire._whole_request

    def spy() -> Any:
        request = general(wire)
        taken.append(request)
        return request

    wire._whole_request = spy  # type: ignore[method-assign]
    wire.receive_data(_post(b'{"a": 1}') + _post(b"{}"))
    first = wire.next_request()
    assert first is not None and first.body == b'{"a": 1}' and taken[0] is first
    wire.respond(200, [], b"")
    second = wire.next_request()
    assert second is not None and second.body == b"{}" and taken[1] is second
