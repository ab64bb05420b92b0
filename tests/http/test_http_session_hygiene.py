"""Session hygiene of the HTTP server: session ids come from :mod:`secrets` with at least
128 bits in every runtime's ``start_http``; no session id reaches a server-side log record
(beyond the short prefix a :class:`~mcp_sansio.http.Session`'s repr shows), on any runtime,
even when a handler fails or a connection's handling raises; an event id of one session's
stream never replays, reveals or takes over another session's stream (``Last-Event-ID`` on a
GET or HEAD of session B naming a stream of session A); the idle expiry and the session cap
hold at their documented defaults."""

from __future__ import annotations

import base64
import contextlib
import logging
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from mcp_sansio.adapters import threading as threading_adapter

from mcp_sansio.app.server import Server
from mcp_sansio.http import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    ServerChannel,
    SessionEnd,
    _sessions,
)
from mcp_sansio.http._sessions import SessionTable
from tests.http_stories import (
    SyncConn,
    asyncio_service,
    no_leaked_threads,  # noqa: F401 - a fixture
    trio_service,
)
from tests.http_util import Harness, init_body

RUNTIMES = ["asyncio", "trio", "threading"]


def hygiene_server() -> Server:
    server = Server("http-hygiene")

    @server.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def explode() -> str:
        raise RuntimeError("a handler bug")

    return server


@contextlib.contextmanager
def serving(runtime: str) -> Iterator[int]:
    """The hygiene server over HTTP on ``runtime`` while the block runs: its port."""
    server = hygiene_server()
    if runtime == "threading":
        with threading_adapter.start_http(server) as service:
            yield service.port
        return
    with (asyncio_service if runtime == "asyncio" else trio_service)(server) as url:
        yield int(url.rsplit(":", 1)[1].split("/")[0])


# -- session ids -------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_leaked_threads")
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_session_ids_come_from_secrets_with_at_least_128_bits(
        runtime: str, monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[tuple[int | None, str]] = []
    original = secrets.token_urlsafe

    def spy(nbytes: int | None = None) -> str:
        token = original(nbytes)
        drawn.append((nbytes, token))
        return token

    monkeypatch.setattr(secrets, "token_urlsafe", spy)
    with serving(runtime) as port:
        ids = []
        for _ in range(3):
            conn = SyncConn(port)
            status, headers, _ = conn.request("POST", init_body())
            conn.close()
            assert status == 200
            ids.append(headers["mcp-session-id"])
    assert len(set(ids)) == 3
    tokens = {token: nbytes for nbytes, token in drawn}
    for session_id in ids:
        assert session_id in tokens  # drawn from secrets, as drawn
        assert (tokens[session_id] or 32) * 8 >= 128
        raw = base64.urlsafe_b64decode(session_id + "=" * (-len(session_id) % 4))
        assert len(raw) * 8 >= 128
        assert all(0x21 <= ord(c) <= 0x7E for c in session_id)  # visible ASCII (the spec)


def test_a_session_repr_shows_a_short_prefix_of_its_id_only() -> None:
    h = Harness(new_session_id=lambda: "s" + secrets.token_urlsafe(32))
    session_id = h.initialize()
    text = repr(h.server.sessions[session_id])
    assert session_id not in text and session_id[:8] in text


# -- no session id in the logs -----------------------------------------------------------------


@pytest.mark.usefixtures("no_leaked_threads")
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_no_session_id_is_logged(runtime: str, monkeypatch: pytest.MonkeyPatch,
                                 caplog: pytest.LogCaptureFixture) -> None:
    original = SessionTable._delete

    def boom(self: SessionTable, channel: ServerChannel, request: Any) -> None:
        raise RuntimeError("an unexpected failure")

    caplog.set_level(logging.DEBUG)
    with serving(runtime) as port:
        conn = SyncConn(port)
        status, headers, _ = conn.request("POST", init_body())
        session_id = headers["mcp-session-id"]
        names = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
        assert conn.request("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                            names)[0] == 202
        for request_id, name in enumerate(["add", "explode", "missing"], 1):
            arguments = {"a": 1, "b": 2} if name == "add" else {}
            status, _, messages = conn.request("POST", {
                "jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}, names)
            assert status == 200 and messages[-1]["id"] == request_id
        # a session named by a client that does not own it, and one handled with a bug
        assert conn.request("POST", {"jsonrpc": "2.0", "id": 9, "method": "ping"},
                            {**names, "mcp-session-id": session_id + "x"})[0] == 404
        if str(_sessions.__file__).endswith(".py"):  # a compiled class takes no patched method
            monkeypatch.setattr(SessionTable, "_delete", boom)
            other = SyncConn(port)
            other.send("DELETE", None, names)
            assert other.head()[0] == 500
            other.close()
            monkeypatch.setattr(SessionTable, "_delete", original)
        assert conn.request("DELETE", None, names)[0] == 200
        conn.close()
    assert any(r.exc_info for r in caplog.records)  # the failures were logged
    for record in caplog.records:
        assert session_id not in record.getMessage(), record
    assert session_id not in caplog.text  # messages and tracebacks as formatted


# -- an event id is its own session's --------------------------------------------------------


def test_an_event_id_of_another_session_replays_nothing_and_takes_nothing_over() -> None:
    # 2025-11-25 basic/transports.mdx, "Resumability and Redelivery": the server replays
    # the messages of the stream the id belongs to -- of the session that asks.
    h = Harness()
    a, b = h.initialize(), h.initialize()
    a_conn = h.conn()
    a_get = a_conn.send("GET", headers=h.session_headers(a))
    session_a = h.server.sessions[a]
    for n in range(3):
        session_a.connection.send_notification("notifications/message",
                                               {"level": "info", "data": f"for-a-{n}"})
    session_a.flush()
    h.run()
    a_ids = [e.id for e in a_get.events if e.id]
    assert len(a_ids) == 4  # the priming event and three messages
    for event_id in a_ids:
        for method in ("GET", "HEAD"):
            conn = h.conn()
            r = conn.send(method, headers=[*h.session_headers(b), ("last-event-id", event_id),
                                           *([("accept", "text/event-stream")]
                                             if method == "HEAD" else [])])
            assert r.status == 400, (method, event_id)
            assert b"for-a" not in conn.raw and not r.events
    # A's stream was neither replayed elsewhere nor taken over: it is still A's, live
    assert not a_get.done and not a_conn.closed and session_a.open_streams == 1
    session_a.connection.send_notification("notifications/message",
                                           {"level": "info", "data": "still-a"})
    session_a.flush()
    h.run()
    assert a_get.messages[-1]["params"]["data"] == "still-a"
    # and A itself resumes with its own id
    again = h.conn().send("GET", headers=[*h.session_headers(a), ("last-event-id", a_ids[1])])
    assert again.status == 200
    assert [m["params"]["data"] for m in again.messages] == ["for-a-1", "for-a-2", "still-a"]


# -- expiry and the cap, at their defaults -----------------------------------------------------


def test_an_idle_session_expires_after_the_default_timeout() -> None:
    assert DEFAULT_SESSION_IDLE_TIMEOUT == 3600.0
    h = Harness()
    session_id = h.initialize()
    session = h.server.sessions[session_id]
    h.advance(DEFAULT_SESSION_IDLE_TIMEOUT - 1)
    assert session.ended is None
    h.advance(2)
    assert session.ended is SessionEnd.EXPIRED
    r = h.conn().send(body={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                      headers=h.session_headers(session_id))
    assert r.status == 404


def test_the_default_session_cap_answers_503_beyond_it() -> None:
    assert DEFAULT_MAX_SESSIONS == 10_000
    h = Harness(validate=False)
    assert h.server.max_sessions == DEFAULT_MAX_SESSIONS
    h.server.max_sessions = 3  # the same check, at a size a test can reach
    for _ in range(3):
        h.initialize()
    assert h.conn().send(body=init_body()).status == 503
