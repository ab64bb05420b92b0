"""The asyncio runtime object: what one session needs from asyncio, held by the session.

Theory of operation
-------------------
The session logic (:mod:`mcp_sansio.app.session`, the async colour in
``common.async_session``) is the same for every runtime; what differs is a handful of primitives.
:class:`AsyncioRuntime` is those primitives for one session on the running asyncio loop -- the
clock (``now``), the wall clock (``wall_now``), the one timer (``arm``), the output (``write``),
waiters (``new_event``), starting and cancelling a request's job (``start_task``,
``cancel_task``), the eager first step of a handler (``run_eager``, ``step``), a sleep and
the final ``stop_tasks``. The session *holds* one (``session.runtime``) and its hooks
call it; nothing is mixed in by inheritance (the same style as
:class:`mcp_sansio.app.tasks.TaskRuntime`).

The object keeps a reference to its session for the three things it must ask of it:
whether the session has closed (the lazy timer), its ``on_timer`` entry point, and the
handlers started while the session was dispatching (``session._eager``: they are stepped
once the events are drained, so a cancellation read in the same chunk still stops one
before it runs).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, NoReturn

from mcp_sansio import RequestId
from mcp_sansio.app.errors import Call

from ..common.async_session import _Resumed
from ..common.loop_runtime import LoopRuntime
from ..common.stdio import write_all

if TYPE_CHECKING:
    from mcp_sansio.app.tasks import TaskRuntime

    from ..common.async_session import AsyncClient, AsyncServerSession

    #: The session a runtime object serves: either role of the async colour.
    AsyncSession = AsyncClient | AsyncServerSession

__all__ = ["AsyncioRuntime"]


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


class LoopTimer:
    """One timer on the loop for a next deadline (a session's core's, or an HTTP server's):
    :meth:`set` replaces the one set before; ``at`` is when it fires (None: none set)."""

    __slots__ = ("_fire", "_handle", "_loop", "at")

    def __init__(self, loop: asyncio.AbstractEventLoop, fire: Callable[[], None]) -> None:
        self._loop = loop
        self._fire = fire
        self._handle: asyncio.TimerHandle | None = None
        self.at: float | None = None

    def set(self, deadline: float | None) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self.at = deadline
        self._handle = None if deadline is None else self._loop.call_at(deadline, self._fired)

    def _fired(self) -> None:
        self._handle = None
        self.at = None
        self._fire()


class AsyncioRuntime(LoopRuntime):
    """One session's asyncio primitives (made on the running loop)."""

    __slots__ = (
        "_timer",
        "background",
        "loop",
        "out",
        "out_fd",
        "session",
        "tasks",
    )

    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.loop = asyncio.get_running_loop()
        # The timer and the set of background jobs are made on first use: an idle HTTP
        # session's runtime never needs them (its server's timer serves every session).
        self._timer: LoopTimer | None = None
        #: A request's job once it has a task (keyed by request id).
        self.tasks: dict[RequestId, asyncio.Task[None]] = {}
        #: Jobs of no request (async callbacks): strong references until they end (None
        #: before the first; an empty set is 216 bytes).
        self.background: set[asyncio.Task[None]] | None = None
        #: Where ``write`` goes: a write transport, or a blocking fd (a regular file).
        self.out: asyncio.WriteTransport | None = None
        self.out_fd: int | None = None

    def now(self) -> float:
        return self.loop.time()

    def task_runtime(self) -> TaskRuntime:
        from ..common.tasks import ASYNCIO_TASKS  # lazy: tasks only

        return ASYNCIO_TASKS

    def arm(self, deadline: float | None) -> None:
        # Lazy: a timer already set for an earlier time stays; when it fires early,
        # handle_timeout finds nothing due and the timer is set again for the real deadline.
        # So a request that only adds a later deadline costs no timer operation at all.
        if deadline is None and self.session.closed is None:
            return  # nothing due: a timer still set fires once, finds nothing, and stops
        timer = self._timer
        if timer is None:
            if deadline is None:
                return
            timer = self._timer = LoopTimer(self.loop, self._fire)
        at = timer.at
        if deadline is not None and at is not None and at <= deadline:
            return
        timer.set(deadline)

    def _fire(self) -> None:
        self.session.on_timer()

    def write(self, data: bytes) -> None:
        if self.out is not None:
            if not self.out.is_closing():
                self.out.write(data)
        elif self.out_fd is not None:
            write_all(self.out_fd, data)

    def new_event(self) -> _Waiter:
        return _Waiter(self.loop)

    async def wait_call(self, call: Call) -> None:
        """Wait until ``call`` has its terminal event."""
        if call.done:
            return
        waiter = _Waiter(self.loop)
        call.wake = waiter.set
        try:
            await waiter.wait()
        except BaseException:
            # The caller was cancelled (a task cancelled): the core sends
            # notifications/cancelled and the call ends with RequestCancelled.
            if not call.done:
                self.session._cancel_call(call)
            raise

    async def sleep(self, seconds: float) -> None:
        """The runtime's sleep (a task's poll interval, ``client_tasks.Sleep``)."""
        await asyncio.sleep(seconds)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run a job of no request in a task of its own."""
        task = self.loop.create_task(coro)
        if self.background is None:
            self.background = set()
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def start_task(self, key: RequestId | None, coro: Coroutine[Any, Any, None]) -> None:
        if key is None:
            self.spawn(coro)
            return
        session = self.session
        if session._servicing:
            # A request's handler starts eagerly: Session.service steps it once the events
            # are drained (run_eager), and it gets a task only if it suspends.
            session._eager[key] = coro
            return
        # Dispatched by another pump (e.g. the HTTP service's): a task, as always.
        self._track(key, self.loop.create_task(coro))

    def _track(self, key: RequestId, task: asyncio.Task[None]) -> None:
        self.tasks[key] = task

        def done(_: asyncio.Task[None], key: RequestId = key) -> None:
            if self.tasks.get(key) is task:
                del self.tasks[key]
        task.add_done_callback(done)

    def run_eager(self) -> None:
        eager = self.session._eager
        while eager:
            key = next(iter(eager))
            self.step(key, eager.pop(key))

    def step(self, key: RequestId, coro: Coroutine[Any, Any, None]) -> None:
        """Run a handler's first step now; it gets a task only if it suspends."""
        # As a task would run it: in a copy of the context, which the task then keeps.
        context = contextvars.copy_context()
        try:
            first = context.run(coro.send, None)
        except StopIteration:
            return  # done without suspending (answered, if it answers): no task at all
        except BaseException as exc:
            # It ended as a task's first step would end it (e.g. CancelledError,
            # KeyboardInterrupt): let a task end the same way.
            self.loop.create_task(_reraise(exc), context=context)
            return
        self._track(key, self.loop.create_task(_Resumed(coro, first), context=context))

    def cancel_task(self, key: RequestId) -> bool:
        coro = self.session._eager.pop(key, None)
        if coro is not None:  # not stepped yet: it never runs
            coro.close()
            return True
        task = self.tasks.pop(key, None)
        if task is None:
            return False
        task.cancel()
        return True

    async def stop_tasks(self) -> None:
        """Cancel every job of the session and wait for them; disarm the timer."""
        eager = self.session._eager
        for coro in eager.values():
            coro.close()
        eager.clear()
        tasks = [*self.tasks.values(), *(self.background or ())]
        self.tasks.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self.arm(None)
