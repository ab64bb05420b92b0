"""SSE framing, header encodings, media types, allow-lists, the event store and the h11 wire
layer, with hypothesis where it helps."""

from __future__ import annotations

import base64
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio.http import (
    InMemoryEventStore,
    SSEError,
    SSEEvent,
    SSEParser,
    decode_header_value,
    encode_comment,
    encode_event,
    encode_header_value,
    param_headers,
)
from mcp_sansio.http._headers import (
    AllowList,
    Headers,
    accepts,
    media_type,
    param_header_text,
    param_matches,
    param_value,
)
from mcp_sansio.http._wire import (
    ClientWire,
    ResponseBody,
    ResponseEnd,
    ResponseHead,
    ServerWire,
    WireClosed,
)

# -- SSE ---------------------------------------------------------------------------------------

field_text = st.text(st.characters(blacklist_characters="\r\n\0",
                                   blacklist_categories=("Cs",)), max_size=20)
data_bytes = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60).map(
    lambda s: s.encode("utf-8"))
events = st.lists(st.tuples(data_bytes, st.none() | field_text.filter(bool),
                            st.none() | field_text, st.none() | st.integers(0, 10**6)),
                  max_size=8)


def _expected(items: list[tuple[bytes, str | None, str | None, int | None]]) -> list[SSEEvent]:
    out = []
    last_id = None
    for data, event, event_id, retry in items:
        if event_id is not None:
            last_id = event_id
        norm = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        out.append(SSEEvent(data=norm, event=event or "message", id=last_id, retry=retry))
    return out


def _stream(items: list[tuple[bytes, str | None, str | None, int | None]]) -> bytes:
    return b"".join(encode_event(d, event=e, id=i, retry=r) for d, e, i, r in items)


@given(items=events, cuts=st.lists(st.integers(0, 2000), max_size=10))
def test_sse_round_trip_whole_split_and_byte_by_byte(
    items: list[tuple[bytes, str | None, str | None, int | None]], cuts: list[int],
) -> None:
    stream = _stream(items)
    expected = _expected(items)
    whole = SSEParser().feed(stream)
    assert whole == expected
    parser = SSEParser()
    got = []
    bounds = sorted({0, len(stream), *[c % (len(stream) + 1) for c in cuts]})
    for a, b in itertools.pairwise(bounds):
        got.extend(parser.feed(stream[a:b]))
    assert got == expected
    parser = SSEParser()
    one = [e for i in range(len(stream)) for e in parser.feed(stream[i:i + 1])]
    assert one == expected


@given(items=events, newline=st.sampled_from([b"\n", b"\r\n", b"\r"]),
       cut=st.integers(0, 500))
def test_any_line_ending_and_any_split(
    items: list[tuple[bytes, str | None, str | None, int | None]], newline: bytes, cut: int,
) -> None:
    stream = _stream(items).replace(b"\n", newline)
    expected = _expected(items)
    cut %= len(stream) + 1
    parser = SSEParser()
    assert parser.feed(stream[:cut]) + parser.feed(stream[cut:]) == expected


def test_sse_details() -> None:
    parser = SSEParser()
    stream = (b"\xef\xbb\xbf: comment\n"  # BOM then a comment
              b"event: endpoint\ndata: /messages?x=1\n\n"
              b"id: 7\ndata\n\n"  # a field with no colon: empty data line
              b"retry: abc\nretry: 250\nid: bad\0id\nfoo: bar\ndata: a\ndata:b\n\n"
              b"id: 9\n\n"  # no data: not dispatched, but the id is kept
              b"data: last\n")  # never terminated: not dispatched
    got = parser.feed(stream)
    assert got == [
        SSEEvent(data=b"/messages?x=1", event="endpoint"),
        SSEEvent(data=b"", id="7"),
        SSEEvent(data=b"a\nb", id="7", retry=250),
    ]
    assert parser.last_event_id == "9" and parser.retry == 250


def test_priming_event_dispatches_empty_data() -> None:
    assert encode_event(b"", id="s-1:0", retry=500) == b"id: s-1:0\nretry: 500\ndata:\n\n"
    assert SSEParser().feed(encode_event(b"", id="s-1:0")) == [SSEEvent(data=b"", id="s-1:0")]
    assert encode_event(None, retry=10) == b"retry: 10\n\n"
    assert SSEParser().feed(encode_event(None, retry=10)) == []
    assert encode_comment() == b":\n\n" and encode_comment("ping") == b":ping\n\n"


def test_sse_limits() -> None:
    parser = SSEParser(max_event_size=10)
    with pytest.raises(SSEError):
        parser.feed(b"data: 0123456789012\n")
    parser = SSEParser(max_event_size=10)
    with pytest.raises(SSEError):
        parser.feed(b"data: 01234\ndata: 56789\n")
    parser = SSEParser(max_event_size=10)
    with pytest.raises(SSEError):  # a line that never ends
        for _ in range(20):
            parser.feed(b"x")


def test_encode_event_refuses_bad_fields() -> None:
    with pytest.raises(ValueError):
        encode_event(b"x", id="a\nb")
    with pytest.raises(ValueError):
        encode_event(b"x", id="a\0b")
    with pytest.raises(ValueError):
        encode_event(b"x", retry=-1)
    assert encode_event(b"a\r\nb\rc") == b"data: a\ndata: b\ndata: c\n\n"


def test_long_line_fed_byte_by_byte_is_linear() -> None:
    parser = SSEParser()
    data = b"data: " + b"x" * 200_000 + b"\n\n"
    got = []
    for i in range(0, len(data), 7):
        got.extend(parser.feed(data[i:i + 7]))
    assert got == [SSEEvent(data=b"x" * 200_000)]


# -- header values -----------------------------------------------------------------------------


@given(st.text(st.characters(blacklist_categories=("Cs",))))
def test_header_value_round_trip(value: str) -> None:
    encoded = encode_header_value(value)
    assert all(0x20 <= ord(c) <= 0x7E for c in encoded)
    assert encoded == encoded.strip()
    assert decode_header_value(encoded) == value


@pytest.mark.parametrize(("value", "encoded"), [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ("", "=?base64??="),
])
def test_header_value_examples_from_the_spec(value: str, encoded: str) -> None:
    assert encode_header_value(value) == encoded
    assert decode_header_value(encoded) == value


@pytest.mark.parametrize("raw", ["=?base64?!!?=", "=?base64?//79?=", "a\x01b", "é"])
def test_malformed_header_values(raw: str) -> None:
    if raw == "=?base64?//79?=":
        assert base64.b64decode("//79")  # valid base64, but not UTF-8
    assert decode_header_value(raw) is None


def test_param_headers_reads_annotations() -> None:
    schema = {"type": "object", "properties": {
        "a": {"type": "string", "x-mcp-header": "A"},
        "n": {"type": "object", "properties": {"b": {"type": "integer", "x-mcp-header": "B"}}},
        "c": {"type": "string"}}}
    assert param_headers(schema) == {"A": ("a",), "B": ("n", "b")}
    assert param_headers({"type": "object"}) == {}


@pytest.mark.parametrize("schema", [
    {"properties": {"a": {"type": "string", "x-mcp-header": ""}}},
    {"properties": {"a": {"type": "string", "x-mcp-header": "has space"}}},
    {"properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
    {"properties": {"a": {"type": "object", "x-mcp-header": "A"}}},
    {"properties": {"a": {"type": "string", "x-mcp-header": "A"},
                    "b": {"type": "string", "x-mcp-header": "a"}}},
    {"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}},
    {"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}},
    {"x-mcp-header": "Root", "type": "string"},
    {"$defs": {"x": {"type": "string", "x-mcp-header": "A"}}},
])
def test_param_headers_refuses_invalid_annotations(schema: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        param_headers(schema)


def test_param_values_and_matching() -> None:
    args = {"a": {"b": 1}, "n": None}
    assert param_value(args, ["a", "b"]) == 1
    assert param_value(args, ["n"]) is None
    assert param_value(args, ["a", "b", "c"]) is None
    assert param_value(args, ["zz"]) is None
    assert [param_header_text(v) for v in (True, False, 42, 3.0, "s", None, [1])] == [
        "true", "false", "42", "3", "s", None, None]
    assert param_matches("42", 42) and param_matches("42.0", 42) and param_matches(" 42", 42)
    assert not param_matches("43", 42) and not param_matches("x", 42)
    assert not param_matches("NaN", 1) and not param_matches("9007199254740993", 2**53 + 1)
    assert param_matches("true", True) and not param_matches("True", True)
    assert param_matches("s", "s") and not param_matches("s", None)


# -- media types, allow-lists ------------------------------------------------------------------


def test_media_types() -> None:
    assert media_type("Application/JSON; charset=utf-8") == "application/json"
    assert media_type(None) is None and media_type(";x") is None
    assert accepts("application/json, text/event-stream", "text/event-stream")
    assert accepts("text/*", "text/event-stream")
    assert not accepts("text/*;q=0, */*", "text/event-stream")
    assert not accepts("application/json", "text/event-stream")
    assert not accepts(None, "application/json")
    assert accepts("*/*;q=bad", "application/json")
    assert not accepts(", ,", "application/json")


def test_allow_lists() -> None:
    allow = AllowList(["localhost:*", "Example.com", "[::1]:*", "exact:8080"])
    assert allow.allows("localhost") and allow.allows("LOCALHOST:99")
    assert allow.allows("example.com") and not allow.allows("example.com:1")
    assert allow.allows("[::1]") and allow.allows("[::1]:80")
    assert allow.allows("exact:8080") and not allow.allows("exact:8081")
    assert not allow.allows("localhost:x") and not allow.allows("evil")
    assert AllowList(["*"]).allows("anything")


def test_headers_view() -> None:
    headers = Headers.from_pairs([("X-A", "1"), ("x-a", "2"), ("Mcp-Param-Q", "v")])
    assert headers.get("x-A") == "1, 2" and headers.get_all("X-A") == ["1", "2"]
    assert "X-A" in headers and "nope" not in headers and 3 not in headers
    assert headers.with_prefix("mcp-param-") == [("mcp-param-q", "v")]
    assert dict(headers.items())["mcp-param-q"] == "v"
    assert "Headers(" in repr(headers)


# -- event store -------------------------------------------------------------------------------


def test_event_store_replay_and_bounds() -> None:
    store = InMemoryEventStore(max_events=4)
    a0 = store.store("a", b"")
    a1 = store.store("a", b"1")
    b0 = store.store("b", b"x")
    a2 = store.store("a", b"2")
    assert store.replay(a0) == ("a", [(a1, b"1"), (a2, b"2")])
    assert store.replay(b0) == ("b", [])
    assert store.replay("a:99") is None and store.replay("zz:0") is None
    assert store.replay("nocolon") is None
    a3 = store.store("a", b"3")  # evicts a0 itself: what follows it is all there
    assert store.replay(a0) == ("a", [(a1, b"1"), (a2, b"2"), (a3, b"3")])
    store.store("a", b"4")  # evicts a1: a replay after a0 would have a gap
    assert store.replay(a0) is None and store.replay(a1) is not None and len(store) == 4
    store.forget("a")
    assert store.replay(a2) is None and len(store) == 1
    for i in range(20):
        store.store(f"s{i}", b"x")
        store.forget(f"s{i}")
    assert len(store) == 1
    with pytest.raises(ValueError):
        InMemoryEventStore(0)


# -- the wire layer ----------------------------------------------------------------------------


def test_wire_request_response_keep_alive_and_100_continue() -> None:
    server = ServerWire(max_body_size=100)
    client = ClientWire()
    client.send_request("POST", "/mcp?x=1", [("host", "h"), ("expect", "100-continue")],
                        b"hello")
    data = client.data_to_send()
    server.receive_data(data[:10])
    assert server.next_request() is None
    server.receive_data(data[10:])
    request = server.next_request()
    assert request is not None and request.body == b"hello"
    assert request.path == "/mcp" and request.query == "x=1"
    assert server.data_to_send().startswith(b"HTTP/1.1 100 ")
    server.respond(200, [("content-type", "text/plain")], b"ok")
    client.receive_data(server.data_to_send())
    got = []
    while (event := client.next_event()) is not None:
        got.append(event)
    assert isinstance(got[0], ResponseHead) and got[0].status == 200
    assert got[1:] == [ResponseBody(data=b"ok"), ResponseEnd()]
    assert not server.closed and not client.closed
    client.send_request("GET", "/mcp", [("host", "h")])
    server.receive_data(client.data_to_send())
    request = server.next_request()
    assert request is not None and request.method == "GET"
    server.start_response(200, [("content-type", "text/event-stream")])
    server.send_body(b"data: 1\n\n")
    server.end_response()
    client.receive_data(server.data_to_send())
    kinds = []
    while (event := client.next_event()) is not None:
        kinds.append(type(event))
    assert kinds == [ResponseHead, ResponseBody, ResponseEnd]


def test_wire_client_sees_a_dropped_connection() -> None:
    server = ServerWire(max_body_size=100)
    client = ClientWire()
    client.send_request("GET", "/", [("host", "h")])
    server.receive_data(client.data_to_send())
    assert server.next_request() is not None
    server.start_response(200, [("content-type", "text/event-stream")])
    client.receive_data(server.data_to_send())
    client.receive_data(b"")
    events = []
    while (event := client.next_event()) is not None:
        events.append(event)
    assert isinstance(events[0], ResponseHead) and isinstance(events[-1], WireClosed)
    assert client.closed


def test_wire_connection_close_and_http_1_0() -> None:
    server = ServerWire(max_body_size=100)
    server.receive_data(b"GET / HTTP/1.0\r\n\r\n")
    assert server.next_request() is not None
    server.respond(200)
    assert server.closed
    server2 = ServerWire(max_body_size=100)
    server2.receive_data(b"GET / HTTP/1.1\r\nhost: h\r\nconnection: close\r\n\r\n")
    assert server2.next_request() is not None
    server2.respond(204)
    assert server2.closed


def test_wire_bounds_pipelined_bytes_while_busy() -> None:
    server = ServerWire(max_body_size=10, max_header_size=100)
    server.receive_data(b"GET / HTTP/1.1\r\nhost: h\r\n\r\n")
    assert server.next_request() is not None
    server.receive_data(b"x" * 200)
    assert server.closed


@settings(max_examples=60)
@given(st.binary(max_size=200))
def test_wire_garbage_never_raises(garbage: bytes) -> None:
    server = ServerWire(max_body_size=50, max_header_size=100)
    server.receive_data(garbage)
    while server.next_request() is not None:
        server.respond(200)
    server.receive_data(b"")
    server.next_request()
    out = server.data_to_send()
    assert out == b"" or out.startswith(b"HTTP/1.1 ")
