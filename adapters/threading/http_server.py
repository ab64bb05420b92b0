"""The threads' HTTP server: plain sockets and threads + the sans-IO HTTPServer.

Theory of operation: the sans-IO HTTP server is one object for every connection, used under
one lock (:attr:`HTTPService.lock`, also the lock of every MCP session it serves). Around
it: an **accept thread** (``selectors`` on the listening socket and a wake-up socket) makes
a :class:`~mcp_sansio.http.ServerChannel` per connection and hands its non-blocking socket
to the **poller thread**, which waits on every connection at once (``selectors``) and, for
each that is readable in turn, reads it, feeds the channel under the lock and runs the pump
(drain :meth:`~mcp_sansio.http.HTTPServer.next_event` into each HTTP session's logic, then
write :meth:`~mcp_sansio.http.HTTPServer.data_to_send`); a **timer thread** waits until
:meth:`~mcp_sansio.http.HTTPServer.next_deadline`; a **reaper thread** ends lingering
closes (``common/http_options.py``). Handlers run in one pool shared by every session; an
``async def`` handler is first stepped once during the dispatch
(:meth:`_HTTPRuntime._step_now`), so an answer or refusal it makes before suspending is
ready while the request is processed.

Writes go straight to the socket from whichever thread ran the pump, one non-blocking
``send`` each; what the kernel does not take waits in the socket's queue, drained by a
short-lived **flusher thread** (:class:`_Writer`), so a peer that does not read never stalls
the thread that holds the lock. Memory stays bounded: a queue beyond ``max_write_buffer``
drops the connection, one above a high-water mark pauses reading, requests are bounded by
``max_body_size``/``max_header_size``, and at most ``max_connections`` connections exist.
Closing the service stops accepting, shuts every socket down, cancels the running handlers
and joins every thread it started. The client is :mod:`.http_client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import heapq
import inspect
import itertools
import logging
import select
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from mcp_sansio import (
    Era,
    KeyRing,
    Request,
)
from mcp_sansio.app.context import Context, Job
from mcp_sansio.app.http_service import HTTPLink, HTTPServiceBase
from mcp_sansio.app.server import Server
from mcp_sansio.http import HTTPServer, ServerChannel, Session

from ..common import http_options, serving
from ..common.deciders import thread_decider
from ..common.entry_points import documented, runs
from ..common.http_options import DEFAULT_LINGER_BYTES, DEFAULT_LINGER_TIME, UDS_HOST, unix_listener
from ..common.listen_error import listening
from ..stores.home import OffLoopShare, locked_enter
from .runtime import ThreadRuntime, loop_running_here, step_once
from .session import SyncServerSession

__all__ = ["DEFAULT_MAX_CONNECTIONS", "DEFAULT_MAX_WORKERS", "DEFAULT_MAX_WRITE_BUFFER",
           "HTTPService", "run_http", "serve_http", "start_http"]

#: Unread output (bytes) a socket may hold before its connection is dropped.
DEFAULT_MAX_WRITE_BUFFER = serving.DEFAULT_MAX_WRITE_BUFFER

log = logging.getLogger("mcp_sansio.adapters.http")

#: TCP connections served at once: 1,024 (one poller thread reads them all); beyond the cap
#: clients wait in the listen backlog until one closes.
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

#: A handler's task that ended cancelled (its request is not answered: the client left).
_CANCELLED: Any = object()
#: Idle event loops kept for stepping stateless-era async handlers (one is taken per step
#: and returned unless the handler suspends, when it goes on with the handler).
_MAX_STEPPERS = 4


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Close a handler's loop, cancelling what the handler left running on it."""
    try:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
    finally:
        loop.close()


class _HTTPRuntime(ThreadRuntime):
    """The thread runtime of one HTTP session's logic (the service's lock and handler pool,
    ``session.link`` to the service). What differs from stdio is when an ``async def``
    handler is first stepped: at once, during the dispatch (:meth:`start_eagerly`)."""

    __slots__ = ()

    def end(self) -> None:
        """Its session closed: stop the handlers it still runs."""
        self.cancel_handlers()

    def start_eagerly(self, request: Request, job: Job, ctx: Context) -> bool:
        # Stepped during the dispatch: every stateless-era one, and a handshake-era one
        # that takes no ctx (it cannot ask the client, the one thing that would block).
        if not inspect.iscoroutinefunction(job.fn):
            return False
        if "ctx" in job.kwargs and self.session.conn.era is not Era.STATELESS:
            return False
        if loop_running_here():  # a worker inside its handler's loop: to the pool
            return False
        self._step_now(request, job, ctx)
        return True

    @property
    def _service(self) -> HTTPService:
        link = self.session.link
        assert isinstance(link, HTTPLink)
        return cast("HTTPService", link.service_base)

    def _step_now(self, request: Request, job: Job, ctx: Context) -> None:
        """Step a stateless-era ``async def`` handler once, here, during the dispatch (the
        pump's thread, the lock held), as the asyncio adapter does: one that answers or
        refuses before it first suspends does so while the HTTP server is still processing
        the request, so the answer is plain JSON and a refusal gets its HTTP status (a
        missing client capability, -32021, MUST be a 400: 2026-07-28 ``basic/index.mdx``).
        Only one that suspends goes on in the pool, on the event loop it was stepped with.
        (A handshake-era handler that takes ``ctx`` runs in the pool: its ``ask`` blocks
        until the client answers, which needs the pump.)"""
        assert job.fn is not None
        session = cast("SyncServerSession", self.session)
        service = self._service
        loop = service._steppers.pop() if service._steppers else asyncio.new_event_loop()
        context = contextvars.copy_context()
        try:
            coro = job.fn(*job.args, **job.kwargs)
            done, first = step_once(loop, coro, context)  # its value, or its task
            if done:
                service._stepped(loop)
                self._done(request, job, ctx, first)
                return
        except asyncio.CancelledError:
            service._stepped(loop)
            session._contexts.pop(request.request_id, None)
            return
        except Exception as exc:
            service._stepped(loop)
            session._contexts.pop(request.request_id, None)
            session._job_ended(request, job, ctx, error=exc)
            return
        self.pool.submit(self._resume_stepped, request, job, ctx, loop, first)

    def _resume_stepped(self, request: Request, job: Job, ctx: Context,
                        loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        """(A pool thread.) Run a suspended handler to its end on its own loop."""
        request_id = request.request_id
        session = cast("SyncServerSession", self.session)
        self.cancel_with(request_id, ctx, loop, task)
        try:
            value = loop.run_until_complete(task)
        except asyncio.CancelledError:
            value = _CANCELLED
        except Exception as exc:
            with self.lock:
                self.cancellers.pop(request_id, None)
                session._contexts.pop(request_id, None)
                session._job_ended(request, job, ctx, error=exc)
            return
        finally:
            _close_loop(loop)
        with self.lock:
            self.cancellers.pop(request_id, None)
            if value is _CANCELLED:
                session._contexts.pop(request_id, None)
            else:
                self._done(request, job, ctx, value)

    def _done(self, request: Request, job: Job, ctx: Context, value: Any) -> None:
        """(The lock held.) A handler returned ``value``: shape it and answer."""
        session = cast("SyncServerSession", self.session)
        session._contexts.pop(request.request_id, None)
        session._job_ended(request, job, ctx, value)

    def cancel_handlers(self) -> None:
        """The session ended: its running handlers are cancelled (the pool is shared)."""
        session = cast("SyncServerSession", self.session)
        for request_id in list(session._contexts):
            session._cancel_incoming(request_id)
        cancellers = list(self.cancellers.values())
        self.cancellers.clear()
        for cancel in cancellers:
            cancel()


class _Writer:
    """The output side of one TCP connection, shared by the server's and the client's
    sockets: what the kernel takes is written at once by the calling thread; the rest waits
    in a bounded queue, written by a flusher thread that exists only while the peer is
    behind. ``sock`` may be set later (a client socket still connecting: its output waits).

    Only the socket's reader (a server's: the poller) closes the descriptor, after every
    other use has ended (no thread can then use a number the system has given to a new
    socket)."""

    def __init__(self, sock: socket.socket | None, max_write_buffer: int) -> None:
        self.sock = sock
        self.max_write_buffer = max_write_buffer
        self._lock = threading.Lock()
        self._queue: deque[bytes] = deque()
        self._queued = 0
        self._closing = False  # close once the queue is written
        self._dead = False  # shut down: nothing more is written
        self._released = False  # the descriptor is closed (by the reader, last)
        self._flusher: threading.Thread | None = None

    def send(self, data: bytes) -> bool:
        """Write now what the kernel takes, queue the rest; False: the connection is over
        (broken, or its queue passed ``max_write_buffer`` and it was dropped)."""
        with self._lock:
            if self._dead:
                return False
            if not self._queue and self.sock is not None:
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
            if self._queued > self.max_write_buffer:
                log.warning("dropping a connection whose peer does not read (%d bytes unread)",
                            self._queued)
                self._shutdown()
                return False
            self._start_flusher()
            return True

    def close_after_flush(self) -> None:
        with self._lock:
            self._closing = True
            if not self._queue and self.sock is not None:
                self._finish()

    def abort(self) -> None:
        with self._lock:
            self._shutdown()

    def _attach(self, sock: socket.socket) -> bool:
        """The socket is open: write what waited for it. False: closed meanwhile."""
        with self._lock:
            if self._dead:
                return False
            self.sock = sock
            if self._queue:
                self._start_flusher()
            elif self._closing:
                self._finish()
            return True

    def _start_flusher(self) -> None:
        """(Lock held.)"""
        if self._flusher is None and self.sock is not None:
            self._flusher = threading.Thread(target=self._flush, daemon=True,
                                             name="mcp-sansio-http-flusher")
            self._flusher.start()

    def _finish(self) -> None:
        """(Lock held.) Everything is written and the connection is over: shut it down
        (a server's socket lingers first: :meth:`_Socket._finish`)."""
        self._shutdown()

    def _shutdown(self) -> None:
        """(Lock held.) Shut the socket down: a FIN after what the kernel holds, and the
        reader's ``recv`` returns (a server's poller reads the end)."""
        if not self._dead:
            self._dead = True
            self._queue.clear()
            self._queued = 0
            if self.sock is not None:
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_RDWR)
        self._drained_now()

    def _drained_now(self) -> None:
        """(Lock held.) The queue fell to the high water, or the connection is over (a
        server's socket is then read again: :meth:`_Socket._drained_now`)."""

    def _flush(self) -> None:
        """The flusher: write the queue as the peer reads it, then end."""
        assert self.sock is not None
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLOUT)
        while True:
            with self._lock:
                if self._dead or not self._queue:
                    self._flusher = None
                    if self._closing:
                        self._finish()
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
                if self._queued <= http_options.HIGH_WATER:
                    self._drained_now()

    def _release(self) -> None:
        """(The reader, last.) Shut down, wait for the flusher, close the descriptor."""
        self.abort()
        flusher = self._flusher
        if flusher is not None:
            flusher.join()
        if self.sock is not None:
            with self._lock:  # (the reaper may be shutting it down: _Socket.abort)
                self._released = True
                self.sock.close()


class _Socket(_Writer):
    """One accepted TCP connection: its (non-blocking) socket and its channel, read by the
    service's poller thread (:meth:`HTTPService._poll`)."""

    def __init__(self, service: HTTPService, sock: socket.socket, channel: ServerChannel
                 ) -> None:
        super().__init__(sock, service.max_write_buffer)
        self.service = service
        self.channel = channel
        #: The answer is out and the write side shut: the lingering close is under way
        #: (adapters/common/http_options.py): the poller discards what comes until the client
        #: closes, ``linger_bytes`` were read, or the service's reaper ends it.
        self.lingering = False
        self.discarded = 0  # bytes read after the channel was over (the lingering close)
        self.paused = False  # not polled: its peer is behind (queue above the high water)

    def _finish(self) -> None:
        """(Lock held.) The lingering close: half-close (the client sees the end of the
        answer) and leave the read side to the poller; the service's reaper shuts the
        socket down ``linger_time`` seconds from now if the client has not closed by then."""
        if self._dead:
            return
        self._dead = True
        self._queue.clear()
        self._queued = 0
        self._drained_now()
        assert self.sock is not None
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:  # broken: the poller finds out
            return
        self.lingering = True
        self.service._reap_at(self, time.monotonic() + self.service.linger_time)

    def _drained_now(self) -> None:
        """(Lock held.) The queue fell to the high water, or the connection is over: a
        paused socket is polled again."""
        if self.paused:
            self.paused = False
            self.service._resume(self)

    def pause_if_behind(self) -> bool:
        """(The poller.) Backpressure: a peer that does not read what we write is not read
        from until its queue falls to the high water (True: paused, to be unregistered)."""
        with self._lock:
            if self._queued > http_options.HIGH_WATER and not self._dead:
                self.paused = True
            return self.paused

    def abort(self) -> None:
        with self._lock:
            if self.lingering and not self._released:
                assert self.sock is not None
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_RDWR)  # the poller reads the end
            self._shutdown()

    def read_once(self) -> bool:
        """(The poller, its socket readable.) Read what is there and feed it to the channel
        under the service's lock; True: the connection is over (the poller then ends it)."""
        service, channel, sock = self.service, self.channel, self.sock
        assert sock is not None
        lost = False
        try:
            data = sock.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            data, lost = b"", True
        with service.lock:
            if not channel.closed:
                try:
                    if lost:
                        channel.connection_lost(now=time.monotonic())
                    else:
                        channel.receive_data(data, now=time.monotonic(),
                                             wall_time=time.time())
                    service._pump()
                except Exception:  # a bug: this connection alone ends
                    service._contain(channel)  # (common/http_server.py) with a 500,
                    service._safe_pump()  # written; the poller then lingers
            else:
                self.discarded += len(data)
        return not data or self.discarded > service.linger_bytes

    def end(self) -> None:
        """(The poller, the socket unregistered.) The connection is over: release it."""
        service, channel = self.service, self.channel
        try:
            self.abort()
            with service.lock:
                service._sockets.pop(channel, None)
                if not channel.closed:
                    try:
                        channel.connection_lost(now=time.monotonic())
                    except Exception:  # logged: the socket must still be released
                        service._work_failed()
                    service._safe_pump()
                service._room.notify()
        finally:
            self._release()


class HTTPService(serving.ServiceState, HTTPServiceBase[SyncServerSession]):
    """A running HTTP server on threads (made by :func:`start_http`)."""

    def __init__(self, server: Server, http: HTTPServer, *, max_write_buffer: int,
                 max_connections: int, max_workers: int, shutdown_timeout: float) -> None:
        super().__init__(server, http)
        #: Held around every use of :attr:`http` and of the sessions' connections.
        self.lock = threading.RLock()
        self.max_write_buffer = max_write_buffer
        self.max_connections = max_connections
        self.shutdown_timeout = shutdown_timeout
        # The reaper's heap of lingering sockets, under a lock of its own (taken while a
        # socket's lock is held, never the other way round).
        self._reap: list[tuple[float, int, _Socket]] = []
        self._reap_seq = itertools.count()
        self._reap_lock = threading.Lock()
        self._reap_wake = threading.Condition(self._reap_lock)
        self._reaping = True
        self._pool = ThreadPoolExecutor(max_workers=max_workers,
                                        thread_name_prefix="mcp-sansio-handler")
        self._sockets: dict[ServerChannel, _Socket] = {}
        # The poller: one selector over every connection's socket, woken through a socket
        # pair to register what ``_polled`` holds (new or resumed connections).
        self._selector = selectors.DefaultSelector()
        self._poll_r, self._poll_w = socket.socketpair()
        self._poll_r.setblocking(False)
        self._poll_w.setblocking(False)
        self._polled: deque[_Socket] = deque()
        self._polling = True
        self._poller = threading.Thread(target=self._poll, name="mcp-sansio-http-poller",
                                        daemon=True)
        self._steppers: list[asyncio.AbstractEventLoop] = []
        self._pumping = False
        self._timer = threading.Condition(self.lock)
        self._timer_at: float | None = None
        self._room = threading.Condition(self.lock)  # a connection slot became free
        self._closed = False
        self._stopped = threading.Event()
        self._listener: socket.socket | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._threads: list[threading.Thread] = []

    def _broadcast(self, method: str, params: Mapping[str, Any] | None) -> None:
        if self._shared is not None:  # every worker's sessions: through the bus
            self._shared.broadcast_soon(method, params)
            return
        with self.lock:
            super()._broadcast(method, params)

    # -- the pump (the caller holds the lock) ----------------------------------------------

    def _pump(self) -> None:
        drained = self._sync_drain()
        if self._shared is not None:  # a shared server's store effects (stores/driver.py)
            self._shared.kick()
        if not drained:
            return
        deadline = self.http.next_deadline()
        if deadline is not None and (self._timer_at is None or deadline < self._timer_at):
            self._timer_at = deadline
            self._timer.notify()

    _kick = _pump

    def _safe_pump(self) -> None:
        """(Lock held.) The pump where no single connection's read is there to contain
        what it raises: logged, and the server goes on."""
        try:
            self._pump()
        except Exception:
            self._work_failed()

    def _new_logic(self, session: Session) -> SyncServerSession:
        """The session logic of a new HTTP session: the plain blocking server session,
        holding the HTTP thread runtime (this service's lock and pool; async handlers
        stepped during the dispatch) and its link to this service."""
        logic = SyncServerSession(session.connection, self.server, pool=self._pool,
                                  lock=self.lock, runtime_class=_HTTPRuntime)
        logic.runtime.eager = True
        logic.link = HTTPLink(self, session)
        return logic

    def _stepped(self, loop: asyncio.AbstractEventLoop) -> None:
        """(The lock held.) A handler stepped on ``loop`` ended without suspending: keep
        the loop for the next one, unless it left tasks behind (they run in the pool)."""
        if asyncio.all_tasks(loop):
            try:
                self._pool.submit(_close_loop, loop)
            except RuntimeError:  # closing: the pool takes no more work
                loop.close()
        elif len(self._steppers) < _MAX_STEPPERS and not self._closed:
            self._steppers.append(loop)
        else:
            loop.close()

    def _write(self, channel: ServerChannel, data: bytes) -> None:
        sock = self._sockets.get(channel)
        if sock is None or (data and not sock.send(data)):
            if not channel.closed:
                channel.connection_lost(now=time.monotonic())
            return
        if channel.closed:
            sock.close_after_flush()

    # -- threads -----------------------------------------------------------------------------

    def _listen(self, host: str, port: int, backlog: int, uds: str | None = None) -> None:
        if uds is not None:  # a Unix socket (common/http_options.py); the URL names the Host
            listener = unix_listener(uds, backlog)
            self.address = (UDS_HOST, 80)
        else:
            with listening(host, port):
                family = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                            flags=socket.AI_PASSIVE)[0][0]
                listener = socket.create_server((host, port), family=family, backlog=backlog)
            sockname = listener.getsockname()
            self.address = (sockname[0], sockname[1])
        listener.setblocking(False)
        self._listener = listener
        self._poller.start()
        for target, name in ((self._accept, "mcp-sansio-http-accept"),
                             (self._run_timer, "mcp-sansio-http-timer"),
                             (self._run_reaper, "mcp-sansio-http-reaper")):
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
                sock.setblocking(False)
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with self.lock:
                    if self._closed:
                        sock.close()
                        return
                    channel = self.http.new_channel(now=time.monotonic())
                    conn = _Socket(self, sock, channel)
                    self._sockets[channel] = conn
                self._resume(conn)
        finally:
            selector.close()

    def _resume(self, conn: _Socket) -> None:
        """(Any thread.) Have the poller poll ``conn``: a new connection, or one that was
        paused (its peer caught up, or the connection is over)."""
        self._polled.append(conn)
        with contextlib.suppress(OSError):  # (full: the poller is awake already)
            self._poll_w.send(b"!")

    def _poll(self) -> None:
        """The poller thread: waits on every connection's socket at once and reads each
        that is ready, in turn, feeding its channel under the lock. One thread for all, not
        one per connection: every read would otherwise wake a thread that then waits for
        the lock and the interpreter, in whatever order the system picks (benchmarks/
        README.md, the threads' tail)."""
        selector, polled = self._selector, self._polled
        selector.register(self._poll_r, selectors.EVENT_READ, None)
        try:
            while True:
                for key, _ in selector.select():
                    conn: _Socket | None = key.data
                    if conn is None:
                        with contextlib.suppress(OSError):
                            self._poll_r.recv(4096)
                        continue
                    try:
                        over = conn.read_once()
                        if not over and not conn.pause_if_behind():
                            continue
                    except Exception:  # pragma: no cover - a bug in the poller: drop it
                        log.exception("reading an HTTP connection failed")
                        over = True
                    selector.unregister(key.fileobj)
                    if over:
                        conn.end()
                while polled:
                    conn = polled.popleft()
                    if conn.sock is not None and not conn._released:
                        with contextlib.suppress(KeyError, ValueError):
                            selector.register(conn.sock, selectors.EVENT_READ, conn)
                if not self._polling and not self._sockets:
                    return
        except Exception:  # pragma: no cover - a bug in the poller itself
            log.exception("the poller of the HTTP connections failed")
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
                    try:
                        http.handle_timeout(now)
                    except Exception:  # logged; the failing entry is off the heap
                        self._work_failed()
                    self._safe_pump()
                    continue
                self._timer_at = deadline
                self._timer.wait(None if deadline is None else deadline - now)

    def _reap_at(self, sock: _Socket, when: float) -> None:
        """A socket lingers: shut it down at ``when`` unless it is over by then."""
        with self._reap_lock:
            heapq.heappush(self._reap, (when, next(self._reap_seq), sock))
            self._reap_wake.notify()

    def _run_reaper(self) -> None:
        """The reaper thread: ends lingering closes that reach ``linger_time`` (a client
        that neither closes nor stops sending): the poller then reads their end."""
        heap = self._reap
        while True:
            with self._reap_lock:
                while self._reaping and (not heap or heap[0][0] > time.monotonic()):
                    self._reap_wake.wait(heap[0][0] - time.monotonic() if heap else None)
                if not self._reaping:
                    return
                now = time.monotonic()
                due = []
                while heap and heap[0][0] <= now:
                    due.append(heapq.heappop(heap)[2])
            for sock in due:
                sock.abort()

    # -- lifetime ----------------------------------------------------------------------------

    def serve_forever(self) -> None:
        """Block until :meth:`close` is called (from another thread or a handler)."""
        self._stopped.wait()

    def stop_accepting(self, timeout: float = 1.0) -> None:
        """Stop accepting new connections and close the listener (a new connection is
        refused) while those already open go on: a graceful stop's first step. The accept
        thread, woken, ends; one parked at ``max_connections`` ends when it next wakes,
        the listener then staying open (its backlog unserved) until :meth:`close`."""
        with contextlib.suppress(OSError):
            self._wake_w.send(b"!")
        for thread in self._threads:
            if thread.name == "mcp-sansio-http-accept":
                thread.join(timeout)
                if thread.is_alive():
                    return
        if self._listener is not None:
            self._listener.close()

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
            logics = self._detach_logics()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"!")
        with self._reap_lock:
            self._reaping = False
            self._reap_wake.notify()
        for thread in self._threads:
            thread.join()
        for conn in sockets:
            conn.abort()
        self._polling = False  # the poller ends each connection, then itself
        with contextlib.suppress(OSError):
            self._poll_w.send(b"!")
        if self._poller.ident is not None:
            self._poller.join()
        with self.lock:
            for logic in logics:
                runtime = logic.runtime
                assert isinstance(runtime, _HTTPRuntime)
                runtime.cancel_handlers()
            steppers, self._steppers = self._steppers, []
        for loop in steppers:
            loop.close()
        # A plain def handler can only be asked to stop: wait for the pool a bounded time.
        waiter = threading.Thread(target=self._pool.shutdown,
                                  kwargs={"wait": True, "cancel_futures": True}, daemon=True)
        waiter.start()
        waiter.join(self.shutdown_timeout)
        if waiter.is_alive():
            log.warning("HTTP service closed with handlers still running")
        for sock in (self._listener, self._wake_r, self._wake_w, self._poll_r, self._poll_w):
            if sock is not None:
                sock.close()
        self._stopped.set()


@documented(serving.start_http,
            "On threads the server runs in background threads: handlers in a pool of "
            "``max_workers`` threads; at most ``max_connections`` connections are served "
            "at once, more wait in the listen ``backlog``; closing waits at most "
            "``shutdown_timeout`` seconds for handlers still running.")
@contextlib.contextmanager
def start_http(
    server: Server, host: str = "127.0.0.1", port: int = 0, *,
    request_state_key: bytes | KeyRing | None = None,
    connection_options: Mapping[str, Any] | None = None,
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    max_workers: int = DEFAULT_MAX_WORKERS,
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
    backlog: int = 128,
    new_session_id: Callable[[], str] | None = None,
    linger_time: float = DEFAULT_LINGER_TIME,
    linger_bytes: int = DEFAULT_LINGER_BYTES,
    **http_options: Any,
) -> Iterator[HTTPService]:
    uds = http_options.pop("uds", None)  # a Unix socket's path instead of host:port
    share = OffLoopShare.take(http_options)  # ``stores=``: shared (stores/home.py)
    if share is not None:
        request_state_key = share.prepare(http_options, request_state_key)
    http = serving.http_server_of(serving.HTTPServeCall(
        server, host, port, request_state_key, connection_options, max_write_buffer,
        new_session_id, linger_time, linger_bytes, http_options))
    service = HTTPService(server, http, max_write_buffer=max_write_buffer,
                          max_connections=max_connections, max_workers=max_workers,
                          shutdown_timeout=shutdown_timeout)
    service.linger_time, service.linger_bytes = linger_time, linger_bytes
    http.on_decision_needed = thread_decider(service)  # parked exchanges (common.deciders)
    try:
        if share is not None:
            service._shared = share.start(server, http, service._safe_pump,
                                          locked_enter(service.lock))
        service._listen(host, port, backlog, uds)
        yield service
    finally:
        service.close()
        if share is not None:
            share.close(server)


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


run_http = runs(serving.run_http)(serving.http_runner('threading', __name__))
