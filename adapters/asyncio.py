"""The asyncio adapter: an MCP client and server over stdio on asyncio's own pipes.

The pump is asyncio's protocol callbacks: bytes read from a pipe go straight into the core
(``Session.feed``), the events are dispatched, the outbox is written to the pipe transport
and one timer handle is re-armed for the core's next deadline. No thread, no queue, no task
per message: a request handler or a waiting caller is the only task involved.

Client::

    async with connect_stdio(["python", "server.py"]) as client:
        tools = await client.list_tools()
        result = await client.call_tool("echo", {"text": "hi"}, timeout=10)

Server::

    server = Server("demo")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    asyncio.run(serve_stdio(server))      # or run_stdio(server)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from mcp_sansio import Era, Notification, RequestId
from mcp_sansio.app.errors import ConnectionClosedError, McpError, RequestTimeout, ToolError
from mcp_sansio.app.keepalive import DEFAULT_MAX_MISSED
from mcp_sansio.app.server import Server

from ._api import AsyncClient, AsyncContext, AsyncServerSession, AsyncSession, _Resumed
from ._stdio import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    STDERR_LOGGER,
    LineLogger,
    ProtectedStdio,
    argv_of,
    env_of,
    kill_leftovers,
    pollable,
    read_all,
    signal_group,
    write_all,
)

__all__ = [
    "Client",
    "ConnectionClosedError",
    "Context",
    "McpError",
    "RequestTimeout",
    "Server",
    "ServerSession",
    "ToolError",
    "connect_stdio",
    "run_stdio",
    "serve_stdio",
    # HTTP (adapters/_http_asyncio.py, adapters/_http_client_asyncio.py)
    "HTTPClientSession",
    "HTTPService",
    "HTTPTransportError",
    "connect_http",
    "run_http",
    "serve_http",
    "start_http",
]

Context = AsyncContext


class _Waiter:
    """A one-shot event on a bare future (lighter than ``asyncio.Event``)."""

    __slots__ = ("_future",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._future: asyncio.Future[None] = loop.create_future()

    def set(self) -> None:
        if not self._future.done():
            self._future.set_result(None)

    def wait(self) -> asyncio.Future[None]:
        return self._future


async def _reraise(exc: BaseException) -> NoReturn:
    raise exc


class _AsyncioRuntime(AsyncSession):
    """The asyncio primitives behind the shared async session."""

    async def _sleep(self, seconds: float) -> None:
        """The runtime's sleep (a task's poll interval, ``_client_tasks.Sleep``)."""
        await asyncio.sleep(seconds)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._tasks: dict[RequestId, asyncio.Task[None]] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._out: asyncio.WriteTransport | None = None
        self._out_fd: int | None = None  # blocking fallback (a regular file)

    def _now(self) -> float:
        return self._loop.time()

    def _arm(self, deadline: float | None) -> None:
        # Lazy: a timer already set for an earlier time stays; when it fires early,
        # handle_timeout finds nothing due and the timer is set again for the real deadline.
        # So a request that only adds a later deadline costs no timer operation at all.
        if deadline is None and self.closed is None:
            return  # nothing due: a timer still set fires once, finds nothing, and stops
        if deadline is not None and self._timer_at is not None and self._timer_at <= deadline:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = deadline
        self._timer = None if deadline is None else self._loop.call_at(deadline, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._timer_at = None
        self.on_timer()

    def _write(self, data: bytes) -> None:
        if self._out is not None:
            if not self._out.is_closing():
                self._out.write(data)
        elif self._out_fd is not None:
            write_all(self._out_fd, data)

    def _new_event(self) -> _Waiter:
        return _Waiter(self._loop)

    def _start_task(self, key: RequestId | None, coro: Coroutine[Any, Any, None]) -> None:
        if key is None:
            task = self._loop.create_task(coro)
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            return
        if self._servicing:
            # A request's handler starts eagerly: Session.service steps it once the events
            # are drained (_run_eager), and it gets a task only if it suspends.
            self._eager[key] = coro
            return
        # Dispatched by another pump (e.g. the HTTP service's): a task, as always.
        task = self._loop.create_task(coro)
        self._track(key, task)

    def _track(self, key: RequestId, task: asyncio.Task[None]) -> None:
        self._tasks[key] = task

        def done(_: asyncio.Task[None], key: RequestId = key) -> None:
            if self._tasks.get(key) is task:
                del self._tasks[key]
        task.add_done_callback(done)

    def _run_eager(self) -> None:
        eager = self._eager
        while eager:
            key = next(iter(eager))
            self._step(key, eager.pop(key))

    def _step(self, key: RequestId, coro: Coroutine[Any, Any, None]) -> None:
        # As a task would run it: in a copy of the context, which the task then keeps.
        context = contextvars.copy_context()
        try:
            first = context.run(coro.send, None)
        except StopIteration:
            return  # done without suspending (answered, if it answers): no task at all
        except BaseException as exc:
            # It ended as a task's first step would end it (e.g. CancelledError,
            # KeyboardInterrupt): let a task end the same way.
            self._loop.create_task(_reraise(exc), context=context)
            return
        self._track(key, self._loop.create_task(_Resumed(coro, first), context=context))

    def _cancel_task(self, key: RequestId) -> bool:
        coro = self._eager.pop(key, None)
        if coro is not None:  # not stepped yet: it never runs
            coro.close()
            return True
        task = self._tasks.pop(key, None)
        if task is None:
            return False
        task.cancel()
        return True

    async def _stop_tasks(self) -> None:
        for coro in self._eager.values():
            coro.close()
        self._eager.clear()
        tasks = [*self._tasks.values(), *self._background]
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._arm(None)


# -- the client ----------------------------------------------------------------------------------


class Client(_AsyncioRuntime, AsyncClient):
    """An MCP client on asyncio (see :class:`~mcp_sansio.adapters._api.AsyncClient` for the
    methods). Made by :func:`connect_stdio`. Cancelling a task that awaits a call sends
    ``notifications/cancelled`` for it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._process: asyncio.SubprocessTransport | None = None
        self._stdout: asyncio.BaseTransport | None = None
        self._exited = asyncio.Event()
        self.returncode: int | None = None

    def _stdout_closed(self) -> None:
        if self.transport_detail is None:
            self.transport_detail = "the server closed its stdout"
        self.feed(b"")

    def _process_exited(self, returncode: int | None) -> None:
        self.returncode = returncode
        self.transport_detail = f"the server process exited with status {returncode}"
        self._exited.set()
        if self.closed is None:
            self.feed(b"")  # its pipes may still be open through a grandchild: it is over

    async def _wait_exit(self, timeout: float | None) -> bool:
        try:
            await asyncio.wait_for(self._exited.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def aclose(self, shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT) -> None:
        """Close the connection and stop the server as the spec says: close its stdin,
        wait, SIGTERM, wait, SIGKILL (to its whole process group)."""
        if self.closed is None:
            self.conn.close(now=self._now())
            self.service()
        process = self._process
        if self._out is not None:
            self._out.close()
        if process is not None:
            pid = process.get_pid()
            if not await self._wait_exit(shutdown_timeout):
                signal_group(pid, signal.SIGTERM)
                if not await self._wait_exit(shutdown_timeout):
                    signal_group(pid, signal.SIGKILL)
                    await self._wait_exit(None)
            kill_leftovers(pid)
            process.close()
        if self._stdout is not None:
            self._stdout.close()
        await self._stop_tasks()


class _ClientPipes(asyncio.SubprocessProtocol):
    def __init__(self, client: Client, stderr: LineLogger) -> None:
        self.client = client
        self.stderr = stderr

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 2:
            self.stderr.feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 2:
            self.stderr.flush()

    def process_exited(self) -> None:
        process = self.client._process
        self.client._process_exited(process.get_returncode() if process else None)


#: How much a read asks for: asyncio's pipe transports ask for 256 KiB, an allocation that
#: the C library serves with mmap/munmap every time (above its 128 KiB threshold): measured
#: 17.5 us per read here against 1.1 us for 64 KiB, the chunk the trio and threading
#: adapters read. Larger messages simply take several reads.
_READ_SIZE = 1 << 16


def _small_reads(transport: asyncio.BaseTransport) -> None:
    """Make a read pipe transport read at most :data:`_READ_SIZE` at a time (its
    ``max_size``, a class attribute of asyncio's unix pipe transport; other loops keep
    their own)."""
    if isinstance(getattr(transport, "max_size", None), int):
        transport.max_size = _READ_SIZE  # type: ignore[attr-defined]


class _ServerOutput(asyncio.Protocol):
    """The server's stdout, on a read pipe of our own: asyncio's subprocess transport hands
    a child's output to its protocol one loop turn late (``call_soon``), which costs a whole
    turn of the loop per answer; a pipe transport delivers each chunk at once."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def data_received(self, data: bytes) -> None:
        self.client.feed(data)

    def eof_received(self) -> bool:
        self.client._stdout_closed()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.client.closed is None:
            self.client._stdout_closed()


@contextlib.asynccontextmanager
async def connect_stdio(
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
) -> AsyncIterator[Client]:
    """Spawn an MCP server (in its own process group) and yield a connected :class:`Client`.

    ``command`` is a program or a whole argv; ``env`` is added to ours (replaces it with
    ``inherit_env=False``). The server's stderr goes to ``stderr_logger`` line by line. The
    callbacks answer the server's requests -- and the stateless era's ``input_required``
    -- and declare the matching client capabilities. ``connection_options`` go to
    :class:`~mcp_sansio.ClientConnection` (``versions``, ``request_timeout``,
    ``max_request_time``, ``probe_timeout``, ...). On exit the server is shut down
    (:meth:`Client.aclose`)."""
    loop = asyncio.get_running_loop()
    client = Client._create(sampling=sampling, elicitation=elicitation, roots=roots,
                           on_notification=on_notification, on_log=on_log, info=info,
                           **connection_options)
    argv = argv_of(command, args)
    out_r, out_w = os.pipe()  # the server's stdout (see _ServerOutput)
    try:
        transport, _ = await loop.subprocess_exec(
            lambda: _ClientPipes(client, LineLogger(stderr_logger)), *argv,
            stdin=asyncio.subprocess.PIPE, stdout=out_w,
            stderr=asyncio.subprocess.PIPE, env=env_of(env, inherit_env), cwd=cwd,
            start_new_session=True,
        )
    except BaseException:
        os.close(out_r)
        raise
    finally:
        os.close(out_w)  # the child has its copy: its exit (or close) is our end of file
    client._process = transport
    stdin = transport.get_pipe_transport(0)
    assert isinstance(stdin, asyncio.WriteTransport)
    client._out = stdin
    try:
        client._stdout, _ = await loop.connect_read_pipe(
            lambda: _ServerOutput(client), os.fdopen(out_r, "rb", buffering=0))
        _small_reads(client._stdout)
        if transport.get_returncode() is not None:
            client._process_exited(transport.get_returncode())
        if connect:
            await client.connect(era=era)
        yield client
    finally:
        await asyncio.shield(client.aclose(shutdown_timeout))


# -- the server ----------------------------------------------------------------------------------


class ServerSession(_AsyncioRuntime, AsyncServerSession):
    """One connection served by a :class:`Server` on asyncio."""


class _ReadPipe(asyncio.Protocol):
    def __init__(self, session: ServerSession) -> None:
        self.session = session

    def data_received(self, data: bytes) -> None:
        self.session.feed(data)

    def eof_received(self) -> bool:
        self.session.feed(b"")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.session.closed is None:
            self.session.feed(b"")


class _WritePipe(asyncio.Protocol):
    def __init__(self) -> None:
        self.lost = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)


async def serve_stdio(
    server: Server, *, stdin_fd: int | None = None, stdout_fd: int | None = None,
    request_state_key: bytes | None = None, keepalive: float | None = None,
    keepalive_misses: int = DEFAULT_MAX_MISSED, **connection_options: Any,
) -> None:
    """Serve one MCP connection on this process's stdin/stdout (or the given descriptors)
    until the client closes stdin. While serving, ``sys.stdout`` and descriptor 1 point at
    stderr, so stray ``print()`` output cannot corrupt the protocol stream.

    ``request_state_key`` seals stateless-era ``requestState`` (a random key by default,
    so state is valid for this process only).

    ``keepalive`` (seconds) pings the client that often (handshake era; spec 2025-11-25
    basic/utilities/ping) and ends the session after ``keepalive_misses`` unanswered in a
    row (``mcp_sansio.app.keepalive``); off by default."""
    loop = asyncio.get_running_loop()
    guard = ProtectedStdio() if stdin_fd is None and stdout_fd is None else None
    in_fd = guard.in_fd if guard else (stdin_fd if stdin_fd is not None else 0)
    out_fd = guard.out_fd if guard else (stdout_fd if stdout_fd is not None else 1)
    conn = server.connection(
        request_state_key=request_state_key or os.urandom(32), **connection_options)
    session = ServerSession(conn, server, keepalive=keepalive,
                            keepalive_misses=keepalive_misses)
    finished = asyncio.Event()
    session._on_closed.append(finished.set)
    reader: asyncio.BaseTransport | None = None
    writer: asyncio.WriteTransport | None = None
    write_pipe = _WritePipe()
    try:
        if pollable(out_fd):
            writer, _ = await loop.connect_write_pipe(
                lambda: write_pipe, os.fdopen(out_fd, "wb", buffering=0, closefd=False))
            session._out = writer
        else:  # a regular file or /dev/null: plain blocking writes
            session._out_fd = out_fd
        if pollable(in_fd):
            reader, _ = await loop.connect_read_pipe(
                lambda: _ReadPipe(session), os.fdopen(in_fd, "rb", buffering=0, closefd=False))
            _small_reads(reader)
        else:  # a regular file or /dev/null: read it whole, then end of file
            session.feed(await loop.run_in_executor(None, read_all, in_fd))
            session.feed(b"")
        await finished.wait()
        await session._stop_tasks()
    finally:
        if reader is not None:
            reader.close()
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(write_pipe.lost, DEFAULT_SHUTDOWN_TIMEOUT)
        if guard is not None:
            guard.close_out()
            guard.restore()


def run_stdio(server: Server, **options: Any) -> None:
    """Blocking entry point: ``asyncio.run(serve_stdio(server))``; Ctrl-C exits quietly."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_stdio(server, **options))
    sys.stderr.flush()


# The HTTP server adapter lives in its own module (it builds on ServerSession above). It is
# loaded on first use, so that a stdio process does not pay for importing h11 and
# mcp_sansio.http at start-up (measured 15-48 ms of cold start).
_HTTP_NAMES = ("HTTPService", "run_http", "serve_http", "start_http")
_HTTP_CLIENT_NAMES = ("HTTPClientSession", "HTTPTransportError", "connect_http")

if TYPE_CHECKING:  # for type checkers and linters; at run time __getattr__ loads them
    from ._http_asyncio import HTTPService, run_http, serve_http, start_http
    from ._http_client_asyncio import HTTPClientSession, HTTPTransportError, connect_http


def __getattr__(name: str) -> Any:
    if name in _HTTP_NAMES:
        from . import _http_asyncio

        return getattr(_http_asyncio, name)
    if name in _HTTP_CLIENT_NAMES:
        from . import _http_client_asyncio

        return getattr(_http_client_asyncio, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
