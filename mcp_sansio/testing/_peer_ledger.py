"""The peer machine's bookkeeping: the requests in flight and what became of them, the
tables its parts share, and :class:`MachineView`, what those parts see of the machine.

Theory of operation
-------------------
:class:`~mcp_sansio.testing.PeerMachine` is a hypothesis state machine whose parts are held,
not inherited: the wire (:mod:`._peer_wire`) sends and reads, the judge
(:mod:`._peer_judge`) gives a verdict on everything the server writes, the script
(:mod:`._peer_script`) runs the fixed steps (opening a session, the sweep, the end of a
session). They share one :class:`Ledger` -- every request sent and not yet answered, the
answers seen, the progress tokens, the sequence numbers that tell a race from a deviation
(docs/architecture.rst, "Module notes") -- and reach the machine's state, configuration,
findings and waits through :class:`MachineView`, a protocol, so that no part imports the
machine.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

import attrs

from .._events import RequestId
from ._findings import Report
from ._invalid import Invalid
from ._schemas import Schemas
from ._transport import Transport

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"
META_LEVEL = "io.modelcontextprotocol/logLevel"
META_SUB = "io.modelcontextprotocol/subscriptionId"
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
#: The list methods: the server capability that offers each, and the result's item key.
LIST_METHODS = {
    "tools/list": ("tools", "tools"),
    "prompts/list": ("prompts", "prompts"),
    "resources/list": ("resources", "resources"),
    "resources/templates/list": ("resources", "resourceTemplates"),
}
LIST_CHANGED = {
    "notifications/tools/list_changed": "tools.listChanged",
    "notifications/prompts/list_changed": "prompts.listChanged",
    "notifications/resources/list_changed": "resources.listChanged",
}
LISTEN_FILTER = {
    "toolsListChanged": ("notifications/tools/list_changed", "tools.listChanged"),
    "promptsListChanged": ("notifications/prompts/list_changed", "prompts.listChanged"),
    "resourcesListChanged": ("notifications/resources/list_changed", "resources.listChanged"),
}
#: Names that a server is not expected to know.
NO_TOOL = "kit-no-such-tool"
NO_PROMPT = "kit-no-such-prompt"
NO_RESOURCE = "kit-unknown://no/such/resource"

#: Notes that say a call took longer than the run would wait (the only note a correct,
#: deterministic peer may cause).
SLOW_NOTE = "slow: "


@attrs.define
class Pending:
    """A request we sent and have not seen answered."""

    request_id: RequestId
    method: str
    message: Any
    seq: int
    #: An invalid message: the answer it deserves.
    invalid: Invalid | None = None
    #: A valid request that deserves an error: (check name, accepted codes, what it was).
    expect_error: tuple[str, frozenset[int], str] | None = None
    barrier: bool = False
    token: str | int | None = None
    last_progress: float | None = None
    cancelled_seq: int | None = None
    log_level: str | None = None
    tool: dict[str, Any] | None = None
    #: 2026-07-28 listen stream: the filter asked for, and the acknowledgement once seen.
    listen_filter: dict[str, Any] | None = None
    acknowledged: bool = False
    #: Set for requests whose answer the caller judges itself (initialize, the first
    #: discover): the answer is appended here, unjudged.
    replies: list[dict[str, Any]] | None = None
    #: Sent inside a JSON-RPC batch (2025-03-26): unanswered is a ``batch`` finding.
    batch: bool = False


@attrs.define
class Ledger:
    """One session's requests and answers, and the sequence numbers of what was sent."""

    next_id: int = 0
    #: The sequence number of the last message written.
    seq: int = 0
    #: The latest sequence number among the barriers answered: every cancellation sent
    #: before it has been processed.
    acked_seq: int = -1
    #: The latest sequence number among the requests answered (the proof that a request
    #: left unanswered was skipped, not still being worked on).
    answered_seq: int = -1
    pending: dict[RequestId, Pending] = attrs.Factory(dict)
    answered: set[RequestId] = attrs.Factory(set)
    #: Requests the kit stopped waiting for (slow): a late answer is no stray response.
    abandoned: dict[RequestId, Pending] = attrs.Factory(dict)
    #: Invalid messages that must not be answered, by their readable id.
    silent: dict[RequestId, Invalid] = attrs.Factory(dict)
    #: Invalid messages whose id cannot be read: answered with ``"id": null``.
    null_expected: list[Invalid] = attrs.Factory(list)
    tokens: dict[str | int, RequestId] = attrs.Factory(dict)
    #: A list's next page, by the request that got it.
    cursors: dict[RequestId, str] = attrs.Factory(dict)
    #: The peer closed the connection.
    eof: bool = False
    last_sent: Any = None

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def done(self, pending: Pending) -> bool:
        return pending.request_id not in self.pending

    def owed(self) -> list[Pending]:
        """Requests still owed an answer (not cancelled, not a listen stream)."""
        return [p for p in self.pending.values()
                if p.cancelled_seq is None and p.listen_filter is None]

    def cancellable(self) -> list[Pending]:
        return [p for p in self.pending.values()
                if not p.barrier and p.invalid is None and p.cancelled_seq is None
                and p.method not in ("initialize", "ping", "server/discover")]

    def abandon(self, pending: Pending) -> None:
        self.pending.pop(pending.request_id, None)
        self.abandoned[pending.request_id] = pending


class MachineView(Protocol):
    """What of :class:`~mcp_sansio.testing.PeerMachine` its parts use: its configuration
    (class attributes), the session's state, and its findings and waits."""

    revisions: ClassVar[tuple[str, ...]]
    report: ClassVar[Report | None]
    reply_timeout: ClassVar[float]
    settle_time: ClassVar[float]
    invalid_rules: ClassVar[frozenset[str] | None]
    client_info: ClassVar[dict[str, Any]]
    client_capabilities: ClassVar[dict[str, Any]]
    clock: ClassVar[Callable[[], float] | None]
    call_timeout: ClassVar[float]
    startup_timeout: ClassVar[float]
    tools_include: ClassVar[tuple[str, ...] | None]
    tools_exclude: ClassVar[tuple[str, ...]]
    allow_destructive: ClassVar[bool]
    max_argument_size: ClassVar[int]
    wild: ClassVar[bool]
    realistic_magnitude: ClassVar[float]
    run_state: ClassVar[dict[str, Any]]

    transport: Transport | None
    revision: str
    alive: bool
    stateless: bool
    peer_capabilities: dict[str, Any]
    peer_info: dict[str, Any]
    tools: dict[str, dict[str, Any]]
    prompts: dict[str, dict[str, Any]]
    resources: list[str]
    ledger: Ledger
    _schemas: Schemas

    @property
    def cut_short(self) -> bool: ...

    def finding(self, rule_name: str, detail: str, *, sent: Any = None, received: Any = None,
                requirement: str | None = None) -> None: ...

    def note(self, text: str) -> None: ...

    def over_budget(self) -> bool: ...

    def _now(self) -> float | None: ...

    def request(self, method: str, body: Mapping[str, Any] | None = None, *,
                progress: bool = False, level: str | None = None, **kw: Any) -> Pending: ...

    def notify(self, method: str, body: Mapping[str, Any] | None = None) -> None: ...

    def wait_until(self, done: Callable[[], bool], timeout: float | None = None, *,
                   within: float | None = None) -> bool: ...

    def settle(self, quiet: float, *, within: float | None = None) -> None: ...

    def _on_error(self, pending: Pending, message: dict[str, Any]) -> None: ...

    def _on_result(self, pending: Pending, message: dict[str, Any]) -> None: ...


def short(value: Any, limit: int = 80) -> str:
    text = " ".join(str(value).split())  # one line: some peers put JSON in their messages
    return text if len(text) <= limit else text[: limit - 3] + "..."


def slow_note(revision: str, pending: Pending, call_timeout: float) -> str:
    params = pending.message.get("params") or {}
    call = (f"tool {short(params.get('name'))!r} with arguments "
            f"{short(json.dumps(params.get('arguments'), ensure_ascii=False), 200)}")
    if pending.last_progress is not None:
        return (f"{SLOW_NOTE}[{revision}] {call} was still working (progress "
                f"{pending.last_progress}) after {call_timeout} s; cancelled, counted as slow")
    return (f"{SLOW_NOTE}[{revision}] {call} was unanswered after {call_timeout} s; "
            "cancelled, counted as slow")


