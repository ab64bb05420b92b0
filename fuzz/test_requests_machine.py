"""A stateful fuzz of request bookkeeping: every request ends exactly once.

A :class:`hypothesis.stateful.RuleBasedStateMachine` drives a ``ClientConnection`` and a
``ServerConnection`` that completed the handshake (at a revision drawn from the four
handshake-era ones). Between them sit two explicit *wires* -- FIFO lists of encoded lines,
one per direction, filled from ``data_to_send()`` -- so the machine decides, message by
message, whether a line is delivered or lost. A virtual clock moves forward by random steps
or jumps to the next deadline.

Rules: send a request (client: ``tools/call``, ``tools/list``, ``ping``; server: ``ping``,
``sampling/createMessage``, ``roots/list``) with random ``timeout`` / ``max_total`` /
``progress`` options; answer a pending incoming request (result or error); send progress
(increasing, and once non-increasing, which must raise ``LocalProtocolError``); cancel one
of our own requests; pause/resume a request's clock; move the clock; deliver or drop the next
line on a wire; misuse the API (expecting ``LocalProtocolError`` and nothing queued); EOF.

Invariants, checked on every event and every line as it is produced (the machine follows the
call-order contract: after every input it drains ``next_event()`` until ``NEED_DATA``, then
the outbox):

* every request a side sent ends **exactly once** with ``Response``, ``ErrorResponse``,
  ``RequestTimedOut``, ``RequestCancelled`` or ``RequestAborted``; ``LateResponse`` and
  ``UnexpectedResponse`` only name ids that already ended (or never existed);
* after ``handle_timeout(now)``, ``next_deadline()`` is None or later than ``now``;
* only ``ProtocolError`` subclasses escape, and only ``LocalProtocolError`` from send-side
  calls (a ``RemoteProtocolError`` must leave the connection CLOSED);
* after a ``CancelRequested`` for id X, that side never puts a response or progress for X on
  the wire;
* no event follows ``ConnectionClosed``;
* at teardown both connections are closed and every request still outstanding has ended.

Plus a few cross-checks that follow from JSON-RPC: every ``Request`` event is a request the
peer really sent (once), every response on the wire answers a request the peer sent and is
sent at most once, ``pending_requests`` matches the model, ``Progress`` values increase;
and a model of each request's deadlines (:class:`Clock`: idle deadline restarted by progress,
hard maximum, pause/resume) predicts ``next_deadline()`` exactly, and no ``RequestTimedOut``
comes before its deadline.

Default: 200 examples of up to 40 steps. For long runs set ``MCP_SANSIO_FUZZ_EXAMPLES``
(and optionally ``MCP_SANSIO_FUZZ_STEPS``); see ``fuzz/README.md``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from mcp_sansio import (
    DEFAULT_REQUEST_TIMEOUT,
    HANDSHAKE_REVISIONS,
    NEED_DATA,
    CancelRequested,
    ClientConnection,
    CloseReason,
    Connection,
    ConnectionClosed,
    ErrorResponse,
    Event,
    Initialized,
    LateResponse,
    LocalProtocolError,
    MessageRejected,
    Progress,
    ProtocolError,
    RemoteProtocolError,
    Request,
    RequestAborted,
    RequestCancelled,
    RequestTimedOut,
    Response,
    ServerConnection,
    State,
    UnexpectedResponse,
)

EXAMPLES = int(os.environ.get("MCP_SANSIO_FUZZ_EXAMPLES", "200"))
STEPS = int(os.environ.get("MCP_SANSIO_FUZZ_STEPS", "40"))

CLIENT, SERVER = "client", "server"
SIDES = (CLIENT, SERVER)
PEER = {CLIENT: SERVER, SERVER: CLIENT}

CLIENT_CAPS: dict[str, Any] = {"sampling": {}, "roots": {"listChanged": True}}
SERVER_CAPS: dict[str, Any] = {"tools": {}, "prompts": {}, "resources": {}, "logging": {}}

#: What each side may ask for, with params and a plausible result for the answering side.
REQUESTS: dict[str, dict[str, tuple[dict[str, Any] | None, dict[str, Any]]]] = {
    CLIENT: {
        "tools/call": ({"name": "echo", "arguments": {"x": 1}},
                       {"content": [{"type": "text", "text": "1"}], "isError": False}),
        "tools/list": (None, {"tools": []}),
        "ping": (None, {}),
    },
    SERVER: {
        "sampling/createMessage": (
            {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
             "maxTokens": 16},
            {"role": "assistant", "content": {"type": "text", "text": "yo"}, "model": "m"},
        ),
        "roots/list": (None, {"roots": []}),
        "ping": (None, {}),
    },
}

#: The five terminal events of a request we sent (_events.py docstring).
ENDINGS = (Response, ErrorResponse, RequestTimedOut, RequestCancelled, RequestAborted)

# Drawn options. "default" means: leave the keyword out (the connection's default).
timeouts = st.one_of(
    st.just("default"),
    st.none(),
    st.floats(min_value=0.0, max_value=120.0, allow_nan=False, allow_infinity=False),
)
picks = st.integers(min_value=0, max_value=255)
steps = st.one_of(
    st.just(0.0),
    st.floats(min_value=0.0, max_value=5.0, allow_nan=False, allow_infinity=False),
    st.floats(min_value=0.0, max_value=200.0, allow_nan=False, allow_infinity=False),
)
progress_steps = st.one_of(
    st.integers(min_value=1, max_value=10),
    st.floats(min_value=0.25, max_value=10.0, allow_nan=False, allow_infinity=False),
)
error_codes = st.one_of(
    st.sampled_from([-32603, -32602, -32601, -32600, -32002, -32000, 0, 1]),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
)
reasons = st.one_of(st.none(), st.text(max_size=12))


def _choose(items: list[Any], pick: int) -> Any:
    return items[pick % len(items)]


def _both(per_side: Mapping[str, Iterable[Any]]) -> list[tuple[str, Any]]:
    """``(side, id)`` for every id of both sides, in a stable order (so ``pick`` replays)."""
    return [(side, rid) for side in SIDES for rid in sorted(per_side[side], key=repr)]


class Clock:
    """The model of one outgoing request's deadlines (DESIGN.md, "Time"): an idle deadline
    restarted by progress (when asked), a hard one never extended, both frozen while paused
    and restarted with the time they had left. Progress that arrives while paused is a case
    the design leaves open: the model then stops predicting (``certain = False``)."""

    __slots__ = ("certain", "hard", "idle", "paused", "resets", "timeout")

    def __init__(self, now: float, timeout: float | None, max_total: float | None,
                 resets: bool) -> None:
        self.timeout = timeout
        self.resets = resets
        self.idle = None if timeout is None else now + timeout
        self.hard = None if max_total is None else now + max_total
        self.paused: tuple[float | None, float | None] | None = None
        self.certain = True

    def progress(self, now: float) -> None:
        if self.paused is not None:
            self.certain = False
        elif self.resets and self.timeout is not None:
            self.idle = now + self.timeout

    def pause(self, now: float) -> None:
        if self.paused is None:
            self.paused = (None if self.idle is None else max(0.0, self.idle - now),
                           None if self.hard is None else max(0.0, self.hard - now))
            self.idle = self.hard = None

    def resume(self, now: float) -> None:
        if self.paused is not None:
            idle, hard = self.paused
            self.paused = None
            self.idle = None if idle is None else now + idle
            self.hard = None if hard is None else now + hard


class RequestsMachine(RuleBasedStateMachine):
    """Client and server with lossy wires and a virtual clock."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.conn: dict[str, Connection] = {}
        #: Encoded lines sent by a side, not yet delivered to its peer (FIFO).
        self.wire: dict[str, list[bytes]] = {CLIENT: [], SERVER: []}
        #: Requests each side sent: id -> method.
        self.sent: dict[str, dict[Any, str]] = {CLIENT: {}, SERVER: {}}
        #: Ids that asked for progress (per sender) and the last Progress value seen.
        self.wants_progress: dict[str, set[Any]] = {CLIENT: set(), SERVER: set()}
        self.progress_seen: dict[str, dict[Any, float]] = {CLIENT: {}, SERVER: {}}
        #: How each side's requests ended: id -> name of the terminal event.
        self.ended: dict[str, dict[Any, str]] = {CLIENT: {}, SERVER: {}}
        #: Ids that got a LateResponse (at most one each).
        self.late: dict[str, set[Any]] = {CLIENT: set(), SERVER: set()}
        #: Requests delivered to each side's application: id -> (method, progress token).
        self.pending_in: dict[str, dict[Any, tuple[str, Any]]] = {CLIENT: {}, SERVER: {}}
        self.delivered_in: dict[str, set[Any]] = {CLIENT: set(), SERVER: set()}
        #: Last progress value each side sent for an incoming request.
        self.progress_out: dict[str, dict[Any, float]] = {CLIENT: {}, SERVER: {}}
        #: Progress token -> incoming request id, per receiving side.
        self.token_of: dict[str, dict[Any, Any]] = {CLIENT: {}, SERVER: {}}
        #: Ids for which a side got CancelRequested (nothing more may go out for them) ...
        self.peer_cancelled: dict[str, set[Any]] = {CLIENT: set(), SERVER: set()}
        #: ... and those of them the application has not tried to answer yet.
        self.cancelled_unanswered: dict[str, set[Any]] = {CLIENT: set(), SERVER: set()}
        #: Ids each side answered on the wire.
        self.answered_out: dict[str, set[Any]] = {CLIENT: set(), SERVER: set()}
        #: Ids whose notifications/cancelled must still appear in the side's output.
        self.cancel_expected: dict[str, set[Any]] = {CLIENT: set(), SERVER: set()}
        self.closed: dict[str, bool] = {CLIENT: False, SERVER: False}
        #: The deadlines model of each request in flight.
        self.clocks: dict[str, dict[Any, Clock]] = {CLIENT: {}, SERVER: {}}
        self.initialized_sent = False
        self.ready = False

    # -- plumbing ----------------------------------------------------------------------------

    def _receive(self, side: str, call: Any, *args: Any, **kwargs: Any) -> None:
        """Call an input method; only RemoteProtocolError may escape, and it means CLOSED."""
        conn = self.conn[side]
        try:
            call(*args, **kwargs)
        except RemoteProtocolError:
            assert conn.state is State.CLOSED, "RemoteProtocolError but the connection is open"
        self._drain(side)

    def _drain(self, side: str) -> None:
        """The call-order contract: events until NEED_DATA, then the outbox."""
        conn = self.conn[side]
        while True:
            try:
                event = conn.next_event()
            except RemoteProtocolError:
                assert conn.state is State.CLOSED, "RemoteProtocolError but still open"
                break
            if event is NEED_DATA:
                break
            self._on_event(side, event)
        data = conn.data_to_send()
        if data:
            assert data.endswith(b"\n")
            for line in data[:-1].split(b"\n"):
                self._on_output(side, line)
                self.wire[side].append(line)
        assert not self.cancel_expected[side], (
            f"{side}: no notifications/cancelled was queued for {self.cancel_expected[side]}"
        )

    def _send(self, side: str, call: Any, *args: Any, expect_error: bool = False,
              **kwargs: Any) -> Any:
        """Call a send-side method. On a closed connection (or when ``expect_error``) it must
        raise LocalProtocolError and queue nothing; otherwise it must not raise at all."""
        conn = self.conn[side]
        if expect_error or conn.state is State.CLOSED:
            with pytest.raises(LocalProtocolError):
                call(*args, **kwargs)
            assert conn.next_event() is NEED_DATA, "a refused call produced an event"
            assert conn.data_to_send() == b"", "a refused call queued something"
            return None
        result = call(*args, **kwargs)
        self._drain(side)
        return result

    def _pending_out(self, side: str) -> list[Any]:
        return [rid for rid in self.sent[side] if rid not in self.ended[side]]

    # -- event checks ------------------------------------------------------------------------

    def _end(self, side: str, request_id: Any, how: str, method: str | None) -> None:
        assert request_id in self.sent[side], f"{side}: {how} for id {request_id!r} never sent"
        assert request_id not in self.ended[side], (
            f"{side}: request {request_id!r} ended twice: {self.ended[side][request_id]} "
            f"then {how}"
        )
        assert method is None or method == self.sent[side][request_id], (
            f"{side}: {how} for {request_id!r} names {method!r}, "
            f"sent as {self.sent[side][request_id]!r}"
        )
        self.ended[side][request_id] = how

    def _on_event(self, side: str, event: Event) -> None:
        assert not self.closed[side], f"{side}: event after ConnectionClosed: {event!r}"
        conn = self.conn[side]
        if isinstance(event, ENDINGS):
            how = type(event).__name__
            self._end(side, event.request_id, how, event.method)
            clock = self.clocks[side].pop(event.request_id, None)
            if isinstance(event, RequestTimedOut) and clock is not None and clock.certain:
                deadline = clock.hard if event.hard_limit else clock.idle
                assert deadline is not None and deadline <= self.now, (
                    f"{side}: {event!r} at {self.now}, but its deadlines are idle "
                    f"{clock.idle}, hard {clock.hard} (paused: {clock.paused})"
                )
            if isinstance(event, RequestTimedOut | RequestCancelled):
                self.cancel_expected[side].add(event.request_id)
        elif isinstance(event, LateResponse):
            rid = event.request_id
            assert self.ended[side].get(rid) in ("RequestTimedOut", "RequestCancelled"), (
                f"{side}: LateResponse for {rid!r}, which ended as {self.ended[side].get(rid)}"
            )
            assert rid not in self.late[side], f"{side}: two LateResponses for {rid!r}"
            self.late[side].add(rid)
        elif isinstance(event, UnexpectedResponse):
            rid = event.request_id
            assert rid is None or rid not in self.sent[side] or rid in self.ended[side], (
                f"{side}: UnexpectedResponse for {rid!r}, which is still pending"
            )
        elif isinstance(event, Progress):
            rid = event.request_id
            assert rid in self.wants_progress[side], f"{side}: Progress for {rid!r} unasked"
            assert rid not in self.ended[side], f"{side}: Progress for ended request {rid!r}"
            last = self.progress_seen[side].get(rid)
            assert last is None or event.progress > last, f"{side}: progress went backwards"
            self.progress_seen[side][rid] = event.progress
            self.clocks[side][rid].progress(self.now)
        elif isinstance(event, Request):
            rid, peer = event.request_id, PEER[side]
            assert self.sent[peer].get(rid) == event.method, (
                f"{side}: Request {rid!r} {event.method} was never sent by the {peer}"
            )
            assert rid not in self.delivered_in[side], f"{side}: request {rid!r} twice"
            assert event.method != "ping", "ping must be answered by the core"
            self.delivered_in[side].add(rid)
            meta = (event.params or {}).get("_meta") or {}
            token = meta.get("progressToken")
            assert (token is not None) == (rid in self.wants_progress[peer])
            self.pending_in[side][rid] = (event.method, token)
            if token is not None:
                self.token_of[side][token] = rid
        elif isinstance(event, CancelRequested):
            rid = event.request_id
            assert rid in self.pending_in[side], f"{side}: CancelRequested for {rid!r}"
            assert event.method == self.pending_in[side][rid][0]
            del self.pending_in[side][rid]
            self.peer_cancelled[side].add(rid)
            self.cancelled_unanswered[side].add(rid)
        elif isinstance(event, ConnectionClosed):
            self.closed[side] = True
            assert conn.state is State.CLOSED
            assert not self._pending_out(side), (
                f"{side}: closed with requests that never ended: {self._pending_out(side)}"
            )
        elif isinstance(event, MessageRejected):
            # The only valid-traffic rejection possible here: progress that raced with a
            # timeout or cancel of its request (never answered: it is a notification).
            assert event.method == "notifications/progress" and not event.replied, (
                f"{side}: valid traffic was rejected: {event!r}"
            )
            assert any(
                how in ("RequestTimedOut", "RequestCancelled")
                for how in self.ended[side].values()
            ), f"{side}: progress rejected but no request ended locally: {event!r}"
        elif isinstance(event, Initialized):
            assert not self.ready, f"{side}: Initialized after the handshake"
            if side == CLIENT:
                init = [rid for rid, m in self.sent[CLIENT].items() if m == "initialize"]
                self._end(CLIENT, init[0], "Initialized", None)
        else:
            raise AssertionError(f"{side}: unexpected event {event!r}")

    # -- wire checks -------------------------------------------------------------------------

    def _on_output(self, side: str, line: bytes) -> None:
        peer = PEER[side]
        message = json.loads(line)
        assert type(message) is dict, f"{side} sent a non-object: {line!r}"
        assert message.get("jsonrpc") == "2.0"
        method = message.get("method")
        if method is not None and "id" in message:  # a request
            rid = message["id"]
            assert self.sent[side].get(rid) == method, f"{side}: unknown request on the wire"
        elif method is not None:  # a notification
            params = message.get("params") or {}
            if method == "notifications/cancelled":
                rid = params.get("requestId")
                assert self.ended[side].get(rid) in ("RequestTimedOut", "RequestCancelled"), (
                    f"{side}: cancelled {rid!r}, which did not time out or get cancelled"
                )
                assert self.sent[side][rid] != "initialize"
                self.cancel_expected[side].discard(rid)
            elif method == "notifications/progress":
                token = params.get("progressToken")
                rid = self.token_of[side].get(token)
                assert rid is not None, f"{side}: progress for unknown token {token!r}"
                assert rid not in self.peer_cancelled[side], (
                    f"{side}: progress for {rid!r} after the peer cancelled it"
                )
                assert rid in self.pending_in[side], f"{side}: progress for finished {rid!r}"
            elif method == "notifications/initialized":
                assert side == CLIENT and not self.initialized_sent
                self.initialized_sent = True
            else:
                raise AssertionError(f"{side}: unexpected notification {line!r}")
        else:  # a response
            rid = message.get("id")
            assert ("result" in message) != ("error" in message)
            assert rid in self.sent[peer], f"{side}: response to {rid!r}, never sent by {peer}"
            assert rid not in self.answered_out[side], f"{side}: answered {rid!r} twice"
            assert rid not in self.peer_cancelled[side], (
                f"{side}: response for {rid!r} after the peer cancelled it"
            )
            self.answered_out[side].add(rid)
            if "error" in message:
                error = message["error"]
                assert type(error.get("code")) is int and type(error.get("message")) is str

    # -- setup -------------------------------------------------------------------------------

    @initialize(revision=st.sampled_from(HANDSHAKE_REVISIONS))
    def handshake(self, revision: str) -> None:
        client = ClientConnection(info={"name": "fuzz-client", "version": "1"},
                                  capabilities=CLIENT_CAPS, versions=[revision])
        server = ServerConnection(info={"name": "fuzz-server", "version": "1"},
                                  capabilities=SERVER_CAPS)
        self.conn = {CLIENT: client, SERVER: server}
        init_id = client.initialize(now=self.now)
        self.sent[CLIENT][init_id] = "initialize"
        self._drain(CLIENT)
        while self.wire[CLIENT] or self.wire[SERVER]:
            for side in SIDES:
                if self.wire[side]:
                    self._deliver(side)
        assert client.state is State.OPERATING and server.state is State.OPERATING
        assert client.protocol_version == server.protocol_version == revision
        self.ready = True

    # -- rules: requests ---------------------------------------------------------------------

    @rule(
        side=st.sampled_from(SIDES),
        pick=picks,
        timeout=timeouts,
        max_total=timeouts,
        progress=st.booleans(),
        resets=st.one_of(st.none(), st.booleans()),
        count=st.integers(min_value=1, max_value=3),
    )
    def send_request(self, side: str, pick: int, timeout: Any, max_total: Any,
                     progress: bool, resets: bool | None, count: int) -> None:
        """``side`` sends ``count`` requests (methods in turn from ``pick``), all with the
        same options."""
        kwargs: dict[str, Any] = {"now": self.now, "progress": progress,
                                  "progress_resets_timeout": resets}
        if timeout != "default":
            kwargs["timeout"] = timeout
        if max_total != "default":
            kwargs["max_total"] = max_total
        conn = self.conn[side]
        for n in range(count):
            # ping is listed last: it never reaches the application (the core answers it)
            method = _choose(list(REQUESTS[side]), pick + n)
            params = REQUESTS[side][method][0]
            if conn.state is State.CLOSED:
                self._send(side, conn.send_request, method, params, **kwargs)
                continue
            rid = conn.send_request(method, params, **kwargs)
            assert rid not in self.sent[side], f"{side}: id {rid!r} reused"
            self.sent[side][rid] = method
            if progress:
                self.wants_progress[side].add(rid)
            self.clocks[side][rid] = Clock(
                self.now,
                DEFAULT_REQUEST_TIMEOUT if timeout == "default" else timeout,
                None if max_total == "default" else max_total,  # max_request_time: None
                True if resets is None else resets,
            )
            self._drain(side)

    @rule(pick=picks, as_error=st.booleans(), code=error_codes, text=st.text(max_size=12),
          cancelled=st.sampled_from([False, False, True]))
    def answer(self, pick: int, as_error: bool, code: int, text: str, cancelled: bool) -> None:
        """The application answers a request delivered to it (result or error). With
        ``cancelled``, it answers one the peer has cancelled instead: the core drops that
        answer quietly, once (nothing may reach the wire: checked on every line)."""
        if cancelled:
            ids = _both(self.cancelled_unanswered)
            if not ids:
                return
            side, rid = _choose(ids, pick)
            conn = self.conn[side]
            if conn.state is not State.CLOSED:
                self.cancelled_unanswered[side].discard(rid)
            result = {}
        else:
            ids = _both(self.pending_in)
            if not ids:
                return
            side, rid = _choose(ids, pick)
            conn = self.conn[side]
            result = REQUESTS[PEER[side]][self.pending_in[side][rid][0]][1]
            if conn.state is not State.CLOSED:
                del self.pending_in[side][rid]
        if as_error:
            self._send(side, conn.send_error, rid, code, text)
        else:
            self._send(side, conn.send_response, rid, result)

    @rule(pick=picks, step=progress_steps,
          total=st.one_of(st.none(), st.just(100)), text=st.one_of(st.none(), st.text(max_size=8)),
          mode=st.sampled_from(["increase", "increase", "not_increasing", "after_cancel"]))
    def progress(self, pick: int, step: float, total: int | None,
                 text: str | None, mode: str) -> None:
        """The receiver reports progress on a request that asked for it. ``not_increasing``
        repeats or lowers the last value: LocalProtocolError, nothing queued.
        ``after_cancel`` targets a request the peer cancelled: dropped quietly."""
        if mode == "after_cancel":
            ids = _both(self.cancelled_unanswered)
            if ids:
                side, rid = _choose(ids, pick)
                value = self.progress_out[side].get(rid, 0.0) + step
                self._send(side, self.conn[side].send_progress, rid, value, total, text)
            return
        ids = _both({side: [rid for rid, (_, token) in self.pending_in[side].items()
                            if token is not None] for side in SIDES})
        if not ids:
            return
        side, rid = _choose(ids, pick)
        conn = self.conn[side]
        last = self.progress_out[side].get(rid)
        if mode == "not_increasing":
            if last is None:
                return
            back = step - 1 if step >= 1 else 0.0  # 0 repeats the last value
            self._send(side, conn.send_progress, rid, last - back, total, text,
                       expect_error=True)
            return
        value = step if last is None else last + step
        assert last is None or value > last
        self._send(side, conn.send_progress, rid, value, total, text)
        if conn.state is not State.CLOSED:
            self.progress_out[side][rid] = value

    @rule(pick=picks, reason=reasons, act=st.sampled_from([False, False, True]))
    def cancel(self, pick: int, reason: str | None, act: bool) -> None:
        """A side cancels one of its own requests in flight. (One draw in three acts, so
        that cancels do not end most requests before they are answered.)"""
        ids = _both({side: self._pending_out(side) for side in SIDES})
        if not ids or not act:
            return
        side, rid = _choose(ids, pick)
        self._send(side, self.conn[side].cancel, rid, reason, now=self.now)

    @rule(pick=picks, pause=st.booleans())
    def pause_or_resume(self, pick: int, pause: bool) -> None:
        """Stop or restart the clock of a request in flight."""
        ids = _both({side: self._pending_out(side) for side in SIDES})
        if not ids:
            return
        side, rid = _choose(ids, pick)
        conn = self.conn[side]
        call = conn.pause_timeout if pause else conn.resume_timeout
        self._send(side, call, rid, now=self.now)
        clock = self.clocks[side].get(rid)
        if clock is not None and conn.state is not State.CLOSED:
            if pause:
                clock.pause(self.now)
            else:
                clock.resume(self.now)

    @rule(side=st.sampled_from(SIDES), pick=picks, what=st.sampled_from(
        ["cancel", "pause", "resume", "answer", "error", "progress"]))
    def misuse(self, side: str, pick: int, what: str) -> None:
        """Calls on ids that are not (or no longer) valid raise LocalProtocolError."""
        conn = self.conn[side]
        if what in ("cancel", "pause", "resume"):
            candidates = [rid for rid in self.ended[side]] + [10_000 + pick]
            rid = _choose(candidates, pick)
            call = {"cancel": conn.cancel, "pause": conn.pause_timeout,
                    "resume": conn.resume_timeout}[what]
            self._send(side, call, rid, expect_error=True)
            return
        # ids delivered and answered (not cancelled), or never received
        answered = [rid for rid in self.delivered_in[side]
                    if rid not in self.pending_in[side] and rid not in self.peer_cancelled[side]]
        rid = _choose([*answered, 10_000 + pick], pick)
        if what == "answer":
            self._send(side, conn.send_response, rid, {}, expect_error=True)
        elif what == "error":
            self._send(side, conn.send_error, rid, 1, "x", expect_error=True)
        else:
            self._send(side, conn.send_progress, rid, 1e9, expect_error=True)

    # -- rules: time -------------------------------------------------------------------------

    def _fire(self) -> None:
        for side in SIDES:
            conn = self.conn[side]
            self._receive(side, conn.handle_timeout, self.now)
            deadline = conn.next_deadline()
            assert deadline is None or deadline > self.now, (
                f"{side}: next_deadline() {deadline} <= now {self.now} after handle_timeout"
            )

    @rule(dt=steps, jump=st.booleans())
    def advance(self, dt: float, jump: bool) -> None:
        """Move the clock by ``dt``, or (``jump``) to the earliest deadline of either side,
        and call ``handle_timeout`` on both."""
        if jump:
            deadlines = [d for d in (c.next_deadline() for c in self.conn.values())
                         if d is not None]
            if deadlines:
                self.now = max(self.now, min(deadlines))
        else:
            self.now += dt
        self._fire()

    # -- rules: the wires --------------------------------------------------------------------

    def _deliver(self, source: str) -> None:
        line = self.wire[source].pop(0)
        target = PEER[source]
        conn = self.conn[target]
        self._receive(target, conn.receive_data, line + b"\n", now=self.now)

    @rule(source=st.sampled_from(SIDES), count=st.integers(min_value=1, max_value=3),
          drop=st.sampled_from([False, False, True]))
    def deliver(self, source: str, count: int, drop: bool) -> None:
        """Deliver (or, with ``drop``, lose) the next ``count`` lines (at most) of one wire,
        in order."""
        for _ in range(count):
            if self.wire[source]:
                if drop:
                    self.wire[source].pop(0)
                else:
                    self._deliver(source)

    @rule()
    def deliver_all(self) -> None:
        """A quiet network for a moment: deliver both ways until both wires are empty."""
        while self.wire[CLIENT] or self.wire[SERVER]:
            for side in SIDES:
                if self.wire[side]:
                    self._deliver(side)

    @rule(side=st.sampled_from(SIDES), act=st.sampled_from([False] * 11 + [True]))
    def eof(self, side: str, act: bool) -> None:
        """The peer of ``side`` went away: ``side`` reads EOF; the other side goes on alone.
        (Only about one draw in twelve acts, so that most runs get far before it.)"""
        if not act:
            return
        conn = self.conn[side]
        was_closed = conn.state is State.CLOSED
        self._receive(side, conn.receive_eof, now=self.now)
        assert conn.state is State.CLOSED
        if not was_closed:
            assert conn.close_reason is CloseReason.EOF

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def model_matches(self) -> None:
        if not self.ready:
            return
        for side in SIDES:
            conn = self.conn[side]
            assert conn.pending_requests == len(self._pending_out(side)), (
                f"{side}: pending_requests {conn.pending_requests}, "
                f"model {self._pending_out(side)}"
            )
            assert conn.next_event() is NEED_DATA
            deadline = conn.next_deadline()
            assert deadline is None or math.isfinite(deadline)
            clocks = [self.clocks[side][rid] for rid in self._pending_out(side)]
            if all(clock.certain for clock in clocks):
                expected = min((d for clock in clocks for d in (clock.idle, clock.hard)
                                if d is not None), default=None)
                assert deadline == expected, (
                    f"{side}: next_deadline() is {deadline}, the model expects {expected}"
                )
            if self.closed[side]:
                assert conn.state is State.CLOSED

    def teardown(self) -> None:
        if not self.ready:
            return
        for side in SIDES:
            conn = self.conn[side]
            try:
                conn.close(now=self.now)
            except ProtocolError as exc:  # pragma: no cover - reported as a failure
                raise AssertionError(f"{side}: close() raised {exc!r}") from exc
            self._drain(side)
            assert self.closed[side], f"{side}: close() gave no ConnectionClosed"
            assert conn.state is State.CLOSED
            missing = self._pending_out(side)
            assert not missing, f"{side}: requests without an ending: {missing}"
            assert conn.pending_requests == 0


RequestsMachine.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestRequestsMachine = RequestsMachine.TestCase
