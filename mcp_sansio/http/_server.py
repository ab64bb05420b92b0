"""The Streamable HTTP server (both eras) and the legacy HTTP+SSE server, sans I/O.

Theory of operation
-------------------
One :class:`HTTPServer` serves one MCP endpoint over any number of TCP connections. The
adapter gives it bytes per connection (a :class:`ServerChannel`, one per socket) and writes
what :meth:`HTTPServer.data_to_send` returns; the application drains
:meth:`HTTPServer.next_event` -- ``(session, event)`` pairs from every session's connection
-- and answers through ``session.connection``. Time is an argument (``now=``), as in the
core (:meth:`HTTPServer.next_deadline`, :meth:`HTTPServer.handle_timeout`).

The server itself is thin: it reads each channel's wire (a :class:`~mcp_sansio.http._wires.Wire`:
h11, llhttp, or exchange events) request by request and routes each request to the part
that serves it. The parts share a :class:`~mcp_sansio.http._hub.Hub` (options, clock,
timers, queues, the session table) and each holds one mode or concern:
:mod:`~mcp_sansio.http._checks` (request-target, Host/Origin, methods, JSON-RPC bodies),
:mod:`~mcp_sansio.http._gate` (authorization), :mod:`~mcp_sansio.http._parking` (exchanges
waiting on an asynchronous answer), :mod:`~mcp_sansio.http._streams` (routing and SSE),
:mod:`~mcp_sansio.http._sessions` (handshake-era sessions), :mod:`~mcp_sansio.http._oneshot`
(stateless era and sessionless mode), :mod:`~mcp_sansio.http._legacy` (HTTP+SSE) and
:mod:`~mcp_sansio.http._relay` (shared stores). The options are one
:class:`~mcp_sansio.http.ServerConfig`. See :doc:`/http` for the call order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._capabilities import SESSION_OPENERS
from .._codec import MessageKind
from .._connection import ServerConnection
from .._errors import NEED_DATA, ErrorCode, NeedData
from .._events import Event
from .._stateless import has_stateless_meta
from ._checks import RequestChecks
from ._config import (
    DEFAULT_KEEPALIVE_INTERVAL,
    DEFAULT_MAX_BODY_SIZE,
    DEFAULT_MAX_PENDING_MESSAGES,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_RETRY_MS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    MAX_SESSION_ID_PREFIX,
    ResponseMode,
    ServerConfig,
)
from ._exchange_wire import ExchangeWire
from ._gate import AuthGate
from ._headers import accepts, media_type
from ._hub import Hub, ServerChannel, Session, SessionEnd, _Stream
from ._legacy import LegacySSE
from ._oneshot import OneShot
from ._park import DecisionNeeded
from ._parking import Parking
from ._relay import SharedRelay
from ._sessions import SessionTable
from ._shared import DropSession, Lookup, NumberedEvents, SaveSession, SharedEffect
from ._store import EventStore, InMemoryEventStore
from ._streams import Streams
from ._wire import HTTPRequest
from ._wires import wire_factory

if TYPE_CHECKING:
    from ..auth._resource import ProtectedResource

__all__ = [
    "DEFAULT_KEEPALIVE_INTERVAL",
    "DEFAULT_MAX_BODY_SIZE",
    "DEFAULT_MAX_PENDING_MESSAGES",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_RETRY_MS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "MAX_SESSION_ID_PREFIX",
    "HTTPServer",
    "ResponseMode",
    "ServerChannel",
    "ServerConfig",
    "Session",
    "SessionEnd",
]


#: :func:`_accepts_post` by ``Accept`` value: a client sends the same value on every request
#: and a server sees a handful; bounded like ``accepts``'s own memo.
_POST_ACCEPTS: dict[str | None, bool] = {}


def _accepts_post(accept: str | None) -> bool:
    """Whether ``Accept`` lists both media types a POST may be answered with (transports.mdx:
    the client MUST list application/json and text/event-stream), remembered."""
    known = accepts(accept, "application/json") and accepts(accept, "text/event-stream")
    if len(_POST_ACCEPTS) >= 128:
        _POST_ACCEPTS.clear()
    _POST_ACCEPTS[accept] = known
    return known


class HTTPServer:
    """A Streamable HTTP MCP server (both eras), optionally with the legacy HTTP+SSE
    endpoints, as a state machine with no I/O. See :doc:`/http` for the call order.

    :param connection_factory: makes the :class:`~mcp_sansio.ServerConnection` of each new
        session (and of each stateless-era request). It is called once more at construction:
        that connection's ``versions`` decide which eras the server speaks, and its
        ``max_depth`` bounds the JSON the server decodes.
    :param config: the options (:class:`~mcp_sansio.http.ServerConfig`, where each
        is documented with its default).
    :param new_session_id: returns a fresh session id: visible ASCII (0x21-0x7E), globally
        unique and unguessable (``secrets.token_urlsafe(32)`` in an adapter). Required for
        the handshake era unless ``sessionless``.
    :param options: options given one by one instead of (or on top of) ``config``: the
        fields of :class:`~mcp_sansio.http.ServerConfig` by name.
    """

    def __init__(
        self,
        connection_factory: Callable[[], ServerConnection],
        config: ServerConfig | None = None,
        *,
        new_session_id: Callable[[], str] | None = None,
        **options: Any,
    ) -> None:
        if config is None:
            config = ServerConfig(**options)
        elif options:
            config = config.replace(**options)
        self._new_wire = wire_factory(config.wire)  # raises now when the parser is missing
        self.hub = hub = Hub(self, config, connection_factory, new_session_id)
        if hub._handshake_versions and new_session_id is None and not config.sessionless:
            raise ValueError("new_session_id is required to serve the handshake era")
        self.parking = Parking(hub)
        self.checks = RequestChecks(hub)
        self.streams = Streams(hub)
        self.gate = AuthGate(hub, self.checks, self.parking)
        self.relay = SharedRelay(hub, self.streams, self.parking)
        self.table = SessionTable(hub, self.checks, self.gate, self.streams, self.relay)
        self.oneshot = OneShot(hub, self.streams, self.table)
        self.legacy = LegacySSE(hub, self.checks, self.gate, self.streams, self.table)
        if config.resumable:
            hub.event_store = (NumberedEvents(self.relay._effects) if config.shared
                               else config.event_store if config.event_store is not None
                               else InMemoryEventStore())
        # The hub's queues, read on every request, and the tables tests and tools look
        # into: the same objects the parts keep, under the server's names.
        self._ready = hub._ready
        self._handshake_versions = hub._handshake_versions
        self._stateless_versions = hub._stateless_versions
        self._dirty = hub._dirty
        self._pending_channels = hub._pending_channels
        self._writable = hub._writable
        self._timers = hub._timers
        self._parked = self.parking._parked
        self._relays = self.relay._relays
        self._following = self.relay._following

    # -- the options -----------------------------------------------------------------------------

    @property
    def config(self) -> ServerConfig:
        """The options (:class:`~mcp_sansio.http.ServerConfig`)."""
        return self.hub.config

    @property
    def connection_factory(self) -> Callable[[], ServerConnection]:
        return self.hub.connection_factory

    @property
    def new_session_id(self) -> Callable[[], str] | None:
        return self.hub.new_session_id

    @property
    def event_store(self) -> EventStore | None:
        """Where resumable SSE events go (None when streams are not resumable)."""
        return self.hub.event_store

    @property
    def path(self) -> str:
        return self.hub.config.path

    @property
    def shared(self) -> bool:
        return self.hub.config.shared

    @property
    def sessionless(self) -> bool:
        return self.hub.config.sessionless

    @property
    def stream_tag(self) -> str:
        return self.hub.config.stream_tag

    @stream_tag.setter
    def stream_tag(self, tag: str) -> None:
        """A worker forked after the server was built draws a tag of its own."""
        self._reconfigure(self.hub.config.replace(stream_tag=tag))

    @property
    def session_id_prefix(self) -> str:
        return self.hub.config.session_id_prefix

    @property
    def auth(self) -> ProtectedResource | None:
        return self.hub.config.auth

    @property
    def wire(self) -> str:
        return self.hub.config.wire

    @property
    def max_body_size(self) -> int:
        return self.hub.config.max_body_size

    @property
    def max_header_count(self) -> int:
        return self.hub.config.max_header_count

    @property
    def max_target_length(self) -> int:
        return self.hub.config.max_target_length

    @property
    def session_idle_timeout(self) -> float | None:
        return self.hub.config.session_idle_timeout

    @property
    def decision_timeout(self) -> float:
        return self.hub.config.decision_timeout

    @property
    def max_sessions(self) -> int:
        return self.hub.config.max_sessions

    @max_sessions.setter
    def max_sessions(self, value: int) -> None:
        self._reconfigure(self.hub.config.replace(max_sessions=value))

    def _reconfigure(self, config: ServerConfig) -> None:
        """Hand a replaced config to the hub and every part (each reads its own reference
        on the request path)."""
        self.hub.config = self.parking.config = self.checks.config = config
        self.streams.config = self.gate.config = self.relay.config = config
        self.table.config = self.oneshot.config = self.legacy.config = config

    @property
    def on_decision_needed(self) -> Callable[[DecisionNeeded], None] | None:
        """Called with each :class:`~mcp_sansio.http._park.DecisionNeeded` as the exchange
        parks, when the adapter sets it; else they wait in :meth:`pending_decisions`."""
        return self.parking.on_decision_needed

    @on_decision_needed.setter
    def on_decision_needed(self, callback: Callable[[DecisionNeeded], None] | None) -> None:
        self.parking.on_decision_needed = callback

    # -- connections -----------------------------------------------------------------------------

    def new_channel(self, *, now: float | None = None) -> ServerChannel:
        """A new TCP connection was accepted: its channel."""
        self.hub._clock(now)
        if self._new_wire is not None:  # a wire other than h11 (the wire= option)
            config = self.hub.config
            return ServerChannel(self, self._new_wire(
                max_body_size=config.max_body_size, max_header_size=config.max_header_size,
                max_header_count=config.max_header_count,
                max_target_length=config.max_target_length))
        return ServerChannel(self)

    def new_exchange(self, *, now: float | None = None) -> ServerChannel:
        """A new connection whose requests a parser hands over as exchange events (see
        :mod:`mcp_sansio.http._exchange`): feed it with :meth:`ServerChannel.receive_event`
        and write what :meth:`ServerChannel.events_to_send` gives."""
        self.hub._clock(now)
        return ServerChannel(self, ExchangeWire(max_body_size=self.hub.config.max_body_size))

    @property
    def sessions(self) -> Mapping[str, Session]:
        """The live handshake-era and legacy sessions, by id."""
        return self.hub._sessions

    def session(self, session_id: str) -> Session | None:
        return self.hub._sessions.get(session_id)

    # -- draining ------------------------------------------------------------------------------

    def next_event(self) -> tuple[Session, Event] | NeedData:
        """The next ``(session, event)`` pair from any session's connection, or
        ``NEED_DATA``. Each call first routes what the sessions handed out so far have
        queued, and reads requests that were waiting on a channel."""
        while True:
            if self._dirty:
                self.streams._flush_dirty()
            if self._pending_channels:
                channels = list(self._pending_channels)
                self._pending_channels.clear()
                for channel in channels:
                    self._process_channel(channel)
                continue
            if not self._ready:
                if self._dirty:
                    continue
                return NEED_DATA
            session = self._ready[0]
            event = session.connection.next_event()
            self._dirty[session] = None
            if event is NEED_DATA:
                self._ready.popleft()
                session._queued = False
                for stream in session._unprocessed:
                    stream.processed = True
                session._unprocessed.clear()
                continue
            self.table._observe(session, event)
            return session, event

    def data_to_send(self) -> list[tuple[ServerChannel, bytes]]:
        """``(channel, bytes)`` for every channel with something to write, and ``(channel,
        b"")`` once for a channel that closed: close its socket after writing."""
        if self._dirty:
            self.streams._flush_dirty()
        out: list[tuple[ServerChannel, bytes]] = []
        held = []
        for channel in list(self._writable):
            if channel._held:
                held.append(channel)
                continue
            data = channel.wire.data_to_send()
            if channel.wire.closed:
                if channel._gone and not data:
                    continue
                channel._gone = True
                if channel.stream is not None:
                    self.streams._detach(channel.stream)
            elif not data:
                continue
            out.append((channel, data))
        self._writable.clear()
        for channel in held:
            self._writable[channel] = None
        return out

    @property
    def needs_drain(self) -> bool:
        """Whether :meth:`next_event` or :meth:`data_to_send` has something now: a session
        with events or output, a channel to read again, or bytes to write (a channel whose
        answer waits for a store write does not count). A pump drains until it is False,
        whatever happened meanwhile (a handler sent, a write failed and the channel was
        told): the server's state says so, not flags the pump and its callers pass."""
        hub = self.hub
        if hub._ready or hub._dirty or hub._pending_channels:
            return True
        return any(not channel._held for channel in hub._writable)

    def next_deadline(self) -> float | None:
        """The earliest time :meth:`handle_timeout` has something to do, or None."""
        timers = self.hub._timers
        return timers[0][0] if timers else None

    def handle_timeout(self, now: float) -> None:
        """Expire idle sessions, write keep-alives and fire the connections' timers."""
        now = self.hub._clock(now)
        timers = self.hub._timers
        while timers and timers[0][0] <= now:
            _, _, session, kind = heapq.heappop(timers)
            if kind == "keepalive":
                self.streams._keepalive(now)
            elif kind == "decision":
                self.parking._expire_decisions(now)
            elif session is None or session._done:
                continue
            elif kind == "open":
                self.streams._open_deferred(session, now)
            elif kind == "expiry":
                session._expiry_at = None
                self.table._check_expiry(session, now)
            else:
                session._timer_at = None
                session.connection.handle_timeout(now)
                self.hub._mark_ready(session)


    def end_session(self, session: Session | str, *, now: float | None = None) -> None:
        """End a session on the server's initiative: later requests for it get 404."""
        self.table.end_session(session, now=now)

    def broadcast(self, method: str, params: Mapping[str, Any] | None = None) -> int:
        """Send a notification to every session that may receive it (e.g.
        ``notifications/tools/list_changed``): handshake sessions that are operating, and
        stateless ``subscriptions/listen`` streams that asked for it. Returns how many
        sessions it was offered to."""
        return self.table.broadcast(method, params)

    # -- exchanges waiting on a decision (http/_parking.py) -------------------------------------

    def pending_decisions(self) -> list[DecisionNeeded]:
        """The decisions parked exchanges wait on, each handed out once (when no
        ``on_decision_needed`` callback took them): answer each with :meth:`decide`."""
        return self.parking.pending_decisions()

    def decide(self, handle: int, answer: Any, *, now: float | None = None,
               wall_time: float | None = None) -> bool:
        """The answer to a :class:`~mcp_sansio.http._park.DecisionNeeded` (a value, or the
        exception that stopped the adapter from getting one): the exchange goes on, then
        its connection's next request. False when the exchange is no longer waiting (its
        client left, or it timed out): the answer is dropped. ``wall_time`` as for
        :meth:`ServerChannel.receive_data`. An exception from here is a bug, raised after
        the channel was failed (as :meth:`ServerChannel.receive_data` does)."""
        return self.parking.decide(handle, answer, now=now, wall_time=wall_time)

    # -- shared state (shared=True: http/_relay.py) ---------------------------------------------

    def shared_effects(self) -> list[SharedEffect]:
        """What to store, drop and look up in the shared stores, in order (``shared``
        servers; empty otherwise). Each :class:`~mcp_sansio.http._shared.Lookup` must be
        answered with :meth:`resolve`; the others need no answer."""
        return self.relay.shared_effects()

    def resolve(self, lookup: Lookup, answer: Any, *, now: float | None = None) -> bool:
        """The store's answer to ``lookup``: a session record (or None: unknown) or a
        replay (``EventLog.replay``'s result). The waiting request is handled with it and
        its connection read on; drain :meth:`next_event` and :meth:`data_to_send` after.
        False when it no longer waits (answered already, timed out -- it was then answered
        "not found" -- or its client left)."""
        return self.relay.resolve(lookup, answer, now=now)

    def stored(self, effect: SaveSession | DropSession, *, now: float | None = None,
               failure: BaseException | None = None) -> None:
        """``effect`` is done in the table, or the store failed it (``failure``: a new
        session's ``initialize`` is then answered 503 with Retry-After and the session
        ended here; any other change lives on this worker only): release the answers it
        held; drain :meth:`data_to_send` after."""
        self.relay.stored(effect, now=now, failure=failure)

    def forget_session(self, session_id: str, *, now: float | None = None) -> None:
        """Another worker ended ``session_id`` (the event bus said so): end this worker's
        copy, without telling the store again."""
        self.relay.forget_session(session_id, now=now)

    def refresh_session(self, session_id: str, record: Any, *,
                        now: float | None = None) -> None:
        """Another worker saved a newer record of ``session_id`` (the event bus said so):
        bring this worker's copy, if any, up to date. A record that does not fit the copy
        ends the copy here."""
        self.relay.refresh_session(session_id, record, now=now)

    def relay_event(self, event_id: str, data: bytes, *, now: float | None = None) -> bool:
        """An event another worker stored (the bus's ``events`` topic): sent on if this
        worker relays that stream, or kept for a replay being read. True when it was wanted
        here. Drain :meth:`data_to_send` after."""
        return self.relay.relay_event(event_id, data, now=now)

    def worker_gone(self, tag: str, *, now: float | None = None) -> int:
        """The worker ``tag`` is gone (the adapter judges with
        :class:`~mcp_sansio.http._shared.WorkerLiveness`): each relay of one of its streams
        ends here, and later resumptions of them replay the log and end. Returns how many
        relays ended; drain :meth:`data_to_send` after."""
        return self.relay.worker_gone(tag, now=now)

    def worker_back(self, tag: str) -> None:
        """A worker counted gone was heard again: its streams are relayed live again."""
        self.relay.worker_back(tag)

    def relayed_writers(self) -> set[str]:
        """The tags of the workers whose streams are relayed here now (what the adapter
        checks for liveness)."""
        return self.relay.relayed_writers()

    def deliver_answer(self, session_id: str, message: Any, *,
                       now: float | None = None) -> bool:
        """A client's answer to one of this worker's requests, posted on another worker
        (:class:`~mcp_sansio.http._shared.ForwardAnswer`): handed to the session's
        connection. False when this worker has no live copy of the session."""
        return self.relay.deliver_answer(session_id, message, now=now)

    # -- what the parts and channels say upward (http/_hub.py, Owner) ---------------------------

    def _process_channel(self, channel: ServerChannel) -> None:
        wire = channel.wire
        while channel.stream is None and channel._parked is None and not wire.closed:
            request = wire.next_request()
            if request is None:
                break
            channel._request = request
            self._handle(channel, request)
            if _unparked(channel):  # a call: _handle may have parked it since the test above
                channel._answers.clear()
        self._writable[channel] = None


    def _detach(self, stream: _Stream) -> None:
        self.streams._detach(stream)

    def _unpark(self, channel: ServerChannel) -> None:
        """The client left while its exchange waited on an answer: forget it (a later
        answer is ignored)."""
        parked, channel._parked = channel._parked, None
        if parked is not None:
            self.parking._parked.pop(parked.need.handle, None)
            channel._answers.clear()
            question = parked.need.question
            if isinstance(question, Lookup) and question.kind == "replay":
                self.relay._unfollow(channel, question.key)

    def _end_session(self, session: Session, reason: SessionEnd) -> None:
        self.table._end_session(session, reason)

    def _discard_session(self, session: Session) -> None:
        self.table._discard_session(session)

    def _end_relay(self, relay: _Stream) -> None:
        self.relay._end_relay(relay)

    def _save(self, session: Session) -> None:
        self.relay._save(session)

    def _resume_relay(self, channel: ServerChannel, session: Session, last_event_id: str,
                      stream_id: str, events: list[tuple[str, bytes]]) -> None:
        self.relay._resume_relay(channel, session, last_event_id, stream_id, events)

    # -- one request -----------------------------------------------------------------------------

    def _handle(self, channel: ServerChannel, request: HTTPRequest) -> None:
        """Route one request to the part that serves it, after the checks that come first
        (request-target, path, Host/Origin, the token)."""
        config = self.hub.config
        method = request.method
        if (request.target[:1] != "/" or method == "CONNECT") and not self.checks._other_target(
                channel, request):
            return
        path = request.path
        if path in self.gate._metadata_paths:
            self.gate._metadata(channel, request)
            return
        legacy = config.legacy_sse_path is not None and path in (
            config.legacy_sse_path, config.legacy_post_path)
        if path != config.path and not legacy:
            self.hub._error(channel, 404, ErrorCode.INVALID_REQUEST,
                            "Not Found: no MCP endpoint here")
            return
        refusal = self.checks._check_host_origin(request.headers, request.authority)
        if refusal is not None:
            self.hub._error(channel, 403, ErrorCode.INVALID_REQUEST, refusal)
            return
        if config.auth is not None and not self.gate._authorized(channel, request):
            return
        if legacy:
            if path == config.legacy_sse_path and method == "GET":
                self.legacy._legacy_get(channel, request)
            elif path == config.legacy_post_path and method == "POST":
                self.legacy._legacy_post(channel, request)
            else:
                allow = "GET" if path == config.legacy_sse_path else "POST"
                self.hub._error(channel, 405, ErrorCode.INVALID_REQUEST,
                            "Method Not Allowed", headers=[("allow", allow)])
            return
        allowed = self.checks._sessions_allowed
        if method == "POST":
            self._post(channel, request)
        elif method in ("GET", "HEAD") and allowed(config.enable_get, request):
            self.table._get(channel, request)
        elif method == "DELETE" and allowed(config.enable_delete, request):
            self.table._delete(channel, request)
        else:
            # RFC 9110 section 15.5.6: a 405 lists the target's methods in Allow.
            self.hub._error(channel, 405, ErrorCode.INVALID_REQUEST, "Method Not Allowed",
                        headers=[("allow", self.checks._allow())])

    def _post(self, channel: ServerChannel, request: HTTPRequest) -> None:
        """A POST on the endpoint: its era decides which part serves it."""
        config = self.hub.config
        headers = request.headers
        fields = headers.decoded()  # (lower-case names: one dict access each)
        content_type = fields.get("content-type")
        if content_type != "application/json" and media_type(content_type) != "application/json":
            self.hub._error(channel, 415, ErrorCode.INVALID_REQUEST,
                        "Unsupported Media Type: the body must be application/json")
            return
        accept = fields.get("accept")
        known = _POST_ACCEPTS.get(accept)  # (a client sends one Accept value every time)
        if known is None:
            known = _accepts_post(accept)
        if not known:
            self.hub._error(channel, 406, ErrorCode.INVALID_REQUEST,
                        "Not Acceptable: Accept must list application/json and "
                        "text/event-stream")
            return
        parsed = self.checks._parse_body(channel, request.body)
        if parsed is None:
            return
        value, items = parsed
        if config.tool_scopes is not None and self.gate._tool_scope_refused(channel, items):
            return
        version = fields.get("mcp-protocol-version")
        if version is not None and version in self._stateless_versions:
            # The header names a stateless revision: the request is judged in that era, even
            # an initialize (which 2026-07-28 does not have) or one missing its _meta.
            self.oneshot._post_stateless(channel, request, value, items, version)
            return
        single = type(value) is dict
        first = items[0]
        requests = (first[0] is MessageKind.REQUEST if single
                    else any(item[0] is MessageKind.REQUEST for item in items))
        # The method table's in_session column: the request that opens a session
        # (initialize) is never in a batch and opens a session here (lifecycle.mdx).
        if single and first[0] is MessageKind.REQUEST and first[2] in SESSION_OPENERS:
            if self._handshake_versions and config.sessionless:
                self.oneshot._sessionless_initialize(channel, value, first[1])  # type: ignore[arg-type]
            elif self._handshake_versions:
                self.table._post_initialize(channel, value, first[1])  # type: ignore[arg-type]
            else:
                # A stateless-only server: the connection refuses initialize naming its
                # versions (versioning.mdx), answered 400.
                self.oneshot._serve_stateless(channel, value, first[1], first[2])  # type: ignore[arg-type]
            return
        if version is not None and version not in self._handshake_versions:
            self.checks._unsupported_version(channel, version, first[1] if requests else None)
            return
        if not self._handshake_versions or (
            version is None and single and first[0] is MessageKind.REQUEST
            and has_stateless_meta(first[3])
        ):
            self.hub._error(channel, 400, ErrorCode.HEADER_MISMATCH,
                        "Header mismatch: the MCP-Protocol-Version header is required",
                        first[1] if first[0] is MessageKind.REQUEST else None)
            return
        if (self._stateless_versions and single and first[0] is MessageKind.REQUEST
                and fields.get("mcp-session-id") is None and has_stateless_meta(first[3])):
            # Per-request _meta selects the stateless era, which does not carry this
            # handshake-era revision: -32022 (2026-07-28 basic/versioning.mdx, "Protocol
            # Version Negotiation" and "Backward Compatibility ...": a dual-era server).
            self.checks._unsupported_version(channel, version, first[1])  # type: ignore[arg-type]
            return
        if config.sessionless:
            self.oneshot._post_sessionless(channel, headers, value, items, version)
            return
        session = self.table._session_for(channel, headers,
                                          first[1] if single and requests else None)
        if session is None:
            return
        self.table._post_to_session(channel, session, value, items)


def _unparked(channel: ServerChannel) -> bool:
    """No exchange of ``channel`` is parked. A call, not an inline test, so that the type
    checker (and the compiler after it) does not carry an earlier test's answer across a call
    that may have parked one."""
    return channel._parked is None
