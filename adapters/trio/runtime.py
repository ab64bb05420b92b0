"""The trio runtime object: what one session needs from trio, held by the session.

Theory of operation
-------------------
:class:`TrioRuntime` is, for one session, the primitives the shared async session
(``common.async_session``) and the sans-IO session logic (:mod:`mcp_sansio.app.session`) call
through ``session.runtime``: the clock, the wall clock, the one deadline (``arm``), the output
(``write``: straight to a non-blocking pipe when it has room, else a writer task), waiters
(``new_event``, ``wait_call``), starting and cancelling a request's job, a sleep and
``stop_tasks`` -- plus the loops that move bytes (``pump``, ``serve_fd``, ``writer``,
``flush``). It is held, not mixed in (the style of
:class:`mcp_sansio.app.tasks.TaskRuntime`).

Handlers do not get a task each: they are queued for *runner* tasks (``_runner``), which
step each in a copy of the context and keep it only while it waits; on a served stdin the
runners also take turns reading the input, so a request read by a runner is run by it.

The object keeps a reference to its session for what it must ask of it: ``feed`` and
``on_timer`` (the pump's entries), ``closed``, and ``_cancel_call`` (a caller cancelled
while it waits for an answer). ``on_eof`` is set by the client, which records why the
input ended.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import math
import os
from collections import deque
from collections.abc import Callable, Coroutine, Generator
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import trio

from mcp_sansio import RequestId
from mcp_sansio.app.errors import Call, _nothing

from ..common.loop_runtime import LoopRuntime

if TYPE_CHECKING:
    from mcp_sansio.app.tasks import TaskRuntime

    from ..common.async_session import AsyncClient, AsyncServerSession

    #: The session a runtime object serves: either role of the async colour.
    AsyncSession = AsyncClient | AsyncServerSession

__all__ = ["TrioRuntime"]

_CHUNK = 1 << 16

log = logging.getLogger("mcp_sansio.adapters.http")


#: How many runner tasks wait for handlers when there are none to run (see
#: TrioRuntime._runner): enough for a burst of 100 requests whose handlers all wait, at
#: ~1.5 KB per waiting task (measured), ~200 KB at most per connection. Waking a waiting task
#: instead of spawning one: 100 in flight server CPU -10%, sequential -7% (stdio_ab.py).
_IDLE_TASKS = 128


class Outbox(Protocol):
    """A trio socket's queued output (the HTTP server's and client's sockets)."""

    #: The descriptor, when it may be written straight (plain TCP, not Windows).
    fd: int | None
    out: bytearray
    sending: bool
    queued: int


def enqueue(sock: Outbox, data: bytes) -> int | None:
    """Send ``data`` on ``sock``: written at once when nothing waits before it
    (:func:`write_now`), the rest queued for its sender task, in order. The bytes queued, or
    None when the socket broke (its task reports the loss)."""
    if data and sock.fd is not None and not sock.out and not sock.sending:
        written = write_now(sock.fd, data)
        if written is None:
            log.debug("HTTP connection lost while writing")
            return None
        data = data[written:]
    if data:
        sock.out += data
        sock.queued += len(data)
    return len(data)


async def send_queued(sock: Outbox, stream: trio.abc.SendStream) -> None:
    """Send all ``sock`` has queued, keeping ``sending`` and ``queued`` current."""
    data, sock.out = sock.out, bytearray()
    sock.sending = True
    await stream.send_all(data)
    sock.sending = False
    sock.queued -= len(data)


def write_now(fd: int, data: bytes) -> int | None:
    """Write what fits of ``data`` to non-blocking ``fd`` at once (the fast path: a pipe or
    socket nearly always has room, and no task switch is needed): the bytes written, or
    None when the descriptor is broken."""
    try:
        return os.write(fd, data)
    except BlockingIOError:
        return 0
    except OSError:
        return None


async def _read_when_ready(fd: int) -> bytes:
    """Wait until non-blocking ``fd`` is readable, then read it (OSError as raised)."""
    while True:
        await trio.lowlevel.wait_readable(fd)
        try:
            return os.read(fd, _CHUNK)
        except BlockingIOError:
            continue


class _Job:
    """A handler queued for a runner: its request's id (None: not cancellable), the copy of
    the context it runs in (as a spawn would copy it) and its coroutine."""

    __slots__ = ("cancelled", "context", "coro", "key")

    def __init__(self, key: RequestId | None, context: contextvars.Context,
                 coro: Coroutine[Any, Any, None]) -> None:
        self.key = key
        self.context = context
        self.coro = coro
        self.cancelled = False


class _Drive:
    """Awaited by a runner: drives a handler's coroutine to its end from the runner's task,
    every step in the handler's own context. ``trap`` is what its first step (already taken)
    yielded, or None to take it here. Whatever trio sends or throws goes to the handler: the
    handler's traps are the runner task's, so its cancel scopes, parking and
    ``current_task()`` are the runner's, which runs nothing else until the handler ends."""

    __slots__ = ("context", "coro", "trap")

    def __init__(self, coro: Coroutine[Any, Any, None], context: contextvars.Context,
                 trap: Any) -> None:
        self.coro = coro
        self.context = context
        self.trap = trap

    def __await__(self) -> Generator[Any, Any, None]:
        coro, run, trap = self.coro, self.context.run, self.trap
        try:
            if trap is None:
                trap = run(coro.send, None)
            while True:
                try:
                    value = yield trap
                except GeneratorExit:
                    coro.close()
                    raise
                except BaseException as exc:  # trio's to throw in, as it would have sent it
                    trap = run(coro.throw, exc)
                else:
                    trap = run(coro.send, value)
        except StopIteration:
            return


class TrioRuntime(LoopRuntime):
    """One session's trio primitives."""

    async def sleep(self, seconds: float) -> None:
        """The runtime's sleep (a task's poll interval, ``_client_tasks.Sleep``)."""
        await trio.sleep(seconds)

    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        #: Called when the peer closed its side (the client records why).
        self.on_eof: Callable[[], None] = _nothing
        self.nursery: trio.Nursery | None = None
        self.deadline = math.inf
        self.scope: trio.CancelScope | None = None
        self.scopes: dict[RequestId | None, trio.CancelScope] = {}
        # Handlers wait in _queue for a runner task (_runner); _queued indexes the
        # cancellable ones. _idle: runners parked for want of work; _coming: runners woken
        # or spawned that have not run yet; _taking: a runner is taking jobs right now.
        # The queue, the output (_open_output) and the events are made on first use: an HTTP
        # session's runtime never queues a handler here nor writes (its service does both),
        # and an empty deque, two events and a parking lot are ~1.7 KiB an idle HTTP
        # session would hold.
        self._queue: deque[_Job] | None = None
        self._queued: dict[RequestId, _Job] = {}
        self._idle: list[trio.lowlevel.Task] = []
        self._coming = 0
        self._taking = False
        # The server's stdin when runners take turns reading it (_serve_fd), and whether
        # one is reading now; done is set once it has read the end of the input.
        self._lead_fd: int | None = None
        self._leading = False
        self._lead_context: contextvars.Context | None = None  # what the reader feeds in
        self._done: trio.Event | None = None
        self._outbuf: bytearray | None = None
        self._out_lot: trio.lowlevel.ParkingLot | None = None
        self._out_broken = False
        self.out_fd: int | None = None  # non-blocking, for direct writes
        self._sending = False
        self._flushed: trio.Event | None = None

    @property
    def done(self) -> trio.Event:
        """Set once serving has ended (the input's end, or the session closed)."""
        if self._done is None:
            self._done = trio.Event()
        return self._done

    def _open_output(self) -> tuple[bytearray, trio.lowlevel.ParkingLot]:
        """The output's buffer and the writer's parking lot, made on first use."""
        if self._outbuf is None or self._out_lot is None:
            self._outbuf = bytearray()
            self._out_lot = trio.lowlevel.ParkingLot()
        return self._outbuf, self._out_lot

    def _flushed_event(self) -> trio.Event:
        """Set while the writer has nothing left to send."""
        if self._flushed is None:
            self._flushed = trio.Event()
        return self._flushed

    def now(self) -> float:
        return trio.current_time()

    def task_runtime(self) -> TaskRuntime:
        from ..common.tasks import TRIO_TASKS  # lazy: tasks only

        return TRIO_TASKS

    def arm(self, deadline: float | None) -> None:
        # Lazy, as on asyncio: a deadline already set for an earlier time stays; when it
        # passes early, handle_timeout finds nothing due and the pump arms the real one
        # (_pump resets it). Moving a trio deadline costs its bookkeeping (~5 us, twice per
        # call: the request's deadline, then none), and a request that only adds a later
        # deadline -- nearly every request -- now costs nothing.
        new = math.inf if deadline is None else deadline
        if new >= self.deadline:
            return
        self.deadline = new
        if self.scope is not None:
            self.scope.deadline = new

    def write(self, data: bytes) -> None:
        if self._out_broken:
            return
        if self.out_fd is not None and not self._outbuf and not self._sending:
            written = write_now(self.out_fd, data)
            if written is None:
                self._out_broken = True
                return
            if written == len(data):
                return
            data = data[written:]
        outbuf, lot = self._open_output()
        outbuf += data
        if self._flushed is None or self._flushed.is_set():
            self._flushed = trio.Event()
        lot.unpark_all()

    def new_event(self) -> trio.Event:
        return trio.Event()

    def run_eager(self) -> None:
        """Nothing to do: trio's handlers are queued for a runner (start_task), never left
        in ``session._eager``."""

    async def wait_call(self, call: Call) -> None:
        # A call is woken once: park the task itself and reschedule it, without the Event
        # and parking lot (their objects and bookkeeping on every call).
        if call.done:
            return
        task = trio.lowlevel.current_task()

        def wake() -> None:
            call.wake = _nothing
            trio.lowlevel.reschedule(task)

        def abort(_: Any) -> trio.lowlevel.Abort:
            call.wake = _nothing
            return trio.lowlevel.Abort.SUCCEEDED

        call.wake = wake
        try:
            await trio.lowlevel.wait_task_rescheduled(abort)
        except BaseException:
            # Cancelled (a cancel scope): the core sends notifications/cancelled.
            if not call.done:
                self.session._cancel_call(call)
            raise

    def start_task(self, key: RequestId | None, coro: Coroutine[Any, Any, None]) -> None:
        # Queued for a runner task, which steps it at once in its own context copy; one
        # that returns without waiting (nearly every handler) costs no task, no cancel scope
        # and no turn of the scheduler of its own: a runner takes the queued handlers one
        # after the other in one step. Per request, a task per handler (or a reused one
        # rescheduled per handler) cost ~10 us of server CPU more at 100 in flight.
        job = _Job(key, contextvars.copy_context(), coro)
        if self._queue is None:
            self._queue = deque()
        self._queue.append(job)
        if key is not None:
            self._queued[key] = job
        if not self._coming and not self._taking:
            self._wake()

    def _wake(self) -> None:
        """Get a runner going: a parked one, or a new task."""
        self._coming += 1
        if self._idle:
            trio.lowlevel.reschedule(self._idle.pop())
        else:
            assert self.nursery is not None
            self.nursery.start_soon(self._runner)

    async def _runner(self) -> None:
        """Run queued handlers until none is left, then park (or end, past _IDLE_TASKS).

        A handler that waits keeps its runner (a coroutine that yielded a trio trap belongs
        to its task) until it ends, and another runner is woken for the rest of the queue.
        The runner's cancel scope is the running handler's (``notifications/cancelled``
        cancels it); a cancelled scope cannot be reused, so a new one follows it. A handler
        cancelled while still queued runs in a scope cancelled from the start, as a task
        spawned into one would."""
        self._coming -= 1
        self._taking = True
        if self._queue is None:
            self._queue = deque()
        queue, queued, scopes = self._queue, self._queued, self.scopes
        try:
            while True:
                with trio.CancelScope() as scope:
                    while not scope.cancel_called:
                        if not queue:
                            if self._lead_free():
                                # Nobody reads the input: this runner does, then takes
                                # what it queued (no other task woken for it).
                                fd = self._lead_fd
                                assert fd is not None
                                self._leading = True
                                self._taking = False
                                try:
                                    data = await self._read_lead(fd)
                                finally:
                                    self._leading = False
                                self._taking = True
                                if not data:
                                    self.on_eof()
                                    self._lead_fd = None  # nothing more to read
                                # In the serving task's context, whichever runner reads:
                                # the handlers queued copy it (a runner spawned from a
                                # handler's step holds a copy of that handler's).
                                assert self._lead_context is not None
                                self._lead_context.run(self.session.feed, data)
                                if self._lead_fd is None or self.session.closed is not None:
                                    self.done.set()
                                continue
                            if len(self._idle) >= _IDLE_TASKS or self.session.closed is not None:
                                return
                            task = trio.lowlevel.current_task()
                            self._idle.append(task)
                            self._taking = False
                            await trio.lowlevel.wait_task_rescheduled(
                                partial(self._unidle, task))
                            self._coming -= 1  # woken by _wake
                            self._taking = True
                            continue
                        job = queue.popleft()
                        key = job.key
                        if key is not None and queued.get(key) is job:
                            del queued[key]
                        if job.cancelled:
                            self._taking = False
                            if not self._coming and (queue or self._lead_free()):
                                self._wake()  # in case it waits all the same (shielded)
                            try:
                                with trio.CancelScope() as dead:
                                    dead.cancel()
                                    await _Drive(job.coro, job.context, None)
                            finally:
                                self._taking = True
                            continue
                        if key is not None:
                            scopes[key] = scope
                        try:
                            try:
                                trap = job.context.run(job.coro.send, None)
                            except StopIteration:
                                continue
                            # It waits: it keeps this task; another takes the rest
                            # (and the reading, when this runner was the reader).
                            self._taking = False
                            if not self._coming and (queue or self._lead_free()):
                                self._wake()
                            try:
                                await _Drive(job.coro, job.context, trap)
                            finally:
                                self._taking = True
                        finally:
                            if key is not None and scopes.get(key) is scope:
                                del scopes[key]
        finally:
            self._taking = False

    def _lead_free(self) -> bool:
        """Whether the input waits for a runner to read it (_serve_fd)."""
        return self._lead_fd is not None and not self._leading and self.session.closed is None

    async def serve_fd(self, fd: int) -> None:
        """Serve a pollable input: the runners take turns reading it (one at a time), so a
        request read by a runner is run by it, with no other task woken; the core's
        deadlines wait in a task of their own (_timer). Returns once the input has ended."""
        assert self.nursery is not None
        self._lead_fd = fd
        self._lead_context = contextvars.copy_context()
        self.nursery.start_soon(self._timer)
        self._wake()
        await self.done.wait()

    @staticmethod
    async def _read_lead(fd: int) -> bytes:
        """Wait for ``fd``, then read it (end of file on an error)."""
        try:
            return await _read_when_ready(fd)
        except OSError:
            return b""

    async def _timer(self) -> None:
        """The core's next deadline, for a server whose runners read (_serve_fd): a scope
        whose deadline _arm moves, around a sleep; when it passes, on_timer."""
        while self.session.closed is None:
            with trio.CancelScope(deadline=self.deadline) as scope:
                self.scope = scope
                await trio.sleep_forever()
            self.scope = None
            if scope.cancelled_caught:
                self.deadline = math.inf  # passed: on_timer arms the next real one
                self.session.on_timer()

    def _unidle(self, task: trio.lowlevel.Task, _: Any) -> trio.lowlevel.Abort:
        """A parked runner is cancelled (its nursery closes): it waits no more."""
        with contextlib.suppress(ValueError):
            self._idle.remove(task)
        return trio.lowlevel.Abort.SUCCEEDED

    def cancel_task(self, key: RequestId) -> bool:
        job = self._queued.pop(key, None)
        if job is not None:
            job.cancelled = True  # its runner runs it in a cancelled scope
            return True
        scope = self.scopes.pop(key, None)
        if scope is None:
            return False
        scope.cancel()
        return True

    def stop_tasks(self) -> None:
        for job in self._queued.values():
            job.cancelled = True
        self._queued.clear()
        for scope in self.scopes.values():
            scope.cancel()
        self.scopes.clear()

    async def pump(self, stream: trio.abc.ReceiveStream) -> None:
        """Read until end of file; a deadline that passes cancels the wait, not the read
        loop."""
        receive = (self._fd_reader(stream.fileno()) if isinstance(stream, trio.lowlevel.FdStream)
                   else partial(stream.receive_some, _CHUNK))
        while self.session.closed is None:
            # One scope for many reads: _arm moves its deadline, and only a deadline that
            # passes ends it (a cancelled scope cannot be reused). A scope per read cost
            # trio's bookkeeping (~4.6 us) on every message. feed() is synchronous, so no
            # cancellation can land in it.
            with trio.CancelScope(deadline=self.deadline) as scope:
                self.scope = scope
                while self.session.closed is None:
                    try:
                        data = await receive()
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        data = b""
                    if not data:
                        self.on_eof()
                    self.session.feed(bytes(data))
            self.scope = None
            if scope.cancelled_caught:
                self.deadline = math.inf  # passed: on_timer arms the next real one
                self.session.on_timer()

    @staticmethod
    def _fd_reader(fd: int) -> Callable[[], Coroutine[Any, Any, bytes]]:
        """Reads of a non-blocking pipe that wait for it first: FdStream.receive_some reads
        first and waits on EAGAIN, which costs a failed read per message when messages come
        one at a time (the peer waits for our answer before it sends again)."""
        async def receive() -> bytes:
            try:
                return await _read_when_ready(fd)
            except OSError as exc:
                raise trio.BrokenResourceError from exc
        return receive

    async def writer(self, stream: trio.abc.SendStream) -> None:
        """Send what the core queued, in order, one ``send_all`` per batch."""
        outbuf, lot = self._open_output()
        try:
            while True:
                while not outbuf:
                    self._flushed_event().set()
                    await lot.park()
                data = bytes(outbuf)
                outbuf.clear()
                self._sending = True
                await stream.send_all(data)
                self._sending = False
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._out_broken = True
            outbuf.clear()
            self._flushed_event().set()

    async def flush(self, timeout: float) -> None:
        with trio.move_on_after(timeout):
            while not self._out_broken and not self._flushed_event().is_set():
                await self._flushed_event().wait()
