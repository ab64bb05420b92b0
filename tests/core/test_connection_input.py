"""Input at the connection level: framing, bad bytes, and the replies they earn.

Both roles are driven (the client receives garbage from a server as readily as the other way
round). Every emitted message is checked against the official schema of the revision.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sansio import (
    HANDSHAKE_REVISIONS,
    NEED_DATA,
    ClientConnection,
    Connection,
    ErrorCode,
    Event,
    MessageRejected,
    Notification,
    RemoteProtocolError,
    Request,
    ServerConnection,
    State,
    UnexpectedResponse,
    _json,
)
from tests import schemas
from tests.pair import CLIENT_INFO, SERVER_INFO

SETTINGS = settings(
    max_examples=75, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

REV = HANDSHAKE_REVISIONS[-1]
CLIENT_CAPS = {"roots": {"listChanged": True}, "sampling": {}}
SERVER_CAPS = {"tools": {"listChanged": True}, "prompts": {}, "logging": {}}
ROLES = ["server", "client"]


def line(message: Any) -> bytes:
    return json.dumps(message).encode() + b"\n"


# -- connections in the operating state --------------------------------------------------------


# The handshake goes in as decoded messages, which no size or depth limit applies to, so that
# connections with tiny limits can still be made ready.


def ready_server(**kwargs: Any) -> ServerConnection:
    conn = ServerConnection(info=SERVER_INFO, capabilities=SERVER_CAPS, **kwargs)
    conn.receive_message({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": REV, "capabilities": CLIENT_CAPS,
                   "clientInfo": CLIENT_INFO},
    })
    conn.receive_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
    conn.events()
    conn.data_to_send()
    assert conn.state is State.OPERATING
    return conn


def ready_client(**kwargs: Any) -> ClientConnection:
    conn = ClientConnection(info=CLIENT_INFO, capabilities=CLIENT_CAPS, **kwargs)
    request_id = conn.initialize(now=0)
    conn.receive_message({
        "jsonrpc": "2.0", "id": request_id,
        "result": {"protocolVersion": REV, "capabilities": SERVER_CAPS,
                   "serverInfo": SERVER_INFO},
    })
    conn.events()
    conn.data_to_send()
    assert conn.state is State.OPERATING
    return conn


READY: dict[str, Callable[..., Connection]] = {"server": ready_server, "client": ready_client}

#: A request each side may receive (and the application sees), and one it answers itself.
PEER_REQUEST = {"server": "tools/list", "client": "roots/list"}
PEER_NOTIFICATION = {"server": "notifications/roots/list_changed",
                     "client": "notifications/tools/list_changed"}


def drain(conn: Connection) -> list[Event]:
    out: list[Event] = []
    while (event := conn.next_event()) is not NEED_DATA:
        out.append(event)
    return out


def emitted(conn: Connection) -> list[Any]:
    """Drain the outbox; check each message is one valid line and valid for the schema."""
    data = conn.data_to_send()
    assert data == b"" or data.endswith(b"\n")
    messages = [json.loads(x) for x in data.splitlines()]
    for message in messages:
        validate(conn.revision, message)
    return messages


def validate(revision: str, message: Any) -> None:
    # An error answering an unreadable id carries "id": null, as JSON-RPC 2.0 section 5
    # requires; no MCP schema admits null, so the envelope is checked with a stand-in id.
    if isinstance(message, dict) and "error" in message and message.get("id", 0) is None:
        message = {**message, "id": 0}
    schemas.validate_message(revision, message, {})


def run(conn: Connection, chunks: list[bytes]) -> tuple[list[Event], list[Any]]:
    """Feed ``chunks`` one by one, following the call-order contract after each."""
    events: list[Event] = []
    output: list[Any] = []
    for chunk in chunks:
        if not chunk:
            continue  # b"" would mean end of stream
        conn.receive_data(chunk, now=0)
        events.extend(drain(conn))
        output.extend(emitted(conn))
    return events, output


def rejected_reply(events: list[Event], output: list[Any], code: int, reply_id: Any) -> None:
    """Exactly one MessageRejected with ``code`` and exactly one error reply for it."""
    assert len(events) == 1, events
    event = events[0]
    assert isinstance(event, MessageRejected)
    assert event.code == code
    assert event.replied is True
    assert event.request_id == reply_id
    assert output == [{"jsonrpc": "2.0", "id": reply_id,
                       "error": {"code": code, "message": event.reason}}]


def still_works(conn: Connection, role: str) -> None:
    """A later valid request is still answered (ping, automatically) and delivered."""
    events, output = run(conn, [line({"jsonrpc": "2.0", "id": "later", "method": "ping"}),
                                line({"jsonrpc": "2.0", "id": 77,
                                      "method": PEER_REQUEST[role]})])
    assert output == [{"jsonrpc": "2.0", "id": "later", "result": {}}]
    assert events == [Request(request_id=77, method=PEER_REQUEST[role], params=None)]


# -- a corpus of lines, valid and not ----------------------------------------------------------

ids = st.one_of(st.integers(1, 4), st.sampled_from(["a", "b"]))


def valid_lines(role: str) -> st.SearchStrategy[bytes]:
    return st.one_of(
        ids.map(lambda i: line({"jsonrpc": "2.0", "id": i, "method": "ping"})),
        ids.map(lambda i: line({"jsonrpc": "2.0", "id": i, "method": PEER_REQUEST[role]})),
        st.just(line({"jsonrpc": "2.0", "method": PEER_NOTIFICATION[role]})),
        st.just(line({"jsonrpc": "2.0", "method": "notifications/custom", "params": {"x": 1}})),
        ids.map(lambda i: line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                "params": {"requestId": i}})),
        ids.map(lambda i: line({"jsonrpc": "2.0", "id": i, "result": {}})),
        ids.map(lambda i: line({"jsonrpc": "2.0", "id": i, "method": "no/such/method"})),
    )


BAD_LINES = [
    b"{\n", b"not json\n", b"\xff\xfe\n", b'{"jsonrpc":"2.0","id":1,"method":"p\xc3"}\n',
    b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}\n', b"NaN\n", b"[1,]\n",
    b'{"jsonrpc":"2.0","id":1,"method":"ping",}\n', b"[" * 200 + b"]" * 200 + b"\n",
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}\n', b'{"v":1e400}\n',
    b'{"jsonrpc":"1.0","id":3,"method":"ping"}\n', b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n', b'{"jsonrpc":"2.0","method":5}\n',
    b'{"jsonrpc":"2.0","id":2,"result":[]}\n', b'{"jsonrpc":"2.0","method":"x","params":[]}\n',
    b"[]\n", b'[{"jsonrpc":"2.0","id":9,"method":"ping"}]\n', b"1\n", b"null\n",
    b'"' + b"x" * 300 + b'"\n',  # oversized for the small limits used below
    b"\n", b"   \r\n", b'{"jsonrpc":"2.0","id":4,"method":"ping"}\r\n',
]


def corpus(role: str) -> st.SearchStrategy[list[bytes]]:
    return st.lists(st.one_of(valid_lines(role), st.sampled_from(BAD_LINES)), max_size=8)


# -- framing: whole, byte by byte, any chunking ------------------------------------------------


@SETTINGS
@given(data=st.data())
@pytest.mark.parametrize("role", ROLES)
def test_byte_by_byte_gives_the_same_events_and_output(
    json_backend: str, role: str, data: st.DataObject
) -> None:
    lines = data.draw(corpus(role))
    stream = b"".join(lines)
    whole = run(READY[role](max_message_size=256), [stream])
    single = run(READY[role](max_message_size=256),
                 [stream[i : i + 1] for i in range(len(stream))])
    assert single == whole
    per_line = run(READY[role](max_message_size=256), lines)
    assert per_line == whole


@SETTINGS
@given(data=st.data())
@pytest.mark.parametrize("role", ROLES)
def test_any_chunking_gives_the_same_events_and_output(
    json_backend: str, role: str, data: st.DataObject
) -> None:
    stream = b"".join(data.draw(corpus(role)))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(stream)), max_size=20))))
    bounds = [0, *cuts, len(stream)]
    chunks = [stream[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    assert run(READY[role](max_message_size=256), chunks) == run(
        READY[role](max_message_size=256), [stream])


# -- arbitrary bytes ---------------------------------------------------------------------------

garbage = st.lists(
    st.one_of(st.binary(max_size=80), st.sampled_from([b"\n", b"\r\n", b"{", b"[", b'"', b"}"]),
              st.sampled_from(BAD_LINES)),
    max_size=12,
)


@SETTINGS
@given(pieces=garbage, max_size=st.integers(1, 120), fresh=st.booleans())
@pytest.mark.parametrize("role", ROLES)
def test_arbitrary_bytes_never_raise_and_memory_stays_bounded(
    json_backend: str, role: str, pieces: list[bytes], max_size: int, fresh: bool
) -> None:
    conn: Connection
    if fresh:  # before the handshake, too
        conn = (ServerConnection if role == "server" else ClientConnection)(
            max_message_size=max_size)
    else:
        conn = READY[role](max_message_size=max_size)
    for piece in pieces:
        try:
            conn.receive_data(piece or b" ", now=0)
            for event in drain(conn):
                assert isinstance(event, Event)
        except RemoteProtocolError:
            pass  # the only exception the peer's bytes may cause
        assert conn._splitter.pending <= max_size + len(piece)
        assert conn._splitter.pending <= max_size + 1  # + 1: a CR waiting for its LF
        for message in emitted(conn):
            if "error" in message:
                assert message["error"]["code"] in (-32700, -32600, -32601, -32602, -32603)


@SETTINGS
@given(pieces=st.lists(st.binary(max_size=200), max_size=10))
@pytest.mark.parametrize("role", ROLES)
def test_arbitrary_bytes_with_default_limits(
    json_backend: str, role: str, pieces: list[bytes]
) -> None:
    conn = READY[role]()
    for piece in pieces:
        conn.receive_data(piece + b"\n", now=0)
        drain(conn)
        emitted(conn)
    still_works(conn, role)


# -- malformed JSON: -32700, id null, and the connection goes on -------------------------------

PARSE_ERRORS = {
    "truncated": b'{"jsonrpc":"2.0","id":1,"method":"ping"',
    "not json": b"hello",
    "single quotes": b"{'jsonrpc':'2.0'}",
    "trailing comma": b'{"jsonrpc":"2.0","id":1,"method":"ping",}',
    "two values": b'{"jsonrpc":"2.0","id":1,"method":"ping"} {}',
    "NaN": b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"v":NaN}}',
    "Infinity": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"v":-Infinity}}',
    "1e400": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"v":1e400}}',
    "400-digit integer": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"v":'
    + b"9" * 400 + b"}}",
    "5000-digit integer": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"v":'
    + b"1" * 5000 + b"}}",
    "invalid UTF-8": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"v":"\xff"}}',
    "truncated UTF-8": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"v":"\xe2\x82"}}',
    "UTF-8 surrogate": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"v":"\xed\xa0\x80"}}',
    "lone surrogate escape": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"v":"\\udc00"}}',
    "BOM": b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}',
    "UTF-16": '{"jsonrpc":"2.0","id":1,"method":"ping"}'.encode("utf-16"),
    "control character": b'{"jsonrpc":"2.0","id":1,"method":"p\x01ng"}',
    "too deep": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"v":'
    + b"[" * 200 + b"]" * 200 + b"}}",
    "too deep batch": b"[" * 129 + b"]" * 129,
}


@pytest.mark.parametrize("case", list(PARSE_ERRORS))
@pytest.mark.parametrize("role", ROLES)
def test_malformed_json_is_a_parse_error_and_the_connection_goes_on(
    json_backend: str, role: str, case: str
) -> None:
    conn = READY[role]()
    events, output = run(conn, [PARSE_ERRORS[case] + b"\n"])
    rejected_reply(events, output, ErrorCode.PARSE_ERROR, None)
    assert output[0]["id"] is None and "id" in output[0]
    still_works(conn, role)


def nest(levels: int) -> Any:
    """A value exactly ``levels`` containers deep."""
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("max_depth", [2, 3, 8, 32])
def test_the_configured_depth_limit_applies(json_backend: str, max_depth: int) -> None:
    conn = ready_server(max_depth=max_depth)
    # The envelope is one level, params a second: the rest is left for "v".
    fits = {"jsonrpc": "2.0", "method": "notifications/custom",
            "params": {"v": nest(max_depth - 2)}}
    events, output = run(conn, [line(fits)])
    assert output == []
    assert events == [Notification(method="notifications/custom", params=fits["params"])]
    too_deep = {"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"v": nest(max_depth - 1)}}
    events, output = run(conn, [line(too_deep)])
    rejected_reply(events, output, ErrorCode.PARSE_ERROR, None)
    still_works(conn, "server")


# -- oversized lines: -32600, id null, and the connection goes on ------------------------------


@pytest.mark.parametrize("chunk", [None, 1, 7, 64])
@pytest.mark.parametrize("role", ROLES)
def test_oversized_line_is_invalid_request_and_the_connection_goes_on(
    json_backend: str, role: str, chunk: int | None
) -> None:
    conn = READY[role](max_message_size=100)
    big = line({"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"pad": "x" * 200}})
    chunks = [big] if chunk is None else [big[i : i + chunk] for i in range(0, len(big), chunk)]
    events, output = run(conn, chunks)
    rejected_reply(events, output, ErrorCode.INVALID_REQUEST, None)
    still_works(conn, role)


def test_a_message_of_exactly_the_limit_is_accepted(json_backend: str) -> None:
    message = {"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"pad": ""}}
    size = len(json.dumps(message).encode())
    message["params"]["pad"] = "x" * (200 - size)
    conn = ready_server(max_message_size=200)
    events, output = run(conn, [line(message)])
    assert events == [] and output == [{"jsonrpc": "2.0", "id": 5, "result": {}}]
    message["params"]["pad"] += "x"
    events, output = run(conn, [line(message)])
    rejected_reply(events, output, ErrorCode.INVALID_REQUEST, None)


# -- invalid envelopes -------------------------------------------------------------------------

READABLE_ID = [
    ({"jsonrpc": "1.0", "id": 5, "method": "ping"}, 5),
    ({"id": "s", "method": "ping"}, "s"),
    ({"jsonrpc": "2.0", "id": 6}, 6),
    ({"jsonrpc": "2.0", "id": 7, "method": 12}, 7),
    ({"jsonrpc": "2.0", "id": "p", "method": "ping", "params": [1]}, "p"),
    ({"jsonrpc": "2.0", "id": 8, "method": "ping", "params": None}, 8),
    ({"jsonrpc": "2.0", "id": 9, "method": "ping", "result": {}}, 9),
]
UNREADABLE_ID = [
    {"jsonrpc": "2.0", "id": None, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
    {"jsonrpc": "2.0", "id": True, "method": "ping"},
    {"jsonrpc": "2.0", "id": [1], "method": "ping"},
    {"jsonrpc": "2.0", "method": 1, "params": "bar"},
    {"foo": "boo"},
    1,
    "ping",
]
NEVER_ANSWERED = [
    {"jsonrpc": "1.0", "method": "notifications/custom"},
    {"jsonrpc": "2.0", "method": "notifications/custom", "params": [1]},
    {"jsonrpc": "2.0", "id": 1, "result": []},
    {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}},
    {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}},
    {"jsonrpc": "2.0", "id": None, "result": {}},
]


@pytest.mark.parametrize(("message", "reply_id"), READABLE_ID)
@pytest.mark.parametrize("role", ROLES)
def test_invalid_envelope_with_readable_id_is_answered_with_that_id(
    json_backend: str, role: str, message: dict[str, Any], reply_id: Any
) -> None:
    conn = READY[role]()
    events, output = run(conn, [line(message)])
    rejected_reply(events, output, ErrorCode.INVALID_REQUEST, reply_id)
    still_works(conn, role)


@pytest.mark.parametrize("message", UNREADABLE_ID, ids=repr)
@pytest.mark.parametrize("role", ROLES)
def test_invalid_envelope_with_unreadable_id_is_answered_with_null(
    json_backend: str, role: str, message: Any
) -> None:
    conn = READY[role]()
    events, output = run(conn, [line(message)])
    rejected_reply(events, output, ErrorCode.INVALID_REQUEST, None)
    still_works(conn, role)


@pytest.mark.parametrize("message", NEVER_ANSWERED, ids=repr)
@pytest.mark.parametrize("role", ROLES)
def test_invalid_notifications_and_responses_are_reported_not_answered(
    json_backend: str, role: str, message: dict[str, Any]
) -> None:
    conn = READY[role]()
    events, output = run(conn, [line(message)])
    assert output == []
    assert len(events) == 1
    assert isinstance(events[0], MessageRejected)
    assert events[0].replied is False
    still_works(conn, role)


@pytest.mark.parametrize("role", ROLES)
def test_a_response_to_nothing_is_reported(json_backend: str, role: str) -> None:
    conn = READY[role]()
    events, output = run(conn, [line({"jsonrpc": "2.0", "id": 123, "result": {}})])
    assert output == []
    assert events == [UnexpectedResponse(request_id=123, result={})]


# -- receive_message behaves like receive_data -------------------------------------------------


def via_message(conn: Connection, message: Any) -> tuple[list[Event], list[Any]]:
    conn.receive_message(message, now=0)
    return drain(conn), emitted(conn)


@SETTINGS
@given(data=st.data())
@pytest.mark.parametrize("role", ROLES)
def test_receive_message_matches_receive_data(
    json_backend: str, role: str, data: st.DataObject
) -> None:
    lines = [x for x in data.draw(corpus(role)) if x.strip()]
    for raw in lines:
        text = raw.rstrip(b"\n").removesuffix(b"\r")
        reference = run(READY[role](max_message_size=256), [raw])
        assert via_message(READY[role](max_message_size=256), text) == reference
        assert via_message(READY[role](max_message_size=256), bytearray(text)) == reference
        try:
            decoded = _json.loads(text, 128)
        except _json.DecodeError:
            continue
        if len(text) <= 256:
            assert via_message(READY[role](max_message_size=256), decoded) == reference


@pytest.mark.parametrize("role", ROLES)
def test_receive_message_sequences_match_receive_data(json_backend: str, role: str) -> None:
    lines = [line({"jsonrpc": "2.0", "id": 1, "method": PEER_REQUEST[role]}),
             line({"jsonrpc": "2.0", "id": 1, "method": PEER_REQUEST[role]}),  # id in use
             b"{oops\n",
             line({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
             line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 1}})]
    reference = run(READY[role](), lines)
    conn = READY[role]()
    as_bytes: tuple[list[Event], list[Any]] = ([], [])
    for raw in lines:
        events, output = via_message(conn, raw.rstrip(b"\n"))
        as_bytes[0].extend(events)
        as_bytes[1].extend(output)
    assert as_bytes == reference
    kinds = [type(e).__name__ for e in reference[0]]
    assert kinds == ["Request", "MessageRejected", "MessageRejected", "CancelRequested"]
    assert [m.get("id") for m in reference[1]] == [1, None, 2]
