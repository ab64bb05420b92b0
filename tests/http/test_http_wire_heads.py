"""The wire layer's reuse of validated h11 heads: a reused head is byte for byte what h11
writes for a fresh one, an invalid header is refused every time (never remembered), and the
memory is bounded; and the dict-backed Headers view."""

from __future__ import annotations

import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.http._headers import Headers
from mcp_sansio.http._wire import (
    _HEAD_CACHE_SIZE,
    _REQUEST_HEADS,
    _RESPONSE_HEADS,
    ClientWire,
    ResponseBody,
    ResponseEnd,
    ResponseHead,
    ServerWire,
)

HEADERS = [("host", "h"), ("accept", "application/json, text/event-stream"),
           ("content-type", "application/json"), ("mcp-method", "tools/call")]


def _exchange(body: bytes, answer: bytes) -> tuple[bytes, bytes, list[object]]:
    """One request and its JSON answer on a fresh pair of wires: the bytes each side wrote
    and what the client read."""
    server = ServerWire(max_body_size=1000)
    client = ClientWire()
    client.send_request("POST", "/mcp", HEADERS, body)
    request_bytes = client.data_to_send()
    server.receive_data(request_bytes)
    request = server.next_request()
    assert request is not None and request.body == body
    assert request.headers.get("MCP-Method") == "tools/call"
    assert request.headers.get("content-length") == str(len(body))
    server.respond(200, [("content-type", "application/json")], answer)
    response_bytes = server.data_to_send()
    client.receive_data(response_bytes)
    events: list[object] = []
    while (event := client.next_event()) is not None:
        events.append(event)
    return request_bytes, response_bytes, events


def test_a_reused_head_is_written_exactly_as_a_fresh_one() -> None:
    first = _exchange(b'{"a": 1}', b'{"ok": true}')
    second = _exchange(b'{"a": 1}', b'{"ok": true}')  # both heads come from the cache
    assert first[:2] == second[:2]
    # Another Content-Length is another head, with its own (correct) value.
    request_bytes, response_bytes, events = _exchange(b'{"a": 12}', b'{"ok": false}')
    assert b"content-length: 9\r\n" in request_bytes
    assert b"content-length: 13\r\n" in response_bytes
    head = events[0]
    assert isinstance(head, ResponseHead) and head.status == 200
    assert head.headers.get("Content-Type") == "application/json"
    assert events[1:] == [ResponseBody(data=b'{"ok": false}'), ResponseEnd()]


@pytest.mark.parametrize("bad", ["a\r\nb", "trailing\n", "nul\0"])
def test_an_invalid_header_value_is_refused_every_time(bad: str) -> None:
    for _ in range(2):
        client = ClientWire()
        with pytest.raises(h11.LocalProtocolError):
            client.send_request("POST", "/mcp", [("host", "h"), ("x-bad", bad)], b"{}")
    for _ in range(2):
        server = ServerWire(max_body_size=100)
        feeder = ClientWire()
        feeder.send_request("GET", "/", [("host", "h")])
        server.receive_data(feeder.data_to_send())
        assert server.next_request() is not None
        with pytest.raises(h11.LocalProtocolError):
            server.respond(200, [("x-bad", bad)], b"")


def test_the_remembered_heads_are_bounded() -> None:
    for n in range(_HEAD_CACHE_SIZE * 2 + 3):
        client = ClientWire()
        client.send_request("POST", "/mcp", [("host", "h"), ("x-n", str(n))], b"{}")
        server = ServerWire(max_body_size=100)
        server.receive_data(client.data_to_send())
        assert server.next_request() is not None
        server.respond(200, [("x-n", str(n))], b"")
        assert f"x-n: {n}\r\n".encode() in server.data_to_send()
    assert 0 < len(_REQUEST_HEADS._known) <= _HEAD_CACHE_SIZE
    assert 0 < len(_RESPONSE_HEADS._known) <= _HEAD_CACHE_SIZE


def test_headers_lookups_are_case_insensitive_and_join_repeats() -> None:
    headers = Headers.from_raw([(b"Host", b"h"), (b"X-A", b"1"), (b"x-a", b"2")])
    assert headers.get("HOST") == "h" and headers.get("x-a") == "1, 2"
    assert headers.get("missing") is None
    assert "X-a" in headers and "nope" not in headers
    assert headers.get_all("x-A") == ["1", "2"]
    assert list(headers.items()) == [("host", "h"), ("x-a", "1"), ("x-a", "2")]


def test_remembered_accept_and_host_answers_stay_right() -> None:
    from mcp_sansio.http._headers import AllowList, accepts

    for _ in range(2):  # the second round is answered from memory
        assert accepts("application/json, text/event-stream", "text/event-stream")
        assert not accepts("application/json, text/event-stream;q=0", "text/event-stream")
        assert accepts("application/json, text/event-stream;q=0", "application/json")
    hosts = AllowList(["localhost:*"])
    for n in range(300):  # past the memory's bound: it starts over, answers stay right
        assert hosts.allows(f"localhost:{n}") and not hosts.allows(f"evil{n}:80")
    assert hosts.allows("LOCALHOST:1") and not hosts.allows("localhost:x")


def test_header_pairs_given_as_lists_still_work() -> None:
    for _ in range(2):
        client = ClientWire()
        client.send_request("POST", "/mcp", [["host", "h"], ["x-a", "1"]],  # type: ignore[list-item]
                            b"{}")
        data = client.data_to_send()
        assert data.startswith(b"POST /mcp HTTP/1.1\r\nhost: h\r\nx-a: 1\r\n")
        server = ServerWire(max_body_size=100)
        server.receive_data(data)
        assert server.next_request() is not None
        server.respond(200, [["x-b", "2"]], b"")  # type: ignore[list-item]
        assert b"x-b: 2\r\n" in server.data_to_send()


_NAMES = st.sampled_from([b"host", b"accept", b"x-a", b"x-b", b"mcp-method"])


@given(st.lists(st.tuples(_NAMES, st.binary(max_size=4)), max_size=8))
def test_decoded_headers_join_repeats_in_order_whatever_the_list(
        raw: list[tuple[bytes, bytes]]) -> None:
    # The reference: every name once, its values in arrival order joined with ", ".
    expected: dict[str, list[str]] = {}
    for name, value in raw:
        expected.setdefault(name.decode("latin-1"), []).append(value.decode("latin-1"))
    decoded = Headers(raw).decoded()
    assert decoded == {name: ", ".join(values) for name, values in expected.items()}
    assert list(decoded) == list(expected)
