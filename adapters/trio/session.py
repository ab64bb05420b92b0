"""The trio stdio client's server process; the trio session classes.

Theory of operation: the session classes are the async colour's own
(:class:`~.async_session.AsyncClient`, :class:`~.async_session.AsyncServerSession`, over the
sans-IO session logic of :mod:`mcp_sansio.app.session`): the adapter hands each a
:class:`~.runtime.TrioRuntime` (``session.runtime``) for its primitives, and a stdio
client a :class:`TrioChild` (``client.child``) for its server process -- both composed, not
mixed in, so ``Client`` and ``ServerSession`` here are those classes themselves. The child
watches the process, records why the output ended, and runs the spec's shutdown sequence.
The public module :mod:`mcp_sansio.adapters.trio` keeps the entry points
(``connect_stdio``, ``serve_stdio``, ``run_stdio``) and re-exports these names, and the HTTP
module imports from here -- so nothing imports back into the public module.
"""

from __future__ import annotations

import contextlib
import math
import signal
from collections.abc import AsyncIterator

import trio

from ..common.async_session import AsyncClient, AsyncContext, AsyncServerSession
from ..common.stdio import kill_leftovers, signal_group
from .runtime import TrioRuntime

Context = AsyncContext


#: An MCP client on trio (the async colour's class: see
#: :class:`~.async_session.AsyncClient`). Made by ``connect_stdio``. A call
#: cancelled by its cancel scope sends ``notifications/cancelled``.
Client = AsyncClient
#: One connection served by a :class:`~mcp_sansio.app.server.Server` on trio.
ServerSession = AsyncServerSession


class TrioChild:
    """A stdio client's server process on trio, held by the client (``client.child``): the
    process, why its output ended, and the shutdown (see the module docstring)."""

    def __init__(self, client: AsyncClient, runtime: TrioRuntime,
                 process: trio.Process) -> None:
        self.client = client
        self.runtime = runtime
        self.process = process
        self.exited = trio.Event()
        self.returncode: int | None = None

    def on_eof(self) -> None:
        """(The runtime's hook.) The server closed its stdout."""
        if self.client.transport_detail is None:
            self.client.transport_detail = "the server closed its stdout"

    async def watch(self) -> None:
        """(A task.) Wait for the process to exit and record its status."""
        client = self.client
        self._exited(await self.process.wait())
        if client.closed is None:
            client.feed(b"")

    def _exited(self, returncode: int) -> None:
        if self.exited.is_set():
            return
        client = self.client
        self.returncode = client.returncode = returncode
        client.transport_detail = f"the server process exited with status {returncode}"
        self.exited.set()

    async def _wait_exit(self, timeout: float | None) -> bool:
        # On the process itself, not on :meth:`watch`'s news: a Ctrl-C that trio raised in
        # another of the client's tasks cancels the watcher with the rest, and the stop
        # must still end.
        with trio.move_on_after(math.inf if timeout is None else timeout):
            self._exited(await self.process.wait())
        return self.exited.is_set()

    async def aclose(self, shutdown_timeout: float) -> None:
        """Stop the server: close its stdin, wait, SIGTERM, wait, SIGKILL (its whole
        process group); then stop the client's jobs."""
        process = self.process
        await self.runtime.flush(shutdown_timeout)
        if process.stdin is not None:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await process.stdin.aclose()
        if not await self._wait_exit(shutdown_timeout):
            signal_group(process.pid, signal.SIGTERM)
            if not await self._wait_exit(shutdown_timeout):
                signal_group(process.pid, signal.SIGKILL)
                await self._wait_exit(None)
        kill_leftovers(process.pid)
        self.runtime.stop_tasks()


@contextlib.asynccontextmanager
async def _one_error() -> AsyncIterator[None]:
    """A nursery wraps what escapes it in an exception group; a lone error (the caller's own,
    or a failed connect) is re-raised as itself, as the other adapters raise it."""
    try:
        yield
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
