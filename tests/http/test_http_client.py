"""The HTTP client against the HTTP server, in memory (bytes through h11 on both sides):
era probing, sessions and their renewal, streams and resumption, cancellation, headers,
failures, and schema validation of what both sides emit."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mcp_sansio import (
    HANDSHAKE_REVISIONS,
    CancelRequested,
    ClientConnection,
    ConnectionClosed,
    Era,
    ErrorResponse,
    Initialized,
    Notification,
    Progress,
    Request,
    RequestCancelled,
    Response,
    ServerConnection,
    SubscriptionAcknowledged,
)
from mcp_sansio.http import HTTPClient, HTTPServer, ResponseMode, param_headers
from mcp_sansio.http._client import SessionRenewed, Transport, TransportFailed
from tests import schemas
from tests.http_util import (
    CLIENT_INFO,
    SERVER_INFO,
    Network,
    RecordingServerConnection,
    Session,
    answer_everything,
)

URL = "http://localhost:8000/mcp"
CAPS = {"tools": {"listChanged": True}, "logging": {}, "prompts": {}, "resources": {}}


class RecordingClientConnection(ClientConnection):
    def encoded_messages_to_send(self) -> list[Any]:
        out = super().encoded_messages_to_send()
        self.__dict__.setdefault("sent", []).extend(m for m, _, _ in out)
        return out


def make(
    *, client_versions: Any = None, server_versions: Any = None, server_handler: Any = None,
    client_kwargs: dict[str, Any] | None = None, **server_options: Any,
) -> Network:
    ids = itertools.count(1)
    servers: list[RecordingServerConnection] = []

    def factory() -> ServerConnection:
        conn = RecordingServerConnection(info=SERVER_INFO, capabilities=CAPS,
                                         versions=server_versions)
        servers.append(conn)
        return conn

    server_options.setdefault("new_session_id", lambda: f"s{next(ids)}")
    server = HTTPServer(factory, **server_options)
    conn = RecordingClientConnection(info=CLIENT_INFO, versions=client_versions,
                                     capabilities={"elicitation": {}, "roots": {}})
    client = HTTPClient(conn, URL, **(client_kwargs or {}))
    net = Network(server, client,
                  server_handler=answer_everything if server_handler is None else server_handler)
    net.server_connections = servers  # type: ignore[attr-defined]
    return net


def validate_all(net: Network) -> None:
    """Every message both sides emitted validates against its revision's schema."""
    client = net.client.connection
    revision = client.protocol_version
    assert revision is not None
    client_methods = {m["id"]: m["method"] for m in client.sent
                      if isinstance(m, dict) and "method" in m and "id" in m}
    for server in net.server_connections:  # type: ignore[attr-defined]
        server_revision = server.protocol_version or revision
        for message in getattr(server, "sent", []):
            schemas.validate_message(server_revision, message, client_methods)
    server_methods = {m["id"]: m["method"]
                      for server in net.server_connections  # type: ignore[attr-defined]
                      for m in getattr(server, "sent", [])
                      if isinstance(m, dict) and "method" in m and "id" in m}
    for message in client.sent:
        if isinstance(message, dict) and message.get("method") in ("initialize",
                                                                    "server/discover"):
            continue  # sent before the revision was known (checked by the core's tests)
        schemas.validate_message(revision, message, server_methods)


class Deferred:
    def __init__(self) -> None:
        self.requests: list[tuple[Session, Request]] = []

    def __call__(self, session: Session, event: Any) -> None:
        if isinstance(event, Request):
            self.requests.append((session, event))


# -- handshake era ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_handshake_era_end_to_end(version: str) -> None:
    net = make(client_versions=[version])
    net.client.connect(now=0)
    net.run()
    assert net.client.transport is Transport.STREAMABLE
    assert net.client.session_id == "s1"
    init = net.events_of(Initialized)
    assert len(init) == 1 and init[0].protocol_version == version
    assert net.client._standalone is not None  # the GET stream is open
    conn = net.client.connection
    rid = conn.send_request("tools/call", {"name": "echo", "arguments": {}}, now=net.now)
    net.run()
    (response,) = [e for e in net.events_of(Response) if e.request_id == rid]
    assert response.result["content"][0]["text"] == "ok"
    validate_all(net)


def test_every_request_carries_session_and_version_headers() -> None:
    net = make(client_versions=["2025-11-25"])
    net.client.connect(now=0)
    net.run()
    net.client.connection.send_request("tools/list", now=net.now)
    net.run()
    sent = b"".join(bytes(b) for b in net.up.values()).decode()
    posts = sent.split("POST /mcp HTTP/1.1")[1:]
    assert len(posts) == 3  # initialize, initialized, tools/list
    assert "mcp-session-id" not in posts[0].split("\r\n\r\n")[0].lower()
    for post in posts[1:]:
        head = post.split("\r\n\r\n")[0].lower()
        assert "mcp-session-id: s1" in head and "mcp-protocol-version: 2025-11-25" in head
        assert "accept: application/json, text/event-stream" in head


def test_progress_and_a_server_request_over_the_request_stream() -> None:
    app = Deferred()
    net = make(client_versions=["2025-11-25"], server_handler=app)
    net.client.connect(now=0)
    net.run()
    conn = net.client.connection
    rid = conn.send_request("tools/call", {"name": "slow", "arguments": {}}, progress=True,
                            now=net.now)
    net.run()
    session, req = app.requests[-1]
    session.connection.send_progress(req.request_id, 0.5, 1.0, "half way")
    eid = session.connection.send_request(
        "elicitation/create",
        {"mode": "form", "message": "ok?", "requestedSchema": {"type": "object",
                                                                "properties": {}}},
        related_request_id=req.request_id, now=net.now)
    session.flush()
    net.run()
    assert [p.progress for p in net.events_of(Progress)] == [0.5]
    (asked,) = [e for e in net.client_events if isinstance(e, Request)]
    conn.send_response(asked.request_id, {"action": "accept", "content": {}})
    net.run()
    assert [e.request_id for e in net.server_events_of(Response)] == [eid]
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    net.run()
    assert any(isinstance(e, Response) and e.request_id == rid for e in net.client_events)
    validate_all(net)


def test_unrelated_server_messages_arrive_on_the_standalone_stream() -> None:
    net = make(client_versions=["2025-11-25"])
    net.client.connect(now=0)
    net.run()
    session = net.server.sessions["s1"]
    session.connection.send_notification("notifications/tools/list_changed")
    session.flush()
    net.run()
    assert [n.method for n in net.events_of(Notification)] == [
        "notifications/tools/list_changed"]


def test_session_renewal_after_404_retries_once() -> None:
    net = make(client_versions=["2025-11-25"])
    net.client.connect(now=0)
    net.run()
    net.server.end_session("s1")
    net.run()
    rid = net.client.connection.send_request("tools/list", now=net.now)
    net.run()
    renewed = net.events_of(SessionRenewed)
    assert renewed == [SessionRenewed(previous_session_id="s1", session_id="s2")]
    assert net.client.session_id == "s2"
    assert any(isinstance(e, Response) and e.request_id == rid for e in net.client_events)
    assert "s2" in net.server.sessions
    # the server saw the new session's handshake completed
    assert len(net.server_events_of(Initialized)) == 2


def test_a_session_that_keeps_vanishing_fails_the_request_after_one_retry() -> None:
    app_calls = []

    def forgetful(session: Session, event: Any) -> None:
        if isinstance(event, Request) and event.method == "tools/list":
            app_calls.append(event)
            session._hub.owner.end_session(session)
        else:
            answer_everything(session, event)

    net = make(client_versions=["2025-11-25"], server_handler=forgetful)
    net.client.connect(now=0)
    net.run()
    rid = net.client.connection.send_request("tools/list", now=net.now)
    net.run()
    cancelled = [e for e in net.events_of(RequestCancelled) if e.request_id == rid]
    assert len(cancelled) == 1 and "HTTP" in (cancelled[0].reason or "")
    assert len(net.events_of(SessionRenewed)) <= 2


def test_close_sends_delete() -> None:
    net = make(client_versions=["2025-11-25"])
    net.client.connect(now=0)
    net.run()
    net.client.close(now=net.now)
    net.run()
    assert net.server.sessions == {}
    assert any(isinstance(e, ConnectionClosed) for e in net.server_events_of(ConnectionClosed))
    assert net.events_of(ConnectionClosed)
    sent = b"".join(bytes(b) for b in net.up.values())
    assert b"DELETE /mcp HTTP/1.1" in sent


def test_a_broken_request_stream_is_resumed_after_retry() -> None:
    app = Deferred()
    net = make(client_versions=["2025-11-25"], server_handler=app)
    net.client.connect(now=0)
    net.run()
    conn = net.client.connection
    rid = conn.send_request("tools/call", {"name": "slow", "arguments": {}}, progress=True,
                            now=net.now)
    net.run()
    session, req = app.requests[-1]
    channel = net.client._by_id[rid].channel
    net.drop(channel)
    session.connection.send_progress(req.request_id, 1)
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    net.run()
    assert not net.events_of(Response)[1:]  # not yet: waiting for the retry delay
    assert net.client.next_deadline() == pytest.approx(net.now + 1.0)
    net.advance(1.0)
    assert [p.progress for p in net.events_of(Progress)] == [1]
    assert any(isinstance(e, Response) and e.request_id == rid for e in net.client_events)
    resumed = b"".join(bytes(b) for b in net.up.values())
    assert b"last-event-id: " in resumed


def test_resumption_gives_up_after_bounded_attempts() -> None:
    app = Deferred()
    net = make(client_versions=["2025-11-25"], server_handler=app,
               client_kwargs={"max_reconnects": 2})
    net.client.connect(now=0)
    net.run()
    rid = net.client.connection.send_request("tools/call", {"name": "x", "arguments": {}},
                                             now=net.now, timeout=None)
    net.run()
    net.refuse_connections = True
    net.drop(net.client._by_id[rid].channel)
    delays = []
    for _ in range(5):
        deadline = net.client.next_deadline()
        if deadline is None:
            break
        delays.append(deadline - net.now)
        net.advance(deadline - net.now)
    assert delays[:2] == [pytest.approx(1.0), pytest.approx(2.0)]
    cancelled = [e for e in net.events_of(RequestCancelled) if e.request_id == rid]
    assert len(cancelled) == 1


def test_requests_wait_for_the_initialized_notification() -> None:
    # Two POSTs may travel on two TCP connections, and a server reading the request first
    # refuses it (the handshake is not complete): the request goes out after the 202.
    net = make(client_versions=["2025-11-25"], client_kwargs={"standalone_stream": False})

    def on_event(event: Any) -> None:
        if isinstance(event, Initialized):
            net.client.connection.send_request("tools/list", now=net.now)

    net.client_handler = on_event
    batches: list[bytes] = []
    original = net.client.data_to_send

    def recording() -> Any:
        out = original()
        batches.append(b"".join(data for _, data in out))
        return out

    net.client.data_to_send = recording  # type: ignore[method-assign]
    net.client.connect(now=0)
    net.run()
    sent = [batch for batch in batches if batch]
    note = next(i for i, batch in enumerate(sent) if b"notifications/initialized" in batch)
    listing = next(i for i, batch in enumerate(sent) if b'"tools/list"' in batch)
    assert listing > note
    assert not net.events_of(ErrorResponse)
    assert [e for e in net.events_of(Response) if "tools" in e.result]


@pytest.mark.parametrize("get_answered", [True, False])
def test_requests_wait_for_the_standalone_stream_a_moment(get_answered: bool) -> None:
    # The standalone GET opens with the handshake's end; what follows waits for its head (a
    # server may otherwise see requests before the stream), but at most a moment.
    net = make(client_versions=["2025-11-25"])
    listed: list[Any] = []

    def on_event(event: Any) -> None:
        if isinstance(event, Initialized):
            listed.append(net.client.connection.send_request("tools/list", now=net.now))

    net.client_handler = on_event
    original = net.client.data_to_send

    def lose_the_get() -> Any:  # the server never sees the GET, so never answers it
        return [(channel, data) for channel, data in original()
                if channel.exchange is None or channel.exchange.kind.value != "standalone"]

    if not get_answered:
        net.client.data_to_send = lose_the_get  # type: ignore[method-assign]
    net.client.connect(now=0)
    net.run()
    answered = [e for e in net.events_of(Response) if e.request_id in listed]
    if get_answered:
        assert answered  # no waiting beyond the GET's head
        assert net.client._standalone is not None and net.client._standalone.status == 200
        return
    assert not answered
    assert net.client.next_deadline() == pytest.approx(net.now + 1.0)
    net.advance(1.0)
    assert [e for e in net.events_of(Response) if e.request_id in listed]


def test_a_refused_connection_ends_the_resumption_at_once() -> None:
    # The server went away: the resuming GET's connection cannot be opened. The request ends
    # then, not after every backoff step (connection_failed vs connection_lost).
    net = make(client_versions=["2025-11-25"], server_handler=Deferred(),
               client_kwargs={"standalone_stream": False})
    net.client.connect(now=0)
    net.run()
    rid = net.client.connection.send_request("tools/call", {"name": "x", "arguments": {}},
                                             now=net.now, timeout=None)
    net.run()
    net.drop(net.client._by_id[rid].channel)
    deadline = net.client.next_deadline()
    assert deadline == pytest.approx(net.now + 1.0)  # the server's retry: 1 s
    net.now = deadline
    net.client.handle_timeout(net.now)
    refused = 0
    for channel, _ in net.client.data_to_send():
        if channel not in net.pairs and not channel.closed:
            channel.connection_failed(now=net.now)
            refused += 1
    assert refused == 1
    net.run()
    failed = [e for e in net.events_of(TransportFailed) if rid in e.request_ids]
    assert failed and "unreachable" in failed[0].detail
    assert [e.request_id for e in net.events_of(RequestCancelled)] == [rid]
    assert net.client.next_deadline() is None  # no further attempt


def test_the_standalone_stream_reconnects_with_last_event_id() -> None:
    net = make(client_versions=["2025-11-25"])
    net.client.connect(now=0)
    net.run()
    standalone = net.client._standalone
    assert standalone is not None and standalone.channel is not None
    net.drop(standalone.channel)
    session = net.server.sessions["s1"]
    session.connection.send_notification("notifications/tools/list_changed")
    session.flush()
    net.run()
    assert not net.events_of(Notification)
    net.advance(1.0)
    assert [n.method for n in net.events_of(Notification)] == [
        "notifications/tools/list_changed"]


def test_standalone_stream_refused_with_405_is_not_retried() -> None:
    net = make(client_versions=["2025-11-25"], enable_get=False)
    net.client.connect(now=0)
    net.run()
    assert net.client._standalone is None and net.client._standalone_refused
    assert net.client.next_deadline() is None


def test_json_mode_and_keep_alive_reuse() -> None:
    net = make(client_versions=["2025-11-25"], response_mode=ResponseMode.JSON,
               client_kwargs={"standalone_stream": False})
    net.client.connect(now=0)
    net.run()
    for _ in range(5):
        net.client.connection.send_request("tools/list", now=net.now)
        net.run()
    assert len(net.events_of(Response)) == 5
    assert net.opened == 1  # one TCP connection, kept alive


def test_connection_limit_queues_exchanges() -> None:
    app = Deferred()
    net = make(client_versions=["2025-11-25"], server_handler=app,
               client_kwargs={"standalone_stream": False, "max_connections": 1})
    net.client.connect(now=0)
    net.run()
    conn = net.client.connection
    a = conn.send_request("tools/call", {"name": "a", "arguments": {}}, now=net.now)
    b = conn.send_request("tools/call", {"name": "b", "arguments": {}}, now=net.now)
    net.run()
    assert len(app.requests) == 1  # b waits for the only connection
    for expected in (1, 2):
        assert len(app.requests) == expected
        session, req = app.requests[-1]
        session.connection.send_response(req.request_id, {"content": [], "isError": False})
        session.flush()
        net.run()
    got = {e.request_id for e in net.events_of(Response)}
    assert {a, b} <= got and net.opened == 1


def test_handshake_cancellation_is_posted() -> None:
    app = Deferred()
    net = make(client_versions=["2025-11-25"], server_handler=app)
    net.client.connect(now=0)
    net.run()
    conn = net.client.connection
    rid = conn.send_request("tools/call", {"name": "x", "arguments": {}}, now=net.now)
    net.run()
    conn.cancel(rid, "no longer needed", now=net.now)
    net.run()
    assert [c.request_id for c in net.server_events_of(CancelRequested)] == [rid]


# -- stateless era ---------------------------------------------------------------------------


def test_dual_client_and_dual_server_settle_in_the_stateless_era() -> None:
    net = make()
    net.client.connect(now=0)
    net.run()
    (init,) = net.events_of(Initialized)
    assert init.protocol_version == "2026-07-28"
    assert net.client.connection.era is Era.STATELESS
    assert net.client.session_id is None and net.client._standalone is None
    rid = net.client.connection.send_request("tools/call", {"name": "echo", "arguments": {}},
                                             now=net.now)
    net.run()
    assert any(isinstance(e, Response) and e.request_id == rid for e in net.client_events)
    sent = b"".join(bytes(b) for b in net.up.values()).decode().lower()
    assert "mcp-method: tools/call" in sent and "mcp-name: echo" in sent
    assert "mcp-session-id" not in sent
    validate_all(net)


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_tasks_methods_carry_mcp_name_in_the_stateless_era(method: str) -> None:
    """2026-07-28: the tasks methods mirror ``params.taskId`` in ``Mcp-Name`` (SEP-2663); a
    request without it is refused by the server with -32020, so it must be sent."""
    net = make()
    net.client.connect(now=0)
    net.run()
    conn = net.client.connection
    conn.strict_capabilities = False
    net.up.clear()
    params: dict[str, Any] = {"taskId": "task-\u00e9 1"}
    if method == "tasks/update":
        params["inputResponses"] = {}
    rid = conn.send_request(method, params, now=net.now)
    net.run()
    sent = b"".join(bytes(b) for b in net.up.values()).decode("latin-1").lower()
    assert f"mcp-method: {method}" in sent
    assert "mcp-name: =?base64?" in sent  # non-ASCII: the header's base64 form
    assert not [e for e in net.events_of(ErrorResponse) if e.request_id == rid]
    assert any(isinstance(e, Response) and e.request_id == rid for e in net.client_events)


def test_dual_client_falls_back_to_initialize_on_a_handshake_server() -> None:
    net = make(server_versions=list(HANDSHAKE_REVISIONS))
    net.client.connect(now=0)
    net.run()
    (init,) = net.events_of(Initialized)
    assert init.protocol_version == "2025-11-25"
    assert net.client.session_id == "s1" and net.client.transport is Transport.STREAMABLE
    assert not net.events_of(TransportFailed)


def test_stateless_only_client_and_handshake_server_close() -> None:
    net = make(client_versions=["2026-07-28"], server_versions=list(HANDSHAKE_REVISIONS))
    net.client.connect(now=0)
    net.run()
    (closed,) = net.events_of(ConnectionClosed)
    assert closed.reason.value == "version_rejected"


def test_era_cache_skips_the_probe() -> None:
    net = make()
    net.client.connect(now=0, era=Era.HANDSHAKE)
    net.run()
    sent = b"".join(bytes(b) for b in net.up.values())
    assert b"server/discover" not in sent
    assert net.events_of(Initialized)[0].protocol_version == "2025-11-25"


def test_stateless_cancel_closes_the_stream() -> None:
    app = Deferred()
    net = make(server_handler=app)
    net.client.connect(now=0)
    net.run()
    conn = net.client.connection
    rid = conn.send_request("tools/call", {"name": "slow", "arguments": {}}, now=net.now)
    net.run()
    conn.cancel(rid, now=net.now)
    net.run()
    assert [c.request_id for c in net.server_events_of(CancelRequested)] == [rid]
    sent = b"".join(bytes(b) for b in net.up.values())
    assert b"notifications/cancelled" not in sent


def test_stateless_timeout_closes_the_stream() -> None:
    app = Deferred()
    net = make(server_handler=app)
    net.client.connect(now=0)
    net.run()
    rid = net.client.connection.send_request("tools/call", {"name": "slow", "arguments": {}},
                                             now=net.now, timeout=5.0)
    net.run()
    net.advance(5.0)
    assert [c.request_id for c in net.server_events_of(CancelRequested)] == [rid]


def test_listen_stream_through_the_client() -> None:
    net = make(server_handler=Deferred())
    net.client.connect(now=0)
    net.run()
    conn = net.client.connection
    lid = conn.listen({"toolsListChanged": True}, now=net.now)
    net.run()
    assert [a.request_id for a in net.events_of(SubscriptionAcknowledged)] == [lid]
    assert net.server.broadcast("notifications/tools/list_changed") == 1
    net.run()
    assert [n.method for n in net.events_of(Notification)] == [
        "notifications/tools/list_changed"]
    conn.cancel(lid, now=net.now)
    net.run()
    assert [c.method for c in net.server_events_of(CancelRequested)] == ["subscriptions/listen"]


def test_stateless_progress_streams_to_the_client() -> None:
    app = Deferred()
    net = make(server_handler=app)
    net.client.connect(now=0)
    net.run()
    rid = net.client.connection.send_request("tools/call", {"name": "x", "arguments": {}},
                                             progress=True, now=net.now)
    net.run()
    session, req = app.requests[-1]
    session.connection.send_progress(req.request_id, 3)
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    net.run()
    assert [p.progress for p in net.events_of(Progress)] == [3]
    assert any(isinstance(e, Response) and e.request_id == rid for e in net.client_events)


def test_unknown_method_comes_back_as_an_error_response() -> None:
    net = make()
    net.client.connect(now=0)
    net.run()
    conn = net.client.connection
    conn.strict_capabilities = False
    rid = conn.send_request("completion/complete", {
        "ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": "b"}},
        now=net.now)
    net.run()
    (error,) = [e for e in net.events_of(ErrorResponse) if e.request_id == rid]
    assert error.code == -32601


def test_x_mcp_header_parameters_are_mirrored_and_bad_tools_dropped() -> None:
    good = {"type": "object", "properties": {"region": {"type": "string",
                                                        "x-mcp-header": "Region"}}}
    bad = {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}
    tools = [{"name": "sql", "inputSchema": good}, {"name": "broken", "inputSchema": bad}]
    table = {"sql": param_headers(good)}

    def app(session: Session, event: Any) -> None:
        if isinstance(event, Request) and event.method == "tools/list":
            session.connection.send_response(event.request_id, {"tools": tools})
        else:
            answer_everything(session, event)

    net = make(server_handler=app, tool_param_headers=table.get)
    net.client.connect(now=0)
    net.run()
    conn = net.client.connection
    lid = conn.send_request("tools/list", now=net.now)
    net.run()
    (listed,) = [e for e in net.events_of(Response) if e.request_id == lid]
    assert [t["name"] for t in listed.result["tools"]] == ["sql"]
    rid = conn.send_request("tools/call", {"name": "sql", "arguments": {"region": "eu wést"}},
                            now=net.now)
    net.run()
    assert any(isinstance(e, Response) and e.request_id == rid for e in net.client_events)
    sent = b"".join(bytes(b) for b in net.up.values()).decode("latin-1").lower()
    assert "mcp-param-region: =?base64?" in sent


# -- legacy HTTP+SSE -------------------------------------------------------------------------


def test_auto_falls_back_to_legacy_http_sse() -> None:
    net = make(client_versions=["2024-11-05"], legacy_sse_path="/sse")
    net.client = HTTPClient(net.client.connection, "http://localhost:8000/sse")
    net.client.connect(now=0)
    net.run()
    assert net.client.transport is Transport.LEGACY
    (init,) = net.events_of(Initialized)
    assert init.protocol_version == "2024-11-05"
    rid = net.client.connection.send_request("tools/list", now=net.now)
    net.run()
    assert any(isinstance(e, Response) and e.request_id == rid for e in net.client_events)
    session = next(iter(net.server.sessions.values()))
    assert session.legacy
    validate_all(net)


def test_dual_client_probes_then_falls_back_to_legacy() -> None:
    net = make(legacy_sse_path="/sse")
    net.client = HTTPClient(net.client.connection, "http://localhost:8000/sse")
    net.client.connect(now=0)
    net.run()
    assert net.client.transport is Transport.LEGACY
    assert net.events_of(Initialized)[0].protocol_version == "2025-11-25"


def test_legacy_stream_closing_ends_the_session() -> None:
    net = make(client_versions=["2024-11-05"], legacy_sse_path="/sse")
    net.client = HTTPClient(net.client.connection, "http://localhost:8000/sse",
                            transport=Transport.LEGACY)
    net.client.connect(now=0)
    net.run()
    assert net.events_of(Initialized)
    get = next(c for c, p in net.pairs.items() if p.stream is not None)
    net.drop(get)
    assert net.events_of(ConnectionClosed)
    assert not net.server.sessions
    assert net.server_events_of(ConnectionClosed)


def test_no_transport_works_closes_the_connection() -> None:
    net = make(client_versions=["2025-11-25"])
    net.client = HTTPClient(net.client.connection, "http://localhost:8000/elsewhere")
    net.client.connect(now=0)
    net.run()
    (closed,) = net.events_of(ConnectionClosed)
    assert closed.reason.value == "initialize_failed"


# -- failures --------------------------------------------------------------------------------


def _scripted(client: HTTPClient, answer: bytes) -> list[Any]:
    """Answer the client's next request with raw bytes; return its events."""
    out = client.data_to_send()
    assert out, "the client sent nothing"
    channel = out[-1][0]
    channel.receive_data(answer, now=0)
    events = []
    while (event := client.next_event()) is not NEED_DATA:
        events.append(event)
    return events


def _ready_stateless_client() -> HTTPClient:
    net = make()
    net.client.connect(now=0)
    net.run()
    assert net.client.connection.era is Era.STATELESS
    return net.client


from mcp_sansio import NEED_DATA  # noqa: E402


def test_an_http_error_without_json_rpc_cancels_the_request() -> None:
    client = _ready_stateless_client()
    rid = client.connection.send_request("tools/list", now=0)
    events = _scripted(client, b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\n"
                               b"content-type: text/plain\r\n\r\noops")
    failed = [e for e in events if isinstance(e, TransportFailed)]
    cancelled = [e for e in events if isinstance(e, RequestCancelled)]
    assert failed and failed[0].status == 500 and failed[0].request_ids == (rid,)
    assert cancelled and cancelled[0].request_id == rid and "500" in (cancelled[0].reason or "")
    # the connection's own cancel notification is not sent anywhere
    assert b"notifications/cancelled" not in b"".join(d for _, d in client.data_to_send())


def test_garbage_from_the_server_fails_the_request() -> None:
    client = _ready_stateless_client()
    rid = client.connection.send_request("tools/list", now=0)
    events = _scripted(client, b"NOT HTTP AT ALL\r\n\r\n")
    assert any(isinstance(e, RequestCancelled) and e.request_id == rid for e in events)


def test_an_oversized_response_is_abandoned() -> None:
    net = make()
    # room for an InitializeResult (about 230 bytes), not for a DiscoverResult
    net.client = HTTPClient(net.client.connection, URL, max_body_size=300)
    net.client.connect(now=0)
    net.run()
    # the probe's answer is too large: it fails, and the connection falls back (the probe is
    # the connection's business: no TransportFailed for it)
    assert not net.events_of(TransportFailed)
    assert net.events_of(Initialized)[0].protocol_version == "2025-11-25"


def test_a_json_body_that_answers_something_else_fails_the_request() -> None:
    client = _ready_stateless_client()
    rid = client.connection.send_request("tools/list", now=0)
    body = b'{"jsonrpc":"2.0","id":999,"result":{}}'
    events = _scripted(client, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                               b"content-length: %d\r\n\r\n" % len(body) + body)
    assert any(isinstance(e, RequestCancelled) and e.request_id == rid for e in events)


def test_a_stale_keep_alive_connection_is_retried_once_on_a_new_one() -> None:
    net = make(client_versions=["2025-11-25"], client_kwargs={"standalone_stream": False})
    net.client.connect(now=0)
    net.run()
    (idle,) = [c for c in net.client._channels if c.exchange is None]
    net.pairs[idle].wire.abort()  # the server dropped it while idle; the client does not know
    rid = net.client.connection.send_request("tools/list", now=net.now)
    net.run()
    idle.receive_data(b"", now=net.now)  # the client only now sees the end of file
    net.run()
    assert any(isinstance(e, Response) and e.request_id == rid for e in net.client_events)
    assert net.opened == 2


def test_byte_by_byte_delivery_gives_the_same_events() -> None:
    app = Deferred()
    net = make(client_versions=["2025-11-25"], server_handler=app)
    net.client.connect(now=0)
    net.run()
    client = net.client
    rid = client.connection.send_request("tools/call", {"name": "x", "arguments": {}},
                                         progress=True, now=net.now)
    net.run()
    session, req = app.requests[-1]
    channel = client._by_id[rid].channel
    peer = net.pairs[channel]
    session.connection.send_progress(req.request_id, 1)
    session.connection.send_response(req.request_id, {"content": [], "isError": False})
    session.flush()
    while net.server.next_event() is not NEED_DATA:
        pass
    data = b"".join(d for c, d in net.server.data_to_send() if c is peer)
    for i in range(len(data)):
        channel.receive_data(data[i:i + 1], now=net.now)
    events = []
    while (event := client.next_event()) is not NEED_DATA:
        events.append(event)
    assert [type(e).__name__ for e in events] == ["Progress", "Response"]


def test_client_refuses_non_http_urls() -> None:
    with pytest.raises(ValueError):
        HTTPClient(ClientConnection(), "ftp://x/")
    client = HTTPClient(ClientConnection(), "https://user@example.com/mcp?a=1")
    assert (client.host, client.port, client.scheme) == ("example.com", 443, "https")


# -- more paths ------------------------------------------------------------------------------


def test_initialize_refused_everywhere_reports_the_servers_refusal() -> None:
    net = make(client_versions=["2025-11-25"], server_versions=["2026-07-28"])
    net.client.connect(now=0)
    net.run()
    (closed,) = net.events_of(ConnectionClosed)
    assert closed.reason.value == "initialize_failed"
    assert "Unsupported protocol version" in closed.detail
    sent = b"".join(bytes(b) for b in net.up.values())
    assert b"GET /mcp" in sent  # the legacy transport was tried in between


def test_a_renewal_that_changes_the_revision_closes_the_connection() -> None:
    made = itertools.count()
    ids = itertools.count(1)

    def factory() -> ServerConnection:
        # the template and the first session speak 2025-11-25; later sessions 2025-06-18
        versions = ["2025-11-25"] if next(made) < 2 else ["2025-06-18"]
        return ServerConnection(info=SERVER_INFO, capabilities=CAPS, versions=versions)

    server = HTTPServer(factory, new_session_id=lambda: f"s{next(ids)}")
    client = HTTPClient(ClientConnection(info=CLIENT_INFO,
                                         versions=["2025-06-18", "2025-11-25"]), URL,
                        standalone_stream=False)
    net = Network(server, client)
    client.connect(now=0)
    net.run()
    assert net.events_of(Initialized)[0].protocol_version == "2025-11-25"
    server.end_session(client.session_id or "")
    net.run()
    rid = client.connection.send_request("tools/list", now=net.now)
    net.run()
    assert any(isinstance(e, RequestCancelled) and e.request_id == rid
               for e in net.client_events)
    assert net.events_of(ConnectionClosed)


def test_close_in_the_stateless_era_sends_no_delete() -> None:
    net = make()
    net.client.connect(now=0)
    net.run()
    net.client.close(now=net.now)
    net.run()
    assert b"DELETE" not in b"".join(bytes(b) for b in net.up.values())
    assert net.events_of(ConnectionClosed)
    net.client.close(now=net.now)  # twice: nothing more


def test_an_sse_event_over_the_limit_fails_the_request() -> None:
    app = Deferred()
    net = make(client_versions=["2025-11-25"], server_handler=app,
               client_kwargs={"max_body_size": 1000})
    net.client.connect(now=0)
    net.run()
    rid = net.client.connection.send_request("tools/call", {"name": "x", "arguments": {}},
                                             now=net.now)
    net.run()
    session, req = app.requests[-1]
    session.connection.send_notification("notifications/message",
                                         {"level": "info", "data": "x" * 5000},
                                         related_request_id=req.request_id)
    session.flush()
    net.run()
    assert any(isinstance(e, RequestCancelled) and e.request_id == rid
               for e in net.client_events)


def test_a_legacy_endpoint_on_another_origin_is_refused() -> None:
    client = HTTPClient(ClientConnection(info=CLIENT_INFO, versions=["2024-11-05"]),
                        "http://localhost:8000/sse", transport=Transport.LEGACY)
    client.connect(now=0)
    (channel, data), = client.data_to_send()
    assert data.startswith(b"GET /sse HTTP/1.1")
    stream = b"event: endpoint\ndata: http://evil.example/messages\n\n"
    channel.receive_data(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n%x\r\n" % len(stream)
                         + stream + b"\r\n", now=0)
    events = []
    while (event := client.next_event()) is not NEED_DATA:
        events.append(event)
    assert any(isinstance(e, ConnectionClosed) for e in events)
    assert not any(b"evil" in d for _, d in client.data_to_send())


def test_the_standalone_stream_404_renews_the_session() -> None:
    net = make(client_versions=["2025-11-25"])
    net.client.connect(now=0)
    net.run()
    standalone = net.client._standalone
    net.server.end_session("s1")  # ends the GET stream too
    net.run()
    net.advance(1.0)  # the client reconnects the GET: 404 -> a new session
    assert net.client.session_id == "s2"
    assert net.events_of(SessionRenewed)
    assert net.client._standalone is not None and net.client._standalone is not standalone


def test_a_notification_answered_404_renews_the_session() -> None:
    net = make(client_versions=["2025-11-25"])
    net.client.connect(now=0)
    net.run()
    net.client.session_id = "forged"  # not a session the server knows; renewal re-inits
    net.client.connection.send_notification("notifications/cancelled", {"requestId": 99})
    net.run()
    assert net.events_of(SessionRenewed)
