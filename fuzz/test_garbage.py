"""Garbage in, events out: arbitrary input never breaks a connection.

Client and server connections are built in every lifecycle state (IDLE, INITIALIZING,
OPERATING with requests in flight both ways, CLOSED), at a revision drawn from the four
handshake-era ones (2025-03-26 is the one with batches), with the default message size limit
or a tiny one (so the oversized-line path runs too). Then hypothesis feeds them:

* arbitrary bytes, mixed with real lines, blank lines and CRLFs (:func:`test_bytes`);
* arbitrary JSON values, valid JSON-RPC messages built from templates for every method of
  the method table, *almost valid* ones (a template with one field deleted, replaced by a
  value of the wrong type, or an extra field added), and batches of all of these
  (:func:`test_json_values`);
* values handed over already decoded by a lenient decoder: lone surrogates, NaN, huge
  integers (:func:`test_decoded_values`).

Two deterministic sweeps back the random search: every template with every field deleted or
set to a value of each JSON type (:func:`test_one_field_sweep`), and with every field set to
each such "loose" value, alone and in a batch (:func:`test_decoded_sweep`).

Properties:

1. only events come out: no exception escapes ``receive_*``/``next_event()`` except
   ``RemoteProtocolError``, and that only with the connection CLOSED;
2. one chunk, byte by byte, and a random split give the same events and the same output
   (for JSON values, ``receive_message`` with the bytes and with the decoded value too), and
   the caller's decoded value is not modified;
3. every reply the core emits is a valid JSON-RPC response (``jsonrpc: "2.0"``; an error has
   an integer ``code`` and a string ``message``); for one JSON value fed, a reply's id is the
   message's id when it could be read, else null; notifications and responses are never
   answered; a batch's replies name ids from the batch (or null);
4. a closed connection produces nothing; a server never closes on garbage (only EOF closes
   it); a client closes only when garbage completes its pending ``initialize`` badly;
5. afterwards an open connection still answers a ``ping`` ("a bad message never kills a
   connection", DESIGN.md principle 5).

``MCP_SANSIO_FUZZ_EXAMPLES`` sets the number of examples per test and state (default 100).
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sansio import (
    HANDSHAKE_REVISIONS,
    METHODS,
    NEED_DATA,
    ClientConnection,
    CloseReason,
    Connection,
    ConnectionClosed,
    RemoteProtocolError,
    ServerConnection,
    State,
)

EXAMPLES = int(os.environ.get("MCP_SANSIO_FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

CLIENT_INFO = {"name": "garbage-client", "version": "1"}
SERVER_INFO = {"name": "garbage-server", "version": "1"}
# Declare (nearly) everything, so that every gated path is reachable.
CLIENT_CAPS: dict[str, Any] = {
    "sampling": {"tools": {}, "context": {}},
    "roots": {"listChanged": True},
    "elicitation": {"form": {}, "url": {}},
    "tasks": {"list": {}, "cancel": {}},
}
SERVER_CAPS: dict[str, Any] = {
    "tools": {"listChanged": True},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "logging": {},
    "completions": {},
    "tasks": {"list": {}, "cancel": {}},
}
STATES = ("idle", "initializing", "operating", "closed")
TINY = 96  # a message size limit small enough for the fuzz to exceed often
NOW = 1.0
PROBE_ID = "liveness-probe\u2603"

_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # integers the decoder keeps as integers


# -- connections in every state ---------------------------------------------------------------


def _settle(conn: Connection) -> None:
    while conn.next_event() is not NEED_DATA:
        pass
    conn.data_to_send()


def make_client(state: str, revision: str, max_size: int | None) -> ClientConnection:
    kwargs: dict[str, Any] = {} if max_size is None else {"max_message_size": max_size}
    conn = ClientConnection(info=CLIENT_INFO, capabilities=CLIENT_CAPS, versions=[revision],
                            **kwargs)
    if state == "idle":
        return conn
    conn.initialize(now=0.0)  # id 1
    _settle(conn)
    if state == "initializing":
        return conn
    # Messages are fed decoded, so that setup is not subject to the tiny size limit.
    conn.receive_message({"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": revision, "capabilities": SERVER_CAPS, "serverInfo": SERVER_INFO,
    }}, now=0.0)
    _settle(conn)
    assert conn.state is State.OPERATING
    sub = conn.send_request("resources/subscribe", {"uri": "file:///a"}, now=0.0)
    conn.receive_message({"jsonrpc": "2.0", "id": sub, "result": {}}, now=0.0)
    conn.send_request("tools/call", {"name": "t", "arguments": {}}, now=0.0, progress=True)
    conn.send_request("ping", now=0.0)
    conn.receive_message({"jsonrpc": "2.0", "id": 1, "method": "roots/list"}, now=0.0)
    conn.receive_message({"jsonrpc": "2.0", "id": 2, "method": "sampling/createMessage",
                          "params": {"messages": [], "maxTokens": 1,
                                     "_meta": {"progressToken": "p"}}}, now=0.0)
    _settle(conn)
    if state == "operating":
        return conn
    conn.receive_eof(now=0.0)
    _settle(conn)
    assert conn.state is State.CLOSED
    return conn


def make_server(state: str, revision: str, max_size: int | None) -> ServerConnection:
    kwargs: dict[str, Any] = {} if max_size is None else {"max_message_size": max_size}
    conn = ServerConnection(info=SERVER_INFO, capabilities=SERVER_CAPS, **kwargs)
    if state == "idle":
        return conn
    conn.receive_message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": revision, "capabilities": CLIENT_CAPS, "clientInfo": CLIENT_INFO,
    }}, now=0.0)
    _settle(conn)
    assert conn.state is State.INITIALIZING
    if state == "initializing":
        return conn
    conn.receive_message({"jsonrpc": "2.0", "method": "notifications/initialized"}, now=0.0)
    conn.receive_message({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "t", "_meta": {"progressToken": 7}}}, now=0.0)
    _settle(conn)
    assert conn.state is State.OPERATING
    conn.send_request("sampling/createMessage", {"messages": [], "maxTokens": 1}, now=0.0,
                      progress=True)
    conn.send_request("roots/list", now=0.0)
    conn.send_request("ping", now=0.0)
    _settle(conn)
    if state == "operating":
        return conn
    conn.receive_eof(now=0.0)
    _settle(conn)
    assert conn.state is State.CLOSED
    return conn


def make(role: str, state: str, revision: str, max_size: int | None) -> Connection:
    return (make_client if role == "client" else make_server)(state, revision, max_size)


# -- strategies ------------------------------------------------------------------------------

KEYS = ["jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data",
        "_meta", "progressToken", "progress", "requestId", "uri", "level", "name"]
ints = st.one_of(st.integers(min_value=-3, max_value=8), st.integers(_INT_MIN, _INT_MAX))
scalars = st.one_of(
    st.none(), st.booleans(), ints,
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), children,
                        max_size=5),
    ),
    max_leaves=12,
)
ids = st.one_of(st.sampled_from([0, 1, 2, 3, 4, 7, "1", "p", -1, _INT_MAX]), ints,
                st.text(max_size=6))
#: Values of the wrong type for almost any field.
CONFUSERS = [None, True, False, 0, -1, 1.5, -0.0, "", "x", [], {}, [1], {"a": 1},
             _INT_MAX, _INT_MIN, "2.0", "initialize", "ping"]
wrong_values = st.one_of(st.sampled_from(CONFUSERS), st.sampled_from(CONFUSERS), json_values)

#: Plausible params for each method (anything not listed gets a progress token only).
PARAMS: dict[str, Any] = {
    "initialize": {"protocolVersion": "2025-03-26", "capabilities": {},
                   "clientInfo": {"name": "x", "version": "1"}},
    "tools/call": {"name": "t", "arguments": {"a": 1}},
    "prompts/get": {"name": "p", "arguments": {}},
    "resources/read": {"uri": "file:///a"},
    "resources/subscribe": {"uri": "file:///a"},
    "resources/unsubscribe": {"uri": "file:///a"},
    "logging/setLevel": {"level": "info"},
    "completion/complete": {"ref": {"type": "ref/prompt", "name": "p"},
                            "argument": {"name": "a", "value": "v"}},
    "sampling/createMessage": {"messages": [], "maxTokens": 1, "tools": [],
                               "includeContext": "thisServer"},
    "elicitation/create": {"mode": "url", "message": "m", "url": "https://x",
                           "elicitationId": "e"},
    "tasks/get": {"taskId": "t"},
    "notifications/cancelled": {"requestId": 2, "reason": "r"},
    "notifications/progress": {"progressToken": 7, "progress": 1, "total": 2, "message": "m"},
    "notifications/message": {"level": "error", "data": "x"},
    "notifications/resources/updated": {"uri": "file:///a"},
    "notifications/elicitation/complete": {"elicitationId": "e"},
}
ROLES = ("client", "server")
_PEER = {"client": "server", "server": "client"}


def _methods(kind: str, sender: str | None = None) -> list[str]:
    """Method names of ``kind`` in the method table (sent by ``sender``, if given)."""
    extra = {"request": "no/such/method", "notification": "notifications/closed"}[kind]
    return sorted({rule.method for rule in METHODS if rule.kind.value == kind and (
        sender is None or rule.sender.value in (sender, "both"))} | {extra})


@st.composite
def templates(draw: st.DrawFn, receiver: str | None = None) -> dict[str, Any]:
    """A valid JSON-RPC message: request, notification, result or error. Methods are drawn
    from the whole table, from those the ``receiver``'s peer sends, and from those with
    params worth mutating."""
    kind = draw(st.sampled_from(["request", "notification", "result", "error"]))
    if kind in ("request", "notification"):
        every = _methods(kind)
        relevant = _methods(kind, _PEER[receiver]) if receiver else every
        method = draw(st.one_of(
            st.sampled_from(every),
            st.sampled_from(relevant),
            st.sampled_from([m for m in relevant if m in PARAMS] or relevant),
        ))
        params = copy.deepcopy(PARAMS.get(method, {"_meta": {"progressToken": 7}}))
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if kind == "request":
            message["id"] = draw(ids)
        if draw(st.booleans()) or method in PARAMS:
            message["params"] = params
        return message
    if kind == "result":
        return {"jsonrpc": "2.0", "id": draw(ids), "result": draw(st.sampled_from(
            [{}, {"protocolVersion": "2025-06-18", "capabilities": {},
                  "serverInfo": {"name": "s", "version": "1"}}, {"tools": []}]))}
    return {"jsonrpc": "2.0", "id": draw(st.one_of(ids, st.none())),
            "error": {"code": draw(st.sampled_from([-32603, -32601, 1])), "message": "m"}}


def _slots(value: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key) pair inside ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            out.append((value, key))
            _slots(item, out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.append((value, index))
            _slots(item, out)
    return out


@st.composite
def almost_valid(draw: st.DrawFn, receiver: str | None = None) -> dict[str, Any]:
    """A valid message with exactly one field mutated: deleted, replaced by a value of
    another type, or an extra field added (half the time inside params/result/error)."""
    message = draw(templates(receiver))
    slots = _slots(message, [])
    inner = [slot for slot in slots if slot[0] is not message]
    container, key = draw(st.sampled_from(inner if inner and draw(st.booleans()) else slots))
    operation = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
    if operation == "delete":
        del container[key]
    elif operation == "replace":
        container[key] = draw(wrong_values)
    else:
        dicts = [message] + [c[k] for c, k in slots if isinstance(c[k], dict)]
        target = draw(st.sampled_from(dicts))
        target[draw(st.one_of(st.sampled_from(KEYS), st.text(max_size=6)))] = draw(wrong_values)
    return message


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _any_json(receiver: str) -> st.SearchStrategy[Any]:
    messages = st.one_of(templates(receiver), almost_valid(receiver), almost_valid(receiver))
    batches = st.lists(st.one_of(messages, json_values), max_size=4)
    return st.one_of(json_values, messages, messages, messages, batches)


def _garbage_bytes(receiver: str) -> st.SearchStrategy[bytes]:
    junk_lines = st.one_of(
        st.binary(max_size=40),
        st.sampled_from([b"\n", b"\r\n", b"   \n", b"\n\n", b"{", b"}", b"[]", b"\xff\xfe",
                         b"\xe2\x82", b'"\\ud800"', b"NaN", b"1e999", b"[" * 200]),
        ANY_JSON[receiver].map(lambda v: _encode(v) + b"\n"),
    )
    return st.one_of(st.binary(max_size=300), st.lists(junk_lines, max_size=6).map(b"".join))


#: Per receiving role: arbitrary JSON values, messages, almost-valid messages and batches ...
ANY_JSON = {role: _any_json(role) for role in ROLES}
#: ... and arbitrary bytes mixed with such lines, blank lines and CRLFs.
GARBAGE_BYTES = {role: _garbage_bytes(role) for role in ROLES}


# -- driving and checking --------------------------------------------------------------------


class Run:
    """What one connection did with one input: its events (and RemoteProtocolErrors, as
    markers) and everything it wrote."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.trace: list[Any] = []
        self.output = b""

    def call(self, method: Any, *args: Any) -> None:
        conn = self.conn
        try:
            method(*args, now=NOW)
        except RemoteProtocolError as exc:
            assert conn.state is State.CLOSED, f"RemoteProtocolError {exc!r} on an open conn"
            self.trace.append(("RemoteProtocolError", exc.code))
        self.drain()

    def drain(self) -> None:
        conn = self.conn
        while True:
            try:
                event = conn.next_event()
            except RemoteProtocolError as exc:
                assert conn.state is State.CLOSED, f"RemoteProtocolError {exc!r} while open"
                self.trace.append(("RemoteProtocolError", exc.code))
                break
            if event is NEED_DATA:
                break
            assert not any(isinstance(e, ConnectionClosed) for e in self.trace), (
                f"event after ConnectionClosed: {event!r}"
            )
            self.trace.append(event)
        self.output += conn.data_to_send()

    def messages(self) -> list[Any]:
        out = []
        assert self.output == b"" or self.output.endswith(b"\n")
        for line in self.output.split(b"\n")[:-1]:
            out.append(json.loads(line))
        return out


def feed_chunks(conn: Connection, chunks: list[bytes], eof: bool) -> Run:
    run = Run(conn)
    for chunk in chunks:
        assert chunk, "an empty chunk would mean EOF"
        run.call(conn.receive_data, chunk)
    if eof:
        run.call(conn.receive_eof)
    return run


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


def _is_response(message: Any) -> bool:
    return type(message) is dict and "method" not in message


def check_reply(reply: Any) -> None:
    """A well-formed JSON-RPC response (property 3)."""
    assert type(reply) is dict, f"not an object: {reply!r}"
    assert reply.get("jsonrpc") == "2.0", reply
    assert "id" in reply, f"a reply without id: {reply!r}"
    rid = reply["id"]
    assert rid is None or type(rid) in (int, str), reply
    assert ("result" in reply) != ("error" in reply), reply
    if "error" in reply:
        error = reply["error"]
        assert type(error) is dict, reply
        assert type(error.get("code")) is int, f"error code not an integer: {reply!r}"
        assert type(error.get("message")) is str, f"error message not a string: {reply!r}"
        assert set(error) <= {"code", "message", "data"}, reply
        assert set(reply) == {"jsonrpc", "id", "error"}, reply
    else:
        assert type(reply["result"]) is dict and set(reply) == {"jsonrpc", "id", "result"}


def replies(run: Run) -> list[Any]:
    """Every response object the connection wrote (batch arrays flattened)."""
    out = []
    for message in run.messages():
        if type(message) is list:
            assert message, "an empty batch reply"
            for item in message:
                check_reply(item)
                out.append(item)
        elif _is_response(message):
            check_reply(message)
            out.append(message)
        else:
            assert type(message) is dict and type(message.get("method")) is str, message
    return out


def _readable_id(value: Any) -> tuple[bool, Any]:
    """Whether the message's id can be read (and written back): a string that UTF-8 can
    carry (a lone surrogate cannot be written, so its reply must say null), or an integer
    the decoder keeps as an integer."""
    if isinstance(value, dict) and "id" in value:
        rid = value["id"]
        if type(rid) is int and _INT_MIN <= rid <= _INT_MAX:
            return True, rid
        if type(rid) is str:
            try:
                rid.encode("utf-8")
            except UnicodeEncodeError:
                return False, None
            return True, rid
    return False, None


def _ids_in(data: bytes) -> set[Any]:
    """The readable ids of every line of ``data`` that decodes as JSON (leniently)."""
    found: set[Any] = set()
    for line in data.split(b"\n"):
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            continue
        for item in value if isinstance(value, list) else [value]:
            readable, rid = _readable_id(item)
            if readable:
                found.add(rid)
    return found


def check_closing(role: str, state: str, before: State, run: Run) -> None:
    """Property 4 (garbage never closes a connection, except a failed initialize)."""
    if state == "closed":
        assert run.trace == [] and run.output == b"", "a closed connection produced something"
        return
    if run.conn.state is not State.CLOSED:
        return
    closed = [e for e in run.trace if isinstance(e, ConnectionClosed)]
    assert closed, "CLOSED without a ConnectionClosed event"
    if closed[0].reason is CloseReason.EOF:
        return
    assert role == "client" and before is State.INITIALIZING, (
        f"garbage closed a {role} in {before}: {closed[0]!r}"
    )
    assert closed[0].reason in (CloseReason.INITIALIZE_FAILED, CloseReason.VERSION_REJECTED)


def check_alive(role: str, state: str, before: State, run: Run) -> None:
    """Property 5: an open connection still answers a ping."""
    if run.conn.state is State.CLOSED:
        return
    # First end a partial last line, if any: it is one more message, which may (legitimately)
    # complete a pending initialize badly and close a client.
    run.call(run.conn.receive_data, b"\n")
    check_closing(role, state, before, run)
    if run.conn.state is State.CLOSED:
        return
    probe = {"jsonrpc": "2.0", "id": PROBE_ID, "method": "ping"}
    start = len(run.output)
    run.call(run.conn.receive_data, _encode(probe) + b"\n")
    tail = Run(run.conn)
    tail.output = run.output[start:]
    answers = [r for r in replies(tail) if r.get("id") == PROBE_ID]
    assert answers == [{"jsonrpc": "2.0", "id": PROBE_ID, "result": {}}], (
        f"no ping reply after the garbage: {tail.output!r}"
    )


PARAMETERS = [(role, state) for role in ROLES for state in STATES]
revisions = st.sampled_from(HANDSHAKE_REVISIONS)
sizes = st.sampled_from([None, TINY])


# -- the tests -------------------------------------------------------------------------------


@pytest.mark.parametrize(("role", "state"), PARAMETERS)
@FUZZ
@given(revision=revisions, max_size=sizes, draw=st.data(),
       cuts=st.lists(st.integers(min_value=0), max_size=8), eof=st.booleans())
def test_bytes(role: str, state: str, revision: str, max_size: int | None,
               draw: st.DataObject, cuts: list[int], eof: bool) -> None:
    data = draw.draw(GARBAGE_BYTES[role], label="data")
    if not data:
        return
    before = make(role, state, revision, max_size).state
    whole = feed_chunks(make(role, state, revision, max_size), [data], eof)
    bytewise = feed_chunks(make(role, state, revision, max_size),
                           [data[i:i + 1] for i in range(len(data))], eof)
    pieces = feed_chunks(make(role, state, revision, max_size), split(data, cuts), eof)
    assert bytewise.trace == whole.trace, "byte by byte gave different events"
    assert pieces.trace == whole.trace, "a random split gave different events"
    assert bytewise.output == whole.output == pieces.output, "different output"
    sent_ids = _ids_in(data)
    for reply in replies(whole):
        assert reply["id"] is None or reply["id"] in sent_ids, (
            f"reply id {reply['id']!r} is not the id of any message in the input"
        )
    check_closing(role, state, before, whole)
    if not eof:
        check_alive(role, state, before, whole)


@pytest.mark.parametrize(("role", "state"), PARAMETERS)
@FUZZ
@given(revision=revisions, max_size=sizes, draw=st.data(),
       cuts=st.lists(st.integers(min_value=0), max_size=4))
def test_json_values(role: str, state: str, revision: str, max_size: int | None,
                     draw: st.DataObject, cuts: list[int]) -> None:
    value = draw.draw(ANY_JSON[role], label="value")
    line = _encode(value)
    before = make(role, state, revision, max_size).state
    whole = feed_chunks(make(role, state, revision, max_size), [line + b"\n"], False)
    bytewise = feed_chunks(make(role, state, revision, max_size),
                           [line[i:i + 1] for i in range(len(line))] + [b"\n"], False)
    pieces = feed_chunks(make(role, state, revision, max_size), split(line + b"\n", cuts),
                         False)
    assert bytewise.trace == whole.trace, "byte by byte gave different events"
    assert pieces.trace == whole.trace, "a random split gave different events"
    assert bytewise.output == whole.output == pieces.output, "different output"
    # The same message handed over whole, as bytes and already decoded.
    as_bytes = Run(make(role, state, revision, max_size))
    as_bytes.call(as_bytes.conn.receive_message, line)
    assert as_bytes.trace == whole.trace and as_bytes.output == whole.output, (
        "receive_message(bytes) differs from receive_data"
    )
    if max_size is None or len(line) <= max_size:  # decoded values skip the size limit
        pristine = copy.deepcopy(value)
        decoded = Run(make(role, state, revision, max_size))
        decoded.call(decoded.conn.receive_message, value)
        assert decoded.trace == whole.trace and decoded.output == whole.output, (
            "receive_message(decoded value) differs from receive_data"
        )
        assert value == pristine, "the connection modified the caller's message"

    check_replies_to(value, max_size is not None and len(line) > max_size, whole)
    check_closing(role, state, before, whole)
    check_alive(role, state, before, whole)


def check_replies_to(value: Any, oversized: bool, run: Run) -> None:
    """Property 3 for one JSON value fed as one line."""
    answers = replies(run)
    if oversized:
        assert all(r["id"] is None and "error" in r for r in answers)
    elif type(value) is dict:
        method = value.get("method")
        if (type(method) is str and "id" not in value) or (
            method is None and ("result" in value or "error" in value)
        ):
            assert answers == [], f"a notification or response was answered: {answers}"
        assert len(answers) <= 1, f"one message, several replies: {answers}"
        readable, rid = _readable_id(value)
        for reply in answers:
            assert reply["id"] == (rid if readable else None), (
                f"reply id {reply['id']!r} for a message whose id is {value.get('id')!r}"
            )
    elif type(value) is list:
        allowed = {None} | {_readable_id(item)[1] for item in value}
        for reply in answers:
            assert reply["id"] in allowed, f"reply id {reply['id']!r} not from the batch"
    else:
        assert all(r["id"] is None and "error" in r for r in answers), answers


#: The values the sweep puts in each field (one of each JSON type, and the usual suspects).
SWEEP_VALUES: list[Any] = [None, True, -1, 1.5, "x", [], {}, [1], {"a": 1}]


def sweep_messages(*, mutate: bool = True) -> list[Any]:
    """Every template (each method of the table as request and as notification, results and
    errors for the ids in flight) unmutated, then with each field in turn deleted or set to
    each of :data:`SWEEP_VALUES`."""
    bases: list[dict[str, Any]] = []
    for kind in ("request", "notification"):
        for method in _methods(kind):
            message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
            if kind == "request":
                message["id"] = 9
            message["params"] = copy.deepcopy(PARAMS.get(method, {"_meta": {"progressToken": 7}}))
            bases.append(message)
    for rid in (1, 2, 3):
        bases.append({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "serverInfo": {"name": "s", "version": "1"}}})
        bases.append({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "m"}})
    if not mutate:
        return bases
    out: list[Any] = []
    for base in bases:
        out.append(base)
        for index in range(len(_slots(base, []))):
            for replacement in [_DELETE, *SWEEP_VALUES]:
                message = copy.deepcopy(base)
                container, key = _slots(message, [])[index]
                if replacement is _DELETE:
                    del container[key]
                else:
                    container[key] = copy.deepcopy(replacement)
                out.append(message)
    return out


_DELETE = object()


@pytest.mark.parametrize(("role", "state"), PARAMETERS)
def test_one_field_sweep(role: str, state: str) -> None:
    """Not random: every template with every field deleted or replaced by a value of each
    JSON type, each fed to a fresh connection (2025-11-25, the revision with the most
    methods). Same properties as :func:`test_json_values`, with one feeding path."""
    revision = "2025-11-25"
    before = make(role, state, revision, None).state
    for value in sweep_messages():
        line = _encode(value)
        run = Run(make(role, state, revision, None))
        try:
            run.call(run.conn.receive_data, line + b"\n")
            check_replies_to(value, False, run)
            check_closing(role, state, before, run)
            check_alive(role, state, before, run)
        except Exception as exc:
            raise AssertionError(f"{role} in {state} fed {line.decode()}: {exc!r}") from exc


# Values as another JSON decoder may hand them over: the stdlib's ``json.loads`` turns a
# ``"\\ud800"`` escape into a lone surrogate and accepts NaN and Infinity, and an adapter may
# pass what it decoded straight to ``receive_message``. Properties 1, 3, 4 and 5 still hold.
loose_text = st.lists(st.one_of(st.characters(), st.characters(categories=["Cs"])),
                      max_size=4).map("".join)
loose_scalars = st.one_of(scalars, st.floats(), loose_text, st.integers())
loose_values = st.recursive(
    loose_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), loose_text), children, max_size=5),
    ),
    max_leaves=12,
)


loose_ids = st.one_of(loose_text, st.integers(), st.floats(), st.booleans(), st.none())


@st.composite
def loose_messages(draw: st.DrawFn) -> Any:
    """A template (or a loose value) with its id, or one other slot, set to a loose value."""
    message = draw(st.one_of(templates(), templates(), loose_values))
    slots = _slots(message, [])
    if type(message) is dict and "id" in message and draw(st.booleans()):
        message["id"] = draw(loose_ids)
    elif slots:
        container, key = draw(st.sampled_from(slots))
        container[key] = draw(st.one_of(loose_scalars, loose_values))
    return message


@pytest.mark.parametrize(("role", "state"), PARAMETERS)
@FUZZ
@given(revision=revisions, value=st.one_of(loose_messages(), st.lists(loose_messages(),
                                                                       max_size=3)))
def test_decoded_values(role: str, state: str, revision: str, value: Any) -> None:
    check_decoded(role, state, revision, value)


def check_decoded(role: str, state: str, revision: str, value: Any) -> None:
    """Feed one decoded value; properties 1, 3, 4 and 5."""
    before = make(role, state, revision, None).state
    run = Run(make(role, state, revision, None))
    run.call(run.conn.receive_message, value)
    answers = replies(run)

    def readable(message: Any) -> tuple[bool, Any]:
        if type(message) is dict and type(message.get("id")) is int:
            return True, message["id"]  # any int is an int when handed over decoded
        return _readable_id(message)

    if type(value) is dict:
        ok, rid = readable(value)
        for reply in answers:
            assert reply["id"] == (rid if ok else None), (
                f"reply id {reply['id']!r} for a message whose id is {value.get('id')!r}"
            )
    elif type(value) is list:
        allowed = [None] + [readable(item)[1] for item in value]
        for reply in answers:
            assert reply["id"] in allowed, f"reply id {reply['id']!r} not from the batch"
    check_closing(role, state, before, run)
    check_alive(role, state, before, run)


#: What a lenient decoder can hand over that UTF-8 JSON cannot carry (or this decoder would
#: not produce): a lone surrogate, non-finite floats, an integer beyond 64 bits.
LOOSE_SWEEP_VALUES: list[Any] = ["\ud800", "a\udfffb", math.nan, math.inf, 2**70]


@pytest.mark.parametrize(("role", "state"), PARAMETERS)
def test_decoded_sweep(role: str, state: str) -> None:
    """Not random: every template with each field in turn set to each of
    :data:`LOOSE_SWEEP_VALUES`, handed over decoded, alone (2025-11-25) and as a one-element
    batch (2025-03-26, the revision with batches)."""
    for base in sweep_messages(mutate=False):
        for index in range(len(_slots(base, []))):
            for loose in LOOSE_SWEEP_VALUES:
                message = copy.deepcopy(base)
                container, key = _slots(message, [])[index]
                container[key] = loose
                for revision, value in (("2025-11-25", message), ("2025-03-26", [message])):
                    try:
                        check_decoded(role, state, revision, copy.deepcopy(value))
                    except Exception as exc:
                        raise AssertionError(
                            f"{role} in {state} ({revision}) fed decoded {value!r}: {exc!r}"
                        ) from exc
