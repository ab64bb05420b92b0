"""JSON-RPC batches, legal only in 2025-03-26 (spec-digest sections a and e).

JSON-RPC 2.0 section 6: the replies to a batch's requests go back as one array (nothing for
notifications, nothing at all if only notifications came); an empty batch is one -32600 with
id null. MCP 2025-03-26: ``initialize`` is never batched. Other revisions have no batches:
the whole array is one -32600 with id null. A member the peer cancels gets no reply, so it is
left out of the array. The array goes out once the last request in it is answered.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sansio import (
    HANDSHAKE_REVISIONS,
    NEED_DATA,
    CancelRequested,
    ClientConnection,
    Connection,
    ErrorCode,
    Event,
    MessageRejected,
    Notification,
    Request,
    Response,
    ServerConnection,
    State,
)
from tests import schemas
from tests.pair import SERVER_INFO, ConnectionPair

SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

BATCH_REV = "2025-03-26"
OTHER_REVS = [rev for rev in HANDSHAKE_REVISIONS if rev != BATCH_REV]
SERVER_CAPS = {"tools": {}, "prompts": {}, "logging": {}}
CLIENT_CAPS = {"roots": {"listChanged": True}}


def paired(revision: str = BATCH_REV) -> ConnectionPair:
    pair = ConnectionPair(
        ClientConnection(versions=[revision], capabilities=CLIENT_CAPS),
        ServerConnection(info=SERVER_INFO, capabilities=SERVER_CAPS),
    )
    pair.handshake()
    assert pair.server.protocol_version == revision
    assert pair.client.protocol_version == revision
    assert pair.server.state is State.OPERATING
    return pair


def drain(conn: Connection) -> list[Event]:
    out: list[Event] = []
    while (event := conn.next_event()) is not NEED_DATA:
        out.append(event)
    return out


def validate(revision: str, message: Any, methods: dict[Any, str]) -> None:
    # "id": null errors (JSON-RPC 2.0 section 5) are outside every MCP schema before
    # 2025-11-25, so their envelope is checked with a stand-in id.
    def view(m: Any) -> Any:
        if isinstance(m, dict) and "error" in m and m.get("id", 0) is None:
            return {**m, "id": 0}
        return m

    schemas.validate_message(
        revision, [view(m) for m in message] if isinstance(message, list) else view(message),
        methods,
    )


class Peer:
    """Feeds raw lines to one connection and records what it says, validated."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.methods: dict[Any, str] = {}  # ids of requests it received -> method

    def feed(self, payload: Any) -> list[Event]:
        items = payload if isinstance(payload, list) else [payload]
        for item in items:
            if isinstance(item, dict) and "method" in item and "id" in item:
                self.methods.setdefault(item["id"], item["method"])
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.conn.receive_data(raw + b"\n", now=0)
        return drain(self.conn)

    def sent(self) -> list[Any]:
        messages = [json.loads(x) for x in self.conn.data_to_send().splitlines()]
        for message in messages:
            validate(self.conn.revision, message, self.methods)
        return messages


def req(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def note(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def cancel(request_id: Any) -> dict[str, Any]:
    return note("notifications/cancelled", {"requestId": request_id, "reason": "no longer"})


def by_id(array: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    out = {m["id"]: m for m in array if m["id"] is not None}
    assert len(out) == len([m for m in array if m["id"] is not None]), "duplicate reply ids"
    return out


# -- the basic shape ---------------------------------------------------------------------------


def test_batch_of_requests_and_notifications_gets_one_array() -> None:
    server = Peer(paired().server)
    events = server.feed([
        req(1, "tools/list"),
        note("notifications/custom", {"a": 1}),
        req("p", "ping"),
        req(2, "prompts/list", {"cursor": "c"}),
        note("notifications/roots/list_changed"),
    ])
    assert events == [
        Request(request_id=1, method="tools/list", params=None),
        Notification(method="notifications/custom", params={"a": 1}),
        Request(request_id=2, method="prompts/list", params={"cursor": "c"}),
        Notification(method="notifications/roots/list_changed", params=None),
    ]
    assert server.sent() == [], "nothing goes out before the last request is answered"
    server.conn.send_response(2, {"prompts": []})
    assert server.sent() == []
    server.conn.send_response(1, {"tools": []})
    out = server.sent()
    assert len(out) == 1
    array = out[0]
    assert isinstance(array, list)
    assert len(array) == 3
    assert by_id(array) == {
        1: {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}},
        "p": {"jsonrpc": "2.0", "id": "p", "result": {}},
        2: {"jsonrpc": "2.0", "id": 2, "result": {"prompts": []}},
    }
    # Later requests, batched or not, are answered on their own.
    server.feed(req(3, "ping"))
    assert server.sent() == [{"jsonrpc": "2.0", "id": 3, "result": {}}]


def test_errors_from_the_application_and_the_core_join_the_array() -> None:
    server = Peer(paired().server)
    events = server.feed([
        req(1, "tools/list"),
        1,                                          # not an object: -32600, id null
        {"foo": "boo"},                             # unrecognisable: -32600, id null
        req(4, "no/such/method"),                   # -32601
        {"jsonrpc": "1.0", "id": 5, "method": "ping"},  # bad envelope, readable id
        req(6, "tools/list", None) | {"params": [1]},  # params not an object
        req(7, "sampling/createMessage", {}),       # a server never receives it: -32601
        req(8, "logging/setLevel", {"level": "loud"}),  # -32602, answered by the core
        req(9, "logging/setLevel", {"level": "info"}),  # {} by the core
        {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},  # unreadable id
    ])
    assert [type(e) for e in events] == [Request] + [MessageRejected] * 8
    assert all(e.replied for e in events[1:])  # type: ignore[attr-defined]
    assert server.sent() == []
    server.conn.send_error(1, -32000, "tool backend down")
    (array,) = server.sent()
    assert isinstance(array, list)
    assert len(array) == 10  # every member gets a reply
    replies = by_id(array)
    assert replies[1]["error"] == {"code": -32000, "message": "tool backend down"}
    assert replies[4]["error"]["code"] == ErrorCode.METHOD_NOT_FOUND
    assert replies[5]["error"]["code"] == ErrorCode.INVALID_REQUEST
    assert replies[6]["error"]["code"] == ErrorCode.INVALID_REQUEST
    assert replies[7]["error"]["code"] == ErrorCode.METHOD_NOT_FOUND
    assert replies[8]["error"]["code"] == ErrorCode.INVALID_PARAMS
    assert replies[9] == {"jsonrpc": "2.0", "id": 9, "result": {}}
    nulls = [m for m in array if m["id"] is None]
    assert len(nulls) == 3
    assert all(m["error"]["code"] == ErrorCode.INVALID_REQUEST for m in nulls)


def test_batch_of_automatic_replies_goes_out_at_once() -> None:
    server = Peer(paired().server)
    assert server.feed([req(1, "ping"), req(2, "ping"), note("notifications/custom")]) == [
        Notification(method="notifications/custom", params=None)]
    (array,) = server.sent()
    assert sorted(m["id"] for m in array) == [1, 2]
    assert all(m["result"] == {} for m in array)


def test_batch_of_only_notifications_gets_no_reply() -> None:
    server = Peer(paired().server)
    events = server.feed([
        note("notifications/custom"),
        note("notifications/roots/list_changed"),
        cancel(12345),  # unknown id: ignored
        note("notifications/progress", {"progressToken": "nope", "progress": 1}),  # reported
        {"jsonrpc": "2.0", "method": "notifications/custom", "params": [1]},  # bad, reported
    ])
    assert [type(e) for e in events] == [Notification, Notification, MessageRejected,
                                         MessageRejected]
    assert not any(e.replied for e in events if isinstance(e, MessageRejected))
    assert server.sent() == []


def test_batch_of_responses_gets_no_reply() -> None:
    pair = paired()
    first = pair.server.send_request("roots/list")
    second = pair.server.send_request("ping")
    pair.server.data_to_send()
    server = Peer(pair.server)
    events = server.feed([
        {"jsonrpc": "2.0", "id": first, "result": {"roots": []}},
        {"jsonrpc": "2.0", "id": second, "result": {}},
    ])
    assert events == [Response(request_id=first, result={"roots": []}, method="roots/list"),
                      Response(request_id=second, result={}, method="ping")]
    assert server.sent() == []


def test_empty_batch_is_one_invalid_request() -> None:
    server = Peer(paired().server)
    events = server.feed([])
    assert len(events) == 1
    assert isinstance(events[0], MessageRejected)
    assert events[0].code == ErrorCode.INVALID_REQUEST
    out = server.sent()
    assert out == [{"jsonrpc": "2.0", "id": None,
                    "error": {"code": -32600, "message": events[0].reason}}]
    assert isinstance(out[0], dict)  # a single error, not an array
    server.feed(req(2, "ping"))
    assert server.sent() == [{"jsonrpc": "2.0", "id": 2, "result": {}}]


def test_initialize_in_a_batch_is_refused() -> None:
    server = Peer(paired().server)
    init = req(10, "initialize", {"protocolVersion": BATCH_REV, "capabilities": {},
                                  "clientInfo": {"name": "x", "version": "1"}})
    events = server.feed([init, req(11, "ping")])
    assert len(events) == 1
    assert isinstance(events[0], MessageRejected)
    assert events[0].request_id == 10
    assert events[0].replied
    (array,) = server.sent()
    replies = by_id(array)
    assert replies[10]["error"]["code"] == ErrorCode.INVALID_REQUEST
    assert replies[11] == {"jsonrpc": "2.0", "id": 11, "result": {}}
    assert server.conn.state is State.OPERATING
    assert server.conn.protocol_version == BATCH_REV


def test_initialize_alone_in_a_batch_is_refused_before_the_handshake() -> None:
    conn = ServerConnection(info=SERVER_INFO, capabilities=SERVER_CAPS,
                            versions=[BATCH_REV])
    server = Peer(conn)
    init = req(1, "initialize", {"protocolVersion": BATCH_REV, "capabilities": {},
                                 "clientInfo": {"name": "x", "version": "1"}})
    events = server.feed([init])
    assert [type(e) for e in events] == [MessageRejected]
    out = server.sent()
    assert len(out) == 1
    assert conn.state is State.IDLE, "a batched initialize must not start a session"
    assert conn.protocol_version is None
    error = out[0][0] if isinstance(out[0], list) else out[0]
    assert error["error"]["code"] == ErrorCode.INVALID_REQUEST


def test_a_notification_named_initialize_in_a_batch_is_not_answered() -> None:
    # Notifications are never answered (JSON-RPC 2.0 section 4.1), inside a batch as outside.
    pair = paired()
    single = Peer(pair.server)
    single_events = single.feed(note("initialize"))
    assert single.sent() == []
    batched = Peer(paired().server)
    events = batched.feed([note("initialize"), req(2, "ping")])
    assert [type(e) for e in events] == [type(e) for e in single_events]
    (array,) = batched.sent()
    assert array == [{"jsonrpc": "2.0", "id": 2, "result": {}}]


# -- batches outside 2025-03-26 ----------------------------------------------------------------


@pytest.mark.parametrize("revision", OTHER_REVS)
def test_batch_in_other_revisions_is_one_invalid_request(revision: str) -> None:
    server = Peer(paired(revision).server)
    events = server.feed([req(1, "tools/list"), req(2, "ping"), note("notifications/custom")])
    assert len(events) == 1, "no member of a refused batch reaches the application"
    assert isinstance(events[0], MessageRejected)
    assert events[0].code == ErrorCode.INVALID_REQUEST
    assert events[0].request_id is None and events[0].replied
    assert server.sent() == [{"jsonrpc": "2.0", "id": None,
                              "error": {"code": -32600, "message": events[0].reason}}]
    # The connection goes on, and the ids in the refused batch were never taken.
    assert server.feed(req(1, "tools/list")) == [
        Request(request_id=1, method="tools/list", params=None)]
    server.feed(req(2, "ping"))
    assert server.sent() == [{"jsonrpc": "2.0", "id": 2, "result": {}}]


@pytest.mark.parametrize("revision", OTHER_REVS)
def test_empty_batch_in_other_revisions_is_one_invalid_request(revision: str) -> None:
    server = Peer(paired(revision).server)
    events = server.feed([])
    assert [type(e) for e in events] == [MessageRejected]
    assert server.sent() == [{"jsonrpc": "2.0", "id": None,
                              "error": {"code": -32600, "message": events[0].reason}}]


@pytest.mark.parametrize("revision", OTHER_REVS)
def test_client_refuses_batches_in_other_revisions(revision: str) -> None:
    client = Peer(paired(revision).client)
    events = client.feed([req("s1", "ping"), req("s2", "roots/list")])
    assert [type(e) for e in events] == [MessageRejected]
    out = client.sent()
    assert len(out) == 1 and out[0]["id"] is None
    assert out[0]["error"]["code"] == ErrorCode.INVALID_REQUEST


def test_client_answers_a_batch_from_the_server_with_one_array() -> None:
    client = Peer(paired().client)
    events = client.feed([req("s1", "ping"), req("s2", "roots/list")])
    assert events == [Request(request_id="s2", method="roots/list", params=None)]
    assert client.sent() == []
    client.conn.send_response("s2", {"roots": []})
    (array,) = client.sent()
    assert by_id(array) == {"s1": {"jsonrpc": "2.0", "id": "s1", "result": {}},
                            "s2": {"jsonrpc": "2.0", "id": "s2", "result": {"roots": []}}}


# -- cancellation ------------------------------------------------------------------------------


def test_cancelled_member_is_left_out() -> None:
    server = Peer(paired().server)
    server.feed([req(1, "tools/list"), req(2, "tools/list"), req(3, "ping")])
    events = server.feed(cancel(1))
    assert events == [CancelRequested(request_id=1, method="tools/list", reason="no longer")]
    assert server.sent() == []
    server.conn.send_response(2, {"tools": []})
    (array,) = server.sent()
    assert sorted(by_id(array)) == [2, 3]
    # A late answer to the cancelled one is dropped quietly: no second array, no message.
    server.conn.send_response(1, {"tools": []})
    assert server.sent() == []


def test_cancelling_the_last_outstanding_member_sends_the_array() -> None:
    server = Peer(paired().server)
    server.feed([req(1, "tools/list"), req(2, "tools/list")])
    server.conn.send_response(2, {"tools": []})
    assert server.sent() == []
    server.feed(cancel(1))
    (array,) = server.sent()
    assert array == [{"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}]


def test_cancel_inside_the_same_batch() -> None:
    server = Peer(paired().server)
    events = server.feed([req(1, "tools/list"), cancel(1), req(2, "ping")])
    assert [type(e) for e in events] == [Request, CancelRequested]
    (array,) = server.sent()
    assert array == [{"jsonrpc": "2.0", "id": 2, "result": {}}]


def test_all_members_cancelled_means_no_reply() -> None:
    server = Peer(paired().server)
    server.feed([req(1, "tools/list"), req(2, "prompts/list")])
    server.feed([cancel(2), cancel(1)])
    assert server.sent() == []
    server.feed(req(3, "ping"))
    assert server.sent() == [{"jsonrpc": "2.0", "id": 3, "result": {}}]


# -- hypothesis: any batch, answered in any order, some members cancelled ----------------------

APP_METHODS = ["tools/list", "prompts/list"]
RESULTS = {"tools/list": {"tools": []}, "prompts/list": {"prompts": []}}


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[Any], dict[int, str], set[int], int]:
    """(members, app requests id -> method, automatically answered ids, null-id errors)."""
    members: list[Any] = []
    app: dict[int, str] = {}
    auto: set[int] = set()
    nulls = 0
    kinds = draw(st.lists(st.sampled_from(["app", "ping", "note", "unknown", "garbage",
                                           "bad-note"]), min_size=1, max_size=10))
    for index, kind in enumerate(kinds):
        request_id = index + 1
        if kind == "app":
            method = draw(st.sampled_from(APP_METHODS))
            members.append(req(request_id, method))
            app[request_id] = method
        elif kind == "ping":
            members.append(req(request_id, "ping"))
            auto.add(request_id)
        elif kind == "unknown":
            members.append(req(request_id, "no/such/method"))
            auto.add(request_id)
        elif kind == "garbage":
            members.append(draw(st.sampled_from([1, "x", None, [], {"foo": 1}])))
            nulls += 1
        elif kind == "note":
            members.append(note("notifications/custom", {"i": index}))
        else:
            members.append(note("notifications/custom", None) | {"params": "p"})
    return members, app, auto, nulls


@SETTINGS
@given(batch=batches(), data=st.data())
def test_any_batch_answered_in_any_order(
    batch: tuple[list[Any], dict[int, str], set[int], int], data: st.DataObject
) -> None:
    members, app, auto, nulls = batch
    server = Peer(paired().server)
    events = server.feed(members)
    delivered = [e for e in events if isinstance(e, Request)]
    assert {e.request_id: e.method for e in delivered} == app
    order = data.draw(st.permutations(sorted(app)))
    cancelled = set(data.draw(st.lists(st.sampled_from(sorted(app)), unique=True))
                    if app else [])
    arrays: list[list[Any]] = []
    for position, request_id in enumerate(order):
        if request_id in cancelled:
            server.feed(cancel(request_id))
        else:
            server.conn.send_response(request_id, RESULTS[app[request_id]])
        out = server.sent()
        if position < len(order) - 1:
            assert out == [], "the array waits for the last request"
        arrays.extend(out)
    if not app:
        arrays.extend(server.sent())
    expected_ids = auto | (set(app) - cancelled)
    if not expected_ids and not nulls:
        assert arrays == [], "nothing to say: no reply at all"
        return
    assert len(arrays) == 1, arrays
    array = arrays[0]
    assert isinstance(array, list)
    assert set(by_id(array)) == expected_ids
    assert len([m for m in array if m["id"] is None]) == nulls
    for request_id in set(app) - cancelled:
        assert by_id(array)[request_id]["result"] == RESULTS[app[request_id]]
    for request_id in auto:
        reply = by_id(array)[request_id]
        method = next(m["method"] for m in members if isinstance(m, dict)
                      and m.get("id") == request_id)
        if method == "ping":
            assert reply["result"] == {}
        else:
            assert reply["error"]["code"] == ErrorCode.METHOD_NOT_FOUND
