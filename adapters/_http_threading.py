"""The threading HTTP server adapter: plain sockets and threads + the sans-IO HTTPServer.

Theory of operation
-------------------
The sans-IO HTTP server is one object for every connection, so it is used under one lock
(:attr:`HTTPService.lock`, which is also the lock of every MCP session it serves). Around
it:

* an **accept thread** waits (``selectors``) on the listening socket and a wake-up socket,
  makes a :class:`~mcp_sansio.http.ServerChannel` for each new connection and starts its
  reader;
* one **reader thread per TCP connection** blocks in ``recv``, feeds what it read to the
  channel under the lock and runs the pump: drain
  :meth:`~mcp_sansio.http.HTTPServer.next_event` (each ``(session, event)`` goes to the
  session logic of that HTTP session, the same :class:`~mcp_sansio.adapters._session.Server`
  routing as on stdio), then write :meth:`~mcp_sansio.http.HTTPServer.data_to_send`;
* one **timer thread** waits on a condition of the lock until
  :meth:`~mcp_sansio.http.HTTPServer.next_deadline` (a pump that brings it forward wakes
  it) and runs :meth:`~mcp_sansio.http.HTTPServer.handle_timeout`;
* request handlers run in one thread pool shared by every session, as in the stdio
  adapter (plain ``def`` handlers cancelled cooperatively, ``async def`` handlers on a
  private loop per worker, cancelled for real). A handler that answers, logs or reports
  progress takes the lock and runs the pump itself.

Writes go straight to the socket from whichever thread ran the pump (a reader, a handler,
the timer): no hop to a writer thread. They never block, though: a write is one
non-blocking ``send``; what the kernel does not take waits in the socket's own queue, and
only then does a short-lived **flusher thread** for that socket wait for it to drain. The
choice (rather than a blocking ``sendall`` with a timeout) keeps a peer that does not read
from stalling the thread that happened to write to it -- which holds the server's lock, or
serves another client -- while memory stays bounded:

* a socket's queue beyond ``max_write_buffer`` bytes drops the connection;
* a socket whose queue is above a high-water mark is not read from until it drains (the
  peer's further requests wait in the kernel), as asyncio pauses reading;
* requests are bounded by the HTTP server's ``max_body_size`` and ``max_header_size``, and
  at most ``max_connections`` connections (so reader threads) exist at once: beyond it the
  accept thread waits and new clients wait in the listen backlog.

Closing the service stops accepting, shuts every socket down (which wakes its reader),
cancels the running handlers and joins every thread it started.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import secrets
import select
import selectors
import socket
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mcp_sansio import NEED_DATA, ConnectionClosed, Event, Request, ServerConnection
from mcp_sansio.http import HTTPServer, ServerChannel, Session

from ._session import Context, Server
from ._sync_api import SyncServerSession, ThreadAsyncContext, ThreadContext

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_WORKERS",
    "DEFAULT_MAX_WRITE_BUFFER",
    "HTTPService",
    "run_http",
    "serve_http",
    "start_http",
]

log = logging.getLogger("mcp_sansio.adapters.http")

#: Unread output (bytes) a socket may hold before its connection is dropped: 16 MiB, as on
#: asyncio -- room for many large SSE events to a slow reader, a bound for one that never
#: reads.
DEFAULT_MAX_WRITE_BUFFER = 16 * 1024 * 1024
#: Above this much unread output a connection is not read from: 256 KiB, asyncio's
#: high-water mark in the asyncio adapter.
_HIGH_WATER = 256 * 1024
#: TCP connections served at once: 1,024. Each has a reader thread (a few tens of KiB of
#: memory, stacks being reserved lazily); beyond the cap clients wait in the listen backlog
#: until one closes.
DEFAULT_MAX_CONNECTIONS = 1024
#: Handler threads shared by every session: 64. Requests beyond it wait in the pool's
#: queue (one per connection at most: HTTP/1.1 carries one request at a time); listen
#: streams and answers that need no handler take no thread.
DEFAULT_MAX_WORKERS = 64
#: How long closing the service waits for running handlers to end (seconds): a plain
#: ``def`` handler can only be asked to stop (``ctx.cancelled``).
DEFAULT_SHUTDOWN_TIMEOUT = 2.0

_CHUNK = 1 << 16
#: A send that never blocks, and never raises SIGPIPE where the system can say so.
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0) | getattr(socket, "MSG_NOSIGNAL", 0)

#: Notifications about the server as a whole: every session and listen stream hears them.
_SERVER_WIDE = frozenset({"notifications/tools/list_changed", "notifications/prompts/list_changed",
                          "notifications/resources/list_changed"})


def _notify(ctx: Context, method: str, params: Mapping[str, Any] | None) -> bool:
    """A list change is the server's, not one session's: broadcast it (True when done)."""
    session = ctx.session
    if method not in _SERVER_WIDE or not isinstance(session, _HTTPSession):
        return False
    service = session._service
    with service.lock:
        service.http.broadcast(method, params)
        service._pump()
    return True


class _Context(ThreadContext):
    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        if not _notify(self, method, params):
            super().notify(method, params)


class _AsyncContext(ThreadAsyncContext):
    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        if not _notify(self, method, params):
            super().notify(method, params)


class _HTTPSession(SyncServerSession):
    """The session logic of one HTTP session (a handshake-era session, or one stateless-era
    request). The HTTP server drains its connection; what handlers send is routed by
    flushing the HTTP session and running the service's pump. It shares the service's lock
    and handler pool."""

    def __init__(self, conn: ServerConnection, server: Server, service: HTTPService,
                 http_session: Session) -> None:
        super().__init__(conn, server, max_workers=1)
        self._pool = service._pool
        self.lock = service.lock
        self._service = service
        self._http_session = weakref.ref(http_session)

    def service(self) -> None:
        http_session = self._http_session()
        if http_session is not None:
            http_session.flush()
        self._service._pump()

    def _now(self) -> float:
        return time.monotonic()

    def _arm(self, deadline: float | None) -> None:
        """The HTTP server owns every timer (next_deadline covers the connections')."""

    def _write(self, data: bytes) -> None:
        """Never called: the HTTP server drains the connection."""

    def _spawn_incoming(self, request: Request) -> None:
        # SyncServerSession's, with contexts that broadcast list changes.
        ctx: Context = _Context(self, request)
        job = self.make_job(request, ctx)
        if job is None:
            return
        if job.fn is not None and inspect.iscoroutinefunction(job.fn):
            ctx = _AsyncContext(self, request)
            if "ctx" in job.kwargs:
                job.kwargs["ctx"] = ctx
        self._contexts[request.request_id] = ctx
        self._pool.submit(self._run, request, job, ctx)

    def _cancel_handlers(self) -> None:
        """The session ended: its running handlers are cancelled (the pool is shared)."""
        for request_id in list(self._contexts):
            self._cancel_incoming(request_id)
        cancellers = list(self._cancellers.values())
        self._cancellers.clear()
        for cancel in cancellers:
            cancel()


class _Socket:
    """One accepted TCP connection: its socket, its channel, its reader thread, and the
    output the kernel has not taken yet (with the flusher thread that waits for it)."""

    def __init__(self, service: HTTPService, sock: socket.socket, channel: ServerChannel
                 ) -> None:
        self.service = service
        self.sock = sock
        self.channel = channel
        self._lock = threading.Lock()
        self._drained = threading.Condition(self._lock)
        self._queue: deque[bytes] = deque()
        self._queued = 0
        self._closing = False  # close once the queue is written
        self._dead = False  # shut down: nothing more is written
        self._flusher: threading.Thread | None = None
        self.reader = threading.Thread(target=self._read, name="mcp-sansio-http-reader",
                                       daemon=True)

    # -- writing (any thread; the caller holds the service lock) ------------------------------

    def send(self, data: bytes) -> bool:
        """Write now what the kernel takes, queue the rest; False: the connection is over
        (broken, or its queue passed ``max_write_buffer`` and it was dropped)."""
        with self._lock:
            if self._dead:
                return False
            if not self._queue:
                try:
                    sent = self.sock.send(data, _DONTWAIT)
                except BlockingIOError:
                    sent = 0
                except OSError:
                    self._shutdown()
                    return False
                if sent == len(data):
                    return True
                data = data[sent:]
            self._queue.append(data)
            self._queued += len(data)
            if self._queued > self.service.max_write_buffer:
                log.warning("dropping a connection whose peer does not read (%d bytes unread)",
                            self._queued)
                self._shutdown()
                return False
            if self._flusher is None:
                self._flusher = threading.Thread(target=self._flush, daemon=True,
                                                 name="mcp-sansio-http-flusher")
                self._flusher.start()
            return True

    def close_after_flush(self) -> None:
        with self._lock:
            self._closing = True
            if not self._queue:
                self._shutdown()

    def abort(self) -> None:
        with self._lock:
            self._shutdown()

    def _shutdown(self) -> None:
        """(Lock held.) Shut the socket down: a FIN after what the kernel holds, and the
        reader's ``recv`` returns. Only the reader closes the descriptor (no other thread
        can then use a number the system has given to a new socket)."""
        if not self._dead:
            self._dead = True
            self._queue.clear()
            self._queued = 0
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
        self._drained.notify_all()

    def _flush(self) -> None:
        """The flusher: write the queue as the peer reads it, then end."""
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLOUT)
        while True:
            with self._lock:
                if self._dead or not self._queue:
                    self._flusher = None
                    if self._closing:
                        self._shutdown()
                    return
                data = self._queue[0]
            poller.poll()
            try:
                sent = self.sock.send(data, _DONTWAIT)
            except BlockingIOError:
                continue
            except OSError:
                self.abort()
                continue
            with self._lock:
                if self._dead:
                    continue
                self._queue.popleft()
                if sent < len(data):
                    self._queue.appendleft(data[sent:])
                self._queued -= sent
                if self._queued <= _HIGH_WATER:
                    self._drained.notify_all()

    # -- reading (the reader thread) -------------------------------------------------------

    def _read(self) -> None:
        service, channel, sock = self.service, self.channel, self.sock
        try:
            while True:
                with self._lock:  # backpressure: a peer that does not read is not read from
                    while self._queued > _HIGH_WATER and not self._dead:
                        self._drained.wait()
                lost = False
                try:
                    data = sock.recv(_CHUNK)
                except OSError:
                    data, lost = b"", True
                with service.lock:
                    if not channel.closed:
                        if lost:
                            channel.connection_lost(now=time.monotonic())
                        else:
                            channel.receive_data(data, now=time.monotonic())
                        service._pump()
                if not data:
                    return
        except Exception:  # pragma: no cover - a bug: log it, drop the connection
            log.exception("the reader of an HTTP connection failed")
        finally:
            self.abort()
            with service.lock:
                service._sockets.pop(channel, None)
                if not channel.closed:
                    channel.connection_lost(now=time.monotonic())
                    service._pump()
                service._room.notify()
            flusher = self._flusher
            if flusher is not None:
                flusher.join()
            sock.close()
            service._readers.discard(self.reader)


class HTTPService:
    """A running HTTP server on threads (made by :func:`start_http`)."""

    def __init__(self, server: Server, http: HTTPServer, *, max_write_buffer: int,
                 max_connections: int, max_workers: int, shutdown_timeout: float) -> None:
        self.server = server
        #: The sans-IO HTTP server (use it under :attr:`lock`).
        self.http = http
        #: Held around every use of :attr:`http` and of the sessions' connections.
        self.lock = threading.RLock()
        self.max_write_buffer = max_write_buffer
        self.max_connections = max_connections
        self.shutdown_timeout = shutdown_timeout
        self._pool = ThreadPoolExecutor(max_workers=max_workers,
                                        thread_name_prefix="mcp-sansio-handler")
        self._sessions: weakref.WeakKeyDictionary[Session, _HTTPSession] = (
            weakref.WeakKeyDictionary())
        self._sockets: dict[ServerChannel, _Socket] = {}
        self._readers: set[threading.Thread] = set()
        self._pumping = False
        self._again = False
        self._timer = threading.Condition(self.lock)
        self._timer_at: float | None = None
        self._room = threading.Condition(self.lock)  # a connection slot became free
        self._closed = False
        self._stopped = threading.Event()
        self._listener: socket.socket | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._threads: list[threading.Thread] = []
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

    # -- the pump (the caller holds the lock) ----------------------------------------------

    def _pump(self) -> None:
        if self._pumping:
            self._again = True  # the running pump goes round once more
            return
        self._pumping = True
        http = self.http
        try:
            while True:
                self._again = False
                while (item := http.next_event()) is not NEED_DATA:
                    session, event = item
                    self._dispatch(session, event)
                for channel, data in http.data_to_send():
                    self._write(channel, data)
                if not self._again:
                    break
        finally:
            self._pumping = False
        deadline = http.next_deadline()
        if deadline is not None and (self._timer_at is None or deadline < self._timer_at):
            self._timer_at = deadline
            self._timer.notify()

    def _dispatch(self, session: Session, event: Event) -> None:
        logic = self._sessions.get(session)
        if logic is None:
            logic = _HTTPSession(session.connection, self.server, self, session)
            self._sessions[session] = logic
        logic._dispatch(event)
        if isinstance(event, ConnectionClosed):
            self._sessions.pop(session, None)
            logic._cancel_handlers()

    def _write(self, channel: ServerChannel, data: bytes) -> None:
        sock = self._sockets.get(channel)
        if sock is None or (data and not sock.send(data)):
            if not channel.closed:
                channel.connection_lost(now=time.monotonic())
                self._again = True
            return
        if channel.closed:
            sock.close_after_flush()

    # -- threads -----------------------------------------------------------------------------

    def _listen(self, host: str, port: int, backlog: int) -> None:
        family = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                    flags=socket.AI_PASSIVE)[0][0]
        listener = socket.create_server((host, port), family=family, backlog=backlog)
        listener.setblocking(False)
        self._listener = listener
        sockname = listener.getsockname()
        self.address = (sockname[0], sockname[1])
        for target, name in ((self._accept, "mcp-sansio-http-accept"),
                             (self._run_timer, "mcp-sansio-http-timer")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _accept(self) -> None:
        listener = self._listener
        assert listener is not None
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ, "accept")
        selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        try:
            while True:
                with self.lock:
                    while len(self._sockets) >= self.max_connections and not self._closed:
                        self._room.wait()
                    if self._closed:
                        return
                ready = selector.select()
                if any(key.data == "wake" for key, _ in ready):
                    return
                try:
                    sock, _ = listener.accept()
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError as exc:  # e.g. out of descriptors: wait a little, go on
                    log.warning("accept failed: %s", exc)
                    time.sleep(0.1)
                    continue
                sock.setblocking(True)
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with self.lock:
                    if self._closed:
                        sock.close()
                        return
                    channel = self.http.new_channel(now=time.monotonic())
                    conn = _Socket(self, sock, channel)
                    self._sockets[channel] = conn
                    self._readers.add(conn.reader)
                conn.reader.start()
        finally:
            selector.close()

    def _run_timer(self) -> None:
        http = self.http
        with self.lock:
            while not self._closed:
                deadline = http.next_deadline()
                now = time.monotonic()
                if deadline is not None and deadline <= now:
                    self._timer_at = None
                    http.handle_timeout(now)
                    self._pump()
                    continue
                self._timer_at = deadline
                self._timer.wait(None if deadline is None else deadline - now)

    # -- lifetime ----------------------------------------------------------------------------

    def serve_forever(self) -> None:
        """Block until :meth:`close` is called (from another thread or a handler)."""
        self._stopped.wait()

    def close(self) -> None:
        """Stop listening, drop every connection, cancel every running handler and join
        every thread the service started."""
        with self.lock:
            if self._closed:
                return
            self._closed = True
            self._timer.notify_all()
            self._room.notify_all()
            sockets = list(self._sockets.values())
            logics = list(self._sessions.values())
            self._sessions.clear()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"!")
        for thread in self._threads:
            thread.join()
        for conn in sockets:
            conn.abort()
        for thread in list(self._readers):
            thread.join()
        with self.lock:
            for logic in logics:
                logic._cancel_handlers()
        # A plain def handler can only be asked to stop: wait for the pool a bounded time.
        waiter = threading.Thread(target=self._pool.shutdown,
                                  kwargs={"wait": True, "cancel_futures": True}, daemon=True)
        waiter.start()
        waiter.join(self.shutdown_timeout)
        if waiter.is_alive():
            log.warning("HTTP service closed with handlers still running")
        for sock in (self._listener, self._wake_r, self._wake_w):
            if sock is not None:
                sock.close()
        self._stopped.set()


@contextlib.contextmanager
def start_http(
    server: Server, host: str = "127.0.0.1", port: int = 0, *,
    request_state_key: bytes | None = None,
    connection_options: Mapping[str, Any] | None = None,
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    max_workers: int = DEFAULT_MAX_WORKERS,
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
    backlog: int = 128,
    new_session_id: Callable[[], str] | None = None,
    **http_options: Any,
) -> Iterator[HTTPService]:
    """Serve ``server`` over Streamable HTTP (both eras) on ``host``:``port`` (0: any free
    port, see :attr:`HTTPService.port`) in background threads while the block runs.

    ``http_options`` go to :class:`~mcp_sansio.http.HTTPServer` (``path``,
    ``response_mode``, ``allowed_hosts``, ``legacy_sse_path``, limits, ...);
    ``connection_options`` to each session's :class:`~mcp_sansio.ServerConnection`.
    Session ids come from :mod:`secrets`; ``request_state_key`` seals stateless-era
    ``requestState`` (random by default: valid for this process only). Handlers run in a
    pool of ``max_workers`` threads; at most ``max_connections`` connections are served at
    once."""
    key = request_state_key or secrets.token_bytes(32)
    options = dict(connection_options or {})

    def connection() -> ServerConnection:
        return server.connection(request_state_key=key, **options)

    http = HTTPServer(connection,
                      new_session_id=new_session_id or (lambda: secrets.token_urlsafe(32)),
                      **http_options)
    service = HTTPService(server, http, max_write_buffer=max_write_buffer,
                          max_connections=max_connections, max_workers=max_workers,
                          shutdown_timeout=shutdown_timeout)
    try:
        service._listen(host, port, backlog)
        yield service
    finally:
        service.close()


def serve_http(
    server: Server, host: str = "127.0.0.1", port: int = 0, *,
    on_ready: Callable[[HTTPService], Any] | None = None, **options: Any,
) -> None:
    """Serve ``server`` over HTTP, blocking until the service is closed or the calling
    thread is interrupted (Ctrl-C); options as for :func:`start_http`. ``on_ready`` is
    called once the socket listens."""
    with start_http(server, host, port, **options) as service:
        if on_ready is not None:
            on_ready(service)
        service.serve_forever()


def run_http(server: Server, host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
    """:func:`serve_http`, printing the server's URL on stdout once it listens; returns on
    Ctrl-C."""

    def ready(service: HTTPService) -> None:
        sys.stdout.write(f"{service.url}\n")
        sys.stdout.flush()

    with contextlib.suppress(KeyboardInterrupt):
        serve_http(server, host, port, on_ready=ready, **options)
