"""The trio HTTP adapters: trio's sockets + :class:`mcp_sansio.http.HTTPServer` and
:class:`mcp_sansio.http.HTTPClient`.

The server
----------
One :class:`~mcp_sansio.http.HTTPServer` serves every connection. Each accepted TCP
connection has a reader task and a sender task. The reader feeds what it reads to the
connection's :class:`~mcp_sansio.http.ServerChannel` and then *drains*, in its own task: it
takes :meth:`~mcp_sansio.http.HTTPServer.next_event` until there is nothing left, hands
every ``(session, event)`` pair to the session logic of that HTTP session (the same
:class:`~mcp_sansio.app.server.Server` routing as on stdio) and writes
:meth:`~mcp_sansio.http.HTTPServer.data_to_send` -- straight to a socket that has room,
else to its sender task's queue. One drain runs at a time: a task that wants one while
another is under way marks the work (the running drain goes round once more) and, if it is
a reader, waits until it is done, so a reader reads on only once what it read is dispatched.
What a handler sends later is drained at once in the handler's task. The *pump* task is
left with the one timer: it waits in a cancel scope whose deadline is
:meth:`~mcp_sansio.http.HTTPServer.next_deadline`, and takes over a drain that could not
wait (below). A request handler runs in a task of its own, in a cancel scope that a
cancellation (``notifications/cancelled``, or a stateless-era stream the client closed)
cancels.

trio cannot step a coroutine outside its task (its first step would run in the draining
task and park *that* task), so a handler always gets a task; a drain lets the handlers it
just started take their first step before it goes on. A handler that answers (or refuses)
before it first suspends is therefore answered while the HTTP server still processes the
request -- a plain JSON response, a stateless-era refusal as HTTP 400 -- exactly as on
asyncio, where the handler is stepped inline. (A drain run from synchronous code, which
cannot wait, hands over to the pump task when it starts a handler.)

Buffers are bounded: requests by the HTTP server's ``max_body_size`` and
``max_header_size``; output by a per-socket queue: a socket with more than
:data:`_HIGH_WATER` bytes unsent stops being read from (a client that does not read is not
served more), and one whose unsent output passes ``max_write_buffer`` is dropped.

The client
----------
:data:`HTTPClientSession` is the plain trio client (:class:`~.async_session.AsyncClient`) holding
the runtime-free HTTP link (``client.link``, an
:class:`~mcp_sansio.app.http_client.HTTPClientLink`) and :class:`TrioSockets`
(``client.sockets``: the sockets' tasks, the timer task, the close): the pump runs in
whichever task has something for it (a caller sending a request, a socket's task that read
bytes, the timer task), as on stdio. Each :class:`~mcp_sansio.http.ClientChannel` the HTTP
client opens gets one task: it connects (TLS for ``https``), then reads into the channel;
the pump writes straight to the socket when it has room, and a writer task sends what did
not fit; the socket is closed when the channel says so. One timer task waits in a cancel
scope whose deadline is :meth:`~mcp_sansio.http.HTTPClient.next_deadline` (request timeouts
and stream resumptions alike).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import sys
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any

import trio

from mcp_sansio import (
    NEED_DATA,
    KeyRing,
    RequestId,
)
from mcp_sansio.app.http_client import HTTPClientLink, HTTPTransportError, attach_http
from mcp_sansio.app.http_service import HTTPLink, HTTPServiceBase
from mcp_sansio.app.server import Server
from mcp_sansio.http import ClientChannel, HTTPServer, ServerChannel, Session

from ..auth.session import SessionAuth
from ..common import entry_points
from ..common.async_session import AsyncClient
from ..common.authorized import ATTEMPT, Authorize, advance, authorized, run_async
from ..common.deciders import trio_decider
from ..common.entry_points import HTTPClientCall, runs
from ..common.graceful import serve_until_signal
from ..common.http_client import default_tls
from ..common.http_options import DEFAULT_LINGER_BYTES, DEFAULT_LINGER_TIME
from ..common.http_server import new_http_server
from ..common.listen_error import listening
from .runtime import TrioRuntime
from .session import ServerSession, _one_error

__all__ = [
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_WRITE_BUFFER",
    "HTTPClientSession",
    "HTTPService",
    "TrioSockets",
    "HTTPTransportError",
    "connect_http",
    "run_http",
    "serve_http",
    "start_http",
]

log = logging.getLogger("mcp_sansio.adapters.http")

#: Unsent output (bytes) a socket may hold before its connection is dropped: 16 MiB, as on
#: asyncio -- far above any one answer or request; a peer that does not read is stuck.
DEFAULT_MAX_WRITE_BUFFER = 16 * 1024 * 1024
#: Seconds the client waits for a TCP (and TLS) connection to open: 10 s, as on asyncio. A
#: server that is up answers in milliseconds; beyond this the exchange fails rather than wait
#: for the system's own timeout (minutes, for an address that drops packets).
DEFAULT_CONNECT_TIMEOUT = 10.0
#: Seconds :meth:`HTTPClientSession.aclose` waits for the session's ``DELETE`` to be answered
#: before dropping the sockets: 2 s (a courtesy: the server expires idle sessions anyway).
DEFAULT_CLOSE_TIMEOUT = 2.0
#: Unsent output above which a socket is not read from until it drains: 256 KiB (asyncio's
#: write-buffer high-water mark in the asyncio adapter).
_HIGH_WATER = 256 * 1024
#: Bytes asked of the socket per read.
_CHUNK = 1 << 16
#: Whether a socket's descriptor can be written with os.write (not on Windows).
_DIRECT_WRITES = sys.platform != "win32"

class _HTTPRuntime(TrioRuntime):
    """The trio runtime of one HTTP session's logic: a request's handler runs in the HTTP
    service's nursery, in a cancel scope of its own, and the service's pump waits for its
    first step (module docstring)."""

    def __init__(self, session: ServerSession, service: HTTPService) -> None:
        super().__init__(session)
        self.service = service
        self.nursery = service._nursery

    def start_task(self, key: RequestId | None, coro: Coroutine[Any, Any, None]) -> None:
        nursery = self.nursery
        assert nursery is not None
        service = self.service
        scope = trio.CancelScope()
        scopes = self.scopes
        if key is not None:
            scopes[key] = scope
            service._unstarted += 1  # the pump waits for its first step (module docstring)

        async def run() -> None:
            if key is not None:
                service._unstarted -= 1
            try:
                with scope:
                    await coro
            finally:
                if key is not None and scopes.get(key) is scope:
                    del scopes[key]

        try:
            nursery.start_soon(run)
        except RuntimeError:  # the service is closing: the handler never runs
            if key is not None:
                service._unstarted -= 1
                scopes.pop(key, None)
            coro.close()


class _Socket:
    """One accepted TCP connection: its :class:`~mcp_sansio.http.ServerChannel` and the
    output queued for it."""

    __slots__ = ("channel", "closing", "drained", "fd", "gone", "lingering", "out", "queued",
                 "ready", "scope", "sending", "stream")

    def __init__(self, stream: trio.SocketStream, channel: ServerChannel) -> None:
        self.stream = stream
        #: The answer is out and the write side shut: the lingering close is under way
        #: (adapters/common/http_options.py).
        self.lingering = False
        self.channel = channel
        #: The socket's descriptor, for writes straight from the pump (POSIX: a socket is a
        #: file descriptor there).
        self.fd: int | None = stream.socket.fileno() if _DIRECT_WRITES else None
        self.out = bytearray()
        self.sending = False  # the sender task is in send_all
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
        if data and self.fd is not None and not self.out and not self.sending:
            # Fast path: the socket has room (it nearly always does) -- written now, with
            # no switch to the sender task. What does not fit is queued for it, in order.
            try:
                written = os.write(self.fd, data)
            except BlockingIOError:
                written = 0
            except OSError as exc:  # the socket broke: its task reports the loss
                log.debug("HTTP connection lost while writing: %r", exc)
                self.drop()
                return
            data = data[written:]
        if data:
            self.out += data
            self.queued += len(data)
        if close:
            self.closing = True
        if data or close:
            self.ready.unpark_all()

    def drop(self) -> None:
        self.gone = True
        self.fd = None  # never written again: the descriptor may be closed and reused
        self.scope.cancel()


class HTTPService(HTTPServiceBase[ServerSession]):
    """A running HTTP server on trio (made by :func:`start_http`)."""

    def __init__(self, server: Server, http: HTTPServer, *, max_write_buffer: int) -> None:
        self.server = server
        #: The sans-IO HTTP server.
        self.http = http
        self.max_write_buffer = max_write_buffer
        #: Bounds of the lingering close (seconds, bytes): see ``common/http_options.py``.
        self.linger_time = DEFAULT_LINGER_TIME
        self.linger_bytes = DEFAULT_LINGER_BYTES
        self._sessions: weakref.WeakKeyDictionary[Session, ServerSession] = (
            weakref.WeakKeyDictionary())
        self._sockets: dict[ServerChannel, _Socket] = {}
        self._nursery: trio.Nursery | None = None
        self._wakeup = trio.lowlevel.ParkingLot()
        self._work = False  # something for a drain
        self._pumping = False  # a task is draining
        self._scope: trio.CancelScope | None = None  # the pump task's wait
        self._deadline = math.inf
        self._unstarted = 0  # handler tasks a drain started that have not run yet
        self._drains = 0  # drains finished (a reader waits for the next one)
        self._drained = trio.lowlevel.ParkingLot()
        self._closed = trio.Event()
        #: ``(host, port)`` the server listens on.
        self.address = ("", 0)

    # -- the pump --------------------------------------------------------------------------

    def _wake(self) -> None:
        """Something for the pump that did not come from a reader (a handler's output, a
        broadcast, a socket lost): drained at once, in the calling task, unless a drain is
        under way (it goes round once more)."""
        self._work = True
        if not self._pumping:
            self._drain_now()

    _kick = _wake

    def _drain_now(self) -> None:
        """A drain that cannot wait: when it starts a handler, the pump task takes over
        (it lets the handler take its first step before draining on)."""
        http = self.http
        self._pumping = True
        try:
            while self._work:
                self._work = False
                while (item := http.next_event()) is not NEED_DATA:
                    session, event = item
                    self._dispatch(session, event)
                    if self._unstarted:
                        self._work = True
                        self._wakeup.unpark_all()
                        return
                for channel, data in http.data_to_send():
                    self._write(channel, data)
        except BaseException:
            self._drained_all()  # a failed drain is over too: readers wait for it
            raise
        finally:
            self._pumping = False
        self._drained_all()

    async def _pump(self) -> None:
        """The pump task: drains when woken by something other than a reader (a handler
        that sent, a broadcast), and when the deadline passes."""
        http = self.http
        while True:
            if not self._work or self._pumping:
                with trio.CancelScope(deadline=self._deadline) as scope:
                    self._scope = scope
                    await self._wakeup.park()
                self._scope = None
            now = trio.current_time()
            if now >= self._deadline:
                try:
                    http.handle_timeout(now)
                except Exception:  # logged; the failing entry is off the heap
                    self._work_failed()
                self._deadline = math.inf  # set again once drained
                self._work = True
            if not self._pumping:
                try:
                    await self._run_drain()
                except Exception:  # logged: the pump task, and the server, go on
                    self._work_failed()

    async def _run_drain(self) -> None:
        """Drain in this task (a reader's, or the pump's); another task that wants a drain
        meanwhile sets ``_work`` and this one goes round again."""
        self._pumping = True
        try:
            # Shielded: a drain always finishes (it only waits for handlers' first steps),
            # even when the reader's own connection is dropped during it.
            with trio.CancelScope(shield=True):
                await self._drain()
        finally:
            self._pumping = False
            self._drained_all()  # even after a failure: readers wait for it

    def _drained_all(self) -> None:
        """A drain ended with nothing left: readers waiting for it read on; the pump task's
        deadline follows the HTTP server's."""
        self._drains += 1
        self._drained.unpark_all()
        deadline = self.http.next_deadline()
        self._deadline = math.inf if deadline is None else deadline
        if self._scope is not None:
            self._scope.deadline = self._deadline

    async def _pump_after_read(self) -> None:
        """A reader fed its channel: drain now, in the reader's task (no switch to the
        pump task), or -- when another task is draining -- have it go round once more and
        wait for that. Either way the reader reads on only once what it read is
        dispatched (and a quick handler has answered): an end of file right behind a
        request -- a client that half-closes after sending -- must not cancel the
        request before its handler could answer."""
        if self._pumping:
            drains = self._drains
            self._work = True
            while self._drains == drains:
                await self._drained.park()
            return
        self._work = True
        await self._run_drain()

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

    def _new_logic(self, session: Session) -> ServerSession:
        """The session logic of a new HTTP session: the plain async server session, holding
        the HTTP runtime (handlers in the service's nursery) and its link to this service."""
        logic = ServerSession(session.connection, self.server)
        logic.runtime = _HTTPRuntime(logic, self)
        logic.link = HTTPLink(self, session)
        return logic

    def _ended(self, logic: ServerSession) -> None:
        runtime = logic.runtime
        assert isinstance(runtime, _HTTPRuntime)
        runtime.stop_tasks()

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
        except Exception:  # pragma: no cover - a bug the reader did not contain: the
            # connection's task ends here, never the server's nursery (common/http_server.py)
            self._contain(channel)
        finally:
            sock.gone = True
            sock.fd = None
            self._sockets.pop(channel, None)
            if not channel.closed:
                try:
                    channel.connection_lost(now=trio.current_time())
                except Exception:  # logged: the server's nursery must not see it
                    self._work_failed()
                self._safe_wake()

    def _safe_wake(self) -> None:
        """:meth:`_wake` where no single connection's reader is there to contain what it
        raises: logged, and the server goes on."""
        try:
            self._wake()
        except Exception:
            self._pumping = False
            self._work_failed()

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
                # Over: the sender writes what is queued, then half-closes; what the client
                # still sends is read and dropped meanwhile (the lingering close).
                await self._discard(sock, data)
                return
            try:
                channel.receive_data(bytes(data), now=trio.current_time(),
                                     wall_time=time.time())
                await self._pump_after_read()
            except Exception:  # a bug: this connection alone ends (common/http_server.py),
                self._contain(channel)  # with a 500 the sender writes before it lingers
                self._safe_wake()
                continue  # then what the client still sends is discarded
            if not data:
                return  # end of file: the channel reported it closed through the pump

    async def _send_loop(self, sock: _Socket) -> None:
        stream = sock.stream
        try:
            while True:
                while not sock.out:
                    if sock.gone:
                        return
                    if sock.closing:
                        await self._linger(sock)
                        return
                    await sock.ready.park()
                data, sock.out = sock.out, bytearray()
                sock.sending = True
                await stream.send_all(data)
                sock.sending = False
                sock.queued -= len(data)
                sock.drained.unpark_all()
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            log.debug("HTTP connection lost while writing: %r", exc)
        finally:
            if not sock.lingering:
                sock.drop()  # the connection is over: stop reading too

    async def _linger(self, sock: _Socket) -> None:
        """The answer is written: half-close, and give the client ``linger_time`` seconds
        (the connection scope's deadline) to finish sending and close its side while the
        reader discards what comes (:meth:`_discard`); trio's listener closes the socket
        once both tasks are done."""
        sock.gone = True  # nothing more is written
        sock.fd = None
        try:
            await sock.stream.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return  # (the caller drops the connection)
        sock.lingering = True
        sock.scope.deadline = trio.current_time() + self.linger_time

    async def _discard(self, sock: _Socket, data: bytes | bytearray) -> None:
        """The lingering close's reading side: drop what the client still sends, until it
        closes, ``linger_bytes`` were dropped, or the connection's deadline passes."""
        discarded = len(data)
        while data and discarded <= self.linger_bytes:
            try:
                data = await sock.stream.receive_some(_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            discarded += len(data)

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
    request_state_key: bytes | KeyRing | None = None,
    connection_options: Mapping[str, Any] | None = None,
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER,
    new_session_id: Callable[[], str] | None = None,
    linger_time: float = DEFAULT_LINGER_TIME,
    linger_bytes: int = DEFAULT_LINGER_BYTES,
    **http_options: Any,
) -> AsyncIterator[HTTPService]:
    """Serve ``server`` over Streamable HTTP (both eras) on ``host``:``port`` (0: any free
    port, see :attr:`HTTPService.port`) while the block runs.

    ``http_options`` go to :class:`~mcp_sansio.http.HTTPServer` (``path``,
    ``response_mode``, ``allowed_hosts``, ``legacy_sse_path``, limits, ...;
    ``tool_param_headers`` defaults to the ``x-mcp-header`` annotations of ``server``'s
    tools, kept current as tools come and go);
    ``connection_options`` to each session's :class:`~mcp_sansio.ServerConnection`.
    Session ids come from :mod:`secrets`; ``request_state_key`` seals stateless-era
    ``requestState`` (a key or a :class:`~mcp_sansio.KeyRing`; by default the ring the
    environment configures, else a random key valid for this process only: :doc:`/keys`).
    A connection the
    server closes lingers (half-closed, reading and discarding) for at most
    ``linger_time`` seconds and ``linger_bytes`` bytes, so that an early answer (413, 400)
    reaches a client that is still sending. Leaving the block closes every connection and
    cancels every handler."""
    http = new_http_server(server, request_state_key=request_state_key,
                           connection_options=connection_options,
                           new_session_id=new_session_id, http_options=http_options)
    service = HTTPService(server, http, max_write_buffer=max_write_buffer)
    service.linger_time, service.linger_bytes = linger_time, linger_bytes
    http.on_decision_needed = trio_decider(service)  # parked exchanges (common.deciders)
    with listening(host, port):
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
    """Serve ``server`` over HTTP, printing its URL on stdout once it listens, until SIGTERM
    or Ctrl-C; then stop gracefully and return: no new connections, the requests in flight
    finish (at most ``shutdown_timeout`` seconds, 10 by default; a second signal stops
    waiting), the rest is closed, a shared worker leaves cleanly (adapters/common/graceful.py).
    Other options as for :func:`start_http`."""

    def ready(service: HTTPService) -> None:
        sys.stdout.write(f"{service.url}\n")
        sys.stdout.flush()

    serve_until_signal("trio", sys.modules[__name__], server, host, port, on_ready=ready,
                       **options)


# -- the client ----------------------------------------------------------------------------------


class _ClientSocket:
    """One channel's TCP connection: opened by its task on the first bytes for it."""

    __slots__ = ("channel", "closing", "fd", "out", "queued", "ready", "scope", "sending",
                 "stream")

    def __init__(self, channel: ClientChannel) -> None:
        self.channel = channel
        self.stream: trio.abc.Stream | None = None
        #: The descriptor of an open plain-TCP socket, for writes straight from the pump.
        self.fd: int | None = None
        self.out = bytearray()  # before the socket is open: one request
        self.sending = False  # the writer task is in send_all
        self.queued = 0
        self.closing = False
        self.ready = trio.lowlevel.ParkingLot()
        self.scope = trio.CancelScope()


class TrioSockets:
    """An HTTP client's TCP connections on trio (``client.sockets``): one task per channel
    (:meth:`_run_socket`), opened by :meth:`send` (the link's ``send``); the timer task;
    the lock that serializes OAuth flows; the close."""

    def __init__(self, client: AsyncClient, link: HTTPClientLink, runtime: TrioRuntime, *,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER,
                 ssl_context: Any = None) -> None:
        self.client = client
        self.link = link
        self.runtime = runtime
        #: The open sockets, by channel.
        self.open: dict[ClientChannel, _ClientSocket] = {}
        #: Unparked whenever a socket is gone (the close waits on it).
        self.changed = trio.lowlevel.ParkingLot()
        #: Seconds to wait for a TCP (and TLS) connection to open.
        self.connect_timeout = connect_timeout
        #: Unwritten output (bytes) a socket may hold before it is dropped.
        self.max_write_buffer = max_write_buffer
        #: TLS for ``https``: the system's trusted certificates unless told otherwise.
        self.ssl_context: Any = (ssl_context if ssl_context is not None
                                 else default_tls(link.http.scheme))
        self._auth_lock = trio.Lock()
        link.send = self.send

    async def authorized(self, auth: SessionAuth,
                         send: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """``send()`` under the OAuth retry (:mod:`~mcp_sansio.adapters.common.authorized`)."""
        return await run_async(auth, send, self.authorize)

    async def authorize(self, auth: SessionAuth, challenge: Any, generation: int) -> None:
        """Run the OAuth flow (its blocking parts in worker threads), one at a time."""
        async with self._auth_lock:
            await _authorize(auth, challenge, generation)

    # -- the pump's output -------------------------------------------------------------------

    def send(self, channel: ClientChannel, data: bytes) -> None:
        sock = self.open.get(channel)
        if sock is None:
            if channel.closed:
                return  # never opened
            nursery = self.runtime.nursery
            assert nursery is not None
            sock = _ClientSocket(channel)
            self.open[channel] = sock
            self.link.connections_opened += 1
            nursery.start_soon(self._run_socket, sock)
        if data and sock.fd is not None and not sock.out and not sock.sending:
            # Fast path, as on the server: the socket has room (it nearly always does).
            try:
                written = os.write(sock.fd, data)
            except BlockingIOError:
                written = 0
            except OSError as exc:  # broken: its task reports the loss
                log.debug("HTTP connection lost while writing: %r", exc)
                sock.fd = None
                sock.scope.cancel()
                return
            data = data[written:]
        if data:
            sock.out += data
            sock.queued += len(data)
        if channel.closed:
            sock.closing = True
            if sock.stream is None:
                sock.scope.cancel()  # dropped before it was open: nothing to say on it
        elif sock.queued > self.max_write_buffer:
            log.info("dropping an HTTP connection: %d bytes unread by the server", sock.queued)
            sock.scope.cancel()
        sock.ready.unpark_all()

    # -- one task per socket -----------------------------------------------------------------

    async def _open(self, sock: _ClientSocket) -> trio.abc.Stream | None:
        http = self.link.http
        try:
            with trio.fail_after(self.connect_timeout):
                stream: trio.abc.Stream = await trio.open_tcp_stream(http.host, http.port)
                if self.ssl_context is not None:
                    stream = trio.SSLStream(stream, self.ssl_context, server_hostname=http.host,
                                            https_compatible=True)
                    await stream.do_handshake()
        except trio.TooSlowError:
            self.link.channel_failed(sock.channel, TimeoutError(
                f"no connection within {self.connect_timeout:g} s"))
            return None
        except Exception as exc:  # refused, unreachable, TLS refused, a name not found...
            # ...or anything else: a socket that cannot be opened is always reported.
            cause = exc.__cause__ if isinstance(exc, trio.BrokenResourceError) else None
            self.link.channel_failed(sock.channel, cause or exc)
            return None
        return stream

    async def _run_socket(self, sock: _ClientSocket) -> None:
        channel = sock.channel
        opened = False
        try:
            with sock.scope:
                stream = await self._open(sock)
                if stream is None:
                    return
                opened = True
                sock.stream = stream
                if _DIRECT_WRITES and isinstance(stream, trio.SocketStream):
                    sock.fd = stream.socket.fileno()
                try:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._socket_writer, sock, nursery.cancel_scope)
                        await self._socket_reader(sock)
                        nursery.cancel_scope.cancel()
                finally:
                    sock.fd = None  # never written again: the descriptor may be reused
                    await trio.aclose_forcefully(stream)
        finally:
            if self.open.get(channel) is sock:
                del self.open[channel]
            self.changed.unpark_all()
            if opened or not channel.closed:
                # channel_lost does nothing for a channel that ended cleanly
                self.link.channel_lost(channel)

    async def _socket_reader(self, sock: _ClientSocket) -> None:
        stream = sock.stream
        assert stream is not None
        channel = sock.channel
        while True:
            try:
                data = await stream.receive_some(_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                log.debug("HTTP connection lost: %r", exc)
                return
            self.link.channel_data(channel, bytes(data))
            if not data:
                return  # the server is done with it: close our side too

    async def _socket_writer(self, sock: _ClientSocket, scope: trio.CancelScope) -> None:
        stream = sock.stream
        assert stream is not None
        try:
            while True:
                while not sock.out:
                    if sock.closing:
                        return
                    await sock.ready.park()
                data, sock.out = sock.out, bytearray()
                sock.sending = True
                await stream.send_all(data)
                sock.sending = False
                sock.queued -= len(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            log.debug("HTTP connection lost while writing: %r", exc)
        finally:
            sock.fd = None
            scope.cancel()  # the socket is over: stop reading too

    # -- the timer ---------------------------------------------------------------------------

    async def timer(self) -> None:
        """The client's one timer: wait for the runtime's deadline, then run the client's
        ``on_timer`` (looked up on the client at each firing)."""
        runtime = self.runtime
        while True:
            with trio.CancelScope(deadline=runtime.deadline) as scope:
                runtime.scope = scope
                await trio.sleep_forever()
            runtime.scope = None
            runtime.deadline = math.inf  # passed: on_timer arms the next one (_arm is lazy)
            self.client.on_timer()

    # -- lifetime ----------------------------------------------------------------------------

    async def aclose(self, timeout: float | None) -> None:
        """End the session: ``DELETE`` it (handshake era, waiting at most ``timeout``
        seconds for the answer; None: :data:`DEFAULT_CLOSE_TIMEOUT`), close every socket,
        abort what is still pending."""
        self.link.begin_close()
        with trio.move_on_after(DEFAULT_CLOSE_TIMEOUT if timeout is None else timeout):
            while self.open:
                await self.changed.park()
        for sock in list(self.open.values()):
            sock.scope.cancel()
        self.runtime.stop_tasks()


#: An MCP client over HTTP on trio: the trio client (the methods of the stdio
#: :class:`~mcp_sansio.adapters.trio.Client`, see :class:`~.async_session.AsyncClient`) holding an
#: HTTP link and :class:`TrioSockets`. Made by :func:`connect_http`. A call whose cancel
#: scope is cancelled cancels the request (handshake era: ``notifications/cancelled``;
#: stateless era: its stream is closed).
HTTPClientSession = AsyncClient


def http_client(url: str, *, headers: Iterable[tuple[str, str]] | Mapping[str, str] | None,
                http_options: Mapping[str, Any] | None,
                **options: Any) -> tuple[AsyncClient, TrioSockets]:
    """A new, unconnected trio HTTP client of ``url`` and its sockets object (``options``:
    the callbacks and connection options of
    :meth:`~mcp_sansio.app.session.ClientLogic._create`)."""
    client = AsyncClient._create(**options)
    runtime = client.runtime = TrioRuntime(client)
    link, own = attach_http(client, url, headers=headers, http_options=http_options)
    sockets = client.sockets = TrioSockets(client, link, runtime, **own)
    return client, sockets


@runs(entry_points.connect_http, "On trio the OAuth flow's HTTP requests and a plain user "
      "step run in worker threads.")
@contextlib.asynccontextmanager
async def connect_http(call: HTTPClientCall) -> AsyncIterator[AsyncClient]:
    # The OAuth retry's plan (common/authorized.py), run here: each attempt's client lives
    # in a nursery of its own, which the authorizing between two attempts is outside of.
    session_auth = SessionAuth(call.auth, call.url) if call.auth is not None else None
    plan = authorized(session_auth) if session_auth is not None and call.connect else None
    error: Exception | None = None
    while True:
        step: Any = ATTEMPT
        if plan is not None:
            _, step = advance(plan, None, error)
        if isinstance(step, Authorize):
            assert session_auth is not None
            await _authorize(session_auth, step.challenge, step.generation)
            error = None
            continue
        client, sockets = http_client(call.url, headers=call.headers,
                                      http_options=call.http_options, **call.client)
        if session_auth is not None:
            client.auth = session_auth
            session_auth.install(sockets.link.http)
        error = None
        async with _one_error(), trio.open_nursery() as nursery:
            sockets.runtime.nursery = nursery
            nursery.start_soon(sockets.timer)
            try:
                if call.connect:
                    try:
                        await client.connect(era=call.era)
                    except HTTPTransportError as exc:
                        if plan is None:
                            raise
                        error = exc  # the plan's to judge, once this client is closed
                if error is None:
                    if plan is not None:
                        advance(plan, None, None)  # connected: the plan ends
                    yield client
            finally:
                with trio.CancelScope(shield=True):
                    await client.aclose()
                nursery.cancel_scope.cancel()
        if error is None:
            return


async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    # Blocking auth steps (the flow's requests, a plain user step) in a worker thread; each
    # is bounded by its own timeout, and a cancelled caller does not wait for it.
    return await trio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)


async def _authorize(auth: SessionAuth, challenge: Any, generation: int) -> None:
    """Run the OAuth flow, its blocking parts in worker threads (unless it ran since
    ``generation``: another call already did)."""
    if auth.generation == generation:
        await auth.run_async(challenge, _in_thread, native_fetch=False)
