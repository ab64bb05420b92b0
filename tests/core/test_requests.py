"""Requests in flight: ids, exactly-once endings, time, cancellation, progress."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_sansio import (
    NEED_DATA,
    CancelRequested,
    ClientConnection,
    CloseReason,
    ConnectionClosed,
    ErrorCode,
    ErrorResponse,
    Event,
    LateResponse,
    LocalProtocolError,
    MessageRejected,
    Progress,
    Request,
    RequestAborted,
    RequestCancelled,
    RequestTimedOut,
    Response,
    ServerConnection,
    State,
    UnexpectedResponse,
)
from mcp_sansio._timers import TimerKind, TimerTable
from tests.pair import CLIENT_INFO, SERVER_INFO, ConnectionPair

SERVER_CAPS = {"tools": {}, "logging": {}}
CLIENT_CAPS = {"sampling": {}, "roots": {}}


def operating_pair(**client_kwargs: Any) -> ConnectionPair:
    pair = ConnectionPair(
        ClientConnection(info=CLIENT_INFO, capabilities=CLIENT_CAPS, **client_kwargs),
        ServerConnection(info=SERVER_INFO, capabilities=SERVER_CAPS),
    )
    pair.handshake()
    pair.take("client")
    pair.take("server")
    return pair


def drain(conn: Any) -> list[Event]:
    out = []
    while (event := conn.next_event()) is not NEED_DATA:
        out.append(event)
    return out


def wire(conn: Any) -> list[dict[str, Any]]:
    return [json.loads(x) for x in conn.data_to_send().splitlines()]


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


# -- ids --------------------------------------------------------------------------------------


def test_outgoing_ids_come_from_a_counter_and_are_never_reused() -> None:
    pair = operating_pair()
    ids = [pair.client.send_request("tools/list", now=0) for _ in range(5)]
    pair.client.cancel(ids[2])
    ids.append(pair.client.send_request("tools/list", now=0))
    assert ids == sorted(set(ids)) and len(ids) == 6


def test_duplicate_incoming_id_is_refused_without_disturbing_the_first() -> None:
    pair = operating_pair()
    server = pair.server
    server.receive_data(line({"jsonrpc": "2.0", "id": "a", "method": "tools/list"}))
    [first] = drain(server)
    server.receive_data(line({"jsonrpc": "2.0", "id": "a", "method": "tools/call",
                              "params": {"name": "x"}}))
    [rejected] = drain(server)
    assert isinstance(rejected, MessageRejected) and rejected.request_id == "a"
    [error] = wire(server)
    assert error["error"]["code"] == ErrorCode.INVALID_REQUEST
    server.send_response("a", {"tools": []})  # the first is still answerable, once
    assert wire(server) == [{"jsonrpc": "2.0", "id": "a", "result": {"tools": []}}]
    with pytest.raises(LocalProtocolError):
        server.send_response("a", {"tools": []})
    assert isinstance(first, Request)


def test_string_and_integer_ids_are_distinct() -> None:
    pair = operating_pair()
    server = pair.server
    server.receive_data(line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    server.receive_data(line({"jsonrpc": "2.0", "id": "1", "method": "tools/list"}))
    events = drain(server)
    assert [e.request_id for e in events if isinstance(e, Request)] == [1, "1"]


def test_answering_twice_or_an_unknown_id_raises() -> None:
    pair = operating_pair()
    rid = pair.client.send_request("tools/list", now=0)
    pair.pump()
    [request] = pair.take("server")
    assert isinstance(request, Request) and request.request_id == rid
    pair.server.send_error(rid, -32000, "nope")
    with pytest.raises(LocalProtocolError):
        pair.server.send_response(rid, {})
    with pytest.raises(LocalProtocolError):
        pair.server.send_error(12345, -32000, "never received")
    pair.pump()
    [event] = pair.take("client")
    assert event == ErrorResponse(request_id=rid, code=-32000, message="nope",
                                  method="tools/list")


def test_response_to_an_id_we_never_sent_is_reported() -> None:
    pair = operating_pair()
    pair.client.receive_data(line({"jsonrpc": "2.0", "id": 999, "result": {}}))
    pair.client.receive_data(line({"jsonrpc": "2.0", "id": None,
                                   "error": {"code": -32700, "message": "Parse error"}}))
    events = drain(pair.client)
    assert events == [
        UnexpectedResponse(request_id=999, result={}),
        UnexpectedResponse(request_id=None, error={"code": -32700, "message": "Parse error"}),
    ]
    assert wire(pair.client) == []


# -- time ---------------------------------------------------------------------------------------


def test_idle_timeout_fires_once_and_queues_a_cancel() -> None:
    pair = operating_pair()
    client = pair.client
    rid = client.send_request("tools/call", {"name": "slow"}, now=0, timeout=5)
    pair.pump()
    assert client.next_deadline() == 5
    client.handle_timeout(4.999)
    assert drain(client) == [] and wire(client) == []
    client.handle_timeout(5)
    assert drain(client) == [RequestTimedOut(request_id=rid, method="tools/call")]
    assert wire(client) == [{"jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": {"requestId": rid, "reason": "timed out"}}]
    assert client.next_deadline() is None
    client.handle_timeout(100)
    assert drain(client) == []


def test_late_response_after_timeout_is_not_an_error() -> None:
    pair = operating_pair()
    rid = pair.client.send_request("tools/call", {"name": "slow"}, now=0, timeout=1)
    pair.pump()
    [request] = pair.take("server")
    pair.advance(2)
    assert pair.take("client") == [RequestTimedOut(request_id=rid, method="tools/call")]
    # The server saw the cancel; its answer is dropped quietly.
    assert pair.take("server") == [CancelRequested(request_id=rid, method="tools/call",
                                                   reason="timed out")]
    pair.server.send_response(request.request_id, {"content": []})
    assert pair.server.data_to_send() == b""
    # A reply that crossed the cancel on the wire becomes a LateResponse.
    pair.client.receive_data(line({"jsonrpc": "2.0", "id": rid, "result": {"content": []}}))
    assert drain(pair.client) == [LateResponse(request_id=rid, method="tools/call",
                                               result={"content": []})]


def test_progress_resets_the_idle_timer_but_never_the_hard_maximum() -> None:
    pair = operating_pair()
    client, server = pair.client, pair.server
    rid = client.send_request("tools/call", {"name": "long"}, now=0, timeout=10, max_total=25,
                              progress=True)
    pair.pump()
    [request] = pair.take("server")
    assert request.params["_meta"]["progressToken"] == rid
    for step, t in enumerate((8, 16, 24), start=1):
        pair.now = t
        server.send_progress(rid, step, total=10, message=f"step {step}")
        pair.pump()
        [progress] = pair.take("client")
        assert progress == Progress(request_id=rid, token=rid, progress=step, total=10,
                                    message=f"step {step}")
        assert client.next_deadline() == min(t + 10, 25)  # idle moved; hard limit stays
    pair.advance(1)  # t = 25
    assert pair.take("client") == [RequestTimedOut(request_id=rid, method="tools/call",
                                                   hard_limit=True)]


def test_progress_can_be_told_not_to_reset_the_timer() -> None:
    pair = operating_pair()
    rid = pair.client.send_request("tools/call", {"name": "x"}, now=0, timeout=10,
                                   progress=True, progress_resets_timeout=False)
    pair.pump()
    pair.now = 9
    pair.server.send_progress(rid, 1)
    pair.pump()
    assert pair.client.next_deadline() == 10


def test_pause_and_resume_keep_the_time_left() -> None:
    pair = operating_pair()
    client = pair.client
    rid = client.send_request("tools/call", {"name": "human"}, now=0, timeout=10, max_total=20)
    client.pause_timeout(rid, now=4)
    assert client.next_deadline() is None
    client.handle_timeout(1000)
    assert drain(client) == []
    client.resume_timeout(rid, now=1000)
    assert client.next_deadline() == 1006  # 6 s of idle time were left
    client.handle_timeout(1006)
    assert drain(client) == [RequestTimedOut(request_id=rid, method="tools/call")]


def test_time_never_runs_backwards() -> None:
    pair = operating_pair()
    client = pair.client
    client.handle_timeout(100)
    rid = client.send_request("tools/list", now=50, timeout=10)  # 50 is clamped to 100
    assert client.next_deadline() == 110
    client.handle_timeout(105)
    assert drain(client) == []
    client.handle_timeout(110)
    assert drain(client) == [RequestTimedOut(request_id=rid, method="tools/list")]


def test_timeout_none_means_no_timer_and_defaults_come_from_config() -> None:
    pair = operating_pair(request_timeout=3, max_request_time=7)
    a = pair.client.send_request("tools/list", now=0)
    b = pair.client.send_request("tools/list", now=0, timeout=None, max_total=None)
    assert pair.client.next_deadline() == 3
    pair.client.handle_timeout(3)
    assert drain(pair.client) == [RequestTimedOut(request_id=a, method="tools/list")]
    assert pair.client.next_deadline() is None
    assert pair.client.pending_requests == 1 and b not in (a,)


def test_initialize_timeout_closes_the_connection_without_cancelling() -> None:
    client = ClientConnection(info=CLIENT_INFO, request_timeout=30)
    client.initialize(now=0)
    wire(client)
    client.handle_timeout(30)
    [event] = drain(client)
    assert event == ConnectionClosed(reason=CloseReason.INITIALIZE_TIMEOUT,
                                     detail="initialize was not answered in time")
    assert wire(client) == []  # initialize is never cancelled
    assert client.state is State.CLOSED


def test_many_timers_expire_in_order_and_each_once() -> None:
    client = operating_pair().client
    ids = [client.send_request("tools/list", now=0, timeout=float(10 - i % 10))
           for i in range(100)]
    client.handle_timeout(10)
    events = drain(client)
    assert sorted(e.request_id for e in events) == ids
    assert all(isinstance(e, RequestTimedOut) for e in events)
    assert client.next_deadline() is None


# -- cancellation ----------------------------------------------------------------------------


def test_local_cancel_ends_the_request_and_tells_the_peer() -> None:
    pair = operating_pair()
    rid = pair.client.send_request("tools/call", {"name": "x"}, now=0)
    pair.pump()
    pair.take("server")
    pair.client.cancel(rid, reason="user pressed stop")
    assert drain(pair.client) == [RequestCancelled(request_id=rid, method="tools/call",
                                                   reason="user pressed stop")]
    pair.pump()
    assert pair.take("server") == [CancelRequested(request_id=rid, method="tools/call",
                                                   reason="user pressed stop")]
    assert pair.client.next_deadline() is None
    with pytest.raises(LocalProtocolError):
        pair.client.cancel(rid)  # already ended


def test_initialize_cannot_be_cancelled() -> None:
    client = ClientConnection(info=CLIENT_INFO)
    rid = client.initialize(now=0)
    wire(client)
    with pytest.raises(LocalProtocolError, match="initialize"):
        client.cancel(rid)
    assert wire(client) == []


def test_peer_cancel_silences_every_later_answer_and_progress() -> None:
    pair = operating_pair()
    rid = pair.client.send_request("tools/call", {"name": "x"}, now=0, progress=True)
    pair.pump()
    pair.take("server")
    pair.client.cancel(rid)
    pair.pump()
    pair.server.send_progress(rid, 1)
    pair.server.send_response(rid, {"content": []})
    assert pair.server.data_to_send() == b""


def test_cancels_for_unknown_finished_or_initialize_ids_are_ignored() -> None:
    pair = operating_pair()
    for request_id in (1, 12345, "nope", None, True):
        pair.server.receive_data(line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                       "params": {"requestId": request_id}}))
    assert drain(pair.server) == [] and wire(pair.server) == []


# -- progress ----------------------------------------------------------------------------------


def test_progress_refusals_for_the_handler() -> None:
    pair = operating_pair()
    plain = pair.client.send_request("tools/list", now=0)
    with_token = pair.client.send_request("tools/call", {"name": "x"}, now=0, progress=True)
    pair.pump()
    with pytest.raises(LocalProtocolError, match="did not ask for progress"):
        pair.server.send_progress(plain, 1)
    pair.server.send_progress(with_token, 0.5)
    with pytest.raises(LocalProtocolError, match="must increase"):
        pair.server.send_progress(with_token, 0.5)
    pair.server.send_response(with_token, {"content": []})
    with pytest.raises(LocalProtocolError):
        pair.server.send_progress(with_token, 2)


def test_unknown_token_and_non_increasing_progress_are_reported_and_ignored() -> None:
    pair = operating_pair()
    rid = pair.client.send_request("tools/call", {"name": "x"}, now=0, progress=True)
    pair.pump()
    client = pair.client
    for params in ({"progressToken": "zzz", "progress": 1},
                   {"progressToken": rid, "progress": 5},
                   {"progressToken": rid, "progress": 5},
                   {"progressToken": rid, "progress": "many"}):
        client.receive_data(line({"jsonrpc": "2.0", "method": "notifications/progress",
                                  "params": params}))
    events = drain(client)
    assert [type(e) for e in events] == [MessageRejected, Progress, MessageRejected,
                                         MessageRejected]
    assert wire(client) == []


def test_progress_message_is_left_out_in_2024_11_05() -> None:
    pair = operating_pair(versions=["2024-11-05"])
    rid = pair.client.send_request("tools/call", {"name": "x"}, now=0, progress=True)
    pair.pump()
    pair.server.send_progress(rid, 1, message="hello")
    [note] = wire(pair.server)
    assert "message" not in note["params"]


def test_custom_progress_token_is_honoured_and_must_be_unique() -> None:
    pair = operating_pair()
    params = {"name": "x", "_meta": {"progressToken": "mine"}}
    rid = pair.client.send_request("tools/call", params, now=0, progress=True)
    with pytest.raises(LocalProtocolError, match="already in use"):
        pair.client.send_request("tools/call", params, now=0, progress=True)
    pair.pump()
    pair.server.send_progress(rid, 1)
    pair.pump()
    [event] = pair.take("client")
    assert isinstance(event, Progress) and event.token == "mine" and event.request_id == rid


# -- ending exactly once ---------------------------------------------------------------------


def test_close_aborts_every_pending_request_once() -> None:
    pair = operating_pair()
    ids = [pair.client.send_request("tools/list", now=0) for _ in range(3)]
    pair.client.receive_eof()
    events = drain(pair.client)
    assert events[:3] == [RequestAborted(request_id=i, method="tools/list",
                                         reason=CloseReason.EOF) for i in ids]
    assert isinstance(events[3], ConnectionClosed)
    assert pair.client.next_deadline() is None
    pair.client.handle_timeout(10_000)
    assert drain(pair.client) == []


def test_local_close() -> None:
    pair = operating_pair()
    rid = pair.client.send_request("tools/list", now=0)
    pair.client.close()
    assert drain(pair.client) == [
        RequestAborted(request_id=rid, method="tools/list", reason=CloseReason.LOCAL),
        ConnectionClosed(reason=CloseReason.LOCAL, detail="closed by the application"),
    ]


def test_a_response_ends_the_request_and_clears_its_timers() -> None:
    pair = operating_pair()
    rid = pair.client.send_request("tools/list", now=0, timeout=5, max_total=9, progress=True)
    pair.pump()
    pair.server.send_response(rid, {"tools": []})
    pair.pump()
    assert pair.take("client") == [Response(request_id=rid, result={"tools": []},
                                            method="tools/list")]
    assert pair.client.next_deadline() is None and pair.client.pending_requests == 0


def test_server_requests_to_the_client_work_the_same_way() -> None:
    pair = operating_pair()
    rid = pair.server.send_request("roots/list", now=0, timeout=2)
    pair.pump()
    [request] = pair.take("client")
    assert isinstance(request, Request) and request.method == "roots/list"
    pair.advance(3)
    assert pair.take("server") == [RequestTimedOut(request_id=rid, method="roots/list")]
    assert pair.take("client") == [CancelRequested(request_id=rid, method="roots/list",
                                                   reason="timed out")]


def test_encoding_failures_raise_before_anything_is_queued() -> None:
    pair = operating_pair()
    before = pair.client.pending_requests
    with pytest.raises(LocalProtocolError, match="encode"):
        pair.client.send_request("tools/call", {"name": "x", "arguments": {"v": float("nan")}})
    with pytest.raises(LocalProtocolError):
        pair.client.send_request("tools/call", {"name": "x", "arguments": {"v": object()}})
    assert pair.client.pending_requests == before and pair.client.data_to_send() == b""
    assert pair.client.next_deadline() is None


# -- the timer table itself --------------------------------------------------------------------


def test_timer_table_lazy_deletion_and_compaction() -> None:
    table = TimerTable()
    for i in range(1000):
        table.set(i, TimerKind.IDLE, float(i))
    for i in range(1000):
        table.set(i, TimerKind.IDLE, 2000.0 + i)  # every entry moved: 1000 stale
    assert len(table._heap) <= 2 * len(table) + 64
    assert table.next_deadline() == 2000.0
    for i in range(0, 1000, 2):
        table.clear(i)
    assert table.next_deadline() == 2001.0
    assert table.pop_expired(2010.0) == [(i, TimerKind.IDLE) for i in range(1, 11, 2)]
    assert table.pop_expired(2010.0) == []


# -- limits ------------------------------------------------------------------------------------


def test_incoming_requests_beyond_the_limit_are_refused_and_ping_still_works() -> None:
    pair = ConnectionPair(
        ClientConnection(info=CLIENT_INFO, capabilities=CLIENT_CAPS),
        ServerConnection(info=SERVER_INFO, capabilities=SERVER_CAPS, max_incoming_requests=2),
    )
    pair.handshake()
    server = pair.server
    for i in range(3):
        server.receive_data(line({"jsonrpc": "2.0", "id": i, "method": "tools/list"}))
    events = drain(server)
    assert [type(e) for e in events] == [Request, Request, MessageRejected]
    [refused] = wire(server)
    assert refused["id"] == 2 and refused["error"]["code"] == ErrorCode.TOO_MANY_REQUESTS
    server.receive_data(line({"jsonrpc": "2.0", "id": "p", "method": "ping"}))
    drain(server)
    assert wire(server) == [{"jsonrpc": "2.0", "id": "p", "result": {}}]
    server.send_response(0, {"tools": []})  # room again
    wire(server)
    server.receive_data(line({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
    assert isinstance(drain(server)[0], Request)


def test_outgoing_requests_beyond_the_limit_raise() -> None:
    pair = operating_pair(max_outgoing_requests=2)
    pair.client.send_request("tools/list", now=0)
    pair.client.send_request("tools/list", now=0)
    with pytest.raises(LocalProtocolError, match="too many"):
        pair.client.send_request("tools/list", now=0)
    assert pair.client.pending_requests == 2


def test_recent_ids_limit_bounds_what_late_responses_remember() -> None:
    pair = operating_pair(recent_ids_limit=1)
    a = pair.client.send_request("tools/list", now=0)
    b = pair.client.send_request("tools/list", now=0)
    pair.client.cancel(a)
    pair.client.cancel(b)
    drain(pair.client)
    wire(pair.client)
    pair.client.receive_data(line({"jsonrpc": "2.0", "id": a, "result": {}}))
    pair.client.receive_data(line({"jsonrpc": "2.0", "id": b, "result": {}}))
    assert [type(e).__name__ for e in drain(pair.client)] == ["UnexpectedResponse",
                                                              "LateResponse"]
