"""The Streamable HTTP server (both eras) and the legacy HTTP+SSE server, sans I/O.

Theory of operation
-------------------
One :class:`HTTPServer` serves one MCP endpoint over any number of TCP connections. The
adapter gives it bytes per connection (a :class:`ServerChannel`, one per socket) and writes
what :meth:`HTTPServer.data_to_send` returns. Between the two:

* each channel wraps an h11 connection (:class:`~mcp_sansio.http._wire.ServerWire`; or the
  llhttp one of :mod:`~mcp_sansio.http._wire_httptools` with ``wire="httptools"``) that cuts
  the bytes into whole requests, one at a time, with keep-alive -- or, for a parser of its
  own (:meth:`HTTPServer.new_exchange`), an :class:`~mcp_sansio.http._exchange_wire.ExchangeWire`
  fed with parsed requests as exchange events. Everything below sees only whole requests
  and answers through operations both offer, so it does not know which parser fed it;
* each request is checked at the HTTP level (its request-target's form, RFC 9112 section
  3.2: an absolute-form target is routed on its path with its authority standing for
  ``Host``, CONNECT is 501, ``OPTIONS *`` 200, a form the method may not use 400; then
  path, ``Host``/``Origin``, method -- HEAD as GET without content or effects --, ``Accept``,
  ``Content-Type``, JSON, the JSON-RPC envelope, ``MCP-Protocol-Version``, the session, the
  2026-07-28 mirrored headers) and either answered at once with a status code or handed to
  a :class:`Session`: its body is fed to the session's
  :class:`~mcp_sansio.ServerConnection`, and a *stream* is opened for the answer;
* the application drains :meth:`HTTPServer.next_event` -- ``(session, event)`` pairs from
  every session's connection -- and answers through ``session.connection``;
* whatever a connection queues is *routed*: each outgoing message carries the id of the
  client request it relates to (``Connection.encoded_messages_to_send``), which names the
  stream it goes on: that request's POST stream, else the session's standalone GET stream.
  Every message goes on exactly one stream. A stream becomes a JSON response (when the
  final response is its first message) or an SSE stream, written event by event.

Sessions of the handshake era (2025-03-26 .. 2025-11-25) live from ``initialize`` to
``DELETE``, expiry, or :meth:`HTTPServer.end_session`; their id comes from the caller's
``new_session_id`` (the adapter uses :mod:`secrets`). A stateless-era (2026-07-28) request
gets a session of its own with ``id`` None and a fresh connection, which lives as long as its
stream: the response ends it, and a stream the client closes is that request's cancellation
(fed to the connection as ``notifications/cancelled``, so the application sees
:class:`~mcp_sansio.CancelRequested`).

In sessionless mode (``sessionless=True``, :mod:`mcp_sansio._sessionless`) the handshake
era keeps no session either: ``initialize`` is answered with no ``Mcp-Session-Id``, and every
other POST gets a session of its own with ``id`` None and a fresh connection operating at the
revision its ``MCP-Protocol-Version`` header names; it lives as long as its stream, as a
stateless-era request does (closing the stream cancels the request: with no resumption, no
one could read its answer). GET and DELETE are 405.

Legacy HTTP+SSE (2024-11-05), when enabled: ``GET`` on ``legacy_sse_path`` opens a session
whose one SSE stream starts with an ``endpoint`` event naming the URL to POST messages to;
every message of the session goes on that stream and every POST is answered ``202``.

Authorization (MCP 2025-06-18 and later, basic/authorization.mdx), when ``auth`` is given
(a :class:`~mcp_sansio.auth.ProtectedResource`): the protected-resource metadata document
(RFC 9728 section 3) is served at its path-based well-known path and the root one, and every
request on the endpoint is decided by the configuration's synchronous verifier before
anything else is looked at -- refused 401 with the ``WWW-Authenticate`` challenge, 403
``insufficient_scope`` or 400 for a token in the query string. The verifier judges at the
channel's ``wall_time`` (seconds since the epoch, what token expiry is written in; ``now``
when not given). A session is bound to the principal of the request that opened it: a
request for it on behalf of anyone else is answered 404, as for an unknown session, so a
leaked session id is worth nothing without the token (security best practices "Session
Hijacking"). A stateless-era request is decided on its own token, every time.
:attr:`Session.auth` is what the handlers see. A verifier that must ask someone first
(introspection, a JWKS refresh: it raises
:class:`~mcp_sansio.auth._deferred.VerificationPending`) parks the request until the
adapter brings the answer -- the general "exchange waits on an asynchronous decision" hook
of :mod:`mcp_sansio.http._park` (:meth:`HTTPServer.pending_decisions`,
:meth:`HTTPServer.decide`, ``decision_timeout``).

Shared mode (``shared=True``, :mod:`mcp_sansio.http._shared`): sessions and SSE events live
in stores several workers share, reached through effects the adapter carries out. A store
lookup parks its exchange through the same hook as a token decision (one waiting
mechanism). A stream resumed on a worker that does not write it is relayed from the bus
(:meth:`HTTPServer.relay_event`) and ends when that worker ends it -- or when the adapter
says the worker is gone (:meth:`HTTPServer.worker_gone`); a client's answer to another
worker's request is
forwarded there (:meth:`HTTPServer.deliver_answer`); session ids may carry a routing tag
(``session_id_prefix``).

Time is an argument (``now=``), as in the core: it drives idle-session expiry, SSE
keep-alive comments and the connections' own timers (:meth:`HTTPServer.next_deadline`,
:meth:`HTTPServer.handle_timeout`).
"""

from __future__ import annotations

import enum
import hashlib
import heapq
import itertools
import math
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, quote

from .. import _codec
from .._admission import ENVELOPE_ONLY, Refusal, admit_stateless, batch_refusal, unsupported_version
from .._capabilities import SESSION_OPENERS, lookup
from .._codec import InvalidMessage, MessageKind
from .._connection import ServerConnection
from .._errors import NEED_DATA, ErrorCode, LocalProtocolError, NeedData
from .._events import CancelRequested, ConnectionClosed, Event, RequestId
from .._sessionless import UNVERSIONED_REVISION
from .._snapshot import refresh_session, restore_session, snapshot_session
from .._state import State
from .._stateless import META_PROTOCOL_VERSION, has_stateless_meta, principal_key
from .._versions import FEATURES, Era
from ..stores import parse_event_id
from ._exchange import ExchangeInput, ExchangeOutput, PeerClosed
from ._exchange_wire import ExchangeWire
from ._headers import (
    LOCAL_HOSTS,
    LOCAL_ORIGINS,
    AllowList,
    Headers,
    accepts,
    decode_header_value,
    media_type,
    param_matches,
    param_value,
)
from ._park import DEFAULT_DECISION_TIMEOUT, DecisionNeeded, Parked
from ._shared import (
    MAX_GONE_WORKERS,
    STREAM_END,
    DropSession,
    ForwardAnswer,
    Lookup,
    NumberedEvents,
    SaveSession,
    SharedEffect,
    answer_worker,
    new_stream_id,
    stream_writer,
)
from ._sse import encode_comment, encode_event
from ._store import EventStore, InMemoryEventStore
from ._wire import (
    DEFAULT_MAX_HEADER_COUNT,
    DEFAULT_MAX_HEADER_SIZE,
    DEFAULT_MAX_TARGET_LENGTH,
    HTTPRequest,
    ServerWire,
    target_allowed,
)
from ._wires import wire_factory

if TYPE_CHECKING:
    # At run time only a server with ``auth`` needs these (imported where used): the auth
    # package is not paid for by every server start.
    from ..auth._access import AccessInfo
    from ..auth._deferred import VerificationPending
    from ..auth._resource import ProtectedResource
    from ._wire_httptools import HttptoolsWire

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
    "Session",
    "SessionEnd",
]

#: Largest request body accepted: 4 MiB. Clients send requests, notifications and answers to
#: server requests; 4 MiB holds tool arguments and a sampling result with an image, and is
#: what the official SDKs accept. Larger bodies are refused with 413 before they are read.
DEFAULT_MAX_BODY_SIZE = 4 * 1024 * 1024
#: Live sessions at once: 10,000. An idle session costs a few kilobytes (its connection and
#: stream bookkeeping), so the cap bounds memory at tens of megabytes while staying far above
#: what one server process serves; initialize beyond it is answered 503.
DEFAULT_MAX_SESSIONS = 10_000
#: A session with no request and no open stream for this long ends (one hour). Clients are
#: required to re-initialize when their session is gone (404), so expiry is always safe.
DEFAULT_SESSION_IDLE_TIMEOUT: float | None = 3600.0
#: Longest routing tag in front of a session id: 64 characters. A tag names a worker or a
#: host (a few characters); the bound keeps ids short enough for any header limit, since
#: the unguessable part (43 characters from ``secrets.token_urlsafe(32)``) follows it.
MAX_SESSION_ID_PREFIX = 64
#: The SSE ``retry`` field (milliseconds) sent at the start of resumable streams: how long a
#: client waits before resuming a broken stream. One second: quick recovery, no hammering.
DEFAULT_RETRY_MS: int | None = 1000
#: Seconds between keep-alive comments on open SSE streams: 20 s, below the 30-60 s idle
#: timeouts of common proxies and load balancers.
DEFAULT_KEEPALIVE_INTERVAL: float | None = 20.0
#: Messages held for a session's standalone stream while no GET is open: 1,000. Beyond it the
#: oldest are dropped.
DEFAULT_MAX_PENDING_MESSAGES = 1000

#: JSON-RPC errors answered as JSON before any stream started, in the stateless era, get an
#: HTTP status of their own (``2026-07-28/basic/transports/streamable-http.mdx``): 404 for an
#: unknown method, 400 for a request that is malformed or cannot be served as sent.
_STATELESS_STATUS = {
    ErrorCode.METHOD_NOT_FOUND: 404,
    ErrorCode.PARSE_ERROR: 400,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.INVALID_PARAMS: 400,
    ErrorCode.HEADER_MISMATCH: 400,
    ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    ErrorCode.UNSUPPORTED_PROTOCOL_VERSION: 400,
}
_JSON = ("content-type", "application/json")
#: The reason phrase opening the message of an authorization refusal's JSON-RPC error.
_AUTH_REASONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
                 503: "Service Unavailable"}
_SSE_HEADERS = (
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
)


class ResponseMode(enum.Enum):
    """How the server answers a request POST."""

    #: An SSE stream, unless the response is ready as soon as the request is processed
    #: (then one JSON object). Messages about the request go on its stream. A 2026-07-28
    #: stream opens at its first message (a final answer then is JSON, with its status) or
    #: after one keep-alive interval of silence.
    SSE = "sse"
    #: One JSON object. Messages about the request that come before the response go on the
    #: standalone GET stream (handshake era) or are dropped (stateless era); a
    #: ``subscriptions/listen`` stream is always SSE.
    JSON = "json"
    #: JSON if the response is the first message for the request, else an SSE stream (so
    #: progress, logs and server requests still travel with their request).
    AUTO = "auto"


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
        #: Client request ids whose responses belong here.
        self.pending: set[RequestId] = set()
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


class Session:
    """One MCP session: a :class:`~mcp_sansio.ServerConnection` and its streams.

    Handshake-era sessions have an ``id`` (sent as ``Mcp-Session-Id``); a stateless-era
    request gets a session of its own with ``id`` None, for as long as its stream lives.

    Answer through :attr:`connection`. Messages sent while handling an event the server
    handed out are picked up on the next :meth:`HTTPServer.next_event` call; anything sent at
    another time (a handler that finishes later) needs :meth:`flush`.
    """

    def __init__(
        self, server: HTTPServer, session_id: str | None, connection: ServerConnection,
        era: Era, *, legacy: bool = False,
    ) -> None:
        self._server = server
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
        self._prefix = (
            hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            if session_id is not None else ""
        )
        self._stream_numbers = itertools.count(1)
        self._routes: dict[RequestId, _Stream] = {}
        self._streams: dict[str, _Stream] = {}  # live (unfinished) streams by stream id
        self._unprocessed: list[_Stream] = []
        self._standalone: _Stream | None = None
        #: Messages for a standalone stream no GET is reading yet; made on first use (an
        #: empty deque is 760 bytes, and most sessions never need one).
        self._backlog: deque[bytes] | None = None
        self._queued = False  # in the server's ready queue
        self._last_active = -math.inf
        self._expiry_at: float | None = None  # scheduled expiry check
        self._timer_at: float | None = None  # scheduled connection timer check
        self._done = False  # fully retired (ConnectionClosed delivered, or stateless done)
        # A shared server (_shared.py): the record last saved and when; whether the session
        # ends here only (another worker ended it).
        self._saved: dict[str, Any] | None = None
        self._saved_at = -math.inf
        #: Channels whose answers wait until what their request changed is stored.
        self._holding: list[ServerChannel] = []
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
        self._server._dirty[self] = None

    @property
    def open_streams(self) -> int:
        """How many HTTP responses are streaming for this session right now."""
        count = sum(1 for s in self._streams.values() if s.channel is not None)
        if self._standalone is not None and self._standalone.channel is not None:
            count += 1
        return count

    def _new_stream(self, kind: _Kind) -> _Stream:
        new_id = new_stream_id(self._prefix, self._server.stream_tag, next(self._stream_numbers))
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

    def __init__(self, server: HTTPServer,
                 wire: ServerWire | ExchangeWire | HttptoolsWire | None = None) -> None:
        self._server = server
        #: What cuts the connection into requests and writes the answers: the h11 wire for a
        #: socket's bytes, or an :class:`~mcp_sansio.http._exchange_wire.ExchangeWire` for a
        #: parser that hands over exchange events (:meth:`HTTPServer.new_exchange`), or the
        #: httptools wire (``HTTPServer(wire="httptools")``). The server's request handling
        #: uses only what they have in common.
        self.wire: ServerWire | ExchangeWire | HttptoolsWire = (
            wire if wire is not None else ServerWire(
                max_body_size=server.max_body_size, max_header_size=server.max_header_size,
                max_header_count=server.max_header_count,
                max_target_length=server.max_target_length))
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
        server._clock(now)
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
        server._clock(now)
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
        self._server._writable.pop(self, None)
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
        server._clock(now)
        self._unpark()
        try:
            if self.stream is not None:
                server._detach(self.stream)
        finally:
            self.wire.abort()
            self.wire.data_to_send()  # discard: it cannot be written
            if isinstance(self.wire, ExchangeWire):
                self.wire.events_to_send()
            server._writable[self] = None

    def fail(self) -> None:
        """End this connection after an unexpected exception while handling it: answered
        ``500 Internal Server Error`` (``Connection: close``) when no response had started,
        its stream (if any) detached from it. For an adapter that caught an exception from
        code working on this channel; :meth:`receive_data` does it before it raises."""
        server = self._server
        self._unpark()
        stream, self.stream = self.stream, None
        self._held = False  # nothing it waited for matters now: what it has goes out
        self.wire.fail(500, "Internal Server Error")
        server._writable[self] = None
        if stream is not None and stream.channel is self:
            try:
                server._detach(stream)
            except Exception:  # the stream's bookkeeping is what failed: drop the link
                stream.channel = None

    def data_to_send(self) -> bytes:
        """What to write to this socket now."""
        if self._held:
            return b""
        self._server._writable.pop(self, None)
        return self.wire.data_to_send()

    def _unpark(self) -> None:
        """The client left while its exchange waited on an answer: forget it (a later
        answer is ignored)."""
        parked, self._parked = self._parked, None
        if parked is not None:
            self._server._parked.pop(parked.need.handle, None)
            self._answers.clear()
            question = parked.need.question
            if isinstance(question, Lookup) and question.kind == "replay":
                self._server._unfollow(self, question.key)


class HTTPServer:
    """A Streamable HTTP MCP server (both eras), optionally with the legacy HTTP+SSE
    endpoints, as a state machine with no I/O. See :doc:`/http` for the call order.

    :param connection_factory: makes the :class:`~mcp_sansio.ServerConnection` of each new
        session (and of each stateless-era request). It is called once more at construction:
        that connection's ``versions`` decide which eras the server speaks, and its
        ``max_depth`` bounds the JSON the server decodes.
    :param new_session_id: returns a fresh session id: visible ASCII (0x21-0x7E), globally
        unique and unguessable (``secrets.token_urlsafe(32)`` in an adapter). Required for
        the handshake era.
    :param path: the MCP endpoint's path.
    :param response_mode: how requests are answered (:class:`ResponseMode`).
    :param enable_get: offer the standalone GET stream (else GET is answered 405).
    :param enable_delete: let clients end sessions with DELETE (else 405).
    :param allowed_hosts: ``Host`` values accepted (``"name"``, ``"name:port"``, ``"name:*"``
        for any port, ``"*"``); None accepts any. Default: localhost only.
    :param allowed_origins: ``Origin`` values accepted when the header is present (same
        forms, e.g. ``"https://app.example:*"``); None accepts any. Default: localhost only.
    :param max_body_size: largest request body (413 beyond).
    :param max_header_size: largest request head (431 beyond).
    :param max_header_count: most header fields in a request (431 beyond).
    :param max_target_length: longest request-target (414 beyond).
    :param max_sessions: live sessions at once (503 beyond).
    :param session_idle_timeout: seconds without request or open stream before a session
        ends (None: never).
    :param resumable: give SSE events ids, prime streams and replay them on
        ``Last-Event-ID`` (handshake era). False: no ids, no event store.
    :param event_store: where SSE events wait for resumption (default: a bounded
        :class:`InMemoryEventStore`).
    :param retry_ms: the SSE ``retry`` field for resumable streams (None: not sent).
    :param keepalive_interval: seconds between keep-alive comments on open SSE streams
        (None: none).
    :param max_pending_messages: messages held for a standalone stream no GET is reading.
    :param tool_param_headers: 2026-07-28 ``x-mcp-header`` support: tool name -> ``{header
        name: property path}`` (see :func:`param_headers`), to check ``Mcp-Param-*`` headers.
    :param legacy_sse_path: serve the 2024-11-05 HTTP+SSE transport too: its SSE path.
    :param legacy_post_path: the legacy transport's POST path.
    :param auth: make the endpoint a protected resource (see the module docstring); None
        serves everyone.
    :param tool_scopes: with ``auth``, tool name -> the scopes calling it needs beyond
        ``auth.required_scopes`` (None or empty: none); a ``tools/call`` whose token lacks
        them is answered 403 ``insufficient_scope`` naming them
        (:meth:`~mcp_sansio.auth.ProtectedResource.scope_refusal`).
    :param decision_timeout: seconds a request waits on an asynchronous decision (a token
        its verifier must ask about) before it is answered without one
        (:data:`~mcp_sansio.http._park.DEFAULT_DECISION_TIMEOUT`: 503 for a token).
    :param sessionless: serve the handshake era with no session kept (see
        :mod:`mcp_sansio._sessionless` and "Sessionless mode" in :doc:`/http`): no
        ``Mcp-Session-Id`` is issued, every POST is served by a fresh connection at the
        revision its ``MCP-Protocol-Version`` header names, GET and DELETE are 405 -- so
        any process can serve any request. Requests to the client raise instead. Not with
        ``legacy_sse_path`` (HTTP+SSE is a session by construction).
    :param shared: sessions and SSE events live in a store several workers share
        (:mod:`mcp_sansio.http._shared`): the server says what to store and look up as
        effects (:meth:`shared_effects`, :meth:`resolve`) instead of keeping events itself.
    :param stream_tag: this worker's mark in its stream ids (letters and digits), unique
        among the workers sharing a store, so that two workers never number one stream.
    :param session_id_prefix: put in front of every session id this server issues
        (visible ASCII, at most :data:`MAX_SESSION_ID_PREFIX` characters): the routing tag
        a gateway that routes by ``Mcp-Session-Id`` reads to send a session's requests to
        the worker that opened it (see "Routing by session id" in :doc:`/stores`). The id
        stays unguessable: the prefix is added to what ``new_session_id`` returns.
    :param wire: the HTTP/1.1 parser of :meth:`new_channel`'s connections, a key of
        :data:`~mcp_sansio.http._wires.WIRES`: ``"h11"`` (the default and the reference) or
        ``"httptools"`` (llhttp, faster; the ``fast`` extra). See :doc:`/wires`.
    """

    def __init__(
        self,
        connection_factory: Callable[[], ServerConnection],
        *,
        new_session_id: Callable[[], str] | None = None,
        path: str = "/mcp",
        response_mode: ResponseMode = ResponseMode.SSE,
        enable_get: bool = True,
        enable_delete: bool = True,
        allowed_hosts: Iterable[str] | None = LOCAL_HOSTS,
        allowed_origins: Iterable[str] | None = LOCAL_ORIGINS,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
        max_header_count: int = DEFAULT_MAX_HEADER_COUNT,
        max_target_length: int = DEFAULT_MAX_TARGET_LENGTH,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
        resumable: bool = True,
        event_store: EventStore | None = None,
        retry_ms: int | None = DEFAULT_RETRY_MS,
        keepalive_interval: float | None = DEFAULT_KEEPALIVE_INTERVAL,
        max_pending_messages: int = DEFAULT_MAX_PENDING_MESSAGES,
        tool_param_headers: Callable[[str], Mapping[str, Sequence[str]] | None] | None = None,
        legacy_sse_path: str | None = None,
        legacy_post_path: str = "/messages",
        auth: ProtectedResource | None = None,
        decision_timeout: float = DEFAULT_DECISION_TIMEOUT,
        tool_scopes: Callable[[str], Iterable[str] | None] | None = None,
        sessionless: bool = False,
        shared: bool = False,
        stream_tag: str = "",
        session_id_prefix: str = "",
        wire: str = "h11",
    ) -> None:
        if sessionless and legacy_sse_path is not None:
            raise ValueError("the legacy HTTP+SSE transport needs sessions: "
                             "sessionless=True cannot serve it")
        #: The handshake era is served with no session kept (see ``sessionless`` above).
        self.sessionless = sessionless
        self.connection_factory = connection_factory
        if not stream_tag.isalnum() and stream_tag:
            raise ValueError("stream_tag must be letters and digits")
        self.stream_tag = stream_tag
        if (len(session_id_prefix) > MAX_SESSION_ID_PREFIX
                or any(not 0x21 <= ord(c) <= 0x7E for c in session_id_prefix)):
            raise ValueError("session_id_prefix must be visible ASCII (0x21-0x7E), at most "
                             f"{MAX_SESSION_ID_PREFIX} characters")
        #: The routing tag in front of every session id issued here.
        self.session_id_prefix = session_id_prefix
        self.shared = shared
        self._effects: list[SharedEffect] = []
        self.wire = wire
        self._new_wire = wire_factory(wire)  # raises now when the parser is missing
        template = connection_factory()
        self._handshake_versions = tuple(v for v in template.versions
                                         if v in FEATURES and FEATURES[v].handshake)
        self._stateless_versions = tuple(v for v in template.versions
                                         if v in FEATURES and not FEATURES[v].handshake)
        self._max_depth = template.max_depth
        if self._handshake_versions and new_session_id is None and not sessionless:
            raise ValueError("new_session_id is required to serve the handshake era")
        self.new_session_id = new_session_id
        self.path = path
        self.response_mode = response_mode
        self.enable_get = enable_get
        self.enable_delete = enable_delete
        self._hosts = AllowList(allowed_hosts) if allowed_hosts is not None else None
        self._origins = AllowList(allowed_origins) if allowed_origins is not None else None
        self.max_body_size = max_body_size
        self.max_header_size = max_header_size
        self.max_header_count = max_header_count
        self.max_target_length = max_target_length
        self.max_sessions = max_sessions
        self.session_idle_timeout = session_idle_timeout
        self.event_store: EventStore | None = None
        if resumable:
            self.event_store = event_store if event_store is not None else InMemoryEventStore()
            if shared:
                self.event_store = NumberedEvents(self._effects)
        self.retry_ms = retry_ms
        self.keepalive_interval = keepalive_interval
        self.max_pending_messages = max_pending_messages
        self.tool_param_headers = tool_param_headers
        self.legacy_sse_path = legacy_sse_path
        self.legacy_post_path = legacy_post_path
        self.auth = auth
        self._metadata_body = _codec.encode(auth.document()) if auth is not None else b""
        self._metadata_paths = auth.metadata_paths if auth is not None else ()

        self._now = -math.inf
        self._sessions: dict[str, Session] = {}
        self._ready: deque[Session] = deque()
        self._dirty: dict[Session, None] = {}
        self._pending_channels: dict[ServerChannel, None] = {}
        self._writable: dict[ServerChannel, None] = {}
        self._listening: dict[Session, None] = {}  # stateless sessions with a listen stream
        # A shared server's relays (streams another worker writes, resumed here), by stream
        # id; and the events the bus brought for a stream whose replay is being read, by
        # stream id and waiting channel (see relay_event).
        self._relays: dict[str, _Stream] = {}
        self._following: dict[str, dict[ServerChannel, list[tuple[int, bytes]]]] = {}
        # Writers the adapter said are gone (worker_gone), most recent last: their streams
        # are replayed, never relayed live (nothing more will come). Bounded.
        self._gone_workers: OrderedDict[str, None] = OrderedDict()
        self._sse: dict[_Stream, None] = {}  # SSE streams open on a channel (keep-alives)
        self._timers: list[tuple[float, int, Session | None, str]] = []
        self._dead_timers = 0  # sessions retired since _timers was last rebuilt
        self._seq = itertools.count()
        self._keepalive_at: float | None = None
        self.decision_timeout = decision_timeout
        self.tool_scopes = tool_scopes
        #: Called with each :class:`~mcp_sansio.http._park.DecisionNeeded` as the exchange
        #: parks, when the adapter sets it; else they wait in :meth:`pending_decisions`.
        self.on_decision_needed: Callable[[DecisionNeeded], None] | None = None
        self._parked: dict[int, Parked[ServerChannel]] = {}
        self._needs: list[DecisionNeeded] = []
        self._handles = itertools.count(1)

    # -- public API ----------------------------------------------------------------------------

    def new_channel(self, *, now: float | None = None) -> ServerChannel:
        """A new TCP connection was accepted: its channel."""
        self._clock(now)
        if self._new_wire is not None:  # a wire other than h11 (the wire= parameter)
            return ServerChannel(self, self._new_wire(
                max_body_size=self.max_body_size, max_header_size=self.max_header_size,
                max_header_count=self.max_header_count,
                max_target_length=self.max_target_length))
        return ServerChannel(self)

    def new_exchange(self, *, now: float | None = None) -> ServerChannel:
        """A new connection whose requests a parser hands over as exchange events (see
        :mod:`mcp_sansio.http._exchange`): feed it with :meth:`ServerChannel.receive_event`
        and write what :meth:`ServerChannel.events_to_send` gives."""
        self._clock(now)
        return ServerChannel(self, ExchangeWire(max_body_size=self.max_body_size))

    @property
    def sessions(self) -> Mapping[str, Session]:
        """The live handshake-era and legacy sessions, by id."""
        return self._sessions

    def session(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def next_event(self) -> tuple[Session, Event] | NeedData:
        """The next ``(session, event)`` pair from any session's connection, or
        ``NEED_DATA``. Each call first routes what the sessions handed out so far have
        queued, and reads requests that were waiting on a channel."""
        while True:
            if self._dirty:
                self._flush_dirty()
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
            self._observe(session, event)
            return session, event

    def data_to_send(self) -> list[tuple[ServerChannel, bytes]]:
        """``(channel, bytes)`` for every channel with something to write, and ``(channel,
        b"")`` once for a channel that closed: close its socket after writing."""
        if self._dirty:
            self._flush_dirty()
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
                    self._detach(channel.stream)
            elif not data:
                continue
            out.append((channel, data))
        self._writable.clear()
        for channel in held:
            self._writable[channel] = None
        return out

    def next_deadline(self) -> float | None:
        """The earliest time :meth:`handle_timeout` has something to do, or None."""
        return self._timers[0][0] if self._timers else None

    def handle_timeout(self, now: float) -> None:
        """Expire idle sessions, write keep-alives and fire the connections' timers."""
        now = self._clock(now)
        timers = self._timers
        while timers and timers[0][0] <= now:
            _, _, session, kind = heapq.heappop(timers)
            if kind == "keepalive":
                self._keepalive(now)
            elif kind == "decision":
                self._expire_decisions(now)
            elif session is None or session._done:
                continue
            elif kind == "open":
                self._open_deferred(session, now)
            elif kind == "expiry":
                session._expiry_at = None
                self._check_expiry(session, now)
            else:
                session._timer_at = None
                session.connection.handle_timeout(now)
                self._mark_ready(session)

    def end_session(self, session: Session | str, *, now: float | None = None) -> None:
        """End a session on the server's initiative: later requests for it get 404."""
        self._clock(now)
        if isinstance(session, str):
            found = self._sessions.get(session)
            if found is None:
                return
            session = found
        if session.ended is None:
            self._end_session(session, SessionEnd.CLOSED)

    def broadcast(self, method: str, params: Mapping[str, Any] | None = None) -> int:
        """Send a notification to every session that may receive it (e.g.
        ``notifications/tools/list_changed``): handshake sessions that are operating, and
        stateless ``subscriptions/listen`` streams that asked for it. Returns how many
        sessions it was offered to."""
        count = 0
        targets = [s for s in self._sessions.values() if s.connection.state is State.OPERATING]
        targets.extend(self._listening)
        for session in targets:
            try:
                session.connection.send_notification(method, params)
            except LocalProtocolError:  # not allowed on this session: skip it
                continue
            count += 1
            self._dirty[session] = None
        return count

    # -- exchanges waiting on a decision (http/_park.py) ---------------------------------------

    def pending_decisions(self) -> list[DecisionNeeded]:
        """The decisions parked exchanges wait on, each handed out once (when no
        ``on_decision_needed`` callback took them): answer each with :meth:`decide`."""
        needs, self._needs = self._needs, []
        return [need for need in needs if need.handle in self._parked]

    def decide(self, handle: int, answer: Any, *, now: float | None = None,
               wall_time: float | None = None) -> bool:
        """The answer to a :class:`~mcp_sansio.http._park.DecisionNeeded` (a value, or the
        exception that stopped the adapter from getting one): the exchange goes on, then
        its connection's next request. False when the exchange is no longer waiting (its
        client left, or it timed out): the answer is dropped. ``wall_time`` as for
        :meth:`ServerChannel.receive_data`. An exception from here is a bug, raised after
        the channel was failed (as :meth:`ServerChannel.receive_data` does)."""
        self._clock(now)
        parked = self._parked.pop(handle, None)
        if parked is None:
            return False
        channel = parked.channel
        channel._parked = None
        if wall_time is not None:
            channel._wall = wall_time
        try:
            parked.resume(answer)
            self._process_channel(channel)
        except Exception:
            channel.fail()
            raise
        return True

    def _park(self, channel: ServerChannel, question: Any, resume: Callable[[Any], None],
              expire: Callable[[], None], *, announce: bool = True) -> DecisionNeeded:
        """Park ``channel``'s exchange until ``question`` is answered (module http/_park).
        ``announce``: hand the need out as a decision (else the caller hands the question
        out its own way: a shared server's Lookup goes with the store effects, in order)."""
        need = DecisionNeeded(next(self._handles), question, self._now + self.decision_timeout)
        channel._parked = self._parked[need.handle] = Parked(channel, need, resume, expire)
        self._schedule(need.deadline, None, "decision")
        if announce and self.on_decision_needed is not None:
            self.on_decision_needed(need)
        elif announce:
            self._needs.append(need)
        return need

    def _expire_decisions(self, now: float) -> None:
        for handle, parked in list(self._parked.items()):
            if parked.need.deadline <= now:
                del self._parked[handle]
                channel = parked.channel
                channel._parked = None
                try:
                    parked.expire()
                    self._process_channel(channel)
                except Exception:  # a bug: this channel alone ends (as receive_data)
                    channel.fail()
                    raise
    # -- shared state (shared=True: see _shared.py) ----------------------------------------------

    def shared_effects(self) -> list[SharedEffect]:
        """What to store, drop and look up in the shared stores, in order (``shared``
        servers; empty otherwise). Each :class:`~mcp_sansio.http._shared.Lookup` must be
        answered with :meth:`resolve`; the others need no answer."""
        effects = self._effects[:]
        self._effects.clear()
        return effects

    def resolve(self, lookup: Lookup, answer: Any, *, now: float | None = None) -> bool:
        """The store's answer to ``lookup``: a session record (or None: unknown) or a
        replay (``EventLog.replay``'s result). The waiting request is handled with it and
        its connection read on; drain :meth:`next_event` and :meth:`data_to_send` after.
        A lookup is a parked exchange like any other (:meth:`decide` with its ``handle``
        does the same): False when it no longer waits (answered already, timed out -- it
        was then answered "not found" -- or its client left)."""
        return self.decide(lookup.handle, answer, now=now)

    def _looked_up(self, lookup: Lookup, answer: Any) -> None:
        """The store's answer to ``lookup`` (None when none came in time): handle the
        request again with it in hand."""
        channel = lookup.channel
        if lookup.kind == "replay":
            channel._answers[("follow", lookup.key)] = self._unfollow(channel, lookup.key)
        if lookup.kind == "session" and answer is not None:
            if lookup.key in self._sessions:  # a copy in doubt (_session_for): update it
                self.refresh_session(lookup.key, answer)
            else:
                try:
                    self._adopt(lookup.key, answer)
                except ValueError:  # a record this server cannot serve: an unknown session
                    answer = None
        channel._answers[(lookup.kind, lookup.key)] = answer
        if not channel.wire.closed and channel.stream is None:
            self._handle(channel, lookup.request)
            if channel._parked is None:
                channel._answers.clear()

    def stored(self, effect: SaveSession | DropSession, *, now: float | None = None) -> None:
        """``effect`` is done in the table (or the store failed: the session's state is then
        this worker's only): release the answers it held; drain :meth:`data_to_send`
        after."""
        self._clock(now)
        for channel in effect.channels:
            self._release(channel)

    def _release(self, channel: ServerChannel | None) -> None:
        if channel is not None and channel._held:
            channel._held = False
            self._writable[channel] = None

    def forget_session(self, session_id: str, *, now: float | None = None) -> None:
        """Another worker ended ``session_id`` (the event bus said so): end this worker's
        copy, without telling the store again."""
        self._clock(now)
        session = self._sessions.get(session_id)
        if session is not None and session.ended is None:
            session._quiet = True
            self._end_session(session, SessionEnd.CLOSED)

    def refresh_session(self, session_id: str, record: Any, *,
                        now: float | None = None) -> None:
        """Another worker saved a newer record of ``session_id`` (the event bus said so):
        bring this worker's copy, if any, up to date (log level, subscriptions,
        initialized). A record that does not fit the copy ends the copy here."""
        self._clock(now)
        session = self._sessions.get(session_id)
        if session is None or session.ended is not None or session.legacy:
            return
        try:
            if type(record) is not dict or record.get("principal") != _principal(session.auth):
                raise ValueError("the record is of another principal's session")
            refresh_session(session.connection, record.get("session", {}))
        except ValueError:
            self.forget_session(session_id)
            return
        session._saved = record

    def relay_event(self, event_id: str, data: bytes, *, now: float | None = None) -> bool:
        """An event another worker stored (the bus's ``events`` topic): if this worker
        relays that stream -- a client resumed it here with ``Last-Event-ID`` -- send it on
        (in sequence order, each once: the event ids order them), or keep it for a replay
        being read. True when it was wanted here. Drain :meth:`data_to_send` after."""
        self._clock(now)
        parsed = parse_event_id(event_id)
        if parsed is None:
            return False
        stream_id, seq = parsed
        waiting = self._following.get(stream_id)
        if waiting:
            for buffer in waiting.values():
                if len(buffer) < self.max_pending_messages:  # bounded, like a backlog
                    buffer.append((seq, data))
        relay = self._relays.get(stream_id)
        if relay is not None:
            self._relay(relay, [(seq, data)])
        return bool(waiting) or relay is not None

    # -- writers that are gone (issue 18: _shared.WorkerLiveness) --------------------------------

    def worker_gone(self, tag: str, *, now: float | None = None) -> int:
        """The worker ``tag`` is gone (it said so, or fell silent: the adapter judges with
        :class:`~mcp_sansio.http._shared.WorkerLiveness`). Only the writer ends its streams,
        so each relay of one of them ends here -- the client resumes and gets what the log
        holds -- and from now on a resumption of them replays the log and ends. Returns how
        many relays ended; drain :meth:`data_to_send` after."""
        self._clock(now)
        if not tag or tag == self.stream_tag:
            return 0
        self._gone_workers[tag] = None
        self._gone_workers.move_to_end(tag)
        while len(self._gone_workers) > MAX_GONE_WORKERS:
            self._gone_workers.popitem(last=False)
        ended = [relay for relay in self._relays.values() if stream_writer(relay.id) == tag]
        for relay in ended:
            self._end_relay(relay)
        return len(ended)

    def worker_back(self, tag: str) -> None:
        """A worker counted gone was heard again (a late heartbeat): its streams are relayed
        live again."""
        self._gone_workers.pop(tag, None)

    def relayed_writers(self) -> set[str]:
        """The tags of the workers whose streams are relayed here now (what the adapter
        checks for liveness)."""
        return {tag for tag in map(stream_writer, self._relays) if tag is not None}

    def _unfollow(self, channel: ServerChannel, last_event_id: str
                  ) -> list[tuple[int, bytes]]:
        parsed = parse_event_id(last_event_id)
        if parsed is None:
            return []
        waiting = self._following.get(parsed[0], {})
        buffer = waiting.pop(channel, [])
        if not waiting:
            self._following.pop(parsed[0], None)
        return buffer

    def _relay(self, relay: _Stream, events: Iterable[tuple[int, bytes]]) -> None:
        """Send on a relay the events past the last it sent, in order; the end marker
        ends it (the stream was finished by the worker writing it)."""
        channel = relay.channel
        for seq, data in sorted(events, key=lambda event: event[0]):
            assert relay.relayed is not None
            if seq <= relay.relayed or channel is None:
                continue
            relay.relayed = seq
            if data == STREAM_END:
                self._end_relay(relay)
                return
            if data:
                channel.wire.send_body(encode_event(data, id=f"{relay.id}:{seq}"))
                self._writable[channel] = None

    def _end_relay(self, relay: _Stream) -> None:
        self._relays.pop(relay.id, None)
        relay.session._streams.pop(relay.id, None)
        relay.finished = True
        self._close_response(relay)
        self._touch(relay.session)

    def _tag_requests(self, session: Session) -> None:
        """A shared server's requests to the client carry this worker's tag in their ids
        (``<stream_tag>-<n>``): unique across the copies of one session, and the worker an
        answer landing elsewhere goes to (ForwardAnswer)."""
        if self.shared and self.stream_tag and not session.legacy:
            session.connection.request_id_prefix = f"{self.stream_tag}-"

    def deliver_answer(self, session_id: str, message: Any, *,
                       now: float | None = None) -> bool:
        """A client's answer to one of this worker's requests, posted on another worker
        (the bus's ``answers`` topic, :class:`~mcp_sansio.http._shared.ForwardAnswer`):
        handed to the session's connection, which matches it to the request waiting (an id
        it does not know is an ``UnexpectedResponse`` event, as on one server). False when
        this worker has no live copy of the session."""
        self._clock(now)
        session = self._sessions.get(session_id)
        if session is None or session.ended is not None or type(message) is not dict:
            return False
        session.connection.receive_message(message, now=self._now)
        self._mark_ready(session)
        return True

    def _forward_answers(self, session: Session, value: Any,
                         items: list[tuple[MessageKind, RequestId | None, str | None, Any]],
                         ) -> tuple[Any, list[tuple[MessageKind, RequestId | None, str | None,
                                                    Any]]]:
        """A shared server: answers to requests another worker sent go there (a
        ForwardAnswer each); what is left is this worker's."""
        raw = value if type(value) is list else [value]
        kept_raw, kept = [], []
        for message, item in zip(raw, items, strict=True):
            worker = (answer_worker(item[1])
                      if item[0] in (MessageKind.RESULT, MessageKind.ERROR) else None)
            if worker is not None and worker != self.stream_tag and session.id is not None:
                self._effects.append(ForwardAnswer(session.id, worker, message))
            else:
                kept_raw.append(message)
                kept.append(item)
        if type(value) is not list:
            return (kept_raw[0] if kept_raw else None), kept
        return kept_raw, kept

    def _wait_for(self, channel: ServerChannel, kind: str, key: str) -> bool:
        """A shared server without the answer to (kind, key) for this request: ask the
        adapter (a Lookup) and hold the channel; True when it now waits."""
        if not self.shared or (kind, key) in channel._answers:
            return False
        assert channel._request is not None
        lookup = Lookup(kind, key, channel, channel._request)
        # Bounded like every parked exchange: a store that never answers is "not found".
        need = self._park(channel, lookup, lambda answer: self._looked_up(lookup, answer),
                          lambda: self._looked_up(lookup, None), announce=False)
        lookup.handle = need.handle
        self._effects.append(lookup)
        if kind == "replay":
            # From now on, what the bus brings for that stream is kept for this channel: an
            # event written after the store is read is then not lost (relay_event).
            parsed = parse_event_id(key)
            if parsed is not None:
                self._following.setdefault(parsed[0], {})[channel] = []
        return True

    def _adopt(self, session_id: str, record: Any) -> Session:
        """Serve here a session another worker opened (its record from the table: the
        connection's snapshot and the principal the session is bound to)."""
        if len(self._sessions) >= self.max_sessions:
            raise ValueError("too many sessions")
        if type(record) is not dict or set(record) != {"session", "principal"}:
            raise ValueError("not a session table record")
        principal = record["principal"]
        if principal is not None and (
                type(principal) is not list or len(principal) != 2
                or type(principal[0]) is not str
                or (principal[1] is not None and type(principal[1]) is not str)):
            raise ValueError("not a principal")
        if (principal is None) != (self.auth is None):
            raise ValueError("a session of a server with other authorization")
        connection = restore_session(self.connection_factory(), record["session"])
        session = Session(self, session_id, connection, Era.HANDSHAKE)
        self._tag_requests(session)
        if principal is not None:
            from ..auth._access import AccessInfo

            claims = {"iss": principal[1]} if principal[1] is not None else {}
            session.auth = AccessInfo(subject=principal[0], claims=claims)
        session._standalone = _Stream(session, _Kind.STANDALONE,
                                      new_stream_id(session._prefix, self.stream_tag, 0))
        session._standalone.resumable = self.event_store is not None
        # The record's age is unknown here (another worker saved it, at a time on its own
        # clocks), so the copy counts as due for a save: the request that adopted it
        # refreshes the table's deadline. Counted as fresh, a session the client kept
        # using here could expire on the worker that saved it long ago (issue 18, the
        # skewed-hosts tests).
        session._saved, session._saved_at = record, -math.inf
        self._sessions[session_id] = session
        return session

    def _hold(self, session: Session, channel: ServerChannel) -> None:
        """A request that may change the session's record: its answer waits until the
        change is stored (released at once by :meth:`_save` when nothing changed). A client
        that has an answer may send its next request to any worker, which must then find
        what this one did -- the session itself after initialize, the initialized state,
        the log level."""
        channel._held = True
        session._holding.append(channel)

    def _save(self, session: Session) -> None:
        """Queue the session's record when it changed, or when a quarter of the idle timeout
        passed since the last save: the table's deadline (the idle timeout after a save)
        then falls between 3/4 and all of the timeout after the session's last activity."""
        channels, session._holding = session._holding, []
        record = None
        if session.id is not None and session.ended is None:
            try:
                record = {"session": snapshot_session(session.connection),
                          "principal": _principal(session.auth)}
            except ValueError:  # not (or no longer) a negotiated session
                record = None
        timeout = self.session_idle_timeout
        stale = timeout is not None and self._now - session._saved_at >= timeout / 4
        if session.id is None or record is None or (record == session._saved and not stale):
            for channel in channels:
                self._release(channel)
            return
        changed = record != session._saved
        session._saved, session._saved_at = record, self._now
        if not changed:  # a refresh of the deadline: nobody needs to wait for it
            for channel in channels:
                self._release(channel)
            channels = []
        self._effects.append(SaveSession(session.id, record, tuple(channels),
                                         refresh=not changed))

    # -- time ----------------------------------------------------------------------------------

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
        timeout = self.session_idle_timeout
        if timeout is None or session.id is None or session._done or not session._idle():
            return
        if session._expiry_at is None:
            session._expiry_at = self._now + timeout
            self._schedule(session._expiry_at, session, "expiry")

    def _check_expiry(self, session: Session, now: float) -> None:
        timeout = self.session_idle_timeout
        if timeout is None or session.ended is not None or not session._idle():
            return
        due = session._last_active + timeout
        if due <= now:
            self._end_session(session, SessionEnd.EXPIRED)
        else:
            session._expiry_at = due
            self._schedule(due, session, "expiry")

    def _update_timer(self, session: Session) -> None:
        deadline = session.connection.next_deadline()
        if deadline is None or session._done:
            return
        if session._timer_at is None or deadline < session._timer_at:
            session._timer_at = deadline
            self._schedule(deadline, session, "timer")

    def _keepalive(self, now: float) -> None:
        self._keepalive_at = None
        comment = encode_comment()
        for stream in list(self._sse):
            channel = stream.channel
            if channel is None or not stream.started or stream.finished:
                self._sse.pop(stream, None)
                continue
            channel.wire.send_body(comment)
            self._writable[channel] = None
        self._arm_keepalive()

    def _arm_keepalive(self) -> None:
        if self.keepalive_interval is None or self._keepalive_at is not None or not self._sse:
            return
        self._keepalive_at = self._now + self.keepalive_interval
        self._schedule(self._keepalive_at, None, "keepalive")

    # -- channels ------------------------------------------------------------------------------

    def _process_channel(self, channel: ServerChannel) -> None:
        wire = channel.wire
        while channel.stream is None and channel._parked is None and not wire.closed:
            request = wire.next_request()
            if request is None:
                break
            channel._request = request
            self._handle(channel, request)
            if channel._parked is None:
                channel._answers.clear()
        self._writable[channel] = None

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

    # -- one request ---------------------------------------------------------------------------

    def _handle(self, channel: ServerChannel, request: HTTPRequest) -> None:
        method = request.method
        if (request.target[:1] != "/" or method == "CONNECT") and not self._other_target(
                channel, request):
            return
        path = request.path
        if path in self._metadata_paths:
            self._metadata(channel, request)
            return
        legacy = self.legacy_sse_path is not None and path in (
            self.legacy_sse_path, self.legacy_post_path)
        if path != self.path and not legacy:
            self._error(channel, 404, ErrorCode.INVALID_REQUEST, "Not Found: no MCP endpoint here")
            return
        refusal = self._check_host_origin(request.headers, request.authority)
        if refusal is not None:
            self._error(channel, 403, ErrorCode.INVALID_REQUEST, refusal)
            return
        if self.auth is not None and not self._authorized(channel, request):
            return
        if legacy:
            if path == self.legacy_sse_path and method == "GET":
                self._legacy_get(channel, request)
            elif path == self.legacy_post_path and method == "POST":
                self._legacy_post(channel, request)
            else:
                allow = "GET" if path == self.legacy_sse_path else "POST"
                self._error(channel, 405, ErrorCode.INVALID_REQUEST,
                            "Method Not Allowed", headers=[("allow", allow)])
            return
        if method == "POST":
            self._post(channel, request)
        elif method in ("GET", "HEAD") and self._sessions_allowed(self.enable_get, request):
            self._get(channel, request)
        elif method == "DELETE" and self._sessions_allowed(self.enable_delete, request):
            self._delete(channel, request)
        else:
            # RFC 9110 section 15.5.6: a 405 lists the target's methods in Allow.
            self._error(channel, 405, ErrorCode.INVALID_REQUEST, "Method Not Allowed",
                        headers=[("allow", self._allow())])

    def _other_target(self, channel: ServerChannel, request: HTTPRequest) -> bool:
        """A request-target that is not in origin-form (RFC 9112 section 3.2): True when the
        request goes on to be routed (absolute-form, on its path); else it was answered."""
        method = request.method
        form = request.form
        if not target_allowed(method, form):
            self._respond(channel, 400, [("content-type", "text/plain; charset=utf-8")],
                          b"Bad Request: this request-target form is not allowed here"
                          b" (RFC 9112 section 3.2)")
            return False
        if form == "absolute":
            return True
        if form == "authority":
            # CONNECT asks for a tunnel (RFC 9110 section 9.3.6); an MCP endpoint tunnels to
            # nowhere: "not capable of supporting it for any resource" (section 15.6.2).
            self._respond(channel, 501, [("content-type", "text/plain; charset=utf-8")],
                          b"Not Implemented: CONNECT")
            return False
        # OPTIONS * asks about the server in general (RFC 9110 section 9.3.7): nothing to
        # say beyond a success, with "Content-Length" 0 as that section requires.
        self._respond(channel, 200)
        return False

    def _metadata(self, channel: ServerChannel, request: HTTPRequest) -> None:
        """The protected-resource metadata document (RFC 9728 section 3.2): public, so
        only the ``Host`` check applies, and any origin may read it (browser-based clients
        discover the authorization server too)."""
        if self._hosts is not None:
            host = request.authority or request.headers.get("host")
            if host is None or not self._hosts.allows(host):
                self._error(channel, 403, ErrorCode.INVALID_REQUEST,
                            f"Forbidden: Host {host!r} is not allowed")
                return
        if request.method not in ("GET", "HEAD"):
            self._error(channel, 405, ErrorCode.INVALID_REQUEST, "Method Not Allowed",
                        headers=[("allow", "GET, HEAD")])
            return
        self._respond(channel, 200, [_JSON, ("access-control-allow-origin", "*")],
                      self._metadata_body)

    def _authorized(self, channel: ServerChannel, request: HTTPRequest) -> bool:
        """Decide the request's token (servers with ``auth``): True to go on, with
        ``channel.auth`` set; False when it was refused or parked until its verifier's
        question is answered (then :meth:`_verified` handles it again)."""
        from ..auth._deferred import VerificationPending
        from ..auth._resource import Refusal as AuthRefusal

        auth = self.auth
        assert auth is not None
        decision = channel._answers.pop(("token", ""), None)
        if decision is None:
            try:
                decision = auth.authorize(
                    request.headers.raw, request.target,
                    channel._wall if channel._wall is not None else self._now)
            except VerificationPending as pending:
                self._park_verification(channel, request, pending)
                return False
        if isinstance(decision, AuthRefusal):
            self._error(channel, decision.status, ErrorCode.INVALID_REQUEST,
                        f"{_AUTH_REASONS[decision.status]}: {decision.reason}",
                        headers=decision.headers)
            return False
        channel.auth = decision
        return True

    def _park_verification(self, channel: ServerChannel, request: HTTPRequest,
                           pending: VerificationPending) -> None:
        timeout = TimeoutError(f"no answer within {self.decision_timeout:g} s")
        self._park(channel, pending,
                   lambda answer: self._verified(channel, request, pending, answer),
                   lambda: self._verified(channel, request, pending, timeout))

    def _verified(self, channel: ServerChannel, request: HTTPRequest,
                  pending: VerificationPending, answer: Any) -> None:
        """The answer to a parked request's token question came (or the timeout did): its
        decision, then the request handled from the start (the checks before the token's
        are cheap and unchanged)."""
        auth = self.auth
        assert auth is not None
        wall = channel._wall if channel._wall is not None else self._now
        if not isinstance(answer, BaseException) and not _is_response(answer):
            answer = TypeError(f"not an answer to a token question: {type(answer).__name__}")
        channel._answers[("token", "")] = auth.conclude(pending, answer, wall)
        try:
            self._handle(channel, request)
        finally:
            # used by that request, or by none: never by the next
            channel._answers.pop(("token", ""), None)

    def _tool_scope_refused(
        self, channel: ServerChannel,
        items: list[tuple[MessageKind, RequestId | None, str | None, Any]],
    ) -> bool:
        """A ``tools/call`` whose tool needs scopes the token lacks: answered 403 (the whole
        POST, a batch included: nothing of it is served). True when refused."""
        auth, info, lookup = self.auth, channel.auth, self.tool_scopes
        if auth is None or info is None or lookup is None:
            return False
        for kind, request_id, method, params in items:
            if kind is not MessageKind.REQUEST or method != "tools/call":
                continue
            tool = params.get("name") if isinstance(params, dict) else None
            needed = lookup(tool) if isinstance(tool, str) else None
            refusal = auth.scope_refusal(info, needed) if needed else None
            if refusal is not None:
                self._error(channel, refusal.status, ErrorCode.INVALID_REQUEST,
                            f"{_AUTH_REASONS[refusal.status]}: {refusal.reason}",
                            request_id if len(items) == 1 else None,
                            headers=refusal.headers)
                return True
        return False

    def _bound_elsewhere(self, channel: ServerChannel, session: Session) -> bool:
        """A session opened by another principal: answered 404 like an unknown one (it is
        not this principal's to know about)."""
        if self.auth is None or self.auth.same_principal(session.auth, channel.auth):
            if self.auth is not None:
                session.auth = channel.auth
            return False
        self._error(channel, 404, ErrorCode.INVALID_REQUEST,
                    "Not Found: unknown or terminated session")
        return True

    def _sessions_allowed(self, enabled: bool, request: HTTPRequest) -> bool:
        """GET and DELETE exist only with handshake-era sessions (2026-07-28 answers 405)."""
        if not enabled or not self._handshake_versions or self.sessionless:
            return False
        version = request.headers.get("mcp-protocol-version")
        return version is None or version not in self._stateless_versions

    def _allow(self) -> str:
        methods = ["POST"]
        if self._handshake_versions and not self.sessionless:
            if self.enable_get:
                methods.append("GET")
                methods.append("HEAD")  # wherever GET is (RFC 9110 section 9.3.2)
            if self.enable_delete:
                methods.append("DELETE")
        return ", ".join(methods)

    def _check_host_origin(self, headers: Headers, authority: str | None = None) -> str | None:
        """Why a request fails the DNS-rebinding checks (None: it passes). ``authority``: an
        absolute-form target's, which replaces ``Host`` (RFC 9112 section 3.2.2)."""
        if self._hosts is not None:
            host = authority if authority is not None else headers.get("host")
            if host is None or not self._hosts.allows(host):
                return f"Forbidden: Host {host!r} is not allowed"
        if self._origins is not None:
            origin = headers.get("origin")
            if origin is not None and not self._origins.allows(origin):
                return f"Forbidden: Origin {origin!r} is not allowed"
        return None

    def _session_for(self, channel: ServerChannel, headers: Headers,
                     request_id: RequestId | None = None) -> Session | None:
        """The session a request names, or None after answering 400 (no id) or 404.
        ``request_id``: a lone request's, which the error carries (JSON-RPC 2.0 s. 5: null
        only when the id could not be read)."""
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            self._error(channel, 400, ErrorCode.INVALID_REQUEST,
                        "Bad Request: the Mcp-Session-Id header is required", request_id)
            return None
        session = self._sessions.get(session_id)
        if session is None and self._wait_for(channel, "session", session_id):
            return None  # the store is asked; the request is handled again with its answer
        if (session is not None and self.shared and session.ended is None
                and session.connection.state is State.INITIALIZING
                and self._wait_for(channel, "session", session_id)):
            # Its initialized notification may have gone to another worker, whose record
            # says so before the bus does: read the table again.
            return None
        if session is None or session.ended is not None or session.legacy:
            self._error(channel, 404, ErrorCode.INVALID_REQUEST,
                        "Not Found: unknown or terminated session")
            return None
        if self._bound_elsewhere(channel, session):
            return None
        return session

    # -- POST ----------------------------------------------------------------------------------

    def _post(self, channel: ServerChannel, request: HTTPRequest) -> None:
        headers = request.headers
        if media_type(headers.get("content-type")) != "application/json":
            self._error(channel, 415, ErrorCode.INVALID_REQUEST,
                        "Unsupported Media Type: the body must be application/json")
            return
        accept = headers.get("accept")
        if not (accepts(accept, "application/json") and accepts(accept, "text/event-stream")):
            self._error(channel, 406, ErrorCode.INVALID_REQUEST,
                        "Not Acceptable: Accept must list application/json and "
                        "text/event-stream")
            return
        parsed = self._parse_body(channel, request.body)
        if parsed is None:
            return
        value, items = parsed
        if self.tool_scopes is not None and self._tool_scope_refused(channel, items):
            return
        requests = [item for item in items if item[0] is MessageKind.REQUEST]
        single = type(value) is dict
        first = items[0]
        version = headers.get("mcp-protocol-version")
        if version is not None and version in self._stateless_versions:
            # The header names a stateless revision: the request is judged in that era, even
            # an initialize (which 2026-07-28 does not have) or one missing its _meta.
            self._post_stateless(channel, request, value, items, version)
            return
        # The method table's in_session column: the request that opens a session
        # (initialize) is never in a batch and opens a session here (lifecycle.mdx).
        if single and first[0] is MessageKind.REQUEST and first[2] in SESSION_OPENERS:
            if self._handshake_versions and self.sessionless:
                self._sessionless_initialize(channel, value, first[1])  # type: ignore[arg-type]
            elif self._handshake_versions:
                self._post_initialize(channel, value, first[1])  # type: ignore[arg-type]
            else:
                # A stateless-only server: the connection refuses initialize naming its
                # versions (versioning.mdx), answered 400.
                self._serve_stateless(channel, value, first[1], first[2])  # type: ignore[arg-type]
            return
        if version is not None and version not in self._handshake_versions:
            self._unsupported_version(channel, version, first[1] if requests else None)
            return
        if not self._handshake_versions or (
            version is None and single and first[0] is MessageKind.REQUEST
            and has_stateless_meta(first[3])
        ):
            self._error(channel, 400, ErrorCode.HEADER_MISMATCH,
                        "Header mismatch: the MCP-Protocol-Version header is required",
                        first[1] if first[0] is MessageKind.REQUEST else None)
            return
        if (self._stateless_versions and single and first[0] is MessageKind.REQUEST
                and has_stateless_meta(first[3]) and headers.get("mcp-session-id") is None):
            # Per-request _meta selects the stateless era, which does not carry this
            # handshake-era revision: -32022 (2026-07-28 basic/versioning.mdx, "Protocol
            # Version Negotiation" and "Backward Compatibility ...": a dual-era server).
            self._unsupported_version(channel, version, first[1])  # type: ignore[arg-type]
            return
        if self.sessionless:
            self._post_sessionless(channel, headers, value, items, version)
            return
        session = self._session_for(channel, headers,
                                    first[1] if single and requests else None)
        if session is None:
            return
        self._post_to_session(channel, session, value, items)

    # -- sessionless mode (mcp_sansio._sessionless) ----------------------------------------------

    def _sessionless_initialize(
        self, channel: ServerChannel, value: Any, request_id: RequestId,
    ) -> None:
        """initialize, answered by a fresh connection that is then forgotten: no session id
        goes out (the handshake era's transports.mdx: a server MAY assign one), so no
        session limit applies either."""
        session = Session(self, None, self.connection_factory(), Era.HANDSHAKE)
        session.connection.serve_sessionless()
        session.auth = channel.auth
        stream = self._open_post_stream(session, channel, [request_id])
        stream.init = True
        session.connection.receive_message(value, now=self._now)
        self._mark_ready(session)

    def _post_sessionless(
        self, channel: ServerChannel, headers: Headers, value: Any,
        items: list[tuple[MessageKind, RequestId | None, str | None, Any]],
        version: str | None,
    ) -> None:
        """Any other handshake-era POST: its requests are served by a fresh connection
        operating at the header's revision; a POST of notifications or responses only is
        accepted (202) and dropped -- what they could refer to (a request in flight, a
        request to the client) lives in no one's memory here, perhaps in another process."""
        if headers.get("mcp-session-id") is not None:
            # Not one of ours (we issue none): a client of an earlier, stateful deployment.
            # 404 makes it start again with initialize (basic/transports.mdx, "Session
            # Management": "MUST start a new session").
            self._error(channel, 404, ErrorCode.INVALID_REQUEST,
                        "Not Found: this server keeps no sessions; initialize again")
            return
        if not any(item[0] is MessageKind.REQUEST for item in items):
            self._respond(channel, 202)
            return
        revision = version if version is not None else UNVERSIONED_REVISION
        if revision not in self._handshake_versions:
            first = items[0]
            self._error(channel, 400, ErrorCode.INVALID_REQUEST,
                        "Bad Request: the MCP-Protocol-Version header is required",
                        first[1] if type(value) is dict else None)
            return
        session = Session(self, None, self.connection_factory(), Era.HANDSHAKE)
        session.connection.serve_sessionless(revision)
        session.auth = channel.auth
        self._post_to_session(channel, session, value, items)

    def _parse_body(
        self, channel: ServerChannel, body: bytes,
    ) -> tuple[Any, list[tuple[MessageKind, RequestId | None, str | None, Any]]] | None:
        """Decode and classify a POST body; answer 400 and return None when it is not JSON or
        not JSON-RPC."""
        try:
            value = _codec.decode(body, self._max_depth)
        except InvalidMessage as exc:
            self._error(channel, 400, exc.code, exc.message)
            return None
        raw = value if type(value) is list else [value]
        if not raw:
            self._error(channel, 400, ErrorCode.INVALID_REQUEST, "Invalid Request: empty batch")
            return None
        items = []
        for item in raw:
            try:
                items.append(_codec.parse(item))
            except InvalidMessage as exc:
                self._error(channel, 400, exc.code, exc.message,
                            exc.request_id if type(value) is dict else None)
                return None
        return value, items

    def _unsupported_version(
        self, channel: ServerChannel, version: str, request_id: RequestId | None,
    ) -> None:
        supported = [*self._handshake_versions, *self._stateless_versions]
        if self._stateless_versions:
            refusal = unsupported_version(version, supported)
            self._error(channel, 400, refusal.code, refusal.message, request_id, refusal.data)
        else:
            # A handshake-only server answers in the old era's terms, so that a dual-era
            # client probing it falls back to initialize (versioning.mdx).
            self._error(channel, 400, ErrorCode.INVALID_REQUEST,
                        f"Bad Request: unsupported MCP-Protocol-Version {version!r} "
                        f"(supported: {', '.join(supported)})", request_id)

    def _post_initialize(self, channel: ServerChannel, value: Any, request_id: RequestId) -> None:
        if len(self._sessions) >= self.max_sessions:
            self._error(channel, 503, ErrorCode.TOO_MANY_REQUESTS,
                        "Service Unavailable: too many sessions", request_id,
                        headers=[("retry-after", "1")])
            return
        session = self._open_session(Era.HANDSHAKE)
        session.auth = channel.auth
        stream = self._open_post_stream(session, channel, [request_id])
        stream.init = True
        if self.shared:  # released once the record is stored, or when initialize fails
            self._hold(session, channel)
        session.connection.receive_message(value, now=self._now)
        self._mark_ready(session)

    def _open_session(self, era: Era, *, legacy: bool = False) -> Session:
        assert self.new_session_id is not None
        session_id = self.new_session_id()
        if not session_id:
            raise ValueError("a session id must be non-empty visible ASCII (0x21-0x7E)")
        session_id = self.session_id_prefix + session_id
        if any(not 0x21 <= ord(c) <= 0x7E for c in session_id):
            raise ValueError("a session id must be non-empty visible ASCII (0x21-0x7E)")
        if session_id in self._sessions:
            raise ValueError("new_session_id returned an id that is in use")
        session = Session(self, session_id, self.connection_factory(), era, legacy=legacy)
        self._tag_requests(session)
        self._sessions[session_id] = session
        session._standalone = _Stream(session, _Kind.STANDALONE,
                                      new_stream_id(session._prefix, self.stream_tag, 0))
        session._standalone.resumable = self.event_store is not None and not legacy
        return session

    def _open_post_stream(
        self, session: Session, channel: ServerChannel, ids: Iterable[RequestId],
        kind: _Kind = _Kind.POST,
    ) -> _Stream:
        stream = session._new_stream(kind)
        stream.pending.update(ids)
        for request_id in stream.pending:
            session._routes[request_id] = stream
        stream.channel = channel
        stream.resumable = (
            self.event_store is not None and session.era is Era.HANDSHAKE
            and not session.legacy and not session.connection.sessionless
        )
        channel.stream = stream
        session._unprocessed.append(stream)
        return stream

    def _post_to_session(
        self, channel: ServerChannel, session: Session, value: Any,
        items: list[tuple[MessageKind, RequestId | None, str | None, Any]],
    ) -> None:
        conn = session.connection
        if self.shared and session.id is not None:
            value, items = self._forward_answers(session, value, items)
        ids = [item[1] for item in items if item[0] is MessageKind.REQUEST]
        if type(value) is list:
            refusal = batch_refusal(conn.protocol_version, conn.revision)
            if refusal is not None:
                self._error(channel, 400, refusal.code, refusal.message)
                return
        for request_id in ids:
            if request_id in session._routes or ids.count(request_id) > 1:
                self._error(channel, 400, ErrorCode.INVALID_REQUEST,
                            f"Invalid Request: id {request_id!r} is already in use by a "
                            "request in flight", request_id if len(items) == 1 else None)
                return
        if ids:
            self._open_post_stream(session, channel, ids)  # type: ignore[arg-type]
        else:
            self._respond(channel, 202)
        if self.shared:
            self._hold(session, channel)
        if items:  # (all of it may have been forwarded to other workers)
            conn.receive_message(value, now=self._now)
        self._mark_ready(session)
        self._touch(session)

    def _post_stateless(
        self, channel: ServerChannel, request: HTTPRequest, value: Any,
        items: list[tuple[MessageKind, RequestId | None, str | None, Any]], version: str,
    ) -> None:
        kind, request_id, method, params = items[0]
        if type(value) is list:
            refusal = cast("Refusal", batch_refusal(None, version))
            self._error(channel, 400, refusal.code, refusal.message)
            return
        if kind is MessageKind.NOTIFICATION:
            # No client notification is defined for 2026-07-28 HTTP (cancellation is closing
            # the stream): accepted and ignored.
            self._respond(channel, 202)
            return
        if kind is not MessageKind.REQUEST:
            self._error(channel, 400, ErrorCode.INVALID_REQUEST,
                        "Invalid Request: clients do not send responses in 2026-07-28")
            return
        assert request_id is not None and method is not None
        if method in SESSION_OPENERS:
            # 2026-07-28 has no sessions, so no request that opens one (the method table's
            # in_session column: initialize): an unknown method, 404 (streamable-http.mdx).
            self._error(channel, 404, ErrorCode.METHOD_NOT_FOUND,
                        f"Method not found: {method} (not in 2026-07-28)", request_id)
            return
        # The core's admission rows up to the version, which the mirrored headers are
        # compared with first (a mismatch is -32020); the connection checks the version.
        admitted = admit_stateless(params, self._stateless_versions, only=ENVELOPE_ONLY)
        if isinstance(admitted, Refusal):
            self._error(channel, 400, admitted.code, admitted.message, request_id)
            return
        mismatch = self._check_mirrored_headers(request.headers, method, params, version)
        if mismatch is not None:
            self._error(channel, 400, ErrorCode.HEADER_MISMATCH, f"Header mismatch: {mismatch}",
                        request_id)
            return
        self._serve_stateless(channel, value, request_id, method)

    def _serve_stateless(
        self, channel: ServerChannel, value: Any, request_id: RequestId, method: str,
    ) -> None:
        session = Session(self, None, self.connection_factory(), Era.STATELESS)
        session.auth = channel.auth
        kind = _Kind.LISTEN if method == "subscriptions/listen" else _Kind.POST
        self._open_post_stream(session, channel, [request_id], kind)
        if kind is _Kind.LISTEN:
            self._listening[session] = None
        self._bind_request_state(session.connection, channel)
        session.connection.receive_message(value, now=self._now, wall_now=channel._wall)
        self._mark_ready(session)

    @staticmethod
    def _bind_request_state(conn: ServerConnection, channel: ServerChannel) -> None:
        """A sealed ``requestState`` is bound to the request's principal when it was
        authenticated (2026-07-28 ``basic/patterns/mrtr.mdx``, server requirement 5: "the
        authenticated principal, rejecting state presented by a different principal"). The
        caller hands the connection the channel's wall clock as well, which the state is
        sealed and judged on (see :mod:`mcp_sansio._stateless`)."""
        auth = channel.auth
        if auth is not None:
            conn.request_state_principal = principal_key(
                auth.subject, auth.client_id, auth.claims.get("iss"))

    def _check_mirrored_headers(
        self, headers: Headers, method: str, params: dict[str, Any] | None, version: str,
    ) -> str | None:
        """What is wrong with the 2026-07-28 mirrored headers (None: they match the body)."""
        meta = (params or {}).get("_meta")
        body_version = meta.get(META_PROTOCOL_VERSION) if type(meta) is dict else None
        if body_version is not None and body_version != version:
            return (f"MCP-Protocol-Version header {version!r} does not match the body's "
                    f"{body_version!r}")
        header_method = headers.get("mcp-method")
        if header_method is None:
            return "the Mcp-Method header is required"
        if header_method != method:
            return f"Mcp-Method header {header_method!r} does not match the body's {method!r}"
        # The method table's subject column: what Mcp-Name mirrors (SEP-2663 for taskId).
        rule = lookup(method, version)
        field = rule.subject if rule is not None else None
        if field is not None:
            body_name = (params or {}).get(field)
            raw = headers.get("mcp-name")
            if raw is None:
                if isinstance(body_name, str):
                    return "the Mcp-Name header is required"
            else:
                name = decode_header_value(raw)
                if name is None:
                    return "the Mcp-Name header holds invalid characters"
                if name != body_name:
                    return f"Mcp-Name header {name!r} does not match the body's {body_name!r}"
        if method == "tools/call" and self.tool_param_headers is not None:
            tool = (params or {}).get("name")
            annotated = self.tool_param_headers(tool) if isinstance(tool, str) else None
            arguments = (params or {}).get("arguments")
            for header, path in (annotated or {}).items():
                raw = headers.get(f"mcp-param-{header}")
                value = param_value(arguments, path)
                if value is None:
                    if raw is not None:
                        return f"Mcp-Param-{header} is present but the argument is not"
                    continue
                if raw is None:
                    return f"the Mcp-Param-{header} header is required"
                text = decode_header_value(raw)
                if text is None:
                    return f"the Mcp-Param-{header} header holds invalid characters"
                if not param_matches(text, value):
                    return f"Mcp-Param-{header} header does not match the argument"
        return None

    # -- GET and DELETE ------------------------------------------------------------------------

    def _get(self, channel: ServerChannel, request: HTTPRequest) -> None:
        headers = request.headers
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in self._handshake_versions:
            self._unsupported_version(channel, version, None)
            return
        if not accepts(headers.get("accept"), "text/event-stream"):
            self._error(channel, 406, ErrorCode.INVALID_REQUEST,
                        "Not Acceptable: Accept must list text/event-stream")
            return
        session = self._session_for(channel, headers)
        if session is None:
            return
        last_event_id = headers.get("last-event-id")
        resuming = last_event_id is not None and self.event_store is not None
        if resuming and self._wait_for(channel, "replay", last_event_id or ""):
            return
        if request.method == "HEAD":
            # RFC 9110 section 9.3.2: the status and header fields a GET would get, no
            # content -- and none of a GET's effects (HEAD is safe, section 9.2.1): no
            # stream is opened, resumed or taken over.
            if resuming and self._replay(session, last_event_id or "", channel) is None:
                self._unknown_event_id(channel)
            elif (not resuming and session._standalone is not None
                  and session._standalone.channel is not None):
                self._stream_conflict(channel)
            else:
                channel.wire.start_response(200, _SSE_HEADERS)
                channel.wire.end_response()
                self._writable[channel] = None
            return
        if resuming:
            self._resume(channel, session, last_event_id or "")
            return
        standalone = session._standalone
        assert standalone is not None
        if standalone.channel is not None:
            self._stream_conflict(channel)
            return
        self._attach(standalone, channel)
        self._drain_backlog(session)
        self._touch(session)

    def _stream_conflict(self, channel: ServerChannel) -> None:
        self._error(channel, 409, ErrorCode.INVALID_REQUEST,
                    "Conflict: this session's standalone stream is already open")

    def _unknown_event_id(self, channel: ServerChannel) -> None:
        self._error(channel, 400, ErrorCode.INVALID_REQUEST,
                    "Bad Request: unknown Last-Event-ID (events may have expired)")

    def _replay(self, session: Session, last_event_id: str,
                channel: ServerChannel | None = None,
                ) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The events after ``last_event_id`` if it names a stream of ``session``: an id of
        another session's stream is unknown here, whoever sends it -- a session replays its
        own streams only (stream ids start with the session's prefix)."""
        assert self.event_store is not None
        found = (channel._answers.get(("replay", last_event_id))
                 if self.shared and channel is not None
                 else self.event_store.replay(last_event_id))
        if found is None or not found[0].startswith(f"{session._prefix}-"):
            return None
        return found

    def _resume(self, channel: ServerChannel, session: Session, last_event_id: str) -> None:
        found = self._replay(session, last_event_id, channel)
        if found is None:
            self._unknown_event_id(channel)
            return
        stream_id, events = found
        standalone = session._standalone
        assert standalone is not None
        stream = standalone if stream_id == standalone.id else session._streams.get(stream_id)
        if self.shared and stream is None:
            self._resume_relay(channel, session, last_event_id, stream_id, events)
            return
        if stream is not None and stream.channel is not None:
            # The client resumed while we still write to the old connection: hand over.
            old = stream.channel
            stream.channel = None
            old.stream = None
            old.wire.abort()
            self._writable[old] = None
        channel.wire.start_response(200, _SSE_HEADERS)
        for event_id, data in events:
            if data and data != STREAM_END:
                channel.wire.send_body(encode_event(data, id=event_id))
        self._writable[channel] = None
        if stream is None or stream.finished:
            channel.wire.end_response()
            return
        stream.channel = channel
        channel.stream = stream
        stream.started = True
        self._sse[stream] = None
        self._arm_keepalive()
        if stream is standalone:
            self._drain_backlog(session)
        self._touch(session)

    def _resume_relay(self, channel: ServerChannel, session: Session, last_event_id: str,
                      stream_id: str, events: list[tuple[str, bytes]]) -> None:
        """A shared server resumes a stream another worker writes (or wrote): what the
        store holds, then what that worker stores after -- the bus brings it, and the
        events that came while the store was read were kept -- until the stream's end
        marker, or the client leaves."""
        parsed = parse_event_id(last_event_id)
        assert parsed is not None  # the store answered for it
        relay = _Stream(session, _Kind.POST, stream_id)
        relay.relayed = parsed[1]
        relay.resumable = True
        relay.channel = channel
        channel.stream = relay
        relay.started = relay.sent = True
        channel.wire.start_response(200, _SSE_HEADERS)
        self._writable[channel] = None
        old = self._relays.get(stream_id)
        if old is not None:  # resumed again here: the newer connection takes the stream
            self._end_relay(old)
        self._relays[stream_id] = relay
        session._streams[stream_id] = relay
        self._sse[relay] = None
        self._arm_keepalive()
        replayed: list[tuple[int, bytes]] = []
        for event_id, data in events:
            found = parse_event_id(event_id)
            if found is not None:
                replayed.append((found[1], data))
        kept = channel._answers.get(("follow", last_event_id), [])
        self._relay(relay, [*replayed, *kept])
        if self._relays.get(stream_id) is relay and stream_writer(stream_id) in (
                self._gone_workers):
            # Its writer is gone: the log holds all there will ever be (issue 18). The
            # response ends after it instead of waiting for live events that cannot come.
            self._end_relay(relay)
            return
        if len(kept) >= self.max_pending_messages and relay.relayed is not None:
            # More came while the store was read than was kept: what was dropped is in the
            # log, so the response ends here and the client resumes from its last id
            # (basic/transports.mdx, "Resumability and Redelivery") rather than miss it.
            self._end_relay(relay)
            return
        self._touch(session)

    def _delete(self, channel: ServerChannel, request: HTTPRequest) -> None:
        version = request.headers.get("mcp-protocol-version")
        if version is not None and version not in self._handshake_versions:
            self._unsupported_version(channel, version, None)
            return
        session = self._session_for(channel, request.headers)
        if session is None:
            return
        if self.shared:  # the 200 waits until the drop is stored: no worker serves it after
            self._hold(session, channel)
        self._end_session(session, SessionEnd.DELETED)
        self._respond(channel, 200)

    # -- legacy HTTP+SSE (2024-11-05) ------------------------------------------------------------

    def _legacy_get(self, channel: ServerChannel, request: HTTPRequest) -> None:
        if not accepts(request.headers.get("accept"), "text/event-stream"):
            self._error(channel, 406, ErrorCode.INVALID_REQUEST,
                        "Not Acceptable: Accept must list text/event-stream")
            return
        if len(self._sessions) >= self.max_sessions:
            self._error(channel, 503, ErrorCode.TOO_MANY_REQUESTS,
                        "Service Unavailable: too many sessions", headers=[("retry-after", "1")])
            return
        session = self._open_session(Era.HANDSHAKE, legacy=True)
        session.auth = channel.auth
        standalone = session._standalone
        assert standalone is not None and session.id is not None
        channel.wire.start_response(200, _SSE_HEADERS)
        endpoint = f"{self.legacy_post_path}?session_id={quote(session.id, safe='')}"
        channel.wire.send_body(encode_event(endpoint.encode("ascii"), event="endpoint"))
        standalone.channel = channel
        standalone.started = True
        channel.stream = standalone
        self._sse[standalone] = None
        self._arm_keepalive()
        self._writable[channel] = None

    def _legacy_post(self, channel: ServerChannel, request: HTTPRequest) -> None:
        ids = parse_qs(request.query).get("session_id")
        if not ids:
            self._error(channel, 400, ErrorCode.INVALID_REQUEST,
                        "Bad Request: the session_id query parameter is required")
            return
        session = self._sessions.get(ids[0])
        if session is None or not session.legacy or session.ended is not None:
            self._error(channel, 404, ErrorCode.INVALID_REQUEST, "Not Found: unknown session")
            return
        if self._bound_elsewhere(channel, session):
            return
        if media_type(request.headers.get("content-type")) != "application/json":
            self._error(channel, 415, ErrorCode.INVALID_REQUEST,
                        "Unsupported Media Type: the body must be application/json")
            return
        parsed = self._parse_body(channel, request.body)
        if parsed is None:
            return
        self._respond(channel, 202)
        session.connection.receive_message(parsed[0], now=self._now)
        self._mark_ready(session)

    # -- sessions ------------------------------------------------------------------------------

    def _mark_ready(self, session: Session) -> None:
        if not session._queued:
            session._queued = True
            self._ready.append(session)

    def _end_session(self, session: Session, reason: SessionEnd) -> None:
        session.ended = reason
        if session.id is not None:
            self._sessions.pop(session.id, None)
            if (self.shared and not session.legacy and not session._quiet
                    and reason in (SessionEnd.DELETED, SessionEnd.CLOSED)):
                # Ended for everyone; one that idled out here may live on elsewhere.
                channels, session._holding = session._holding, []
                self._effects.append(DropSession(session.id, tuple(channels)))
        for stream in [*session._streams.values(), session._standalone]:
            if stream is None:
                continue
            channel = stream.channel
            if channel is not None and not stream.finished:
                if stream.started:
                    self._close_response(stream)
                else:
                    stream.channel = None
                    channel.stream = None
                    self._error(channel, 404, ErrorCode.INVALID_REQUEST,
                                "Not Found: the session has ended")
                    self._pending_channels[channel] = None
            stream.finished = True
            if stream.relayed is not None:  # another worker's stream: not ours to forget
                self._relays.pop(stream.id, None)
            elif self.event_store is not None and stream.resumable and stream.sent:
                self.event_store.forget(stream.id)
        session._streams.clear()
        session._routes.clear()
        session._backlog = None
        if reason is SessionEnd.DELETED or reason is SessionEnd.DISCONNECTED:
            session.connection.receive_eof(now=self._now)
        else:
            session.connection.close(now=self._now)
        self._mark_ready(session)

    def _observe(self, session: Session, event: Event) -> None:
        """Keep streams in step with what the connection reports."""
        if type(event) is CancelRequested:
            stream = session._routes.pop(event.request_id, None)
            if stream is not None:
                stream.pending.discard(event.request_id)
                if not stream.pending and stream.kind is not _Kind.STANDALONE:
                    self._finish(stream)
        elif type(event) is ConnectionClosed:
            session._done = True
            self._listening.pop(session, None)
            self._retire_timers(session)

    # -- routing -------------------------------------------------------------------------------

    def _flush_dirty(self) -> None:
        while self._dirty:
            session = next(iter(self._dirty))
            del self._dirty[session]
            self._route(session)

    def _route(self, session: Session) -> None:
        for message, related, data in session.connection.encoded_messages_to_send():
            stream = self._stream_for(session, message, related)
            if stream is not None:
                self._deliver(stream, message, data)
        if self.response_mode is ResponseMode.SSE:
            for stream in list(session._streams.values()):
                if (stream.processed and not stream.started and not stream.finished
                        and stream.channel is not None and stream.kind is _Kind.POST):
                    if session.era is Era.STATELESS:
                        self._defer_sse(stream)
                    else:
                        self._start_sse(stream)
        if session.era is Era.HANDSHAKE:
            self._update_timer(session)
            if self.shared and not session.legacy:
                self._save(session)

    def _stream_for(self, session: Session, message: Any, related: RequestId | None) -> (
        _Stream | None
    ):
        if session.legacy:  # HTTP+SSE: one stream carries everything
            return session._standalone
        routes = session._routes
        if type(message) is list:  # 2025-03-26 batch replies
            for item in message:
                found = _lookup(routes, item.get("id"))
                if found is not None:
                    return found
            return None
        if "method" not in message:  # a response: only ever on its request's stream
            return _lookup(routes, message.get("id"))
        found = _lookup(routes, related) if related is not None else None
        return found if found is not None else session._standalone

    def _deliver(self, stream: _Stream, message: Any, data: bytes) -> None:
        session = stream.session
        final = False
        if stream.kind is not _Kind.STANDALONE:
            answered = _response_ids(message)
            if answered:
                for request_id in answered:
                    stream.pending.discard(request_id)
                    if session._routes.get(request_id) is stream:
                        del session._routes[request_id]
                final = not stream.pending
        if stream.finished:
            return
        if stream.kind is _Kind.STANDALONE:
            self._deliver_standalone(stream, data)
            return
        channel = stream.channel
        if stream.started:
            self._write(stream, data)
            if final:
                self._finish(stream)
            return
        if channel is None:
            # The client left before anything was written: there is nothing to resume. The
            # answer is lost; what else relates to the request goes where the client can
            # still get it (handshake era: the standalone stream).
            if final:
                self._finish(stream)
            elif session.era is Era.HANDSHAKE and session._standalone is not None:
                self._deliver_standalone(session._standalone, data)
            return
        if final and not stream.sent:
            status = 200
            if session.era is Era.STATELESS and "error" in message:
                status = _STATELESS_STATUS.get(message["error"].get("code"), 200)
            headers = [_JSON]
            init_ok = stream.init and "result" in message
            if init_ok and session.id is not None:
                headers.append(("mcp-session-id", session.id))
            stream.sent = True
            stream.channel = None
            channel.stream = None
            self._respond(channel, status, headers, data)
            self._pending_channels[channel] = None
            self._finish(stream)
            if stream.init and not init_ok:
                self._discard_session(session)
            return
        if self.response_mode is ResponseMode.JSON and stream.kind is _Kind.POST:
            if session.era is Era.HANDSHAKE and session._standalone is not None:
                self._deliver_standalone(session._standalone, data)
            return
        self._start_sse(stream)
        self._write(stream, data)
        if final:
            self._finish(stream)

    def _deliver_standalone(self, stream: _Stream, data: bytes) -> None:
        if stream.channel is not None and stream.started:
            self._write(stream, data)
            return
        session = stream.session
        backlog = session._backlog
        if backlog is None:
            backlog = session._backlog = deque()
        backlog.append(data)
        while len(backlog) > self.max_pending_messages:
            backlog.popleft()

    def _drain_backlog(self, session: Session) -> None:
        standalone = session._standalone
        assert standalone is not None
        backlog = session._backlog
        if backlog is None:
            return
        while backlog and standalone.channel is not None:
            self._write(standalone, backlog.popleft())
        if not backlog:
            session._backlog = None

    def _discard_session(self, session: Session) -> None:
        """initialize failed: the session never existed for the client."""
        channels, session._holding = session._holding, []
        for channel in channels:
            self._release(channel)
        if session.id is not None and self._sessions.get(session.id) is session:
            del self._sessions[session.id]
        session.ended = SessionEnd.CLOSED
        session._done = True
        self._retire_timers(session)

    def _start_sse(self, stream: _Stream) -> None:
        channel = stream.channel
        assert channel is not None
        session = stream.session
        headers = list(_SSE_HEADERS)
        if stream.init and session.id is not None:
            headers.append(("mcp-session-id", session.id))
        channel.wire.start_response(200, headers)
        stream.started = True
        stream.sent = True
        if stream.resumable and self.event_store is not None:
            version = session.connection.protocol_version
            if version is not None and FEATURES[version].sse_priming:
                event_id = self.event_store.store(stream.id, b"")
                channel.wire.send_body(encode_event(b"", id=event_id, retry=self.retry_ms))
            elif self.retry_ms is not None:
                channel.wire.send_body(encode_event(None, retry=self.retry_ms))
        self._sse[stream] = None
        self._arm_keepalive()
        self._writable[channel] = None

    def _defer_sse(self, stream: _Stream) -> None:
        """A 2026-07-28 request processed with no answer yet (its handler runs on): its
        SSE head waits for the first message. If that is the final answer -- a refusal
        such as -32021, whose HTTP status MUST be 400 (2026-07-28 ``schema.json``,
        ``MissingRequiredClientCapabilityError``), from a handler that answers from a
        thread pool or after an await -- it goes out as JSON with its status, whatever
        kind of handler made it; once an SSE stream has started, the status is 200 for
        good. (Handshake-era streams start at once: their priming event gives the client
        an id to resume from, which 2026-07-28 does not have.) A request that stays silent
        gets its head after one keep-alive interval anyway, so that proxies and clients
        that time out an idle response see bytes as they would on any SSE stream."""
        if stream.open_at is not None or self.keepalive_interval is None:
            return
        stream.open_at = self._now + self.keepalive_interval
        self._schedule(stream.open_at, stream.session, "open")

    def _open_deferred(self, session: Session, now: float) -> None:
        for stream in list(session._streams.values()):
            if (stream.open_at is not None and stream.open_at <= now and not stream.started
                    and not stream.finished and stream.channel is not None):
                self._start_sse(stream)

    def _attach(self, stream: _Stream, channel: ServerChannel) -> None:
        stream.channel = channel
        channel.stream = stream
        self._start_sse(stream)

    def _write(self, stream: _Stream, data: bytes) -> None:
        stream.sent = True
        event_id = None
        if stream.resumable and self.event_store is not None:
            event_id = self.event_store.store(stream.id, data)
        channel = stream.channel
        if channel is not None:
            channel.wire.send_body(encode_event(data, id=event_id))
            self._writable[channel] = None

    def _close_response(self, stream: _Stream) -> None:
        """End the HTTP response carrying ``stream`` (the stream itself may go on)."""
        channel = stream.channel
        if channel is None:
            return
        stream.channel = None
        channel.stream = None
        self._sse.pop(stream, None)
        if stream.started:
            channel.wire.end_response()
        else:
            # Nothing was said for it: an empty event stream ends the response.
            channel.wire.start_response(200, _SSE_HEADERS)
            channel.wire.end_response()
        self._writable[channel] = None
        self._pending_channels[channel] = None

    def _finish(self, stream: _Stream) -> None:
        if stream.finished:
            return
        if (self.shared and stream.resumable and stream.sent and stream.relayed is None
                and self.event_store is not None):
            # Its end, for a worker relaying it (a client resumed it there): the marker
            # goes to the log and the bus like any event (_shared.STREAM_END).
            self.event_store.store(stream.id, STREAM_END)
        stream.finished = True
        session = stream.session
        session._streams.pop(stream.id, None)
        if stream.kind is _Kind.LISTEN:
            self._listening.pop(session, None)
        for request_id in stream.pending:
            if session._routes.get(request_id) is stream:
                del session._routes[request_id]
        stream.pending.clear()
        self._close_response(stream)
        self._touch(session)

    def _detach(self, stream: _Stream) -> None:
        """The HTTP response carrying ``stream`` is gone (the client closed or the socket
        broke). Handshake era: the stream waits for resumption (a disconnect is not a
        cancellation). Stateless era: closing the stream cancels its request. Legacy: the
        session ends."""
        channel = stream.channel
        if channel is None:
            return
        stream.channel = None
        channel.stream = None
        self._sse.pop(stream, None)
        session = stream.session
        if stream.relayed is not None:  # the client left a relay: nothing is left to send
            self._end_relay(stream)
            return
        if session.legacy:
            if session.ended is None:
                self._end_session(session, SessionEnd.DISCONNECTED)
            return
        if (session.era is Era.STATELESS or session.connection.sessionless) and (
                not stream.finished):
            # (Sessionless mode too: with no resumption, no one could ever read the answer.)
            for request_id in list(stream.pending):
                session.connection.receive_message(
                    {"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": request_id,
                                "reason": "the client closed the stream"}},
                    now=self._now,
                )
            self._mark_ready(session)
            return
        self._touch(session)


def _is_response(value: Any) -> bool:
    from ..auth._http import HTTPResponse

    return isinstance(value, HTTPResponse)
def _principal(auth: AccessInfo | None) -> list[str | None] | None:
    """Who a session is bound to, as a session table record keeps it: what
    ``ProtectedResource.same_principal`` compares (the subject and its issuer)."""
    if auth is None:
        return None
    issuer = auth.claims.get("iss")
    return [auth.subject, issuer if isinstance(issuer, str) else None]


def _lookup(routes: dict[RequestId, _Stream], key: Any) -> _Stream | None:
    if type(key) is str or type(key) is int:
        return routes.get(key)
    return None


def _response_ids(message: Any) -> list[RequestId]:
    """The request ids a message answers (none for requests and notifications)."""
    if type(message) is list:
        return [item["id"] for item in message
                if type(item) is dict and "method" not in item
                and (type(item.get("id")) is int or type(item.get("id")) is str)]
    if "method" in message:
        return []
    request_id = message.get("id")
    return [request_id] if type(request_id) is int or type(request_id) is str else []

