"""The blocking twin of :mod:`.common.async_session`, for the threading adapter.

The same Client and Server shapes, with plain (blocking) methods. The session is driven by
one reader thread and by the threads that call it, so every use of the connection holds
:attr:`Session.lock`. A call waits on a held lock its answer releases; it is cancelled by a
:class:`CancelToken` (or a ``KeyboardInterrupt`` while waiting).

Handlers run in a thread pool. A plain ``def`` handler gets a :class:`ThreadContext`
(blocking ``ask``) and is cancelled cooperatively (``ctx.cancelled`` turns true; its result
is dropped). An ``async def`` handler runs on a private event loop in its worker thread, gets
an ``await``-able context, and is cancelled for real (its task is cancelled); it is stepped
once before that, and needs no task if it returns without suspending. (A runtime may start
it without the pool: the stdio server sets its runtime's ``eager`` and steps it on its
reader thread, :meth:`~.runtime.ThreadRuntime.start_eagerly`.)

The classes stack on two axes only: :class:`~mcp_sansio.app.session.Session`, the role
(``ClientLogic``, ``ServerLogic``), this colour. The thread primitives -- the clock, the
timer, the reader's pump, the lock, the worker pool, a call's wait -- are one object each
session holds, :class:`~.runtime.ThreadRuntime` (``session.runtime``), and a stdio
client's server process another (``client.child``, a
:class:`~.runtime.ThreadChild`); ``request`` is one function shared by both roles.
"""

from __future__ import annotations

import contextvars
import inspect
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from mcp_sansio import (
    ClientConnection,
    Era,
    Initialized,
    InputRequired,
    Notification,
    Request,
    RequestId,
    ServerConnection,
)
from mcp_sansio.app.calls import ClientCalls
from mcp_sansio.app.context import Context, Job, elicit_request, sampling_request
from mcp_sansio.app.errors import Call, ProgressCallback, RequestCancelledError, outcome
from mcp_sansio.app.server import Server, ServerLogic
from mcp_sansio.app.session import DEFAULT, Answering, ClientLogic, Listener

from ..common.async_session import AUTHORIZED_NOTE, AsyncContext
from ..common.plans import blocking
from ..common.stdio import DEFAULT_SHUTDOWN_TIMEOUT
from .runtime import DEFAULT_MAX_WORKERS, CancelToken, ThreadChild, ThreadRuntime, step_once

if TYPE_CHECKING:
    import asyncio
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    from mcp_sansio.app.tasks import TaskRuntime
else:  # imported when a handler first needs a loop: a cold start does without it
    from ..common.lazy import LazyModule

    asyncio = LazyModule("asyncio", globals())

__all__ = ["CancelToken", "SyncClient", "SyncServerSession", "SyncSubscription",
           "ThreadAsyncContext", "ThreadContext"]


#: The named calls, specialised for this colour: ``cancel`` takes a :class:`CancelToken`.
Calls = ClientCalls[CancelToken | None]


def _request(
    self: SyncClient | SyncServerSession, method: str,
    params: Mapping[str, Any] | None = None, *, timeout: Any = DEFAULT,
    max_total: Any = DEFAULT, progress: ProgressCallback | None = None,
    related_request_id: RequestId | None = None, cancel: CancelToken | None = None,
) -> dict[str, Any]:
    """Send any request and wait for its result.

    :param timeout: idle timeout in seconds, restarted by each progress notification
        (None: none); left out: the connection's ``request_timeout``.
    :param max_total: hard maximum in seconds, never extended by progress; left out:
        the connection's ``max_request_time``.
    :param progress: ``progress(progress, total, message)``, called (on the reader
        thread) for each progress notification (asks the peer for progress).
    :param related_request_id: (a server's request to its client) the client request
        this one is made on behalf of.
    :param cancel: a :class:`CancelToken`; cancelling it sends ``notifications/cancelled``
        and this call raises :class:`~mcp_sansio.app.errors.RequestCancelledError`.
    """
    # One definition for both roles of the blocking colour (a class of its own between
    # them and the role would make every concrete class one deeper).
    if cancel is not None and cancel.cancelled:
        raise RequestCancelledError(f"{method} was cancelled before it was sent")
    call = self._start_call(method, params, timeout=timeout, max_total=max_total,
                           on_progress=progress, related_request_id=related_request_id)
    wait_call = self.runtime.wait_call
    while True:
        wait_call(call, cancel)
        event = call.event
        if isinstance(event, InputRequired):
            assert isinstance(self, ClientLogic)  # only a client is asked for input
            call = self._retry_call(call, {
                key: _resolve(self._input_callback(method)(params))
                for key, method, params in self._input_items(event)})
            continue
        return outcome(call, self._closed_detail())

def _task_runtime(self: SyncClient | SyncServerSession) -> TaskRuntime:
    """The tasks seam (:class:`mcp_sansio.app.tasks.TaskHost`): a thread of its own per task."""
    # Lazy: tasks only: a cold start does without them.
    from ..common.tasks import thread_task_runtime
    return thread_task_runtime()


def _spawn_awaitable(self: SyncClient | SyncServerSession, awaitable: Any) -> None:
    self.runtime.spawn_awaitable(awaitable)


#: A session of the blocking colour, either role (what its :class:`ThreadRuntime` serves).
ThreadSession: TypeAlias = "SyncClient | SyncServerSession"


#: Per worker thread: the event loop its ``async def`` handlers run on.
_worker = threading.local()


def _resolve(value: Any) -> Any:
    """A callback's answer; an ``async`` callback is run to completion on its own loop."""
    if inspect.isawaitable(value):
        async def wait() -> Any:
            return await value
        return asyncio.run(wait())
    return value


# -- the client ----------------------------------------------------------------------------------


class SyncSockets(Protocol):
    """A blocking HTTP client's sockets, held by the client (``client.sockets``): the
    runtime's half of the HTTP link (``client.link``), a request under the OAuth retry
    (the auth machinery is loaded by the HTTP modules only), and the close (``DELETE``,
    then the sockets dropped and the threads joined)."""

    def authorized(self, auth: Any, send: Callable[[], dict[str, Any]]) -> dict[str, Any]: ...
    def close(self, timeout: float | None) -> None: ...


class SyncSubscription:
    """A listen stream: ``for notification in subscription`` (blocks); ``close()`` or
    leaving ``with`` cancels it."""

    def __init__(self, client: SyncClient, listener: Listener) -> None:
        self._client = client
        self._listener = listener

    @property
    def acknowledged(self) -> dict[str, Any] | None:
        return self._listener.acknowledged

    def _wait(self, ready: Callable[[], bool]) -> None:
        event = threading.Event()
        with self._client.lock:
            if ready():
                return
            self._listener.wake = event.set
        event.wait()

    def wait_acknowledged(self) -> dict[str, Any]:
        listener = self._listener
        while listener.acknowledged is None:
            if listener.ended:
                outcome(listener.call, self._client._closed_detail())
                raise ConnectionError("the listen stream ended before it was acknowledged")
            self._wait(lambda: listener.acknowledged is not None or listener.ended)
        return listener.acknowledged

    def __iter__(self) -> SyncSubscription:
        return self

    def __next__(self) -> Notification:
        listener = self._listener
        while True:
            with self._client.lock:
                if listener.items:
                    return listener.items.popleft()
                if listener.ended:
                    raise StopIteration
            self._wait(lambda: bool(listener.items) or listener.ended)

    def close(self) -> None:
        self._client._cancel_call(self._listener.call, "listen stream closed")

    def __enter__(self) -> SyncSubscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncClient(ClientLogic):
    """A blocking MCP client. The methods mirror the async Client's (keywords ``timeout``,
    ``max_total``, ``progress``); each also takes ``cancel=`` (a :class:`CancelToken`).
    Callbacks (progress, notifications) run on the reader thread and must not block on this
    client. Its thread primitives are the :class:`~.runtime.ThreadRuntime` it holds
    (``runtime``: ``max_workers``, ``pool`` and ``lock`` go to it)."""

    runtime: ThreadRuntime

    def __init__(self, conn: ClientConnection, *, max_workers: int = DEFAULT_MAX_WORKERS,
                 pool: ThreadPoolExecutor | None = None,
                 lock: threading.RLock | None = None, **kwargs: Any) -> None:
        self.runtime = ThreadRuntime(self, max_workers=max_workers, pool=pool, lock=lock)
        super().__init__(conn, **kwargs)
        self.lock = self.runtime.lock
        #: The stdio server process (``connect_stdio``), or None.
        self.child: ThreadChild | None = None
        #: The stdio server's exit status once it has ended (its child sets it).
        self.returncode: int | None = None
        #: The HTTP client's sockets (``connect_http``), or None.
        self.sockets: SyncSockets | None = None

    def request(
        self, method: str, params: Mapping[str, Any] | None = None, *,
        timeout: Any = DEFAULT, max_total: Any = DEFAULT,
        progress: ProgressCallback | None = None, related_request_id: RequestId | None = None,
        cancel: CancelToken | None = None,
    ) -> dict[str, Any]:
        auth = self._auth
        if auth is None or self.sockets is None:
            return _request(self, method, params, timeout=timeout, max_total=max_total,
                            progress=progress, related_request_id=related_request_id,
                            cancel=cancel)
        return self.sockets.authorized(auth, lambda: _request(
            self, method, params, timeout=timeout, max_total=max_total, progress=progress,
            related_request_id=related_request_id, cancel=cancel))

    request.__doc__ = f"{_request.__doc__}{AUTHORIZED_NOTE}"

    _spawn_awaitable = _spawn_awaitable
    _task_runtime = _task_runtime

    def _wait_call(self, call: Call, cancel: CancelToken | None) -> None:
        """Block until ``call`` ends (the runtime's wait; benchmarks drive calls by hand)."""
        self.runtime.wait_call(call, cancel)

    @property
    def _process(self) -> subprocess.Popen[bytes] | None:
        return self.child.process if self.child is not None else None

    def close(self, shutdown_timeout: float | None = None) -> None:
        """Close the connection. A stdio client then stops the server: close its stdin,
        wait, SIGTERM, wait, SIGKILL (its whole process group), waiting
        ``shutdown_timeout`` seconds at each step (None: ``DEFAULT_SHUTDOWN_TIMEOUT``). An
        HTTP client ends the session with ``DELETE`` (handshake era), waits at most
        ``shutdown_timeout`` seconds (None: ``DEFAULT_CLOSE_TIMEOUT``) for its sockets to
        close, drops them, aborts what is still pending and joins its threads."""
        if self.sockets is not None:
            self.sockets.close(shutdown_timeout)
            return
        if shutdown_timeout is None:
            shutdown_timeout = DEFAULT_SHUTDOWN_TIMEOUT
        runtime = self.runtime
        with self.lock:
            if self.closed is None:
                self.conn.close(now=self._now())
                self.service()
            runtime.out_fd = None
        child = self.child
        if child is not None:
            child.stop(shutdown_timeout)
        runtime.join_reader(shutdown_timeout)
        if child is not None:
            child.close_streams()
        runtime.stop_workers()
        runtime.close_pipes()

    def _spawn_incoming(self, request: Request) -> None:
        self.runtime.pool.submit(self._answer, request)

    def _cancel_incoming(self, request_id: RequestId) -> None:
        pass  # a callback answering the server is not interruptible; its answer is dropped

    def _answer(self, request: Request) -> None:
        with Answering(self, request) as answer:
            answer.value = _resolve(self._input_callback(request.method)(request.params or {}))

    def connect(self, *, era: Era | None = None) -> Initialized:
        """Negotiate the era and wait until the connection is usable (``connect_stdio`` and
        ``connect_http`` call it unless told not to); ``era``: a cached verdict."""
        self._connect_within(era, None)
        return self._connect_outcome()

    def _connect_within(self, era: Era | None, timeout: float | None) -> bool:
        """Start connecting and wait at most ``timeout`` seconds (None: no bound) until the
        connection is usable or closed: whether it came to that."""
        if self._start_connect(era):
            return True
        event = threading.Event()
        with self.lock:
            if self.initialized is None and self.closed is None:
                self._ready_wakers.append(event.set)
            else:
                event.set()
        return event.wait(timeout)

    # -- the named calls: each defined once in mcp_sansio/app/calls.py, made into this
    # colour's method by adapters/common/plans.py (blocking); signature and docstring come
    # from the definition (tests/app/test_app_calls.py checks both colours have every one).

    list_tools = blocking(Calls.list_tools)
    call_tool = blocking(Calls.call_tool)
    list_resources = blocking(Calls.list_resources)
    list_resource_templates = blocking(Calls.list_resource_templates)
    read_resource = blocking(Calls.read_resource)
    subscribe = blocking(Calls.subscribe)
    unsubscribe = blocking(Calls.unsubscribe)
    list_prompts = blocking(Calls.list_prompts)
    get_prompt = blocking(Calls.get_prompt)
    complete = blocking(Calls.complete)
    set_logging_level = blocking(Calls.set_logging_level)
    ping = blocking(Calls.ping)
    discover = blocking(Calls.discover)

    def listen(self, notifications: Mapping[str, Any], *,
               timeout: float | None = None) -> SyncSubscription:
        """Open a listen stream (stateless era) and wait for its acknowledgement."""
        subscription = SyncSubscription(self, self._start_listen(notifications, timeout))
        subscription.wait_acknowledged()
        return subscription

    # -- tasks (defined in mcp_sansio/app/calls.py: plans of app/client_tasks.py) -----------

    def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    call_tool_as_task = blocking(Calls.call_tool_as_task)
    task_result = blocking(Calls.task_result)
    refresh_task = blocking(Calls.refresh_task)
    cancel_task = blocking(Calls.cancel_task)
    answer_task = blocking(Calls.answer_task)
    list_tasks = blocking(Calls.list_tasks)


# -- the server ------------------------------------------------------------------------------------


class ThreadContext(Context):
    """The context of a plain ``def`` handler: ``ask`` and friends block."""

    session: SyncServerSession

    def ask(self, requests: Mapping[str, tuple[str, Mapping[str, Any]]],
            request_state: str | None = None) -> dict[str, Any]:
        planned = self._plan_ask(requests, request_state)
        if planned is not None:
            return planned
        return {key: self.session.request(method, params, related_request_id=self.request_id)
                for key, (method, params) in requests.items()}

    def elicit(self, message: str, schema: Mapping[str, Any], *,
               key: str = "elicitation") -> dict[str, Any]:
        """As :meth:`AsyncContext.elicit <.common.async_session.AsyncContext.elicit>`, blocking."""
        return self.ask({key: elicit_request(message, schema)})[key]  # type: ignore[no-any-return]

    def sample(self, params: Mapping[str, Any], *, key: str = "sampling") -> dict[str, Any]:
        """As :meth:`AsyncContext.sample <.common.async_session.AsyncContext.sample>`, blocking."""
        return self.ask({key: sampling_request(params)})[key]  # type: ignore[no-any-return]

    def list_roots(self, *, key: str = "roots") -> dict[str, Any]:
        """The client's roots (``roots/list``), blocking."""
        return self.ask({key: ("roots/list", {})})[key]  # type: ignore[no-any-return]


class ThreadAsyncContext(AsyncContext):
    """The context of an ``async def`` handler on threads: awaitable, blocking inside (the
    handler's loop is private to its worker thread)."""

    session: Any

    async def ask(self, requests: Mapping[str, tuple[str, Mapping[str, Any]]],
                  request_state: str | None = None) -> dict[str, Any]:
        return ThreadContext.ask(self, requests, request_state)  # type: ignore[arg-type]


class SyncServerSession(ServerLogic):
    """One served connection; each request runs in the thread pool. Its thread primitives
    are the :class:`~.runtime.ThreadRuntime` it holds (``runtime``: ``max_workers``,
    ``pool`` and ``lock`` go to it; the stdio server sets ``runtime.eager``)."""

    runtime: ThreadRuntime

    def __init__(self, conn: ServerConnection, server: Server, *,
                 max_workers: int = DEFAULT_MAX_WORKERS,
                 pool: ThreadPoolExecutor | None = None,
                 lock: threading.RLock | None = None,
                 runtime_class: type[ThreadRuntime] = ThreadRuntime, **kwargs: Any) -> None:
        # ``runtime_class``: the HTTP server's sessions step async handlers their own way.
        self.runtime = runtime_class(self, max_workers=max_workers, pool=pool, lock=lock)
        super().__init__(conn, server, **kwargs)
        self.lock = self.runtime.lock
        self._contexts: dict[RequestId, Context] = {}

    request = _request
    _spawn_awaitable = _spawn_awaitable
    _task_runtime = _task_runtime

    def _spawn_incoming(self, request: Request) -> None:
        ctx: Context = ThreadContext(self, request)
        job = self._make_job(request, ctx)
        if job is None:
            return
        if inspect.iscoroutinefunction(job.fn):
            ctx = ThreadAsyncContext(self, request)
            if "ctx" in job.kwargs:
                job.kwargs["ctx"] = ctx
        self._contexts[request.request_id] = ctx
        runtime = self.runtime
        if runtime.eager and runtime.start_eagerly(request, job, ctx):
            return
        runtime.pool.submit(self._run, request, job, ctx)

    def _cancel_incoming(self, request_id: RequestId) -> None:
        self._eager.pop(request_id, None)  # cancelled in the same read: it never runs
        ctx = self._contexts.pop(request_id, None)
        if ctx is not None:
            ctx.cancelled = True
        cancel = self.runtime.cancellers.pop(request_id, None)
        if cancel is not None:
            cancel()

    def _run(self, request: Request, job: Job, ctx: Context) -> None:
        with self.runtime.job_run(self, request, job, ctx) as run:
            assert job.fn is not None
            if inspect.iscoroutinefunction(job.fn):
                run.value = self._run_async(request.request_id, job, ctx)
            else:
                run.value = job.fn(*job.args, **job.kwargs)

    def _run_async(self, request_id: RequestId, job: Job, ctx: Context) -> Any:
        assert job.fn is not None
        loop = getattr(_worker, "loop", None)
        if loop is None:  # one private loop per worker thread, kept for its next handlers
            loop = _worker.loop = asyncio.new_event_loop()
        # Its task's first step, in a copy of the context: one that returns without
        # suspending is answered here; one that suspends goes on in the same task.
        coro = job.fn(*job.args, **job.kwargs)
        context = contextvars.copy_context()
        done, task = step_once(loop, coro, context)
        if done:
            return task  # its value: it ended in its first step
        self.runtime.cancel_with(request_id, ctx, loop, task)
        return loop.run_until_complete(task)

