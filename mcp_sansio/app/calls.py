"""The client's named calls, each written once: its signature, its docstring, and what it
sends -- for every runtime and both colours.

Theory of operation
-------------------
``list_tools()``, ``call_tool(name, arguments)``, ``call_tool_as_task(...)`` and the other
named calls of the high-level client are the same on every runtime and in both colours
(``async`` on asyncio and trio, blocking on threads). Each is one static method of
:class:`ClientCalls`, and that method is the only place its parameters, their types and its
docstring are written:

* a **named call** (``list_tools`` ... ``discover``) returns a :class:`NamedCall`: the
  JSON-RPC method, its params, the caller's options, and -- for the list methods -- the
  result key whose pages the client gathers (following ``nextCursor`` until the server gives
  none or repeats one). Its options are ``**options: Unpack[CallOptions[C]]``: the keywords
  of :meth:`request` that every colour passes through, declared once in :class:`CallOptions`.
* a **task call** (``call_tool_as_task`` ... ``list_tasks``) takes the client first and
  returns a plan (:mod:`.client_tasks`): a generator of ``Send``/``Sleep`` steps whose return
  value is the call's.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any, Generic, NamedTuple, Protocol, TypedDict, TypeVar, Unpack

from .client_tasks import (
    ClientTask,
    Send,
    Sleep,
    StatusCallback,
    await_plan,
    cancel_plan,
    get_plan,
    list_plan,
    start_plan,
    update_plan,
)
from .errors import ProgressCallback
from .session import next_cursor, page_params

__all__ = [
    "OPTION_DEFAULTS",
    "CallOptions",
    "ClientCalls",
    "LeftOut",
    "NamedCall",
    "TaskClient",
    "TaskPlan",
    "walk_pages",
]

C = TypeVar("C")
R = TypeVar("R")

#: A task call's plan: yields steps, returns the call's value.
TaskPlan = Generator[Send | Sleep, Any, R]


class CallOptions(TypedDict, Generic[C], total=False):
    """The keywords of every named call, passed on to the colour's ``request`` as given (a
    keyword left out is not passed, so ``request``'s own default applies)."""

    #: Idle timeout in seconds, restarted by each progress notification (None: none).
    timeout: float | None
    #: Hard maximum in seconds, never extended by progress (None: none).
    max_total: float | None
    #: ``progress(progress, total, message)`` for each progress notification; giving it asks
    #: the server for progress (``_meta.progressToken``).
    progress: ProgressCallback | None
    #: Threads: a ``CancelToken``. The ``async`` colours take none (``C`` is ``Never``).
    cancel: C


class LeftOut:
    """Shown as the default of an option whose omission means "the connection's value"
    (``timeout``, ``max_total``), in the colours' signatures only."""

    def __repr__(self) -> str:
        return "DEFAULT"


#: What leaving each option out means, shown as its default in the colours' signatures:
#: the connection's ``request_timeout`` / ``max_request_time`` for the two limits (see
#: :doc:`limits`), and nothing (no progress asked, no token) for the other two.
OPTION_DEFAULTS: dict[str, Any] = {
    "timeout": LeftOut(), "max_total": LeftOut(), "progress": None, "cancel": None,
}


class NamedCall(NamedTuple, Generic[R]):
    """One named call: ``method`` with ``params`` and the caller's ``options``; ``pages``
    names the list in the result when every page is gathered (None: the result is returned
    as it is). ``R`` is what the colour's method returns (a list of items when paged)."""

    method: str
    params: dict[str, Any] | None
    options: Mapping[str, Any]
    pages: str | None = None


class TaskClient(Protocol):
    """What a task call's definition reads from the client it runs on (both colours)."""

    @property
    def protocol_version(self) -> str | None: ...

    def _follow_task(self, task: ClientTask) -> ClientTask: ...


#: Gathering a list call's pages: yields each page's params, is sent that page's result.
PageWalk = Generator[dict[str, Any] | None, dict[str, Any], list[dict[str, Any]]]


def walk_pages(key: str) -> PageWalk:
    """The items under ``key`` of every page, following ``nextCursor`` until the server gives
    none or repeats one (a repeated cursor would loop forever: basic/utilities/pagination)."""
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    cursor: str | None = None
    while True:
        result = yield page_params(cursor)
        page = result.get(key)
        if isinstance(page, list):
            items.extend(page)
        cursor = next_cursor(result, seen)
        if cursor is None:
            return items


def _with_arguments(params: dict[str, Any], arguments: Mapping[str, Any] | None
                    ) -> dict[str, Any]:
    if arguments is not None:
        params["arguments"] = dict(arguments)
    return params


class ClientCalls(Generic[C]):
    """Every named call of the high-level client, once. ``C`` is the type of the colour's
    ``cancel`` option (see the module docstring); the colours specialise it and wrap each
    static method into a method of the same name (``adapters/common/plans.py``)."""

    # -- named calls: one request (or one per page) ---------------------------------------

    @staticmethod
    def list_tools(**options: Unpack[CallOptions[C]]) -> NamedCall[list[dict[str, Any]]]:
        """Every tool (``tools/list``), following ``nextCursor`` through all pages."""
        return NamedCall("tools/list", None, options, "tools")

    @staticmethod
    def call_tool(name: str, arguments: Mapping[str, Any] | None = None,
                  **options: Unpack[CallOptions[C]]) -> NamedCall[dict[str, Any]]:
        """Call a tool (``tools/call``) and return its result: ``content``, maybe
        ``structuredContent`` and ``isError`` (a tool's own failure is a result, not an
        exception). A stateless-era ``input_required`` answer is fulfilled with the client's
        callbacks and retried until the call completes."""
        return NamedCall("tools/call", _with_arguments({"name": name}, arguments), options)

    @staticmethod
    def list_resources(**options: Unpack[CallOptions[C]]) -> NamedCall[list[dict[str, Any]]]:
        """Every resource (``resources/list``), all pages."""
        return NamedCall("resources/list", None, options, "resources")

    @staticmethod
    def list_resource_templates(**options: Unpack[CallOptions[C]]
                                ) -> NamedCall[list[dict[str, Any]]]:
        """Every resource template (``resources/templates/list``), all pages."""
        return NamedCall("resources/templates/list", None, options, "resourceTemplates")

    @staticmethod
    def read_resource(uri: str, **options: Unpack[CallOptions[C]]) -> NamedCall[dict[str, Any]]:
        """Read a resource (``resources/read``): its ``contents``."""
        return NamedCall("resources/read", {"uri": uri}, options)

    @staticmethod
    def subscribe(uri: str, **options: Unpack[CallOptions[C]]) -> NamedCall[dict[str, Any]]:
        """Ask for ``notifications/resources/updated`` about ``uri``
        (``resources/subscribe``; handshake era: in the stateless era, :meth:`listen`)."""
        return NamedCall("resources/subscribe", {"uri": uri}, options)

    @staticmethod
    def unsubscribe(uri: str, **options: Unpack[CallOptions[C]]) -> NamedCall[dict[str, Any]]:
        """Stop the updates :meth:`subscribe` asked for (``resources/unsubscribe``)."""
        return NamedCall("resources/unsubscribe", {"uri": uri}, options)

    @staticmethod
    def list_prompts(**options: Unpack[CallOptions[C]]) -> NamedCall[list[dict[str, Any]]]:
        """Every prompt (``prompts/list``), all pages."""
        return NamedCall("prompts/list", None, options, "prompts")

    @staticmethod
    def get_prompt(name: str, arguments: Mapping[str, str] | None = None,
                   **options: Unpack[CallOptions[C]]) -> NamedCall[dict[str, Any]]:
        """Get a prompt (``prompts/get``): its ``messages``."""
        return NamedCall("prompts/get", _with_arguments({"name": name}, arguments), options)

    @staticmethod
    def complete(ref: Mapping[str, Any], argument: Mapping[str, Any],
                 context: Mapping[str, Any] | None = None,
                 **options: Unpack[CallOptions[C]]) -> NamedCall[dict[str, Any]]:
        """Ask for completions of a prompt's or resource template's argument
        (``completion/complete``)."""
        params: dict[str, Any] = {"ref": dict(ref), "argument": dict(argument)}
        if context is not None:
            params["context"] = dict(context)
        return NamedCall("completion/complete", params, options)

    @staticmethod
    def set_logging_level(level: str, **options: Unpack[CallOptions[C]]
                          ) -> NamedCall[dict[str, Any]]:
        """Set the level of the log messages the server sends (``logging/setLevel``;
        handshake era only: in 2026-07-28 the level travels in each request's ``_meta``)."""
        return NamedCall("logging/setLevel", {"level": level}, options)

    @staticmethod
    def ping(**options: Unpack[CallOptions[C]]) -> NamedCall[dict[str, Any]]:
        """``ping`` (handshake era only: 2026-07-28 has no ``ping``)."""
        return NamedCall("ping", None, options)

    @staticmethod
    def discover(**options: Unpack[CallOptions[C]]) -> NamedCall[dict[str, Any]]:
        """``server/discover`` (stateless era; the connect probe already sent one)."""
        return NamedCall("server/discover", {}, options)

    # -- task calls: plans (client_tasks.py), the client first -----------------------------

    @staticmethod
    def call_tool_as_task(
        client: TaskClient, name: str, arguments: Mapping[str, Any] | None = None, *,
        ttl_ms: int | None = None, on_status: StatusCallback | None = None,
    ) -> TaskPlan[ClientTask]:
        """Call a tool as a task and return the task (:class:`ClientTask`) at once.

        2025-11-25: asks for a task (``params.task``, with ``ttl_ms`` if given). 2026-07-28:
        needs ``capabilities={"extensions": {TASKS_EXTENSION: {}}}`` on the client; the
        server decides, and a plain answer comes back as a task already ``completed``.
        ``on_status(task)`` is called at each status change seen (polls, notifications)."""
        task = yield from start_plan(client.protocol_version, name, arguments, ttl_ms,
                                     on_status)
        return client._follow_task(task)

    @staticmethod
    def task_result(client: TaskClient, task: ClientTask) -> TaskPlan[dict[str, Any]]:
        """Wait for the task's outcome: the tool's result, or the exception its end means
        (:class:`McpError`; ``RequestCancelledError`` for a cancelled task)."""
        result: dict[str, Any] = yield from await_plan(task)
        return result

    @staticmethod
    def refresh_task(client: TaskClient, task: ClientTask) -> TaskPlan[ClientTask]:
        """Ask for the task's state once (``tasks/get``)."""
        yield from get_plan(task)
        return task

    @staticmethod
    def cancel_task(client: TaskClient, task: ClientTask) -> TaskPlan[None]:
        """Cancel the task (``tasks/cancel``)."""
        yield from cancel_plan(task)

    @staticmethod
    def answer_task(client: TaskClient, task: ClientTask, responses: Mapping[str, Any]
                    ) -> TaskPlan[None]:
        """Answer an ``input_required`` task's questions (``tasks/update``, 2026-07-28)."""
        yield from update_plan(task, responses)

    @staticmethod
    def list_tasks(client: TaskClient) -> TaskPlan[list[dict[str, Any]]]:
        """Every task of this session (``tasks/list``, 2025-11-25 only)."""
        tasks: list[dict[str, Any]] = yield from list_plan(client.protocol_version)
        return tasks
