"""The legacy HTTP+SSE transport (2024-11-05) on the server side: the endpoint event, the POST
endpoint's status codes, and one stream carrying everything."""

from __future__ import annotations

from mcp_sansio import ConnectionClosed, Initialized
from tests.http_util import Harness, init_body, validate_messages


def open_legacy(h: Harness) -> tuple[object, str]:
    conn = h.conn()
    stream = conn.send("GET", target="/sse")
    assert stream.status == 200 and stream.is_sse
    endpoint = stream.events[0]
    assert endpoint.event == "endpoint"
    return stream, endpoint.data.decode()


def test_endpoint_event_then_every_message_on_the_stream() -> None:
    h = Harness(legacy_sse_path="/sse")
    stream, endpoint = open_legacy(h)
    assert endpoint == "/messages?session_id=session-1"
    r = h.conn().send(body=init_body("2024-11-05"), target=endpoint)
    assert r.status == 202 and r.body == b""
    assert h.conn().send(body={"jsonrpc": "2.0", "method": "notifications/initialized"},
                         target=endpoint).status == 202
    assert h.conn().send(body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                         target=endpoint).status == 202
    messages = stream.messages  # type: ignore[attr-defined]
    assert [m["id"] for m in messages] == [0, 1]
    validate_messages("2024-11-05", messages, {0: "initialize", 1: "tools/list"})
    assert any(isinstance(e, Initialized) for _, e in h.events)
    assert all(e.id is None for e in stream.events)  # type: ignore[attr-defined]


def test_legacy_post_status_codes() -> None:
    h = Harness(legacy_sse_path="/sse")
    _, endpoint = open_legacy(h)
    assert h.conn().send(body=init_body(), target="/messages").status == 400
    assert h.conn().send(body=init_body(), target="/messages?session_id=nope").status == 404
    assert h.conn().send(body=init_body(), target=endpoint,
                         headers=[("content-type", "text/plain")]).status == 415
    assert h.conn().send(raw=b"{", target=endpoint).status == 400
    assert h.conn().send("GET", target="/messages").status == 405
    assert h.conn().send(body=init_body(), target="/sse").status == 405
    assert h.conn().send("GET", target="/sse", defaults=False, headers=[
        ("host", "localhost"), ("accept", "application/json")]).status == 406


def test_legacy_sessions_are_not_streamable_sessions() -> None:
    h = Harness(legacy_sse_path="/sse")
    open_legacy(h)
    r = h.conn().send(body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                      headers=[("mcp-session-id", "session-1")])
    assert r.status == 404


def test_closing_the_stream_ends_the_session() -> None:
    h = Harness(legacy_sse_path="/sse")
    conn = h.conn()
    conn.send("GET", target="/sse")
    conn.close()
    assert not h.server.sessions
    closed = [(s, e) for s, e in h.events if isinstance(e, ConnectionClosed)]
    assert len(closed) == 1 and closed[0][0].ended.value == "disconnected"
    r = h.conn().send(body=init_body(), target="/messages?session_id=session-1")
    assert r.status == 404


def test_legacy_host_and_origin_checks() -> None:
    h = Harness(legacy_sse_path="/sse")
    r = h.conn().send("GET", target="/sse", headers=[("origin", "http://evil.example")])
    assert r.status == 403


def test_session_cap_covers_legacy_sessions() -> None:
    h = Harness(legacy_sse_path="/sse", max_sessions=1)
    open_legacy(h)
    assert h.conn().send("GET", target="/sse").status == 503
