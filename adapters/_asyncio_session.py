"""The asyncio session classes, :class:`Client` and :class:`ServerSession`, plus the pipe
protocols of a stdio client. Theory of operation: each class is the shared async session
(``._api``, over the sans-IO session logic of :mod:`mcp_sansio.app.session`) holding an
:class:`~._asyncio_runtime.AsyncioRuntime` (``self.runtime``) for its primitives -- a
composition, not a runtime class mixed in. The public module
:mod:`mcp_sansio.adapters.asyncio` keeps the entry points (``connect_stdio``,
``serve_stdio``, ``run_stdio``) and re-exports these classes, and the HTTP modules import
from here -- so nothing imports back into the public module.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from ._api import AsyncClient, AsyncContext, AsyncServerSession
from ._asyncio_runtime import AsyncioRuntime
from ._stdio import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    LineLogger,
    kill_leftovers,
    signal_group,
)

Context = AsyncContext


# -- the client ----------------------------------------------------------------------------------


class Client(AsyncClient):
    """An MCP client on asyncio (see :class:`~mcp_sansio.adapters._api.AsyncClient` for the
    methods). Made by :func:`connect_stdio`. Cancelling a task that awaits a call sends
    ``notifications/cancelled`` for it."""

    runtime: AsyncioRuntime

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.runtime = AsyncioRuntime(self)
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
            self.conn.close(now=self.runtime.now())
            self.service()
        process = self._process
        out = self.runtime.out
        if out is not None:
            out.close()
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
        await self.runtime.stop_tasks()


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


class ServerSession(AsyncServerSession):
    """One connection served by a :class:`Server` on asyncio."""

    runtime: AsyncioRuntime

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.runtime = AsyncioRuntime(self)
        super().__init__(*args, **kwargs)
