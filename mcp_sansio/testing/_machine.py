"""The peer machine: a hypothesis state machine that plays an MCP client against a server.

Theory of operation
-------------------
:class:`PeerMachine` opens one session per hypothesis example through a
:class:`~mcp_sansio.testing.Transport`: it picks a revision, performs the handshake
(``initialize``, optionally after an early ``ping``) or, for the stateless era, asks
``server/discover``, and lists what the server offers. Then hypothesis chooses among rules
that call tools (with arguments drawn from each tool's ``inputSchema``, sometimes asking for
progress), get prompts, read resources, list, complete, ping, cancel requests in flight,
open listen streams (2026-07-28), and send messages that break one rule on purpose
(:func:`~mcp_sansio.testing.invalid_messages`). Some requests name a tool, prompt or resource
that does not exist, to see the error.

Requests are not waited for one by one: several can be in flight, which is what makes
cancellation and progress testable. Everything the server writes is read as it comes and
checked at once (:data:`~mcp_sansio.testing.CHECKS`): the envelope and the params/results
against the revision's official schema, ids against the requests in flight, error codes
against what the request deserved, progress against the tokens given out, log and change
notifications against the capabilities and the revision.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import fnmatch
import functools
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, cast

import attrs
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky, FlakyStrategyDefinition
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from .._capabilities import Kind, declared, lookup, missing_capability
from .._events import RequestId
from .._state import Role
from .._versions import FEATURES, HANDSHAKE_REVISIONS, KNOWN_REVISIONS
from ._findings import CHECKS, Finding, PeerDeviation, Report
from ._from_schema import SchemaStrategies, UnsupportedSchema
from ._invalid import RULES, Invalid, invalid_messages
from ._schemas import Schemas, bundled
from ._transport import Transport

__all__ = ["SLOW_NOTE", "PeerMachine", "check_peer", "shrink", "sweep"]

_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_CAPS = "io.modelcontextprotocol/clientCapabilities"
_META_INFO = "io.modelcontextprotocol/clientInfo"
_META_LEVEL = "io.modelcontextprotocol/logLevel"
_META_SUB = "io.modelcontextprotocol/subscriptionId"
_LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_LIST_METHODS = {
    "tools/list": ("tools", "tools"),
    "prompts/list": ("prompts", "prompts"),
    "resources/list": ("resources", "resources"),
    "resources/templates/list": ("resources", "resourceTemplates"),
}
_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools.listChanged",
    "notifications/prompts/list_changed": "prompts.listChanged",
    "notifications/resources/list_changed": "resources.listChanged",
}
_LISTEN_FILTER = {
    "toolsListChanged": ("notifications/tools/list_changed", "tools.listChanged"),
    "promptsListChanged": ("notifications/prompts/list_changed", "prompts.listChanged"),
    "resourcesListChanged": ("notifications/resources/list_changed", "resources.listChanged"),
}
#: How many messages one wait may read before giving up (a peer that never stops talking).
_MAX_READS = 10_000
#: Names that a server is not expected to know.
_NO_TOOL = "kit-no-such-tool"
_NO_PROMPT = "kit-no-such-prompt"
_NO_RESOURCE = "kit-unknown://no/such/resource"
#: check_peer() reports; it does not shrink (each session may be a new process).
_GENERATE_ONLY = (Phase.explicit, Phase.generate)


@attrs.define
class _Pending:
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


class PeerMachine(RuleBasedStateMachine):
    """A client that drives an MCP server through random legal sessions and judges it.

    Configure it by subclassing or with :meth:`configure`; run it with hypothesis
    (``run_state_machine_as_test``, or its ``TestCase`` attribute under pytest/unittest),
    or let :func:`check_peer` do both.
    """

    #: Makes a fresh transport to a fresh server, once per session (hypothesis example).
    transport_factory: ClassVar[Callable[[], Transport] | None] = None
    #: The revisions to try; each session draws one.
    revisions: ClassVar[tuple[str, ...]] = KNOWN_REVISIONS
    #: The schemas results are checked against (default: the distilled official ones).
    schemas: ClassVar[Schemas | None] = None
    #: "Report" mode when set: findings are collected here instead of failing the test.
    report: ClassVar[Report | None] = None
    #: Seconds of silence after which an owed answer counts as never coming.
    reply_timeout: ClassVar[float] = 5.0
    #: Seconds of silence that end a session (to catch replies after a cancellation).
    settle_time: ClassVar[float] = 0.5
    #: Names of the invalid-message rules to use (None: all of them; empty: none).
    invalid_rules: ClassVar[frozenset[str] | None] = None
    client_info: ClassVar[dict[str, Any]] = {"name": "mcp-sansio-testing", "version": "0"}
    client_capabilities: ClassVar[dict[str, Any]] = {}
    #: Seconds, for budgets (``None``: no budgets; the core never reads a clock itself).
    clock: ClassVar[Callable[[], float] | None] = None
    #: Wall-time budget of the whole run and of each session, in seconds (None: none).
    budget: ClassVar[float | None] = None
    session_budget: ClassVar[float | None] = None
    #: How long one tool call may take in all, progress or not (needs ``clock``). The
    #: default, 30 s, is six times ``reply_timeout``: a tool does real work, a ping none.
    call_timeout: ClassVar[float] = 30.0
    #: How long the first answer of a session may take at least (a process is starting: an
    #: interpreter importing a framework on a loaded machine takes seconds).
    startup_timeout: ClassVar[float] = 20.0
    #: Shell-style patterns of the tools to call (None: all) and not to call.
    tools_include: ClassVar[tuple[str, ...] | None] = None
    tools_exclude: ClassVar[tuple[str, ...]] = ()
    #: Call tools annotated ``destructiveHint: true`` too.
    allow_destructive: ClassVar[bool] = False
    #: Largest generated ``arguments`` object, as compact JSON bytes. 4 KiB: a schema-valid
    #: argument rarely needs more, and a huge one only tests the tool's patience.
    max_argument_size: ClassVar[int] = 4096
    #: Extreme numbers in tool arguments (default: realistic ones, see the module docstring).
    wild: ClassVar[bool] = False
    #: Open sides of a numeric argument's range stay within this of the other side or zero.
    realistic_magnitude: ClassVar[float] = 10.0
    #: The run's shared state (start time, whether it was cut short), set by configure().
    run_state: ClassVar[dict[str, Any]] = {}
    #: "Fail" mode only: raise for this check alone (others are recorded, not raised), so
    #: that hypothesis shrinks a session to the smallest that shows it (:func:`shrink`).
    target_rule: ClassVar[str | None] = None

    @classmethod
    def configure(
        cls,
        transport_factory: Callable[[], Transport],
        *,
        revisions: Iterable[str] | None = None,
        schemas: Schemas | None = None,
        report: Report | None = None,
        reply_timeout: float | None = None,
        settle_time: float | None = None,
        invalid_rules: Iterable[str] | None = None,
        name: str | None = None,
        clock: Callable[[], float] | None = None,
        budget: float | None = None,
        session_budget: float | None = None,
        call_timeout: float | None = None,
        tools: Iterable[str] | None = None,
        exclude_tools: Iterable[str] | None = None,
        allow_destructive: bool | None = None,
        max_argument_size: int | None = None,
        target_rule: str | None = None,
        wild: bool | None = None,
    ) -> type[PeerMachine]:
        """A subclass with this configuration (``None`` keeps the class's value)."""
        namespace: dict[str, Any] = {"transport_factory": staticmethod(transport_factory),
                                     "run_state": {}}
        if clock is not None:
            namespace["clock"] = staticmethod(clock)
        if budget is not None:
            namespace["budget"] = budget
        if session_budget is not None:
            namespace["session_budget"] = session_budget
        if call_timeout is not None:
            namespace["call_timeout"] = call_timeout
        if tools is not None:
            namespace["tools_include"] = tuple(tools)
        if exclude_tools is not None:
            namespace["tools_exclude"] = tuple(exclude_tools)
        if allow_destructive is not None:
            namespace["allow_destructive"] = allow_destructive
        if max_argument_size is not None:
            namespace["max_argument_size"] = max_argument_size
        if target_rule is not None:
            namespace["target_rule"] = target_rule
        if wild is not None:
            namespace["wild"] = wild
        if revisions is not None:
            namespace["revisions"] = tuple(revisions)
        if schemas is not None:
            namespace["schemas"] = schemas
        if report is not None:
            namespace["report"] = report
        if reply_timeout is not None:
            namespace["reply_timeout"] = reply_timeout
        if settle_time is not None:
            namespace["settle_time"] = settle_time
        if invalid_rules is not None:
            namespace["invalid_rules"] = frozenset(invalid_rules)
        return cast("type[PeerMachine]", type(name or cls.__name__, (cls,), namespace))

    def __init__(self) -> None:
        super().__init__()
        self.transport: Transport | None = None
        self.revision = ""
        self.alive = False
        self.stateless = False
        #: The server's declared capabilities and implementation info.
        self.peer_capabilities: dict[str, Any] = {}
        self.peer_info: dict[str, Any] = {}
        #: What the server offers, from its lists: name -> definition; resource URIs.
        self.tools: dict[str, dict[str, Any]] = {}
        self.prompts: dict[str, dict[str, Any]] = {}
        self.resources: list[str] = []
        #: Every finding of this session.
        self.findings: list[Finding] = []
        self._schemas = type(self).schemas or bundled()
        self._next_id = 0
        self._seq = 0
        self._acked_seq = -1
        self._pending: dict[RequestId, _Pending] = {}
        self._answered: set[RequestId] = set()
        #: Requests the kit stopped waiting for (slow): a late answer is no stray response.
        self._abandoned: dict[RequestId, _Pending] = {}
        #: The latest sequence number among the requests answered (the proof that a request
        #: left unanswered was skipped, not still being worked on).
        self._answered_seq = -1
        self._silent: dict[RequestId, Invalid] = {}
        self._null_expected: list[Invalid] = []
        self._tokens: dict[str | int, RequestId] = {}
        self._buffer = b""
        self._eof = False
        self._args: dict[str, st.SearchStrategy[Any] | None] = {}
        self._invalid_strategy: st.SearchStrategy[Invalid] | None = None
        self._cursors: dict[RequestId, str] = {}
        self._session_started: float | None = None
        self._last_sent: Any = None

    # -- budgets -------------------------------------------------------------------------------

    def _now(self) -> float | None:
        clock = type(self).clock
        return None if clock is None else clock()

    def over_budget(self) -> bool:
        """Whether the run's or this session's budget has run out (then the run is marked
        cut short)."""
        now = self._now()
        if now is None:
            return False
        cls = type(self)
        state = cls.run_state
        start = state.setdefault("start", now)
        over = (cls.budget is not None and now - start >= cls.budget) or (
            cls.session_budget is not None and self._session_started is not None
            and now - self._session_started >= cls.session_budget)
        if over:
            self._cut_short()
            self.alive = False  # no more rules; teardown only closes
        return bool(over)

    def _cut_short(self) -> None:
        type(self).run_state["cut_short"] = True
        report = type(self).report
        if report is not None:
            report.cut_short = True

    @property
    def cut_short(self) -> bool:
        return bool(type(self).run_state.get("cut_short"))

    # -- findings ------------------------------------------------------------------------------

    def finding(self, rule_name: str, detail: str, *, sent: Any = None, received: Any = None,
                requirement: str | None = None) -> None:
        """Record a deviation (and raise :class:`PeerDeviation` unless reporting)."""
        check = CHECKS[rule_name]
        found = Finding(rule=rule_name, requirement=requirement or check.requirement,
                        detail=detail, revision=self.revision or None, sent=sent,
                        received=received, source=check.source, cut_short=self.cut_short)
        self.findings.append(found)
        report = type(self).report
        if report is None:
            if type(self).target_rule in (None, rule_name):
                raise PeerDeviation(found)
            return
        report.add(found)

    def note(self, text: str) -> None:
        report = type(self).report
        if report is not None:
            report.note(text)

    # -- sending -------------------------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _send(self, message: Any) -> int:
        """Write one message (a JSON value, or raw bytes for one line); return its sequence
        number."""
        assert self.transport is not None
        line = message if isinstance(message, bytes) else json.dumps(
            message, separators=(",", ":"), ensure_ascii=False).encode()
        self._seq += 1
        self._last_sent = message
        try:
            self.transport.send(line + b"\n")
        except (BrokenPipeError, ConnectionError, EOFError, OSError):
            self._peer_gone()
        return self._seq

    def _params(self, body: Mapping[str, Any] | None = None, *, token: str | int | None = None,
                level: str | None = None) -> dict[str, Any] | None:
        out = dict(body or {})
        meta = dict(out.get("_meta") or {})
        if token is not None:
            meta["progressToken"] = token
        if self.stateless:
            meta[_META_VERSION] = self.revision
            meta[_META_CAPS] = dict(type(self).client_capabilities)
            meta[_META_INFO] = dict(type(self).client_info)
            if level is not None:
                meta[_META_LEVEL] = level
        if meta:
            out["_meta"] = meta
        return out or None

    def request(self, method: str, body: Mapping[str, Any] | None = None, *,
                progress: bool = False, level: str | None = None, **kw: Any) -> _Pending:
        """Send a request (``_meta`` added as the era wants) without waiting for it."""
        request_id = self._new_id()
        token: str | int | None = None
        if progress:
            token = f"kit-progress-{request_id}" if request_id % 2 else request_id + 1_000_000
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        params = self._params(body, token=token, level=level)
        if params is not None:
            message["params"] = params
        pending = _Pending(request_id=request_id, method=method, message=message, seq=0,
                           token=token, log_level=level, **kw)
        self._pending[request_id] = pending
        if token is not None:
            self._tokens[token] = request_id
        pending.seq = self._send(message)
        return pending

    def notify(self, method: str, body: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if body is not None:
            message["params"] = dict(body)
        self._send(message)

    # -- receiving -----------------------------------------------------------------------------

    def _peer_gone(self) -> None:
        if not self._eof:
            self._eof = True
            if self.alive:
                self.finding("peer-closed", "the peer closed the connection in the middle of "
                             "the session (after the last message we sent)",
                             sent=self._last_sent)
            self.alive = False

    def _read(self, timeout: float) -> bool:
        """Read once (waiting up to ``timeout``); handle every whole line. False when
        nothing came."""
        if self.transport is None or self._eof:
            return False
        try:
            data = self.transport.receive(timeout)
        except EOFError:
            self._peer_gone()
            return False
        finally:
            self._transport_findings()
        if not data:
            return False
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if line.strip():
                self._on_line(line)
        return True

    def _transport_findings(self) -> None:
        drain = getattr(self.transport, "drain_findings", None)
        if drain is None:
            return
        for rule_name, detail, sent, received, *level in drain():
            self.finding(rule_name, detail, sent=sent, received=received,
                         requirement=level[0] if level else None)

    def poll(self) -> None:
        """Handle whatever the peer has written already, without waiting."""
        for _ in range(_MAX_READS):
            if not self._read(0.0):
                return

    def wait_until(self, done: Callable[[], bool], timeout: float | None = None, *,
                   within: float | None = None) -> bool:
        """Read until ``done()`` holds, or until the peer stays silent for ``timeout``
        seconds (default ``reply_timeout``), or (with a clock) ``within`` seconds have
        passed in all or the budget has run out. Returns ``done()``."""
        timeout = type(self).reply_timeout if timeout is None else timeout
        start = self._now()
        if within is None and start is not None:
            # A peer that never falls silent (periodic notifications) must not hold a wait
            # for ever: with a clock, an answer due "at once" gets twice the reply timeout.
            within = 2 * type(self).reply_timeout
        for _ in range(_MAX_READS):
            if done():
                return True
            if self.over_budget():
                return done()
            now = self._now()
            if within is not None and now is not None and start is not None:
                left = within - (now - start)
                if left <= 0:
                    return done()
                if not self._read(min(timeout, left)):
                    return done()  # silent for timeout, or the time is up
                continue
            if not self._read(timeout):
                return done()
        return done()

    def settle(self, quiet: float, *, within: float | None = None) -> None:
        """Read until the peer has been silent for ``quiet`` seconds (or, with a clock,
        ``within`` seconds have passed, or the budget has run out)."""
        start = self._now()
        for _ in range(_MAX_READS):
            if self.over_budget():
                return
            now = self._now()
            if within is not None and now is not None and start is not None and (
                    now - start >= within):
                return
            if not self._read(quiet):
                return

    def _on_line(self, line: bytes) -> None:
        try:
            message = json.loads(line.decode("utf-8"), parse_constant=_no_constants)
        except (UnicodeDecodeError, ValueError) as exc:
            self.finding("output-not-json", f"the peer wrote a line that is not JSON ({exc}): "
                         f"{line[:120]!r}", received=line)
            return
        if isinstance(message, list):
            if FEATURES[self.revision].batching and message:
                for item in message:
                    self._on_message(item)
                return
            self.finding("envelope", "the peer sent a JSON array (a batch), which "
                         f"{self.revision} does not have", received=message)
            return
        self._on_message(message)

    def _on_message(self, message: Any) -> None:
        problems = self._envelope_errors(message)
        if problems:
            self.finding("envelope", f"not a JSON-RPC message of {self.revision}: "
                         f"{'; '.join(problems)}", received=message)
            return
        if "method" in message:
            if "id" in message:
                self._on_request(message)
            else:
                self._on_notification(message)
        else:
            self._on_response(message)

    def _envelope_errors(self, message: Any) -> list[str]:
        if not isinstance(message, dict):
            return ["not an object"]
        view = message
        if "error" in message and message.get("id", 0) is None:
            # JSON-RPC 2.0 s. 5: "id": null answers a message whose id could not be read;
            # the MCP schemas cannot express it (they omit the id from 2025-11-25 on).
            view = {**message, "id": 0}
        return self._schemas.errors(self.revision, "JSONRPCMessage", view)

    # -- responses -----------------------------------------------------------------------------

    def _on_response(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        is_error = "error" in message
        if request_id is None:
            self._on_null_id(message)
            return
        pending = self._pending.pop(request_id, None)
        if pending is None and request_id in self._abandoned:
            late = self._abandoned.pop(request_id)
            self.note(f"{SLOW_NOTE}[{self.revision}] {late.method} (id {request_id!r}) was "
                      "answered after the kit had stopped waiting for it")
            return
        if pending is None:
            if request_id in self._silent:
                invalid = self._silent[request_id]
                self.finding(invalid.rule, f"{invalid.description} was answered, which it "
                             "must not be", sent=invalid.message, received=message)
            elif request_id in self._answered:
                self.finding("duplicate-response", f"request {request_id!r} was answered "
                             "again", received=message)
            else:
                self.finding("unknown-id", f"a response for id {request_id!r}, which no "
                             "request had", received=message)
            return
        self._answered.add(request_id)
        self._answered_seq = max(self._answered_seq, pending.seq)
        if pending.token is not None:
            self._tokens.pop(pending.token, None)
        if pending.barrier:
            self._acked_seq = max(self._acked_seq, pending.seq)
        if pending.cancelled_seq is not None and pending.cancelled_seq < self._acked_seq:
            self.finding("response-after-cancel", f"{pending.method} (id {request_id!r}) was "
                         "answered after its cancellation had been processed",
                         sent=pending.message, received=message,
                         requirement="must" if self.stateless else "should")
            return
        if pending.cancelled_seq is not None:
            return  # crossed our cancellation on the wire: fine, and not judged
        if pending.replies is not None:
            pending.replies.append(message)
            self._early_capabilities(pending.method, message)
            return
        if pending.invalid is not None:
            self._judge_invalid(pending.invalid, message)
            return
        if is_error:
            self._on_error(pending, message)
        else:
            self._on_result(pending, message)

    def _early_capabilities(self, method: str, message: dict[str, Any]) -> None:
        """Take the server's capabilities from its initialize (or discover) result as soon as
        it arrives: what follows it in the same read may depend on them (a log message
        right after the InitializeResult is allowed)."""
        result = message.get("result")
        if method in ("initialize", "server/discover") and isinstance(result, dict):
            caps = result.get("capabilities")
            if isinstance(caps, dict):
                self.peer_capabilities = caps

    def _on_null_id(self, message: dict[str, Any]) -> None:
        code = message.get("error", {}).get("code")
        for index, invalid in enumerate(self._null_expected):
            if invalid.accepts(code):
                del self._null_expected[index]
                return
        if self._null_expected:
            invalid = self._null_expected.pop(0)
            self._judge_invalid(invalid, message)
            return
        self.finding("unexpected-error", f"an error with no request id (code {code}) that "
                     "answers nothing we sent with an unreadable id", received=message)

    def _judge_invalid(self, invalid: Invalid, message: dict[str, Any]) -> None:
        if "error" not in message:
            self.finding(invalid.rule, f"{invalid.description}: expected error "
                         f"{invalid.expected_code}, got a result", sent=invalid.message,
                         received=message)
            return
        code = message["error"].get("code")
        if not invalid.accepts(code):
            self.finding(invalid.rule, f"{invalid.description}: expected error "
                         f"{invalid.expected_code}, got {code} "
                         f"({_short(message['error'].get('message'))})",
                         sent=invalid.message, received=message)

    def _on_error(self, pending: _Pending, message: dict[str, Any]) -> None:
        error = message["error"]
        code = error.get("code")
        if pending.expect_error is not None:
            check, codes, what = pending.expect_error
            if code not in codes:
                self.finding(check, f"{what}: expected error {_codes(codes)}, got {code} "
                             f"({_short(error.get('message'))})", sent=pending.message,
                             received=message)
            return
        if pending.method == "ping":
            self.finding("ping", f"ping was answered with error {code}", sent=pending.message,
                         received=message)
        elif pending.method == "server/discover":
            self.finding("discover", f"server/discover was answered with error {code}",
                         sent=pending.message, received=message)
        elif pending.listen_filter is not None:
            pass  # a server may refuse a listen stream

    def _on_result(self, pending: _Pending, message: dict[str, Any]) -> None:
        result = message["result"]
        if pending.expect_error is not None:
            check, codes, what = pending.expect_error
            how = " (a result with isError)" if isinstance(result, dict) and result.get(
                "isError") else ""
            self.finding(check, f"{what}: expected error {_codes(codes)}, got a "
                         f"result{how}", sent=pending.message, received=message)
            return
        if self.stateless and not self._stateless_result(pending, result, message):
            return
        name = self._schemas.result_definition(self.revision, pending.method)
        if name is not None:
            problems = self._schemas.errors(self.revision, name, result)
            if problems:
                self.finding("result-schema", f"{pending.method} result is not a valid {name}:"
                             f" {'; '.join(problems)}", sent=pending.message, received=message)
                return
        if pending.method == "ping" and result not in ({}, {"_meta": {}}) and set(result) - {
                "_meta"}:
            self.finding("ping", "ping was answered with a non-empty result",
                         received=message)
        if pending.method == "tools/call" and pending.tool is not None:
            self._check_structured(pending, result, message)
        if pending.method in _LIST_METHODS:
            self._record_list(pending, result)

    def _stateless_result(self, pending: _Pending, result: dict[str, Any],
                          message: dict[str, Any]) -> bool:
        """2026-07-28: resultType. Returns whether the result is a complete one to check
        further."""
        kind = result.get("resultType")
        if kind == "complete":
            return True
        rule_row = lookup(pending.method, self.revision)
        if kind == "input_required" and rule_row is not None and rule_row.mrtr:
            problems = self._schemas.errors(self.revision, "InputRequiredResult", result)
            if problems:
                self.finding("result-schema", f"{pending.method} input_required result is not "
                             f"valid: {'; '.join(problems)}", received=message)
            for key, item in (result.get("inputRequests") or {}).items():
                method = item.get("method") if isinstance(item, dict) else None
                row = lookup(method, self.revision) if isinstance(method, str) else None
                if row is None or row.kind is not Kind.INPUT_REQUEST or missing_capability(
                        row, self.revision, item.get("params") or {},
                        type(self).client_capabilities) is not None:
                    self.finding("unexpected-request", f"input request {key!r} ({method}) "
                                 "needs a client capability the request did not declare",
                                 sent=pending.message, received=message)
            return False
        self.finding("result-type", f"{pending.method} result has resultType {kind!r}",
                     sent=pending.message, received=message)
        return False

    def _check_structured(self, pending: _Pending, result: dict[str, Any],
                          message: dict[str, Any]) -> None:
        assert pending.tool is not None
        schema = pending.tool.get("outputSchema")
        if not isinstance(schema, dict) or result.get("isError"):
            return
        if "structuredContent" not in result:
            self.finding("structured-content", f"tool {pending.tool.get('name')!r} has an "
                         "outputSchema but its result has no structuredContent",
                         sent=pending.message, received=message)
            return
        problems = _validate_free(schema, result["structuredContent"])
        if problems:
            self.finding("structured-content", f"tool {pending.tool.get('name')!r}: "
                         f"structuredContent does not match its outputSchema: {problems[0]}",
                         sent=pending.message, received=message)

    def _record_list(self, pending: _Pending, result: dict[str, Any]) -> None:
        method = pending.method
        cursor = result.get("nextCursor")
        if isinstance(cursor, str):
            self._cursors[pending.request_id] = cursor
        key = _LIST_METHODS[method][1]
        for item in result.get(key) or []:
            if not isinstance(item, dict):
                continue
            if method == "tools/list" and isinstance(item.get("name"), str):
                if self._in_scope(item):
                    self.tools[item["name"]] = item
            elif method == "prompts/list" and isinstance(item.get("name"), str):
                self.prompts[item["name"]] = item
            elif (method == "resources/list" and isinstance(item.get("uri"), str)
                  and item["uri"] not in self.resources):
                self.resources.append(item["uri"])

    def _in_scope(self, tool: dict[str, Any]) -> bool:
        """Whether the run may call ``tool`` (see the module docstring, "Scope")."""
        cls = type(self)
        name = tool["name"]
        if cls.tools_include is not None and not any(
                fnmatch.fnmatchcase(name, p) for p in cls.tools_include):
            return False
        if any(fnmatch.fnmatchcase(name, p) for p in cls.tools_exclude):
            return False
        hints = tool.get("annotations")
        if (not cls.allow_destructive and isinstance(hints, dict)
                and hints.get("destructiveHint") is True and hints.get("readOnlyHint") is not True):
            self.note(f"tool {name!r} is annotated destructive: not called (allow it with "
                      "allow_destructive / --allow-destructive)")
            return False
        return True

    # -- requests and notifications from the peer ----------------------------------------------

    def _on_request(self, message: dict[str, Any]) -> None:
        method = message["method"]
        request_id = message["id"]
        row = lookup(method, self.revision)
        allowed = (row is not None and row.kind is Kind.REQUEST
                   and row.sender.allows(Role.SERVER) and not self.stateless)
        if allowed and row is not None:
            missing = missing_capability(row, self.revision, message.get("params") or {},
                                         type(self).client_capabilities)
            if missing is not None:
                allowed = False
        if not allowed:
            self.finding("unexpected-request", f"the server sent a {method} request, which "
                         f"it may not send in {self.revision} to a client that declared "
                         f"{type(self).client_capabilities}", received=message)
            self._send({"jsonrpc": "2.0", "id": request_id,
                        "error": {"code": -32601, "message": f"Method not found: {method}"}})
            return
        self._check_params(message, "request")
        if method == "ping":
            self._send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            # Reachable only with client_capabilities declared; the machine serves nothing
            # but ping, and says so rather than pretend.
            self._send({"jsonrpc": "2.0", "id": request_id,
                        "error": {"code": -32603, "message": f"{method} is not served by "
                                  "the test client"}})

    def _check_params(self, message: dict[str, Any], kind: str) -> bool:
        method = message["method"]
        name = (self._schemas.request_definition(self.revision, method) if kind == "request"
                else self._schemas.notification_definition(self.revision, method))
        if name is None:
            return True
        problems = self._schemas.errors(self.revision, name, message)
        if problems:
            self.finding("notification-schema" if kind == "notification" else "envelope",
                         f"{method} is not a valid {name}: {'; '.join(problems)}",
                         received=message)
            return False
        return True

    def _on_notification(self, message: dict[str, Any]) -> None:
        method = message["method"]
        row = lookup(method, self.revision)
        if row is None or row.kind is not Kind.NOTIFICATION or not row.sender.allows(
                Role.SERVER):
            self.finding("unknown-notification", f"{method} is not a notification a server "
                         f"sends in {self.revision}", received=message)
            return
        if not self._check_params(message, "notification"):
            return
        params = message.get("params") or {}
        if method == "notifications/progress":
            self._on_progress(params, message)
        elif method == "notifications/message":
            self._on_log(params, message)
        elif method in _LIST_CHANGED or method == "notifications/resources/updated":
            self._on_change(method, params, message)
        elif method == "notifications/subscriptions/acknowledged":
            self._on_ack(params, message)
        elif method == "notifications/cancelled":
            target = params.get("requestId")
            pending = self._pending.get(target) if isinstance(target, str | int) else None
            if self.stateless and (pending is None or pending.listen_filter is None):
                self.finding("unknown-notification", "in 2026-07-28 a server cancels only a "
                             "listen stream", received=message)
            elif pending is not None and pending.listen_filter is not None:
                del self._pending[pending.request_id]
                self._answered.add(pending.request_id)

    def _on_progress(self, params: dict[str, Any], message: dict[str, Any]) -> None:
        token = params.get("progressToken")
        request_id = self._tokens.get(token) if isinstance(token, str | int) else None
        pending = self._pending.get(request_id) if request_id is not None else None
        if pending is None:
            self.finding("progress-unknown-token", f"progress for token {token!r}, which no "
                         "active request gave", received=message)
            return
        if pending.cancelled_seq is not None and pending.cancelled_seq < self._acked_seq:
            self.finding("response-after-cancel", f"progress for {pending.method} (id "
                         f"{pending.request_id!r}) after its cancellation had been processed",
                         received=message, requirement="must" if self.stateless else "should")
            return
        progress = params.get("progress")
        if not isinstance(progress, int | float) or isinstance(progress, bool):
            return  # the schema check has reported it
        if pending.last_progress is not None and progress <= pending.last_progress:
            self.finding("progress-not-increasing", f"progress went from "
                         f"{pending.last_progress} to {progress}", received=message)
        pending.last_progress = progress

    def _on_log(self, params: dict[str, Any], message: dict[str, Any]) -> None:
        if not declared(self.peer_capabilities, "logging"):
            self.finding("log-without-capability", "notifications/message from a server that "
                         "did not declare logging", received=message)
            return
        if self.stateless and not any(p.log_level for p in self._pending.values()):
            self.finding("log-without-level", "notifications/message while no request in "
                         "flight asked for a log level", received=message)

    def _on_change(self, method: str, params: dict[str, Any], message: dict[str, Any]) -> None:
        if self.stateless:
            meta = params.get("_meta") or {}
            sub = meta.get(_META_SUB) if isinstance(meta, dict) else None
            stream = self._pending.get(sub) if isinstance(sub, str | int) else None
            if stream is None or stream.listen_filter is None or not _filter_wants(
                    stream.listen_filter, method, params):
                self.finding("unsolicited-change", f"{method} outside a listen stream that "
                             "asked for it", received=message, requirement="must")
            return
        if method == "notifications/resources/updated":
            # The machine never subscribes (resources/subscribe), so no update is due.
            self.finding("unsolicited-change", f"{method} for {params.get('uri')!r}, which "
                         "was never subscribed to", received=message, requirement="must")
            return
        capability = _LIST_CHANGED[method]
        if not declared(self.peer_capabilities, capability):
            self.finding("unsolicited-change", f"{method} from a server that did not declare "
                         f"{capability}", received=message)

    def _on_ack(self, params: dict[str, Any], message: dict[str, Any]) -> None:
        meta = params.get("_meta") or {}
        sub = meta.get(_META_SUB) if isinstance(meta, dict) else None
        stream = self._pending.get(sub) if isinstance(sub, str | int) else None
        if stream is None or stream.method != "subscriptions/listen":
            self.finding("listen-acknowledgement", f"an acknowledgement tagged {sub!r}, which "
                         "is not a listen stream in flight", received=message)
            return
        if stream.acknowledged:
            self.finding("listen-acknowledgement", f"listen stream {sub!r} acknowledged twice",
                         received=message)
            return
        stream.acknowledged = True
        granted = params.get("notifications") or {}
        asked = stream.listen_filter or {}
        for key, value in granted.items():
            if key in _LISTEN_FILTER:
                capability = _LISTEN_FILTER[key][1]
                if value and (not asked.get(key) or not declared(self.peer_capabilities,
                                                                 capability)):
                    self.finding("listen-acknowledgement", f"acknowledged {key} although it "
                                 "was not asked for or its capability is not declared",
                                 received=message)
            elif key == "resourceSubscriptions" and value and not set(value) <= set(
                    asked.get(key) or []):
                self.finding("listen-acknowledgement", "acknowledged resource subscriptions "
                             "that were not asked for", received=message)

    # -- the session ---------------------------------------------------------------------------

    @initialize(data=st.data())
    def start(self, data: st.DataObject) -> None:
        """Open a session: draw a revision, then handshake (or discover) and list."""
        revision = data.draw(st.sampled_from(type(self).revisions), label="revision")
        early_ping = FEATURES[revision].handshake and data.draw(st.booleans(),
                                                                label="early ping")
        state = type(self).run_state
        state["examples"] = state.get("examples", 0) + 1
        if self.over_budget():
            return  # the run's budget is spent: this example does nothing
        if revision in state.get("unspoken", ()):
            return  # the peer showed it does not speak it: no second wait for a discover
        self.open_session(revision, early_ping=early_ping)

    def open_session(self, revision: str, *, early_ping: bool = False) -> None:
        """Open a session in ``revision``: a new transport, the handshake (after a ``ping``
        if ``early_ping``) or ``server/discover``, then every list the server offers.
        Afterwards :attr:`alive` says whether the session is usable."""
        factory = type(self).transport_factory
        if factory is None:
            raise TypeError("PeerMachine needs a transport_factory (see configure())")
        self.revision = revision
        self.stateless = not FEATURES[revision].handshake
        self._session_started = self._now()
        self.transport = factory()
        self.alive = True
        if self.stateless:
            self._discover_session()
        else:
            self._handshake(early_ping=early_ping)
        if not self.alive:
            return
        report = type(self).report
        if report is not None:
            report.sessions[self.revision] = report.sessions.get(self.revision, 0) + 1
        self._list_everything()
        if self.alive and FEATURES[self.revision].batching:
            # Not a hypothesis rule (a new rule would change every derandomized run):
            # each 2025-03-26 session opens with one batch.
            self.send_batch()

    def _handshake(self, *, early_ping: bool) -> None:
        # A transport may say that requests before initialize cannot be carried (HTTP
        # sessions begin with initialize).
        if early_ping and getattr(self.transport, "requests_before_initialize", True):
            ping = self.request("ping")
            if not self._wait_startup(ping):
                if self.cut_short:
                    self.alive = False
                    return
                self.note(f"{SLOW_NOTE}[{self.revision}] ping before initialize was "
                          f"unanswered after {self._startup_time()} s (a slow start?)")
        params = {"protocolVersion": self.revision,
                  "capabilities": dict(type(self).client_capabilities),
                  "clientInfo": dict(type(self).client_info)}
        replies: list[dict[str, Any]] = []
        init = self.request("initialize", params, replies=replies)
        message = init.message
        if not self._wait_startup(init):
            self.alive = False
            if self.cut_short:
                return  # the budget ran out while waiting: nothing to hold against the peer
            if self._eof:
                self.finding("no-reply", "initialize was not answered: the peer closed the "
                             "connection", sent=message)
                return
            self.note(f"{SLOW_NOTE}[{self.revision}] initialize was unanswered after "
                      f"{self._startup_time()} s; the session was given up")
            return
        reply = replies[0]
        if "error" in reply:
            self.finding("version", f"initialize for {self.revision} was refused with error "
                         f"{reply['error'].get('code')} ({_short(reply['error'].get('message'))}"
                         "): a server answers with a revision it supports", sent=message,
                         received=reply)
            self.alive = False
            return
        result = reply["result"]
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        problems = self._schemas.errors(self.revision, "InitializeResult", result)
        if problems:
            self.finding("result-schema", f"initialize result is not a valid InitializeResult: "
                         f"{'; '.join(problems)}", sent=message, received=reply)
        if version != self.revision:
            if version in HANDSHAKE_REVISIONS and version in type(self).revisions:
                self.note(f"asked for {self.revision}, the server chose {version}")
                self.revision = str(version)
            else:
                self.finding("version", f"initialize for {self.revision} was answered with "
                             f"protocolVersion {version!r}", sent=message, received=reply)
                self.alive = False
                return
        caps = result.get("capabilities")
        self.peer_capabilities = caps if isinstance(caps, dict) else {}
        info = result.get("serverInfo")
        self.peer_info = info if isinstance(info, dict) else {}
        self.notify("notifications/initialized")

    def _discover_session(self) -> None:
        replies: list[dict[str, Any]] = []
        probe = self.request("server/discover", replies=replies)
        if not self._wait_startup(probe):
            if self.cut_short:
                self.alive = False
                return
            self.note(f"no answer to server/discover: the server does not speak "
                      f"{self.revision}")
            self._unspoken()
            return
        reply = replies[0]
        if "error" in reply:
            error = reply["error"]
            self.note(f"server/discover was answered with error {error.get('code')} "
                      f"({_short(error.get('message'))}): the server does not speak "
                      f"{self.revision}")
            self._unspoken()
            return
        result = reply["result"]
        problems = self._schemas.errors(self.revision, "DiscoverResult", result)
        if problems:
            self.finding("result-schema", f"server/discover result is not a valid "
                         f"DiscoverResult: {'; '.join(problems)}", sent=probe.message,
                         received=reply)
        versions = result.get("supportedVersions") if isinstance(result, dict) else None
        if not isinstance(versions, list) or self.revision not in versions:
            self.note(f"server/discover does not list {self.revision} ({versions!r})")
            self.alive = False
            return
        caps = result.get("capabilities")
        self.peer_capabilities = caps if isinstance(caps, dict) else {}
        meta = result.get("_meta")
        info = meta.get("io.modelcontextprotocol/serverInfo") if isinstance(meta, dict) else None
        self.peer_info = info if isinstance(info, dict) else {}

    def _unspoken(self) -> None:
        """The peer does not speak this revision: end the session, and let later sessions
        drawn for it do nothing (their draws stay the same)."""
        self.alive = False
        type(self).run_state.setdefault("unspoken", set()).add(self.revision)

    def _startup_time(self) -> float:
        """How long the first answers of a session may take: a process is starting."""
        cls = type(self)
        return max(cls.reply_timeout, cls.call_timeout, cls.startup_timeout)

    def _wait_startup(self, pending: _Pending) -> bool:
        """Wait for a request of the session's opening; False (and the request abandoned:
        a late answer is then noted, not found) when it did not come in time."""
        wait = self._startup_time()
        if self.wait_until(functools.partial(self._done, pending), wait, within=wait):
            return True
        self._abandon(pending)
        return False

    def _abandon(self, pending: _Pending) -> None:
        self._pending.pop(pending.request_id, None)
        self._abandoned[pending.request_id] = pending

    def _list_everything(self) -> None:
        for method, (capability, _) in _LIST_METHODS.items():
            if not self.alive or not declared(self.peer_capabilities, capability):
                continue
            cursor: str | None = None
            for _ in range(5):  # pages
                body = {"cursor": cursor} if cursor is not None else None
                pending = self.request(method, body)
                if not self.wait_until(functools.partial(self._done, pending)):
                    break
                cursor = self._cursors.pop(pending.request_id, None)
                if cursor is None:
                    break

    # -- rules -----------------------------------------------------------------------------

    def _has(self, capability: str) -> bool:
        return self.alive and declared(self.peer_capabilities, capability)

    @precondition(lambda self: self.alive and not self.stateless)
    @rule()
    def ping(self) -> None:
        """``ping``: answered with an empty result."""
        self.request("ping")
        self.poll()

    @precondition(lambda self: self.alive and self.stateless)
    @rule()
    def discover(self) -> None:
        """``server/discover`` (2026-07-28)."""
        self.request("server/discover")
        self.poll()

    @precondition(lambda self: self._has("tools"))
    @rule(data=st.data())
    def call_tool(self, data: st.DataObject) -> None:
        """``tools/call``: a listed tool with arguments from its inputSchema, or an unknown
        tool; sometimes with a progress token (and, statelessly, a log level)."""
        progress = data.draw(st.booleans(), label="progress")
        level = data.draw(st.sampled_from([None, None, *_LOG_LEVELS]), label="log level") if (
            self.stateless) else None
        if self.tools and data.draw(st.integers(0, 5), label="known") > 0:
            name = data.draw(st.sampled_from(sorted(self.tools)), label="tool")
            arguments = self._arguments(name, data)
            self.request("tools/call", {"name": name, "arguments": arguments},
                         progress=progress, level=level, tool=self.tools[name])
        else:
            self.request("tools/call", {"name": _NO_TOOL, "arguments": {}}, progress=progress,
                         level=level, expect_error=("unknown-tool", frozenset({-32602}),
                                                    f"tools/call of unknown tool {_NO_TOOL!r}"))
        self.poll()

    def _arguments(self, name: str, data: st.DataObject) -> Any:
        strategy = self._argument_strategy(name)
        return {} if strategy is None else data.draw(strategy, label=f"{name} arguments")

    def _argument_strategy(self, name: str) -> st.SearchStrategy[Any] | None:
        """Arguments valid against the tool's inputSchema (None: the schema uses what the
        builder does not cover; the call then gets ``{}``)."""
        if name not in self._args:
            schema = self.tools[name].get("inputSchema")
            strategy: st.SearchStrategy[Any] | None = None
            if isinstance(schema, dict):
                defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
                try:
                    magnitude = None if type(self).wild else type(self).realistic_magnitude
                    strategy = SchemaStrategies(defs, max_depth=2, magnitude=magnitude).build(
                        {k: v for k, v in schema.items() if k not in ("$defs", "definitions")})
                    strategy.validate()
                    strategy = strategy.filter(functools.partial(
                        _fits, type(self).max_argument_size))
                except (UnsupportedSchema, ValueError, TypeError, KeyError, RecursionError):
                    strategy = None
            self._args[name] = strategy
        return self._args[name]

    @precondition(lambda self: self._has("prompts"))
    @rule(data=st.data())
    def get_prompt(self, data: st.DataObject) -> None:
        """``prompts/get``: a listed prompt with its arguments, without a required one, or an
        unknown prompt."""
        choice = data.draw(st.integers(0, 5), label="prompt choice") if self.prompts else 0
        if choice == 0:
            self.request("prompts/get", {"name": _NO_PROMPT}, expect_error=(
                "unknown-prompt", frozenset({-32602}),
                f"prompts/get of unknown prompt {_NO_PROMPT!r}"))
        else:
            name = data.draw(st.sampled_from(sorted(self.prompts)), label="prompt")
            arguments = self.prompts[name].get("arguments") or []
            required = [a["name"] for a in arguments if isinstance(a, dict) and a.get(
                "required") and isinstance(a.get("name"), str)]
            optional = [a["name"] for a in arguments if isinstance(a, dict) and not a.get(
                "required") and isinstance(a.get("name"), str)]
            values = {n: data.draw(st.text(max_size=10), label=n) for n in required}
            for n in optional:
                if data.draw(st.booleans(), label=f"give {n}"):
                    values[n] = data.draw(st.text(max_size=10), label=n)
            if required and choice == 1:
                dropped = data.draw(st.sampled_from(required), label="left out")
                del values[dropped]
                self.request("prompts/get", {"name": name, "arguments": values},
                             expect_error=("missing-prompt-argument", frozenset({-32602}),
                                           f"prompts/get {name!r} without required argument "
                                           f"{dropped!r}"))
            else:
                self.request("prompts/get", {"name": name, "arguments": values})
        self.poll()

    @precondition(lambda self: self._has("resources"))
    @rule(data=st.data())
    def read_resource(self, data: st.DataObject) -> None:
        """``resources/read``: a listed resource, or an unknown URI."""
        if self.resources and data.draw(st.integers(0, 4), label="known") > 0:
            uri = data.draw(st.sampled_from(self.resources), label="uri")
            self.request("resources/read", {"uri": uri})
        else:
            self.request("resources/read", {"uri": _NO_RESOURCE}, expect_error=(
                "unknown-resource", frozenset({-32002, -32602}),
                f"resources/read of unknown URI {_NO_RESOURCE!r}"))
        self.poll()

    @precondition(lambda self: self.alive and any(
        declared(self.peer_capabilities, cap) for cap, _ in _LIST_METHODS.values()))
    @rule(data=st.data())
    def list_again(self, data: st.DataObject) -> None:
        """One of the list methods the server's capabilities allow."""
        methods = [m for m, (cap, _) in _LIST_METHODS.items()
                   if declared(self.peer_capabilities, cap)]
        self.request(data.draw(st.sampled_from(methods), label="list"))
        self.poll()

    @precondition(lambda self: self._has("completions") and bool(self.prompts))
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        """``completion/complete`` for an argument of a listed prompt."""
        name = data.draw(st.sampled_from(sorted(self.prompts)), label="prompt")
        arguments = [a.get("name") for a in self.prompts[name].get("arguments") or []
                     if isinstance(a, dict) and isinstance(a.get("name"), str)]
        argument = data.draw(st.sampled_from(arguments), label="argument") if arguments else "x"
        self.request("completion/complete", {
            "ref": {"type": "ref/prompt", "name": name},
            "argument": {"name": argument, "value": data.draw(st.text(max_size=5))},
        })
        self.poll()

    @precondition(lambda self: self._has("logging") and not self.stateless)
    @rule(data=st.data())
    def set_level(self, data: st.DataObject) -> None:
        """``logging/setLevel`` with a valid level."""
        self.request("logging/setLevel", {"level": data.draw(st.sampled_from(_LOG_LEVELS))})
        self.poll()

    @precondition(lambda self: self.alive and self.stateless)
    @rule(data=st.data())
    def listen(self, data: st.DataObject) -> None:
        """``subscriptions/listen`` (2026-07-28) with a random filter; ends by a cancel."""
        wanted = {key: True for key in _LISTEN_FILTER if data.draw(st.booleans(), label=key)}
        self.request("subscriptions/listen", {"notifications": wanted},
                     listen_filter=wanted)
        self.poll()

    def _cancellable(self) -> list[_Pending]:
        return [p for p in self._pending.values()
                if not p.barrier and p.invalid is None and p.cancelled_seq is None
                and p.method not in ("initialize", "ping", "server/discover")]

    @precondition(lambda self: self.alive)
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        """``notifications/cancelled`` for a request in flight (if any is).

        Which requests are still in flight depends on the peer's timing, so neither the
        precondition nor the draw depends on them: hypothesis requires the same choices to
        meet the same constraints in every run."""
        pick = data.draw(st.integers(0, 2**16), label="cancel which")
        candidates = sorted(self._cancellable(), key=lambda p: p.seq)
        if not candidates:
            return
        pending = candidates[pick % len(candidates)]
        self.notify("notifications/cancelled",
                    {"requestId": pending.request_id, "reason": "testing"})
        pending.cancelled_seq = self._seq
        self.poll()

    @precondition(lambda self: self.alive and type(self).invalid_rules != frozenset())
    @rule(data=st.data())
    def send_invalid(self, data: st.DataObject) -> None:
        """A message that breaks one rule (see :data:`~mcp_sansio.testing.RULES`)."""
        if self._invalid_strategy is None:
            self._invalid_strategy = invalid_messages(
                self.revision, sender=Role.CLIENT, peer_capabilities=self.peer_capabilities,
                ids=st.builds(self._new_id), rules=self._invalid_rules(),
                schemas=self._schemas)
        self.send_invalid_message(data.draw(self._invalid_strategy, label="invalid"))
        self.poll()

    def send_invalid_message(self, invalid: Invalid) -> None:
        """Send ``invalid`` and remember the answer it deserves."""
        invalid = _without_progress(invalid)
        seq = self._send(invalid.message)
        message = invalid.message
        readable = message.get("id") if isinstance(message, dict) else None
        if isinstance(readable, bool) or not isinstance(readable, str | int):
            readable = None
        if invalid.expects_reply:
            if invalid.reply_id is None:
                self._null_expected.append(invalid)
            else:
                method = message.get("method") if isinstance(message, dict) else None
                pending = _Pending(request_id=invalid.reply_id, method=str(method), seq=seq,
                                   message=message, invalid=invalid)
                if method == "subscriptions/listen":
                    pending.listen_filter = {}
                self._pending[invalid.reply_id] = pending
        elif readable is not None:
            self._silent[readable] = invalid

    def send_batch(self, size: int = 2) -> list[_Pending]:
        """A JSON-RPC batch of ``size`` requests (ping, then the first list the server
        offers), in one line (2025-03-26: receivers MUST accept batches)."""
        offered = [m for m, (cap, _) in _LIST_METHODS.items()
                   if declared(self.peer_capabilities, cap)]
        methods = ["ping", *offered[:1]]
        batch: list[_Pending] = []
        for index in range(size):
            method = methods[index % len(methods)]
            request_id = self._new_id()
            message = {"jsonrpc": "2.0", "id": request_id, "method": method}
            pending = _Pending(request_id=request_id, method=method, message=message, seq=0,
                               batch=True)
            self._pending[request_id] = pending
            batch.append(pending)
        seq = self._send([p.message for p in batch])
        for pending in batch:
            pending.seq = seq
        return batch

    def _invalid_rules(self) -> frozenset[str] | None:
        """The invalid-message rules to use: the configured ones, less those the transport
        cannot carry a verdict for (``unjudged_rules``: over HTTP a second ``initialize``
        opens a new session, which is the transport's business)."""
        wanted = type(self).invalid_rules
        skip = frozenset(getattr(self.transport, "unjudged_rules", ()))
        if not skip:
            return wanted
        return frozenset(wanted if wanted is not None else RULES) - skip

    @rule()
    def sync(self) -> None:
        """A barrier: ``ping`` (``server/discover`` statelessly), read until it is
        answered."""
        if not self.alive:
            return
        self._barrier()

    def _barrier(self) -> None:
        method = "server/discover" if self.stateless else "ping"
        barrier = self.request(method, barrier=True)
        if not self.wait_until(lambda: barrier.request_id not in self._pending):
            self._abandon(barrier)
            if self.cut_short:
                return
            # Time is not a violation: a busy peer answers the barrier late (noted then).
            self.note(f"{SLOW_NOTE}[{self.revision}] {method} (a barrier) was unanswered "
                      f"after {type(self).reply_timeout} s of silence")

    # -- the deterministic sweep -----------------------------------------------------------------

    def sweep_session(self) -> None:
        """Every invalid-message rule that applies, once each (the simplest example of
        each), then every listed tool, prompt and resource once, the unknown ones, a
        cancellation and the era's own requests. Deterministic for a deterministic peer."""
        wanted = self._invalid_rules()
        for name in sorted(RULES):
            if wanted is not None and name not in wanted:
                continue
            try:
                strategy = invalid_messages(
                    self.revision, sender=Role.CLIENT, peer_capabilities=self.peer_capabilities,
                    ids=st.builds(self._new_id), rules=[name], schemas=self._schemas)
            except ValueError:
                continue  # the rule does not apply to this revision or server
            self.send_invalid_message(_first(strategy))
            self._barrier()
            if not self.alive:
                return
        if self.stateless:
            self.request("server/discover")
        else:
            self.request("ping")
        if FEATURES[self.revision].batching:
            self.send_batch()
            self._barrier()
        if declared(self.peer_capabilities, "tools"):
            for name in sorted(self.tools):
                arguments = _first_or_empty(self._argument_strategy(name))
                self.request("tools/call", {"name": name, "arguments": arguments},
                             progress=True, tool=self.tools[name])
            self.request("tools/call", {"name": _NO_TOOL, "arguments": {}}, expect_error=(
                "unknown-tool", frozenset({-32602}), f"tools/call of unknown tool {_NO_TOOL!r}"))
        if declared(self.peer_capabilities, "prompts"):
            for name, prompt in sorted(self.prompts.items()):
                arguments = [a for a in prompt.get("arguments") or [] if isinstance(a, dict)]
                values = {str(a.get("name")): "x" for a in arguments}
                self.request("prompts/get", {"name": name, "arguments": values})
                required = [str(a.get("name")) for a in arguments if a.get("required")]
                if required:
                    values = {k: v for k, v in values.items() if k != required[0]}
                    self.request("prompts/get", {"name": name, "arguments": values},
                                 expect_error=("missing-prompt-argument", frozenset({-32602}),
                                               f"prompts/get {name!r} without required "
                                               f"argument {required[0]!r}"))
            self.request("prompts/get", {"name": _NO_PROMPT}, expect_error=(
                "unknown-prompt", frozenset({-32602}),
                f"prompts/get of unknown prompt {_NO_PROMPT!r}"))
        if declared(self.peer_capabilities, "resources"):
            for uri in self.resources[:5]:
                self.request("resources/read", {"uri": uri})
            self.request("resources/read", {"uri": _NO_RESOURCE}, expect_error=(
                "unknown-resource", frozenset({-32002, -32602}),
                f"resources/read of unknown URI {_NO_RESOURCE!r}"))
        if declared(self.peer_capabilities, "logging") and not self.stateless:
            self.request("logging/setLevel", {"level": "info"})
        if self.stateless:
            self.request("subscriptions/listen", {"notifications": dict.fromkeys(
                _LISTEN_FILTER, True)}, listen_filter=dict.fromkeys(_LISTEN_FILTER, True))
        if self.tools:
            name = sorted(self.tools)[-1]
            arguments = _first_or_empty(self._argument_strategy(name))
            doomed = self.request("tools/call", {"name": name, "arguments": arguments},
                                  progress=True, tool=self.tools[name])
            self.notify("notifications/cancelled",
                        {"requestId": doomed.request_id, "reason": "testing"})
            doomed.cancelled_seq = self._seq
        self._barrier()

    def teardown(self) -> None:
        """End the session: close listen streams, wait for every owed answer, report what
        never came, close the transport."""
        if self.transport is None:
            return
        try:
            if self.alive:
                self._finish()
            elif self.cut_short and self._owed():
                self.note(f"{self.revision}: {len(self._owed())} request(s) still in flight "
                          "when the budget ran out (not judged)")
        finally:
            self.transport.close()
            self._transport_findings()

    def _finish(self) -> None:
        for pending in list(self._pending.values()):
            if pending.listen_filter is not None and pending.invalid is None and (
                    pending.cancelled_seq is None):
                if not pending.acknowledged:
                    self.wait_until(functools.partial(_acknowledged, pending))
                if not pending.acknowledged and pending.request_id in self._pending and (
                        not self.cut_short):
                    self.finding("listen-acknowledgement", "a listen stream was never "
                                 "acknowledged", sent=pending.message)
                self.notify("notifications/cancelled",
                            {"requestId": pending.request_id, "reason": "done"})
                pending.cancelled_seq = self._seq
        self._barrier()
        # Valid requests may take their time; an answer to a broken message is due at once
        # (the barrier has been answered), so for those the settle time is enough. A tool
        # does real work: while one is owed, silence may last up to call_timeout (a tool
        # fed a large argument that answers late is not "never answered"), and with a
        # clock the whole wait is bounded by call_timeout too (a tool that keeps reporting
        # progress would otherwise hold the run forever).
        cls = type(self)
        tool_owed = any(p.method == "tools/call" for p in self._owed())
        self.wait_until(lambda: not any(p.invalid is None for p in self._owed()),
                        cls.call_timeout if tool_owed else None,
                        within=cls.call_timeout if cls.clock is not None else None)
        if self.cut_short:
            if self._owed():
                self.note(f"{self.revision}: {len(self._owed())} request(s) still in flight "
                          "when the budget ran out (not judged)")
            return
        # A tool still working is slow, not unanswered: time is not a violation (2025-11-25
        # basic/lifecycle.mdx, "Timeouts": the sender decides to stop waiting, and cancels).
        # Only a peer that ended the session without answering has proved it never will.
        for pending in self._owed():
            if (pending.method == "tools/call" and pending.invalid is None
                    and not pending.batch and not self._eof):
                self.note(_slow_note(self.revision, pending, cls.call_timeout))
                self.notify("notifications/cancelled",
                            {"requestId": pending.request_id, "reason": "call timeout"})
                pending.cancelled_seq = self._seq
        # A peer that never falls silent (a stream of notifications) still ends the session:
        # settling is bounded by twice the reply timeout when there is a clock.
        self.settle(cls.settle_time, within=2 * cls.reply_timeout)
        for pending in self._owed():
            self._pending.pop(pending.request_id, None)
            if not self._eof and pending.seq > self._answered_seq:
                # Nothing sent after it was answered either: a busy peer, not a skipped
                # request (the proof of "never" is a later answer, then quiet).
                self.note(f"{SLOW_NOTE}[{self.revision}] {pending.method} (id "
                          f"{pending.request_id!r}) was unanswered when the session ended, "
                          "and so was everything sent after it")
                continue
            if pending.invalid is not None:
                self.finding(pending.invalid.rule, f"{pending.invalid.description}: expected "
                             f"error {pending.invalid.expected_code}, got no answer",
                             sent=pending.message)
            elif pending.batch:
                self.finding("batch", f"{pending.method} (id {pending.request_id!r}), sent "
                             "in a batch, was never answered", sent=pending.message)
            else:
                self.finding("no-reply", f"{pending.method} (id {pending.request_id!r}) was "
                             "never answered", sent=pending.message)
        for invalid in self._null_expected:
            self.finding(invalid.rule, f"{invalid.description}: expected error "
                         f"{invalid.expected_code} (id null), got no answer",
                         sent=invalid.message)
        self._null_expected.clear()

    def _done(self, pending: _Pending) -> bool:
        return pending.request_id not in self._pending

    def _owed(self) -> list[_Pending]:
        return [p for p in self._pending.values()
                if p.cancelled_seq is None and p.listen_filter is None]


def _first(strategy: st.SearchStrategy[Any]) -> Any:
    """A simple value of ``strategy``, the same every time: hypothesis's first example under
    a fixed seed (its first try is the simplest choice, so this is the minimal example
    without the cost of shrinking)."""
    return find(strategy, lambda _: True, settings=settings(
        database=None, derandomize=True, max_examples=1, phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck)))


def _fits(limit: int, value: Any) -> bool:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()) <= limit


def _first_or_empty(strategy: st.SearchStrategy[Any] | None) -> Any:
    """:func:`_first`, or ``{}`` when the strategy has nothing small enough to offer."""
    if strategy is None:
        return {}
    try:
        return _first(strategy)
    except Exception:  # NoSuchExample, Unsatisfiable...: no argument fits the bound
        return {}


#: Notes that say a call took longer than the run would wait (the only note a correct,
#: deterministic peer may cause).
SLOW_NOTE = "slow: "


def _slow_note(revision: str, pending: _Pending, call_timeout: float) -> str:
    params = pending.message.get("params") or {}
    call = (f"tool {_short(params.get('name'))!r} with arguments "
            f"{_short(json.dumps(params.get('arguments'), ensure_ascii=False), 200)}")
    if pending.last_progress is not None:
        return (f"{SLOW_NOTE}[{revision}] {call} was still working (progress "
                f"{pending.last_progress}) after {call_timeout} s; cancelled, counted as slow")
    return (f"{SLOW_NOTE}[{revision}] {call} was unanswered after {call_timeout} s; "
            "cancelled, counted as slow")


def _codes(codes: frozenset[int]) -> str:
    return " or ".join(str(c) for c in sorted(codes, reverse=True))


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _short(value: Any, limit: int = 80) -> str:
    text = " ".join(str(value).split())  # one line: some peers put JSON in their messages
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _acknowledged(pending: _Pending) -> bool:
    return pending.acknowledged


def _filter_wants(wanted: Mapping[str, Any], method: str, params: Mapping[str, Any]) -> bool:
    for key, (notification, _) in _LISTEN_FILTER.items():
        if notification == method:
            return bool(wanted.get(key))
    if method == "notifications/resources/updated":
        return params.get("uri") in (wanted.get("resourceSubscriptions") or [])
    return False


def _without_progress(invalid: Invalid) -> Invalid:
    """Drop a progress token the drawn params may carry: progress for a request that is
    refused anyway would only muddle the verdict."""
    message = invalid.message
    if not isinstance(message, dict) or not isinstance(message.get("params"), dict):
        return invalid
    meta = message["params"].get("_meta")
    if not isinstance(meta, dict) or "progressToken" not in meta:
        return invalid
    meta = {k: v for k, v in meta.items() if k != "progressToken"}
    return attrs.evolve(invalid, message={**message, "params": {**message["params"],
                                                                  "_meta": meta}})


def _validate_free(schema: Mapping[str, Any], instance: Any) -> list[str]:
    """Validate against a schema from a peer (a tool's outputSchema)."""
    import jsonschema  # type: ignore[import-untyped]  # a test dependency

    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        errors = [e.message for e in cls(schema).iter_errors(instance)]
    except jsonschema.exceptions.SchemaError as exc:
        return [f"the outputSchema itself is invalid: {exc.message}"]
    return [_short(e, 160) for e in errors[:1]]


def check_peer(
    transport_factory: Callable[[], Transport],
    *,
    revisions: Iterable[str] | None = None,
    sessions: int = 10,
    steps: int = 30,
    schemas: Schemas | None = None,
    reply_timeout: float = 5.0,
    settle_time: float = 0.5,
    invalid_rules: Iterable[str] | None = None,
    derandomize: bool = True,
    report: Report | None = None,
    seed: int | None = None,
    **scope: Any,
) -> Report:
    """Run :class:`PeerMachine` against a server in "report" mode and return the findings.

    :param transport_factory: called once per session; returns a fresh
        :class:`~mcp_sansio.testing.Transport` to a fresh server.
    :param revisions: the revisions to try (default: all the library knows).
    :param sessions: how many sessions (hypothesis examples) to run.
    :param steps: the most rules run per session.
    :param derandomize: without ``seed``: hypothesis's fixed seed, so that two runs do the
        same (default).
    :param seed: draw from this seed (recorded as :attr:`Report.seed`): the same seed on a
        deterministic peer gives the same sessions and findings.
    :param report: add to this report (default: a new one).
    :param scope: budgets and scope, passed to :meth:`PeerMachine.configure`: ``clock``,
        ``budget``, ``session_budget``, ``call_timeout``, ``tools``, ``exclude_tools``,
        ``allow_destructive``, ``max_argument_size``, ``wild``.

    Never raises for what the peer does: a peer that answers the same draws differently is
    noted ("the peer is not deterministic") and the sessions left run from the next seed; an
    error of the kit's own is noted and ends the random sessions (the report stands).
    """
    report = Report() if report is None else report
    if seed is not None and report.seed is None:
        report.seed = seed
    machine = PeerMachine.configure(
        transport_factory, revisions=revisions, schemas=schemas, report=report,
        reply_timeout=reply_timeout, settle_time=settle_time, invalid_rules=invalid_rules,
        **scope,
    )
    left = sessions
    for attempt in range(_MAX_RESEEDS):
        if left <= 0 or machine.run_state.get("cut_short"):
            break
        started = machine.run_state.get("examples", 0)
        run = hypothesis_seed(seed + attempt)(machine) if seed is not None else machine
        try:
            run_state_machine_as_test(run, settings=settings(
                max_examples=left, stateful_step_count=steps, deadline=None,
                derandomize=derandomize and seed is None, database=None,
                phases=_GENERATE_ONLY, suppress_health_check=list(HealthCheck),
            ))
            break
        except (Flaky, FlakyStrategyDefinition) as exc:
            report.note("the peer is not deterministic: the same draws led to a different "
                        f"session ({_first_line(exc)}); the run went on"
                        + (" with the next seed" if seed is not None else ""))
            if seed is None:
                break  # a derandomized run would only replay the same draws
        except Exception as exc:  # the kit's own bug: report it, keep what was found
            report.note(f"the kit stopped its random sessions on an error of its own "
                        f"({type(exc).__name__}: {_short(exc, 200)}); findings so far stand")
            break
        left -= max(1, machine.run_state.get("examples", 0) - started)
    return report


#: How many times a run starts again from the next seed after the peer was not deterministic.
_MAX_RESEEDS = 20


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return _short(text[0] if text else type(exc).__name__, 160)



def shrink(
    transport_factory: Callable[[], Transport],
    rule_name: str,
    *,
    revisions: Iterable[str] | None = None,
    sessions: int = 50,
    steps: int = 30,
    schemas: Schemas | None = None,
    reply_timeout: float = 5.0,
    settle_time: float = 0.5,
    invalid_rules: Iterable[str] | None = None,
    **scope: Any,
) -> Finding | None:
    """The finding of check ``rule_name`` from the smallest session hypothesis can find
    that shows it: random sessions in "fail" mode aimed at that check alone, then
    hypothesis's shrinking (fewer steps, simpler draws: the reproducing exchange is as
    small as it gets). ``None`` when no session showed it. Every try is a session -- for a
    process, a new process -- so pass a ``budget`` (with ``clock``) for real peers."""
    machine = PeerMachine.configure(
        transport_factory, revisions=revisions, schemas=schemas,
        reply_timeout=reply_timeout, settle_time=settle_time, invalid_rules=invalid_rules,
        target_rule=rule_name, **scope,
    )
    try:
        run_state_machine_as_test(machine, settings=settings(
            max_examples=sessions, stateful_step_count=steps, deadline=None,
            derandomize=True, database=None, phases=(Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
        ))
    except PeerDeviation as exc:
        return attrs.evolve(exc.finding, shrunk=True)
    except (Flaky, FlakyStrategyDefinition):
        # A peer that does not answer the same session the same way twice (timing, a
        # budget running out halfway) cannot be shrunk; the unshrunk finding stands.
        return None
    return None


def sweep(
    transport_factory: Callable[[], Transport],
    *,
    revisions: Iterable[str] | None = None,
    schemas: Schemas | None = None,
    reply_timeout: float = 5.0,
    settle_time: float = 0.5,
    invalid_rules: Iterable[str] | None = None,
    report: Report | None = None,
    **scope: Any,
) -> Report:
    """One scripted session per revision (:meth:`PeerMachine.sweep_session`): every rule
    that applies once, every tool, prompt and resource once. Where :func:`check_peer`
    explores, this covers; for a peer that behaves the same way every time, two sweeps give
    the same report. ``report`` and ``scope`` as for :func:`check_peer`."""
    report = Report() if report is None else report
    machine = PeerMachine.configure(
        transport_factory, schemas=schemas, report=report, reply_timeout=reply_timeout,
        settle_time=settle_time, invalid_rules=invalid_rules, **scope,
    )
    for revision in (KNOWN_REVISIONS if revisions is None else tuple(revisions)):
        session = machine()
        if session.over_budget():
            break
        try:
            session.open_session(revision, early_ping=FEATURES[revision].handshake)
            if session.alive:
                session.sweep_session()
            session.teardown()
        except Exception as exc:  # the kit's own bug: report it, go on with the next revision
            report.note(f"the kit stopped the {revision} sweep on an error of its own "
                        f"({type(exc).__name__}: {_short(exc, 200)})")
            _close_quietly(session)
    return report


def _close_quietly(session: PeerMachine) -> None:
    try:
        if session.transport is not None:
            session.transport.close()
    except Exception:  # closing after an error: nothing more to report
        pass
