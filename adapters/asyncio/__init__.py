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
import os
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

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
)
from .runtime import AsyncioRuntime
from .session import AsyncioChild, _ClientPipes, _ServerOutput, _small_reads
from .session import Client as Client
from .session import Context as Context
from .session import ServerSession as ServerSession

# The names every runtime offers, listed once (common/entry_points.py).
__all__ = [*RUNTIME_NAMES]  # noqa: PLE0604


@runs(entry_points.connect_stdio, "On asyncio, cancelling a task that awaits a call sends "
      "``notifications/cancelled`` for it.")
@contextlib.asynccontextmanager
async def connect_stdio(call: StdioClientCall) -> AsyncIterator[Client]:
    loop = asyncio.get_running_loop()
    client = Client._create(**call.client)
    runtime = client.runtime = AsyncioRuntime(client)
    child = client.child = AsyncioChild(client, runtime)
    argv, spawn = call.spawn()
    out_r, out_w = os.pipe()  # the server's stdout (see _ServerOutput)
    try:
        transport, _ = await loop.subprocess_exec(
            lambda: _ClientPipes(child, LineLogger(call.stderr_logger)), *argv,
            stdin=asyncio.subprocess.PIPE, stdout=out_w, stderr=asyncio.subprocess.PIPE, **spawn)
    except BaseException:
        os.close(out_r)
        raise
    finally:
        os.close(out_w)  # the child has its copy: its exit (or close) is our end of file
    child.process = transport
    stdin = transport.get_pipe_transport(0)
    assert isinstance(stdin, asyncio.WriteTransport)
    runtime.out = stdin
    try:
        child.stdout, _ = await loop.connect_read_pipe(
            lambda: _ServerOutput(child), os.fdopen(out_r, "rb", buffering=0))
        _small_reads(child.stdout)
        if transport.get_returncode() is not None:
            child.process_exited(transport.get_returncode())
        if call.connect:
            await client.connect(era=call.era)
        yield client
    finally:
        await asyncio.shield(client.aclose(call.shutdown_timeout))


# -- the server ----------------------------------------------------------------------------------


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


@runs(entry_points.serve_stdio)
async def serve_stdio(call: StdioServeCall) -> None:
    with served_ends(call.stdin_fd, call.stdout_fd) as (in_fd, out_fd):
        await _serve(call.session(ServerSession), in_fd, out_fd)


async def _serve(session: ServerSession, in_fd: int, out_fd: int) -> None:
    loop = asyncio.get_running_loop()
    runtime = session.runtime = AsyncioRuntime(session)
    finished = asyncio.Event()
    session._on_closed += (finished.set,)
    reader: asyncio.BaseTransport | None = None
    writer: asyncio.WriteTransport | None = None
    write_pipe = _WritePipe()
    try:
        if pollable(out_fd):
            writer, _ = await loop.connect_write_pipe(
                lambda: write_pipe, os.fdopen(out_fd, "wb", buffering=0, closefd=False))
            runtime.out = writer
        else:  # a regular file or /dev/null: plain blocking writes
            runtime.out_fd = out_fd
        if pollable(in_fd):
            reader, _ = await loop.connect_read_pipe(
                lambda: _ReadPipe(session), os.fdopen(in_fd, "rb", buffering=0, closefd=False))
            _small_reads(reader)
        else:  # a regular file or /dev/null: read it whole, then end of file
            session.feed(await loop.run_in_executor(None, read_all, in_fd))
            session.feed(b"")
        await finished.wait()
        await runtime.stop_tasks()
    finally:
        if reader is not None:
            reader.close()
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(write_pipe.lost, DEFAULT_SHUTDOWN_TIMEOUT)


def run_stdio(server: Server, **options: Any) -> None:
    """Blocking entry point: ``asyncio.run(serve_stdio(server))``; Ctrl-C exits quietly."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_stdio(server, **options))
    sys.stderr.flush()


# The HTTP names load on first use (common/entry_points.py, load_http).
if TYPE_CHECKING:  # for type checkers and linters; at run time __getattr__ loads them
    from .http_client import HTTPClientSession as HTTPClientSession
    from .http_client import HTTPTransportError as HTTPTransportError
    from .http_client import connect_http as connect_http
    from .http_server import HTTPService as HTTPService
    from .http_server import run_http as run_http
    from .http_server import serve_http as serve_http
    from .http_server import start_http as start_http


__getattr__ = load_http(__name__)
