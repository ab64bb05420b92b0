"""The trio HTTP server: trio's sockets + :class:`mcp_sansio.http.HTTPServer`.

Theory of operation: one :class:`~mcp_sansio.http.HTTPServer` serves every connection.
Each accepted TCP connection has a reader task and a sender task. The reader feeds what it
reads to the connection's :class:`~mcp_sansio.http.ServerChannel` and then *drains*, in its
own task: it takes :meth:`~mcp_sansio.http.HTTPServer.next_event` until there is nothing
left, hands every ``(session, event)`` pair to that HTTP session's logic and writes
:meth:`~mcp_sansio.http.HTTPServer.data_to_send` -- straight to a socket that has room,
else to its sender task's queue. One drain runs at a time: a task that wants one while
another is under way marks the work (the running drain goes round once more) and, if it is
a reader, waits until it is done. The *pump* task keeps the one timer (a cancel scope whose
deadline is :meth:`~mcp_sansio.http.HTTPServer.next_deadline`) and takes over a drain that
could not wait. A handler runs in a task of its own, in a cancel scope that a cancellation
cancels; trio cannot step a coroutine outside its task, so a drain lets the handlers it
just started take their first step before it goes on -- a handler that answers before it
first suspends is answered while the request is still processed, as on asyncio.

Buffers are bounded: requests by the HTTP server's ``max_body_size`` and
``max_header_size``; output by a per-socket queue: a socket with more than
256 KiB unsent (``HIGH_WATER``) stops being read from, and one whose unsent output passes
``max_write_buffer`` is dropped. The client is :mod:`.http_client`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import Any

import trio

from mcp_sansio import (
    NEED_DATA,
    RequestId,
)
from mcp_sansio.app.http_service import HTTPLink, HTTPServiceBase
from mcp_sansio.app.server import Server
from mcp_sansio.http import HTTPServer, ServerChannel, Session

from ..common import http_options, serving
from ..common.deciders import trio_decider
from ..common.entry_points import runs
from ..common.http_options import UDS_HOST, unix_listener
from ..common.listen_error import listening
from ..stores.home import OffLoopShare, trio_enter
from .runtime import TrioRuntime, enqueue, send_queued
from .session import ServerSession, _one_error

__all__ = ["DEFAULT_MAX_WRITE_BUFFER", "HTTPService", "run_http", "serve_http", "start_http"]

#: Unread output (bytes) a socket may hold before its connection is dropped.
DEFAULT_MAX_WRITE_BUFFER = serving.DEFAULT_MAX_WRITE_BUFFER

log = logging.getLogger("mcp_sansio.adapters.http")

#: Bytes asked of the socket per read.
_CHUNK = 1 << 16
#: Whether a socket's descriptor can be written with os.write (not on Windows).
_DIRECT_WRITES = sys.platform != "win32"

class _HTTPRuntime(TrioRuntime):
    """The trio runtime of one HTTP session's logic: a request's handler runs in the HTTP
    service's nursery, in a cancel scope of its own, and the service's pump waits for its
    first step (module docstring)."""

    def end(self) -> None:
        """Its session closed: stop the handlers it still runs."""
        self.stop_tasks()

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
        queued = enqueue(self, data)  # written now when it fits: no switch to the sender
        if queued is None:  # the socket broke: its task reports the loss
            self.drop()
            return
        if close:
            self.closing = True
        if queued or close:
            self.ready.unpark_all()

    def drop(self) -> None:
        self.gone = True
        self.fd = None  # never written again: the descriptor may be closed and reused
        self.scope.cancel()


class HTTPService(serving.ServiceState, HTTPServiceBase[ServerSession]):
    """A running HTTP server on trio (made by :func:`start_http`)."""

    def __init__(self, server: Server, http: HTTPServer, *, max_write_buffer: int) -> None:
        super().__init__(server, http)
        self.max_write_buffer = max_write_buffer
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
        self._accepting: trio.CancelScope | None = None  # the accept loop's scope
        self._listeners: list[trio.SocketListener] = []

    def _broadcast(self, method: str, params: Mapping[str, Any] | None) -> None:
        if self._shared is not None:  # every worker's sessions: through the bus
            self._shared.broadcast_soon(method, params)
            return
        super()._broadcast(method, params)

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
                self._work = http.needs_drain  # what the server holds, not who woke it
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
        if self._shared is not None:  # a shared server's store effects (stores/driver.py)
            self._shared.kick()
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
            if not http.needs_drain:  # what the server holds, not who woke it
                return

    def _new_logic(self, session: Session) -> ServerSession:
        """The session logic of a new HTTP session: the plain async server session, holding
        the HTTP runtime (handlers in the service's nursery) and its link to this service."""
        logic = ServerSession(session.connection, self.server)
        logic.runtime = _HTTPRuntime(logic, self)
        logic.link = HTTPLink(self, session)
        return logic

    def _write(self, channel: ServerChannel, data: bytes) -> None:
        sock = self._sockets.get(channel)
        if sock is None or sock.gone:
            if not channel.closed:
                channel.connection_lost(now=trio.current_time())
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
            while sock.queued > http_options.HIGH_WATER and not sock.gone:
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
                await send_queued(sock, stream)
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
                nursery.start_soon(self._accept_until_stopped, functools.partial(
                    trio.serve_listeners, self._serve_connection, listeners,
                    handler_nursery=nursery))
                self._listeners = listeners
                task_status.started()
        finally:
            self._detach_logics()
            self._closed.set()  # first: the cleanup below may be cancelled from outside
            with trio.CancelScope(shield=True):
                for listener in listeners:
                    await trio.aclose_forcefully(listener)

    async def _accept_until_stopped(self, accept: Callable[[], Awaitable[Any]]) -> None:
        with trio.CancelScope() as self._accepting:
            await accept()

    async def stop_accepting(self) -> None:
        """Stop accepting new connections and close the listeners (a new connection is
        refused) while those already open go on: a graceful stop's first step."""
        if self._accepting is not None:
            self._accepting.cancel()
        with trio.CancelScope(shield=True):
            for listener in self._listeners:
                await trio.aclose_forcefully(listener)

    async def serve_forever(self) -> None:
        """Wait until :meth:`aclose` (cancel the waiting task's scope to stop, too)."""
        await self._closed.wait()

    async def aclose(self) -> None:
        """Stop listening, drop every connection and cancel every running handler."""
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()
        await self._closed.wait()


@runs(serving.start_http, "Leaving the block closes every connection and cancels every "
      "handler.")
@contextlib.asynccontextmanager
async def start_http(call: serving.HTTPServeCall) -> AsyncIterator[HTTPService]:
    server, http_options, host, port = call.server, call.http_options, call.host, call.port
    uds = http_options.pop("uds", None)  # a Unix socket's path instead of host:port
    share = OffLoopShare.take(http_options)  # ``stores=``: shared (stores/home.py)
    ring = None
    if share is not None:
        token = trio.lowlevel.current_trio_token()
        ring = await trio.to_thread.run_sync(share.prepare, http_options,
                                             call.request_state_key)
    http = serving.http_server_of(call, ring)
    service = HTTPService(server, http, max_write_buffer=call.max_write_buffer)
    service.linger_time, service.linger_bytes = call.linger_time, call.linger_bytes
    http.on_decision_needed = trio_decider(service)  # parked exchanges (common.deciders)
    if uds is not None:  # a Unix socket (common/http_options.py); the URL names the Host
        sock = unix_listener(uds)
        sock.setblocking(False)
        listeners = [trio.SocketListener(trio.socket.from_stdlib_socket(sock))]
        service.address = (UDS_HOST, 80)
    else:
        with listening(host, port):
            listeners = await trio.open_tcp_listeners(port, host=host)
        sockname = listeners[0].socket.getsockname()
        service.address = (sockname[0], sockname[1])
    try:
        if share is not None:
            service._shared = await trio.to_thread.run_sync(
                share.start, server, http, service._wake, trio_enter(token))
        async with _one_error(), trio.open_nursery() as nursery:
            await nursery.start(service._run, listeners)
            try:
                yield service
            finally:
                with trio.CancelScope(shield=True):
                    await service.aclose()
    finally:
        if share is not None:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(share.close, server)


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


run_http = runs(serving.run_http)(serving.http_runner('trio', __name__))
