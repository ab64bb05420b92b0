"""The threading adapter: a blocking MCP client and server over stdio.

One reader thread per connection is the pump: it waits (``selectors``) for the peer's bytes,
the child's stderr and the next deadline, feeds the core and dispatches the events. Writes go
straight to the pipe from whichever thread produced them, under the session's lock. Handlers
and the callbacks that answer a server run in a thread pool (a server's ``async def`` handler
is first stepped on the reader, as on asyncio: see :class:`ServerSession`).

Client::

    with connect_stdio(["python", "server.py"]) as client:
        tools = client.list_tools()
        token = CancelToken()          # token.cancel() from another thread cancels the call
        result = client.call_tool("sleep", {"seconds": 5}, cancel=token, timeout=10)

Server::

    server = Server("demo")

    @server.tool()
    def echo(text: str) -> str:
        return text

    run_stdio(server)
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import logging
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mcp_sansio import Era, KeyRing, Notification, Request, RequestId
from mcp_sansio.app.context import Context as SessionContext
from mcp_sansio.app.context import Job
from mcp_sansio.app.errors import (
    ConnectionClosedError,
    McpError,
    RequestCancelledError,
    RequestTimeout,
    ToolError,
)
from mcp_sansio.app.keepalive import DEFAULT_MAX_MISSED
from mcp_sansio.app.server import Server

from ._api import _Resumed
from ._stdio import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    STDERR_LOGGER,
    LineLogger,
    ProtectedStdio,
    pollable,
    read_all,
    write_all,
)
from ._sync_api import (
    CancelToken,
    SyncClient,
    SyncServerSession,
    SyncSession,
    ThreadContext,
)
from .keys import request_state_keys
from .stdio import spawn_server, stop_server

if TYPE_CHECKING:
    import asyncio
else:  # imported when an async def handler first runs: a cold start does without it
    from ._lazy import LazyModule

    asyncio = LazyModule("asyncio", globals())

__all__ = [
    "CancelToken",
    "Client",
    "ConnectionClosedError",
    "Context",
    "McpError",
    "RequestCancelledError",
    "RequestTimeout",
    "Server",
    "ServerSession",
    "ToolError",
    "connect_stdio",
    "run_stdio",
    "serve_stdio",
    # HTTP (adapters/_http_threading.py)
    "HTTPClientSession",
    "HTTPService",
    "HTTPTransportError",
    "connect_http",
    "run_http",
    "serve_http",
    "start_http",
]

Context = ThreadContext
_CHUNK = 1 << 16


class _ThreadRuntime(SyncSession):
    """The pump of one connection: a selector loop over the peer's output (and the child's
    stderr), a wake-up pipe, and the core's next deadline."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._out_fd: int | None = None
        self._deadline: float | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._stderr: tuple[int, LineLogger] | None = None
        self._reader: threading.Thread | None = None

    def _now(self) -> float:
        return time.monotonic()

    def _wall_now(self) -> float | None:
        return time.time()

    def _arm(self, deadline: float | None) -> None:
        # Lazy, as on asyncio: a deadline the reader already waits for stays when the new
        # one is later (or there is none); when it passes early, handle_timeout finds nothing
        # due and the real one is armed (_pump resets it). A nudge wakes the reader thread
        # (a write, a thread switch, a read): before this, every call of a sequential client
        # paid one, its request's deadline going from none to sixty seconds ahead.
        if deadline is None:
            return
        previous = self._deadline
        if previous is not None and deadline >= previous:
            return
        self._deadline = deadline
        self._nudge()

    def _nudge(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"!")

    def _write(self, data: bytes) -> None:
        if self._out_fd is None:
            return
        try:
            write_all(self._out_fd, data)
        except (BrokenPipeError, OSError):
            self._out_fd = None  # the peer is gone; its EOF reaches the reader soon

    def _pump(self, in_fd: int) -> None:
        """Read until end of file (or the connection closes); fire deadlines on time."""
        selector = selectors.DefaultSelector()
        selector.register(in_fd, selectors.EVENT_READ, "in")
        selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        if self._stderr is not None:
            selector.register(self._stderr[0], selectors.EVENT_READ, "err")
        try:
            while self.closed is None:
                deadline = self._deadline
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                for key, _ in selector.select(timeout):
                    if key.data == "in":
                        try:
                            data = os.read(in_fd, _CHUNK)
                        except OSError:
                            data = b""
                        if not data:
                            self._on_eof()
                        self.feed(data)
                    elif key.data == "err":
                        assert self._stderr is not None
                        chunk = os.read(self._stderr[0], _CHUNK)
                        self._stderr[1].feed(chunk)
                        if not chunk:
                            selector.unregister(self._stderr[0])
                    else:
                        os.read(self._wake_r, _CHUNK)
                if self._deadline is not None and time.monotonic() >= self._deadline:
                    self._deadline = None  # passed: on_timer arms the next real one
                    self.on_timer()
        finally:
            selector.close()

    def _on_eof(self) -> None:
        """The peer closed its side (the client records why)."""

    def _close_pipes(self) -> None:
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)


# -- the client ----------------------------------------------------------------------------------


class Client(_ThreadRuntime, SyncClient):
    """A blocking MCP client (see :class:`~mcp_sansio.adapters._sync_api.SyncClient`). Made
    by :func:`connect_stdio`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._process: subprocess.Popen[bytes] | None = None
        self.returncode: int | None = None

    def _on_eof(self) -> None:
        process = self._process
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(0.05)  # usually gone by now: say so in the errors
            if process.returncode is not None:
                self.returncode = process.returncode
                self.transport_detail = (
                    f"the server process exited with status {process.returncode}")
                return
        self.transport_detail = "the server closed its stdout"

    def close(self, shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT) -> None:
        """Close the connection and stop the server: close its stdin, wait, SIGTERM, wait,
        SIGKILL (its whole process group)."""
        with self.lock:
            if self.closed is None:
                self.conn.close(now=self._now())
                self.service()
            self._out_fd = None
        process = self._process
        if process is not None:
            self.returncode = stop_server(process, shutdown_timeout)
        self._nudge()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(shutdown_timeout)
        if process is not None:
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        self._stop_workers()
        self._close_pipes()


@contextlib.contextmanager
def connect_stdio(
    command: str | Sequence[str], args: Sequence[str] = (), *,
    env: Mapping[str, str] | None = None, inherit_env: bool = True,
    cwd: str | os.PathLike[str] | None = None, connect: bool = True, era: Era | None = None,
    sampling: Callable[[dict[str, Any]], Any] | None = None,
    elicitation: Callable[[dict[str, Any]], Any] | None = None,
    roots: Callable[[dict[str, Any]], Any] | list[dict[str, Any]] | None = None,
    on_notification: Callable[[Notification], Any] | None = None,
    on_log: Callable[[dict[str, Any]], Any] | None = None,
    info: Mapping[str, Any] | None = None,
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
    stderr_logger: logging.Logger = STDERR_LOGGER,
    **connection_options: Any,
) -> Iterator[Client]:
    """Spawn an MCP server and yield a connected blocking :class:`Client` (the same options
    as the asyncio adapter's ``connect_stdio``)."""
    client = Client._create(sampling=sampling, elicitation=elicitation, roots=roots,
                           on_notification=on_notification, on_log=on_log, info=info,
                           **connection_options)
    try:
        process = spawn_server(command, args, env=env, inherit_env=inherit_env, cwd=cwd)
    except BaseException:
        client._close_pipes()
        raise
    assert process.stdin and process.stdout and process.stderr
    client._process = process
    client._out_fd = process.stdin.fileno()
    client._stderr = (process.stderr.fileno(), LineLogger(stderr_logger))
    client._reader = threading.Thread(target=client._pump, args=(process.stdout.fileno(),),
                                      name="mcp-sansio-reader", daemon=True)
    client._reader.start()
    try:
        if connect:
            client.connect(era=era)
        yield client
    finally:
        client.close(shutdown_timeout)


# -- the server ----------------------------------------------------------------------------------


class ServerSession(_ThreadRuntime, SyncServerSession):
    """One connection served by a :class:`Server` on threads.

    An ``async def`` handler starts eagerly, as on asyncio: it is stepped once on the
    thread that dispatched it (the reader, once the events of a read are drained), with a
    private event loop set as the running loop. One that returns
    without suspending is answered there -- no pool hand-off, no thread switch, and the
    answers to one read leave in one write. One that suspends goes on in a worker thread,
    which runs that loop until the handler ends (the next eager handler gets a fresh loop).
    So, as on any event loop, an ``async def`` handler must not block before its first
    ``await``. ``def`` handlers, and handshake-era handlers that take ``ctx`` (whose ``ask``
    waits for the client's answer, which only the reader can read), run in the pool.
    Measured with ``benchmarks/stdio_ab.py`` (the example server's echo, server CPU per
    call, paired trials): 100 in flight 51.9 -> 19.9 us, sequential 84.6 -> 57.4 us.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._step_loop: asyncio.AbstractEventLoop | None = None

    def _start_eagerly(self, request: Request, job: Job, ctx: SessionContext) -> bool:
        if not self._servicing or not inspect.iscoroutinefunction(job.fn):
            return False
        if "ctx" in job.kwargs and self.conn.era is not Era.STATELESS:
            return False  # its ask would block the reader until the client answers
        self._eager[request.request_id] = (request, job, ctx)
        return True

    def _cancel_incoming(self, request_id: RequestId) -> None:
        self._eager.pop(request_id, None)  # cancelled in the same read: it never runs
        super()._cancel_incoming(request_id)

    def _stop_workers(self) -> None:
        super()._stop_workers()
        with self.lock:
            loop, self._step_loop = self._step_loop, None
        if loop is not None:
            loop.close()

    def _run_eager(self) -> None:
        eager = self._eager
        while eager:
            key = next(iter(eager))
            self._step(*eager.pop(key))

    def _step(self, request: Request, job: Job, ctx: SessionContext) -> None:
        loop = self._step_loop
        if loop is None:
            loop = self._step_loop = asyncio.new_event_loop()
        coro = self._handle(request, job, ctx)
        context = contextvars.copy_context()  # as a task would run it
        previous = asyncio._get_running_loop()  # a worker may be inside its own loop
        asyncio._set_running_loop(loop)
        try:
            first = context.run(coro.send, None)
        except StopIteration:
            return  # answered (or failed) without suspending
        finally:
            asyncio._set_running_loop(previous)
        self._step_loop = None  # the suspended handler keeps this loop
        self._pool.submit(self._resume, request, loop, coro, first, context, ctx)

    async def _handle(self, request: Request, job: Job, ctx: SessionContext) -> None:
        """The handler and its answer, as ``SyncServerSession._run`` does in a worker."""
        try:
            assert job.fn is not None
            value = await job.fn(*job.args, **job.kwargs)
            result = job.shape(value)
        except asyncio.CancelledError:
            return
        except Exception as exc:
            if not ctx.cancelled:
                self._job_failed(request, exc)
            return
        finally:
            with self.lock:
                self._contexts.pop(request.request_id, None)
                self._cancellers.pop(request.request_id, None)
        if not ctx.cancelled:
            self._finish_request(request.request_id, result, method=request.method)

    def _resume(self, request: Request, loop: asyncio.AbstractEventLoop,
                coro: Coroutine[Any, Any, None], first: Any,
                context: contextvars.Context, ctx: SessionContext) -> None:
        """In a worker: run the suspended handler on its loop until it ends."""
        task = loop.create_task(_Resumed(coro, first), context=context)

        def cancel() -> None:
            loop.call_soon_threadsafe(task.cancel)
        with self.lock:
            if ctx.cancelled:
                task.cancel()
            else:
                self._cancellers[request.request_id] = cancel
        try:
            loop.run_until_complete(task)
        except asyncio.CancelledError:
            pass
        finally:
            with self.lock:
                self._cancellers.pop(request.request_id, None)
            loop.close()


def serve_stdio(
    server: Server, *, stdin_fd: int | None = None, stdout_fd: int | None = None,
    request_state_key: bytes | KeyRing | None = None, max_workers: int = 32,
    keepalive: float | None = None,
    keepalive_misses: int = DEFAULT_MAX_MISSED, **connection_options: Any,
) -> None:
    """Serve one MCP connection on this process's stdin/stdout (or the given descriptors),
    blocking until the client closes stdin. The calling thread is the reader; handlers run
    in a pool of ``max_workers`` threads. Stray ``print()`` output goes to stderr.

    ``keepalive`` (seconds) pings the client that often (handshake era; spec 2025-11-25
    basic/utilities/ping) and ends the session after ``keepalive_misses`` unanswered in a
    row (``mcp_sansio.app.keepalive``); off by default."""
    guard = ProtectedStdio() if stdin_fd is None and stdout_fd is None else None
    in_fd = guard.in_fd if guard else (stdin_fd if stdin_fd is not None else 0)
    out_fd = guard.out_fd if guard else (stdout_fd if stdout_fd is not None else 1)
    conn = server.connection(
        request_state_key=request_state_keys(request_state_key), **connection_options)
    session = ServerSession(conn, server, max_workers=max_workers, keepalive=keepalive,
                            keepalive_misses=keepalive_misses)
    session._out_fd = out_fd
    try:
        if pollable(in_fd):
            session._pump(in_fd)
        else:  # a regular file or /dev/null: read it whole, then end of file
            session.feed(read_all(in_fd))
            session.feed(b"")
    finally:
        session._stop_workers()
        session._close_pipes()
        if guard is not None:
            guard.close_out()
            guard.restore()


def run_stdio(server: Server, **options: Any) -> None:
    """:func:`serve_stdio`; Ctrl-C exits quietly."""
    with contextlib.suppress(KeyboardInterrupt):
        serve_stdio(server, **options)


# The HTTP adapters live in their own modules. They are loaded on first use, so that a stdio
# process does not pay for importing h11 and mcp_sansio.http at start-up.
_HTTP_NAMES = ("HTTPClientSession", "HTTPService", "HTTPTransportError", "connect_http",
               "run_http", "serve_http", "start_http")

if TYPE_CHECKING:  # for type checkers and linters; at run time __getattr__ loads them
    from ._http_threading import (
        HTTPClientSession,
        HTTPService,
        HTTPTransportError,
        connect_http,
        run_http,
        serve_http,
        start_http,
    )


def __getattr__(name: str) -> Any:
    if name in _HTTP_NAMES:
        from . import _http_threading

        return getattr(_http_threading, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
