"""The trio session classes, :class:`Client` and :class:`ServerSession`.

Theory of operation: each is the shared async session (``._api``, over the sans-IO session
logic of :mod:`mcp_sansio.app.session`) holding a :class:`~._trio_runtime.TrioRuntime`
(``self.runtime``) for its primitives -- composed, not mixed in. The public module
:mod:`mcp_sansio.adapters.trio` keeps the entry points (``connect_stdio``, ``serve_stdio``,
``run_stdio``) and re-exports these classes, and the HTTP module imports from here -- so
nothing imports back into the public module.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator
from typing import Any

import trio

from ._api import AsyncClient, AsyncContext, AsyncServerSession
from ._stdio import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    kill_leftovers,
    signal_group,
)
from ._trio_runtime import TrioRuntime

Context = AsyncContext


# -- the client ----------------------------------------------------------------------------------


class Client(AsyncClient):
    """An MCP client on trio (see :class:`~mcp_sansio.adapters._api.AsyncClient`). Made by
    :func:`connect_stdio`. A call cancelled by its cancel scope sends
    ``notifications/cancelled``."""

    runtime: TrioRuntime

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.runtime = TrioRuntime(self)
        self.runtime.on_eof = self._on_eof
        super().__init__(*args, **kwargs)
        self._process: trio.Process | None = None
        self._exited = trio.Event()
        self.returncode: int | None = None

    def _on_eof(self) -> None:
        if self.transport_detail is None:
            self.transport_detail = "the server closed its stdout"

    async def _watch(self, process: trio.Process) -> None:
        returncode = await process.wait()
        self.returncode = returncode
        self.transport_detail = f"the server process exited with status {returncode}"
        self._exited.set()
        if self.closed is None:
            self.feed(b"")

    async def _wait_exit(self, timeout: float) -> bool:
        with trio.move_on_after(timeout):
            await self._exited.wait()
        return self._exited.is_set()

    async def aclose(self, shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT) -> None:
        """Close the connection and stop the server: close its stdin, wait, SIGTERM, wait,
        SIGKILL (its whole process group)."""
        if self.closed is None:
            self.conn.close(now=self._now())
            self.service()
        process = self._process
        if process is not None:
            await self.runtime.flush(shutdown_timeout)
            if process.stdin is not None:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await process.stdin.aclose()
            if not await self._wait_exit(shutdown_timeout):
                signal_group(process.pid, signal.SIGTERM)
                if not await self._wait_exit(shutdown_timeout):
                    signal_group(process.pid, signal.SIGKILL)
                    await self._exited.wait()
            kill_leftovers(process.pid)
        self.runtime.stop_tasks()


class ServerSession(AsyncServerSession):
    """One connection served by a :class:`Server` on trio."""

    runtime: TrioRuntime

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.runtime = TrioRuntime(self)
        super().__init__(*args, **kwargs)


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
