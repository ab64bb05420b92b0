"""The peer machine's script: the steps it takes in a fixed order, around the random ones.

Theory of operation
-------------------
:class:`Script` opens a session -- the handshake (``initialize``, optionally after an early
``ping``; a server that picks another revision it speaks is followed) or, in the stateless
era, ``server/discover`` -- then lists everything the server offers, page by page. The
first answers of a session may take a process's start-up time; a request still unanswered
then is abandoned (a late answer is noted, not found). A peer that does not speak a
stateless revision is remembered, so later sessions drawn for it do nothing.

It also holds the steps the random rules share: barriers (a request every server answers
at once, read until answered), invalid messages with the answer each deserves, JSON-RPC
batches, and tool arguments drawn from each tool's ``inputSchema``. :meth:`Script.sweep`
is the deterministic session (every invalid-message rule once, every tool, prompt and
resource once), and :meth:`Script.finish` ends a session: listen streams closed, every
owed answer waited for, and what never came reported (slow is noted, never found).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st

from .._capabilities import declared
from .._state import Role
from .._versions import FEATURES, HANDSHAKE_REVISIONS
from ._from_schema import SchemaStrategies, UnsupportedSchema
from ._invalid import RULES, Invalid, invalid_messages
from ._peer_ledger import (
    LIST_METHODS,
    LISTEN_FILTER,
    NO_PROMPT,
    NO_RESOURCE,
    NO_TOOL,
    SLOW_NOTE,
    MachineView,
    Pending,
    short,
    slow_note,
)
from ._peer_wire import Part, Wire


class Script(Part):
    """The fixed steps of one :class:`~mcp_sansio.testing.PeerMachine`'s sessions."""

    def __init__(self, machine: MachineView, wire: Wire) -> None:
        super().__init__(machine, wire)
        #: Argument strategies by tool name (None: the schema is beyond the builder).
        self._args: dict[str, st.SearchStrategy[Any] | None] = {}

    def request(self, method: str, body: Mapping[str, Any] | None = None,
                **kw: Any) -> Pending:
        return self.machine.request(method, body, **kw)

    def notify(self, method: str, body: Mapping[str, Any] | None = None) -> None:
        self.machine.notify(method, body)

    def wait_until(self, done: Callable[[], bool], timeout: float | None = None, *,
                   within: float | None = None) -> bool:
        return self.machine.wait_until(done, timeout, within=within)

    def handshake(self, *, early_ping: bool) -> None:
        """The handshake-era opening: ``initialize`` (after a ``ping`` if ``early_ping``),
        the revision and capabilities of the answer, ``notifications/initialized``."""
        # A transport may say that requests before initialize cannot be carried (HTTP
        # sessions begin with initialize).
        if early_ping and getattr(self.machine.transport, "requests_before_initialize", True):
            ping = self.request("ping")
            if not self._wait_startup(ping):
                if self.machine.cut_short:
                    return
                self.note(f"{SLOW_NOTE}[{self.revision}] ping before initialize was "
                          f"unanswered after {self.startup_time()} s (a slow start?)")
        params = {"protocolVersion": self.revision,
                  "capabilities": dict(self.config.client_capabilities),
                  "clientInfo": dict(self.config.client_info)}
        replies: list[dict[str, Any]] = []
        init = self.request("initialize", params, replies=replies)
        message = init.message
        if not self._wait_startup(init):
            self.machine.alive = False
            if self.machine.cut_short:
                return  # the budget ran out while waiting: nothing to hold against the peer
            if self.ledger.eof:
                self.finding("no-reply", "initialize was not answered: the peer closed the "
                             "connection", sent=message)
                return
            self.note(f"{SLOW_NOTE}[{self.revision}] initialize was unanswered after "
                      f"{self.startup_time()} s; the session was given up")
            return
        reply = replies[0]
        if "error" in reply:
            self.finding("version", f"initialize for {self.revision} was refused with error "
                         f"{reply['error'].get('code')} ({short(reply['error'].get('message'))}"
                         "): a server answers with a revision it supports", sent=message,
                         received=reply)
            self.machine.alive = False
            return
        result = reply["result"]
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        problems = self.schemas.errors(self.revision, "InitializeResult", result)
        if problems:
            self.finding("result-schema", f"initialize result is not a valid InitializeResult: "
                         f"{'; '.join(problems)}", sent=message, received=reply)
        if version != self.revision:
            if version in HANDSHAKE_REVISIONS and version in self.config.revisions:
                self.note(f"asked for {self.revision}, the server chose {version}")
                self.machine.revision = str(version)
            else:
                self.finding("version", f"initialize for {self.revision} was answered with "
                             f"protocolVersion {version!r}", sent=message, received=reply)
                self.machine.alive = False
                return
        caps = result.get("capabilities")
        self.machine.peer_capabilities = caps if isinstance(caps, dict) else {}
        info = result.get("serverInfo")
        self.machine.peer_info = info if isinstance(info, dict) else {}
        self.notify("notifications/initialized")

    def discover(self) -> None:
        """The stateless opening: ``server/discover``, which must list the revision."""
        replies: list[dict[str, Any]] = []
        probe = self.request("server/discover", replies=replies)
        if not self._wait_startup(probe):
            if self.machine.cut_short:
                return
            self.note(f"no answer to server/discover: the server does not speak "
                      f"{self.revision}")
            self._unspoken()
            return
        reply = replies[0]
        if "error" in reply:
            error = reply["error"]
            self.note(f"server/discover was answered with error {error.get('code')} "
                      f"({short(error.get('message'))}): the server does not speak "
                      f"{self.revision}")
            self._unspoken()
            return
        result = reply["result"]
        problems = self.schemas.errors(self.revision, "DiscoverResult", result)
        if problems:
            self.finding("result-schema", f"server/discover result is not a valid "
                         f"DiscoverResult: {'; '.join(problems)}", sent=probe.message,
                         received=reply)
        versions = result.get("supportedVersions") if isinstance(result, dict) else None
        if not isinstance(versions, list) or self.revision not in versions:
            self.note(f"server/discover does not list {self.revision} ({versions!r})")
            self.machine.alive = False
            return
        caps = result.get("capabilities")
        self.machine.peer_capabilities = caps if isinstance(caps, dict) else {}
        meta = result.get("_meta")
        info = meta.get("io.modelcontextprotocol/serverInfo") if isinstance(meta, dict) else None
        self.machine.peer_info = info if isinstance(info, dict) else {}

    def _unspoken(self) -> None:
        """The peer does not speak this revision: end the session, and let later sessions
        drawn for it do nothing (their draws stay the same)."""
        self.machine.alive = False
        self.config.run_state.setdefault("unspoken", set()).add(self.revision)

    def startup_time(self) -> float:
        """How long the first answers of a session may take: a process is starting."""
        cls = self.config
        return max(cls.reply_timeout, cls.call_timeout, cls.startup_timeout)

    def _wait_startup(self, pending: Pending) -> bool:
        """Wait for a request of the session's opening; False (and the request abandoned:
        a late answer is then noted, not found) when it did not come in time. A budget
        that ran out meanwhile ends the session."""
        wait = self.startup_time()
        if self.wait_until(functools.partial(self.ledger.done, pending), wait, within=wait):
            return True
        self.ledger.abandon(pending)
        if self.machine.cut_short:
            self.machine.alive = False
        return False

    def list_everything(self) -> None:
        """Every list the server's capabilities offer, up to five pages each."""
        for method, (capability, _) in LIST_METHODS.items():
            if not self.machine.alive or not declared(self.machine.peer_capabilities,
                                                      capability):
                continue
            cursor: str | None = None
            for _ in range(5):  # pages
                body = {"cursor": cursor} if cursor is not None else None
                pending = self.request(method, body)
                if not self.wait_until(functools.partial(self.ledger.done, pending)):
                    break
                cursor = self.ledger.cursors.pop(pending.request_id, None)
                if cursor is None:
                    break

    def argument_strategy(self, name: str) -> st.SearchStrategy[Any] | None:
        """Arguments valid against the tool's inputSchema (None: the schema uses what the
        builder does not cover; the call then gets ``{}``)."""
        if name not in self._args:
            schema = self.machine.tools[name].get("inputSchema")
            strategy: st.SearchStrategy[Any] | None = None
            if isinstance(schema, dict):
                defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
                try:
                    magnitude = None if self.config.wild else self.config.realistic_magnitude
                    strategy = SchemaStrategies(defs, max_depth=2, magnitude=magnitude).build(
                        {k: v for k, v in schema.items() if k not in ("$defs", "definitions")})
                    strategy.validate()
                    strategy = strategy.filter(functools.partial(
                        _fits, self.config.max_argument_size))
                except (UnsupportedSchema, ValueError, TypeError, KeyError, RecursionError):
                    strategy = None
            self._args[name] = strategy
        return self._args[name]

    def send_invalid_message(self, invalid: Invalid) -> None:
        """Send ``invalid`` and remember the answer it deserves."""
        invalid = _without_progress(invalid)
        seq = self.wire.send(invalid.message)
        message = invalid.message
        readable = message.get("id") if isinstance(message, dict) else None
        if isinstance(readable, bool) or not isinstance(readable, str | int):
            readable = None
        if invalid.expects_reply:
            if invalid.reply_id is None:
                self.ledger.null_expected.append(invalid)
            else:
                method = message.get("method") if isinstance(message, dict) else None
                pending = Pending(request_id=invalid.reply_id, method=str(method), seq=seq,
                                  message=message, invalid=invalid)
                if method == "subscriptions/listen":
                    pending.listen_filter = {}
                self.ledger.pending[invalid.reply_id] = pending
        elif readable is not None:
            self.ledger.silent[readable] = invalid

    def send_batch(self, size: int = 2) -> list[Pending]:
        """A JSON-RPC batch of ``size`` requests (ping, then the first list the server
        offers), in one line (2025-03-26: receivers MUST accept batches)."""
        offered = [m for m, (cap, _) in LIST_METHODS.items()
                   if declared(self.machine.peer_capabilities, cap)]
        methods = ["ping", *offered[:1]]
        batch: list[Pending] = []
        for index in range(size):
            method = methods[index % len(methods)]
            request_id = self.ledger.new_id()
            message = {"jsonrpc": "2.0", "id": request_id, "method": method}
            pending = Pending(request_id=request_id, method=method, message=message, seq=0,
                              batch=True)
            self.ledger.pending[request_id] = pending
            batch.append(pending)
        seq = self.wire.send([p.message for p in batch])
        for pending in batch:
            pending.seq = seq
        return batch

    def invalid_rules(self) -> frozenset[str] | None:
        """The invalid-message rules to use: the configured ones, less those the transport
        cannot carry a verdict for (``unjudged_rules``: over HTTP a second ``initialize``
        opens a new session, which is the transport's business)."""
        wanted = self.config.invalid_rules
        skip = frozenset(getattr(self.machine.transport, "unjudged_rules", ()))
        if not skip:
            return wanted
        return frozenset(wanted if wanted is not None else RULES) - skip

    def barrier(self) -> None:
        """A request every server answers at once (``ping``; ``server/discover``
        statelessly), read until it is answered."""
        method = "server/discover" if self.stateless else "ping"
        barrier = self.request(method, barrier=True)
        if not self.wait_until(lambda: barrier.request_id not in self.ledger.pending):
            self.ledger.abandon(barrier)
            if self.machine.cut_short:
                return
            # Time is not a violation: a busy peer answers the barrier late (noted then).
            self.note(f"{SLOW_NOTE}[{self.revision}] {method} (a barrier) was unanswered "
                      f"after {self.config.reply_timeout} s of silence")

    def sweep(self) -> None:
        """Every invalid-message rule that applies, once each (the simplest example of
        each), then every listed tool, prompt and resource once, the unknown ones, a
        cancellation and the era's own requests. Deterministic for a deterministic peer."""
        wanted = self.invalid_rules()
        for name in sorted(RULES):
            if wanted is not None and name not in wanted:
                continue
            try:
                strategy = invalid_messages(
                    self.revision, sender=Role.CLIENT,
                    peer_capabilities=self.machine.peer_capabilities,
                    ids=st.builds(self.ledger.new_id), rules=[name], schemas=self.schemas)
            except ValueError:
                continue  # the rule does not apply to this revision or server
            self.send_invalid_message(_first(strategy))
            self.barrier()
            if not self.machine.alive:
                return
        if self.stateless:
            self.request("server/discover")
        else:
            self.request("ping")
        if FEATURES[self.revision].batching:
            self.send_batch()
            self.barrier()
        if declared(self.machine.peer_capabilities, "tools"):
            for name in sorted(self.machine.tools):
                arguments = _first_or_empty(self.argument_strategy(name))
                self.request("tools/call", {"name": name, "arguments": arguments},
                             progress=True, tool=self.machine.tools[name])
            self.request("tools/call", {"name": NO_TOOL, "arguments": {}}, expect_error=(
                "unknown-tool", frozenset({-32602}), f"tools/call of unknown tool {NO_TOOL!r}"))
        if declared(self.machine.peer_capabilities, "prompts"):
            for name, prompt in sorted(self.machine.prompts.items()):
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
            self.request("prompts/get", {"name": NO_PROMPT}, expect_error=(
                "unknown-prompt", frozenset({-32602}),
                f"prompts/get of unknown prompt {NO_PROMPT!r}"))
        if declared(self.machine.peer_capabilities, "resources"):
            for uri in self.machine.resources[:5]:
                self.request("resources/read", {"uri": uri})
            self.request("resources/read", {"uri": NO_RESOURCE}, expect_error=(
                "unknown-resource", frozenset({-32002, -32602}),
                f"resources/read of unknown URI {NO_RESOURCE!r}"))
        if declared(self.machine.peer_capabilities, "logging") and not self.stateless:
            self.request("logging/setLevel", {"level": "info"})
        if self.stateless:
            self.request("subscriptions/listen", {"notifications": dict.fromkeys(
                LISTEN_FILTER, True)}, listen_filter=dict.fromkeys(LISTEN_FILTER, True))
        if self.machine.tools:
            name = sorted(self.machine.tools)[-1]
            arguments = _first_or_empty(self.argument_strategy(name))
            doomed = self.request("tools/call", {"name": name, "arguments": arguments},
                                  progress=True, tool=self.machine.tools[name])
            self.notify("notifications/cancelled",
                        {"requestId": doomed.request_id, "reason": "testing"})
            doomed.cancelled_seq = self.ledger.seq
        self.barrier()

    def finish(self) -> None:
        """End a live session: close its listen streams, wait for every owed answer, note
        what is slow and find what never came."""
        for pending in list(self.ledger.pending.values()):
            if pending.listen_filter is not None and pending.invalid is None and (
                    pending.cancelled_seq is None):
                if not pending.acknowledged:
                    self.wait_until(functools.partial(_acknowledged, pending))
                if not pending.acknowledged and pending.request_id in self.ledger.pending and (
                        not self.machine.cut_short):
                    self.finding("listen-acknowledgement", "a listen stream was never "
                                 "acknowledged", sent=pending.message)
                self.notify("notifications/cancelled",
                            {"requestId": pending.request_id, "reason": "done"})
                pending.cancelled_seq = self.ledger.seq
        self.barrier()
        # Valid requests may take their time; an answer to a broken message is due at once
        # (the barrier has been answered), so for those the settle time is enough. A tool
        # does real work: while one is owed, silence may last up to call_timeout (a tool
        # fed a large argument that answers late is not "never answered"), and with a
        # clock the whole wait is bounded by call_timeout too (a tool that keeps reporting
        # progress would otherwise hold the run forever).
        cls = self.config
        tool_owed = any(p.method == "tools/call" for p in self.ledger.owed())
        self.wait_until(lambda: not any(p.invalid is None for p in self.ledger.owed()),
                        cls.call_timeout if tool_owed else None,
                        within=cls.call_timeout if cls.clock is not None else None)
        if self.machine.cut_short:
            if self.ledger.owed():
                self.note(f"{self.revision}: {len(self.ledger.owed())} request(s) still in flight "
                          "when the budget ran out (not judged)")
            return
        # A tool still working is slow, not unanswered: time is not a violation (2025-11-25
        # basic/lifecycle.mdx, "Timeouts": the sender decides to stop waiting, and cancels).
        # Only a peer that ended the session without answering has proved it never will.
        for pending in self.ledger.owed():
            if (pending.method == "tools/call" and pending.invalid is None
                    and not pending.batch and not self.ledger.eof):
                self.note(slow_note(self.revision, pending, cls.call_timeout))
                self.notify("notifications/cancelled",
                            {"requestId": pending.request_id, "reason": "call timeout"})
                pending.cancelled_seq = self.ledger.seq
        # A peer that never falls silent (a stream of notifications) still ends the session:
        # settling is bounded by twice the reply timeout when there is a clock.
        self.machine.settle(cls.settle_time, within=2 * cls.reply_timeout)
        for pending in self.ledger.owed():
            self.ledger.pending.pop(pending.request_id, None)
            if not self.ledger.eof and pending.seq > self.ledger.answered_seq:
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
        for invalid in self.ledger.null_expected:
            self.finding(invalid.rule, f"{invalid.description}: expected error "
                         f"{invalid.expected_code} (id null), got no answer",
                         sent=invalid.message)
        self.ledger.null_expected.clear()


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


def _acknowledged(pending: Pending) -> bool:
    return pending.acknowledged


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
