"""The asyncio runtime behind the high-level session: its primitives (now, the one timer,
writes, starting and cancelling handler tasks, waiters) and the session classes built on
them, :class:`Client` and :class:`ServerSession`, plus the pipe protocols of a stdio client.

Theory of operation: :class:`_AsyncioRuntime` supplies what the shared async session
(``._api``) and the sans-IO session logic (:mod:`mcp_sansio.app.session`) ask of a runtime;
the public module :mod:`mcp_sansio.adapters.asyncio` keeps the entry points
(``connect_stdio``, ``serve_stdio``, ``run_stdio``) and re-exports these classes, and the
HTTP modules import from here -- so nothing imports back into the public module.
"""

from __future__ import annotations

import asyncio
import contextvars
import signal
import time
from collections.abc import Coroutine
from typing import Any, NoReturn

from mcp_sansio import RequestId

from ._api import AsyncClient, AsyncContext, AsyncServerSession, AsyncSession, _Resumed
from ._stdio import (
    DEFAULT_SHUTDOWN_TIMEOUT,
    LineLogger,
    kill_leftovers,
    signal_group,
    write_all,
)

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

    def _wall_now(self) -> float | None:
        return time.time()

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


class ServerSession(_AsyncioRuntime, AsyncServerSession):
    """One connection served by a :class:`Server` on asyncio."""
