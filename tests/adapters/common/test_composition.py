"""What a session holds instead of inheriting (issue 13): its runtime object, a stdio
client's child process, the HTTP link of either role -- and the public session classes being
the colour classes themselves."""

from __future__ import annotations

import sys
import time
from typing import Any

from mcp_sansio.adapters import asyncio as aio
from mcp_sansio.adapters import threading as threads
from mcp_sansio.adapters import trio as trio_adapter
from mcp_sansio.adapters.common.async_session import AsyncClient, AsyncServerSession
from mcp_sansio.adapters.threading.runtime import ThreadChild, ThreadRuntime
from mcp_sansio.adapters.threading.session import SyncClient, SyncServerSession

from mcp_sansio import Era
from mcp_sansio.app.http_client import HTTPTransportError, attach_http
from mcp_sansio.app.http_service import HTTPLink, broadcast_server_wide
from mcp_sansio.app.server import Server
from mcp_sansio.app.session import ClientLogic, Session
from mcp_sansio.http import SessionRenewed, TransportFailed

EXAMPLE_SERVER = [sys.executable, "-P", "-m", "mcp_sansio", "serve-example"]


def test_the_public_session_classes_are_the_colour_classes() -> None:
    assert aio.Client is AsyncClient and trio_adapter.Client is AsyncClient
    assert threads.Client is SyncClient
    assert aio.ServerSession is AsyncServerSession
    assert trio_adapter.ServerSession is AsyncServerSession
    assert threads.ServerSession is SyncServerSession


def test_a_session_without_a_runtime_object_has_no_wall_clock() -> None:
    class Bare(Session):
        def _now(self) -> float:
            return 5.0

    session = Bare(Server("bare").connection())
    assert session._now() == 5.0
    assert session._wall_now() is None  # the stand-in runtime: one host's clock only
    assert session.link is None


def test_the_thread_runtime_arms_lazily_and_makes_no_pipe_before_it_pumps() -> None:
    session = SyncServerSession(Server("lazy").connection(), Server("lazy"), max_workers=1)
    runtime = session.runtime
    assert isinstance(runtime, ThreadRuntime) and session.lock is runtime.lock
    runtime.arm(10.0)
    runtime.arm(20.0)  # later: the earlier deadline stays
    assert runtime.deadline == 10.0
    runtime.arm(None)
    assert runtime.deadline == 10.0
    runtime.arm(5.0)
    assert runtime.deadline == 5.0
    assert runtime._wake_w is None  # no reader: no descriptor was made for it
    runtime.stop_workers()


def test_the_threads_client_holds_its_server_process_and_stops_it() -> None:
    with threads.connect_stdio(EXAMPLE_SERVER) as client:
        child = client.child
        assert isinstance(child, ThreadChild) and client._process is child.process
        assert client.runtime.reader is not None and client.runtime.reader.is_alive()
        assert client.returncode is None
    assert child.returncode is not None and client.returncode == child.returncode
    assert client.closed is not None
    assert client.runtime.reader is not None
    deadline = time.monotonic() + 30
    while client.runtime.reader.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not client.runtime.reader.is_alive()


class _Service:
    def __init__(self) -> None:
        self.kicked = 0
        self.broadcasts: list[tuple[str, Any]] = []

    def _kick(self) -> None:
        self.kicked += 1

    def _broadcast(self, method: str, params: Any) -> None:
        self.broadcasts.append((method, params))


class _HTTPSession:
    auth = "someone"

    def __init__(self) -> None:
        self.flushed = 0

    def flush(self) -> None:
        self.flushed += 1


def test_an_http_link_takes_the_pump_and_the_server_wide_notifications() -> None:
    server = Server("linked")
    session = SyncServerSession(server.connection(), server, max_workers=1)
    service, http_session = _Service(), _HTTPSession()
    assert not broadcast_server_wide(session, "notifications/tools/list_changed", None)
    session.link = HTTPLink(service, http_session)  # type: ignore[arg-type]
    session.service()  # handed over: the HTTP session is flushed, the service kicked
    assert (http_session.flushed, service.kicked) == (1, 1)
    assert session.link.auth == "someone"
    assert broadcast_server_wide(session, "notifications/tools/list_changed", None)
    assert not broadcast_server_wide(session, "notifications/message", {"level": "info"})
    assert service.broadcasts == [("notifications/tools/list_changed", None)]
    session.runtime.stop_workers()


class _VirtualClient(ClientLogic):
    """A client on a virtual clock that records what it arms (no runtime, no sockets)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.clock = 0.0
        self.armed: list[float | None] = []

    def _now(self) -> float:
        return self.clock

    def _arm(self, deadline: float | None) -> None:
        self.armed.append(deadline)


def test_a_client_without_a_link_tells_neutral_http_facts() -> None:
    client = _VirtualClient._create()
    assert client.link is None
    assert (client.http, client.transport, client.session_id, client.on_transport_event,
            client.auth) == (None, None, None, None, None)
    assert (client.session_renewals, client.connections_opened) == (0, 0)


def test_an_http_client_link_takes_the_client_pump_timer_events_and_connect_failure() -> None:
    client = _VirtualClient._create()
    link, own = attach_http(client, "http://127.0.0.1:9/mcp",
                            http_options={"connect_timeout": 3.0, "ssl_context": None})
    assert own == {"connect_timeout": 3.0}  # the runtime's; None: its default TLS context
    assert client.link is link and client.http is link.http
    sent: list[tuple[Any, bytes]] = []
    link.send = lambda channel, data: sent.append((channel, data))
    client._start_connect(Era.STATELESS)
    (channel, data), = sent  # the pump drained the HTTP client, not the connection
    assert data.startswith(b"POST /mcp HTTP/1.1\r\n")
    assert client.armed and client.armed[-1] is not None  # the probe's deadline, via the link
    link.connections_opened += 1  # what a socket object does when it opens the channel
    assert client.connections_opened == 1
    link.channel_failed(channel, ConnectionRefusedError("refused"))
    assert client.closed is not None
    try:
        client._connect_outcome()
    except HTTPTransportError as exc:  # the HTTP failure, not the made-up JSON-RPC error
        assert isinstance(exc.cause, ConnectionRefusedError) and exc.url == link.http.url
    else:  # pragma: no cover - the assertion this test exists for
        raise AssertionError("the failed connect raised nothing")
    told: list[Any] = []
    client.on_transport_event = told.append
    renewed = SessionRenewed(previous_session_id="old-session", session_id="new-session")
    failed = TransportFailed(status=502, detail="bad gateway")
    client._dispatch(renewed)  # the client's dispatch hands the HTTP client's own to the link
    client._dispatch(failed)
    assert told == [renewed, failed] and client.session_renewals == 1
    client.clock = 1000.0
    before = len(client.armed)
    client.on_timer()  # through the link: the HTTP client's timeouts, then its pump
    assert len(client.armed) == before + 1
