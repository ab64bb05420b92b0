"""The trio HTTP adapters: trio's sockets + :class:`mcp_sansio.http.HTTPServer` (and
:class:`mcp_sansio.http.HTTPClient`).

The server
----------
One task per accepted TCP connection reads from the socket straight into the connection's
:class:`~mcp_sansio.http.ServerChannel` of the one shared
:class:`~mcp_sansio.http.HTTPServer`, then wakes the *pump*: one task for the whole server
that drains :meth:`~mcp_sansio.http.HTTPServer.next_event`, hands every ``(session,
event)`` pair to the session logic of that HTTP session (the same
:class:`~mcp_sansio.adapters._session.Server` routing as on stdio), queues
:meth:`~mcp_sansio.http.HTTPServer.data_to_send` for the sockets' writer tasks, and waits
for the next wake-up inside a cancel scope whose deadline is
:meth:`~mcp_sansio.http.HTTPServer.next_deadline` (the one timer). A request handler runs in
a task of its own, in a cancel scope that a cancellation (``notifications/cancelled``, or a
stateless-era stream the client closed) cancels.

trio cannot step a coroutine outside its task (its first step would run in the pump's task
and park *that* task), so a handler always gets a task; the pump lets the handlers it just
started take their first step before it goes on draining. A handler that answers (or
refuses) before it first suspends is therefore answered while the HTTP server still
processes the request -- a plain JSON response, a stateless-era refusal as HTTP 400 --
exactly as on asyncio, where the handler is stepped inline.

Buffers are bounded: requests by the HTTP server's ``max_body_size`` and
``max_header_size``; output by a per-socket queue: a socket with more than
:data:`_HIGH_WATER` bytes unsent stops being read from (a client that does not read is not
served more), and one whose unsent output passes ``max_write_buffer`` is dropped.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import secrets
import sys
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from typing import Any

import trio

from mcp_sansio import NEED_DATA, ConnectionClosed, Event, RequestId, ServerConnection
from mcp_sansio.http import HTTPServer, ServerChannel, Session

from ._api import AsyncContext
from ._session import Server
from .trio import ServerSession, _one_error

__all__ = [
    "DEFAULT_MAX_WRITE_BUFFER",
    "HTTPService",
    "run_http",
    "serve_http",
    "start_http",
]

log = logging.getLogger("mcp_sansio.adapters.http")

#: Unsent output (bytes) a socket may hold before its connection is dropped: 16 MiB, as on
#: asyncio -- far above any one answer, small enough that a stuck client cannot hold much.
DEFAULT_MAX_WRITE_BUFFER = 16 * 1024 * 1024
#: Unsent output above which a socket is not read from until it drains: 256 KiB (asyncio's
#: write-buffer high-water mark in the asyncio adapter).
_HIGH_WATER = 256 * 1024
#: Bytes asked of the socket per read.
_CHUNK = 1 << 16

#: Notifications about the server as a whole: every session and listen stream hears them.
_SERVER_WIDE = frozenset({"notifications/tools/list_changed", "notifications/prompts/list_changed",
                          "notifications/resources/list_changed"})


class _HTTPContext(AsyncContext):
    """A handler's context over HTTP: a list change is the server's, not one session's, so
    it is broadcast (every operating session, every listen stream that asked for it)."""

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        session = self.session
        if method in _SERVER_WIDE and isinstance(session, _HTTPSession):
            session._service.http.broadcast(method, params)
            session._service._wake()
            return
        super().notify(method, params)


class _HTTPSession(ServerSession):
    """The session logic of one HTTP session (a handshake-era session, or one stateless-era
    request). The HTTP server drains its connection; what handlers send is routed by
    flushing the HTTP session and waking the server's pump."""

    context_class = _HTTPContext

    def __init__(self, conn: ServerConnection, server: Server, service: HTTPService,
                 http_session: Session) -> None:
        super().__init__(conn, server)
        self._service = service
        self._http_session = weakref.ref(http_session)
        self._nursery = service._nursery

    def service(self) -> None:
        http_session = self._http_session()
        if http_session is not None:
            http_session.flush()
        self._service._wake()

    def _arm(self, deadline: float | None) -> None:
        """The HTTP server owns every timer (next_deadline covers the connections')."""

    def _start_task(self, key: RequestId | None, coro: Coroutine[Any, Any, None]) -> None:
        nursery = self._nursery
        assert nursery is not None
        service = self._service
        scope = trio.CancelScope()
        if key is not None:
            self._scopes[key] = scope
            service._unstarted += 1  # the pump waits for its first step (module docstring)

        async def run() -> None:
            if key is not None:
                service._unstarted -= 1
            try:
                with scope:
                    await coro
            finally:
                if key is not None and self._scopes.get(key) is scope:
                    del self._scopes[key]

        try:
            nursery.start_soon(run)
        except RuntimeError:  # the service is closing: the handler never runs
            if key is not None:
                service._unstarted -= 1
                self._scopes.pop(key, None)
            coro.close()


class _Socket:
    """One accepted TCP connection: its :class:`~mcp_sansio.http.ServerChannel` and the
    output queued for it."""

    __slots__ = ("channel", "closing", "drained", "gone", "out", "queued", "ready", "scope",
                 "stream")

    def __init__(self, stream: trio.SocketStream, channel: ServerChannel) -> None:
        self.stream = stream
        self.channel = channel
        self.out = bytearray()
        #: Bytes accepted for the socket and not yet sent (queued and in flight).
        self.queued = 0
        #: The channel is over: close after writing what is queued.
        self.closing = False
        #: Nothing more is written (the socket broke, or it is being dropped).
        self.gone = False
        self.ready = trio.lowlevel.ParkingLot()  # the writer waits for output here
        self.drained = trio.lowlevel.ParkingLot()  # the reader waits for room here
        self.scope = trio.CancelScope()

    def write(self, data: bytes, close: bool) -> None:
        if data:
            self.out += data
            self.queued += len(data)
        if close:
            self.closing = True
        self.ready.unpark_all()

    def drop(self) -> None:
        self.gone = True
        self.scope.cancel()


class HTTPService:
    """A running HTTP server on trio (made by :func:`start_http`)."""

    def __init__(self, server: Server, http: HTTPServer, *, max_write_buffer: int) -> None:
        self.server = server
        #: The sans-IO HTTP server.
        self.http = http
        self.max_write_buffer = max_write_buffer
        self._sessions: weakref.WeakKeyDictionary[Session, _HTTPSession] = (
            weakref.WeakKeyDictionary())
        self._sockets: dict[ServerChannel, _Socket] = {}
        self._nursery: trio.Nursery | None = None
        self._wakeup = trio.lowlevel.ParkingLot()
        self._work = False
        self._deadline = math.inf
        self._unstarted = 0  # handler tasks started by the pump that have not run yet
        self._closed = trio.Event()
        #: ``(host, port)`` the server listens on.
        self.address: tuple[str, int] = ("", 0)

    @property
    def port(self) -> int:
        return self.address[1]

    @property
    def url(self) -> str:
        host = self.address[0]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}{self.http.path}"

    # -- the pump --------------------------------------------------------------------------

    def _wake(self) -> None:
        """Something for the pump: bytes fed to a channel, a handler's output, a socket
        lost."""
        self._work = True
        self._wakeup.unpark_all()

    async def _pump(self) -> None:
        http = self.http
        while True:
            if not self._work:
                with trio.CancelScope(deadline=self._deadline):
                    await self._wakeup.park()
            now = trio.current_time()
            if now >= self._deadline:
                http.handle_timeout(now)
            await self._drain()
            deadline = http.next_deadline()
            self._deadline = math.inf if deadline is None else deadline

    async def _drain(self) -> None:
        http = self.http
        while True:
            self._work = False
            while (item := http.next_event()) is not NEED_DATA:
                session, event = item
                self._dispatch(session, event)
                while self._unstarted:
                    # Let the handlers just started take their first step before the
                    # HTTP server finishes processing their request (module docstring).
                    await trio.sleep(0)
            for channel, data in http.data_to_send():
                self._write(channel, data)
            if not self._work:
                return

    def _dispatch(self, session: Session, event: Event) -> None:
        logic = self._sessions.get(session)
        if logic is None:
            logic = _HTTPSession(session.connection, self.server, self, session)
            self._sessions[session] = logic
        logic._dispatch(event)
        if isinstance(event, ConnectionClosed):
            self._sessions.pop(session, None)
            logic._stop_tasks()

    def _write(self, channel: ServerChannel, data: bytes) -> None:
        sock = self._sockets.get(channel)
        if sock is None or sock.gone:
            if not channel.closed:
                channel.connection_lost(now=trio.current_time())
                self._work = True
            return
        sock.write(data, channel.closed)
        if not channel.closed and sock.queued > self.max_write_buffer:
            log.info("dropping an HTTP connection: %d bytes unread by its client", sock.queued)
            sock.drop()  # its task reports the loss to the channel

    # -- connections -----------------------------------------------------------------------

    async def _serve_connection(self, stream: trio.SocketStream) -> None:
        channel = self.http.new_channel(now=trio.current_time())
        sock = _Socket(stream, channel)
        self._sockets[channel] = sock
        try:
            with sock.scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._send_loop, sock)
                    await self._receive_loop(sock)
        finally:
            sock.gone = True
            self._sockets.pop(channel, None)
            if not channel.closed:
                channel.connection_lost(now=trio.current_time())
                self._wake()

    async def _receive_loop(self, sock: _Socket) -> None:
        channel, stream = sock.channel, sock.stream
        while True:
            while sock.queued > _HIGH_WATER and not sock.gone:
                await sock.drained.park()  # backpressure: its client is not reading
            try:
                data = await stream.receive_some(_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                log.debug("HTTP connection lost: %r", exc)
                sock.drop()
                return
            if channel.closed:
                return  # over: the sender closes the socket once its output is written
            channel.receive_data(bytes(data), now=trio.current_time())
            self._wake()
            if not data:
                return  # end of file: the channel reports it closed through the pump

    async def _send_loop(self, sock: _Socket) -> None:
        stream = sock.stream
        try:
            while True:
                while not sock.out:
                    if sock.closing or sock.gone:
                        return
                    await sock.ready.park()
                data, sock.out = sock.out, bytearray()
                await stream.send_all(data)
                sock.queued -= len(data)
                sock.drained.unpark_all()
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            log.debug("HTTP connection lost while writing: %r", exc)
        finally:
            sock.drop()  # the connection is over: stop reading too

    # -- lifetime ----------------------------------------------------------------------------

    async def _run(self, listeners: list[trio.SocketListener], *,
                   task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._pump)
                nursery.start_soon(functools.partial(
                    trio.serve_listeners, self._serve_connection, listeners,
                    handler_nursery=nursery))
                task_status.started()
        finally:
            self._sessions.clear()
            self._closed.set()  # first: the cleanup below may be cancelled from outside
            with trio.CancelScope(shield=True):
                for listener in listeners:
                    await trio.aclose_forcefully(listener)

    async def serve_forever(self) -> None:
        """Wait until :meth:`aclose` (cancel the waiting task's scope to stop, too)."""
        await self._closed.wait()

    async def aclose(self) -> None:
        """Stop listening, drop every connection and cancel every running handler."""
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()
        await self._closed.wait()


@contextlib.asynccontextmanager
async def start_http(
    server: Server, host: str = "127.0.0.1", port: int = 0, *,
    request_state_key: bytes | None = None,
    connection_options: Mapping[str, Any] | None = None,
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER,
    new_session_id: Callable[[], str] | None = None,
    **http_options: Any,
) -> AsyncIterator[HTTPService]:
    """Serve ``server`` over Streamable HTTP (both eras) on ``host``:``port`` (0: any free
    port, see :attr:`HTTPService.port`) while the block runs.

    ``http_options`` go to :class:`~mcp_sansio.http.HTTPServer` (``path``,
    ``response_mode``, ``allowed_hosts``, ``legacy_sse_path``, limits, ...);
    ``connection_options`` to each session's :class:`~mcp_sansio.ServerConnection`.
    Session ids come from :mod:`secrets`; ``request_state_key`` seals stateless-era
    ``requestState`` (random by default: valid for this process only). Leaving the block
    closes every connection and cancels every handler."""
    key = request_state_key or secrets.token_bytes(32)
    options = dict(connection_options or {})

    def connection() -> ServerConnection:
        return server.connection(request_state_key=key, **options)

    http = HTTPServer(connection,
                      new_session_id=new_session_id or (lambda: secrets.token_urlsafe(32)),
                      **http_options)
    service = HTTPService(server, http, max_write_buffer=max_write_buffer)
    listeners = await trio.open_tcp_listeners(port, host=host)
    sockname = listeners[0].socket.getsockname()
    service.address = (sockname[0], sockname[1])
    async with _one_error(), trio.open_nursery() as nursery:
        await nursery.start(service._run, listeners)
        try:
            yield service
        finally:
            with trio.CancelScope(shield=True):
                await service.aclose()


async def serve_http(
    server: Server, host: str = "127.0.0.1", port: int = 0, *,
    task_status: trio.TaskStatus[HTTPService] = trio.TASK_STATUS_IGNORED,
    on_ready: Callable[[HTTPService], Any] | None = None, **options: Any,
) -> None:
    """Serve ``server`` over HTTP until cancelled (options as for :func:`start_http`). Use
    it with ``await nursery.start(serve_http, server, host, port)`` to get the
    :class:`HTTPService` once the socket listens; ``on_ready`` is called then, too."""
    async with start_http(server, host, port, **options) as service:
        task_status.started(service)
        if on_ready is not None:
            on_ready(service)
        await service.serve_forever()


def run_http(server: Server, host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
    """``trio.run(serve_http, ...)``, printing the server's URL on stdout once it listens;
    returns on Ctrl-C."""

    def ready(service: HTTPService) -> None:
        sys.stdout.write(f"{service.url}\n")
        sys.stdout.flush()

    with contextlib.suppress(KeyboardInterrupt):
        trio.run(functools.partial(serve_http, server, host, port, on_ready=ready, **options))
