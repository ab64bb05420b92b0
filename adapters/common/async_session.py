"""The high-level Client and Server shapes, written once for every ``async`` runtime.

asyncio and trio differ only in their primitives. A session holds a runtime object
(``self.runtime``, an :class:`AsyncRuntime`: asyncio's is in ``.asyncio.runtime``, trio's
in ``.trio.runtime``): the sans-IO session logic's hooks (``_now``, ``_arm``, ``_write``,
see :class:`~mcp_sansio.app.session.Session`) delegate to it, and the awaiting code below
calls it directly (``new_event()``, ``start_task(key, coroutine)``, ``cancel_task(key)``,
``wait_call(call)``). The classes stack on two axes only:
:class:`~mcp_sansio.app.session.Session`, the role (``ClientLogic``, ``ServerLogic``), this
colour (:class:`AsyncClient`, :class:`AsyncServerSession`); ``request`` is one function
shared by both roles. The blocking twin for threads is in :mod:`.threading.session`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from typing import TYPE_CHECKING, Any, Never, Protocol

from mcp_sansio import Era, Initialized, InputRequired, Notification, Request, RequestId
from mcp_sansio.app.calls import ClientCalls
from mcp_sansio.app.context import Context, Job, elicit_request, sampling_request
from mcp_sansio.app.errors import Call, ProgressCallback, outcome
from mcp_sansio.app.server import ServerLogic
from mcp_sansio.app.session import DEFAULT, Answering, ClientLogic, Listener, log

from .plans import asynchronous
from .stdio import DEFAULT_SHUTDOWN_TIMEOUT

if TYPE_CHECKING:
    from mcp_sansio.app.tasks import TaskRuntime

__all__ = ["AsyncClient", "AsyncContext", "AsyncServerSession", "AsyncSubscription"]

#: The named calls, specialised for this colour: no ``cancel`` option (an ``async`` caller
#: cancels its task or scope; see mcp_sansio/app/calls.py).
Calls = ClientCalls[Never]


class AsyncEvent(Protocol):
    def set(self) -> None: ...
    def wait(self) -> Awaitable[Any]: ...


_FIRST_SENT = object()


class _Resumed(Coroutine[Any, Any, Any]):
    """A coroutine already stepped once (``send(None)`` gave ``first``), for a task to go
    on with: the task's first step gets ``first`` back (the future the coroutine waits
    for); every later step, and any exception the task throws in (its cancellation
    included, even before its first step), goes to the coroutine itself."""

    __slots__ = ("_coro", "_first")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self._coro = coro
        self._first = first

    def send(self, value: Any) -> Any:
        first = self._first
        if first is not _FIRST_SENT:
            self._first = _FIRST_SENT
            return first
        return self._coro.send(value)

    def throw(self, *args: Any) -> Any:
        self._first = _FIRST_SENT
        return self._coro.throw(*args)

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, None, None]:  # pragma: no cover - tasks only
        raise TypeError("a resumed handler runs in its task only")


class AsyncChild(Protocol):
    """A stdio client's server process on one runtime, held by the client
    (``client.child``): its process object, and the spec's shutdown (then the client's
    jobs are stopped)."""

    process: Any

    async def aclose(self, shutdown_timeout: float) -> None: ...


class AsyncSockets(Protocol):
    """An HTTP client's sockets on one runtime, held by the client (``client.sockets``):
    the runtime's half of the HTTP link (``client.link``), a request under the OAuth retry
    (the auth machinery is loaded by the HTTP modules only), and the close (``DELETE``,
    then the sockets dropped)."""

    async def authorized(self, auth: Any,
                         send: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]: ...
    async def aclose(self, timeout: float | None) -> None: ...


class AsyncRuntime(Protocol):
    """What one session needs from an ``async`` runtime, held as ``session.runtime``."""

    def now(self) -> float: ...
    def wall_now(self) -> float | None: ...
    def arm(self, deadline: float | None) -> None: ...
    def write(self, data: bytes) -> None: ...
    def new_event(self) -> AsyncEvent: ...
    def start_task(self, key: RequestId | None, coro: Coroutine[Any, Any, None]) -> None: ...
    def cancel_task(self, key: RequestId) -> bool: ...
    def run_eager(self) -> None: ...
    async def wait_call(self, call: Call) -> None: ...
    async def sleep(self, seconds: float) -> None: ...
    def task_runtime(self) -> TaskRuntime: ...


#: What ``auth`` adds to a client's ``request`` (both colours' docstrings end with it).
AUTHORIZED_NOTE = """
    An HTTP client made with ``auth`` authorizes first when the server challenges, then
    sends again (see :mod:`.auth.session`); it raises
    :class:`~mcp_sansio.auth.AuthFlowError` when authorization was needed and failed.
    """


async def _request(
    self: AsyncClient | AsyncServerSession, method: str,
    params: Mapping[str, Any] | None = None, *, timeout: Any = DEFAULT,
    max_total: Any = DEFAULT, progress: ProgressCallback | None = None,
    related_request_id: RequestId | None = None,
) -> dict[str, Any]:
    """Send any request and await its result.

    :param timeout: idle timeout in seconds, restarted by each progress notification
        (None: none); left out: the connection's ``request_timeout``.
    :param max_total: hard maximum in seconds, never extended by progress; left out:
        the connection's ``max_request_time``.
    :param progress: ``progress(progress, total, message)``, called for each progress
        notification (asks the peer for progress).
    :param related_request_id: (a server's request to its client) the client request
        this one is made on behalf of.
    :raises McpError: the peer answered with an error.
    :raises RequestTimeout: no answer in time (``notifications/cancelled`` was sent).
    :raises ConnectionClosedError: the connection closed first.
    """
    # One definition for both roles of the async colour (a class of its own between them
    # and the role would make every concrete class one deeper).
    call = self._start_call(method, params, timeout=timeout, max_total=max_total,
                           on_progress=progress, related_request_id=related_request_id)
    wait_call = self.runtime.wait_call
    while True:
        await wait_call(call)
        event = call.event
        if isinstance(event, InputRequired):
            assert isinstance(self, ClientLogic)  # only a client is asked for input
            answers: dict[str, Any] = {}
            for key, input_method, input_params in self._input_items(event):
                answers[key] = await _maybe_await(
                    self._input_callback(input_method)(input_params))
            call = self._retry_call(call, answers)
            continue
        return outcome(call, self._closed_detail())


def _spawn_awaitable(self: AsyncClient | AsyncServerSession,
                     awaitable: Awaitable[Any]) -> None:
    """An ``async`` callback: a background job of the runtime, its failure logged."""
    async def run() -> None:
        try:
            await awaitable
        except Exception:
            log.exception("an async callback raised")
    self.runtime.start_task(None, run())


def _task_runtime(self: AsyncClient | AsyncServerSession) -> TaskRuntime:
    """The tasks seam (:class:`mcp_sansio.app.tasks.TaskHost`): the runtime's task runtime."""
    return self.runtime.task_runtime()


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


# -- the client ------------------------------------------------------------------------------------


class AsyncSubscription:
    """A ``subscriptions/listen`` stream: ``async for notification in subscription``.
    Leaving ``async with`` (or :meth:`close`) cancels it."""

    def __init__(self, client: AsyncClient, listener: Listener) -> None:
        self._client = client
        self._listener = listener

    @property
    def acknowledged(self) -> dict[str, Any] | None:
        """The subset of the filter the server honours (after :meth:`wait_acknowledged`)."""
        return self._listener.acknowledged

    async def _wait(self) -> None:
        event = self._client.runtime.new_event()
        self._listener.wake = event.set
        try:
            await event.wait()
        except BaseException:
            await self.close()
            raise

    async def wait_acknowledged(self) -> dict[str, Any]:
        """Wait for the server's acknowledgement and return it (:attr:`acknowledged`)."""
        listener = self._listener
        while listener.acknowledged is None:
            if listener.ended:
                outcome(listener.call, self._client._closed_detail())  # raises on errors
                raise ConnectionError("the listen stream ended before it was acknowledged")
            await self._wait()
        return listener.acknowledged

    def __aiter__(self) -> AsyncSubscription:
        return self

    async def __anext__(self) -> Notification:
        listener = self._listener
        while not listener.items:
            if listener.ended:
                raise StopAsyncIteration
            await self._wait()
        return listener.items.popleft()

    async def close(self) -> None:
        """Cancel the stream (``notifications/cancelled`` for the listen request)."""
        self._client._cancel_call(self._listener.call, "listen stream closed")

    async def __aenter__(self) -> AsyncSubscription:
        await self.wait_acknowledged()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncClient(ClientLogic):
    """An MCP client on an ``async`` runtime. Every method returns the server's result as a
    plain dict (the ``list_*`` methods: the items of every page) and raises
    :class:`~mcp_sansio.adapters.errors.McpError`,
    :class:`~mcp_sansio.adapters.errors.RequestTimeout` or
    :class:`~mcp_sansio.adapters.errors.ConnectionClosedError` (all in
    :mod:`mcp_sansio.adapters.errors`). Each named call accepts the keywords ``timeout``,
    ``max_total`` and ``progress`` of :meth:`request`. Its runtime's primitives are the
    runtime object it holds (``runtime``: an :class:`AsyncRuntime`)."""

    runtime: AsyncRuntime

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The stdio server process (``connect_stdio``), or None.
        self.child: AsyncChild | None = None
        #: The stdio server's exit status once it has ended (its child sets it).
        self.returncode: int | None = None
        #: The HTTP client's sockets (``connect_http``), or None.
        self.sockets: AsyncSockets | None = None

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None, *,
        timeout: Any = DEFAULT, max_total: Any = DEFAULT,
        progress: ProgressCallback | None = None, related_request_id: RequestId | None = None,
    ) -> dict[str, Any]:
        auth = self._auth
        if auth is None or self.sockets is None:
            return await _request(self, method, params, timeout=timeout, max_total=max_total,
                                  progress=progress, related_request_id=related_request_id)
        return await self.sockets.authorized(auth, lambda: _request(
            self, method, params, timeout=timeout, max_total=max_total, progress=progress,
            related_request_id=related_request_id))

    request.__doc__ = f"{_request.__doc__}{AUTHORIZED_NOTE}"

    _spawn_awaitable = _spawn_awaitable
    _task_runtime = _task_runtime

    @property
    def _process(self) -> Any:
        """The stdio server's process object (the runtime's own kind), or None."""
        return self.child.process if self.child is not None else None

    async def aclose(self, shutdown_timeout: float | None = None) -> None:
        """Close the connection. A stdio client then stops the server as the spec says:
        close its stdin, wait, SIGTERM, wait, SIGKILL (to its whole process group), waiting
        ``shutdown_timeout`` seconds at each step (None: ``DEFAULT_SHUTDOWN_TIMEOUT``). An
        HTTP client ends the session with ``DELETE`` (handshake era), waits at most
        ``shutdown_timeout`` seconds (None: ``DEFAULT_CLOSE_TIMEOUT``) for its sockets to
        close, then drops them and aborts what is still pending."""
        if self.sockets is not None:
            await self.sockets.aclose(shutdown_timeout)
            return
        if self.closed is None:
            self.conn.close(now=self._now())
            self.service()
        if self.child is not None:
            await self.child.aclose(DEFAULT_SHUTDOWN_TIMEOUT if shutdown_timeout is None
                                    else shutdown_timeout)

    def _spawn_incoming(self, request: Request) -> None:
        self.runtime.start_task(request.request_id, self._answer(request))

    def _cancel_incoming(self, request_id: RequestId) -> None:
        self.runtime.cancel_task(request_id)

    async def _answer(self, request: Request) -> None:
        """Answer a handshake-era server's request (sampling, elicitation, roots)."""
        with Answering(self, request) as answer:
            answer.value = await _maybe_await(self._input_callback(request.method)(
                request.params or {}))

    async def connect(self, *, era: Era | None = None) -> Initialized:
        """Negotiate the era (the core probes with ``server/discover`` and falls back to
        ``initialize``) and wait until the connection is usable. ``era`` is a cached
        verdict (:attr:`era` of an earlier connection)."""
        if not self._start_connect(era):
            while self.initialized is None and self.closed is None:
                event = self.runtime.new_event()
                self._ready_wakers.append(event.set)
                await event.wait()
        return self._connect_outcome()

    # -- the named calls: each defined once in mcp_sansio/app/calls.py, made into this
    # colour's method by adapters/common/plans.py (asynchronous); signature and docstring come
    # from the definition (tests/app/test_app_calls.py checks both colours have every one).

    list_tools = asynchronous(Calls.list_tools)
    call_tool = asynchronous(Calls.call_tool)
    list_resources = asynchronous(Calls.list_resources)
    list_resource_templates = asynchronous(Calls.list_resource_templates)
    read_resource = asynchronous(Calls.read_resource)
    subscribe = asynchronous(Calls.subscribe)
    unsubscribe = asynchronous(Calls.unsubscribe)
    list_prompts = asynchronous(Calls.list_prompts)
    get_prompt = asynchronous(Calls.get_prompt)
    complete = asynchronous(Calls.complete)
    set_logging_level = asynchronous(Calls.set_logging_level)
    ping = asynchronous(Calls.ping)
    discover = asynchronous(Calls.discover)

    async def listen(self, notifications: Mapping[str, Any], *,
                     timeout: float | None = None) -> AsyncSubscription:
        """Open a listen stream (stateless era) and wait for its acknowledgement."""
        subscription = AsyncSubscription(self, self._start_listen(notifications, timeout))
        await subscription.wait_acknowledged()
        return subscription

    # -- tasks (defined in mcp_sansio/app/calls.py: plans of app/client_tasks.py) -----------

    async def _sleep(self, seconds: float) -> None:
        await self.runtime.sleep(seconds)

    call_tool_as_task = asynchronous(Calls.call_tool_as_task)
    task_result = asynchronous(Calls.task_result)
    refresh_task = asynchronous(Calls.refresh_task)
    cancel_task = asynchronous(Calls.cancel_task)
    answer_task = asynchronous(Calls.answer_task)
    list_tasks = asynchronous(Calls.list_tasks)


# -- the server ------------------------------------------------------------------------------------


class AsyncContext(Context):
    """The handler's context on an ``async`` runtime."""

    session: AsyncServerSession

    async def ask(self, requests: Mapping[str, tuple[str, Mapping[str, Any]]],
                  request_state: str | None = None) -> dict[str, Any]:
        """Ask the client for input: ``{key: (method, params)}`` -> ``{key: result}``.

        Handshake era: real requests to the client (sampling, elicitation, roots), one
        after the other. Stateless era: the answers the retry carries, or else this request
        is answered ``input_required`` (with ``request_state``) and the handler stops here;
        the client's retry runs it again from the top."""
        planned = self._plan_ask(requests, request_state)
        if planned is not None:
            return planned
        return {key: await self.session.request(method, params,
                                                related_request_id=self.request_id)
                for key, (method, params) in requests.items()}

    async def elicit(self, message: str, schema: Mapping[str, Any], *,
                     key: str = "elicitation") -> dict[str, Any]:
        """Ask the user for input through the client (``elicitation/create``, form mode):
        the client's result (``action``, and ``content`` when accepted)."""
        return (await self.ask({key: elicit_request(message, schema)}))[key]  # type: ignore[no-any-return]

    async def sample(self, params: Mapping[str, Any], *, key: str = "sampling"
                     ) -> dict[str, Any]:
        """Ask the client's model for a completion (``sampling/createMessage``)."""
        return (await self.ask({key: sampling_request(params)}))[key]  # type: ignore[no-any-return]

    async def list_roots(self, *, key: str = "roots") -> dict[str, Any]:
        """The client's roots (``roots/list``)."""
        return (await self.ask({key: ("roots/list", {})}))[key]  # type: ignore[no-any-return]


class AsyncServerSession(ServerLogic):
    """One served connection: every request runs its handler in its own task. Its
    runtime's primitives are the runtime object it holds (``runtime``: an
    :class:`AsyncRuntime`)."""

    runtime: AsyncRuntime

    request = _request
    _spawn_awaitable = _spawn_awaitable
    _task_runtime = _task_runtime

    def _start_task(self, key: RequestId | None, coro: Coroutine[Any, Any, None]) -> None:
        """Start a handler's job (an HTTP session changes how: it steps it at once)."""
        self.runtime.start_task(key, coro)

    context_class: type[AsyncContext] = AsyncContext

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._contexts: dict[RequestId, Context] = {}

    def _spawn_incoming(self, request: Request) -> None:
        ctx = self.context_class(self, request)
        job = self._make_job(request, ctx)
        if job is not None:
            self._contexts[request.request_id] = ctx
            self._start_task(request.request_id, self._run(request, job, ctx))

    def _cancel_incoming(self, request_id: RequestId) -> None:
        ctx = self._contexts.pop(request_id, None)
        if ctx is not None:
            ctx.cancelled = True
        self.runtime.cancel_task(request_id)

    async def _run(self, request: Request, job: Job, ctx: Context) -> None:
        value: Any = None
        error: Exception | None = None
        try:
            assert job.fn is not None
            value = await _maybe_await(job.fn(*job.args, **job.kwargs))
        except Exception as exc:
            error = exc
        finally:
            self._contexts.pop(request.request_id, None)
        self._job_ended(request, job, ctx, value, error)


Callback = Callable[[dict[str, Any]], Any]
