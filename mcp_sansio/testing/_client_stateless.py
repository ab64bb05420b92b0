"""The client checker's stateless-era server half: MRTR, listen streams and the tasks
extension (2026-07-28), as :class:`StatelessKit`, which :class:`~._client_machine.ClientMachine`
holds and calls for those requests.

Theory of operation
-------------------
Like the machine, it does no I/O and reads no clock; it answers through the machine's
output and reports through its findings.

* **MRTR** (``basic/patterns/mrtr.mdx``): the first ``tools/call`` is answered
  ``input_required`` -- an input request per client capability declared, and a
  ``requestState`` -- and the retry is checked (a new id, the same keys answered, the state
  echoed verbatim; each answer validates).
* **Listen streams** (``basic/patterns/subscriptions.mdx``): ``subscriptions/listen`` opens
  with the acknowledgement of the honoured subset (``toolsListChanged`` only: the kit
  declares ``tools.listChanged``), then one ``tools/list_changed``, each tagged with the
  subscription id; the stream is never answered. The client ends it the transport's way:
  closing it on HTTP (:meth:`StatelessKit.stream_closed`), ``notifications/cancelled`` on
  stdio; a cancellation POSTed over HTTP is ``client-listen``.
* **Tasks** (``io.modelcontextprotocol/tasks``, ext-tasks ``tasks.md``): a ``tools/call`` whose
  ``_meta`` declares the extension is answered with a task (``resultType: "task"``); the first
  ``tasks/get`` finds it working, the second completed with the result inlined. A poll sooner
  than ``pollIntervalMs`` after the last answer, or a client that leaves with the task
  neither terminal nor cancelled, is ``client-task-poll``. The kit's task asks nothing, so
  a ``tasks/update`` answering anything is ``client-task-update``.
"""

from __future__ import annotations

from typing import Any

import attrs

from .._versions import STATELESS_REVISIONS
from ._client_kit import KitView

__all__ = ["TASKS_EXTENSION", "TASK_POLL_MS", "TASK_TTL_MS", "StatelessKit"]

#: The ``ttl`` of the kit's tasks (milliseconds): the run's length at most.
TASK_TTL_MS = 60_000
#: The ``pollIntervalMs`` of the kit's 2026-07-28 task: short, so that a check takes little
#: time; a client SHOULD wait it between polls (ext-tasks tasks.md, Task Polling).
TASK_POLL_MS = 100
#: The tasks extension's identifier under ``capabilities.extensions`` (SEP-2663).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: When the kit's task was created and last updated (no clock is read here; the value is
#: a valid ISO 8601 time, which is all a client may rely on).
_TASK_TIME = "2026-07-28T00:00:00Z"
_META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"


@attrs.define
class _Task:
    """The kit's one task: what the client has seen of it."""

    task_id: str
    result: dict[str, Any]
    #: When its last answer (the creation, or a tasks/get) was queued: the next poll is due
    #: ``TASK_POLL_MS`` later.
    answered_at: float
    polls: int = 0
    status: str = "working"
    #: Whether the client has been told a terminal status (or cancelled the task).
    settled: bool = False


class StatelessKit:
    """MRTR, listen streams and the tasks extension for one :class:`ClientMachine`."""

    def __init__(self, kit: KitView) -> None:
        self.kit = kit
        #: The input_required round: its request key, the keys asked and the state sent.
        self.mrtr: dict[str, Any] | None = None
        #: When the input_required answer went out (None once retried): the retry is due.
        self.mrtr_at: float | None = None
        self.listens: set[str] = set()
        self.task: _Task | None = None

    def mrtr_check(self, message: dict[str, Any], key: str, now: float) -> bool:
        """MRTR (2026-07-28 basic/patterns/mrtr.mdx). Returns True when answered here."""
        params = message.get("params") or {}
        if self.mrtr is None and "inputResponses" not in params and (
                "requestState" not in params):
            requests: dict[str, Any] = {}
            caps = self.kit.client_caps
            if "roots" in caps:
                requests["roots"] = {"method": "roots/list"}
            if "elicitation" in caps:
                requests["elicit"] = {"method": "elicitation/create", "params": {
                    "mode": "form", "message": "A value, please",
                    "requestedSchema": {"type": "object", "properties": {
                        "answer": {"type": "string", "default": "yes"}}}}}
            if "sampling" in caps:
                requests["sample"] = {"method": "sampling/createMessage", "params": {
                    "messages": [{"role": "user", "content": {"type": "text",
                                                              "text": "Say hi"}}],
                    "maxTokens": 16}}
            self.mrtr = {"key": key, "name": params.get("name"), "keys": set(requests),
                         "state": f"kit-state-{self.kit.sessions}-{len(key)}"}
            self.mrtr_at = now
            self.kit.steps.append("input_required sent")
            result: dict[str, Any] = {"resultType": "input_required",
                                      "requestState": self.mrtr["state"]}
            if requests:
                result["inputRequests"] = requests
            self.kit._answer(key, message["id"], result)
            return True
        if self.mrtr is not None and self.mrtr_at is not None:
            expected = self.mrtr
            self.mrtr_at = None
            self.kit.steps.append("input_required retried")
            problems = []
            if key == expected["key"]:
                problems.append("the retry reused the request id")
            if params.get("requestState") != expected["state"]:
                problems.append(f"requestState {params.get('requestState')!r} is not the "
                                f"one sent ({expected['state']!r})")
            responses = params.get("inputResponses") or {}
            got = set(responses) if isinstance(responses, dict) else set()
            if got != expected["keys"]:
                problems.append(f"inputResponses keys {sorted(got)} differ from the "
                                f"inputRequests keys {sorted(expected['keys'])}")
            if problems:
                self.kit.finding("client-input-retry", "; ".join(problems), received=message)
            elif isinstance(responses, dict):
                revision = self.kit.revision or STATELESS_REVISIONS[-1]
                for name, value in responses.items():
                    kind = {"roots": "ListRootsResult", "elicit": "ElicitResult",
                            "sample": "CreateMessageResult"}[name]
                    found = self.kit.schemas.errors(revision, kind, value)
                    if found:
                        self.kit.finding("client-result-schema", f"inputResponses[{name}]: "
                                         f"{'; '.join(found)}", received=message)
        return False

    def listen(self, message: dict[str, Any], key: str) -> None:
        """``subscriptions/listen`` (2026-07-28 basic/patterns/subscriptions.mdx): the stream
        opens with the acknowledgement of the honoured subset (the kit honours
        ``toolsListChanged`` only), every message tagged with the subscription id (the
        listen's JSON-RPC id); then one ``tools/list_changed``. The stream stays open until
        the client ends it (:meth:`stream_closed` on HTTP, ``notifications/cancelled`` on
        stdio); the kit never answers it."""
        request_id = message["id"]
        params = message.get("params")
        asked = params.get("notifications") if isinstance(params, dict) else None
        honoured = ({"toolsListChanged": True} if isinstance(asked, dict)
                    and asked.get("toolsListChanged") is True else {})
        tag = {_META_SUBSCRIPTION: request_id}
        stream = self.kit._stream_for(key)
        self.listens.add(key)
        self.kit._emit(stream, {
            "jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": honoured, "_meta": tag}})
        if honoured:
            self.kit._emit(stream, {"jsonrpc": "2.0",
                                    "method": "notifications/tools/list_changed",
                                    "params": {"_meta": tag}})
        self.kit.steps.append("listen acknowledged")

    def stream_closed(self, stream: str, now: float) -> None:
        """HTTP: the client closed ``stream`` before its end. In 2026-07-28 that cancels
        the request -- for a listen stream, the transport's way of ending it."""
        if stream in self.listens:
            self.listens.discard(stream)
            self.kit._in_flight.pop(stream, None)
            self.kit.steps.append("listen stream closed by the client")

    def declares_tasks(self) -> bool:
        """Whether this request's ``_meta`` client capabilities declare the tasks extension
        (ext-tasks tasks.md, Capability Negotiation: per request, never from an earlier
        one)."""
        extensions = self.kit.client_caps.get("extensions")
        return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION),
                                                           dict)

    def _task_body(self, task: _Task) -> dict[str, Any]:
        return {"taskId": task.task_id, "status": task.status, "createdAt": _TASK_TIME,
                "lastUpdatedAt": _TASK_TIME, "ttlMs": TASK_TTL_MS,
                "pollIntervalMs": TASK_POLL_MS}

    def create_task(self, key: str, request_id: Any, result: dict[str, Any]) -> None:
        """Server-directed creation (ext-tasks tasks.md, Task Creation): the call is answered
        with a ``CreateTaskResult``; the outcome is ``result``, inlined by the second
        ``tasks/get`` (the first finds the task still working)."""
        task = _Task(task_id=f"kit-task-{self.kit.sessions}", result=result,
                     answered_at=self.kit._now)
        self.task = task
        self.kit.steps.append("task created")
        self.kit._answer(key, request_id, {"resultType": "task", **self._task_body(task)})

    def task_request(self, message: dict[str, Any], method: str, key: str,
                     now: float) -> None:
        """``tasks/get``, ``tasks/update`` and ``tasks/cancel`` (ext-tasks tasks.md): -32021
        naming the extension for a request that does not declare it, -32602 for a task the
        kit did not create; a poll sooner than ``pollIntervalMs`` after the last answer
        about a task still running is ``client-task-poll``."""
        request_id = message["id"]
        params = message.get("params")
        task_id = params.get("taskId") if isinstance(params, dict) else None
        task = self.task
        if not self.declares_tasks():
            self.kit._answer(key, request_id,
                             error=(-32021, "Missing required client capability"),
                             data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})
            return
        if task is None or task_id != task.task_id:
            self.kit._answer(key, request_id, error=(-32602, f"Unknown taskId {task_id!r}"))
            return
        if method == "tasks/cancel":
            if task.status == "working":
                task.status = "cancelled"
            task.settled = True
            self.kit.steps.append("task cancelled")
            self.kit._answer(key, request_id, {"resultType": "complete"})
            return
        if method != "tasks/get":  # tasks/update: the kit's task asks nothing
            responses = params.get("inputResponses") if isinstance(params, dict) else None
            if isinstance(responses, dict) and responses:
                self.kit.finding("client-task-update", f"tasks/update for {task.task_id!r} "
                                 f"answered {sorted(responses)}, which the task never asked "
                                 "(it has no outstanding inputRequests)", received=message)
            self.kit._answer(key, request_id, {"resultType": "complete"})
            return
        waited = now - task.answered_at
        # ``answered_at`` is when the kit queued its last answer, before the client got it:
        # the wait measured here is never shorter than the client's (no false positive).
        if not task.settled and waited * 1000 < TASK_POLL_MS:
            self.kit.finding("client-task-poll", f"tasks/get for {task.task_id!r} "
                             f"{waited * 1000:.0f} ms after the last answer about it, before "
                             f"its pollIntervalMs of {TASK_POLL_MS}", received=message)
        task.polls += 1
        if task.status == "working" and task.polls >= 2:
            task.status = "completed"
        body: dict[str, Any] = {"resultType": "complete", **self._task_body(task)}
        if task.status == "completed":
            body["result"] = task.result
        if task.status != "working":
            task.settled = True
        task.answered_at = now
        self.kit.steps.append(f"tasks/get answered ({task.status})")
        self.kit._answer(key, request_id, body)

    def cancelled(self, key: str, message: dict[str, Any]) -> bool:
        """A ``notifications/cancelled`` naming ``key``: True when it named an open listen
        stream (ended here; POSTed over HTTP it is ``client-listen``)."""
        if key not in self.listens:
            return False
        self.listens.discard(key)
        self.kit._in_flight.pop(key, None)
        if self.kit.transport == "http":
            self.kit.finding("client-listen", f"notifications/cancelled was POSTed for the "
                             f"listen stream {key}: on HTTP, closing the stream is the "
                             "cancellation", received=message)
        else:
            self.kit.steps.append("listen cancelled")
        return True

    def close(self) -> None:
        """The client went away: its task must have been followed to its end (or
        cancelled)."""
        task = self.task
        if task is not None and not task.settled:
            self.kit.finding("client-task-poll", f"the client went away with its task "
                             f"{task.task_id!r} {task.status} after {task.polls} tasks/get: "
                             "neither followed to a terminal status nor cancelled")
