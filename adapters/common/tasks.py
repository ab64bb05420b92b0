"""Tasks on a runtime: where a task's handler runs, how it waits, and what its ``ctx`` can do.

Theory of operation
-------------------
The tasks extension itself -- the status table, TTLs, the wire shapes per revision, the
routing of ``tasks/*`` -- is the sans-IO :class:`~mcp_sansio.app.tasks.TaskLedger`, which
:meth:`Server.enable_tasks <mcp_sansio.app.server.Server.enable_tasks>` builds without this
module. The ledger asks the session a request came on for its
:class:`~mcp_sansio.app.tasks.TaskRuntime` (``session._task_runtime()``, the
:class:`~mcp_sansio.app.tasks.TaskHost` seam); a session answers with its runtime's, and this
module holds one per runtime: :data:`ASYNCIO_TASKS` (a task on asyncio's loop, from
``AsyncioRuntime.task_runtime()``), :data:`TRIO_TASKS` (a trio system task: it outlives the
HTTP request that created it; ``TrioRuntime.task_runtime()``) and :data:`THREAD_TASKS` (a
thread of its own per task, an ``async def`` handler with a private event loop there;
:func:`thread_task_runtime`, which the thread sessions call). Each is the wall and monotonic
clocks, fresh ids from :mod:`secrets`, a real lock (a task on threads runs on a thread of its
own), the waiters, ``launch`` (run a handler in the background) and ``share`` (the
:class:`~.tasks.SharedTasks` of ``shared=`` stores, every runtime). Which runtime runs a
task is thus the one that routed its ``tools/call``, told by the session, never guessed.

A handler running as a task gets a :class:`TaskContext` as its ``ctx``. :class:`Tasks` is the
ledger with the options it always had (``runner=`` pins where every handler runs, e.g.
``_ThreadRunner`` in tests; ``clock=``/``monotonic=`` replace the clocks).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from mcp_sansio import Era
from mcp_sansio.app.context import Context, Job, elicit_request, sampling_request
from mcp_sansio.app.errors import MissingCapability
from mcp_sansio.app.session import INPUT_METHODS
from mcp_sansio.app.tasks import (
    DEFAULT_MAX_TASKS,
    DEFAULT_POLL_INTERVAL_MS,
    DEFAULT_TTL_MS,
    RELATED_TASK,
    TASKS_EXTENSION,
    Task,
    TaskLedger,
    TaskRuntime,
    TaskSharing,
    TaskStore,
)

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "ASYNCIO_TASKS",
    "DEFAULT_MAX_TASKS",
    "DEFAULT_POLL_INTERVAL_MS",
    "DEFAULT_TTL_MS",
    "RELATED_TASK",
    "TASKS_EXTENSION",
    "THREAD_TASKS",
    "TRIO_TASKS",
    "Task",
    "TaskContext",
    "Tasks",
    "thread_task_runtime",
]

log = logging.getLogger("mcp_sansio.adapters.tasks")


# -- runners: where a task's handler runs ---------------------------------------------------


class _Runner:
    """Starts a handler in the background and makes the waitable a task's ``ask`` uses."""

    def start(self, run: Callable[[], Any], task: Task,
              is_async: bool) -> None:  # pragma: no cover - abstract
        """Run ``run()`` (a coroutine function when ``is_async``) in the background and set
        ``task._cancel``."""
        raise NotImplementedError

    def waiter(self) -> _Waiter:  # pragma: no cover - abstract
        raise NotImplementedError


class _Waiter:
    """Set from any thread; awaited (or, on a task's own thread, waited for)."""

    def set(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    async def wait(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def wait_blocking(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class _AsyncioRunner(_Runner):
    def __init__(self) -> None:
        import asyncio  # lazy: that runtime only: the others never load asyncio

        self.loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, run: Any, task: Task, is_async: bool) -> None:
        loop = self.loop
        handle = loop.create_task(run())
        self._tasks.add(handle)  # a strong reference until it ends
        handle.add_done_callback(self._tasks.discard)

        def cancel() -> None:
            loop.call_soon_threadsafe(handle.cancel)
        task._cancel = cancel

    def waiter(self) -> _Waiter:
        import asyncio  # lazy: that runtime only: the others never load asyncio

        return _LoopWaiter(asyncio.Event(), self.loop.call_soon_threadsafe)


class _LoopWaiter(_Waiter):
    """An ``async`` runtime's waiter: ``event`` (the runtime's own), set on its loop through
    ``call_soon`` (the runtime's thread-safe scheduling)."""

    def __init__(self, event: Any, call_soon: Callable[[Callable[[], Any]], Any]) -> None:
        self.event = event
        self.call_soon = call_soon

    def set(self) -> None:
        self.call_soon(self.event.set)

    async def wait(self) -> None:
        await self.event.wait()


class _TrioRunner(_Runner):
    def __init__(self) -> None:
        import trio  # lazy: trio is optional

        self.trio = trio
        self.token = trio.lowlevel.current_trio_token()

    def start(self, run: Any, task: Task, is_async: bool) -> None:
        trio = self.trio
        scope = trio.CancelScope()

        async def body() -> None:
            with scope:
                await run()
        # A system task outlives the request (and the HTTP exchange) that created it; it
        # is cancelled when the whole run ends. run() never raises (see Tasks._execute).
        trio.lowlevel.spawn_system_task(body, name=f"mcp task {task.task_id}")
        task._cancel = lambda: self.token.run_sync_soon(scope.cancel)

    def waiter(self) -> _Waiter:
        return _LoopWaiter(self.trio.Event(), self.token.run_sync_soon)


class _ThreadRunner(_Runner):
    """One thread per task (a task is long-running by nature: no thread hop per message);
    an ``async def`` handler gets a private event loop in it."""

    def start(self, run: Any, task: Task, is_async: bool) -> None:
        if not is_async:
            thread = threading.Thread(target=run, name=f"mcp task {task.task_id}",
                                      daemon=True)
            task._cancel = None  # a plain def handler polls ctx.cancelled
            thread.start()
            return
        import asyncio  # lazy: that runtime only: the others never load asyncio

        loop = asyncio.new_event_loop()
        ready = threading.Event()
        holder: list[asyncio.Task[None]] = []

        async def main() -> None:
            current = asyncio.current_task()
            assert current is not None
            holder.append(current)
            ready.set()
            with contextlib.suppress(asyncio.CancelledError):
                await run()

        def target() -> None:
            try:
                loop.run_until_complete(main())
            finally:
                ready.set()
                loop.close()

        def cancel() -> None:
            ready.wait()
            if holder and not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop has just closed
                    loop.call_soon_threadsafe(holder[0].cancel)

        task._cancel = cancel
        threading.Thread(target=target, name=f"mcp task {task.task_id}", daemon=True).start()

    def waiter(self) -> _Waiter:
        return _ThreadWaiter()


class _ThreadWaiter(_Waiter):
    def __init__(self) -> None:
        self.event = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.async_event: asyncio.Event | None = None

    def set(self) -> None:
        self.event.set()
        loop, async_event = self.loop, self.async_event
        if loop is not None and async_event is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(async_event.set)

    async def wait(self) -> None:
        import asyncio  # lazy: that runtime only: the others never load asyncio

        self.loop = asyncio.get_running_loop()
        self.async_event = asyncio.Event()
        if not self.event.is_set():
            await self.async_event.wait()

    def wait_blocking(self) -> None:
        self.event.wait()


# -- the handler's context inside a task ----------------------------------------------------


class TaskContext:
    """A task handler's ``ctx``: what :class:`~mcp_sansio.app.context.Context` offers, for a
    request that
    has already been answered with the task.

    ``ask`` (``elicit``, ``sample``, ``list_roots``) puts the task in ``input_required``
    until the client has answered every key (2026-07-28: through ``tasks/update``;
    2025-11-25: real requests on the session); it is ``async`` for ``async def`` handlers and
    blocking for plain ones (threads). ``notify`` sends on the session in the handshake era
    (a 2026-07-28 task has no stream to send on)."""

    def __init__(self, tasks: TaskLedger, task: Task, request_ctx: Context, waiter_factory:
                 Callable[[], _Waiter], is_async: bool) -> None:
        self.tasks = tasks
        self.task = task
        self.task_id = task.task_id
        self.method = request_ctx.method
        self.params = dict(request_ctx.params)
        self.request_id = request_ctx.request_id
        self.era = request_ctx.era
        self.client_capabilities = dict(request_ctx.client_capabilities)
        #: Answers the creating request carried (see :meth:`Tasks.gather_first`).
        self.input_responses: dict[str, Any] = dict(request_ctx.input_responses)
        self.request_state: str | None = None
        self._waiter_factory = waiter_factory
        self._is_async = is_async
        #: Handshake era: the session to send the task's requests on.
        self._session: Any = (request_ctx.session if request_ctx.era is not Era.STATELESS
                              else None)
        self._request_ctx = request_ctx

    @property
    def cancelled(self) -> bool:
        """Whether the task was cancelled (a plain ``def`` handler on threads polls it)."""
        return self.task.status == "cancelled"

    def progress(self, progress: float, total: float | None = None,
                 message: str | None = None) -> None:
        """Progress of a task is its ``statusMessage`` (seen on the next ``tasks/get``)."""
        text = message or (f"{progress:g}/{total:g}" if total is not None else f"{progress:g}")
        self.tasks._touch(self.task, status_message=text)

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Log messages of a task go to :mod:`logging` (the request is answered)."""
        log.log(_LEVELS.get(level, logging.INFO), "task %s%s: %s", self.task_id,
                f" ({logger})" if logger else "", data)

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        if self._session is not None:
            self._request_ctx.notify(method, params)
            return
        log.debug("task %s: %s not sent (no stream to send it on)", self.task_id, method)

    def notify_list_changed(self, kind: str) -> None:
        self.notify(f"notifications/{kind}/list_changed")

    def _plan(self, requests: Mapping[str, tuple[str, Mapping[str, Any]]]) -> _Waiter:
        caps = self.client_capabilities
        missing: dict[str, Any] = {INPUT_METHODS[m][0]: {} for m, _ in requests.values()
                   if m in INPUT_METHODS and INPUT_METHODS[m][0] not in caps}
        if missing:
            raise MissingCapability(missing)
        waiter = self._waiter_factory()
        if all(isinstance(self.input_responses.get(key), dict) for key in requests):
            # Gathered before the task was created: answered already.
            self.tasks._preanswer(self.task, {key: self.input_responses.pop(key)
                                              for key in requests})
            waiter.set()
            return waiter
        self.tasks._park(self.task, {key: {"method": method, "params": dict(params)}
                                     for key, (method, params) in requests.items()}, waiter)
        return waiter

    def _collect(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        return self.tasks._take_answers(self.task, list(requests))

    def ask(self, requests: Mapping[str, tuple[str, Mapping[str, Any]]],
            request_state: str | None = None) -> Any:
        """Ask the client: ``{key: (method, params)}`` -> ``{key: answer}`` once
        ``tasks/update`` has brought every answer (``request_state`` is not used: a task
        keeps its own state)."""
        if self._session is not None:
            return self._ask_session(requests)
        waiter = self._plan(requests)
        if not self._is_async:
            waiter.wait_blocking()
            return self._collect(requests)

        async def wait() -> dict[str, Any]:
            await waiter.wait()
            return self._collect(requests)
        return wait()

    def _ask_session(self, requests: Mapping[str, tuple[str, Mapping[str, Any]]]) -> Any:
        """2025-11-25: real requests to the client, marked with the related-task ``_meta``;
        the task is ``input_required`` meanwhile."""
        caps = self.client_capabilities
        missing: dict[str, Any] = {INPUT_METHODS[m][0]: {} for m, _ in requests.values()
                                   if m in INPUT_METHODS and INPUT_METHODS[m][0] not in caps}
        if missing:
            raise MissingCapability(missing)
        session = self._session
        assert session is not None
        related = {RELATED_TASK: {"taskId": self.task_id}}
        self.tasks._park(self.task, {key: {"method": method, "params": dict(params)}
                                     for key, (method, params) in requests.items()}, None)
        sent = [(key, method, {**params, "_meta": {**(params.get("_meta") or {}), **related}})
                for key, (method, params) in requests.items()]
        if not self._is_async:
            answers = {key: session.request(method, params) for key, method, params in sent}
            self.tasks._resume(self.task)
            return answers

        async def ask() -> dict[str, Any]:
            answers = {}
            for key, method, params in sent:
                answer = session.request(method, params)  # blocking on threads
                answers[key] = await answer if inspect.isawaitable(answer) else answer
            self.tasks._resume(self.task)
            return answers
        return ask()

    def elicit(self, message: str, schema: Mapping[str, Any], *,
               key: str = "elicitation") -> Any:
        return self._one(key, elicit_request(message, schema))

    def sample(self, params: Mapping[str, Any], *, key: str = "sampling") -> Any:
        return self._one(key, sampling_request(params))

    def list_roots(self, *, key: str = "roots") -> Any:
        return self._one(key, ("roots/list", {}))

    def _one(self, key: str, request: tuple[str, dict[str, Any]]) -> Any:
        answer = self.ask({key: request})
        if not self._is_async:
            return answer[key]

        async def one() -> Any:
            return (await answer)[key]
        return one()


_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO,
           "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
           "alert": logging.CRITICAL, "emergency": logging.CRITICAL}


# -- the runtime a ledger is handed --------------------------------------------------------


class _TaskRuntime:
    """The :class:`~mcp_sansio.app.tasks.TaskRuntime` of one bundled runtime: where its
    ``runner`` starts handlers, over the process's clocks."""

    def __init__(self, runner: Callable[[], _Runner], clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._runner = runner
        self.wall = clock
        self.monotonic = monotonic
        #: A real lock: on threads a task's handler runs on a thread of its own.
        self.lock: AbstractContextManager[Any] = threading.Lock()

    def new_task_id(self) -> str:
        import secrets  # here: it imports hashlib (OpenSSL), ~2 ms of a cold start

        return secrets.token_urlsafe(16)

    def waiter(self) -> _Waiter:
        return self._runner().waiter()

    def share(self, ledger: TaskLedger, stores: Any) -> TaskSharing:
        from ..stores.tasks import SharedTasks  # lazy: shared stores only

        sharing = SharedTasks(stores, wall=ledger.wall)
        sharing.ledger = ledger
        return sharing

    def launch(self, ledger: TaskLedger, task: Task, job: Job, ctx: Context) -> None:
        assert job.fn is not None
        runner = self._runner()
        is_async = inspect.iscoroutinefunction(job.fn)
        # An async def handler awaits its questions; a plain def one blocks on them (on
        # threads, where it has a thread of its own).
        task_ctx = TaskContext(ledger, task, ctx, runner.waiter, is_async)
        if "ctx" in job.kwargs:
            job.kwargs["ctx"] = task_ctx
        if is_async or not isinstance(runner, _ThreadRunner):
            async def run() -> None:
                if is_async:
                    await self._execute_async(ledger, task, job)
                else:
                    self._execute_sync(ledger, task, job)
            runner.start(run, task, True)
        else:
            runner.start(lambda: self._execute_sync(ledger, task, job), task, False)

    @staticmethod
    async def _execute_async(ledger: TaskLedger, task: Task, job: Job) -> None:
        assert job.fn is not None
        try:
            value = job.fn(*job.args, **job.kwargs)
            if inspect.isawaitable(value):
                value = await value
            ledger._finish(task, job, value=value)
        except Exception as exc:
            ledger._finish(task, job, error=exc)
        except BaseException:  # cancelled (tasks/cancel, expiry, or the runtime's end)
            calls: list[Callable[[], None]] = []
            with ledger._lock:
                if not task.terminal:
                    calls = ledger._settle(task, "cancelled")
            ledger._call(calls)
            raise

    @staticmethod
    def _execute_sync(ledger: TaskLedger, task: Task, job: Job) -> None:
        assert job.fn is not None
        try:
            value = job.fn(*job.args, **job.kwargs)
            ledger._finish(task, job, value=value)
        except Exception as exc:
            ledger._finish(task, job, error=exc)


#: The task runtimes of the bundled runtimes, one each (a ledger served by several keeps the
#: first one's lock and clocks; each runs its tasks where its connections run). Ledgers
#: homed on one share its lock: held only around a few dict operations, never around I/O.
ASYNCIO_TASKS: TaskRuntime = _TaskRuntime(_AsyncioRunner)
TRIO_TASKS: TaskRuntime = _TaskRuntime(_TrioRunner)
THREAD_TASKS: TaskRuntime = _TaskRuntime(_ThreadRunner)


def thread_task_runtime() -> TaskRuntime:
    """What a thread session's ``_task_runtime()`` answers: a thread of its own per task."""
    return THREAD_TASKS


class Tasks(TaskLedger):
    """A :class:`~mcp_sansio.app.tasks.TaskLedger` with the bundled runtimes' options.

    :param ttl_ms: how long a task is kept after its creation (``ttlMs``).
    :param poll_interval_ms: the polling interval suggested to clients (``pollIntervalMs``).
    :param max_tasks: tasks kept at once.
    :param runner: where every handler runs (a runner class such as ``_ThreadRunner``);
        default: on the runtime of the connection its ``tools/call`` came on.
    :param clock: wall-clock seconds for ``createdAt``/``lastUpdatedAt``.
    :param monotonic: seconds for expiry.
    :param store: where tasks are kept (default: in memory).
    :param shared: stores with ``tasks`` and ``bus`` (:class:`mcp_sansio.stores.MemoryStores`,
        :class:`mcp_sansio.adapters.redis.RedisStores`) through which every worker sharing
        them sees this server's tasks (see :doc:`/stores`).
    """

    def __init__(self, *, ttl_ms: int = DEFAULT_TTL_MS,
                 poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS,
                 max_tasks: int = DEFAULT_MAX_TASKS,
                 runner: Callable[[], _Runner] | None = None,
                 clock: Callable[[], float] | None = None,
                 monotonic: Callable[[], float] | None = None,
                 store: TaskStore | None = None, shared: Any = None) -> None:
        pinned = None if runner is None else _TaskRuntime(runner)
        super().__init__(pinned, ttl_ms=ttl_ms, poll_interval_ms=poll_interval_ms,
                         max_tasks=max_tasks, store=store, shared=shared, clock=clock,
                         monotonic=monotonic)
        if pinned is None:
            # Its own lock, the process's clocks and ids, and the sharing built now, as
            # before; each task still runs on the runtime of its connection.
            self.bind(_TaskRuntime(_ThreadRunner))
