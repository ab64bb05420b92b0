"""The client checker's own requests to the client, and the verdicts on its answers.

Theory of operation
-------------------
:class:`Probes` runs while the client's first request is held (or, for a client that only
listens, after it has been idle): one request at a time -- ``ping``, ``roots/list`` with a
progress token, ``sampling/createMessage`` (task-augmented for a 2025-11-25 client that
declared it, then ``tasks/get`` and ``tasks/result`` for its task), ``elicitation/create``
(form, and URL mode to a client that declared it) -- then the hostile output and a
liveness ``ping``. The next goes out when the previous one is answered or overdue. Each
answer is judged against the capabilities the client declared and the revision's schema
(an error is always acceptable); progress must name a token of a request still active and
increase. When the queue is empty the held request is answered (the machine's
``_release_held``). Like the machine, it does no I/O and reads no clock.
"""

from __future__ import annotations

from typing import Any

import attrs

from .._capabilities import lookup
from .._versions import FEATURES, HANDSHAKE_REVISIONS
from ._client_kit import KitView, request_key
from ._client_stateless import TASK_TTL_MS

#: The size of the huge notification of the hostile phase: 1 MiB is over the default line
#: limits of several JSON-RPC stacks (a client may refuse it, but must live on).
HUGE_SIZE = 1 << 20

#: The URL-mode elicitation (2025-11-25) sent to a client that declared ``elicitation.url``:
#: a consent URL on a reserved name (RFC 6761: ``.invalid`` never resolves).
URL_ELICITATION: dict[str, Any] = {
    "mode": "url", "message": "Please confirm in your browser",
    "url": "https://kit.invalid/consent", "elicitationId": "kit-elicitation-1"}


@attrs.define
class Probe:
    """A request of the kit's in flight."""

    method: str
    params: dict[str, Any]
    sent_at: float
    token: str | None = None
    last_progress: float | None = None
    liveness: bool = False


class Probes:
    """The kit's requests to one client, in order, and the verdicts on the answers."""

    def __init__(self, kit: KitView) -> None:
        self.kit = kit
        #: What is still to send: (method, params, unused).
        self.queue: list[tuple[str, dict[str, Any], bool]] = []
        self.pending: dict[str, Probe] = {}
        self.answered: set[str] = set()
        self.timed_out: set[str] = set()
        self.count = 0
        self.probing = False
        self.probed = False
        self.ping_answered = False
        self.tokens: dict[str, Probe] = {}
        #: The client request held while the probes run: key, id, message.
        self.held: tuple[str, Any, dict[str, Any]] | None = None
        self.hostile_sent = False
        #: HTTP: the hostile output is still to come (last, on a request of a new session).
        self.http_hostile_due = False

    def overdue(self, now: float, limit: float) -> None:
        """Judge the probes unanswered for longer than ``limit`` seconds."""
        for request, probe in list(self.pending.items()):
            if now - probe.sent_at > limit:
                del self.pending[request]
                self.timed_out.add(request)
                if probe.liveness:
                    self.kit.finding("client-robustness", "after hostile output (a line that "
                                     "is not JSON, a response to no request, a 1 MiB "
                                     "notification) the client no longer answered ping "
                                     f"within {limit:g} s")
                else:
                    self.kit.finding("client-ping" if probe.method == "ping" else
                                     "client-no-reply", f"{probe.method} unanswered after "
                                     f"{limit:g} s", sent={"method": probe.method,
                                                           "params": probe.params})
                self.advance(now)

    def progress(self, message: dict[str, Any], params: dict[str, Any]) -> None:
        """``notifications/progress`` from the client, for a token the kit gave out."""
        token = params.get("progressToken")
        probe = self.tokens.get(request_key(token))
        # Active: the kit's request that carried the token is still unanswered
        # (progress.mdx: only for tokens of active requests).
        if probe is None or not any(p is probe for p in self.pending.values()):
            self.kit.finding("client-progress-unknown-token", f"progress for token {token!r}, "
                             "which names no active request of the kit's", received=message)
            return
        value = params.get("progress")
        if isinstance(value, (int, float)):
            if probe.last_progress is not None and value <= probe.last_progress:
                self.kit.finding("client-progress-not-increasing", f"progress {value} after "
                                 f"{probe.last_progress}", received=message)
            probe.last_progress = value

    def response(self, message: dict[str, Any], now: float) -> None:
        """The client's answer to one of the kit's requests: judged, then the next."""
        key = request_key(message["id"])
        if message["id"] is None and "error" in message:
            return  # the client answered our garbage line (JSON-RPC 2.0 s. 5)
        if key in self.timed_out:
            return  # a late answer: the timeout was the finding
        if key in self.answered:
            self.kit.finding("client-duplicate-response", f"a second answer to {key}",
                             received=message)
            return
        probe = self.pending.pop(key, None)
        if probe is None:
            self.kit.finding("client-unknown-id", f"a response to {key}, which the kit never "
                             "sent", received=message)
            return
        self.answered.add(key)
        mode = " (url)" if probe.params.get("mode") == "url" else ""
        self.kit.steps.append(f"{'liveness ' if probe.liveness else ''}{probe.method}{mode} "
                              "answered")
        self._judge(probe, message)
        self.advance(now)

    def _judge(self, probe: Probe, message: dict[str, Any]) -> None:
        revision = self.kit.revision or HANDSHAKE_REVISIONS[-1]
        method = probe.method
        sent = {"method": method, "params": probe.params}
        if probe.liveness:
            return
        if method == "ping":
            self.ping_answered = True
            if "result" not in message or not isinstance(message["result"], dict) or any(
                    k != "_meta" for k in message["result"]):
                self.kit.finding("client-ping", "ping was not answered with an empty result",
                                 sent=sent, received=message)
            return
        capability = {"roots/list": "roots", "sampling/createMessage": "sampling",
                      "elicitation/create": "elicitation", "tasks/get": "tasks",
                      "tasks/result": "tasks"}[method]
        declared = capability in self.kit.client_caps
        if "error" in message:
            return  # an error is always an acceptable answer
        if "task" in probe.params or method.startswith("tasks/"):
            self._judge_task(probe, message, revision)
            return
        if not declared:
            self.kit.finding("client-undeclared-answer", f"{method} answered with a result "
                             f"although the client did not declare {capability}", sent=sent,
                             received=message)
            return
        name = self.kit.schemas.result_definition(revision, method)
        if name is not None:
            problems = self.kit.schemas.errors(revision, name, message.get("result"))
            if problems:
                self.kit.finding("client-result-schema", f"{method}: {'; '.join(problems)}",
                                 sent=sent, received=message)
                return
        result = message.get("result")
        if probe.params.get("mode") == "url" and isinstance(result, dict):
            if "content" in result:
                self.kit.finding("client-elicitation-url-result", "a URL-mode elicitation was "
                                 f"answered with content (action {result.get('action')!r})",
                                 sent=sent, received=message)
            if result.get("action") == "accept":
                # The out-of-band interaction "completed": the optional notification.
                self.kit._emit(self.stream(), {
                    "jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                    "params": {"elicitationId": URL_ELICITATION["elicitationId"]}})

    def _judge_task(self, probe: Probe, message: dict[str, Any], revision: str) -> None:
        """2025-11-25 basic/utilities/tasks.mdx: a task-augmented request is answered with a
        ``CreateTaskResult``; ``tasks/get`` with the task, ``tasks/result`` with the result
        of the request the task runs."""
        sent = {"method": probe.method, "params": probe.params}
        result = message.get("result")
        name = {"tasks/get": "GetTaskResult",
                "tasks/result": "CreateMessageResult"}.get(probe.method, "CreateTaskResult")
        problems = self.kit.schemas.errors(revision, name, result)
        if problems:
            self.kit.finding("client-task-result", f"{probe.method}: {'; '.join(problems)}",
                             sent=sent, received=message)
            return
        assert isinstance(result, dict)
        if name == "CreateTaskResult":
            task_id = result["task"]["taskId"]
            self.queue[0:0] = [("tasks/get", {"taskId": task_id}, False),
                               ("tasks/result", {"taskId": task_id}, False)]
        elif name == "GetTaskResult" and result.get("taskId") != probe.params["taskId"]:
            self.kit.finding("client-task-result", f"tasks/get for {probe.params['taskId']!r} "
                             f"answered with task {result.get('taskId')!r}", sent=sent,
                             received=message)

    def start(self, now: float) -> None:
        self.probing = True
        self.queue = [("ping", {}, False)]
        self.queue.append(("roots/list", {"_meta": {"progressToken": "kit-progress"}},
                           False))
        revision = self.kit.revision or ""
        features = FEATURES.get(revision)
        sampling: dict[str, Any] = {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
            "maxTokens": 16}
        if features is not None and features.core_tasks and self.client_has(
                "tasks", "requests", "sampling", "createMessage"):
            sampling["task"] = {"ttl": TASK_TTL_MS}
        self.queue.append(("sampling/createMessage", sampling, False))
        if lookup("elicitation/create", revision) is not None:  # 2025-06-18 on
            self.queue.append(("elicitation/create", {
                "mode": "form", "message": "A value, please",
                "requestedSchema": {"type": "object", "properties": {
                    "answer": {"type": "string", "default": "yes"}}}}
                if features is not None and features.elicitation_modes else {
                "message": "A value, please", "requestedSchema": {
                    "type": "object", "properties": {"answer": {"type": "string"}}}}, False))
        if self.url_elicitation():
            self.queue.append(("elicitation/create", dict(URL_ELICITATION), False))
        if self.kit.transport == "http":
            self.http_hostile_due = True
        else:
            self.queue.append(("hostile", {}, False))
        self.advance(now)

    def client_has(self, *path: str) -> bool:
        node: Any = self.kit.client_caps
        for part in path:
            if not isinstance(node, dict) or not isinstance(node.get(part), dict):
                return False
            node = node[part]
        return True

    def url_elicitation(self) -> bool:
        """Whether the client gets a URL-mode elicitation: the revision has the modes and the
        client declared ``elicitation.url`` (2025-11-25 client/elicitation.mdx, Capabilities:
        a server MUST NOT send a mode the client did not declare)."""
        features = FEATURES.get(self.kit.revision or "")
        elicitation = self.kit.client_caps.get("elicitation")
        return (features is not None and features.elicitation_modes
                and isinstance(elicitation, dict) and "url" in elicitation)

    def send(self, method: str, params: dict[str, Any], now: float,
             liveness: bool = False) -> None:
        self.count += 1
        request_id = f"kit-{self.count}"
        probe = Probe(method=method, params=params, sent_at=now, liveness=liveness)
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and "progressToken" in meta:
            probe.token = str(meta["progressToken"])
            self.tokens[request_key(meta["progressToken"])] = probe
        self.pending[request_key(request_id)] = probe
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params:
            message["params"] = params
        self.kit._emit(self.stream(), message)

    def stream(self) -> str:
        if self.held is not None:
            return self.kit._stream_for(self.held[0])
        return "main"

    def hostile(self, stream: str) -> None:
        self.kit._emit(stream, raw=b"this line is not JSON {")
        self.kit._emit(stream, {"jsonrpc": "2.0", "id": "kit-never-sent", "result": {}})
        self.kit._emit(stream, {"jsonrpc": "2.0", "method": "notifications/message", "params": {
            "level": "info", "logger": "kit", "data": "x" * HUGE_SIZE}})
        for message in self.kit.extra:
            self.kit._emit(stream, message)

    def advance(self, now: float) -> None:
        """Send the next probe once the previous one is settled (answered or overdue)."""
        if not self.probing or self.pending:
            return
        if not self.queue:
            self.probing = False
            self.probed = True
            self.kit._release_held(now)
            return
        method, params, _ = self.queue.pop(0)
        if method == "hostile":
            self.hostile(self.stream())
            self.hostile_sent = True
            self.kit.steps.append("hostile output sent")
            if self.ping_answered:
                # Liveness: judged only for a client that answered the first ping.
                self.send("ping", {}, now, liveness=True)
            else:
                self.advance(now)
            return
        self.send(method, params, now)
