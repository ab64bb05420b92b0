"""The asyncio stdio client's server process and pipes; the asyncio session classes.

Theory of operation: the session classes are the async colour's own
(:class:`~.async_session.AsyncClient`, :class:`~.async_session.AsyncServerSession`, over the
sans-IO session logic of :mod:`mcp_sansio.app.session`): the adapter hands each an
:class:`~.runtime.AsyncioRuntime` (``session.runtime``) for its primitives, and a
stdio client an :class:`AsyncioChild` (``client.child``) for its server process -- both
composed, not mixed in, so ``Client`` and ``ServerSession`` here are those classes
themselves. The child holds the process transport, the server's stdout on a read pipe of
our own (:class:`_ServerOutput`), why the output ended, and the spec's shutdown sequence.
The public module :mod:`mcp_sansio.adapters.asyncio` keeps the entry points
(``connect_stdio``, ``serve_stdio``, ``run_stdio``) and re-exports these names, and the HTTP
modules import from here -- so nothing imports back into the public module.
"""

from __future__ import annotations

import asyncio
import signal

from ..common.async_session import AsyncClient, AsyncContext, AsyncServerSession
from ..common.stdio import (
    LineLogger,
    kill_leftovers,
    signal_group,
)
from .runtime import AsyncioRuntime

Context = AsyncContext


#: An MCP client on asyncio (the async colour's class: see
#: :class:`~.async_session.AsyncClient`). Made by ``connect_stdio``. Cancelling a
#: task that awaits a call sends ``notifications/cancelled`` for it.
Client = AsyncClient
#: One connection served by a :class:`~mcp_sansio.app.server.Server` on asyncio.
ServerSession = AsyncServerSession


class AsyncioChild:
    """A stdio client's server process on asyncio, held by the client (``client.child``):
    its transports, why its output ended, and the shutdown (see the module docstring)."""

    def __init__(self, client: AsyncClient, runtime: AsyncioRuntime) -> None:
        self.client = client
        self.runtime = runtime
        self.process: asyncio.SubprocessTransport | None = None
        self.stdout: asyncio.BaseTransport | None = None
        self.exited = asyncio.Event()
        self.returncode: int | None = None

    def stdout_closed(self) -> None:
        client = self.client
        if client.transport_detail is None:
            client.transport_detail = "the server closed its stdout"
        client.feed(b"")

    def process_exited(self, returncode: int | None) -> None:
        client = self.client
        self.returncode = client.returncode = returncode
        client.transport_detail = f"the server process exited with status {returncode}"
        self.exited.set()
        if client.closed is None:
            client.feed(b"")  # its pipes may still be open through a grandchild: it is over

    async def _wait_exit(self, timeout: float | None) -> bool:
        try:
            await asyncio.wait_for(self.exited.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def aclose(self, shutdown_timeout: float) -> None:
        """Stop the server as the spec says: close its stdin, wait, SIGTERM, wait, SIGKILL
        (to its whole process group); then stop the client's jobs."""
        process = self.process
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
        if self.stdout is not None:
            self.stdout.close()
        await self.runtime.stop_tasks()


class _ClientPipes(asyncio.SubprocessProtocol):
    def __init__(self, child: AsyncioChild, stderr: LineLogger) -> None:
        self.child = child
        self.stderr = stderr

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 2:
            self.stderr.feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 2:
            self.stderr.flush()

    def process_exited(self) -> None:
        process = self.child.process
        self.child.process_exited(process.get_returncode() if process else None)


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

    def __init__(self, child: AsyncioChild) -> None:
        self.child = child
        self.client = child.client

    def data_received(self, data: bytes) -> None:
        self.client.feed(data)

    def eof_received(self) -> bool:
        self.child.stdout_closed()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.child.client.closed is None:
            self.child.stdout_closed()
