"""The Streamable HTTP server, handshake era (2025-03-26 .. 2025-11-25): driven with raw
HTTP/1.1 through h11 in memory, every status code, sessions and expiry on a virtual clock,
streams, routing and resumption."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_sansio import (
    CancelRequested,
    ConnectionClosed,
    Initialized,
    Request,
    Response,
    ServerConnection,
)
from mcp_sansio.http import InMemoryEventStore, ResponseMode, Session, SessionEnd
from mcp_sansio.http._server import HTTPServer
from tests.http_util import (
    ACCEPT_BOTH,
    HOST,
    SERVER_INFO,
    Harness,
    init_body,
    validate_messages,
)

V = "2025-11-25"


def tools_call(request_id: int = 1, progress: bool = False, name: str = "echo") -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {}}
    if progress:
        params["_meta"] = {"progressToken": f"p{request_id}"}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


class Deferred:
    """An application that answers requests only when told to."""

    def __init__(self) -> None:
        self.requests: list[tuple[Session, Request]] = []

    def __call__(self, session: Session, event: Any) -> None:
        if isinstance(event, Request):
            self.requests.append((session, event))


# -- the handshake and the basic exchange -------------------------------------------------------


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_initialize_gets_a_session_id_and_a_json_answer(version: str) -> None:
    h = Harness()
    conn = h.conn()
    r = conn.send(body=init_body(version))
    assert r.status == 200
    assert r.headers["content-type"] == "application/json"
    assert r.headers["mcp-session-id"] == "session-1"
    assert r.json["result"]["protocolVersion"] == version
    validate_messages(version, [r.json], {0: "initialize"})
    r2 = conn.send(body={"jsonrpc": "2.0", "method": "notifications/initialized"},
                   headers=h.session_headers("session-1", version))
    assert r2.status == 202 and r2.body == b""
    assert any(isinstance(e, Initialized) for _, e in h.events)
    assert list(h.server.sessions) == ["session-1"]


def test_failed_initialize_mints_no_session() -> None:
    h = Harness()
    r = h.conn().send(body={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    assert r.status == 200 and r.json["error"]["code"] == -32602
    assert "mcp-session-id" not in r.headers
    assert not h.server.sessions


def test_request_answered_over_sse_with_priming_progress_and_response() -> None:
    h = Harness(handler=None)
    sid = h.initialize()
    conn = h.conn()
    r = conn.send(body=tools_call(7, progress=True), headers=h.session_headers(sid))
    # The application has not answered yet: the stream starts with the priming event.
    assert r.status == 200 and r.is_sse and not r.done
    assert r.headers["x-accel-buffering"] == "no"
    priming = r.events[0]
    assert priming.data == b"" and priming.id and priming.retry == 1000
    session, request = next((s, e) for s, e in h.events if isinstance(e, Request))
    session.connection.send_progress(request.request_id, 1, 2, "half")
    session.connection.send_notification(
        "notifications/message", {"level": "info", "data": "hi"},
        related_request_id=request.request_id)
    session.connection.send_response(request.request_id, {"content": [], "isError": False})
    session.flush()
    h.run()
    assert r.done
    methods = [m.get("method") for m in r.messages]
    assert methods == ["notifications/progress", "notifications/message", None]
    assert r.messages[-1]["id"] == 7
    validate_messages(V, r.messages, {7: "tools/call"})
    ids = [e.id for e in r.events]
    assert len(set(ids)) == len(ids)  # unique event ids


def test_an_immediate_answer_is_json_even_in_sse_mode() -> None:
    h = Harness()
    sid = h.initialize()
    r = h.conn().send(body=tools_call(), headers=h.session_headers(sid))
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    assert r.json["result"]["content"][0]["text"] == "ok"


def test_json_mode_sends_related_messages_on_the_standalone_stream() -> None:
    app = Deferred()
    h = Harness(handler=app, response_mode=ResponseMode.JSON)
    sid = h.initialize()
    get = h.conn().send("GET", headers=h.session_headers(sid))
    assert get.status == 200 and get.is_sse
    r = h.conn().send(body=tools_call(3, progress=True), headers=h.session_headers(sid))
    assert r.status is None  # nothing yet: JSON waits for the response
    session, req = app.requests[0]
    session.connection.send_progress(req.request_id, 1)
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    h.run()
    assert r.headers["content-type"] == "application/json" and r.json["id"] == 3
    assert [m["method"] for m in get.messages] == ["notifications/progress"]


def test_auto_mode_chooses_by_the_first_message() -> None:
    app = Deferred()
    h = Harness(handler=app, response_mode=ResponseMode.AUTO)
    sid = h.initialize()
    quick = h.conn().send(body=tools_call(1), headers=h.session_headers(sid))
    slow = h.conn().send(body=tools_call(2, progress=True), headers=h.session_headers(sid))
    (s1, r1), (s2, r2) = app.requests
    s1.connection.send_response(r1.request_id, {"content": [], "isError": False})
    s2.connection.send_progress(r2.request_id, 1)
    s2.connection.send_response(r2.request_id, {"content": [], "isError": False})
    s1.flush()
    h.run()
    assert quick.headers["content-type"] == "application/json"
    assert slow.is_sse and [m.get("method") for m in slow.messages] == [
        "notifications/progress", None]


def test_server_request_travels_on_the_request_stream_and_its_answer_is_accepted() -> None:
    app = Deferred()
    h = Harness(handler=app)
    conn = h.conn()
    r = conn.send(body={**init_body(), "params": {
        "protocolVersion": V, "capabilities": {"elicitation": {}}, "clientInfo": {
            "name": "c", "version": "1"}}})
    sid = r.headers["mcp-session-id"]
    conn.send(body={"jsonrpc": "2.0", "method": "notifications/initialized"},
              headers=h.session_headers(sid))
    call = h.conn().send(body=tools_call(5), headers=h.session_headers(sid))
    session, req = app.requests[0]
    # The server's own request ids start at 1 like the client's: routing must not mix them.
    eid = session.connection.send_request(
        "elicitation/create",
        {"mode": "form", "message": "name?", "requestedSchema": {"type": "object",
                                                                  "properties": {}}},
        related_request_id=req.request_id)
    session.flush()
    h.run()
    assert call.messages[-1]["method"] == "elicitation/create"
    answer = h.conn().send(body={"jsonrpc": "2.0", "id": eid,
                                 "result": {"action": "decline"}},
                           headers=h.session_headers(sid))
    assert answer.status == 202
    assert any(isinstance(e, Response) and e.request_id == eid for _, e in h.events)
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    h.run()
    assert call.done and call.messages[-1]["id"] == 5
    validate_messages(V, call.messages, {5: "tools/call"})


def test_unrelated_server_request_goes_to_the_standalone_stream() -> None:
    h = Harness()
    conn = h.conn()
    r = conn.send(body={**init_body(), "params": {
        "protocolVersion": V, "capabilities": {"roots": {}}, "clientInfo": {
            "name": "c", "version": "1"}}})
    sid = r.headers["mcp-session-id"]
    conn.send(body={"jsonrpc": "2.0", "method": "notifications/initialized"},
              headers=h.session_headers(sid))
    # a request in flight with id 1, as the server's first own request will be
    app = Deferred()
    h.handler = app
    call = h.conn().send(body=tools_call(1), headers=h.session_headers(sid))
    session = h.server.sessions[sid]
    rid = session.connection.send_request("roots/list")
    assert rid == 1
    session.flush()
    h.run()
    assert not [m for m in call.messages if m.get("method") == "roots/list"]
    get = h.conn().send("GET", headers=h.session_headers(sid))
    assert [m["method"] for m in get.messages] == ["roots/list"]  # held until a GET opened


# -- status codes ------------------------------------------------------------------------------


def test_missing_session_id_is_400_and_unknown_is_404() -> None:
    h = Harness()
    h.initialize()
    r = h.conn().send(body=tools_call())
    assert r.status == 400 and "Mcp-Session-Id" in r.json["error"]["message"]
    r = h.conn().send(body=tools_call(), headers=[("mcp-session-id", "nope")])
    assert r.status == 404
    assert r.json["jsonrpc"] == "2.0" and r.json["id"] is None


def test_delete_ends_the_session_then_404() -> None:
    h = Harness()
    sid = h.initialize()
    r = h.conn().send("DELETE", headers=h.session_headers(sid))
    assert r.status == 200
    closed = [(s, e) for s, e in h.events if isinstance(e, ConnectionClosed)]
    assert len(closed) == 1 and closed[0][0].ended is SessionEnd.DELETED
    assert h.conn().send(body=tools_call(), headers=h.session_headers(sid)).status == 404
    assert h.conn().send("DELETE", headers=h.session_headers(sid)).status == 404


def test_delete_and_get_can_be_disabled() -> None:
    h = Harness(enable_get=False, enable_delete=False)
    sid = h.initialize()
    r = h.conn().send("DELETE", headers=h.session_headers(sid))
    assert r.status == 405 and r.headers["allow"] == "POST"
    r = h.conn().send("GET", headers=h.session_headers(sid))
    assert r.status == 405
    assert h.conn().send("PUT", headers=h.session_headers(sid)).status == 405


def test_accept_and_content_type_are_checked() -> None:
    h = Harness()
    sid = h.initialize()
    base = h.session_headers(sid)
    for accept in ("application/json", "text/event-stream", "text/html", None):
        headers = [("host", HOST), ("content-type", "application/json"), *base]
        if accept:
            headers.append(("accept", accept))
        r = h.conn().send(body=tools_call(), headers=headers, defaults=False)
        assert r.status == 406, accept
    for accept in ("*/*", "application/*, text/*", "application/json;q=0.9, text/event-stream"):
        headers = [("host", HOST), ("content-type", "application/json"), ("accept", accept),
                   *base]
        assert h.conn().send(body=tools_call(), headers=headers, defaults=False).status == 200
    headers = [("host", HOST), ("accept", "*/*;q=0"), ("content-type", "application/json"),
               *base]
    assert h.conn().send(body=tools_call(), headers=headers, defaults=False).status == 406
    for ctype in ("text/plain", None):
        headers = [("host", HOST), ("accept", ACCEPT_BOTH), *base]
        if ctype:
            headers.append(("content-type", ctype))
        assert h.conn().send(body=tools_call(), headers=headers,
                             defaults=False).status == 415
    headers = [("host", HOST), ("accept", ACCEPT_BOTH), *base,
               ("content-type", "application/json; charset=utf-8")]
    assert h.conn().send(body=tools_call(), headers=headers, defaults=False).status == 200
    get = h.conn().send("GET", headers=[("host", HOST), ("accept", "application/json"), *base],
                        defaults=False)
    assert get.status == 406


def test_each_accept_value_keeps_its_own_answer_when_sent_again() -> None:
    # The POST's Accept answer is remembered per value: interleaved repeats of a refused
    # and an accepted value each get their own answer every time.
    h = Harness()
    sid = h.initialize()
    for accept, status in [("text/html", 406), (ACCEPT_BOTH, 200)] * 2 + [("*/*;q=0", 406)] * 2:
        headers = [("host", HOST), ("content-type", "application/json"), ("accept", accept),
                   *h.session_headers(sid)]
        assert h.conn().send(body=tools_call(), headers=headers,
                             defaults=False).status == status, accept


def test_protocol_version_header() -> None:
    h = Harness()
    sid = h.initialize()
    r = h.conn().send(body=tools_call(), headers=[("mcp-session-id", sid),
                                                  ("mcp-protocol-version", "1999-01-01")])
    assert r.status == 400 and r.json["error"]["code"] == -32022
    assert "2025-11-25" in r.json["error"]["data"]["supported"]
    # absent: assumed 2025-03-26 and accepted
    r = h.conn().send(body=tools_call(2), headers=[("mcp-session-id", sid)])
    assert r.status == 200


def test_unsupported_version_on_a_handshake_only_server_uses_no_stateless_code() -> None:
    h = Harness(connection=lambda: ServerConnection(info=SERVER_INFO,
                                                    versions=["2025-06-18", "2025-11-25"]))
    sid = h.initialize()
    r = h.conn().send(body=tools_call(), headers=[("mcp-session-id", sid),
                                                  ("mcp-protocol-version", "2026-07-28")])
    assert r.status == 400 and r.json["error"]["code"] == -32600


@pytest.mark.parametrize(("header", "value", "allowed"), [
    ("host", "localhost:8000", True),
    ("host", "127.0.0.1", True),
    ("host", "[::1]:9", True),
    ("host", "evil.example", False),
    ("host", "localhost.evil.example:8000", False),
    ("origin", "http://localhost:3000", True),
    ("origin", "https://127.0.0.1", True),
    ("origin", "http://evil.example", False),
    ("origin", "null", False),
])
def test_host_and_origin_validation(header: str, value: str, allowed: bool) -> None:
    h = Harness()
    headers = [("accept", ACCEPT_BOTH), ("content-type", "application/json")]
    headers.append(("host", value) if header == "host" else ("host", HOST))
    if header == "origin":
        headers.append(("origin", value))
    r = h.conn().send(body=init_body(), headers=headers, defaults=False)
    assert (r.status == 200) is allowed
    if not allowed:
        assert r.status == 403 and r.json["error"]["code"] == -32600
        assert not h.server.sessions


def test_allow_lists_are_configurable() -> None:
    h = Harness(allowed_hosts=["mcp.example.com"], allowed_origins=["https://app.example:*"])
    base = [("accept", ACCEPT_BOTH), ("content-type", "application/json")]
    ok = h.conn().send(body=init_body(), defaults=False, headers=[
        *base, ("host", "mcp.example.com"), ("origin", "https://app.example:8443")])
    assert ok.status == 200
    bad = h.conn().send(body=init_body(), defaults=False, headers=[*base, ("host", HOST)])
    assert bad.status == 403
    h2 = Harness(allowed_hosts=None, allowed_origins=None)
    free = h2.conn().send(body=init_body(), defaults=False, headers=[
        *base, ("host", "anything"), ("origin", "http://evil.example")])
    assert free.status == 200


def test_wrong_path_is_404() -> None:
    h = Harness()
    assert h.conn().send(body=init_body(), target="/other").status == 404
    assert h.conn().send(body=init_body(), target="/mcp?x=1").status == 200


def test_bad_json_and_bad_json_rpc_are_400_and_the_connection_survives() -> None:
    h = Harness()
    sid = h.initialize()
    conn = h.conn()
    r = conn.send(raw=b"{not json", headers=h.session_headers(sid))
    assert r.status == 400 and r.json["error"]["code"] == -32700
    r = conn.send(body={"jsonrpc": "1.0", "id": 4, "method": "x"}, headers=h.session_headers(sid))
    assert r.status == 400 and r.json["error"]["code"] == -32600 and r.json["id"] == 4
    r = conn.send(body=[], headers=h.session_headers(sid))
    assert r.status == 400
    r = conn.send(body=tools_call(), headers=h.session_headers(sid))
    assert r.status == 200  # same TCP connection, still usable
    assert not conn.closed


def test_duplicate_request_id_in_flight_is_400() -> None:
    h = Harness(handler=Deferred())
    sid = h.initialize()
    first = h.conn().send(body=tools_call(9), headers=h.session_headers(sid))
    second = h.conn().send(body=tools_call(9), headers=h.session_headers(sid))
    assert first.status == 200 and not first.done
    assert second.status == 400 and second.json["id"] == 9


def test_oversized_body_is_413_and_closes() -> None:
    h = Harness(max_body_size=100)
    conn = h.conn()
    r = conn.send(body={"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"p": "x" * 200}})
    assert r.status == 413 and conn.closed
    # chunked: no Content-Length to refuse early, counted as it arrives
    h2 = Harness(max_body_size=100)
    channel = h2.server.new_channel(now=0)
    channel.receive_data(_raw_post(b"", chunked=True) + b"80\r\n" + b"x" * 128 + b"\r\n", now=0)
    out = dict(h2.server.data_to_send())
    assert out[channel].startswith(b"HTTP/1.1 413 ") and channel.closed


def _raw_post(body: bytes, *, session_id: str | None = None, chunked: bool = False) -> bytes:
    head = (b"POST /mcp HTTP/1.1\r\nhost: localhost\r\naccept: */*\r\n"
            b"content-type: application/json\r\n")
    if session_id is not None:
        head += b"mcp-session-id: " + session_id.encode() + b"\r\n"
    if chunked:
        return head + b"transfer-encoding: chunked\r\n\r\n" + body
    return head + b"content-length: %d\r\n\r\n" % len(body) + body


@pytest.mark.parametrize("garbage", [
    b"GARBAGE\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nhost localhost\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\ncontent-length: nope\r\n\r\n",
    b"GET /mcp HTTP/1.1\r\n\r\n",  # no Host
])
def test_malformed_http_is_400_and_closes_cleanly(garbage: bytes) -> None:
    h = Harness()
    channel = h.server.new_channel(now=0)
    channel.receive_data(garbage, now=0)
    out = dict(h.server.data_to_send())
    assert out[channel].startswith(b"HTTP/1.1 400 ")
    assert channel.closed


def test_oversized_head_is_431() -> None:
    h = Harness(max_header_size=1024)
    channel = h.server.new_channel(now=0)
    channel.receive_data(b"GET /mcp HTTP/1.1\r\nx: " + b"a" * 2000, now=0)
    out = dict(h.server.data_to_send())
    assert out[channel].startswith(b"HTTP/1.1 431 ")
    assert channel.closed


def test_pipelined_requests_are_answered_in_order() -> None:
    h = Harness()
    sid = h.initialize()
    channel = h.server.new_channel(now=0)
    data = b"".join(_raw_post(json.dumps(tools_call(i)).encode(), session_id=sid)
                    for i in (1, 2, 3))
    channel.receive_data(data, now=0)
    h.run()  # one answer at a time, in order (HTTP/1.1)
    out = bytes(h.raw_out[channel])
    assert out.count(b"HTTP/1.1 200 ") == 3
    assert out.index(b'"id":1') < out.index(b'"id":2') < out.index(b'"id":3')
    assert not channel.closed


def test_second_standalone_stream_is_409() -> None:
    h = Harness()
    sid = h.initialize()
    first = h.conn().send("GET", headers=h.session_headers(sid))
    assert first.status == 200
    second = h.conn().send("GET", headers=h.session_headers(sid))
    assert second.status == 409


def test_session_cap_is_503() -> None:
    h = Harness(max_sessions=2)
    h.initialize()
    h.initialize()
    r = h.conn().send(body=init_body())
    assert r.status == 503 and r.headers["retry-after"] == "1"
    assert r.json["id"] == 0


def test_session_id_must_be_visible_ascii() -> None:
    h = Harness(new_session_id=lambda: "has space")
    with pytest.raises(ValueError, match="visible ASCII"):
        h.conn().send(body=init_body())


def test_handshake_needs_a_session_id_source() -> None:
    with pytest.raises(ValueError, match="new_session_id"):
        HTTPServer(lambda: ServerConnection(info=SERVER_INFO))


# -- expiry ------------------------------------------------------------------------------------


def test_idle_sessions_expire_on_the_virtual_clock() -> None:
    h = Harness(session_idle_timeout=60.0, keepalive_interval=None)
    sid = h.initialize()
    assert h.server.next_deadline() == pytest.approx(60.0)
    h.advance(30)
    assert h.conn().send(body=tools_call(), headers=h.session_headers(sid)).status == 200
    h.advance(45)  # 75 s: 45 s after the last request
    assert sid in h.server.sessions
    h.advance(20)  # 95 s: 65 s idle
    assert sid not in h.server.sessions
    closed = [s for s, e in h.events if isinstance(e, ConnectionClosed)]
    assert closed and closed[0].ended is SessionEnd.EXPIRED
    assert h.conn().send(body=tools_call(), headers=h.session_headers(sid)).status == 404


def test_an_open_stream_keeps_a_session_alive() -> None:
    h = Harness(session_idle_timeout=60.0, keepalive_interval=None)
    sid = h.initialize()
    get = h.conn()
    get.send("GET", headers=h.session_headers(sid))
    h.advance(500)
    assert sid in h.server.sessions
    get.close()
    h.advance(59)
    assert sid in h.server.sessions
    h.advance(2)
    assert sid not in h.server.sessions


def test_end_session_by_the_application() -> None:
    app = Deferred()
    h = Harness(handler=app)
    sid = h.initialize()
    pending = h.conn().send(body=tools_call(), headers=h.session_headers(sid))
    get = h.conn().send("GET", headers=h.session_headers(sid))
    h.server.end_session(sid)
    h.run()
    assert pending.done and get.done
    assert h.server.session(sid) is None
    assert h.conn().send(body=tools_call(2), headers=h.session_headers(sid)).status == 404


def test_keepalive_comments_on_open_streams() -> None:
    h = Harness(keepalive_interval=10.0, session_idle_timeout=None)
    sid = h.initialize()
    conn = h.conn()
    get = conn.send("GET", headers=h.session_headers(sid))
    comment = b"3\r\n:\n\n\r\n"  # one chunk holding an SSE comment line
    assert comment not in conn.raw
    h.advance(10)
    assert get.status == 200 and not get.done
    assert conn.raw.endswith(comment)
    assert h.server.next_deadline() == pytest.approx(20.0)
    conn.close()
    h.advance(10)  # no stream left: no more keep-alives scheduled
    assert h.server.next_deadline() is None


# -- resumption --------------------------------------------------------------------------------


def test_a_broken_request_stream_is_resumed_with_last_event_id() -> None:
    app = Deferred()
    h = Harness(handler=app)
    sid = h.initialize()
    conn = h.conn()
    r = conn.send(body=tools_call(4, progress=True), headers=h.session_headers(sid))
    session, req = app.requests[0]
    session.connection.send_progress(req.request_id, 1)
    session.flush()
    h.run()
    last = r.events[-1].id
    assert last is not None and r.messages[0]["method"] == "notifications/progress"
    conn.close()  # the network drops: not a cancellation
    assert not h.events_of(CancelRequested)
    session.connection.send_progress(req.request_id, 2)
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    h.run()
    resumed = h.conn().send("GET", headers=[*h.session_headers(sid), ("last-event-id", last)])
    assert resumed.status == 200 and resumed.done
    assert [m.get("method") for m in resumed.messages] == ["notifications/progress", None]
    assert resumed.messages[0]["params"]["progress"] == 2


def test_resuming_a_live_stream_attaches_to_it() -> None:
    app = Deferred()
    h = Harness(handler=app)
    sid = h.initialize()
    conn = h.conn()
    r = conn.send(body=tools_call(4), headers=h.session_headers(sid))
    priming = r.events[0].id
    conn.close()
    resumed = h.conn().send("GET", headers=[*h.session_headers(sid), ("last-event-id", priming)])
    assert resumed.status == 200 and not resumed.done
    session, req = app.requests[0]
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    h.run()
    assert resumed.done and resumed.messages[-1]["id"] == 4


def test_resume_the_standalone_stream() -> None:
    h = Harness()
    sid = h.initialize()
    conn = h.conn()
    get = conn.send("GET", headers=h.session_headers(sid))
    session = h.server.sessions[sid]
    session.connection.send_notification("notifications/tools/list_changed")
    session.flush()
    h.run()
    last = get.events[-1].id
    conn.close()
    session.connection.send_notification("notifications/message", {"level": "info", "data": 1})
    session.flush()
    h.run()
    again = h.conn().send("GET", headers=[*h.session_headers(sid), ("last-event-id", last)])
    assert [m["method"] for m in again.messages] == ["notifications/message"]
    assert not again.done


def test_unknown_or_foreign_last_event_id_is_400() -> None:
    h = Harness(handler=Deferred())
    sid1 = h.initialize()
    sid2 = h.initialize()
    r = h.conn().send(body=tools_call(), headers=h.session_headers(sid1))
    foreign = r.events[0].id
    assert h.conn().send("GET", headers=[*h.session_headers(sid2),
                                         ("last-event-id", foreign)]).status == 400
    assert h.conn().send("GET", headers=[*h.session_headers(sid1),
                                         ("last-event-id", "zzz")]).status == 400


def test_evicted_events_are_not_replayed_with_a_gap() -> None:
    app = Deferred()
    h = Harness(handler=app, event_store=InMemoryEventStore(max_events=3))
    sid = h.initialize()
    conn = h.conn()
    r = conn.send(body=tools_call(1, progress=True), headers=h.session_headers(sid))
    first = r.events[0].id
    conn.close()
    session, req = app.requests[0]
    for i in range(1, 6):
        session.connection.send_progress(req.request_id, i)
    session.flush()
    h.run()
    assert h.conn().send("GET", headers=[*h.session_headers(sid),
                                         ("last-event-id", first)]).status == 400


def test_not_resumable_means_no_ids() -> None:
    app = Deferred()
    h = Harness(handler=app, resumable=False)
    sid = h.initialize()
    r = h.conn().send(body=tools_call(1, progress=True), headers=h.session_headers(sid))
    session, req = app.requests[0]
    session.connection.send_progress(req.request_id, 1)
    session.flush()
    h.run()
    assert [e.id for e in r.events] == [None]


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18"])
def test_older_revisions_get_no_priming_event(version: str) -> None:
    app = Deferred()
    h = Harness(handler=app)
    sid = h.initialize(version=version)
    r = h.conn().send(body=tools_call(1, progress=True), headers=h.session_headers(sid, version))
    assert r.events == []  # only a retry field, no empty data event
    session, req = app.requests[0]
    session.connection.send_progress(req.request_id, 1)
    session.flush()
    h.run()
    assert [m["method"] for m in r.messages] == ["notifications/progress"]
    assert r.events[0].id is not None


# -- cancellation and batches ------------------------------------------------------------------


def test_cancelled_request_ends_its_stream() -> None:
    h = Harness(handler=Deferred(), response_mode=ResponseMode.AUTO)
    sid = h.initialize()
    call = h.conn().send(body=tools_call(3), headers=h.session_headers(sid))
    cancel = h.conn().send(body={"jsonrpc": "2.0", "method": "notifications/cancelled",
                                 "params": {"requestId": 3}}, headers=h.session_headers(sid))
    assert cancel.status == 202
    assert call.done and call.status == 200 and call.messages == []
    assert [e.request_id for e in h.events_of(CancelRequested)] == [3]


def test_batches_in_2025_03_26() -> None:
    h = Harness()
    v = "2025-03-26"
    sid = h.initialize(version=v)
    batch = [tools_call(1), {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
             tools_call(2)]
    r = h.conn().send(body=batch, headers=h.session_headers(sid, v))
    assert r.status == 200
    replies = r.json
    assert sorted(m["id"] for m in replies) == [1, 2]
    validate_messages(v, [replies], {1: "tools/call", 2: "tools/call"})
    only_notes = h.conn().send(body=[{"jsonrpc": "2.0", "method": "notifications/cancelled",
                                      "params": {"requestId": 99}}],
                               headers=h.session_headers(sid, v))
    assert only_notes.status == 202


def test_batches_refused_after_2025_03_26() -> None:
    h = Harness()
    sid = h.initialize()
    r = h.conn().send(body=[tools_call(1)], headers=h.session_headers(sid))
    assert r.status == 400 and "batch" in r.json["error"]["message"]


# -- exactly one stream per message ------------------------------------------------------------


def test_every_message_goes_out_on_exactly_one_stream() -> None:
    app = Deferred()
    h = Harness(handler=app)
    sid = h.initialize()
    get = h.conn().send("GET", headers=h.session_headers(sid))
    calls = [h.conn().send(body=tools_call(i, progress=True), headers=h.session_headers(sid))
             for i in range(1, 4)]
    session = h.server.sessions[sid]
    for _, req in app.requests:
        session.connection.send_progress(req.request_id, 1)
        session.connection.send_notification("notifications/message",
                                             {"level": "info", "data": req.request_id},
                                             related_request_id=req.request_id)
        session.connection.send_notification("notifications/message",
                                             {"level": "info", "data": "unrelated"})
    for _, req in reversed(app.requests):
        session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    h.run()
    for i, call in enumerate(calls, 1):
        assert call.done
        related = [m for m in call.messages if m.get("id") == i
                   or m.get("params", {}).get("data") == i
                   or m.get("params", {}).get("progressToken") == f"p{i}"]
        assert related == call.messages and len(related) == 3
    assert [m["params"]["data"] for m in get.messages] == ["unrelated"] * 3
    everything = [json.dumps(m, sort_keys=True) for r in (get, *calls) for m in r.messages]
    assert len(everything) == len(set(everything)) + 2  # the three "unrelated" are equal


def test_sessions_are_independent(json_backend: str) -> None:
    h = Harness()
    a, b = h.initialize(), h.initialize()
    assert a != b
    ra = h.conn().send(body=tools_call(1), headers=h.session_headers(a))
    rb = h.conn().send(body=tools_call(1), headers=h.session_headers(b))
    assert ra.json["id"] == rb.json["id"] == 1
    sessions = {s.id for s, e in h.events if isinstance(e, Request)}
    assert sessions == {a, b}


def test_broadcast_reaches_operating_sessions() -> None:
    h = Harness()
    a = h.initialize()
    h.conn().send(body=init_body())  # initializing, not operating
    get = h.conn().send("GET", headers=h.session_headers(a))
    assert h.server.broadcast("notifications/tools/list_changed") == 1
    h.run()
    assert [m["method"] for m in get.messages] == ["notifications/tools/list_changed"]


# -- more paths ------------------------------------------------------------------------------


def test_a_server_request_times_out_on_the_virtual_clock() -> None:
    from mcp_sansio import RequestTimedOut

    h = Harness(keepalive_interval=None)
    conn = h.conn()
    r = conn.send(body={**init_body(), "params": {
        "protocolVersion": V, "capabilities": {"roots": {}}, "clientInfo": {
            "name": "c", "version": "1"}}})
    sid = r.headers["mcp-session-id"]
    conn.send(body={"jsonrpc": "2.0", "method": "notifications/initialized"},
              headers=h.session_headers(sid))
    get = h.conn().send("GET", headers=h.session_headers(sid))
    session = h.server.sessions[sid]
    rid = session.connection.send_request("roots/list", now=h.now, timeout=5.0)
    session.flush()
    h.run()
    assert h.server.next_deadline() == pytest.approx(5.0)
    h.advance(5.0)
    assert [e.request_id for e in h.events_of(RequestTimedOut)] == [rid]
    assert [m["method"] for m in get.messages] == ["roots/list", "notifications/cancelled"]


def test_resuming_takes_a_stream_over_from_a_connection_still_open() -> None:
    app = Deferred()
    h = Harness(handler=app)
    sid = h.initialize()
    old = h.conn()
    r = old.send(body=tools_call(4), headers=h.session_headers(sid))
    resumed = h.conn().send("GET", headers=[*h.session_headers(sid),
                                            ("last-event-id", r.events[0].id)])
    assert resumed.status == 200 and old.closed
    session, req = app.requests[0]
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    h.run()
    assert resumed.done and resumed.messages[-1]["id"] == 4 and r.messages == []


def test_json_mode_client_gone_before_the_answer() -> None:
    app = Deferred()
    h = Harness(handler=app, response_mode=ResponseMode.JSON)
    sid = h.initialize()
    conn = h.conn()
    conn.send(body=tools_call(4), headers=h.session_headers(sid))
    conn.close()
    session, req = app.requests[0]
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    h.run()
    assert not session._streams and not session._routes
    # the id is free again
    again = h.conn().send(body=tools_call(4), headers=h.session_headers(sid))
    assert again.status is None or again.status == 200


def test_standalone_backlog_is_bounded() -> None:
    h = Harness(max_pending_messages=2)
    sid = h.initialize()
    session = h.server.sessions[sid]
    for i in range(5):
        session.connection.send_notification("notifications/message",
                                             {"level": "info", "data": i})
    session.flush()
    h.run()
    get = h.conn().send("GET", headers=h.session_headers(sid))
    assert [m["params"]["data"] for m in get.messages] == [3, 4]


def test_open_streams_and_reprs() -> None:
    h = Harness(handler=Deferred())
    sid = h.initialize()
    session = h.server.sessions[sid]
    assert session.open_streams == 0
    h.conn().send(body=tools_call(1), headers=h.session_headers(sid))
    conn = h.conn()
    conn.send("GET", headers=h.session_headers(sid))
    assert session.open_streams == 2
    assert "'session-'..." in repr(session) and "ServerChannel" in repr(conn.channel)
    assert h.server.session("nope") is None
    h.server.end_session("nope")  # unknown: nothing happens


def test_the_channel_drains_on_its_own() -> None:
    h = Harness()
    channel = h.server.new_channel(now=0)
    channel.receive_data(b"GET /nothing HTTP/1.1\r\nhost: localhost\r\n\r\n", now=0)
    assert channel.data_to_send().startswith(b"HTTP/1.1 404 ")
    assert h.server.data_to_send() == []
    channel.connection_lost(now=0)
    assert channel.closed


def test_a_new_session_id_must_be_fresh() -> None:
    h = Harness(new_session_id=lambda: "same")
    h.initialize()
    with pytest.raises(ValueError, match="in use"):
        h.conn().send(body=init_body())


def test_broadcast_skips_sessions_that_may_not_receive_it() -> None:
    h = Harness(connection=lambda: ServerConnection(info=SERVER_INFO,
                                                    capabilities={"tools": {}}))
    h.initialize()
    assert h.server.broadcast("notifications/prompts/list_changed") == 0


def test_mismatched_version_header_on_get_and_delete() -> None:
    h = Harness()
    sid = h.initialize()
    for method in ("GET", "DELETE"):
        r = h.conn().send(method, headers=[("mcp-session-id", sid),
                                           ("mcp-protocol-version", "1999-01-01")])
        assert r.status == 400


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ops = st.lists(st.one_of(
    st.tuples(st.just("request"), st.booleans()),
    st.tuples(st.just("progress"), st.integers(0, 5)),
    st.tuples(st.just("log"), st.integers(0, 5)),
    st.tuples(st.just("unrelated"), st.integers(0, 5)),
    st.tuples(st.just("answer"), st.integers(0, 5)),
    st.tuples(st.just("get"), st.booleans()),
), max_size=25)


@settings(max_examples=150, deadline=None)
@given(ops=_ops, mode=st.sampled_from(list(ResponseMode)))
def test_each_message_is_delivered_exactly_once(
    ops: list[tuple[str, Any]], mode: ResponseMode,
) -> None:
    """Whatever the interleaving of requests, progress, logs, unrelated messages, answers and
    GET streams, every message the connection emits arrives exactly once, on a stream of its
    own request when it relates to one that is still open (SSE), else on the standalone
    stream."""
    from tests.http_util import RecordingServerConnection

    app = Deferred()
    h = Harness(handler=app, response_mode=mode, connection=lambda: RecordingServerConnection(
        info=SERVER_INFO, capabilities={"logging": {}, "tools": {"listChanged": True}}))
    sid = h.initialize()
    session = h.server.sessions[sid]
    skip = len(session.connection.sent)  # type: ignore[attr-defined]  # the handshake's
    responses = []
    gets = []
    open_requests: list[int] = []
    next_id = 1
    progress: dict[int, int] = {}
    asked_progress: dict[int, bool] = {}
    for op, arg in ops:
        conn = session.connection
        if op == "request":
            body = tools_call(next_id, progress=arg)
            responses.append(h.conn().send(body=body, headers=h.session_headers(sid)))
            asked_progress[next_id] = arg
            open_requests.append(next_id)
            next_id += 1
            continue
        if op == "get":
            if not gets or gets[-1][0].closed:
                c = h.conn()
                gets.append((c, c.send("GET", headers=h.session_headers(sid))))
            elif arg:
                gets[-1][0].close()
            continue
        if op == "unrelated":
            conn.send_notification("notifications/tools/list_changed")
        elif open_requests:
            rid = open_requests[arg % len(open_requests)]
            if op == "progress" and asked_progress[rid]:
                progress[rid] = progress.get(rid, 0) + 1
                conn.send_progress(rid, progress[rid])
            elif op == "log":
                conn.send_notification("notifications/message",
                                       {"level": "info", "data": rid}, related_request_id=rid)
            elif op == "answer":
                conn.send_response(rid, {"content": [], "isError": False})
                open_requests.remove(rid)
        session.flush()
        h.run()
    # answer everything, then open a GET to collect what waits for the standalone stream
    for rid in list(open_requests):
        session.connection.send_response(rid, {"content": [], "isError": False})
    session.flush()
    h.run()
    if gets and not gets[-1][0].closed:
        gets[-1][0].close()
    final = h.conn().send("GET", headers=h.session_headers(sid))
    received = [m for r in responses for m in r.messages]
    received += [m for _, g in gets for m in g.messages] + final.messages
    sent = session.connection.sent[skip:]  # type: ignore[attr-defined]
    key = lambda m: json.dumps(m, sort_keys=True)  # noqa: E731
    assert sorted(map(key, received)) == sorted(map(key, sent))
    assert all(r.done for r in responses)


def test_a_client_gone_before_the_head_still_gets_related_requests_on_the_standalone_stream(
) -> None:
    app = Deferred()
    h = Harness(handler=app, response_mode=ResponseMode.AUTO)
    conn = h.conn()
    r = conn.send(body={**init_body(), "params": {
        "protocolVersion": V, "capabilities": {"roots": {}}, "clientInfo": {
            "name": "c", "version": "1"}}})
    sid = r.headers["mcp-session-id"]
    conn.send(body={"jsonrpc": "2.0", "method": "notifications/initialized"},
              headers=h.session_headers(sid))
    call = h.conn()
    call.send(body=tools_call(3), headers=h.session_headers(sid))
    call.close()
    session, req = app.requests[0]
    session.connection.send_request("roots/list", related_request_id=req.request_id)
    session.flush()
    h.run()
    get = h.conn().send("GET", headers=h.session_headers(sid))
    assert [m["method"] for m in get.messages] == ["roots/list"]


_VALID = (b"POST /mcp HTTP/1.1\r\nhost: localhost\r\naccept: */*\r\n"
          b"content-type: application/json\r\ncontent-length: 46\r\n\r\n"
          b'{"jsonrpc":"2.0","id":1,"method":"initialize"}')


@settings(max_examples=80, deadline=None)
@given(cut=st.integers(0, len(_VALID)), junk=st.binary(max_size=40),
       size=st.integers(0, 300))
def test_malformed_or_oversized_input_is_answered_and_the_channel_survives_or_closes(
    cut: int, junk: bytes, size: int,
) -> None:
    h = Harness(max_body_size=200)
    channel = h.server.new_channel(now=0)
    body = b'{"jsonrpc":"2.0","method":"x","params":{"p":"' + b"x" * size + b'"}}'
    oversized = (b"POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-length: %d\r\n\r\n"
                 % len(body) + body)
    for data in (_VALID[:cut] + junk, oversized, _VALID):
        if channel.closed:
            break
        channel.receive_data(data, now=0)
        h.run()
    out = bytes(h.raw_out.get(channel, b""))
    statuses = [int(line[9:12]) for line in out.split(b"\r\n") if line.startswith(b"HTTP/1.1 ")]
    assert all(status in (200, 202, 400, 403, 404, 405, 406, 413, 415, 431)
               for status in statuses)
    if len(body) > 200 and not channel.closed:
        raise AssertionError("an oversized body must close the connection")
    if not channel.closed:
        assert statuses  # a surviving connection answered what it read
