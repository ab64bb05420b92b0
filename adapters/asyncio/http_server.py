"""The asyncio HTTP server adapter: asyncio's own sockets + :class:`mcp_sansio.http.HTTPServer`.

One pump for the whole server, run from asyncio's protocol callbacks (bytes read, a socket
lost, the one timer, a handler that finished): it drains
:meth:`~mcp_sansio.http.HTTPServer.next_event`, hands every ``(session, event)`` pair to the
session logic of that HTTP session (the same :class:`~mcp_sansio.app.server.Server`
routing as on stdio), writes :meth:`~mcp_sansio.http.HTTPServer.data_to_send` to the
sockets and re-arms one timer for :meth:`~mcp_sansio.http.HTTPServer.next_deadline`. No
thread, no queue; a request handler is the only task involved.

Buffers are bounded: requests are bounded by the HTTP server's ``max_body_size`` and
``max_header_size``; a socket whose peer does not read stops being read from (asyncio's
write-buffer watermarks), and one whose unread output passes ``max_write_buffer`` is
dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from typing import Any

from mcp_sansio import RequestId
from mcp_sansio.app.http_service import HTTPLink, HTTPServiceBase
from mcp_sansio.app.server import Server
from mcp_sansio.http import HTTPServer, ServerChannel, Session

from ..common import serving
from ..common.deciders import asyncio_decider
from ..common.entry_points import runs
from ..common.http_options import UDS_HOST, unix_listener
from ..common.listen_error import listening
from ..stores.driver import SharedDriver
from ..stores.keys import DEFAULT_KEY_REFRESH_INTERVAL, StoreKeys, store_key_ring
from ..stores.tasks import close_sharing
from .runtime import AsyncioRuntime, LoopTimer
from .session import ServerSession, _small_reads

__all__ = ["DEFAULT_MAX_WRITE_BUFFER", "HTTPService", "run_http", "serve_http", "start_http"]

#: Unread output (bytes) a socket may hold before its connection is dropped.
DEFAULT_MAX_WRITE_BUFFER = serving.DEFAULT_MAX_WRITE_BUFFER


class _HTTPRuntime(AsyncioRuntime):
    """The asyncio runtime of one HTTP session's logic: events are dispatched by the HTTP
    service's pump, not by ``Session.service``, so a request's handler is stepped at once,
    during the dispatch: one that answers (or refuses) before it suspends does so while the
    HTTP server is still processing the request -- a plain JSON answer, or a 400 for a
    stateless-era refusal such as -32021 -- and only one that suspends gets a task."""

    __slots__ = ()

    def end(self) -> None:
        """Its session closed: stop the handlers it still runs."""
        if self.tasks or self.background:
            self.spawn(self.stop_tasks())

    def start_task(self, key: RequestId | None, coro: Coroutine[Any, Any, None]) -> None:
        if key is None:
            self.spawn(coro)
            return
        self.step(key, coro)


class _Socket(asyncio.Protocol):
    """One accepted TCP connection: a :class:`~mcp_sansio.http.ServerChannel`."""

    def __init__(self, service: HTTPService) -> None:
        self.service = service
        self.channel: ServerChannel | None = None
        self.transport: asyncio.Transport | None = None
        self.eof = False  # the client closed its side
        #: Lingering close (adapters/common/http_options.py): bytes discarded since the answer
        #: was done, None while the connection is in use.
        self.discarded: int | None = None
        self.linger_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=256 * 1024)
        _small_reads(transport)  # 64 KiB reads: see adapters/asyncio.py _READ_SIZE
        service = self.service
        self.channel = service.http.new_channel(now=service._loop.time())
        service._sockets[self.channel] = self

    def data_received(self, data: bytes) -> None:
        assert self.channel is not None
        if self.discarded is not None:  # lingering: read and dropped, up to a bound
            self.discarded += len(data)
            if self.discarded > self.service.linger_bytes and self.transport is not None:
                self.transport.close()
            return
        try:
            self.channel.receive_data(data, now=self.service._loop.time(),
                                      wall_time=time.time())
            self.service._pump()
        except Exception:  # a bug: this connection alone ends (common/http_server.py)
            self.failed()

    def eof_received(self) -> bool:
        assert self.channel is not None
        self.eof = True
        if self.discarded is not None:  # lingering: the client is done too
            return False  # (asyncio closes the transport)
        try:
            self.channel.receive_data(b"", now=self.service._loop.time())
            self.service._pump()
        except Exception:  # a bug: this connection alone ends (common/http_server.py)
            self.failed()
        return True  # the answer may still be written: h11 closes when it is done

    def failed(self) -> None:
        """(From an ``except`` block.) Handling this connection raised: log it once, write
        the channel's last words (a 500 when no response had started) and close it; the
        rest of the pump's work is picked up by a fresh run, soon."""
        channel, service = self.channel, self.service
        assert channel is not None
        service._contain(channel)
        data = channel.data_to_send()
        if self.transport is not None and not self.transport.is_closing():
            if data:
                self.transport.write(data)
            self.linger()
        service._loop.call_soon(service._safe_pump)

    def linger(self) -> None:
        """The channel is over: half-close after what is buffered, discard what the client
        still sends, close when it closes too or a bound is reached (common/http_options.py)."""
        transport = self.transport
        if transport is None or self.discarded is not None:
            return
        self.discarded = 0
        if self.eof or not transport.can_write_eof():
            transport.close()  # after the buffered bytes are written
            return
        transport.write_eof()  # shutdown(SHUT_WR) once the buffer is written
        self.linger_timer = self.service._loop.call_later(self.service.linger_time,
                                                          transport.close)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.linger_timer is not None:
            self.linger_timer.cancel()
            self.linger_timer = None
        channel = self.channel
        if channel is None:
            return
        self.service._sockets.pop(channel, None)
        if not channel.closed:
            try:
                channel.connection_lost(now=self.service._loop.time())
            except Exception:  # logged; the pump below picks up what is left
                self.service._work_failed()
            self.service._safe_pump()

    # Backpressure: a peer that does not read stops being read from.
    def pause_writing(self) -> None:
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()


class HTTPService(serving.ServiceState, HTTPServiceBase[ServerSession]):
    """A running HTTP server (made by :func:`start_http`)."""

    def __init__(self, server: Server, http: HTTPServer, *, max_write_buffer: int) -> None:
        super().__init__(server, http)
        self.max_write_buffer = max_write_buffer
        self._loop = asyncio.get_running_loop()
        self._sockets: dict[ServerChannel, _Socket] = {}
        self._pumping = False
        self._timer = LoopTimer(self._loop, self._fire)
        self._listener: asyncio.Server | None = None
        self._closed = asyncio.Event()
        self._publishing: set[asyncio.Task[None]] = set()

    # -- the pump --------------------------------------------------------------------------

    def _pump(self) -> None:
        if self._sync_drain():
            self._arm(self.http.next_deadline())
        if self._shared is not None:  # a shared server's store effects (stores/driver.py)
            self._shared.kick()

    _kick = _pump

    def _safe_pump(self) -> None:
        """The pump where no single connection's callback is on the stack to contain what
        it raises: logged, and the server goes on."""
        try:
            self._pump()
        except Exception:
            self._work_failed()
            with contextlib.suppress(Exception):  # the timers must go on
                self._arm(self.http.next_deadline())

    def _broadcast(self, method: str, params: Mapping[str, Any] | None) -> None:
        if self._shared is None:
            super()._broadcast(method, params)
            return
        # Every worker's sessions: through the bus (this worker hears it too).
        task = self._loop.create_task(self._shared.broadcast(method, params))
        self._publishing.add(task)
        task.add_done_callback(self._publishing.discard)

    def _new_logic(self, session: Session) -> ServerSession:
        """The session logic of a new HTTP session: the plain async server session, holding
        the HTTP runtime (handlers stepped at once) and its link to this service."""
        logic = ServerSession(session.connection, self.server)
        logic.runtime = _HTTPRuntime(logic)
        logic.link = HTTPLink(self, session)
        return logic

    def _write(self, channel: ServerChannel, data: bytes) -> None:
        sock = self._sockets.get(channel)
        transport = sock.transport if sock is not None else None
        if sock is None or transport is None or transport.is_closing():
            if not channel.closed:
                channel.connection_lost(now=self._loop.time())
            return
        if data:
            transport.write(data)
        if channel.closed:
            sock.linger()  # lingering close: the answer reaches a client still sending
        elif transport.get_write_buffer_size() > self.max_write_buffer:
            transport.abort()  # connection_lost tells the channel

    def _arm(self, deadline: float | None) -> None:
        if deadline != self._timer.at:
            self._timer.set(deadline)

    def _fire(self) -> None:
        try:
            self.http.handle_timeout(self._loop.time())
        except Exception:
            self._work_failed()
        self._safe_pump()

    # -- lifetime ----------------------------------------------------------------------------

    async def _listen(self, host: str, port: int, uds: str | None = None,
                      **options: Any) -> None:
        if uds is not None:  # a Unix socket (common/http_options.py); the URL names the Host
            self._listener = await self._loop.create_unix_server(
                lambda: _Socket(self), sock=unix_listener(uds), **options)
            self.address = (UDS_HOST, 80)
            return
        with listening(host, port):
            self._listener = await self._loop.create_server(
                lambda: _Socket(self), host, port, **options)
        sockname = self._listener.sockets[0].getsockname()
        self.address = (sockname[0], sockname[1])

    async def serve_forever(self) -> None:
        """Wait until :meth:`aclose` (cancel the waiting task to stop, too)."""
        await self._closed.wait()

    async def aclose(self) -> None:
        """Stop listening, drop every connection and cancel every running handler."""
        if self._listener is not None:
            self._listener.close()
        for sock in list(self._sockets.values()):
            if sock.transport is not None:
                sock.transport.abort()
        self._sockets.clear()
        self._timer.set(None)
        logics = self._detach_logics()
        for logic in logics:
            runtime = logic.runtime
            assert isinstance(runtime, _HTTPRuntime)
            await runtime.stop_tasks()
        if self._shared is not None:
            await self._shared.aclose()
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._listener.wait_closed(), 1.0)
        self._closed.set()


@runs(serving.start_http, """
    ``stores`` (an object with ``sessions``, ``events`` and ``bus``:
    :class:`mcp_sansio.stores.MemoryStores`, :class:`mcp_sansio.adapters.redis.RedisStores`)
    makes the server *shared*: handshake-era sessions and resumable SSE events live there,
    so that every worker using the same stores serves every session, and ``requestState``
    is sealed and opened with the store's key ring unless ``request_state_key`` is given,
    re-read every ``key_refresh_interval`` seconds (:doc:`/stores`); each worker beats
    every ``heartbeat_interval`` seconds on the bus and counts another gone after
    ``worker_timeout`` seconds of silence (:doc:`/stores`, "Workers that die"); the
    server's tasks (``enable_tasks``) are kept there too, so every worker sees them. The
    caller owns the stores (close them after the block).""")
@contextlib.asynccontextmanager
async def start_http(call: serving.HTTPServeCall) -> AsyncIterator[HTTPService]:
    server, http_options, request_state_key = call.server, call.http_options, None
    uds = http_options.pop("uds", None)  # a Unix socket's path instead of host:port
    stores = http_options.pop("stores", None)
    key_refresh = http_options.pop("key_refresh_interval", DEFAULT_KEY_REFRESH_INTERVAL)
    # Liveness of the workers sharing the stores (stores/driver.py).
    liveness = {name: http_options.pop(name) for name in ("heartbeat_interval", "worker_timeout")
                if name in http_options}
    key_source: StoreKeys | None = None
    if stores is not None:
        http_options.setdefault("shared", True)
        http_options.setdefault("stream_tag", secrets.token_hex(4))
        if call.request_state_key is None:  # the store's key ring, kept current (stores.keys)
            request_state_key, key_source = await store_key_ring(
                stores, refresh_interval=key_refresh)
    http = serving.http_server_of(call, request_state_key)
    service = HTTPService(server, http, max_write_buffer=call.max_write_buffer)
    service.linger_time, service.linger_bytes = call.linger_time, call.linger_bytes
    http.on_decision_needed = asyncio_decider(service)  # parked exchanges (common.deciders)
    if stores is not None:
        service._shared = SharedDriver(http, stores, service._safe_pump, keys=key_source,
                                       **liveness)
        await service._shared.start()
        share_tasks = getattr(server.tasks, "share", None)  # the server's tasks on every worker
        if share_tasks is not None:
            share_tasks(stores)
    await service._listen(call.host, call.port, uds)
    try:
        yield service
    finally:
        await asyncio.shield(service.aclose())
        if stores is not None:  # the last task records written before the stores close
            await asyncio.shield(close_sharing(server))


async def serve_http(
    server: Server, host: str = "127.0.0.1", port: int = 0, *,
    on_ready: Callable[[HTTPService], Any] | None = None, **options: Any,
) -> None:
    """Serve ``server`` over HTTP until cancelled (options as for :func:`start_http`);
    ``on_ready`` is called once the socket listens."""
    async with start_http(server, host, port, **options) as service:
        if on_ready is not None:
            on_ready(service)
        await service.serve_forever()


run_http = runs(serving.run_http)(serving.http_runner('asyncio', __name__))
