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

Its parts are held, not inherited: the ledger, the wire, the judge and the script
(:mod:`._peer_ledger`). The rest: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, cast

import attrs
from hypothesis import HealthCheck, Phase, settings
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

from .._capabilities import declared
from .._events import RequestId
from .._state import Role
from .._versions import FEATURES, KNOWN_REVISIONS
from ._findings import CHECKS, Finding, PeerDeviation, Report
from ._invalid import Invalid, invalid_messages
from ._peer_judge import Judge
from ._peer_ledger import (
    LIST_METHODS,
    LISTEN_FILTER,
    LOG_LEVELS,
    NO_PROMPT,
    NO_RESOURCE,
    NO_TOOL,
    SLOW_NOTE,
    Ledger,
    Pending,
    short,
)
from ._peer_script import Script
from ._peer_wire import Wire
from ._schemas import Schemas, bundled
from ._transport import Transport

__all__ = ["SLOW_NOTE", "PeerMachine", "check_peer", "shrink", "sweep"]

#: check_peer() reports; it does not shrink (each session may be a new process).
_GENERATE_ONLY = (Phase.explicit, Phase.generate)


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
        #: The session's requests and answers; the parts that send, judge and script.
        self.ledger = Ledger()
        self.wire = Wire(self)
        self.judge = Judge(self, self.wire)
        self.wire.on_line = self.judge.on_line
        self.script = Script(self, self.wire)
        self._invalid_strategy: st.SearchStrategy[Invalid] | None = None
        self._session_started: float | None = None

    @property
    def _pending(self) -> dict[RequestId, Pending]:
        """The requests in flight (the ledger's)."""
        return self.ledger.pending

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

    # -- the wire ------------------------------------------------------------------------------

    def request(self, method: str, body: Mapping[str, Any] | None = None, *,
                progress: bool = False, level: str | None = None, **kw: Any) -> Pending:
        """Send a request (``_meta`` added as the era wants) without waiting for it."""
        return self.wire.request(method, body, progress=progress, level=level, **kw)

    def notify(self, method: str, body: Mapping[str, Any] | None = None) -> None:
        self.wire.notify(method, body)

    def poll(self) -> None:
        """Handle whatever the peer has written already, without waiting."""
        self.wire.poll()

    def wait_until(self, done: Callable[[], bool], timeout: float | None = None, *,
                   within: float | None = None) -> bool:
        """Read until ``done()`` holds, or until the peer stays silent for ``timeout``
        seconds (default ``reply_timeout``), or (with a clock) ``within`` seconds have
        passed in all or the budget has run out. Returns ``done()``."""
        return self.wire.wait_until(done, timeout, within=within)

    def settle(self, quiet: float, *, within: float | None = None) -> None:
        """Read until the peer has been silent for ``quiet`` seconds (or, with a clock,
        ``within`` seconds have passed, or the budget has run out)."""
        self.wire.settle(quiet, within=within)

    def _on_error(self, pending: Pending, message: dict[str, Any]) -> None:
        """The verdict on an error answering ``pending`` (the judge's; a hook)."""
        self.judge.on_error(pending, message)

    def _on_result(self, pending: Pending, message: dict[str, Any]) -> None:
        """The verdict on a result answering ``pending`` (the judge's; a hook)."""
        self.judge.on_result(pending, message)

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
            self.script.discover()
        else:
            self.script.handshake(early_ping=early_ping)
        if not self.alive:
            return
        report = type(self).report
        if report is not None:
            report.sessions[self.revision] = report.sessions.get(self.revision, 0) + 1
        self.script.list_everything()
        if self.alive and FEATURES[self.revision].batching:
            # Not a hypothesis rule (a new rule would change every derandomized run):
            # each 2025-03-26 session opens with one batch.
            self.send_batch()

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
        level = data.draw(st.sampled_from([None, None, *LOG_LEVELS]), label="log level") if (
            self.stateless) else None
        if self.tools and data.draw(st.integers(0, 5), label="known") > 0:
            name = data.draw(st.sampled_from(sorted(self.tools)), label="tool")
            arguments = self._arguments(name, data)
            self.request("tools/call", {"name": name, "arguments": arguments},
                         progress=progress, level=level, tool=self.tools[name])
        else:
            self.request("tools/call", {"name": NO_TOOL, "arguments": {}}, progress=progress,
                         level=level, expect_error=("unknown-tool", frozenset({-32602}),
                                                    f"tools/call of unknown tool {NO_TOOL!r}"))
        self.poll()

    def _arguments(self, name: str, data: st.DataObject) -> Any:
        strategy = self.script.argument_strategy(name)
        return {} if strategy is None else data.draw(strategy, label=f"{name} arguments")

    @precondition(lambda self: self._has("prompts"))
    @rule(data=st.data())
    def get_prompt(self, data: st.DataObject) -> None:
        """``prompts/get``: a listed prompt with its arguments, without a required one, or an
        unknown prompt."""
        choice = data.draw(st.integers(0, 5), label="prompt choice") if self.prompts else 0
        if choice == 0:
            self.request("prompts/get", {"name": NO_PROMPT}, expect_error=(
                "unknown-prompt", frozenset({-32602}),
                f"prompts/get of unknown prompt {NO_PROMPT!r}"))
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
            self.request("resources/read", {"uri": NO_RESOURCE}, expect_error=(
                "unknown-resource", frozenset({-32002, -32602}),
                f"resources/read of unknown URI {NO_RESOURCE!r}"))
        self.poll()

    @precondition(lambda self: self.alive and any(
        declared(self.peer_capabilities, cap) for cap, _ in LIST_METHODS.values()))
    @rule(data=st.data())
    def list_again(self, data: st.DataObject) -> None:
        """One of the list methods the server's capabilities allow."""
        methods = [m for m, (cap, _) in LIST_METHODS.items()
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
        self.request("logging/setLevel", {"level": data.draw(st.sampled_from(LOG_LEVELS))})
        self.poll()

    @precondition(lambda self: self.alive and self.stateless)
    @rule(data=st.data())
    def listen(self, data: st.DataObject) -> None:
        """``subscriptions/listen`` (2026-07-28) with a random filter; ends by a cancel."""
        wanted = {key: True for key in LISTEN_FILTER if data.draw(st.booleans(), label=key)}
        self.request("subscriptions/listen", {"notifications": wanted},
                     listen_filter=wanted)
        self.poll()

    @precondition(lambda self: self.alive)
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        """``notifications/cancelled`` for a request in flight (if any is).

        Which requests are still in flight depends on the peer's timing, so neither the
        precondition nor the draw depends on them: hypothesis requires the same choices to
        meet the same constraints in every run."""
        pick = data.draw(st.integers(0, 2**16), label="cancel which")
        candidates = sorted(self.ledger.cancellable(), key=lambda p: p.seq)
        if not candidates:
            return
        pending = candidates[pick % len(candidates)]
        self.notify("notifications/cancelled",
                    {"requestId": pending.request_id, "reason": "testing"})
        pending.cancelled_seq = self.ledger.seq
        self.poll()

    @precondition(lambda self: self.alive and type(self).invalid_rules != frozenset())
    @rule(data=st.data())
    def send_invalid(self, data: st.DataObject) -> None:
        """A message that breaks one rule (see :data:`~mcp_sansio.testing.RULES`)."""
        if self._invalid_strategy is None:
            self._invalid_strategy = invalid_messages(
                self.revision, sender=Role.CLIENT, peer_capabilities=self.peer_capabilities,
                ids=st.builds(self.ledger.new_id), rules=self.script.invalid_rules(),
                schemas=self._schemas)
        self.send_invalid_message(data.draw(self._invalid_strategy, label="invalid"))
        self.poll()

    @rule()
    def sync(self) -> None:
        """A barrier: ``ping`` (``server/discover`` statelessly), read until it is
        answered."""
        if not self.alive:
            return
        self.script.barrier()

    def send_invalid_message(self, invalid: Invalid) -> None:
        """Send ``invalid`` and remember the answer it deserves."""
        self.script.send_invalid_message(invalid)

    def send_batch(self, size: int = 2) -> list[Pending]:
        """A JSON-RPC batch of ``size`` requests (ping, then the first list the server
        offers), in one line (2025-03-26: receivers MUST accept batches)."""
        return self.script.send_batch(size)

    # -- the deterministic sweep and the end -----------------------------------------------------

    def sweep_session(self) -> None:
        """Every invalid-message rule that applies, once each (the simplest example of
        each), then every listed tool, prompt and resource once, the unknown ones, a
        cancellation and the era's own requests. Deterministic for a deterministic peer."""
        self.script.sweep()

    def teardown(self) -> None:
        """End the session: close listen streams, wait for every owed answer, report what
        never came, close the transport."""
        if self.transport is None:
            return
        try:
            if self.alive:
                self.script.finish()
            elif self.cut_short and self.ledger.owed():
                self.note(f"{self.revision}: {len(self.ledger.owed())} request(s) still in flight "
                          "when the budget ran out (not judged)")
        finally:
            self.transport.close()
            self.wire.transport_findings()


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
                        f"({type(exc).__name__}: {short(exc, 200)}); findings so far stand")
            break
        left -= max(1, machine.run_state.get("examples", 0) - started)
    return report


#: How many times a run starts again from the next seed after the peer was not deterministic.
_MAX_RESEEDS = 20


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return short(text[0] if text else type(exc).__name__, 160)



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
                        f"({type(exc).__name__}: {short(exc, 200)})")
            _close_quietly(session)
    return report


def _close_quietly(session: PeerMachine) -> None:
    try:
        if session.transport is not None:
            session.transport.close()
    except Exception:  # closing after an error: nothing more to report
        pass
