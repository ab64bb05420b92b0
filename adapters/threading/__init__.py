"""The threading adapter: a blocking MCP client and server over stdio.

One reader thread per connection is the pump: it waits (``selectors``) for the peer's bytes,
the child's stderr and the next deadline, feeds the core and dispatches the events. Writes go
straight to the pipe from whichever thread produced them, under the session's lock. Handlers
and the callbacks that answer a server run in a thread pool (a server's ``async def`` handler
is first stepped on the reader, as on asyncio). All of that is the session's runtime object,
:class:`~mcp_sansio.adapters.threading.runtime.ThreadRuntime` (``session.runtime``); the
server process a client spawned is another object it holds (``client.child``). This module
keeps the stdio entry points and re-exports the rest: :class:`Client` and
:class:`ServerSession` are the blocking colour's classes themselves.

Client::

    with connect_stdio(["python", "server.py"]) as client:
        tools = client.list_tools()
        token = CancelToken()          # token.cancel() from another thread cancels the call
        result = client.call_tool("sleep", {"seconds": 5}, cancel=token, timeout=10)

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mcp_sansio import KeyRing
from mcp_sansio.app.errors import ConnectionClosedError as ConnectionClosedError
from mcp_sansio.app.errors import McpError as McpError
from mcp_sansio.app.errors import RequestCancelledError as RequestCancelledError
from mcp_sansio.app.errors import RequestTimeout as RequestTimeout
from mcp_sansio.app.errors import ToolError as ToolError
from mcp_sansio.app.keepalive import DEFAULT_MAX_MISSED
from mcp_sansio.app.server import Server as Server

from ..common import entry_points
from ..common.entry_points import RUNTIME_NAMES, StdioClientCall, documented, load_http, runs
from ..common.stdio import (
    LineLogger,
    pollable,
    read_all,
    served_ends,
)
from ..keys import request_state_keys
from .runtime import ThreadChild
from .session import CancelToken as CancelToken
from .session import SyncClient, SyncServerSession, ThreadContext

# The names every runtime offers, listed once (common/entry_points.py), and its own.
__all__ = [*RUNTIME_NAMES, "CancelToken", "RequestCancelledError"]  # noqa: PLE0604

Context = ThreadContext
_CHUNK = 1 << 16


#: A blocking MCP client (:class:`~mcp_sansio.adapters.threading.session.SyncClient`), made by
#: :func:`connect_stdio`: the same class over any transport, the server process held as
#: ``client.child``.
Client = SyncClient
#: One connection served by a :class:`Server` on threads
#: (:class:`~mcp_sansio.adapters.threading.session.SyncServerSession`).
ServerSession = SyncServerSession


@runs(entry_points.connect_stdio, "On threads the client blocks; a call takes a "
      "``cancel`` token (:class:`CancelToken`).")
@contextlib.contextmanager
def connect_stdio(call: StdioClientCall) -> Iterator[Client]:
    from ..stdio import spawn_server  # here: a server's cold start does without subprocess

    client = Client._create(**call.client)
    process = spawn_server(call.command, call.args, env=call.env, inherit_env=call.inherit_env,
                           cwd=call.cwd)
    assert process.stdin and process.stdout and process.stderr
    child = client.child = ThreadChild(client, process)
    runtime = client.runtime
    runtime.on_eof = child.on_eof
    runtime.out_fd = process.stdin.fileno()
    runtime.stderr = (process.stderr.fileno(), LineLogger(call.stderr_logger))
    runtime.start_reader(process.stdout.fileno())
    try:
        if call.connect:
            client.connect(era=call.era)
        yield client
    finally:
        client.close(call.shutdown_timeout)


# -- the server ----------------------------------------------------------------------------------


@documented(entry_points.serve_stdio, "On threads the call blocks: the calling thread is the "
            "reader; handlers run in a pool of ``max_workers`` threads.")
def serve_stdio(
    server: Server, *, stdin_fd: int | None = None, stdout_fd: int | None = None,
    request_state_key: bytes | KeyRing | None = None, max_workers: int = 32,
    keepalive: float | None = None,
    keepalive_misses: int = DEFAULT_MAX_MISSED, **connection_options: Any,
) -> None:
    with served_ends(stdin_fd, stdout_fd) as (in_fd, out_fd):
        conn = server.connection(
            request_state_key=request_state_keys(request_state_key), **connection_options)
        session = ServerSession(conn, server, max_workers=max_workers, keepalive=keepalive,
                                keepalive_misses=keepalive_misses)
        runtime = session.runtime
        runtime.out_fd = out_fd
        # async def handlers start on the reader (ThreadRuntime.start_eagerly): measured with
        # benchmarks/stdio_ab.py, server CPU per call, 100 in flight 51.9 -> 19.9 us.
        runtime.eager = True
        try:
            if pollable(in_fd):
                runtime.pump(in_fd)
            else:  # a regular file or /dev/null: read it whole, then end of file
                session.feed(read_all(in_fd))
                session.feed(b"")
        finally:
            runtime.stop_workers()
            runtime.close_pipes()


def run_stdio(server: Server, **options: Any) -> None:
    """:func:`serve_stdio`; Ctrl-C exits quietly."""
    with contextlib.suppress(KeyboardInterrupt):
        serve_stdio(server, **options)


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
