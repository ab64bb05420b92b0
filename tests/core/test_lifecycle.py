"""The handshake-era lifecycle: every cell of the transition table, driven for real."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio import (
    HANDSHAKE_REVISIONS,
    NEED_DATA,
    ClientConnection,
    CloseReason,
    Connection,
    ConnectionClosed,
    ErrorCode,
    Event,
    Initialized,
    LocalProtocolError,
    MessageRejected,
    Notification,
    Request,
    Response,
    Role,
    ServerConnection,
    State,
    UnexpectedResponse,
)
from mcp_sansio._state import TRANSITIONS, Input, Verdict
from tests import schemas
from tests.pair import CLIENT_INFO, SERVER_INFO, ConnectionPair

CLIENT_CAPS = {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}}
SERVER_CAPS = {
    "tools": {"listChanged": True},
    "logging": {},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "completions": {},
}
REV = HANDSHAKE_REVISIONS[-1]


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def initialize_request(request_id: int = 1, version: str = REV) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0", "id": request_id, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": CLIENT_CAPS,
                   "clientInfo": CLIENT_INFO},
    }


def initialize_result(request_id: int = 1, version: str = REV) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {
        "protocolVersion": version, "capabilities": SERVER_CAPS, "serverInfo": SERVER_INFO}}


STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": CLIENT_CAPS,
    "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
}


def stateless_request(request_id: Any, method: str, params: dict[str, Any] | None = None,
                      **meta: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**(params or {}), "_meta": {**STATELESS_META, **meta}}}


def discover_result(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {
        "resultType": "complete", "supportedVersions": ["2026-07-28"],
        "capabilities": SERVER_CAPS, "ttlMs": 0, "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}}}


def drain(conn: Connection) -> list[Event]:
    out = []
    while (event := conn.next_event()) is not NEED_DATA:
        out.append(event)
    return out


def sent(conn: Connection) -> list[dict[str, Any]]:
    return [json.loads(x) for x in conn.data_to_send().splitlines()]


# -- building a connection in each state ----------------------------------------------------


def make(role: Role, state: State) -> Connection:
    """A connection (dual-era: every known revision) brought to ``state`` for real."""
    conn: Connection
    if role is Role.CLIENT:
        client = ClientConnection(info=CLIENT_INFO, capabilities=CLIENT_CAPS)
        conn = client
        if state in (State.INITIALIZING, State.OPERATING):
            client.initialize(now=0)
        if state is State.OPERATING:
            conn.receive_data(line(initialize_result()))
        if state in (State.PROBING, State.STATELESS):
            probe = client.connect(now=0)
        if state is State.STATELESS:
            conn.receive_data(line(discover_result(probe)))
    else:
        conn = ServerConnection(info=SERVER_INFO, capabilities=SERVER_CAPS)
        if state in (State.INITIALIZING, State.OPERATING):
            conn.receive_data(line(initialize_request()))
        if state is State.OPERATING:
            conn.receive_data(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        if state is State.STATELESS:
            conn.receive_data(line(stateless_request("d", "server/discover")))
    if state is State.CLOSED:
        conn.receive_eof()
    drain(conn)
    conn.data_to_send()
    assert conn.state is state
    return conn


# -- one driver per input: perform it, return what happened ---------------------------------


class Outcome:
    def __init__(self) -> None:
        self.raised: LocalProtocolError | None = None
        self.events: list[Event] = []
        self.output: list[dict[str, Any]] = []


SendDriver = Callable[[Connection], Any]

_OTHER_REQUEST = {Role.CLIENT: ("tools/list", None), Role.SERVER: ("roots/list", None)}
_OTHER_NOTIFICATION = {
    Role.CLIENT: ("notifications/roots/list_changed", None),
    Role.SERVER: ("notifications/tools/list_changed", None),
}
_PEER_REQUEST = {Role.CLIENT: "roots/list", Role.SERVER: "tools/list"}
_PEER_NOTIFICATION = {
    Role.CLIENT: "notifications/tools/list_changed",
    Role.SERVER: "notifications/roots/list_changed",
}


def _send(conn: Connection, inp: Input) -> None:
    role = conn.role
    if inp is Input.SEND_INITIALIZE:
        conn.send_request("initialize", initialize_request()["params"])
    elif inp is Input.SEND_INITIALIZED:
        conn.send_notification("notifications/initialized")
    elif inp is Input.SEND_PING:
        conn.send_request("ping")
    elif inp is Input.SEND_REQUEST:
        conn.send_request(*_OTHER_REQUEST[role])
    elif inp is Input.SEND_LOG:
        related = None
        if role is Role.SERVER and conn.state is State.STATELESS:
            # 2026-07-28: a log message belongs to a request that asked for a level.
            related = "log"
            conn.receive_data(line(stateless_request(related, "tools/list",
                                                     **{"io.modelcontextprotocol/logLevel":
                                                        "debug"})))
            drain(conn)
        conn.send_notification("notifications/message", {"level": "info", "data": "hi"},
                               related_request_id=related)
    elif inp is Input.SEND_UTILITY:
        if role is Role.SERVER and conn.state is State.STATELESS:
            conn.send_notification("notifications/progress", {"progressToken": 1, "progress": 1})
        else:
            conn.send_notification("notifications/cancelled", {"requestId": 99})
    elif inp is Input.SEND_NOTIFICATION:
        if role is Role.SERVER and conn.state is State.STATELESS:
            # 2026-07-28: change notifications travel only on listen streams.
            conn.receive_data(line(stateless_request(
                "listen", "subscriptions/listen", {"notifications": {"toolsListChanged": True}})))
            drain(conn)
            conn.data_to_send()
        conn.send_notification(*_OTHER_NOTIFICATION[role])
    elif inp is Input.SEND_RESPONSE:
        # Answer a real incoming request where one can exist; else an unknown id.
        request_id = 77
        if conn.state is State.OPERATING:
            conn.receive_data(line({"jsonrpc": "2.0", "id": request_id,
                                    "method": _PEER_REQUEST[role]}))
            [event] = drain(conn)
            assert isinstance(event, Request)
        elif role is Role.SERVER and conn.state is State.STATELESS:
            conn.receive_data(line(stateless_request(request_id, "tools/list")))
            [event] = drain(conn)
            assert isinstance(event, Request)
        conn.send_response(request_id, {"roots": []} if role is Role.CLIENT else {"tools": []})
    elif inp is Input.START_PROBE:
        if not isinstance(conn, ClientConnection):
            raise LocalProtocolError("servers do not probe")  # no such method on a server
        conn.connect()
    elif inp is Input.ASSUME_INITIALIZED:
        if not isinstance(conn, ServerConnection):  # no such method on a client
            raise LocalProtocolError("only a server serves sessionless POSTs")
        conn.serve_sessionless(REV)
    else:  # pragma: no cover
        raise AssertionError(inp)


def _pending_id(conn: Connection, method: str, default: Any) -> Any:
    for request_id, record in conn._outgoing.items():
        if record.method == method:
            return request_id
    return default


def _receive(conn: Connection, inp: Input) -> None:
    role = conn.role
    if inp is Input.RECV_INITIALIZE:
        conn.receive_data(line(initialize_request(500)))
    elif inp is Input.RECV_INITIALIZE_RESULT:
        conn.receive_data(line(initialize_result(_pending_id(conn, "initialize", 4141))))
    elif inp is Input.RECV_INITIALIZE_ERROR:
        conn.receive_data(line({"jsonrpc": "2.0", "id": _pending_id(conn, "initialize", 4141),
                                "error": {"code": -32603, "message": "no"}}))
    elif inp is Input.RECV_STATELESS:
        conn.receive_data(line(stateless_request("s", "tools/list")))
    elif inp is Input.PROBE_STATELESS:
        conn.receive_data(line(discover_result(_pending_id(conn, "server/discover", 4343))))
    elif inp is Input.PROBE_FALLBACK:
        conn.receive_data(line({"jsonrpc": "2.0", "id": _pending_id(conn, "server/discover", 4343),
                                "error": {"code": -32601, "message": "Method not found"}}))
    elif inp is Input.RECV_INITIALIZED:
        conn.receive_data(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    elif inp is Input.RECV_PING:
        conn.receive_data(line({"jsonrpc": "2.0", "id": "p", "method": "ping"}))
    elif inp is Input.RECV_REQUEST:
        conn.receive_data(line({"jsonrpc": "2.0", "id": "r", "method": _PEER_REQUEST[role]}))
    elif inp is Input.RECV_LOG:
        conn.receive_data(line({"jsonrpc": "2.0", "method": "notifications/message",
                                "params": {"level": "info", "data": "x"}}))
    elif inp is Input.RECV_UTILITY:
        conn.receive_data(line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                "params": {"requestId": 12345}}))
    elif inp is Input.RECV_NOTIFICATION:
        # A notification no revision defines: its fate is the lifecycle's alone.
        conn.receive_data(line({"jsonrpc": "2.0", "method": "notifications/x-custom"}))
    elif inp is Input.RECV_RESPONSE:
        # A response to a request we sent, when we can send one; else to an unknown id.
        request_id: Any = 4242
        if conn.state is State.STATELESS and role is Role.CLIENT:
            request_id = conn.send_request("tools/list")
            conn.data_to_send()
        elif conn.state not in (State.CLOSED, State.PROBING, State.STATELESS):
            request_id = conn.send_request("ping")
            conn.data_to_send()
        conn.receive_data(line({"jsonrpc": "2.0", "id": request_id, "result": {}}))
    elif inp is Input.EOF:
        conn.receive_eof()
    else:  # pragma: no cover
        raise AssertionError(inp)


def perform(conn: Connection, inp: Input) -> Outcome:
    outcome = Outcome()
    try:
        if inp.name.startswith(("SEND_", "START_", "ASSUME_")):
            _send(conn, inp)
        else:
            _receive(conn, inp)
    except LocalProtocolError as exc:
        outcome.raised = exc
    outcome.events = drain(conn)
    outcome.output = sent(conn)
    return outcome


#: Servers never probe: that row is unreachable (checked on its own below).
CELLS = sorted(
    ((key, cell) for key, cell in TRANSITIONS.items()
     if key[:2] != (Role.SERVER, State.PROBING)),
    key=lambda kv: (kv[0][0].value, kv[0][1].value, kv[0][2].value),
)


def test_servers_never_probe_so_their_probing_row_refuses_everything() -> None:
    for inp in Input:
        verdict, state = TRANSITIONS[Role.SERVER, State.PROBING, inp]
        assert (verdict, state) == ((Verdict.ALLOW, State.CLOSED) if inp is Input.EOF
                                    else (Verdict.REFUSE, State.PROBING))


@pytest.mark.parametrize(
    ("key", "cell"), CELLS,
    ids=[f"{r.value}-{s.value}-{i.name}" for (r, s, i), _ in CELLS],
)
def test_every_cell_of_the_lifecycle_table(
    key: tuple[Role, State, Input], cell: tuple[Verdict, State]
) -> None:
    role, state, inp = key
    verdict, next_state = cell
    conn = make(role, state)
    outcome = perform(conn, inp)
    sending = inp.name.startswith(("SEND_", "START_", "ASSUME_"))

    if verdict is Verdict.IGNORE:
        assert outcome.raised is None and not outcome.events and not outcome.output
        assert conn.state is state
        return

    if verdict is Verdict.REFUSE:
        if sending:
            assert outcome.raised is not None, "a refused send must raise"
            assert not outcome.output, "nothing may be queued by a refused send"
        elif inp in (Input.RECV_INITIALIZE, Input.RECV_PING, Input.RECV_REQUEST,
                     Input.RECV_STATELESS):
            [reply] = [m for m in outcome.output if m.get("id") in (500, "p", "r", "s")]
            assert reply["error"]["code"] in (ErrorCode.INVALID_REQUEST,
                                              ErrorCode.METHOD_NOT_FOUND)
            assert any(isinstance(e, MessageRejected) and e.replied for e in outcome.events)
        else:  # notifications and responses are never answered, only reported
            assert not [m for m in outcome.output if "error" in m]
            assert any(isinstance(e, MessageRejected | UnexpectedResponse)
                       for e in outcome.events)
        assert conn.state is state
        return

    # ALLOW
    if inp is Input.PROBE_FALLBACK:
        # The table returns to IDLE; the core sends initialize from there at once.
        assert next_state is State.IDLE and conn.state is State.INITIALIZING
        assert [m["method"] for m in outcome.output] == ["initialize"]
        return
    assert conn.state is next_state
    if sending:
        if inp is Input.START_PROBE:
            [probe] = outcome.output
            assert probe["method"] == "server/discover"
            assert probe["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == (
                "2026-07-28")
        elif inp is Input.ASSUME_INITIALIZED:
            assert outcome.raised is None and not outcome.output
            assert conn.protocol_version == REV and conn.sessionless
        elif inp is Input.SEND_RESPONSE and not (
            state is State.OPERATING or (role, state) == (Role.SERVER, State.STATELESS)
        ):
            # The lifecycle allows answering, but no request can have arrived yet: the
            # refusal must come from request tracking, not from the lifecycle.
            assert outcome.raised is not None and "waiting for an answer" in str(outcome.raised)
        else:
            assert outcome.raised is None
            assert len(outcome.output) == 1
    elif inp is Input.EOF:
        assert isinstance(outcome.events[-1], ConnectionClosed)
        assert outcome.events[-1].reason is CloseReason.EOF
    elif inp is Input.RECV_PING:
        assert {"jsonrpc": "2.0", "id": "p", "result": {}} in outcome.output
        assert not outcome.events  # the core answers ping on its own
    elif inp is Input.RECV_INITIALIZE:
        [reply] = outcome.output
        assert reply["result"]["protocolVersion"] == REV
    elif inp is Input.RECV_INITIALIZE_RESULT:
        assert isinstance(outcome.events[0], Initialized)
        assert outcome.output == [{"jsonrpc": "2.0", "method": "notifications/initialized"}]
    elif inp is Input.RECV_INITIALIZE_ERROR:
        assert isinstance(outcome.events[-1], ConnectionClosed)
        assert outcome.events[-1].reason is CloseReason.INITIALIZE_FAILED
    elif inp in (Input.RECV_INITIALIZED, Input.PROBE_STATELESS):
        assert isinstance(outcome.events[0], Initialized)
    elif inp is Input.RECV_STATELESS or inp is Input.RECV_REQUEST:
        assert isinstance(outcome.events[0], Request)
    elif inp in (Input.RECV_LOG, Input.RECV_NOTIFICATION):
        assert isinstance(outcome.events[0], Notification)
    elif inp is Input.RECV_UTILITY:
        assert not outcome.events  # a cancel for an unknown id is ignored silently
    elif inp is Input.RECV_RESPONSE:
        assert isinstance(outcome.events[0], Response)
    else:  # pragma: no cover
        raise AssertionError(inp)


def test_the_table_is_total() -> None:
    assert len(TRANSITIONS) == len(Role) * len(State) * len(Input)


# -- a random walk through the table --------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(role=st.sampled_from(Role), inputs=st.lists(st.sampled_from(Input), max_size=12))
def test_random_walks_follow_the_table(role: Role, inputs: list[Input]) -> None:
    conn = make(role, State.IDLE)
    for inp in inputs:
        before = conn.state
        verdict, expected = TRANSITIONS[role, before, inp]
        perform(conn, inp)
        if inp is Input.PROBE_FALLBACK and verdict is Verdict.ALLOW:
            assert conn.state is State.INITIALIZING  # IDLE, then initialize at once
        elif verdict is Verdict.ALLOW and inp not in (Input.RECV_INITIALIZE_RESULT,
                                                       Input.RECV_INITIALIZE_ERROR):
            assert conn.state is expected
        elif verdict is not Verdict.ALLOW:
            assert conn.state is before
        assert conn.state in State


# -- specific rules ----------------------------------------------------------------------------


def test_second_initialize_is_refused_and_changes_nothing() -> None:
    pair = ConnectionPair()
    pair.handshake()
    server = pair.server
    before = (server.protocol_version, dict(server.peer_info), server.state)
    params = initialize_request(9, "2024-11-05")
    params["params"]["clientInfo"] = {"name": "other", "version": "2"}
    server.receive_data(line(params))
    events = drain(server)
    [reply] = sent(server)
    assert reply["id"] == 9 and reply["error"]["code"] == ErrorCode.INVALID_REQUEST
    assert isinstance(events[0], MessageRejected)
    assert (server.protocol_version, server.peer_info, server.state) == before


def test_requests_before_the_handshake_are_refused_with_the_documented_code() -> None:
    server = ServerConnection(info=SERVER_INFO, capabilities=SERVER_CAPS)
    server.receive_data(line({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
    [event] = drain(server)
    [reply] = sent(server)
    assert reply["error"]["code"] == ErrorCode.INVALID_REQUEST == event.code
    assert "initialize must come first" in reply["error"]["message"]
    # ... and also between the initialize result and notifications/initialized
    server.receive_data(line(initialize_request()))
    drain(server)
    sent(server)
    server.receive_data(line({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}))
    drain(server)
    [reply] = sent(server)
    assert reply["error"]["code"] == ErrorCode.INVALID_REQUEST


def test_invalid_initialize_params_get_invalid_params_and_the_server_stays_idle() -> None:
    server = ServerConnection(info=SERVER_INFO)
    for params in ({}, {"protocolVersion": REV, "capabilities": {}},
                   {"protocolVersion": 5, "capabilities": {}, "clientInfo": CLIENT_INFO},
                   {"protocolVersion": REV, "capabilities": [], "clientInfo": CLIENT_INFO},
                   {"protocolVersion": REV, "capabilities": {}, "clientInfo": {"name": "x"}}):
        server.receive_data(line({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                  "params": params}))
        drain(server)
        [reply] = sent(server)
        assert reply["error"]["code"] == ErrorCode.INVALID_PARAMS
        assert server.state is State.IDLE


def test_client_sends_only_ping_before_the_result() -> None:
    client = make(Role.CLIENT, State.INITIALIZING)
    with pytest.raises(LocalProtocolError):
        client.send_request("tools/list")
    with pytest.raises(LocalProtocolError):
        client.send_notification("notifications/roots/list_changed")
    client.send_request("ping")
    assert [m["method"] for m in sent(client)] == ["ping"]


def test_server_sends_only_ping_and_logs_before_initialized() -> None:
    server = make(Role.SERVER, State.INITIALIZING)
    with pytest.raises(LocalProtocolError):
        server.send_request("roots/list")
    with pytest.raises(LocalProtocolError):
        server.send_notification("notifications/tools/list_changed")
    server.send_request("ping")
    server.send_notification("notifications/message", {"level": "info", "data": "booting"})
    assert [m["method"] for m in sent(server)] == ["ping", "notifications/message"]


def test_ping_is_answered_in_both_directions_at_any_time() -> None:
    for role in Role:
        for state in (State.IDLE, State.INITIALIZING, State.OPERATING):  # not stateless
            conn = make(role, state)
            conn.receive_data(line({"jsonrpc": "2.0", "id": "x", "method": "ping"}))
            assert drain(conn) == []
            assert sent(conn) == [{"jsonrpc": "2.0", "id": "x", "result": {}}]


def test_unknown_requests_are_method_not_found_and_unknown_notifications_are_events() -> None:
    pair = ConnectionPair()
    pair.handshake()
    for conn in (pair.client, pair.server):
        conn.receive_data(line({"jsonrpc": "2.0", "id": 5, "method": "no/such"}))
        conn.receive_data(line({"jsonrpc": "2.0", "method": "notifications/closed"}))
        events = drain(conn)
        [reply] = sent(conn)
        assert reply == {"jsonrpc": "2.0", "id": 5,
                         "error": {"code": -32601, "message": "Method not found: no/such"}}
        assert events[-1] == Notification(method="notifications/closed", params=None)


def test_eof_closes_with_an_event_and_sending_after_close_raises() -> None:
    pair = ConnectionPair()
    pair.handshake()
    pair.client.receive_eof()
    [event] = drain(pair.client)
    assert event == ConnectionClosed(reason=CloseReason.EOF,
                                     detail="the peer closed the connection")
    assert pair.client.state is State.CLOSED
    for attempt in (lambda: pair.client.send_request("ping"),
                    lambda: pair.client.send_notification("notifications/cancelled",
                                                          {"requestId": 1}),
                    lambda: pair.client.send_response(1, {})):
        with pytest.raises(LocalProtocolError):
            attempt()
    pair.client.receive_data(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert drain(pair.client) == [] and pair.client.data_to_send() == b""


def test_initialize_error_closes_the_client() -> None:
    client = make(Role.CLIENT, State.INITIALIZING)
    client.receive_data(line({"jsonrpc": "2.0", "id": 1,
                              "error": {"code": -32602, "message": "Unsupported protocol version",
                                        "data": {"supported": ["1999-01-01"]}}}))
    [event] = drain(client)
    assert isinstance(event, ConnectionClosed)
    assert event.reason is CloseReason.INITIALIZE_FAILED
    assert "Unsupported protocol version" in event.detail
    assert client.state is State.CLOSED


@pytest.mark.parametrize("result", [
    {"protocolVersion": REV, "capabilities": {}},
    {"protocolVersion": REV, "capabilities": {}, "serverInfo": {"name": "s"}},
    {"protocolVersion": 3, "capabilities": {}, "serverInfo": SERVER_INFO},
    {"protocolVersion": REV, "capabilities": None, "serverInfo": SERVER_INFO},
    {"protocolVersion": REV, "capabilities": {}, "serverInfo": SERVER_INFO, "instructions": 1},
])
def test_invalid_initialize_result_closes_the_client(result: dict[str, Any]) -> None:
    client = make(Role.CLIENT, State.INITIALIZING)
    client.receive_data(line({"jsonrpc": "2.0", "id": 1, "result": result}))
    [event] = drain(client)
    assert isinstance(event, ConnectionClosed)
    assert event.reason is CloseReason.INITIALIZE_FAILED


def test_emitted_handshake_messages_validate_for_every_revision() -> None:
    for revision in HANDSHAKE_REVISIONS:
        pair = ConnectionPair(
            ClientConnection(info=CLIENT_INFO, capabilities=CLIENT_CAPS, versions=[revision]),
            ServerConnection(info=SERVER_INFO, capabilities=SERVER_CAPS,
                             instructions="be nice"),
        )
        pair.handshake()  # ConnectionPair validates every message against the schema
        assert pair.client.protocol_version == pair.server.protocol_version == revision
        assert pair.client.instructions == "be nice"
        assert len(pair.client_sent) == 2 and len(pair.server_sent) == 1
        schemas.validate(revision, "InitializeResult", pair.server_sent[0]["result"])
