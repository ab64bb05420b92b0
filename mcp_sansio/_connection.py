"""The engine: one MCP connection, for one role, with no I/O.

Theory of operation
-------------------
Input methods (``receive_data``, ``receive_message``, ``receive_eof``) only *store* input:
bytes are cut into lines at once (cheap, no protocol decision) and queued in an inbox.
``next_event()`` takes one item from the inbox, applies every rule to it -- envelope, method
table, lifecycle table, capability gating, request bookkeeping -- and returns the events it
produced one at a time. So state changes when the caller asks for the next event, never ahead
of it (as in h11).

Every rule that depends on the revision, role or state is looked up in a table:
``_state.TRANSITIONS`` (lifecycle), ``_capabilities.METHODS`` (direction, existence,
gating, and the facts derived from it such as ``SESSION_OPENERS``), ``_versions.FEATURES``
(per-revision features) and ``_admission.ADMISSION`` (what a stateless-era request must carry).
This module only wires them. Which role reaches which code follows from those tables too (only
a server receives ``initialize``; only a client enters ``PROBING``), so the two subclasses add
public API and configuration, never overrides of the engine.

What is off the per-message hot path -- timeouts, progress and cancellation, notifications,
batches, the handshake and the probe, the stateless era -- lives in modules of functions that
take the connection (``_engine.Engine``) and keep no state. The rest of the theory of
operation: docs/architecture.rst, "Inside the core" and "Module notes".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, cast

from . import _codec, _inflight, _json, _lifecycle, _notifications, _stateless_era
from ._admission import Admitted, batch_refusal
from ._batches import flush_batch, process_batch, sanitized_reply
from ._capabilities import (
    METHODS,
    MRTR_METHODS,
    PROMPT_METHODS,
    SESSION_OPENERS,
    Kind,
    declared,
    lookup,
    subject_of,
)
from ._checks import check_send, gate_incoming, incoming_rule, refusal
from ._codec import InvalidMessage, MessageKind, Parsed
from ._compiled import mypyc_attr
from ._engine import DEFAULT as _DEFAULT
from ._engine import Batch, OutgoingMessage
from ._errors import NEED_DATA, ErrorCode, LocalProtocolError, NeedData
from ._events import (
    CloseReason,
    ErrorResponse,
    Event,
    MessageRejected,
    RequestId,
    trusted_request,
    trusted_response,
)
from ._framing.ndjson import DEFAULT_MAX_LINE, OVERSIZED, LineSplitter
from ._json import EncodeError
from ._keyring import KeyRing
from ._listen import ListenStreams
from ._mrtr import InputRetries, check_input_requests
from ._pending import RECENT_IDS_LIMIT, Incoming, Outgoing, RecentIds
from ._sessionless import REFUSED_REQUESTS as SESSIONLESS_REFUSED
from ._sessionless import request_refusal, withdraw
from ._state import (
    NOT_INITIALIZED_CODE,
    Input,
    Role,
    State,
    Verdict,
    classify_request,
    transition,
)
from ._stateless import DEFAULT_SKEW, LOG_LEVELS, META_SERVER_INFO, has_stateless_meta, seal_state
from ._timers import TimerKind, TimerTable
from ._versions import FEATURES, KNOWN_REVISIONS, Era, newest

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT",
    "LOG_LEVELS",
    "ClientConnection",
    "Connection",
    "OutgoingMessage",
    "ServerConnection",
]

#: Default idle timeout for a request we send, in seconds. Sixty seconds is what the official
#: SDKs use; long enough for a slow tool, short enough that a lost reply is noticed.
#: ``None`` disables it. Progress can reset it per request (``progress_resets_timeout``).
DEFAULT_REQUEST_TIMEOUT: float | None = 60.0

#: How many requests from the peer may await our answer at once. Ten thousand is far beyond
#: what any real client keeps in flight (the official SDKs send one request per user action)
#: and costs the core about 2 MB of bookkeeping; the cap stops a peer that floods requests
#: without reading answers from growing our memory (and the application's work) without bound.
DEFAULT_MAX_INCOMING_REQUESTS = 10_000

#: How long a dual-era client waits for the answer to its ``server/discover`` probe before
#: falling back to ``initialize``. A handshake-era server answers an unknown method at once
#: (-32601), so only a server that drops unknown requests makes us wait; five seconds keeps
#: that case tolerable without misjudging a slow but modern server on a local pipe.
DEFAULT_PROBE_TIMEOUT = 5.0

#: The requests that change which URIs ``notifications/resources/updated`` may name (the rows
#: gated by ``resources.subscribe``): only their subject is kept on a request's record, so
#: that the common request pays one set lookup and no params read.
_SUBSCRIPTION_METHODS = frozenset(
    rule.method for rule in METHODS
    if rule.kind is Kind.REQUEST and rule.capability == "resources.subscribe"
)


class _Eof:
    __slots__ = ()


_EOF = _Eof()

#: What a constructor derives from its ``versions``: (handshake-era revisions, stateless-era
#: revisions, newest of each or None).
_VersionPlan = tuple[tuple[str, ...], tuple[str, ...], str | None, str | None]

#: Version plans by ``versions`` tuple. The HTTP server builds a connection for every
#: stateless-era request, always with the same versions: working the plan out once per
#: distinct tuple instead (two scans of the feature table and two ``newest`` calls, ~2 µs)
#: saves a fifth of the constructor. Pure memo of a pure function (no I/O, no clock), so it
#: changes nothing a caller sees. Bounded: a process uses a handful of version sets; 64 is
#: room for tests that try many, and past it the table starts over.
_VERSION_PLANS: dict[tuple[str, ...], _VersionPlan] = {}
_VERSION_PLANS_LIMIT = 64


def _version_plan(supported: tuple[str, ...]) -> _VersionPlan:
    plan = _VERSION_PLANS.get(supported)  # (an unhashable entry raises TypeError, as before)
    if plan is not None:
        return plan
    handshake = tuple(v for v in supported if v in FEATURES and FEATURES[v].handshake)
    stateless = tuple(v for v in supported if v in FEATURES and not FEATURES[v].handshake)
    if not handshake and not stateless:
        raise ValueError(f"no known revision among {supported!r}")
    plan = (handshake, stateless, newest(handshake) if handshake else None,
            newest(stateless) if stateless else None)
    if len(_VERSION_PLANS) >= _VERSION_PLANS_LIMIT:
        _VERSION_PLANS.clear()
    _VERSION_PLANS[supported] = plan
    return plan


@mypyc_attr(allow_interpreted_subclasses=True)
class Connection:
    """The shared engine of :class:`ClientConnection` and :class:`ServerConnection`.

    :param info: our ``Implementation`` object (``clientInfo``/``serverInfo``):
        at least ``name`` and ``version``. A ``dict`` is kept as given (not copied) and never
        changed by the connection; do not change it while the connection lives.
    :param capabilities: the capabilities we declare (kept as given, like ``info``).
    :param versions: the protocol revisions we accept (default: every known revision, both
        eras).
    :param request_timeout: default idle timeout for requests we send (seconds, or None).
    :param max_request_time: default hard maximum for requests we send (never extended by
        progress), or None.
    :param progress_resets_timeout: default for whether progress restarts the idle timer.
    :param strict_capabilities: refuse to send requests the peer's capabilities do not allow.
        Relax it (False) only to talk to peers that forget to declare what they support.
    :param max_message_size: the largest message accepted, in bytes (see
        :data:`~mcp_sansio._framing.ndjson.DEFAULT_MAX_LINE`).
    :param max_depth: the deepest JSON nesting accepted (see
        :data:`~mcp_sansio._codec.DEFAULT_MAX_DEPTH`).
    :param max_incoming_requests: how many requests from the peer may await our answer at
        once; more are refused with -32000 (see :data:`DEFAULT_MAX_INCOMING_REQUESTS`).
    :param max_outgoing_requests: how many of our requests may be in flight at once (None:
        no limit -- the application decides what it sends); more raise LocalProtocolError.
    :param recent_ids_limit: how many ended request ids are remembered per direction (see
        :data:`~mcp_sansio._pending.RECENT_IDS_LIMIT`).
    """

    # Slots, not a __dict__: a server holds one connection per session, and a dict of this
    # many attributes is about 1.6 KB per idle session (the aim is 4 KiB in all).
    # A subclass that adds attributes lists them in its own __slots__ (or gets a dict).
    __slots__ = ("__weakref__", "_cancelled_incoming", "_ended_outgoing", "_events", "_events_at",
        "_handshake_versions", "_inbox", "_inbox_at", "_incoming", "_listens",
        "_newest_handshake", "_newest_stateless", "_next_id", "_no_fallback", "_now", "_outbox",
        "_outgoing", "_peer_role", "_progress_tokens", "_retries", "_splitter", "_state",
        "_stateless_versions", "_timers", "_wall_now", "cache_scope", "cache_ttl_ms",
        "capabilities", "close_reason", "discovery", "info", "instructions", "log_level",
        "max_depth", "max_incoming_requests", "max_message_size", "max_outgoing_requests",
        "max_request_time", "peer_capabilities", "peer_info", "progress_resets_timeout",
        "protocol_version", "request_id_prefix", "request_state_key",
        "request_state_principal", "request_state_skew", "request_timeout",
        "server_instructions", "sessionless", "strict_capabilities",
        "subscriptions", "versions")

    role: ClassVar[Role]

    def __init__(self, **options: Any) -> None:
        self._configure(**options)

    def _configure(
        self,
        *,
        info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        versions: Iterable[str] | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        max_request_time: float | None = None,
        progress_resets_timeout: bool = True,
        strict_capabilities: bool = True,
        max_message_size: int = DEFAULT_MAX_LINE,
        max_depth: int = _codec.DEFAULT_MAX_DEPTH,
        max_incoming_requests: int = DEFAULT_MAX_INCOMING_REQUESTS,
        max_outgoing_requests: int | None = None,
        recent_ids_limit: int = RECENT_IDS_LIMIT,
    ) -> None:
        # A dict we are given is kept, not copied (a few hundred bytes per idle session).
        self.info: dict[str, Any] = (
            info if type(info) is dict else dict(info or {"name": "mcp-sansio", "version": "0"}))
        self.capabilities: dict[str, Any] = (
            capabilities if type(capabilities) is dict else dict(capabilities or {}))
        supported = tuple(versions) if versions is not None else KNOWN_REVISIONS
        self.versions: tuple[str, ...] = supported
        # Each era's revisions and the newest of each, worked out once per distinct
        # ``versions``. (One attribute per statement: the compiled build declares them so.)
        plan = _version_plan(supported)
        self._handshake_versions = plan[0]
        self._stateless_versions = plan[1]
        self._newest_handshake = plan[2]
        self._newest_stateless = plan[3]
        self.request_timeout = request_timeout
        self.max_request_time = max_request_time
        self.progress_resets_timeout = progress_resets_timeout
        self.strict_capabilities = strict_capabilities
        self.max_message_size = max_message_size
        self.max_depth = max_depth
        self.max_incoming_requests = max_incoming_requests
        self.max_outgoing_requests = max_outgoing_requests

        self._state = State.IDLE
        #: Server: serving one POST of a sessionless HTTP server (:meth:`ServerConnection.
        #: serve_sessionless`): no request to the client can be sent, and what only changes
        #: session state is refused (:mod:`mcp_sansio._sessionless`).
        self.sessionless = False
        self._peer_role = Role.SERVER if self.role is Role.CLIENT else Role.CLIENT
        #: The negotiated revision (None until negotiated).
        self.protocol_version: str | None = None
        #: The capabilities the peer declared (initialize, or a DiscoverResult).
        self.peer_capabilities: dict[str, Any] = {}
        #: The peer's ``Implementation`` object (``clientInfo`` / ``serverInfo``).
        self.peer_info: dict[str, Any] = {}
        #: Client: the server's instructions, if it sent any.
        self.instructions: str | None = None
        #: Why the connection closed (None while open).
        self.close_reason: CloseReason | None = None

        self._now = -math.inf
        # The latest wall-clock reading given (``wall_now=``, seconds since the epoch): what
        # is written for another process or host to read is timed on it (docs/keys.rst).
        self._wall_now: float | None = None
        # Made on the first receive_data: a connection fed whole messages (HTTP) never
        # splits lines, and a splitter with its buffer is ~120 bytes per idle session.
        self._splitter: LineSplitter | None = None
        # Lists read through a cursor, not deques (smaller when idle; see docs/architecture).
        self._inbox: list[Any] = []
        self._inbox_at = 0
        self._events: list[Event] = []
        self._events_at = 0
        self._outbox: list[OutgoingMessage] = []
        self._next_id = 1
        #: When set, the ids of our requests are strings, this prefix then the counter:
        #: a shared HTTP server puts its worker's tag here, so that ids of one session's
        #: copies on several workers never collide and an answer names the worker whose
        #: handler waits for it (mcp_sansio.http._shared, ForwardAnswer).
        self.request_id_prefix: str | None = None
        self._outgoing: dict[RequestId, Outgoing] = {}
        self._incoming: dict[RequestId, Incoming] = {}
        self._progress_tokens: dict[str | int, RequestId] = {}
        self._ended_outgoing = RecentIds(recent_ids_limit)  # timed out / cancelled by us
        self._cancelled_incoming = RecentIds(recent_ids_limit)  # cancelled by the peer
        self._timers = TimerTable()
        #: Resource URIs with an active subscription (resources/subscribe succeeded). A
        #: frozenset, replaced on each change: subscriptions are few and rare, and an empty
        #: set is 216 bytes every idle session would hold (the empty frozenset is shared).
        self.subscriptions: frozenset[str] = _NO_URIS
        #: The minimum log level the client asked for with logging/setLevel (server side).
        self.log_level: str | None = None
        # The stateless era's per-feature sub-states (each module says how it works).
        #: Open subscriptions/listen streams (2026-07-28, :mod:`._listen`).
        self._listens = ListenStreams()
        #: Client: input_required answers awaiting retry_with_input() (:mod:`._mrtr`).
        self._retries = InputRetries()
        #: Server: the instructions sent in the InitializeResult and the DiscoverResult.
        self.server_instructions: str | None = None
        #: Client: the era was cached as stateless, so a failed probe closes (connect()).
        self._no_fallback = False
        #: Client, 2026-07-28: the last DiscoverResult received (None before).
        self.discovery: dict[str, Any] | None = None
        #: Server: key that seals requestState (None: the application handles it raw), and
        #: the caching hints of 2026-07-28 results (see ServerConnection).
        self.request_state_key: bytes | KeyRing | None = None
        #: Server: who the requests speak for (:func:`~mcp_sansio._stateless.principal_key`;
        #: None: not authenticated) -- a state sealed for one principal does not open for
        #: another -- and the wall-clock skew allowed between the hosts that seal and open.
        self.request_state_principal: str | None = None
        self.request_state_skew = DEFAULT_SKEW
        self.cache_ttl_ms = 0
        self.cache_scope = "private"

    # -- properties --------------------------------------------------------------------------

    @property
    def state(self) -> State:
        """The lifecycle state (see :mod:`mcp_sansio._state`)."""
        return self._state

    @property
    def pending_requests(self) -> int:
        """How many requests we sent are still waiting for an answer."""
        return len(self._outgoing)

    @property
    def revision(self) -> str:
        """The revision whose tables apply now: the negotiated one; in the stateless state,
        the newest stateless revision; before negotiation, the newest handshake revision we
        support (the newest stateless one if none)."""
        if self.protocol_version is not None:
            return self.protocol_version
        if self._state in (State.STATELESS, State.PROBING) or not self._handshake_versions:
            return cast("str", self._newest_stateless)
        return cast("str", self._newest_handshake)

    @property
    def _handshake_revision(self) -> str:
        """The revision for a message handled with handshake-era semantics."""
        if self.protocol_version is not None and FEATURES[self.protocol_version].handshake:
            return self.protocol_version
        return cast("str", self._newest_handshake or self._newest_stateless)

    @property
    def era(self) -> Era | None:
        """The era this connection speaks, once known."""
        state = self._state  # read on every request by routers: identity tests only
        if state is State.STATELESS:
            return Era.STATELESS
        if state is State.OPERATING or state is State.INITIALIZING:
            return Era.HANDSHAKE
        if self.protocol_version is not None:
            return Era.HANDSHAKE if FEATURES[self.protocol_version].handshake else Era.STATELESS
        return None

    # -- time --------------------------------------------------------------------------------

    def _clock(self, now: float | None, wall_now: float | None = None) -> float:
        if now is not None and now > self._now:
            self._now = float(now)
        if wall_now is not None:
            # The latest reading, not the largest: it is what other hosts compare against,
            # and a wall clock that was stepped back is right after the step.
            self._wall_now = float(wall_now)
        return self._now

    def next_deadline(self) -> float | None:
        """The earliest time at which ``handle_timeout`` has something to do, or None."""
        return self._timers.next_deadline()

    def handle_timeout(self, now: float) -> None:
        """Fire every timer that expired at ``now``; does nothing when none has."""
        now = self._clock(now)
        if self._timers.due(now):  # called after every input: the common case is nothing
            _inflight.handle_timeout(self, now)

    def pause_timeout(self, request_id: RequestId, *, now: float | None = None) -> None:
        """Stop the clock of a request we sent (e.g. while it waits on a human)."""
        _inflight.pause(self, request_id, self._clock(now))

    def resume_timeout(self, request_id: RequestId, *, now: float | None = None) -> None:
        """Restart a paused request's clock with the time it had left."""
        _inflight.resume(self, request_id, self._clock(now))

    # -- input -------------------------------------------------------------------------------

    def receive_data(self, data: bytes, *, now: float | None = None,
                     wall_now: float | None = None) -> None:
        """Feed bytes from a newline-delimited stream (stdio). ``b""`` means EOF.
        ``wall_now``: the wall clock (seconds since the epoch) at the same moment as ``now``,
        for what this connection writes down for another process to read (a sealed
        ``requestState``'s expiry); ``now`` (monotonic) stays the clock of the timers."""
        self._clock(now, wall_now)
        if not data:
            self.receive_eof(now=now)
            return
        if self._state is State.CLOSED:
            return
        splitter = self._splitter
        if splitter is None:
            splitter = LineSplitter(self.max_message_size)
            self._splitter = splitter
        self._inbox.extend(splitter.feed(data))

    def receive_message(self, message: Any, *, now: float | None = None,
                        wall_now: float | None = None) -> None:
        """Feed one whole message: raw JSON ``bytes`` (an HTTP body, an SSE ``data`` field) or
        an already decoded JSON value (a dict, or a list for a batch). ``wall_now`` as in
        :meth:`receive_data`."""
        self._clock(now, wall_now)
        if self._state is State.CLOSED:
            return
        if isinstance(message, bytes | bytearray | memoryview):
            data = bytes(message)
            self._inbox.append(OVERSIZED if len(data) > self.max_message_size else data)
        else:
            self._inbox.append((message,))

    def receive_eof(self, *, now: float | None = None) -> None:
        """The peer closed its side. Pending requests are aborted; the connection closes."""
        self._clock(now)
        if self._state is State.CLOSED:
            return
        tail = self._splitter.eof() if self._splitter is not None else None
        if tail is not None:
            self._inbox.append(tail)
        self._inbox.append(_EOF)

    def next_event(self) -> Event | NeedData:
        """The next event, or ``NEED_DATA`` when the input so far has been fully handled."""
        events = self._events
        while (at := self._events_at) >= len(events):
            if at:  # every event was read: release them
                events.clear()
                self._events_at = 0
            inbox = self._inbox
            item_at = self._inbox_at
            if item_at >= len(inbox):
                if item_at:
                    inbox.clear()
                    self._inbox_at = 0
                return NEED_DATA
            self._inbox_at = item_at + 1
            self._process(inbox[item_at])
        self._events_at = at + 1
        return events[at]

    def events(self) -> list[Event]:
        """Every event available now (a convenience over ``next_event``)."""
        out: list[Event] = []
        while (event := self.next_event()) is not NEED_DATA:
            out.append(event)
        return out

    # -- output ------------------------------------------------------------------------------

    def data_to_send(self) -> bytes:
        """Drain the outbox as newline-delimited JSON (stdio)."""
        outbox = self._outbox
        if not outbox:
            return b""
        if len(outbox) == 1:  # the usual case: one answer, one request
            out = outbox[0][2] + b"\n"
        else:
            out = b"\n".join([entry[2] for entry in outbox]) + b"\n"
        outbox.clear()
        return out

    def messages_to_send(self) -> list[tuple[Any, RequestId | None]]:
        """Drain the outbox as ``(message, related_request_id)`` pairs (HTTP routing).

        ``related_request_id`` is the id of the *peer's* request a message belongs to: a
        response's own id; a progress or log notification's request; a listen stream's id
        for its notifications; for a request we send, the incoming request it was sent on
        behalf of (``related_request_id=``); for the cancellation of one of our requests,
        whatever that request related to; None for unrelated messages. (Our own request ids
        live in another id space than the peer's, so they never appear here: an HTTP server
        routes by this value alone.)
        """
        out = [(entry[0], entry[1]) for entry in self._outbox]
        self._outbox.clear()
        return out

    def encoded_messages_to_send(self) -> list[OutgoingMessage]:
        """Drain the outbox as ``(message, related_request_id, json_bytes)`` triples."""
        out = self._outbox
        self._outbox = []
        return out

    def send(self, event: Event) -> RequestId | None:
        """Send a symmetric event (:class:`Request`, :class:`Notification`,
        :class:`Response` or :class:`ErrorResponse`), e.g. one received from another
        connection. Returns the new id for a request (ids belong to the connection)."""
        return _inflight.send_event(self, event)

    def send_request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        now: float | None = None,
        timeout: Any = _DEFAULT,
        max_total: Any = _DEFAULT,
        progress: bool = False,
        progress_resets_timeout: bool | None = None,
        related_request_id: RequestId | None = None,
    ) -> RequestId:
        """Queue a request; return its id.

        :param timeout: idle timeout in seconds (None: none); default ``request_timeout``.
        :param max_total: hard maximum in seconds that progress never extends (None: none);
            default ``max_request_time``.
        :param progress: ask for progress notifications (adds ``_meta.progressToken``).
        :param related_request_id: the incoming request this one is sent on behalf of.
        :raises LocalProtocolError: the method, lifecycle or capabilities forbid it.
        """
        if self.sessionless:
            raise request_refusal(method)
        now = self._clock(now)
        inp = classify_request(method, sending=True)
        check_send(self.role, self._state, self.revision, inp, method, Kind.REQUEST, params,
                   self.strict_capabilities, self.peer_capabilities, self.capabilities)
        if progress and method in SESSION_OPENERS:
            raise LocalProtocolError(f"{method} cannot carry a progress token")
        request_id = self._queue_request(
            method, params, now, timeout, max_total, progress, progress_resets_timeout,
            related_request_id,
        )
        self._advance(inp)
        return request_id

    def _queue_request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        now: float,
        timeout: Any,
        max_total: Any,
        progress: bool,
        progress_resets_timeout: bool | None,
        related_request_id: RequestId | None,
    ) -> RequestId:
        """Build, encode and queue a request whose sending the caller has checked."""
        limit = self.max_outgoing_requests
        if limit is not None and len(self._outgoing) >= limit:
            raise LocalProtocolError(f"too many requests in flight (limit {limit})")
        request_id: RequestId = self._next_id
        if self.request_id_prefix is not None:
            request_id = f"{self.request_id_prefix}{self._next_id}"
        body = dict(params) if params is not None else None
        token: str | int | None = None
        if progress:
            body, token = _inflight.progress_meta(self, body, request_id)
        if self._state in (State.STATELESS, State.PROBING) and self.role is Role.CLIENT:
            body = _stateless_era.with_meta(self, body)
        message = _codec.request_message(request_id, method, body)
        data = self._encode(message)
        # Committed from here on: nothing below can fail.
        self._next_id += 1
        idle = self.request_timeout if timeout is _DEFAULT else timeout
        hard = self.max_request_time if max_total is _DEFAULT else max_total
        resets = (self.progress_resets_timeout if progress_resets_timeout is None
                  else progress_resets_timeout)
        subject = subject_of(method, body) if method in _SUBSCRIPTION_METHODS else None
        record = Outgoing(method, idle, token, resets, subject, related_request_id)
        if self._state is State.STATELESS and method in MRTR_METHODS:
            record.params = body  # kept to build a retry after input_required
        self._outgoing[request_id] = record
        if token is not None:
            self._progress_tokens[token] = request_id
        if idle is not None:
            self._timers.set(request_id, TimerKind.IDLE, now + idle)
        if hard is not None:
            self._timers.set(request_id, TimerKind.HARD, now + hard)
        self._outbox.append((message, related_request_id, data))
        return request_id

    def send_notification(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        related_request_id: RequestId | None = None,
    ) -> None:
        """Queue a notification.

        ``notifications/message`` below the level the client set with ``logging/setLevel`` is
        dropped quietly (``server/utilities/logging.mdx``).
        """
        _notifications.send_notification(self, method, params, related_request_id)

    def send_response(self, request_id: RequestId, result: Mapping[str, Any]) -> None:
        """Answer a request the peer sent us with a result.

        A response for a request the peer has cancelled is dropped quietly (races are
        normal); answering twice, or an id never received, raises ``LocalProtocolError``.
        In the stateless era the core adds ``resultType``, ``serverInfo`` and, for
        discover/list/read, ``ttlMs``/``cacheScope`` from config when they are missing.
        """
        # (A dict first: the ABC check costs a Python-level call on every answer.)
        if type(result) is not dict and not isinstance(result, Mapping):
            raise LocalProtocolError("a result must be a mapping (JSON object)")
        record = self._answerable(request_id)
        if record is None:
            return
        body = dict(result)
        if self._state is State.STATELESS and self.role is Role.SERVER:
            body = _stateless_era.decorate_result(self, request_id, record, body)
        message = _codec.result_message(request_id, body)
        data = self._encode(message)
        del self._incoming[request_id]
        self._listens.pop(request_id, None)
        if record.subject is not None:
            _notifications.record_subscription(self, record.method, record.subject)
        self._queue_reply(record.batch, message, request_id, data, from_application=True)

    def send_error(
        self, request_id: RequestId, code: int, message: str, data: Any = None
    ) -> None:
        """Answer a request the peer sent us with an error."""
        _inflight.send_error(self, request_id, code, message, data)

    def send_progress(
        self,
        request_id: RequestId,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> None:
        """Report progress on a request the peer sent us, with the token it gave.

        ``message`` is left out in 2024-11-05, which does not define it.

        :raises LocalProtocolError: no token was given, the request is finished, or
            ``progress`` does not increase.
        """
        _inflight.send_progress(self, request_id, progress, total, message)

    def cancel(
        self, request_id: RequestId, reason: str | None = None, *, now: float | None = None
    ) -> None:
        """Cancel a request we sent: queue ``notifications/cancelled`` and end it with a
        :class:`RequestCancelled` event. A reply that still arrives becomes a
        :class:`LateResponse`. ``initialize`` cannot be cancelled (lifecycle.mdx)."""
        self._clock(now)
        _inflight.cancel(self, request_id, reason)

    def close(self, *, now: float | None = None) -> None:
        """Close the connection locally: pending requests are aborted with events."""
        self._clock(now)
        if self._state is not State.CLOSED:
            _lifecycle.close(self, CloseReason.LOCAL, "closed by the application")

    # -- send-side checks ----------------------------------------------------------------------

    def _advance(self, inp: Input) -> None:
        self._state = transition(self.role, self._state, inp)[1]

    def _encode(self, message: Any) -> bytes:
        try:
            return _json.dumps(message)  # _codec.encode without its frame (the hot path)
        except EncodeError as exc:
            raise LocalProtocolError(f"cannot encode the message as JSON: {exc}") from None

    def _answerable(self, request_id: RequestId) -> Incoming | None:
        if self._state is State.CLOSED:
            raise LocalProtocolError("the connection is closed")
        record = self._incoming.get(request_id)
        if record is None:
            if self._cancelled_incoming.pop(request_id) is not None:
                return None  # the peer cancelled it: drop the answer quietly
            raise LocalProtocolError(
                f"no request with id {request_id!r} is waiting for an answer "
                "(never received, or already answered)"
            )
        return record

    # -- queueing ----------------------------------------------------------------------------

    def _queue_reply(
        self, batch: Batch | None, message: dict[str, Any], request_id: RequestId | None,
        data: bytes | None = None, *, from_application: bool = False,
    ) -> None:
        """Queue a reply, or hold it for its batch's reply array. ``from_application`` marks
        the answer to a request that was delivered as an event (the batch waits for those)."""
        if batch is not None:
            batch.replies.append(message)
            flush_batch(self, batch, answered=from_application)
            return
        if data is None:
            try:
                data = _codec.encode(message)
            except EncodeError:
                message = sanitized_reply(message)
                data = _codec.encode(message)
        self._outbox.append((message, request_id, data))

    def _reply_error(
        self, batch: Batch | None, request_id: RequestId | None, code: int, reason: str,
        method: str | None = None, data: Any = None,
    ) -> None:
        """Answer a request the core refused on its own, and report it."""
        self._queue_reply(batch, _codec.error_message(request_id, code, reason, data), request_id)
        self._events.append(
            MessageRejected(code=code, reason=reason, request_id=request_id, method=method,
                            replied=True)
        )

    def _report(
        self, code: int, reason: str, request_id: RequestId | None = None,
        method: str | None = None,
    ) -> None:
        """Report a refused notification or response (never answered)."""
        self._events.append(
            MessageRejected(code=code, reason=reason, request_id=request_id, method=method)
        )

    # -- processing one input item ----------------------------------------------------------

    def _drop_input(self) -> None:
        """Forget unread input (the connection closed). The item being processed, if any, has
        been taken already; the cursor goes back to the start of the emptied list."""
        self._inbox.clear()
        self._inbox_at = 0

    def _process(self, item: Any) -> None:
        if self._state is State.CLOSED or item is _EOF or item is OVERSIZED:
            _lifecycle.edge_of_input(self, item is _EOF)
            return
        if type(item) is tuple:
            if len(item) == 3:  # parsed by the transport (_receive_parsed)
                self._handle(item[0], None, item[1], item[2])
                return
            value = item[0]
        else:
            try:
                value = _codec.decode(item, self.max_depth)
            except InvalidMessage as exc:
                self._reply_error(None, None, exc.code, exc.message)
                return
        if type(value) is list:
            # The batch rule (_admission.py): only 2025-03-26 allows one (changelog.mdx).
            process_batch(self, value, batch_refusal(self.protocol_version, self.revision))
        else:
            self._handle(value, None)

    def _handle(self, obj: Any, batch: Batch | None, parsed: Parsed | None = None,
                envelope: Admitted | None = None) -> None:
        try:
            kind, msg_id, method, payload = _codec.parse(obj) if parsed is None else parsed
        except InvalidMessage as exc:
            if exc.reply:
                self._reply_error(batch, exc.request_id, exc.code, exc.message, exc.method)
            else:
                self._report(exc.code, exc.message, exc.request_id, exc.method)
            return
        if kind is MessageKind.REQUEST:
            self._on_request(msg_id, method, payload, batch, envelope)  # type: ignore[arg-type]
        elif kind is MessageKind.NOTIFICATION:
            _notifications.on_notification(self, method, payload)  # type: ignore[arg-type]
        else:
            self._on_response(kind, msg_id, payload)

    def _on_request(
        self, request_id: RequestId, method: str, params: dict[str, Any] | None,
        batch: Batch | None, envelope: Admitted | None = None,
    ) -> None:
        incoming = self._incoming
        if request_id in incoming or (
            len(incoming) >= self.max_incoming_requests and method not in PROMPT_METHODS
        ):
            _inflight.refuse_request(self, request_id, method, batch)
            return
        opens_session = method in SESSION_OPENERS
        if (
            self.role is Role.SERVER
            and self._stateless_versions
            and not opens_session
            and (envelope is not None or not self._handshake_versions or has_stateless_meta(params))
        ):
            _stateless_era.on_request(self, request_id, method, params, batch, envelope)
            return
        if opens_session and not self._handshake_versions:
            _lifecycle.refuse_initialize(self, request_id, method, params, batch)
            return
        revision = self._handshake_revision
        rule = incoming_rule(self, request_id, method, revision, self._peer_role, batch)
        if rule is None:
            return
        inp = classify_request(method, sending=False)
        verdict, next_state = transition(self.role, self._state, inp)
        if verdict is not Verdict.ALLOW:
            self._reply_error(batch, request_id, NOT_INITIALIZED_CODE,
                              refusal(inp, self._state), method)
            return
        if not gate_incoming(self, request_id, rule, revision, params, self.capabilities, batch):
            return
        if method == "ping":
            # ping.mdx: the receiver MUST respond promptly with an empty result.
            self._queue_reply(batch, _codec.result_message(request_id, {}), request_id)
            return
        if opens_session:
            _lifecycle.on_initialize(self, request_id, params or {}, next_state, batch)
            return
        if self.sessionless and method in SESSIONLESS_REFUSED:
            _inflight.refuse_request(self, request_id, method, batch)
            return
        if method == "logging/setLevel":
            _notifications.on_set_level(self, request_id, params or {}, batch)
            return
        meta = (params or {}).get("_meta")
        token = meta.get("progressToken") if type(meta) is dict else None
        if token is not None and type(token) is not str and type(token) is not int:
            token = None  # a string or an integer (decoded JSON: bool and float refused)
        subject = subject_of(method, params) if method in _SUBSCRIPTION_METHODS else None
        self._incoming[request_id] = Incoming(method, token, subject, batch)
        if batch is not None:
            batch.waiting += 1
        self._events.append(trusted_request(request_id, method, params))

    def _on_response(self, kind: MessageKind, request_id: RequestId | None, payload: Any) -> None:
        is_result = kind is MessageKind.RESULT
        record = self._outgoing.get(request_id) if request_id is not None else None
        if record is None or request_id is None:
            _inflight.unmatched_response(self, request_id, is_result, payload)
            return
        if self._state is State.PROBING or record.method in SESSION_OPENERS:
            _lifecycle.on_opening_response(self, request_id, record, is_result, payload)
            return
        verdict, _ = transition(self.role, self._state, Input.RECV_RESPONSE)
        if verdict is not Verdict.ALLOW:  # pragma: no cover - responses are allowed when open
            self._report(ErrorCode.INVALID_REQUEST,
                         refusal(Input.RECV_RESPONSE, self._state), request_id)
            return
        self._end_outgoing(request_id, record)
        if is_result and self._state is State.STATELESS:
            _stateless_era.on_result(self, request_id, record, payload)
            return
        if is_result:
            if record.subject is not None:
                _notifications.record_subscription(self, record.method, record.subject)
            self._events.append(trusted_response(request_id, payload, record.method))
        else:
            self._events.append(ErrorResponse(
                request_id=request_id, code=payload["code"], message=payload["message"],
                data=payload.get("data"), method=record.method))

    def _end_outgoing(self, request_id: RequestId, record: Outgoing) -> None:
        self._listens.pop(request_id, None)
        del self._outgoing[request_id]
        self._timers.clear(request_id)
        if record.progress_token is not None:
            self._progress_tokens.pop(record.progress_token, None)


#: The one empty subscription set every connection starts with (CPython makes a new empty
#: frozenset per call).
_NO_URIS: frozenset[str] = frozenset()


def _leaf_paths(tree: Mapping[str, Any], prefix: str = "") -> list[str]:
    """``{"sampling": {"tools": {}}}`` -> ``["sampling.tools"]``."""
    paths: list[str] = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            paths.extend(_leaf_paths(value, path + "."))
        else:
            paths.append(path)
    return paths


@mypyc_attr(allow_interpreted_subclasses=True)
class ClientConnection(Connection):
    """The client side of an MCP connection.

    :param probe_timeout: how long a dual-era client waits for its ``server/discover`` probe
        (see :data:`DEFAULT_PROBE_TIMEOUT`).
    """

    __slots__ = ("probe_timeout",)
    role: ClassVar[Role] = Role.CLIENT

    def __init__(self, *, probe_timeout: float = DEFAULT_PROBE_TIMEOUT, **kwargs: Any) -> None:
        self._configure(**kwargs)
        self.probe_timeout = probe_timeout

    def connect(self, *, now: float | None = None, era: Era | None = None) -> RequestId:
        """Start the connection in whichever era the server speaks.

        * handshake revisions only: ``initialize`` (see :meth:`initialize`);
        * otherwise the era probe (``2026-07-28/basic/versioning.mdx``): ``server/discover``
          with the stateless ``_meta``. A discover result or a recognised stateless-era error
          (:func:`~mcp_sansio.judge_probe`) settles the connection in the stateless era;
          anything else -- any other error, or no answer within ``probe_timeout`` -- falls
          back to ``initialize`` when we support a handshake revision.

        Either way the outcome is one :class:`Initialized` event (for the stateless era it
        carries the discovered capabilities, server info and instructions) or a
        :class:`ConnectionClosed`. The probe itself produces no ``Response`` event. Returns
        the id of the first request sent.

        :param era: a verdict cached from an earlier connection to the same server
            (``versioning.mdx``: clients SHOULD cache it): ``Era.HANDSHAKE`` skips the probe;
            ``Era.STATELESS`` probes without falling back.
        """
        now = self._clock(now)
        if not self._stateless_versions or era is Era.HANDSHAKE:
            return self.initialize(now=now)
        self._no_fallback = era is Era.STATELESS
        verdict, next_state = transition(self.role, self._state, Input.START_PROBE)
        if verdict is not Verdict.ALLOW:
            raise LocalProtocolError(refusal(Input.START_PROBE, self._state))
        self._state = next_state
        return self._queue_request("server/discover", {}, now, self.probe_timeout, None,
                                   False, None, None)

    def retry_with_input(
        self,
        request_id: RequestId,
        responses: Mapping[str, Any] | None = None,
        *,
        now: float | None = None,
        timeout: Any = _DEFAULT,
        max_total: Any = _DEFAULT,
    ) -> RequestId:
        """Answer an :class:`InputRequired`: send the retry as a new request and return its
        id (``mrtr.mdx``: same method and params, a new id, ``inputResponses`` under the same
        keys as the ``inputRequests``, and the ``requestState`` echoed exactly)."""
        retry = self._retries.retry(request_id, responses)
        if isinstance(retry, str):
            raise LocalProtocolError(retry)
        method, params = retry
        new_id = self.send_request(method, params, now=now, timeout=timeout,
                                   max_total=max_total)
        self._retries.done(request_id)
        return new_id

    def listen(
        self, notifications: Mapping[str, Any], *, now: float | None = None,
        timeout: Any = None,
    ) -> RequestId:
        """Open a ``subscriptions/listen`` stream (2026-07-28) with this filter
        (``toolsListChanged``, ``promptsListChanged``, ``resourcesListChanged``: booleans;
        ``resourceSubscriptions``: URIs). A :class:`SubscriptionAcknowledged` event comes
        first, then the honoured notifications as :class:`Notification` events. End it with
        :meth:`cancel` (stdio); the server may end it with a result or a cancel. Listen
        streams are long-lived: no timeout unless one is given."""
        request_id = self.send_request(
            "subscriptions/listen", {"notifications": dict(notifications)},
            now=now, timeout=timeout, max_total=None,
        )
        self._listens.expect(request_id)
        return request_id

    def initialize(self, *, now: float | None = None, timeout: Any = _DEFAULT) -> RequestId:
        """Queue ``initialize`` offering our newest handshake-era revision.

        If its deadline passes the connection closes (``INITIALIZE_TIMEOUT``): initialize is
        never cancelled. Its outcome is an :class:`Initialized` event or a
        :class:`ConnectionClosed` one -- never a ``Response``.
        """
        return _lifecycle.send_initialize(self, now, timeout)


@mypyc_attr(allow_interpreted_subclasses=True)
class ServerConnection(Connection):
    """The server side of an MCP connection.

    :param instructions: sent in the ``InitializeResult`` and the ``DiscoverResult``.
    :param cache_ttl_ms: 2026-07-28 ``ttlMs`` for complete discover/list/read results that do
        not set their own. The default, 0, means "immediately stale": safe for a server whose
        lists change, and still a valid hint.
    :param cache_scope: 2026-07-28 ``cacheScope`` default: ``"private"`` (the safe choice:
        shared caches must not reuse it across users).
    :param request_state_key: when set, the core seals every ``requestState`` it sends in an
        ``input_required`` result and opens (verifies) the one a retry brings back, refusing
        tampered or expired state with -32602 (see :mod:`mcp_sansio._stateless`).
    :param request_state_ttl: how long sealed state stays valid, in seconds. Ten minutes
        leaves a human time to answer an elicitation.
    :param request_state_skew: how far apart, in seconds, the wall clocks of the hosts that
        seal and open a state may be (:data:`~mcp_sansio._stateless.DEFAULT_SKEW`, explained
        there). A state is sealed on the wall clock when the connection has been given one
        (``wall_now=``), else on ``now`` -- good within one host only, and judged without
        any allowance.

    ``request_state_key`` may be one key (bytes) or a :class:`~mcp_sansio.KeyRing`: the ring's
    first key seals, any of its keys opens. :attr:`request_state_principal`, set per request
    by the HTTP server when authorization is on, binds what is sealed to that principal.
    """

    __slots__ = ("request_state_ttl",)
    role: ClassVar[Role] = Role.SERVER

    def __init__(
        self,
        *,
        instructions: str | None = None,
        cache_ttl_ms: int = 0,
        cache_scope: str = "private",
        request_state_key: bytes | KeyRing | None = None,
        request_state_ttl: float = 600.0,
        request_state_skew: float = DEFAULT_SKEW,
        **kwargs: Any,
    ) -> None:
        self._configure(**kwargs)
        if isinstance(cache_ttl_ms, bool) or not isinstance(cache_ttl_ms, int) or (
            cache_ttl_ms < 0
        ):
            raise ValueError("cache_ttl_ms must be an integer >= 0")
        if cache_scope not in ("public", "private"):
            raise ValueError("cache_scope must be 'public' or 'private'")
        self.server_instructions = instructions
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.request_state_key = request_state_key
        self.request_state_ttl = request_state_ttl
        self.request_state_skew = request_state_skew

    def _receive_parsed(self, message: dict[str, Any], parsed: Parsed,
                        envelope: Admitted | None = None, *, now: float | None = None,
                        wall_now: float | None = None) -> None:
        """:meth:`receive_message` of one message (not a batch) that the HTTP server parsed
        already: ``parsed`` is ``_codec.parse(message)``, ``envelope`` (a stateless-era
        request) its admission of the envelope rows (``_admission.py``); neither is done
        again."""
        self._clock(now, wall_now)
        if self._state is not State.CLOSED:
            self._inbox.append((message, parsed, envelope))

    def _seal_request_state(self, state: str, record: Incoming, wall_now: float | None) -> str:
        """Seal ``state`` for the retry of ``record`` (see :mod:`mcp_sansio._stateless`)."""
        key = cast("bytes | KeyRing", self.request_state_key)
        wall = wall_now if wall_now is not None else self._wall_now
        if wall is None:
            return seal_state(key, state, method=record.method, name=record.name,
                              expires_at=self._now + self.request_state_ttl,
                              principal=self.request_state_principal, clock="monotonic")
        return seal_state(key, state, method=record.method, name=record.name,
                          expires_at=wall + self.request_state_ttl, issued_at=wall,
                          principal=self.request_state_principal, clock="wall")

    def send_input_required(
        self,
        request_id: RequestId,
        input_requests: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        *,
        wall_now: float | None = None,
    ) -> None:
        """Answer a 2026-07-28 ``tools/call``, ``prompts/get`` or ``resources/read`` with
        ``input_required`` (``basic/patterns/mrtr.mdx``). Ends the request: the client
        retries with a new id.

        :param input_requests: key -> ``{"method": ..., "params": ...}``, each an
            ``elicitation/create``, ``sampling/createMessage`` or ``roots/list`` that the
            request's declared client capabilities allow.
        :param request_state: opaque state for the retry; sealed when the connection has a
            ``request_state_key``.
        :param wall_now: the wall clock now (seconds since the epoch), which the sealed
            state's expiry counts from; by default the latest ``wall_now`` the connection
            was given (the request's arrival, for an adapter that passes it with input).
        :raises LocalProtocolError: not a stateless MRTR-capable request, nothing asked, or an
            input request the client did not declare a capability for.
        """
        record = self._answerable(request_id)
        if record is None:
            return
        rule = lookup(record.method, self.revision)
        if self._state is not State.STATELESS or rule is None or not rule.mrtr:
            raise LocalProtocolError(
                f"{record.method} cannot answer input_required (only tools/call, prompts/get "
                "and resources/read, in 2026-07-28)"
            )
        if not input_requests and request_state is None:
            raise LocalProtocolError("input_required needs inputRequests and/or requestState")
        inputs = dict(input_requests or {})
        problem = check_input_requests(inputs, self.revision, record.client_capabilities or {})
        if problem is not None:
            raise LocalProtocolError(problem)
        result: dict[str, Any] = {"resultType": "input_required",
                                  "_meta": {META_SERVER_INFO: self.info}}
        if inputs:
            result["inputRequests"] = inputs
        if request_state is not None:
            if self.request_state_key is not None:
                request_state = self._seal_request_state(request_state, record, wall_now)
            result["requestState"] = request_state
        message = _codec.result_message(request_id, result)
        data = self._encode(message)
        del self._incoming[request_id]
        self._queue_reply(record.batch, message, request_id, data, from_application=True)

    def serve_sessionless(self, protocol_version: str | None = None) -> None:
        """Serve one POST of a sessionless HTTP server (see :mod:`mcp_sansio._sessionless`):
        a fresh connection that no later request will reach.

        The capabilities that need a session are withdrawn; sending any request to the
        client raises :class:`~mcp_sansio.SessionlessError`; ``logging/setLevel``
        is refused. With ``protocol_version`` (a handshake-era revision this connection
        supports: what the POST's ``MCP-Protocol-Version`` header named, or
        ``"2025-03-26"`` without one) the connection is operating at once, as if
        ``initialize`` had been answered; the client's capabilities and info are unknown
        (``{}``). Without it, the POST carries ``initialize``, answered as usual.

        :raises LocalProtocolError: the connection is not fresh, or the revision is not one
            of its handshake-era revisions.
        """
        if self._state is not State.IDLE:  # the lifecycle table's one allowing cell
            raise LocalProtocolError("only a fresh connection can serve a sessionless POST: "
                                     f"this one is {self._state.value}")
        if protocol_version is not None and protocol_version not in self._handshake_versions:
            raise LocalProtocolError(
                f"{protocol_version!r} is not a handshake-era revision this connection "
                f"supports ({', '.join(self._handshake_versions) or 'none'})")
        self.sessionless = True
        self.capabilities = withdraw(self.capabilities)
        if protocol_version is None:
            return
        verdict, state = transition(self.role, self._state, Input.ASSUME_INITIALIZED)
        if verdict is not Verdict.ALLOW:  # pragma: no cover - IDLE was checked above
            raise LocalProtocolError(refusal(Input.ASSUME_INITIALIZED, self._state))
        self.protocol_version = protocol_version
        self._state = state

    def require_client_capabilities(
        self, request_id: RequestId, required: Mapping[str, Any]
    ) -> bool:
        """Check that a 2026-07-28 request declared the client capabilities the application
        needs to serve it. If it did not, answer it with -32021 and
        ``data.requiredCapabilities`` (``basic/versioning.mdx``) and return False."""
        record = self._incoming.get(request_id)
        if record is None:
            raise LocalProtocolError(f"no request {request_id!r} is waiting for an answer")
        declared_caps = record.client_capabilities or {}
        if all(declared(declared_caps, path) for path in _leaf_paths(required)):
            return True
        self.send_error(request_id, ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
                        "Missing required client capability",
                        {"requiredCapabilities": dict(required)})
        return False
