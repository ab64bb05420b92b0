"""The thread runtime object: what one session needs from threads, held by the session.

Theory of operation
-------------------
The session logic (:mod:`mcp_sansio.app.session`, the blocking half in ``.threading.session``) is
the same for every runtime; what differs is a handful of primitives. :class:`ThreadRuntime`
is those primitives for one session driven by threads, the twin of
:class:`~.runtime.AsyncioRuntime` and ``TrioRuntime``.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import os
import selectors
import threading
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol, cast

from mcp_sansio import Era, Request, RequestId
from mcp_sansio.app.context import Context, Job
from mcp_sansio.app.errors import Call

from ..common.stdio import LineLogger, write_all

if TYPE_CHECKING:
    import asyncio
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    from mcp_sansio.app.session import Session
else:  # imported when an async def handler first runs: a cold start does without it
    from ..common.lazy import LazyModule

    asyncio = LazyModule("asyncio", globals())

__all__ = ["DEFAULT_MAX_WORKERS", "ThreadChild", "ThreadRuntime"]

_CHUNK = 1 << 16

#: Handler threads per session by default: enough for a client's usual burst of concurrent
#: calls whose handlers block (I/O, a human), few enough that a stray flood of requests
#: cannot start hundreds of threads; ``max_workers`` changes it.
DEFAULT_MAX_WORKERS = 32


def loop_running_here() -> bool:
    """Whether an event loop runs on this thread (then no other loop can step a handler
    here: a worker inside its own handler's loop hands the job to the pool instead)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def step_once(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any],
              context: contextvars.Context) -> tuple[bool, Any]:
    """Start ``coro`` as a task on ``loop`` (in ``context``) and run the loop one turn, the
    turn of the task's first step: ``(True, its value)`` if it ended there, else ``(False,
    the task)``, suspended, for a worker to run to its end on ``loop``. What the first step
    raised is raised.

    A task, not a bare ``send``: the handler finds its running loop and its task from the
    first step on (sniffio, so anyio and httpx, asks ``asyncio.current_task()``), and the
    same task carries it to its end. With public asyncio alone this is the cheapest such
    step (about 10 us per job; setting the running loop by hand would take 2, but only
    asyncio's private API can do it)."""
    task = loop.create_task(coro, context=context)
    loop.call_soon(loop.stop)  # after the task's first step, queued by create_task
    loop.run_forever()
    if not task.done():
        return False, task
    return True, task.result()


class _SteppedServer(Protocol):
    """What the eager step asks of the blocking server session it serves (a Protocol: that
    class is in ``.threading.session``, which imports this module)."""

    _contexts: dict[RequestId, Context]

    def _job_ended(self, request: Request, job: Job, ctx: Context, value: Any = None,
                   error: BaseException | None = None) -> None: ...


class JobRun:
    """A handler's run on threads as a ``with`` block whose body sets :attr:`value`: leaving
    it forgets the request's context and canceller, then answers -- with the value, or with
    the :class:`Exception` the body raised; a cancelled ``async def`` handler is not answered
    here (its cancellation is)."""

    __slots__ = ("ctx", "job", "request", "runtime", "session", "value")

    def __init__(self, runtime: ThreadRuntime, session: _SteppedServer, request: Request,
                 job: Job, ctx: Context) -> None:
        self.runtime = runtime
        self.session = session
        self.request = request
        self.job = job
        self.ctx = ctx
        self.value: Any = None

    def __enter__(self) -> JobRun:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, trace: object) -> bool:
        request_id = self.request.request_id
        with self.runtime.lock:
            self.session._contexts.pop(request_id, None)
            self.runtime.cancellers.pop(request_id, None)
        if exc is not None and (isinstance(exc, asyncio.CancelledError)
                                or not isinstance(exc, Exception)):
            return isinstance(exc, asyncio.CancelledError)
        self.session._job_ended(self.request, self.job, self.ctx, self.value, exc)
        return True


class CancelToken:
    """Cancels the calls it is given to (``call_tool(..., cancel=token)``) from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def _register(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return
        callback()

    def _unregister(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)



class ThreadRuntime:
    """One session's thread primitives (see the module docstring)."""

    __slots__ = (
        "_pool",
        "_step_loop",
        "_wake_r",
        "_wake_w",
        "cancellers",
        "deadline",
        "eager",
        "lock",
        "max_workers",
        "on_eof",
        "out_fd",
        "reader",
        "session",
        "stderr",
    )

    def __init__(self, session: Session, *, max_workers: int = DEFAULT_MAX_WORKERS,
                 pool: ThreadPoolExecutor | None = None,
                 lock: threading.RLock | None = None) -> None:
        self.session = session
        #: Held around every use of the connection (the session's ``lock`` is this one).
        self.lock = lock if lock is not None else threading.RLock()
        # ``pool``: a shared one (an HTTP session uses its service's: a pool of its own for
        # every stateless-era request cost ~3 us to build and was never used).
        self._pool = pool
        self.max_workers = max_workers
        #: How to stop a handler running in the pool, by request id.
        self.cancellers: dict[RequestId, Callable[[], None]] = {}
        #: Where ``write`` goes (None: nowhere, e.g. the peer has gone).
        self.out_fd: int | None = None
        #: The deadline the reader waits for (lazy: see ``arm``).
        self.deadline: float | None = None
        self._wake_r: int | None = None
        self._wake_w: int | None = None
        #: The child's stderr and the logger its lines go to (a stdio client).
        self.stderr: tuple[int, LineLogger] | None = None
        #: The reader thread running :meth:`pump`, when one was started for it.
        self.reader: threading.Thread | None = None
        #: Called on the reader when the input ends, before the session is fed ``b""``.
        self.on_eof: Callable[[], None] | None = None
        #: Step ``async def`` handlers on the reader first (the stdio server).
        self.eager = False
        self._step_loop: asyncio.AbstractEventLoop | None = None

    # -- clocks, timer, output -------------------------------------------------------------

    @staticmethod
    def now() -> float:
        return time.monotonic()

    @staticmethod
    def wall_now() -> float | None:
        return time.time()

    def arm(self, deadline: float | None) -> None:
        # Lazy, as on asyncio: a deadline the reader already waits for stays when the new
        # one is later (or there is none); when it passes early, handle_timeout finds nothing
        # due and the real one is armed (pump resets it). A nudge wakes the reader thread
        # (a write, a thread switch, a read): before this, every call of a sequential client
        # paid one, its request's deadline going from none to sixty seconds ahead.
        if deadline is None:
            return
        previous = self.deadline
        if previous is not None and deadline >= previous:
            return
        self.deadline = deadline
        self.nudge()

    def nudge(self) -> None:
        """Wake the reader (a deadline moved earlier, or the session is closing)."""
        wake = self._wake_w
        if wake is not None:
            with contextlib.suppress(BlockingIOError, OSError):
                os.write(wake, b"!")

    def write(self, data: bytes) -> None:
        if self.out_fd is None:
            return
        try:
            write_all(self.out_fd, data)
        except (BrokenPipeError, OSError):
            self.out_fd = None  # the peer is gone; its EOF reaches the reader soon

    # -- the pump --------------------------------------------------------------------------

    def pump(self, in_fd: int) -> None:
        """Read until end of file (or the connection closes); fire deadlines on time."""
        session = self.session
        if self._wake_r is None:
            # Made before the deadline is first read: an ``arm`` that found no pipe yet set
            # its deadline before this, and the loop below sees it.
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_w, False)
        wake_r = self._wake_r
        selector = selectors.DefaultSelector()
        selector.register(in_fd, selectors.EVENT_READ, "in")
        selector.register(wake_r, selectors.EVENT_READ, "wake")
        if self.stderr is not None:
            selector.register(self.stderr[0], selectors.EVENT_READ, "err")
        try:
            while session.closed is None:
                deadline = self.deadline
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                for key, _ in selector.select(timeout):
                    if key.data == "in":
                        try:
                            data = os.read(in_fd, _CHUNK)
                        except OSError:
                            data = b""
                        if not data and self.on_eof is not None:
                            self.on_eof()
                        session.feed(data)
                    elif key.data == "err":
                        assert self.stderr is not None
                        chunk = os.read(self.stderr[0], _CHUNK)
                        self.stderr[1].feed(chunk)
                        if not chunk:
                            selector.unregister(self.stderr[0])
                    else:
                        os.read(wake_r, _CHUNK)
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    self.deadline = None  # passed: on_timer arms the next real one
                    session.on_timer()
        finally:
            selector.close()

    def start_reader(self, in_fd: int) -> None:
        """Run :meth:`pump` on a reader thread of its own."""
        self.reader = threading.Thread(target=self.pump, args=(in_fd,),
                                       name="mcp-sansio-reader", daemon=True)
        self.reader.start()

    def join_reader(self, timeout: float) -> None:
        """Wake the reader and wait (up to ``timeout``) for it to end (not from itself)."""
        self.nudge()
        reader = self.reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout)

    def close_pipes(self) -> None:
        wake_r, wake_w = self._wake_r, self._wake_w
        self._wake_r = self._wake_w = None
        for fd in (wake_r, wake_w):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    # -- calls, callbacks, workers ---------------------------------------------------------

    def wait_call(self, call: Call, cancel: CancelToken | None) -> None:
        """Block until ``call`` has its terminal event; ``cancel`` (or a
        ``KeyboardInterrupt`` while waiting) cancels it."""
        # A held lock as a one-shot event: the call's terminal event releases it once (C
        # level; threading.Event is a Python Condition, several us per call).
        gate = threading.Lock()
        gate.acquire()
        session = self.session
        with self.lock:
            if call.done:
                return
            call.wake = gate.release
        def on_cancel() -> None:
            session._cancel_call(call)
        if cancel is not None:
            cancel._register(on_cancel)
        try:
            gate.acquire()
        except BaseException:  # KeyboardInterrupt while waiting: cancel, then re-raise
            session._cancel_call(call)
            raise
        finally:
            if cancel is not None:
                cancel._unregister(on_cancel)

    def spawn_awaitable(self, awaitable: Any) -> None:
        """An ``async`` callback: run to its end on a loop of its own, in a worker."""
        self.pool.submit(asyncio.run, awaitable)

    @property
    def pool(self) -> ThreadPoolExecutor:
        """The handler threads, made when first needed (a stdio server whose handlers are
        all stepped on the reader never makes one, nor imports ``concurrent.futures``)."""
        pool = self._pool
        if pool is None:
            with self.lock:
                pool = self._pool
                if pool is None:
                    from concurrent.futures import ThreadPoolExecutor

                    pool = self._pool = ThreadPoolExecutor(
                        max_workers=self.max_workers, thread_name_prefix="mcp-sansio-handler")
        return pool

    def stop_workers(self) -> None:
        """The session ended: cancel its handlers, stop the pool, close the step loop."""
        with self.lock:
            cancellers = list(self.cancellers.values())
            self.cancellers.clear()
        for cancel in cancellers:
            cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        with self.lock:
            loop, self._step_loop = self._step_loop, None
        if loop is not None:
            loop.close()

    # -- the eager first step of async def handlers (the stdio server) ---------------------
    #
    # An ``async def`` handler starts eagerly, as on asyncio: it is stepped once on the
    # thread that dispatched it (the reader, once the events of a read are drained), with a
    # private event loop set as the running loop. One that returns without suspending is
    # answered there -- no pool hand-off, no thread switch, and the answers to one read
    # leave in one write. One that suspends goes on in a worker thread, which runs that loop
    # until the handler ends (the next eager handler gets a fresh loop). So, as on any event
    # loop, an ``async def`` handler must not block before its first ``await``. ``def``
    # handlers, and handshake-era handlers that take ``ctx`` (whose ``ask`` waits for the
    # client's answer, which only the reader can read), run in the pool. Measured with
    # ``benchmarks/stdio_ab.py`` (the example server's echo, server CPU per call, paired
    # trials): 100 in flight 51.9 -> 19.9 us, sequential 84.6 -> 57.4 us.

    def start_eagerly(self, request: Request, job: Job, ctx: Context) -> bool:
        """Whether the job was taken to be stepped on the reader (False: to the pool)."""
        session = self.session
        if not self.eager or not session._servicing or not inspect.iscoroutinefunction(
                job.fn) or loop_running_here():
            return False
        if "ctx" in job.kwargs and session.conn.era is not Era.STATELESS:
            return False  # its ask would block the reader until the client answers
        session._eager[request.request_id] = (request, job, ctx)
        return True

    def run_eager(self) -> None:
        eager = self.session._eager
        while eager:
            key = next(iter(eager))
            self._step(*eager.pop(key))

    def _step(self, request: Request, job: Job, ctx: Context) -> None:
        loop = self._step_loop
        if loop is None:
            loop = self._step_loop = asyncio.new_event_loop()
        coro = self._handle(request, job, ctx)
        context = contextvars.copy_context()  # as a task would run it
        done, task = step_once(loop, coro, context)
        if done:
            return  # answered (or failed) without suspending
        self._step_loop = None  # the suspended handler keeps this loop
        self.pool.submit(self._resume, request, loop, task, ctx)

    async def _handle(self, request: Request, job: Job, ctx: Context) -> None:
        """The handler and its answer, as ``SyncServerSession._run`` does in a worker."""
        session = cast("_SteppedServer", self.session)  # only a server steps handlers
        with self.job_run(session, request, job, ctx) as run:
            assert job.fn is not None
            run.value = await job.fn(*job.args, **job.kwargs)

    def job_run(self, session: _SteppedServer, request: Request, job: Job, ctx: Context
                ) -> JobRun:
        """The ``with`` block of one handler's run (:class:`JobRun`)."""
        return JobRun(self, session, request, job, ctx)

    def cancel_with(self, request_id: RequestId, ctx: Context,
                    loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        """Cancel ``task`` (on ``loop``, from any thread) when the request is cancelled --
        at once if it already is."""

        def cancel() -> None:
            with contextlib.suppress(RuntimeError):  # the loop has just closed: it is over
                loop.call_soon_threadsafe(task.cancel)
        with self.lock:
            if ctx.cancelled:
                task.cancel()
            else:
                self.cancellers[request_id] = cancel

    def _resume(self, request: Request, loop: asyncio.AbstractEventLoop,
                task: asyncio.Task[Any], ctx: Context) -> None:
        """In a worker: run the suspended handler's task on its loop until it ends,
        cancelled -- from any thread -- with the request."""
        self.cancel_with(request.request_id, ctx, loop, task)
        try:
            loop.run_until_complete(task)
        except asyncio.CancelledError:
            pass
        finally:
            with self.lock:
                self.cancellers.pop(request.request_id, None)
            loop.close()


class ThreadChild:
    """The stdio client's server process, on threads: why its output ended (``on_eof``,
    the runtime's hook) and the spec's shutdown (``stop``: close its stdin, wait, SIGTERM,
    wait, SIGKILL its group, :func:`~.stdio.stop_server`). Held by the client
    (``client.child``), not mixed into it: the client class is the same blocking client
    over any transport."""

    __slots__ = ("client", "process", "returncode")

    def __init__(self, client: Any, process: subprocess.Popen[bytes]) -> None:
        self.client = client
        self.process = process
        #: Its exit status once known (negative: the signal that ended it).
        self.returncode: int | None = None

    def on_eof(self) -> None:
        """(The reader.) The server closed its stdout: record why, for the errors."""
        import subprocess  # (a client's: a server's cold start does without it)

        process = self.process
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(0.05)  # usually gone by now: say so in the errors
        if process.returncode is not None:
            self.returncode = self.client.returncode = process.returncode
            self.client.transport_detail = (
                f"the server process exited with status {process.returncode}")
            return
        self.client.transport_detail = "the server closed its stdout"

    def stop(self, shutdown_timeout: float) -> None:
        """Stop the server (the spec's sequence, blocking up to ~2x ``shutdown_timeout``)."""
        from ..stdio import stop_server

        self.returncode = self.client.returncode = stop_server(self.process,
                                                               shutdown_timeout)

    def close_streams(self) -> None:
        """Close our ends of its stdout and stderr (after the reader has stopped)."""
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
