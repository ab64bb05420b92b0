"""The client side of tasks: call a tool as a task, follow it, fetch its result, cancel it,
list tasks -- each operation written once as a plan of steps that the async and the blocking
client both run.

Theory of operation
-------------------
Two wire forms exist (see ``adapters/common/tasks.py`` for the server side):

* **2025-11-25** (``basic/utilities/tasks.mdx``): the client asks, with ``params.task`` on
  ``tools/call`` (``{ttl}``); the answer is ``{task: Task}``. ``tasks/get`` answers the Task,
  ``tasks/result`` waits for the outcome (what the call would have answered, or its error),
  ``tasks/list`` lists the session's tasks, ``tasks/cancel`` answers the cancelled Task.
  The server announces status changes with ``notifications/tasks/status``.
* **2026-07-28**, the ``io.modelcontextprotocol/tasks`` extension (SEP-2663): the client
  declares the extension (``capabilities={"extensions": {TASKS_EXTENSION: {}}}``) and the
  server decides; a ``tools/call`` is answered with a flat ``CreateTaskResult``
  (``resultType: "task"``) or with the plain result. ``tasks/get`` answers a DetailedTask
  that inlines the result (or error) once terminal and the ``inputRequests`` while
  ``input_required``; those are answered with ``tasks/update``; ``tasks/cancel`` stops it.
  There is no ``tasks/result`` and no ``tasks/list`` (-32601).

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from typing import Any

from .errors import McpError, RequestCancelledError, ResultRejected

__all__ = [
    "FORM_EXTENSION",
    "FORM_V1",
    "TASKS_EXTENSION",
    "ClientTask",
    "Plan",
    "Send",
    "Sleep",
    "await_plan",
    "cancel_plan",
    "get_plan",
    "list_plan",
    "start_plan",
    "update_plan",
]

#: The extension's identifier under ``capabilities.extensions`` (SEP-2663).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: The two wire forms (see the module docstring).
FORM_V1 = "2025-11-25"
FORM_EXTENSION = "extension"
#: Task statuses after which nothing changes (both forms).
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: Seconds between ``tasks/get`` polls when the server gives no interval: half a second,
#: the server side's own default (``common.tasks.DEFAULT_POLL_INTERVAL_MS``).
DEFAULT_POLL_INTERVAL = 0.5
#: The shortest poll interval honoured (seconds): a server asking for 0 ms must not make
#: the client spin.
MIN_POLL_INTERVAL = 0.01


class Send:
    """A step of a plan: make this request; its result (or exception) comes back."""

    __slots__ = ("method", "params")

    def __init__(self, method: str, params: dict[str, Any] | None) -> None:
        self.method = method
        self.params = params


class Sleep:
    """A step of a plan: wait ``seconds`` (the runtime's own sleep)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


Plan = Generator["Send | Sleep", Any, Any]
StatusCallback = Callable[["ClientTask"], Any]


class ClientTask:
    """The client's view of one task. ``status`` is one of ``working``,
    ``input_required``, ``completed``, ``failed``, ``cancelled``; ``result`` / ``error`` are
    known once the end has been fetched (:attr:`settled`: the extension's ``tasks/get``
    inlines them, 2025-11-25 asks ``tasks/result``; a terminal status alone, as a
    creation answer may report, is not the end); ``input_requests`` are the questions of
    an ``input_required`` task (extension form)."""

    def __init__(self, task_id: str, form: str, *,
                 on_status: StatusCallback | None = None) -> None:
        self.task_id = task_id
        #: :data:`FORM_V1` or :data:`FORM_EXTENSION`.
        self.form = form
        self.status = "working"
        self.status_message: str | None = None
        #: Seconds between polls, as the server asked (``pollInterval`` / ``pollIntervalMs``).
        self.poll_interval = DEFAULT_POLL_INTERVAL
        #: How long the server keeps the task, in milliseconds (``ttl`` / ``ttlMs``).
        self.ttl_ms: int | None = None
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.input_requests: dict[str, Any] = {}
        #: Called with this object each time the status changes (a plain or async function).
        self.on_status = on_status
        #: The last Task body the server sent.
        self.raw: dict[str, Any] = {}
        #: Set by the client that follows the task: runs ``on_status`` on its runtime.
        self._emit: Callable[[], None] | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def settled(self) -> bool:
        """Terminal with what its end needs: the result (``completed``), the error
        (``failed``), or nothing (``cancelled``). A terminal status learnt from a Task that
        does not inline its end (a creation answer, 2025-11-25 ``tasks/get``) is not."""
        return self.status == "cancelled" or (
            self.status == "completed" and self.result is not None) or (
            self.status == "failed" and self.error is not None)

    def update(self, body: Mapping[str, Any]) -> bool:
        """Take in a Task body (any form); True when the status changed."""
        self.raw = dict(body)
        status = body.get("status")
        changed = isinstance(status, str) and status != self.status and not self.terminal
        if changed:
            self.status = str(status)
        message = body.get("statusMessage")
        if isinstance(message, str):
            self.status_message = message
        interval = body.get("pollIntervalMs", body.get("pollInterval"))
        if isinstance(interval, int | float) and not isinstance(interval, bool):
            self.poll_interval = max(MIN_POLL_INTERVAL, interval / 1000)
        ttl = body.get("ttlMs", body.get("ttl"))
        if isinstance(ttl, int) and not isinstance(ttl, bool):
            self.ttl_ms = ttl
        if isinstance(body.get("result"), dict):
            self.result = body["result"]
        if isinstance(body.get("error"), dict):
            self.error = body["error"]
        requests = body.get("inputRequests")
        self.input_requests = dict(requests) if isinstance(requests, dict) else {}
        if changed and self._emit is not None:
            self._emit()
        return changed

    def outcome(self) -> dict[str, Any]:
        """The tool's result of a terminal task, or the exception its end means."""
        if self.status == "completed" and self.result is not None:
            return self.result
        if self.status == "failed":
            error = self.error or {}
            raise McpError(int(error.get("code", -32603)), str(error.get("message", "")),
                           error.get("data"))
        if self.status == "cancelled":
            raise RequestCancelledError(f"task {self.task_id} was cancelled")
        raise McpError(-32603, f"task {self.task_id} ended without a result")

    def __repr__(self) -> str:
        return f"<ClientTask {self.task_id} {self.status} ({self.form})>"


def _form(protocol_version: str | None) -> str:
    # 2025-11-25 is the only revision with the request-side (v1) tasks; 2026-07-28 and later
    # carry the extension (the core's revisions; an older one has no tasks at all).
    if protocol_version == FORM_V1:
        return FORM_V1
    if protocol_version is not None and protocol_version > FORM_V1:
        return FORM_EXTENSION
    raise McpError(-32601, f"revision {protocol_version} has no tasks (2025-11-25 or later)")


def start_plan(protocol_version: str | None, name: str, arguments: Mapping[str, Any] | None,
               ttl_ms: int | None, on_status: StatusCallback | None) -> Plan:
    """``tools/call`` as a task. Returns the :class:`ClientTask` -- already ``completed``
    when an extension-form server chose to answer plainly (it may)."""
    form = _form(protocol_version)
    params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
    if form == FORM_V1:
        params["task"] = {"ttl": ttl_ms} if ttl_ms is not None else {}
    try:
        result = yield Send("tools/call", params)
    except ResultRejected as rejected:
        # The core does not take resultType "task" as a plain result; the CreateTaskResult
        # comes back as the rejected result's data.
        body = rejected.data if isinstance(rejected.data, dict) else None
        if body is None or body.get("resultType") != "task":
            raise
        result = body
    if form == FORM_V1:
        body = result.get("task") if isinstance(result, dict) else None
    else:
        body = result if result.get("resultType") == "task" else None
    if not isinstance(body, dict) or not isinstance(body.get("taskId"), str):
        if form == FORM_EXTENSION:  # the server ran it synchronously: done already
            task = ClientTask("", form, on_status=on_status)
            task.update({"status": "completed", "result": result})
            return task
        raise McpError(-32603, "the server did not answer the task-augmented call with a task")
    task = ClientTask(body["taskId"], form, on_status=on_status)
    # Only the Task's own fields: a creation answer inlines nothing of the end (a field a
    # server adds beyond the schema is not taken for the outcome; tasks/get or tasks/result
    # is the one source of it).
    task.update({key: value for key, value in body.items() if key not in _INLINED})
    return task


#: What a DetailedTask (extension ``tasks/get``) inlines beyond the Task's own fields.
_INLINED = frozenset({"result", "error", "inputRequests"})


def get_plan(task: ClientTask) -> Plan:
    """``tasks/get`` once: refresh ``task``; returns whether its status changed."""
    body = yield Send("tasks/get", {"taskId": task.task_id})
    return task.update(body)


def await_plan(task: ClientTask) -> Plan:
    """Wait for the task's outcome: the tool's result, or the exception its end means.
    2025-11-25 asks ``tasks/result`` (the server answers when terminal); the extension polls
    ``tasks/get`` at the server's interval. An ``input_required`` extension task must be
    answered with ``tasks/update`` (by the status callback) or it never ends."""
    if not task.task_id or task.settled:  # answered plainly, or known already
        return task.outcome()
    if task.form == FORM_V1:
        # Whatever status is known (a creation answer may say it ended): tasks/result
        # answers the end of a terminal task at once and waits for that of another.
        try:
            result = yield Send("tasks/result", {"taskId": task.task_id})
        except McpError as error:
            task.error = {"code": error.code, "message": error.message, "data": error.data}
            task.update({"status": "failed"})
            raise
        task.result = result
        task.update({"status": "completed"})
        return result
    fetched = False
    while not task.settled:
        if task.terminal:
            # Ended, its end not yet seen (the creation answer said so): one tasks/get
            # inlines it. A server that still leaves it out is answered below (-32603).
            if fetched:
                break
            fetched = True
        else:
            yield Sleep(task.poll_interval)
        yield from get_plan(task)
    return task.outcome()


def cancel_plan(task: ClientTask) -> Plan:
    """``tasks/cancel``. 2025-11-25 answers the cancelled Task (a terminal task is -32602,
    raised). The extension only acknowledges: the cancel is "eventually consistent" and the
    task "MAY ultimately reach a terminal status other than cancelled if the work finished
    before cancellation could take effect" (ext-tasks ``tasks.md``, Task Cancellation), so
    the task is read once after the ack (a server that has forgotten it: ``cancelled``)."""
    result = yield Send("tasks/cancel", {"taskId": task.task_id})
    if task.form == FORM_V1:
        task.update(result if isinstance(result, dict) and "status" in result
                    else {"status": "cancelled"})
        return None
    try:
        yield from get_plan(task)
    except McpError as error:
        if error.code != -32602:  # not "unknown taskId"
            raise
        task.update({"status": "cancelled"})
    return None


def update_plan(task: ClientTask, responses: Mapping[str, Any]) -> Plan:
    """``tasks/update`` (extension form): answers to the task's ``inputRequests``."""
    yield Send("tasks/update", {"taskId": task.task_id, "inputResponses": dict(responses)})
    return None


def list_plan(protocol_version: str | None) -> Plan:
    """``tasks/list`` (2025-11-25 only), following ``nextCursor``: every Task body."""
    if _form(protocol_version) != FORM_V1:
        raise McpError(-32601, "tasks/list exists only in 2025-11-25 (the extension has none)")
    tasks: list[dict[str, Any]] = []
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        result = yield Send("tasks/list", {"cursor": cursor} if cursor else {})
        page = result.get("tasks")
        if isinstance(page, list):
            tasks.extend(item for item in page if isinstance(item, dict))
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or cursor in seen:
            return tasks
        seen.add(cursor)
