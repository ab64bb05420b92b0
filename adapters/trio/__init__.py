"""The trio adapter: an MCP client and server over stdio on trio's process and fd streams.

The client's pump is one task per connection: it waits for the peer's bytes inside a cancel
scope whose deadline is the core's next deadline (moved whenever the core's changes), feeds
the core and dispatches the events. On the server the handler runners take turns reading
(:meth:`TrioRuntime.serve_fd`) and a timer task keeps that deadline. Writes go straight to
the pipe when it has room; what does not fit is handed to one writer task (``send_all`` must
be awaited; the core's outbox is filled synchronously). Handlers are queued for runner tasks
(:meth:`TrioRuntime._runner`): a runner steps each in a fresh copy of the context and in its
cancel scope, which a ``notifications/cancelled`` cancels; one that returns without waiting
costs no task of its own, one that waits keeps its runner and another takes the rest. Idle
runners wait for more (up to :data:`_IDLE_TASKS`). Needs the ``trio`` extra.

Client::

    async with connect_stdio(["python", "server.py"]) as client:
        with trio.move_on_after(5):        # leaving the scope cancels the call
            result = await client.call_tool("sleep", {"seconds": 30})

Server::

    trio.run(serve_stdio, server)          # or run_stdio(server)
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import trio

from mcp_sansio.app.errors import ConnectionClosedError as ConnectionClosedError
from mcp_sansio.app.errors import McpError as McpError
from mcp_sansio.app.errors import RequestTimeout as RequestTimeout
from mcp_sansio.app.errors import ToolError as ToolError
from mcp_sansio.app.server import Server as Server

from ..common import entry_points
from ..common.entry_points import RUNTIME_NAMES, StdioClientCall, StdioServeCall, load_http, runs
from ..common.stdio import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    LineLogger,
    pollable,
    read_all,
    served_ends,
    write_all,
)
from .runtime import _CHUNK, TrioRuntime
from .session import Client as Client
from .session import Context as Context
from .session import ServerSession as ServerSession
from .session import TrioChild, _one_error

# The names every runtime offers, listed once (common/entry_points.py).
__all__ = [*RUNTIME_NAMES]  # noqa: PLE0604


async def _log_stderr(stream: trio.abc.ReceiveStream, lines: LineLogger) -> None:
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while data := await stream.receive_some(_CHUNK):
            lines.feed(bytes(data))
    lines.flush()


@runs(entry_points.connect_stdio, "On trio, a call cancelled by its cancel scope sends "
      "``notifications/cancelled``.")
@contextlib.asynccontextmanager
async def connect_stdio(call: StdioClientCall) -> AsyncIterator[Client]:
    client = Client._create(**call.client)
    argv, spawn = call.spawn()
    process = await trio.lowlevel.open_process(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **spawn)
    assert process.stdin and process.stdout and process.stderr
    runtime = client.runtime = TrioRuntime(client)
    child = client.child = TrioChild(client, runtime, process)
    runtime.on_eof = child.on_eof
    if isinstance(process.stdin, trio.lowlevel.FdStream):
        runtime.out_fd = process.stdin.fileno()
    async with _one_error(), trio.open_nursery() as nursery:
        runtime.nursery = nursery
        nursery.start_soon(runtime.writer, process.stdin)
        nursery.start_soon(runtime.pump, process.stdout)
        nursery.start_soon(_log_stderr, process.stderr, LineLogger(call.stderr_logger))
        nursery.start_soon(child.watch)
        try:
            if call.connect:
                await client.connect(era=call.era)
            yield client
        finally:
            with trio.CancelScope(shield=True):
                await client.aclose(call.shutdown_timeout)
            nursery.cancel_scope.cancel()


# -- the server ----------------------------------------------------------------------------------


@runs(entry_points.serve_stdio)
async def serve_stdio(call: StdioServeCall) -> None:
    with served_ends(call.stdin_fd, call.stdout_fd) as (in_fd, out_fd):
        await _serve(call.session(ServerSession), in_fd, out_fd)


async def _serve(session: ServerSession, in_fd: int, out_fd: int) -> None:
    runtime = session.runtime = TrioRuntime(session)
    # A close not caused by the input (keepalive's missed pings) ends serving too; the
    # runner still waiting on the input is cancelled with the nursery below.
    session._on_closed += (runtime.done.set,)
    reader = trio.lowlevel.FdStream(os.dup(in_fd)) if pollable(in_fd) else None
    writer: trio.abc.SendStream = (trio.lowlevel.FdStream(os.dup(out_fd)) if pollable(out_fd)
                                   else _BlockingWriter(out_fd))
    in_blocking = os.get_blocking(in_fd)
    if isinstance(writer, trio.lowlevel.FdStream):
        runtime.out_fd = writer.fileno()
    try:
        async with trio.open_nursery() as nursery:
            runtime.nursery = nursery
            nursery.start_soon(runtime.writer, writer)
            if reader is not None:
                await runtime.serve_fd(reader.fileno())
            else:  # a regular file or /dev/null: read it whole, then end of file
                session.feed(await trio.to_thread.run_sync(read_all, in_fd))
                session.feed(b"")
            runtime.stop_tasks()
            await runtime.flush(DEFAULT_SHUTDOWN_TIMEOUT)
            nursery.cancel_scope.cancel()
    finally:
        if reader is not None:
            with contextlib.suppress(OSError):
                await reader.aclose()
        with contextlib.suppress(OSError):
            await writer.aclose()
        with contextlib.suppress(OSError):
            os.set_blocking(in_fd, in_blocking)


class _BlockingWriter(trio.abc.SendStream):
    """Plain blocking writes, for a stdout that cannot be polled (a file, /dev/null)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        write_all(self.fd, bytes(data))

    async def wait_send_all_might_not_block(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def run_stdio(server: Server, **options: Any) -> None:
    """Blocking entry point: ``trio.run(serve_stdio, server)``; Ctrl-C exits quietly."""
    try:
        trio.run(lambda: serve_stdio(server, **options))
    except KeyboardInterrupt:
        pass
    except BaseExceptionGroup as group:
        # Ctrl-C delivered while a nursery runs arrives wrapped in its exception group.
        _interrupt, rest = group.split(KeyboardInterrupt)
        if rest is not None:
            raise


# The HTTP names load on first use (common/entry_points.py, load_http).
if TYPE_CHECKING:  # for type checkers and linters; at run time __getattr__ loads them
    from mcp_sansio.app.http_client import HTTPTransportError as HTTPTransportError

    from .http_client import HTTPClientSession as HTTPClientSession
    from .http_client import connect_http as connect_http
    from .http_server import HTTPService as HTTPService
    from .http_server import run_http as run_http
    from .http_server import serve_http as serve_http
    from .http_server import start_http as start_http


__getattr__ = load_http(__name__)
