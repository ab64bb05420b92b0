"""Tasks for the high-level :class:`~mcp_sansio.app.server.Server`: the
``io.modelcontextprotocol/tasks`` extension of 2026-07-28 (SEP-2663), and the experimental
tasks of 2025-11-25 (``basic/utilities/tasks.mdx``). One task store and one way of running
handlers serve both; only the wire differs.

Theory of operation
-------------------
A tool registered with ``task_support="optional"`` or ``"required"`` may run as a *task*: the
``tools/call`` is answered at once with a task (its id, status, times, TTL and polling
interval) and the handler goes on in the background; the task keeps its outcome for the
client to fetch.

**2026-07-28 (the extension).** The server decides (SEP-2663, "server-directed creation"): a
request whose ``_meta`` client capabilities declare
``extensions["io.modelcontextprotocol/tasks"]`` gets a task for every task-supporting tool,
as a flat ``CreateTaskResult`` (``resultType: "task"``, ``ttlMs``, ``pollIntervalMs``); one
that does not gets the plain result (``optional``) or -32021 naming the extension
(``required``), and its ``tasks/*`` requests are refused with -32021. A v1 ``task`` param is
ignored. The client polls ``tasks/get`` (a *DetailedTask*: once terminal the tool's result,
or for a protocol-level failure the error, inlined), answers the task's questions with
``tasks/update`` and stops it with ``tasks/cancel``; both are acknowledged with an empty
``{resultType: "complete"}``. There is no ``tasks/result`` and no ``tasks/list`` there
(-32601, from the core's method table).

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mcp_sansio import FEATURES, Era, ErrorCode

from .context import Context, Job, tool_error_result
from .errors import InputRequiredSignal, McpError, MissingCapability, ToolError

if TYPE_CHECKING:
    from mcp_sansio import Request

__all__ = [
    "DEFAULT_MAX_TASKS",
    "DEFAULT_POLL_INTERVAL_MS",
    "DEFAULT_TTL_MS",
    "MAX_REMOTE_POLL",
    "RELATED_TASK",
    "REMOTE_CANCEL_WAIT",
    "TASKS_EXTENSION",
    "InMemoryTaskStore",
    "Task",
    "TaskHost",
    "TaskLedger",
    "TaskRuntime",
    "TaskSharing",
    "TaskStore",
    "ToolEntry",
    "ToolRouter",
    "Waiter",
]

log = logging.getLogger("mcp_sansio.adapters.tasks")

#: The extension's identifier under ``capabilities.extensions`` (SEP-2663).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: 2025-11-25: the ``_meta`` key naming the task a message belongs to.
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: How long a task is kept after its creation: ten minutes -- long enough for a client to
#: come back for a slow job's result, short enough that abandoned tasks do not pile up.
DEFAULT_TTL_MS = 10 * 60 * 1000
#: How often a client is asked to poll ``tasks/get``: half a second keeps a human-facing
#: client responsive without flooding the server.
DEFAULT_POLL_INTERVAL_MS = 500
#: Tasks kept at once (running or finished, until their TTL): bounds memory against a
#: client that starts tasks and never comes back.
DEFAULT_MAX_TASKS = 1000
#: Seconds a ``tasks/cancel`` (2025-11-25) that landed on a worker not running the task waits
#: for that worker to store the cancelled record, so as to answer the Task it ends as: 5. A
#: live worker does it in a bus round trip (milliseconds); past the bound the worker is taken
#: for dead and the cancel is written here (its handler died with it).
REMOTE_CANCEL_WAIT = 5.0
#: The longest a blocking ``tasks/result`` on a worker not running the task sleeps between
#: two reads of the record when no bus notice came (Redis publish/subscribe delivers at most
#: once): the task's ``pollIntervalMs``, capped at one second.
MAX_REMOTE_POLL = 1.0

TERMINAL = frozenset({"completed", "failed", "cancelled"})
_GENERIC_FAILURE = {"code": int(ErrorCode.INTERNAL_ERROR), "message": "Internal error"}


def _iso(seconds: float) -> str:
    import datetime  # here: a server that creates no task never pays for it

    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


def _raiser(error: BaseException) -> Callable[[], Any]:
    def fail() -> Any:
        raise error
    return fail


def _required() -> dict[str, Any]:
    return {"extensions": {TASKS_EXTENSION: {}}}


class Task:
    """One task: its status and, once terminal, its result or error."""

    def __init__(self, task_id: str, created: float, expires: float, ttl_ms: int,
                 poll_interval_ms: int) -> None:
        self.task_id = task_id
        self.status = "working"
        self.status_message: str | None = None
        self.created = created
        self.updated = created
        self.expires = expires
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        #: The tool's result (``completed``) or the JSON-RPC error (``failed``).
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        #: Questions waiting for ``tasks/update``, by key; and the answers so far.
        self.input_requests: dict[str, dict[str, Any]] = {}
        self.answers: dict[str, Any] = {}
        #: 2025-11-25 tasks: the session that created it (only it may see the task).
        self.owner: weakref.ref[Any] | None = None
        self._wake: Callable[[], None] | None = None
        self._cancel: Callable[[], None] | None = None
        #: 2025-11-25: sends ``notifications/tasks/status`` (given the v1 Task).
        self._notify: Callable[[dict[str, Any]], None] | None = None
        #: Called once the task is terminal (``tasks/result`` waiting for it).
        self._done: list[Callable[[], None]] = []
        #: Shared tasks: who may see the task on any worker -- a digest of the creating
        #: session (2025-11-25; None for 2026-07-28, where the id is the capability) and the
        #: authenticated principal (None without authorization).
        self.owner_key: str | None = None
        self.principal: str | None = None
        #: The creating ``tools/call``'s answer: the task as it was created, taken before its
        #: handler was launched (:meth:`TaskLedger.start`), so that a handler that ends
        #: first -- on a thread of its own, or inside the dispatch on an eager runtime --
        #: cannot make it report an end it does not carry (see :meth:`creation_answer`).
        self.creation: dict[str, Any] = {}

    def record(self) -> dict[str, Any]:
        """What a shared store keeps of the task (JSON-able; no handler, no callbacks)."""
        return {"taskId": self.task_id, "status": self.status,
                "statusMessage": self.status_message, "created": self.created,
                "updated": self.updated, "ttlMs": self.ttl_ms,
                "pollIntervalMs": self.poll_interval_ms, "result": self.result,
                "error": self.error, "inputRequests": self.input_requests,
                "owner": self.owner_key, "principal": self.principal}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Task:
        """A read-only copy of a task another worker runs (for its wire shapes)."""
        task = cls(str(record["taskId"]), float(record["created"]), float("inf"),
                   int(record["ttlMs"]), int(record["pollIntervalMs"]))
        task.status = str(record["status"])
        task.status_message = record.get("statusMessage")
        task.updated = float(record["updated"])
        task.result = record.get("result")
        task.error = record.get("error")
        task.input_requests = dict(record.get("inputRequests") or {})
        task.owner_key = record.get("owner")
        task.principal = record.get("principal")
        return task

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def envelope(self) -> dict[str, Any]:
        """The Task fields every task answer carries (SEP-2663 wire names: ``ttlMs``,
        ``pollIntervalMs``, integer milliseconds)."""
        body: dict[str, Any] = {
            "taskId": self.task_id, "status": self.status,
            "createdAt": _iso(self.created), "lastUpdatedAt": _iso(self.updated),
            "ttlMs": self.ttl_ms, "pollIntervalMs": self.poll_interval_ms,
        }
        if self.status_message is not None:
            body["statusMessage"] = self.status_message
        return body

    def v1(self) -> dict[str, Any]:
        """The 2025-11-25 ``Task`` (``ttl``/``pollInterval``, in milliseconds)."""
        body: dict[str, Any] = {
            "taskId": self.task_id, "status": self.status,
            "createdAt": _iso(self.created), "lastUpdatedAt": _iso(self.updated),
            "ttl": self.ttl_ms, "pollInterval": self.poll_interval_ms,
        }
        if self.status_message is not None:
            body["statusMessage"] = self.status_message
        return body

    def created_result(self) -> dict[str, Any]:
        """The ``CreateTaskResult``: ``Result & Task``, flat, ``resultType: "task"``."""
        return {"resultType": "task", **self.envelope()}

    def creation_answer(self, era: Era | None) -> dict[str, Any]:
        """The creating call's answer in ``era``'s form, as the task is now. Both forms are
        a bare Task: neither carries the result, the error or the questions (2025-11-25
        ``CreateTaskResult`` is ``{task}``, "the response does not include the actual
        operation result"; the extension's is ``Result & Task``). Taken at creation it is
        ``working`` with ``lastUpdatedAt == createdAt`` -- what 2025-11-25 requires ("Tasks
        MUST begin in the working status") and the extension's "seed state"; the end is
        fetched with ``tasks/result`` or ``tasks/get``."""
        return self.created_result() if era is Era.STATELESS else {"task": self.v1()}

    def detailed(self) -> dict[str, Any]:
        """The ``tasks/get`` answer: the envelope plus what the status calls for."""
        body = self.envelope()
        if self.status == "completed" and self.result is not None:
            body["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            body["error"] = self.error
        elif self.status == "input_required":
            body["inputRequests"] = {key: dict(item)
                                     for key, item in self.input_requests.items()}
        return body


# -- what the runtime hands in ----------------------------------------------------------------


class Waiter(Protocol):
    """Something a task's handler waits on until ``set()`` (an answer came, the task ended):
    awaitable (``wait``) for ``async def`` handlers, blocking (``wait_blocking``) on threads."""

    def set(self) -> None: ...

    async def wait(self) -> None: ...

    def wait_blocking(self) -> None: ...


class TaskRuntime(Protocol):
    """What a :class:`TaskLedger` needs from the world, all handed in: the two clocks, fresh
    ids, the lock around the store, waiters, running a handler in the background, and the
    sharing of the tasks through a service's stores. The runtime serving a connection
    supplies it (:class:`TaskHost`), or it is given to the ledger once (tests, an embedder
    whose sessions supply none)."""

    #: Held around every read and change of the store (a real lock when handlers run on
    #: threads of their own).
    lock: AbstractContextManager[Any]

    def wall(self) -> float:
        """Seconds since the epoch, for ``createdAt``/``lastUpdatedAt``."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for expiry."""
        ...

    def new_task_id(self) -> str:
        """A fresh, unguessable task id (2026-07-28: the id is the capability to the task)."""
        ...

    def waiter(self) -> Waiter:
        """A fresh waiter for the runtime the caller runs on."""
        ...

    def launch(self, ledger: TaskLedger, task: Task, job: Job, ctx: Context) -> None:
        """Run ``job`` for ``task`` in the background; it reports its end through
        ``ledger._finish`` and sets ``task._cancel``."""
        ...

    def share(self, ledger: TaskLedger, stores: Any) -> TaskSharing:
        """The sharing of ``ledger``'s tasks through ``stores`` (a
        :class:`mcp_sansio.stores.MemoryStores` or the like; see :doc:`/stores`)."""
        ...


@runtime_checkable
class TaskHost(Protocol):
    """The seam between a ledger and the runtimes: a session whose runtime runs tasks says
    which :class:`TaskRuntime` that is. The bundled runtimes' sessions do (their runtime
    object's ``task_runtime()``); a session of an embedder's own loop may, or the ledger is
    given a runtime once (``Server.enable_tasks(runtime=...)``)."""

    def _task_runtime(self) -> TaskRuntime: ...


class ToolEntry(Protocol):
    """What the ledger reads of a registered tool: its definition (``execution``)."""

    @property
    def definition(self) -> dict[str, Any]: ...


class ToolRouter(Protocol):
    """What the ledger asks of the server whose requests it routes: the registered tools,
    and the job of a ``tools/call`` (written as a Protocol, so that this module does not
    import the server module that imports it)."""

    @property
    def tools(self) -> Mapping[str, ToolEntry]: ...

    def _route_tool(self, params: Mapping[str, Any], ctx: Context) -> Job: ...


class TaskSharing(Protocol):
    """How a ledger shares its tasks with the other workers of a service: the
    runtime glue implements it over a shared task table and the event bus. Every ``async``
    method is awaited by a job the ledger returns, never under the ledger's lock."""

    def identity(self, ctx: Context) -> tuple[str | None, str | None]:
        """(owner key, principal) of the request: the owner key names the session the same
        way on every worker (None in the stateless era); the principal is the authenticated
        subject (None without authorization)."""
        ...

    def saved(self, task: Task, record: dict[str, Any]) -> None:
        """Write ``record`` (a task of this worker changed), after every earlier write."""
        ...

    async def stored(self, task_id: str) -> None:
        """Return once every write queued so far for ``task_id`` is done."""
        ...

    async def fetch(self, task_id: str) -> dict[str, Any] | None:
        """The stored record of a task, or None (unknown, expired)."""
        ...

    async def owned(self, owner: str) -> list[dict[str, Any]]:
        """The stored records of one owner, oldest first."""
        ...

    async def send(self, task_id: str, op: str, data: Mapping[str, Any]) -> None:
        """Hand ``op`` (``cancel``, ``update``) to the worker running ``task_id``."""
        ...

    async def until_changed(self, task_id: str, timeout: float) -> None:
        """Return when a record of ``task_id`` was stored (a bus notice), or after
        ``timeout`` seconds (notices are not guaranteed: the caller re-reads either way)."""
        ...


# -- the store --------------------------------------------------------------------------------


class TaskStore(Protocol):
    """Where tasks are kept, by id. The in-memory store is the default; another process-wide
    store (Redis) implements the same few calls."""

    def get(self, task_id: str) -> Task | None: ...

    def put(self, task: Task) -> None: ...

    def remove(self, task_id: str) -> Task | None: ...

    def owned_by(self, owner: object) -> list[Task]:
        """The tasks of one session (2025-11-25), oldest first."""
        ...

    def expired(self, now: float) -> list[Task]:
        """The tasks whose expiry (monotonic seconds) is at or before ``now``."""
        ...

    def __len__(self) -> int: ...


class InMemoryTaskStore:
    """Tasks in a dict, in creation order (``tasks/list`` lists oldest first)."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}

    def get(self, task_id: str) -> Task | None:
        return self._tasks.get(task_id)

    def put(self, task: Task) -> None:
        self._tasks[task.task_id] = task

    def remove(self, task_id: str) -> Task | None:
        return self._tasks.pop(task_id, None)

    def owned_by(self, owner: object) -> list[Task]:
        return [t for t in self._tasks.values()
                if t.owner is not None and t.owner() is owner]

    def expired(self, now: float) -> list[Task]:
        return [t for t in self._tasks.values() if t.expires <= now]

    def __iter__(self) -> Iterator[Task]:
        return iter(list(self._tasks.values()))

    def __len__(self) -> int:
        return len(self._tasks)


def _speaks_core_tasks(ctx: Context) -> bool:
    """Whether the session's revision has the experimental core tasks (the feature table:
    2025-11-25 basic/utilities/tasks.mdx; 2026-07-28 moved them into an extension)."""
    revision = ctx.session.conn.revision
    features = FEATURES.get(revision) if isinstance(revision, str) else None
    return features is not None and features.core_tasks


# -- the ledger -------------------------------------------------------------------------------


class TaskLedger:
    """The tasks of one :class:`~mcp_sansio.app.server.Server` (shared by all its connections:
    over HTTP every 2026-07-28 request is a connection of its own): the status machine, the
    routing of the tasks methods and the wire shapes, over a :class:`TaskStore`, with time,
    ids, the lock and the running of handlers handed in (:class:`TaskRuntime`).

    :param runtime: what the ledger needs from the world (see :class:`TaskRuntime`), given
        once; None (the default): each connection's runtime supplies its own
        (:class:`TaskHost`), the first one seen also giving the clocks, ids and lock.
    :param ttl_ms: how long a task is kept after its creation (``ttlMs``).
    :param poll_interval_ms: the polling interval suggested to clients (``pollIntervalMs``).
    :param max_tasks: tasks kept at once.
    :param store: where tasks are kept (default: in memory, this process only).
    :param sharing: how tasks are shared with the service's other workers (None: they are
        not; see the module's "Sharing").
    :param shared: stores to share the tasks through (what ``sharing`` the runtime builds
        over them, :meth:`TaskRuntime.share`; see :meth:`share`).
    :param clock: wall-clock seconds for ``createdAt``/``lastUpdatedAt``, instead of the
        runtime's (tests).
    :param monotonic: seconds for expiry, instead of the runtime's (tests).
    """

    def __init__(self, runtime: TaskRuntime | None = None, *, ttl_ms: int = DEFAULT_TTL_MS,
                 poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS,
                 max_tasks: int = DEFAULT_MAX_TASKS, store: TaskStore | None = None,
                 sharing: TaskSharing | None = None, shared: Any = None,
                 clock: Callable[[], float] | None = None,
                 monotonic: Callable[[], float] | None = None) -> None:
        if int(ttl_ms) <= 0 or int(poll_interval_ms) <= 0 or max_tasks <= 0:
            raise ValueError("ttl_ms, poll_interval_ms and max_tasks must be positive")
        self.ttl_ms = int(ttl_ms)
        self.poll_interval_ms = int(poll_interval_ms)
        self.max_tasks = max_tasks
        self._store: TaskStore = store if store is not None else InMemoryTaskStore()
        self.sharing = sharing
        self._first: dict[str, Mapping[str, tuple[str, Mapping[str, Any]]]] = {}
        self._clock = clock
        self._monotonic = monotonic
        #: The runtime given at construction, which then serves every connection.
        self._pinned = runtime
        #: The runtime the clocks, ids and lock come from: the pinned one, else the first
        #: connection's (until then the store is empty and nothing runs: no lock needed).
        self._home: TaskRuntime | None = None
        self._lock: AbstractContextManager[Any] = nullcontext()
        #: The stores to share through (``shared=`` or :meth:`share`), and whether
        #: :meth:`share` attached them.
        self._shared: Any = shared
        self._auto_shared = False
        if runtime is not None:
            self.bind(runtime)

    # -- the runtime ------------------------------------------------------------------------------

    @property
    def runtime(self) -> TaskRuntime:
        """The runtime the ledger's clocks, ids and lock come from (see ``runtime=``)."""
        if self._home is None:
            raise RuntimeError("no runtime has served this ledger yet")
        return self._home

    def bind(self, runtime: TaskRuntime) -> None:
        """Take the clocks, ids, lock and sharing from ``runtime`` now (else from the first
        connection's runtime); tasks still run on their connection's runtime."""
        self._home = runtime
        self._lock = runtime.lock
        if self._shared is not None:
            self.sharing = runtime.share(self, self._shared)

    def _served(self, ctx: Context) -> TaskRuntime:
        """The runtime of the connection ``ctx`` came on (or the pinned one): it starts the
        request's task and makes its waiters."""
        if self._pinned is not None:
            return self._pinned
        session = ctx.session
        if not isinstance(session, TaskHost):
            raise RuntimeError("this session's runtime runs no tasks: give "
                               "Server.enable_tasks(runtime=...) a TaskRuntime")
        runtime = session._task_runtime()
        if self._home is None:
            self.bind(runtime)
        return runtime

    def wall(self) -> float:
        """Seconds since the epoch (``clock=``, else the runtime's)."""
        return self._clock() if self._clock is not None else self.runtime.wall()

    def monotonic(self) -> float:
        """Seconds for expiry (``monotonic=``, else the runtime's)."""
        return self._monotonic() if self._monotonic is not None else self.runtime.monotonic()

    def share(self, stores: Any) -> None:
        """Share this server's tasks through ``stores`` (what ``start_http(stores=...)`` and
        the shared ASGI application call: a shared server's tasks are seen by every worker,
        never kept apart in silence). Stores given to ``shared=`` (or a ``sharing=``) stay,
        and others are refused; stores this call attached are replaced (an ASGI application
        served again from another loop builds new ones). The runtime builds the sharing
        (:meth:`TaskRuntime.share`), now or when the first connection binds it."""
        if self._shared is stores:
            return
        if (self._shared is not None or self.sharing is not None) and not self._auto_shared:
            raise ValueError("the tasks are already shared through other stores")
        self._shared, self._auto_shared = stores, True
        self.sharing = None
        if self._home is not None:
            self.sharing = self._home.share(self, stores)

    def gather_first(self, tool: str,
                     requests: Mapping[str, tuple[str, Mapping[str, Any]]]) -> None:
        """Ask the client for ``requests`` on the ``tools/call`` itself, before ``tool``
        becomes a task (the MRTR -> task composition, SEP-2663): the call is answered
        ``input_required`` until its retry carries every answer, and only then is the task
        created. Inside the task, ``ctx.ask`` for those keys returns the answers at once."""
        self._first[tool] = dict(requests)

    # -- the server's side --------------------------------------------------------------------

    @staticmethod
    def negotiated(ctx: Context) -> bool:
        """Whether the request's client declared the extension (2026-07-28 only: the
        extension is negotiated per request, in ``_meta``)."""
        if ctx.era is not Era.STATELESS:
            return False
        extensions = ctx.client_capabilities.get("extensions")
        return isinstance(extensions, dict) and extensions.get(TASKS_EXTENSION) not in (
            None, False)

    def capabilities(self) -> dict[str, Any]:
        """What the server declares: the extension (2026-07-28) and the 2025-11-25 ``tasks``
        capability (the core leaves the latter out of ``server/discover``: 2026-07-28 has no
        core tasks)."""
        return {"extensions": {TASKS_EXTENSION: {}},
                "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}

    def _route(self, server: ToolRouter, request: Request, ctx: Context) -> Job | None:
        """The job for a tasks request or a task-creating ``tools/call``; None: not ours."""
        if self._home is None and isinstance(ctx.session, TaskHost):
            # Bound before any decision: the sharing (answers about other workers' tasks)
            # is built with the runtime.
            self.bind(ctx.session._task_runtime())
        if ctx.era is Era.STATELESS:
            return self._route_stateless(server, request, ctx)
        return self._route_handshake(server, request, ctx)

    @staticmethod
    def _support(server: ToolRouter, name: Any) -> str | None:
        entry = server.tools.get(name) if type(name) is str or isinstance(name, str) else None
        if entry is None:
            return None
        execution = entry.definition.get("execution")
        support = execution.get("taskSupport") if execution else None
        return support if support in ("optional", "required") else None

    def _route_stateless(self, server: ToolRouter, request: Request, ctx: Context) -> Job | None:
        method = request.method
        params = request.params or {}
        if method in ("tasks/get", "tasks/update", "tasks/cancel"):
            if not self.negotiated(ctx):
                raise McpError(ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
                               f"Missing required client capability: {TASKS_EXTENSION}",
                               {"requiredCapabilities": _required()})
            if self.sharing is not None and self._find_local(params, ctx) is None:
                return self._remote_job(method, params, ctx)
            answer = {"tasks/get": self.get, "tasks/update": self.update,
                      "tasks/cancel": self.cancel}[method](params, ctx)
            return Job(None, shape=lambda _: answer)
        if method != "tools/call":
            return None
        name = params.get("name")
        support = self._support(server, name)
        if support is None:
            return None
        if not self.negotiated(ctx):
            if support == "optional":
                return None
            raise McpError(ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
                           f"Missing required client capability: {TASKS_EXTENSION} "
                           f"(tool {name!r} runs only as a task)",
                           {"requiredCapabilities": _required()})
        job = server._route_tool(params, ctx)
        if job.fn is None:  # arguments that do not fit: an isError result at once
            return job
        first = self._first.get(name) if isinstance(name, str) else None
        if first is not None:
            try:
                ctx._plan_ask(first)  # the answers the retry carries, or input_required
            except (InputRequiredSignal, MissingCapability) as signal:
                return Job(_raiser(signal))
        task = self.start(job, ctx)
        if task is None:  # the store is full: run it synchronously
            return job
        created = task.creation  # as created, whatever the handler has done since
        return Job(self._durable(task), shape=lambda _: dict(created))

    def _route_handshake(self, server: ToolRouter, request: Request, ctx: Context) -> Job | None:
        """2025-11-25 tasks (``basic/utilities/tasks.mdx``): task-augmented ``tools/call``
        (``params.task``), ``tasks/get``, ``tasks/result``, ``tasks/list``,
        ``tasks/cancel``; earlier revisions have no tasks (the core refuses the methods)."""
        method = request.method
        params = request.params or {}
        if self.sharing is not None and (
                method == "tasks/list" or (method in ("tasks/get", "tasks/result", "tasks/cancel")
                                           and self._find_local(params, ctx) is None)):
            return self._remote_job(method, params, ctx)
        if method == "tasks/get":
            answer = self._locked(self._find(params, ctx).v1)
            return Job(None, shape=lambda _: answer)
        if method == "tasks/result":
            return self._result_job(self._find(params, ctx), ctx)
        if method == "tasks/list":
            answer = self.list_tasks(ctx)
            return Job(None, shape=lambda _: answer)
        if method == "tasks/cancel":
            task = self._find(params, ctx)
            cancel, calls = self._cancel(task, terminal_is_error=True)
            if cancel is not None:
                cancel()
            self._call(calls)
            answer = self._locked(task.v1)
            return Job(None, shape=lambda _: answer)
        if method != "tools/call":
            return None
        name = params.get("name")
        support = self._support(server, name)
        augmented = isinstance(params.get("task"), dict) and _speaks_core_tasks(ctx)
        # A sessionless connection does not declare tasks (mcp_sansio._sessionless), and
        # tasks.mdx: a receiver that does not "MUST process requests of that type normally,
        # ignoring any task-augmentation metadata".
        augmented = augmented and not ctx.session.conn.sessionless
        if not augmented:
            if support == "required":
                # 2025-11-25 tasks.mdx: a task-only tool called plainly -> -32601.
                raise McpError(ErrorCode.METHOD_NOT_FOUND,
                               f"Tool {name!r} must be called as a task")
            return None
        if support is None and name in server.tools:
            # The tool does not support tasks: the requestor MUST NOT ask, and we say so.
            raise McpError(ErrorCode.METHOD_NOT_FOUND,
                           f"Tool {name!r} does not support task-augmented calls")
        job = server._route_tool(params, ctx)
        if job.fn is None:
            return job
        requested = params["task"].get("ttl")
        ttl_ms = self.ttl_ms
        if isinstance(requested, int) and not isinstance(requested, bool) and requested > 0:
            ttl_ms = min(requested, self.ttl_ms)  # the receiver may shorten what was asked
        augmented_task = self.start(job, ctx, ttl_ms=ttl_ms)
        if augmented_task is None:
            return job
        created = augmented_task.creation  # as created (see start)
        return Job(self._durable(augmented_task), shape=lambda _: dict(created))

    def _result_job(self, task: Task, ctx: Context) -> Job:
        """``tasks/result``: waits until the task is terminal, then answers what the call
        would have (its result, or its error verbatim), with the related-task ``_meta``."""
        def outcome(_: Any) -> dict[str, Any]:
            with self._lock:
                status, result, error = task.status, task.result, task.error
            return self._outcome(task.task_id, status, result, error)

        runtime = self._served(ctx)  # outside the lock: it may bind the ledger's lock
        with self._lock:
            ended = task.terminal
            if not ended:
                waiter = runtime.waiter()
                task._done.append(waiter.set)
        if ended:
            # Answered now, its error raised here: a job without ``fn`` is shaped where a
            # raise is not answered as the request's error (a failed task's tasks/result
            # once broke the connection -- HTTP 500 -- instead of answering the error).
            answer = outcome(None)
            return Job(None, shape=lambda _: answer)

        async def wait() -> None:
            await waiter.wait()
        return Job(wait, shape=outcome)

    @staticmethod
    def _outcome(task_id: str, status: str, result: dict[str, Any] | None,
                 error: dict[str, Any] | None) -> dict[str, Any]:
        """What ``tasks/result`` answers for a terminal task: the call's result with the
        related-task ``_meta``, its error verbatim, or -32602 for a cancelled one."""
        related = {RELATED_TASK: {"taskId": task_id}}
        if status == "completed" and result is not None:
            meta = {**(result.get("_meta") or {}), **related}
            return {**result, "_meta": meta}
        if status == "failed" and error is not None:
            raise McpError(int(error["code"]), str(error["message"]), error.get("data"))
        raise McpError(ErrorCode.INVALID_PARAMS,
                       f"Invalid params: task {task_id} was cancelled")

    # -- sharing ----------------------------------------------------------------------------------

    def _share(self, task: Task) -> None:
        """A task of this worker changed (under the lock): write its record."""
        if self.sharing is not None:
            self.sharing.saved(task, task.record())

    def _durable(self, task: Task) -> Callable[[], Any] | None:
        """The creating call's job: with sharing, answer once the first record is stored, so
        a ``tasks/get`` on another worker right after the answer finds it (SEP-2663)."""
        sharing = self.sharing
        if sharing is None:
            return None

        async def stored() -> None:
            await sharing.stored(task.task_id)
        return stored

    async def _fetch_visible(self, sharing: TaskSharing, task_id: Any, owner: str | None,
                             principal: str | None) -> dict[str, Any]:
        """The stored record of ``task_id`` if the caller may see it (the same session in
        2025-11-25, the same principal in both eras); else -32602, as for an unknown id."""
        record = await sharing.fetch(task_id) if isinstance(task_id, str) else None
        if record is None or record.get("owner") != owner or record.get(
                "principal") != principal:
            raise McpError(ErrorCode.INVALID_PARAMS, "Invalid params: unknown taskId",
                           {"taskId": task_id})
        return record

    def _remote_job(self, method: str, params: Mapping[str, Any], ctx: Context) -> Job:
        """A tasks request about a task this worker does not run: answered from the shared
        record; a cancel or an update is sent to the worker that runs it."""
        sharing = self.sharing
        assert sharing is not None
        owner, principal = sharing.identity(ctx)
        stateless = ctx.era is Era.STATELESS
        task_id = params.get("taskId")
        responses = params.get("inputResponses")
        if method == "tasks/update" and not isinstance(responses, dict):
            raise McpError(ErrorCode.INVALID_PARAMS,
                           "Invalid params: inputResponses must be an object")

        async def run() -> dict[str, Any]:
            if method == "tasks/list":
                return {"tasks": await self._remote_list(sharing, owner, principal)}
            record = await self._fetch_visible(sharing, task_id, owner, principal)
            task = Task.from_record(record)
            if method == "tasks/get":
                return {"resultType": "complete", **task.detailed()} if stateless else task.v1()
            if method == "tasks/update":
                await sharing.send(task.task_id, "update", {"inputResponses": responses})
                return {"resultType": "complete"}
            if method == "tasks/cancel":
                return await self._remote_cancel(sharing, task, stateless)
            # tasks/result: wait for a terminal record (a notice, or the next poll).
            poll = min(task.poll_interval_ms / 1000, MAX_REMOTE_POLL)
            while not task.terminal:
                await sharing.until_changed(task.task_id, poll)
                task = Task.from_record(
                    await self._fetch_visible(sharing, task_id, owner, principal))
            return self._outcome(task.task_id, task.status, task.result, task.error)
        return Job(run, shape=dict)

    async def _remote_list(self, sharing: TaskSharing, owner: str | None,
                           principal: str | None) -> list[dict[str, Any]]:
        if owner is None:
            return []
        listed = []
        for record in await sharing.owned(owner):
            if record.get("owner") != owner or record.get("principal") != principal:
                continue  # never another session's or principal's tasks
            with self._lock:
                local = self._store.get(str(record.get("taskId")))
                # A task this worker runs: its own copy is the newest.
                listed.append(local.v1() if local is not None else
                              Task.from_record(record).v1())
        return listed

    async def _remote_cancel(self, sharing: TaskSharing, task: Task,
                             stateless: bool) -> dict[str, Any]:
        if task.terminal:
            if stateless:
                return {"resultType": "complete"}
            # 2025-11-25 tasks.mdx: cancelling a terminal task is -32602.
            raise McpError(ErrorCode.INVALID_PARAMS,
                           f"Invalid params: task is already {task.status}")
        await sharing.send(task.task_id, "cancel", {})
        if stateless:
            return {"resultType": "complete"}
        # On this process's monotonic clock (the bound never leaves it).
        give_up = self.monotonic() + REMOTE_CANCEL_WAIT
        step = min(task.poll_interval_ms / 1000, MAX_REMOTE_POLL)
        while self.monotonic() < give_up:
            await sharing.until_changed(task.task_id, step)
            record = await sharing.fetch(task.task_id)
            if record is not None and record.get("status") in TERMINAL:
                return Task.from_record(record).v1()
        # Nobody stored the end: the worker that ran it is gone. The cancel is written here.
        task.status = "cancelled"
        task.updated = self.wall()
        task.input_requests = {}
        sharing.saved(task, task.record())
        await sharing.stored(task.task_id)
        return task.v1()

    def receive(self, task_id: str, op: str, data: Mapping[str, Any]) -> None:
        """A ``cancel`` or ``update`` another worker sent for ``task_id`` (the bus); ignored
        unless this worker runs the task."""
        with self._lock:
            task = self._store.get(task_id)
        if task is None:
            return
        if op == "cancel":
            cancel, calls = self._cancel(task, terminal_is_error=False)
            if cancel is not None:
                cancel()
            self._call(calls)
        elif op == "update":
            responses = data.get("inputResponses")
            if isinstance(responses, dict):
                self._apply_update(task, responses)

    # -- the methods ----------------------------------------------------------------------------

    def _locked(self, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            return fn()

    def _find_local(self, params: Mapping[str, Any], ctx: Context) -> Task | None:
        """The task ``params.taskId`` names among this worker's, if the caller may see it:
        2026-07-28 tasks to 2026-07-28 requests (the unguessable id is the capability),
        2025-11-25 tasks to the session that created them; shared, to its principal too."""
        task_id = params.get("taskId")
        owner = None if ctx.era is Era.STATELESS else ctx.session
        with self._lock:
            self._expire()
            task = self._store.get(task_id) if isinstance(task_id, str) else None
            if task is not None and (task.owner() if task.owner is not None else None
                                     ) is not owner:
                task = None
        if task is not None and self.sharing is not None and (
                task.principal != self.sharing.identity(ctx)[1]):
            task = None
        return task

    def _find(self, params: Mapping[str, Any], ctx: Context) -> Task:
        """:meth:`_find_local`, or -32602 for a task the caller cannot see."""
        task_id = params.get("taskId")
        task = self._find_local(params, ctx)
        if task is None:
            # SEP-2663 and 2025-11-25 tasks.mdx: an unknown taskId is -32602.
            raise McpError(ErrorCode.INVALID_PARAMS, "Invalid params: unknown taskId",
                           {"taskId": task_id})
        return task

    def get(self, params: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
        """``tasks/get`` (2026-07-28): the DetailedTask."""
        task = self._find(params, ctx)
        with self._lock:
            return {"resultType": "complete", **task.detailed()}

    def list_tasks(self, ctx: Context) -> dict[str, Any]:
        """``tasks/list`` (2025-11-25): the tasks of the caller's session, oldest first."""
        with self._lock:
            self._expire()
            return {"tasks": [t.v1() for t in self._store.owned_by(ctx.session)]}

    def update(self, params: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
        """``tasks/update`` (2026-07-28): answers to the task's questions (unknown keys are
        ignored); the task resumes once every question is answered. An empty ack either
        way."""
        task = self._find(params, ctx)
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise McpError(ErrorCode.INVALID_PARAMS,
                           "Invalid params: inputResponses must be an object")
        self._apply_update(task, responses)
        return {"resultType": "complete"}

    def _apply_update(self, task: Task, responses: Mapping[str, Any]) -> None:
        wake = None
        with self._lock:
            for key, answer in responses.items():
                if key in task.input_requests and isinstance(answer, dict):
                    del task.input_requests[key]
                    task.answers[key] = answer
            if task.status == "input_required" and not task.input_requests:
                task.status = "working"
                task.updated = self.wall()
                wake, task._wake = task._wake, None
            self._share(task)
        if wake is not None:
            wake()

    def cancel(self, params: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
        """``tasks/cancel`` (2026-07-28): stop the handler; the status becomes ``cancelled``
        (a terminal task is left as it is). An empty ack either way."""
        task = self._find(params, ctx)
        cancel, calls = self._cancel(task, terminal_is_error=False)
        if cancel is not None:
            cancel()
        self._call(calls)
        return {"resultType": "complete"}

    def _cancel(self, task: Task, *, terminal_is_error: bool
                ) -> tuple[Callable[[], None] | None, list[Callable[[], None]]]:
        with self._lock:
            if task.terminal:
                if terminal_is_error:
                    # 2025-11-25 tasks.mdx: cancelling a terminal task is -32602.
                    raise McpError(ErrorCode.INVALID_PARAMS,
                                   f"Invalid params: task is already {task.status}")
                return None, []
            calls = self._settle(task, "cancelled")
            return task._cancel, calls

    # -- running --------------------------------------------------------------------------------

    def start(self, job: Job, ctx: Context, *, ttl_ms: int | None = None) -> Task | None:
        """Create a task running ``job`` (None: the store is full). The task exists before
        this returns: a ``tasks/get`` right after the answer finds it (SEP-2663, "durable
        create"). A handshake-era task belongs to ``ctx``'s session, which hears its status
        changes (``notifications/tasks/status``)."""
        assert job.fn is not None
        runtime = self._served(ctx)
        now, mono = self.wall(), self.monotonic()
        ttl = self.ttl_ms if ttl_ms is None else ttl_ms
        with self._lock:
            self._expire()
            if len(self._store) >= self.max_tasks:
                log.warning("tasks: %d tasks kept, running %s synchronously",
                            len(self._store), ctx.params.get("name"))
                return None
            task = Task(self.runtime.new_task_id(), now, mono + ttl / 1000, ttl,
                        self.poll_interval_ms)
            if self.sharing is not None:
                task.owner_key, task.principal = self.sharing.identity(ctx)
            if ctx.era is not Era.STATELESS:
                task.owner = weakref.ref(ctx.session)

                def notify(params: dict[str, Any]) -> None:
                    ctx.notify("notifications/tasks/status", params)
                task._notify = notify
            self._store.put(task)
            self._share(task)
            # The creation answer is taken now, before the handler can run: once launched it
            # may end before the dispatch goes on (a thread of its own; an eager runtime runs
            # a handler that never suspends inside launch), and an answer built then would
            # report an end without carrying it. One instant, one consistent snapshot.
            task.creation = task.creation_answer(ctx.era)
        runtime.launch(self, task, job, ctx)
        return task

    def _finish(self, task: Task, job: Job, value: Any = None,
                error: BaseException | None = None) -> None:
        result: dict[str, Any] | None = None
        failure: dict[str, Any] | None = None
        if error is None:
            try:
                result = job.shape(value)
            except Exception as exc:
                error = exc
        if isinstance(error, ToolError):
            result = tool_error_result(str(error))  # a tool error: completed, isError
        elif isinstance(error, McpError):
            failure = {"code": error.code, "message": error.message}
            if error.data is not None:
                failure["data"] = error.data
        elif isinstance(error, MissingCapability):
            failure = {"code": int(ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY),
                       "message": "Missing required client capability",
                       "data": {"requiredCapabilities": error.required}}
        elif error is not None:
            # DESIGN.md, Errors: a generic message, never the exception text; logged.
            log.error("task %s failed", task.task_id, exc_info=error)
            failure = dict(_GENERIC_FAILURE)
        with self._lock:
            if task.terminal:
                return  # cancelled meanwhile: the cancellation stands
            if failure is not None:
                task.error = failure
                calls = self._settle(task, "failed")
            else:
                task.result = result
                calls = self._settle(task, "completed")
        self._call(calls)

    def _settle(self, task: Task, status: str) -> list[Callable[[], None]]:
        """Enter a terminal status (under the lock); what to call once it is released."""
        task.status = status
        task.updated = self.wall()
        task.input_requests.clear()
        task._wake = None
        return self._changed(task)

    def _changed(self, task: Task) -> list[Callable[[], None]]:
        """The callbacks a status change calls (under the lock: they run after it): the
        2025-11-25 status notification, and, once terminal, whoever waits for the end."""
        self._share(task)
        calls: list[Callable[[], None]] = []
        notify = task._notify
        if notify is not None:
            snapshot = task.v1()
            calls.append(lambda: notify(snapshot))
        if task.terminal:
            calls.extend(task._done)
            task._done.clear()
        return calls

    @staticmethod
    def _call(calls: list[Callable[[], None]]) -> None:
        for call in calls:
            try:
                call()
            except Exception:  # a closed session, a loop gone: nobody left to tell
                log.debug("a task status callback failed", exc_info=True)

    def _touch(self, task: Task, *, status_message: str) -> None:
        with self._lock:
            if not task.terminal:
                task.status_message = status_message
                task.updated = self.wall()
                self._share(task)

    def _park(self, task: Task, requests: dict[str, dict[str, Any]],
              waiter: Waiter | None) -> None:
        with self._lock:
            if task.terminal:
                raise McpError(ErrorCode.INVALID_REQUEST, "the task has ended")
            task.input_requests = requests
            for key in requests:
                task.answers.pop(key, None)
            task.status = "input_required"
            task.updated = self.wall()
            task._wake = waiter.set if waiter is not None else None
            calls = self._changed(task)
        self._call(calls)

    def _resume(self, task: Task) -> None:
        """2025-11-25: the client answered the task's requests: working again."""
        with self._lock:
            if task.status != "input_required":
                return
            task.status = "working"
            task.input_requests.clear()
            task.updated = self.wall()
            calls = self._changed(task)
        self._call(calls)

    def _preanswer(self, task: Task, answers: dict[str, Any]) -> None:
        with self._lock:
            task.answers.update(answers)

    def _take_answers(self, task: Task, keys: list[str]) -> dict[str, Any]:
        with self._lock:
            return {key: task.answers.pop(key) for key in keys if key in task.answers}

    def _expire(self) -> None:
        """Forget the tasks whose TTL has passed (under the lock), cancelling any still
        running."""
        if self._home is None and self._monotonic is None:
            return  # served by no runtime yet: nothing was started
        for expired in self._store.expired(self.monotonic()):
            task = self._store.remove(expired.task_id) or expired
            if not task.terminal and task._cancel is not None:
                task._cancel()

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._store)
