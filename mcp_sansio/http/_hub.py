"""What every part of the HTTP server shares: its sessions, streams, channels and clock.

Theory of operation
-------------------
The server (:mod:`mcp_sansio.http._server`) is a thin composition of parts, one per mode or
concern (streams and SSE, the session table, one-shot admission, legacy HTTP+SSE, the
shared-store relay, auth and parking, the request checks). They meet here, in the
:class:`Hub`: the options (a :class:`~mcp_sansio.http.ServerConfig`), the clock
(``now`` only moves forward), the timer heap, the queues the server drains (sessions with
events ready, sessions whose output must be routed, channels to read again, channels with
bytes to write) and the table of live sessions; and in the records they all handle --
:class:`Session`, its :class:`_Stream` s, and the :class:`ServerChannel` of each TCP
connection. A part calls down (the hub, the parts below it) and says upward only through
:class:`Owner`, the few calls the server itself answers, so that the modules import one
another in one direction. Nothing here reads a socket or a clock.
"""

from __future__ import annotations

import enum
import hashlib
import heapq
import itertools
import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from .. import _codec
from .._compiled import mypyc_attr
from .._connection import ServerConnection
from .._events import RequestId
from .._versions import FEATURES, Era
from ._config import ServerConfig
from ._exchange import ExchangeInput, ExchangeOutput, PeerClosed
from ._exchange_wire import ExchangeWire
from ._park import Parked
from ._shared import new_stream_id
from ._store import EventStore
from ._wire import HTTPRequest, ServerWire
from ._wires import Wire

if TYPE_CHECKING:
    from ..auth._access import AccessInfo

__all__ = ["Hub", "Owner", "ServerChannel", "Session", "SessionEnd"]

_JSON = ("content-type", "application/json")
#: The time of what never happened: one float shared by every session (each ``-math.inf``
#: written out is a float object of its own).
_NEVER = -math.inf


class SessionEnd(enum.Enum):
    """Why a session ended."""

    #: The client sent DELETE.
    DELETED = "deleted"
    #: No request and no open stream for ``session_idle_timeout`` seconds.
    EXPIRED = "expired"
    #: The application called :meth:`HTTPServer.end_session`.
    CLOSED = "closed"
    #: Legacy HTTP+SSE: the client closed the session's SSE stream.
    DISCONNECTED = "disconnected"


class _Kind(enum.Enum):
    POST = "post"  # the answer to one request POST (or a 2025-03-26 batch)
    STANDALONE = "standalone"  # the session's GET stream
    LISTEN = "listen"  # 2026-07-28 subscriptions/listen


class _Stream:
    """One logical response stream: a POST's answer or the standalone stream. It outlives
    the HTTP response carrying it when that breaks (resumption)."""

    __slots__ = (
        "channel", "finished", "id", "init", "kind", "open_at", "pending", "processed",
        "relayed", "resumable", "sent", "session", "started",
    )

    def __init__(self, session: Session, kind: _Kind, stream_id: str) -> None:
        self.session = session
        self.kind = kind
        self.id: str = stream_id
        self.channel: ServerChannel | None = None
        #: Client request ids whose responses belong here (a dict used as an ordered set:
        #: an empty set is 216 bytes, an empty dict 64, and every session's standalone
        #: stream holds one).
        self.pending: dict[RequestId, None] = {}
        self.started = False  # the SSE head went out
        self.sent = False  # anything went out (or into the store) for it
        self.finished = False
        self.processed = False  # the connection has processed the request(s)
        self.resumable = False  # events get ids and go through the event store
        self.init = False  # the answer to initialize: carries Mcp-Session-Id
        #: A deferred SSE start (2026-07-28, SSE mode): when the head goes out if no
        #: message came by then (see HTTPServer._defer_sse).
        self.open_at: float | None = None
        #: A shared server's relay of a stream another worker writes (resumed here): the
        #: sequence number of the last event sent on it; None for a stream of this worker.
        self.relayed: int | None = None


# A Python class in the compiled build too: the app layer keys its state by session in a
# WeakKeyDictionary, and a native class takes no weak reference.
@mypyc_attr(native_class=False)
class Session:
    """One MCP session: a :class:`~mcp_sansio.ServerConnection` and its streams.

    Handshake-era sessions have an ``id`` (sent as ``Mcp-Session-Id``); a stateless-era
    request gets a session of its own with ``id`` None, for as long as its stream lives.

    Answer through :attr:`connection`. Messages sent while handling an event the server
    handed out are picked up on the next :meth:`HTTPServer.next_event` call; anything sent at
    another time (a handler that finishes later) needs :meth:`flush`.
    """

    # Slots, not a __dict__: a server holds one per session (docs/architecture.rst,
    # "Memory of an idle session").
    __slots__ = (
        "__weakref__",
        "_backlog",
        "_done",
        "_expiry_at",
        "_holding",
        "_hub",
        "_last_active",
        "_prefix",
        "_queued",
        "_quiet",
        "_routes",
        "_saved",
        "_saved_at",
        "_standalone",
        "_stream_count",
        "_streams",
        "_timer_at",
        "_unprocessed",
        "attached",
        "auth",
        "connection",
        "ended",
        "era",
        "id",
        "legacy",
    )

    def __init__(
        self, hub: Hub, session_id: str | None, connection: ServerConnection,
        era: Era, *, legacy: bool = False,
    ) -> None:
        self._hub = hub
        #: The session id (None for a stateless-era request).
        self.id = session_id
        #: The MCP connection of this session.
        self.connection = connection
        #: The era this session speaks.
        self.era = era
        #: Whether it is a legacy HTTP+SSE (2024-11-05) session.
        self.legacy = legacy
        #: Why the session ended (None while it lives).
        self.ended: SessionEnd | None = None
        #: Who the latest request of the session spoke for, when the server has ``auth``
        #: (every request of a session is the same principal's; the scopes may grow).
        self.auth: AccessInfo | None = None
        #: Whatever the code driving the server keeps with this session (an adapter's
        #: session logic); the HTTP server never reads it.
        self.attached: Any = None
        self._prefix = (
            hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            if session_id is not None else ""
        )
        self._stream_count = 0  # streams opened (numbers their ids)
        self._routes: dict[RequestId, _Stream] = {}
        self._streams: dict[str, _Stream] = {}  # live (unfinished) streams by stream id
        self._unprocessed: list[_Stream] = []
        self._standalone: _Stream | None = None
        #: Messages for a standalone stream no GET is reading yet; made on first use (an
        #: empty deque is 760 bytes, and most sessions never need one).
        self._backlog: deque[bytes] | None = None
        self._queued = False  # in the server's ready queue
        self._last_active = _NEVER
        self._expiry_at: float | None = None  # scheduled expiry check
        self._timer_at: float | None = None  # scheduled connection timer check
        self._done = False  # fully retired (ConnectionClosed delivered, or stateless done)
        # A shared server (_shared.py): the record last saved and when; whether the session
        # ends here only (another worker ended it).
        self._saved: dict[str, Any] | None = None
        self._saved_at = _NEVER
        #: Channels whose answers wait until what their request changed is stored (a
        #: tuple, replaced on change: the empty one is shared).
        self._holding: tuple[ServerChannel, ...] = ()
        self._quiet = False

    def __repr__(self) -> str:
        # A session id is a bearer credential: a repr (which may reach a log) shows a short
        # prefix of it only, enough to tell sessions apart.
        shown = "None" if self.id is None else f"{self.id[:8]!r}..."
        return f"<Session id={shown} era={self.era.value}{' legacy' if self.legacy else ''}>"

    def flush(self) -> None:
        """Route what :attr:`connection` has queued onto this session's streams. Call it
        after sending on the connection outside the handling of an event of this session
        (then drain :meth:`HTTPServer.next_event` and :meth:`HTTPServer.data_to_send`)."""
        self._hub._dirty[self] = None

    @property
    def open_streams(self) -> int:
        """How many HTTP responses are streaming for this session right now."""
        count = sum(1 for s in self._streams.values() if s.channel is not None)
        if self._standalone is not None and self._standalone.channel is not None:
            count += 1
        return count

    def _new_stream(self, kind: _Kind) -> _Stream:
        self._stream_count += 1
        new_id = new_stream_id(self._prefix, self._hub.config.stream_tag, self._stream_count)
        stream = _Stream(self, kind, new_id)
        self._streams[new_id] = stream
        return stream

    def _idle(self) -> bool:
        if self._streams:
            return False
        return self._standalone is None or self._standalone.channel is None


class ServerChannel:
    """One TCP connection to the server. Feed it what the socket reads; write what
    :meth:`HTTPServer.data_to_send` (or :meth:`data_to_send`) gives for it; close the socket
    when :attr:`closed` is true and its data is written."""

    def __init__(self, server: Owner, wire: Wire | None = None) -> None:
        self._server = server
        #: What cuts the connection into requests and writes the answers: the h11 wire for a
        #: socket's bytes, or an :class:`~mcp_sansio.http._exchange_wire.ExchangeWire` for a
        #: parser that hands over exchange events (:meth:`HTTPServer.new_exchange`), or the
        #: httptools wire (``HTTPServer(wire="httptools")``). The server's request handling
        #: uses only what they have in common.
        config = server.hub.config
        self.wire: Wire = (
            wire if wire is not None else ServerWire(
                max_body_size=config.max_body_size, max_header_size=config.max_header_size,
                max_header_count=config.max_header_count,
                max_target_length=config.max_target_length))
        self.stream: _Stream | None = None
        #: The principal of the request being handled (servers with ``auth``).
        self.auth: AccessInfo | None = None
        self._wall: float | None = None
        self._gone = False  # the server has reported the channel closed
        #: The exchange waiting on an asynchronous answer, if any (http/_park.py): a token
        #: decision, a session record, a replay. Nothing more is read meanwhile.
        self._parked: Parked[ServerChannel] | None = None
        #: The answers the request being handled came back with, by (kind, key): handling
        #: starts over with them in hand, and they are dropped once it is handled.
        self._answers: dict[tuple[str, str], Any] = {}
        self._request: HTTPRequest | None = None
        self._held = False  # its output waits for a store write (HTTPServer.stored)
        #: A shared server's answer to ``initialize`` (status, headers, body, request id),
        #: kept unwritten until the new session's record is stored: if the store fails,
        #: the client is told 503 instead of getting a session no other worker can find.
        self._deferred: tuple[int, list[tuple[str, str]], bytes, Any] | None = None

    def __repr__(self) -> str:
        return f"<ServerChannel at 0x{id(self):x}{' closed' if self.closed else ''}>"

    @property
    def closed(self) -> bool:
        """True when the connection is over: close the socket after writing what is left."""
        return self.wire.closed

    def receive_data(self, data: bytes, *, now: float | None = None,
                     wall_time: float | None = None) -> None:
        """Bytes read from the socket; ``b""`` is end of file. ``wall_time``: seconds since
        the epoch, which access tokens are judged at (servers with ``auth``; default
        ``now``) and a stateless-era ``requestState`` is sealed and opened on (without it,
        on ``now``, which holds within one host only: see :doc:`/keys`).

        Bad input is answered, never raised. An exception from here is a bug (in the server
        or in code it calls): it is raised *after* this channel was closed -- answered
        ``500`` first when no response had started -- so the caller logs it, writes what
        :meth:`data_to_send` has and closes this socket; other channels are unaffected."""
        server = self._server
        server.hub._clock(now)
        self._wall = wall_time
        try:
            self.wire.receive_data(data)
            self._received(not data)
        except Exception:
            self.fail()
            raise

    def receive_event(self, event: ExchangeInput, *, now: float | None = None,
                      wall_time: float | None = None) -> None:
        """An exchange event from a parser (a channel from :meth:`HTTPServer.new_exchange`):
        as :meth:`receive_data`, with :class:`~mcp_sansio.http._exchange.PeerClosed` for end
        of file."""
        wire = self.wire
        if not isinstance(wire, ExchangeWire):
            raise TypeError("receive_event needs a channel from HTTPServer.new_exchange")
        server = self._server
        server.hub._clock(now)
        self._wall = wall_time
        try:
            wire.receive_event(event)
            self._received(isinstance(event, PeerClosed))
        except Exception:
            self.fail()
            raise

    def events_to_send(self) -> list[ExchangeOutput]:
        """What the parser should write now (a channel from :meth:`HTTPServer.new_exchange`;
        the counterpart of :meth:`data_to_send`)."""
        wire = self.wire
        if self._held:
            return []
        self._server.hub._writable.pop(self, None)
        return wire.events_to_send() if isinstance(wire, ExchangeWire) else []

    def _received(self, eof: bool) -> None:
        """After input: detach a stream whose client left, then serve what is ready."""
        server = self._server
        if eof or self.wire.closed:
            self._unpark()
        if eof:
            # End of file: the client is gone (a half-closed client cannot be told apart
            # from one that left, and HTTP clients do not half-close while waiting).
            if self.stream is not None:
                server._detach(self.stream)
            self.wire.abort()
        elif self.wire.closed and self.stream is not None:
            server._detach(self.stream)
        server._process_channel(self)

    def connection_lost(self, *, now: float | None = None) -> None:
        """The socket broke (reset, write error): nothing more can be written to it."""
        server = self._server
        server.hub._clock(now)
        self._unpark()
        try:
            if self.stream is not None:
                server._detach(self.stream)
        finally:
            self.wire.abort()
            self.wire.data_to_send()  # discard: it cannot be written
            if isinstance(self.wire, ExchangeWire):
                self.wire.events_to_send()
            server.hub._writable[self] = None

    def fail(self) -> None:
        """End this connection after an unexpected exception while handling it: answered
        ``500 Internal Server Error`` (``Connection: close``) when no response had started,
        its stream (if any) detached from it. For an adapter that caught an exception from
        code working on this channel; :meth:`receive_data` does it before it raises."""
        server = self._server
        self._unpark()
        stream, self.stream = self.stream, None
        self._held = False  # nothing it waited for matters now: what it has goes out
        deferred, self._deferred = self._deferred, None
        if deferred is not None:
            self.wire.respond(deferred[0], deferred[1], deferred[2])
        self.wire.fail(500, "Internal Server Error")
        server.hub._writable[self] = None
        if stream is not None and stream.channel is self:
            try:
                server._detach(stream)
            except Exception:  # the stream's bookkeeping is what failed: drop the link
                stream.channel = None

    def data_to_send(self) -> bytes:
        """What to write to this socket now."""
        if self._held:
            return b""
        self._server.hub._writable.pop(self, None)
        return self.wire.data_to_send()

    def _unpark(self) -> None:
        """The client left while its exchange waited on an answer: forget it (a later
        answer is ignored)."""
        if self._parked is not None:
            self._server._unpark(self)


class Owner(Protocol):
    """What the parts and the channels ask of the server that composes them: the calls
    that go up (everything else is a call down, to the hub or a lower part)."""

    hub: Hub

    def _process_channel(self, channel: ServerChannel) -> None: ...
    def _handle(self, channel: ServerChannel, request: HTTPRequest) -> None: ...
    def _detach(self, stream: _Stream) -> None: ...
    def _unpark(self, channel: ServerChannel) -> None: ...
    def _end_session(self, session: Session, reason: SessionEnd) -> None: ...
    def _discard_session(self, session: Session) -> None: ...
    def _end_relay(self, relay: _Stream) -> None: ...
    def _save(self, session: Session) -> None: ...
    def _resume_relay(self, channel: ServerChannel, session: Session, last_event_id: str,
                      stream_id: str, events: list[tuple[str, bytes]]) -> None: ...


class Hub:
    """The state the server's parts share (see the module docstring)."""

    def __init__(self, owner: Owner, config: ServerConfig,
                 connection_factory: Callable[[], ServerConnection],
                 new_session_id: Callable[[], str] | None) -> None:
        #: The server: what a part says upward goes through it.
        self.owner = owner
        self.config = config
        self.connection_factory = connection_factory
        self.new_session_id = new_session_id
        template = connection_factory()
        self._handshake_versions = tuple(v for v in template.versions
                                         if v in FEATURES and FEATURES[v].handshake)
        self._stateless_versions = tuple(v for v in template.versions
                                         if v in FEATURES and not FEATURES[v].handshake)
        self._max_depth = template.max_depth
        #: Where resumable SSE events go (None: not resumable); the server sets it.
        self.event_store: EventStore | None = None
        self._now = -math.inf
        self._sessions: dict[str, Session] = {}
        self._ready: deque[Session] = deque()
        self._dirty: dict[Session, None] = {}
        self._pending_channels: dict[ServerChannel, None] = {}
        self._writable: dict[ServerChannel, None] = {}
        self._listening: dict[Session, None] = {}  # stateless sessions with a listen stream
        self._timers: list[tuple[float, int, Session | None, str]] = []
        self._dead_timers = 0  # sessions retired since _timers was last rebuilt
        self._seq = itertools.count()

    def _clock(self, now: float | None) -> float:
        if now is not None and now > self._now:
            self._now = float(now)
        return self._now

    def _schedule(self, when: float, session: Session | None, kind: str) -> None:
        heapq.heappush(self._timers, (when, next(self._seq), session, kind))

    def _retire_timers(self, session: Session) -> None:
        """A finished session's entries in the timer heap would keep it, its connection and
        its streams alive until they come due -- an expiry check is an idle timeout away
        (an hour by default), so a server whose clients DELETE their sessions would hold
        every one of them for that long. Entries are dropped lazily: once the sessions
        retired since the last rebuild outnumber half the heap, it is rebuilt without the
        finished ones (O(heap) work per heap/2 retirements: O(1) per session)."""
        self._dead_timers += 1
        if self._dead_timers * 2 > len(self._timers):
            # in place: handle_timeout may be walking this very list
            self._timers[:] = [t for t in self._timers if t[2] is None or not t[2]._done]
            heapq.heapify(self._timers)
            self._dead_timers = 0

    def _touch(self, session: Session) -> None:
        """Note activity on a session; schedule its expiry check when it is idle."""
        session._last_active = self._now
        timeout = self.config.session_idle_timeout
        if timeout is None or session.id is None or session._done or not session._idle():
            return
        if session._expiry_at is None:
            session._expiry_at = self._now + timeout
            self._schedule(session._expiry_at, session, "expiry")

    def _update_timer(self, session: Session) -> None:
        deadline = session.connection.next_deadline()
        if deadline is None or session._done:
            return
        if session._timer_at is None or deadline < session._timer_at:
            session._timer_at = deadline
            self._schedule(deadline, session, "timer")

    def _mark_ready(self, session: Session) -> None:
        if not session._queued:
            session._queued = True
            self._ready.append(session)

    def _respond(
        self, channel: ServerChannel, status: int, headers: Iterable[tuple[str, str]] = (),
        body: bytes = b"",
    ) -> None:
        channel.wire.respond(status, headers, body)
        self._writable[channel] = None

    def _error(
        self, channel: ServerChannel, status: int, code: int, message: str,
        request_id: RequestId | None = None, data: Any = None,
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Answer with an HTTP error status and a JSON-RPC error body."""
        body = _codec.encode(_codec.error_message(request_id, code, message, data))
        self._respond(channel, status, [_JSON, *headers], body)

