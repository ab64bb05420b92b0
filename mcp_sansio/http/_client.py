"""The HTTP client: Streamable HTTP (both eras) and legacy HTTP+SSE, sans I/O.

Theory of operation
-------------------
An :class:`HTTPClient` wraps one :class:`~mcp_sansio.ClientConnection`. The application
talks MCP to that connection as on stdio (``client.connection.send_request(...)``); the
client turns each outgoing message into an HTTP exchange and each response into connection
input.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import attrs

from .. import _codec
from .._capabilities import SESSION_OPENERS
from .._codec import InvalidMessage
from .._connection import ClientConnection
from .._errors import NEED_DATA, LocalProtocolError, NeedData
from .._events import Event, RequestId
from .._state import State
from .._versions import Era
from ._client_exchange import ClientExchangeWire
from ._client_headers import RequestHeaders
from ._client_legacy import LegacyFallback
from ._client_renewal import SessionRenewal
from ._client_state import (
    AUTH_CHALLENGE_STATUSES,
    ClientChannel,
    Exchange,
    Kind,
    header,
    is_auth_challenge,
)
from ._client_streams import StreamResumption
from ._exchange import (
    ClientExchangeOutput,
    PeerClosed,
    ResponseData,
    ResponseEnded,
    ResponseStarted,
)
from ._headers import media_type
from ._refusal import MAX_BODY, explain
from ._sse import DEFAULT_MAX_EVENT_SIZE, SSEError, SSEParser
from ._wire import DEFAULT_MAX_HEADER_SIZE, ClientWire

__all__ = [
    "AUTH_CHALLENGE_STATUSES",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_RECONNECTS",
    "DEFAULT_MAX_RECONNECT_DELAY",
    "DEFAULT_RECONNECT_DELAY",
    "ClientChannel",
    "HTTPClient",
    "SessionRenewed",
    "Transport",
    "TransportFailed",
]

#: How many TCP connections the client opens at most: 16. Long-lived streams (the standalone
#: GET, listen streams, slow tool calls) each hold one; the rest queue for a free one.
DEFAULT_MAX_CONNECTIONS = 16
#: Attempts to resume one broken stream before giving up on it: 5.
DEFAULT_MAX_RECONNECTS = 5
#: Delay before resuming when the server sent no ``retry`` field: 1 s.
DEFAULT_RECONNECT_DELAY = 1.0
#: The longest backoff between two attempts: 30 s.
DEFAULT_MAX_RECONNECT_DELAY = 30.0
#: How long requests after the handshake wait for the standalone stream's response head: 1 s.
#: Servers send it at once (it carries no event), so this only bounds the delay a server that
#: holds it back would cause, once per session.
_STANDALONE_WAIT = 1.0

#: JSON-RPC code of the error the client makes up for an HTTP failure of the era probe or of
#: initialize (implementation-defined range; it only ever reaches the connection's judge).
_HTTP_FAILURE_CODE = -32000


#: What a channel's wire gives to send: bytes, or exchange events (``events=True``).
_Out = TypeVar("_Out", bytes, list[ClientExchangeOutput])


class Transport(enum.Enum):
    """Which HTTP transport to use (or which one was found)."""

    #: Streamable HTTP, falling back to legacy HTTP+SSE when ``initialize`` is refused.
    AUTO = "auto"
    #: Streamable HTTP only (2025-03-26 and later; both eras).
    STREAMABLE = "streamable"
    #: The 2024-11-05 HTTP+SSE transport only.
    LEGACY = "legacy"


@attrs.frozen(kw_only=True)
class SessionRenewed(Event):
    """The server forgot our session (404) and the client initialized a new one, with the
    same parameters, and retried what had failed. Whatever the old session held on the
    server (resource subscriptions, the log level) is gone."""

    previous_session_id: str
    session_id: str | None


@attrs.frozen(kw_only=True)
class TransportFailed(Event):
    """An HTTP exchange failed without a JSON-RPC answer (informational: the requests it
    carried end with their own :class:`~mcp_sansio.RequestCancelled`)."""

    status: int | None
    detail: str
    request_ids: tuple[RequestId, ...] = ()
    #: The refusing response's headers (lower-case names), for a status >= 400: what an
    #: authorization hook needs from a 401/403 (its ``WWW-Authenticate`` challenge,
    #: ``basic/authorization.mdx`` 2025-06-18 onwards; RFC 9728 section 5.1).
    headers: tuple[tuple[str, str], ...] = ()
    #: The refusing response's body (at most :data:`~mcp_sansio.http._refusal.MAX_BODY`
    #: bytes), for a status >= 400: what the server said about why.
    body: bytes = b""


class HTTPClient:
    """An MCP client over HTTP, as a state machine with no I/O. See :doc:`/http`.

    :param connection: the MCP connection to carry. Its ``versions`` decide the era probe.
    :param url: the server's MCP endpoint (``http://host:port/path``).
    :param headers: extra headers on every request (e.g. ``Authorization``).
    :param transport: :class:`Transport` to use (``AUTO`` falls back to legacy HTTP+SSE).
    :param standalone_stream: open the handshake era's GET stream after initialization.
    :param max_body_size: the largest JSON response body and SSE event accepted.
    :param max_connections: TCP connections at most.
    :param max_reconnects: attempts to resume one broken stream.
    :param reconnect_delay: delay before resuming when the server gave no ``retry``.
    :param max_reconnect_delay: the longest backoff.
    :param events: the application's own HTTP library carries the exchanges, not sockets:
        take requests as exchange events from :meth:`events_to_send` and give responses back
        with :meth:`ClientChannel.receive_event` (:mod:`mcp_sansio.http._exchange`; "Bring
        your own HTTP client" in :doc:`/http`). ``max_header_size`` is then the library's
        business.
    """

    def __init__(
        self,
        connection: ClientConnection,
        url: str,
        *,
        headers: Iterable[tuple[str, str]] = (),
        transport: Transport = Transport.AUTO,
        standalone_stream: bool = True,
        max_body_size: int = DEFAULT_MAX_EVENT_SIZE,
        max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_reconnects: int = DEFAULT_MAX_RECONNECTS,
        reconnect_delay: float = DEFAULT_RECONNECT_DELAY,
        max_reconnect_delay: float = DEFAULT_MAX_RECONNECT_DELAY,
        events: bool = False,
    ) -> None:
        self.connection = connection
        #: Whether the channels speak exchange events (``events=True``) rather than bytes.
        self.events = events
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url
        #: ``http`` or ``https`` (the adapter does TLS for ``https``).
        self.scheme = parts.scheme
        #: Where the adapter connects.
        self.host: str = parts.hostname
        self.port: int = parts.port or (443 if parts.scheme == "https" else 80)
        self._authority = parts.netloc.rpartition("@")[2]
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.extra_headers = list(headers)
        #: Headers made anew per request from its method and URL (a DPoP proof, RFC 9449 §4).
        self.request_headers: Callable[[str, str], list[tuple[str, str]]] | None = None
        self.requested_transport = transport
        #: The transport in use once known (None before).
        self.transport: Transport | None = (
            Transport.LEGACY if transport is Transport.LEGACY else None)
        self.standalone_stream = standalone_stream
        self.max_body_size = max_body_size
        self.max_header_size = max_header_size
        self.max_connections = max_connections
        self.max_reconnects = max_reconnects
        self.reconnect_delay = reconnect_delay
        self.max_reconnect_delay = max_reconnect_delay
        #: The session id the server gave (handshake era), or None.
        self.session_id: str | None = None

        self._now = -math.inf
        self._channels: list[ClientChannel] = []
        self._writable: dict[ClientChannel, None] = {}
        self._queue: deque[Exchange] = deque()
        self._events: deque[Event] = deque()
        self._by_id: dict[RequestId, Exchange] = {}  # request id -> exchange carrying it
        self._methods: dict[RequestId, str] = {}  # our request ids in flight -> method
        self._init_params: dict[str, Any] | None = None
        self._init_id: RequestId | None = None
        self._standalone: Exchange | None = None
        self._standalone_refused = False
        #: The parts: headers, stream resumption, session renewal (404), legacy fallback.
        self._headers = RequestHeaders(self)
        self._streams = StreamResumption(self)
        self._renewal = SessionRenewal(self)
        self._legacy = LegacyFallback(self, allowed=transport is Transport.AUTO)
        self._failed: set[RequestId] = set()  # ended here: drop their cancellations
        self._closing = False
        # notifications/initialized (or the renewal's) in flight, what waits for it (_outgoing)
        self._gate: Exchange | None = None
        self._gated: list[Exchange] = []
        self._gate_stream: Exchange | None = None  # the standalone GET opened meanwhile
        self._gate_deadline: float | None = None
        #: The last HTTP failure of the era probe or of ``initialize`` (None: none). Those reach
        #: the connection as a made-up JSON-RPC error (it judges the probe itself), so an
        #: adapter reads this to say in HTTP terms why the connection could not be made.
        self.connect_failure: TransportFailed | None = None

    # -- public API ----------------------------------------------------------------------------

    def connect(self, *, now: float | None = None, era: Era | None = None) -> RequestId:
        """Start the connection: the era probe or ``initialize`` (see
        :meth:`ClientConnection.connect`). Returns the first request's id."""
        self._clock(now)
        request_id = self.connection.connect(now=self._now, era=era)
        self._pump()
        return request_id

    def next_event(self) -> Event | NeedData:
        """The next event: the connection's, or one of this module's
        (:class:`SessionRenewed`, :class:`TransportFailed`)."""
        while True:
            if self._events:
                return self._events.popleft()
            event = self.connection.next_event()
            if event is NEED_DATA:
                self._pump()
                if self._events:
                    continue
                return NEED_DATA
            return event

    def data_to_send(self) -> list[tuple[ClientChannel, bytes]]:
        """``(channel, bytes)`` to write; a channel seen for the first time needs a new
        socket to (:attr:`host`, :attr:`port`); ``(channel, b"")`` with ``channel.closed``: close
        it."""
        if self.events:
            raise TypeError("a client made with events=True sends events: use events_to_send")
        return self._flush(lambda wire: wire.data_to_send())

    def events_to_send(self) -> list[tuple[ClientChannel, list[ClientExchangeOutput]]]:
        """``(channel, events)`` for the HTTP library to send, on a client made with
        ``events=True`` (the counterpart of :meth:`data_to_send`): a channel seen for the first
        time is a new connection to (:attr:`host`, :attr:`port`); its requests come as
        ``RequestStarted``, ``RequestData`` and ``RequestEnded``; ``CloseConnection`` (or
        ``(channel, [])`` with ``channel.closed``, once) means drop that connection, the
        response under way included."""
        if not self.events:
            raise TypeError("events_to_send needs a client made with events=True")
        return self._flush(lambda wire: wire.events_to_send()
                           if isinstance(wire, ClientExchangeWire) else [])

    def _flush(self, take: Callable[[ClientWire | ClientExchangeWire], _Out]
               ) -> list[tuple[ClientChannel, _Out]]:
        """What each written-to channel's wire gives (``take``), and the closed channels
        once (forgotten then)."""
        self._pump()
        out: list[tuple[ClientChannel, _Out]] = []
        for channel in list(self._writable):
            data = take(channel.wire)
            if channel.closed:
                if channel._gone and not data:
                    continue
                channel._gone = True
                if channel in self._channels:
                    self._channels.remove(channel)
            elif not data:
                continue
            out.append((channel, data))
        self._writable.clear()
        return out

    def next_deadline(self) -> float | None:
        own = self._streams.next_deadline()
        if self._gate_deadline is not None and (own is None or self._gate_deadline < own):
            own = self._gate_deadline
        core = self.connection.next_deadline()
        if own is None:
            return core
        return own if core is None else min(own, core)

    def handle_timeout(self, now: float) -> None:
        now = self._clock(now)
        self.connection.handle_timeout(now)
        for exchange in self._streams.due(now):
            if not exchange.done and not self._closing:
                self._start(exchange)
        self._pump()

    def close(self, *, now: float | None = None) -> None:
        """End the session: DELETE it (handshake era), close every stream, close the
        connection (pending requests end with :class:`~mcp_sansio.RequestAborted`)."""
        self._clock(now)
        if self._closing:
            return
        self._gate = self._gate_stream = self._gate_deadline = None
        self._gated.clear()
        if self.session_id is not None and self.transport is not Transport.LEGACY:
            delete = Exchange(Kind.DELETE, "DELETE", self._target)
            delete.session_id = self.session_id
            self._closing = True
            for channel in list(self._channels):
                self._drop_channel(channel)
            self._queue.clear()
            self._start(delete)
        else:
            self._closing = True
            for channel in list(self._channels):
                self._drop_channel(channel)
            self._queue.clear()
        if self.connection.state is not State.CLOSED:
            self.connection.close(now=self._now)
            self.connection.encoded_messages_to_send()

    # -- time ----------------------------------------------------------------------------------

    def _clock(self, now: float | None) -> float:
        if now is not None and now > self._now:
            self._now = float(now)
        return self._now

    # -- outgoing ------------------------------------------------------------------------------

    def _pump(self) -> None:
        """Turn what the connection queued into exchanges, and keep the standalone stream."""
        if self._closing:
            self.connection.encoded_messages_to_send()
            return
        if self._gate is not None:
            self._release_gate()
        for message, _related, data in self.connection.encoded_messages_to_send():
            self._outgoing(message, data)
        if (
            self.standalone_stream and self._standalone is None and not self._standalone_refused
            and self.transport is Transport.STREAMABLE and self.session_id is not None
            and self._renewal.renewing is None
            and self.connection.state is State.OPERATING
        ):
            self._open_standalone()

    def _outgoing(self, message: Any, data: bytes) -> None:
        conn = self.connection
        if type(message) is dict and message.get("method") == "notifications/cancelled":
            target = (message.get("params") or {}).get("requestId")
            if target in self._failed:
                self._failed.discard(target)
                return
            if conn.state is State.STATELESS or conn.era is Era.STATELESS:
                # 2026-07-28 over HTTP: closing the request's stream is the cancellation.
                self._abort_request(target)
                return
            if isinstance(target, str | int):
                self._methods.pop(target, None)
                self._by_id.pop(target, None)
        ids: tuple[RequestId, ...] = ()
        method = message.get("method") if type(message) is dict else None
        if type(message) is dict and "id" in message and method is not None:
            ids = (message["id"],)
            self._methods[message["id"]] = method
            if method in SESSION_OPENERS:
                self._init_params = message.get("params")
                self._init_id = message["id"]
                self.connect_failure = None  # the probe's failure does not explain this one
        exchange = Exchange(Kind.POST, "POST", self._target)
        exchange.message = message
        exchange.body = data
        exchange.ids = ids
        exchange.stateless = conn.state in (State.STATELESS, State.PROBING) and bool(ids)
        for request_id in ids:
            self._by_id[request_id] = exchange
        if method == "notifications/initialized":
            self._gate = exchange
        elif self._gate is not None:
            # Each POST may travel on its own TCP connection, so the server could read a request
            # before notifications/initialized and refuse it (lifecycle.mdx: the handshake
            # completes with that notification). Hold what follows until it is answered (202).
            if self.transport is Transport.LEGACY and self._legacy.endpoint is not None:
                exchange.target = self._legacy.endpoint
            self._gated.append(exchange)
            return
        if self.transport is Transport.LEGACY:
            if self._legacy.endpoint is None:
                self._legacy.pending.append(exchange)
                if not self._legacy.tried:
                    self._start_legacy()
                return
            exchange.target = self._legacy.endpoint
        self._start(exchange)

    def _start(self, exchange: Exchange) -> None:
        """Send an exchange on a free channel (or queue it until one is free)."""
        exchange.status = None
        exchange.error_headers = ()
        exchange.json = None
        exchange.sse = None
        exchange.got_bytes = False
        exchange.unreachable = False
        exchange.done = False
        channel = None
        if not exchange.fresh_only:
            channel = next((c for c in self._channels
                            if c.exchange is None and not c.closed and not c.wire.busy), None)
        if channel is None:
            if len(self._channels) >= self.max_connections and not exchange.fresh_only:
                self._queue.append(exchange)
                return
            channel = ClientChannel(self)
            self._channels.append(channel)
        exchange.fresh_only = False
        self._send_on(channel, exchange)

    def _send_on(self, channel: ClientChannel, exchange: Exchange) -> None:
        exchange.channel = channel
        channel.exchange = exchange
        exchange.reused = channel.used
        channel.used = True
        channel.wire.send_request(exchange.method, exchange.target,
                                  self._headers.of(exchange,
                                                   legacy=self.transport is Transport.LEGACY),
                                  exchange.body)
        self._writable[channel] = None

    def _free(self, channel: ClientChannel) -> None:
        """The channel finished an exchange: give it the next queued one (unless handling the
        end of the last one already gave it a new exchange)."""
        if channel.exchange is not None and not channel.closed:
            return
        channel.exchange = None
        if self._closing and not channel.closed:
            channel.wire.close()
        if channel.closed:
            if channel in self._channels:
                self._channels.remove(channel)
            self._writable[channel] = None
        while self._queue:
            exchange = self._queue.popleft()
            if exchange.done:
                continue
            if not channel.closed and channel.exchange is None:
                self._send_on(channel, exchange)
                return
            if len(self._channels) < self.max_connections:
                fresh = ClientChannel(self)
                self._channels.append(fresh)
                self._send_on(fresh, exchange)
                return
            self._queue.appendleft(exchange)
            return

    def _drop_channel(self, channel: ClientChannel) -> None:
        exchange = channel.exchange
        if exchange is not None:
            exchange.done = True
            exchange.channel = None
        channel.exchange = None
        channel.wire.close()
        if channel in self._channels:
            self._channels.remove(channel)
        self._writable[channel] = None

    def _abort_request(self, request_id: Any) -> None:
        """Stateless era: close the stream carrying ``request_id`` (the cancellation)."""
        exchange = self._by_id.pop(request_id, None) if isinstance(request_id, str | int) \
            else None
        self._methods.pop(request_id, None)
        if exchange is None:
            return
        if exchange in self._queue:
            self._queue.remove(exchange)
            exchange.done = True
            return
        channel = exchange.channel
        exchange.done = True
        if channel is not None:
            self._drop_channel(channel)

    # -- incoming ------------------------------------------------------------------------------

    def _read(self, channel: ClientChannel) -> None:
        """Read the channel's response events (whichever wire produced them)."""
        wire = channel.wire
        while True:
            event = wire.next_exchange_event()
            if event is None:
                break
            exchange = channel.exchange
            if exchange is None:
                continue
            if isinstance(event, ResponseData):
                self._on_body(exchange, event.data)
            elif isinstance(event, ResponseStarted):
                exchange.got_bytes = True
                self._on_head(exchange, event)
            elif isinstance(event, ResponseEnded):
                self._on_end(exchange, broken=False)
                self._free(channel)
            elif isinstance(event, PeerClosed):
                exchange.got_bytes = exchange.got_bytes or wire.received > 0
                self._on_end(exchange, broken=True)
                self._free(channel)
                break
            if channel.exchange is not exchange:
                continue
        if wire.closed and channel.exchange is None:
            self._free(channel)

    def _lost(self, channel: ClientChannel) -> None:
        exchange = channel.exchange
        if exchange is not None:
            self._on_end(exchange, broken=True)
        self._free(channel)

    def _on_head(self, exchange: Exchange, head: ResponseStarted) -> None:
        exchange.status = head.status
        if head.status >= 400:
            exchange.error_headers = tuple((k.lower(), v) for k, v in head.headers)
        if exchange.kind is Kind.STANDALONE and head.status == 200:
            exchange.attempts = 0  # reopened: a later break starts a fresh backoff
        if self.transport is None and exchange.kind is Kind.POST and 200 <= head.status < 300:
            self.transport = Transport.STREAMABLE
        if exchange.kind in (Kind.POST, Kind.REINIT) and head.status == 200:
            session_id = header(head.headers, "mcp-session-id")
            if session_id is not None:
                if exchange.kind is Kind.REINIT:
                    exchange.session_id = session_id
                elif exchange.ids and exchange.ids[0] == self._init_id:
                    self.session_id = session_id
        ctype = media_type(header(head.headers, "content-type"))
        if 200 <= head.status < 300 and ctype == "text/event-stream":
            exchange.sse = SSEParser(max_event_size=self.max_body_size)
        else:
            exchange.json = bytearray()

    def _on_body(self, exchange: Exchange, data: bytes) -> None:
        if exchange.sse is not None:
            try:
                events = exchange.sse.feed(data)
            except SSEError:
                self._abandon(exchange, "an SSE event was too large")
                return
            if exchange.sse.retry is not None:
                exchange.retry_ms = exchange.sse.retry
            for event in events:
                if event.id is not None:
                    exchange.last_event_id = event.id
                    exchange.attempts = 0
                if exchange.kind is Kind.LEGACY_GET and event.event == "endpoint":
                    self._legacy.on_endpoint(exchange, event.data)
                    continue
                if event.event != "message" or not event.data:
                    continue  # priming events and unknown event types
                self._on_message(exchange, event.data)
            if exchange.sse.last_event_id is not None:
                exchange.last_event_id = exchange.sse.last_event_id
        elif exchange.json is not None:
            exchange.json += data
            if len(exchange.json) > self.max_body_size:
                self._abandon(exchange, "the response body is too large")

    def _abandon(self, exchange: Exchange, detail: str) -> None:
        channel = exchange.channel
        if channel is not None:
            self._drop_channel(channel)
        self._fail(exchange, exchange.status, detail)

    def _on_message(self, exchange: Exchange, data: bytes) -> None:
        """One JSON-RPC message (or batch) from the server: to the connection."""
        try:
            value = _codec.decode(data, self.connection.max_depth)
        except InvalidMessage:
            self.connection.receive_message(data, now=self._now)
            return
        self._on_value(exchange, value)

    def _on_value(self, exchange: Exchange, value: Any) -> None:
        """:meth:`_on_message` once the JSON is decoded."""
        if exchange.kind is Kind.REINIT:
            self._renewal.on_answer(exchange, value)
            return
        items = value if type(value) is list else [value]
        for item in items:
            if type(item) is dict and "method" not in item:
                request_id = item.get("id")
                if isinstance(request_id, str | int):
                    self._answered(request_id, exchange, item)
        self.connection.receive_message(value, now=self._now)

    def _answered(self, request_id: RequestId, exchange: Exchange, item: dict[str, Any]) -> None:
        exchange.answered.add(request_id)
        carrier = self._by_id.pop(request_id, None)
        if carrier is not None and carrier is not exchange:
            carrier.answered.add(request_id)
        method = self._methods.pop(request_id, None)
        if method == "tools/list" and type(item.get("result")) is dict:
            self._headers.learn_tools(item["result"])

    def _on_end(self, exchange: Exchange, *, broken: bool) -> None:
        channel = exchange.channel
        exchange.channel = None
        if channel is not None and channel.exchange is exchange:
            channel.exchange = None
        if exchange.done:
            return
        status = exchange.status
        if broken and not exchange.got_bytes and exchange.reused:
            # A kept-alive connection the server had closed meanwhile: once more on a new one.
            exchange.reused = False
            exchange.fresh_only = True
            self._start(exchange)
            return
        if exchange.json is not None and status is not None and not broken:
            self._on_json(exchange, status, bytes(exchange.json))
            return
        if exchange.sse is not None or exchange.kind in (
            Kind.RESUME, Kind.STANDALONE, Kind.LEGACY_GET,
        ):
            self._on_stream_end(exchange, broken=broken)
            return
        self._fail(exchange, status, "the server is unreachable" if exchange.unreachable
                   else "the connection broke" if broken else "no response")

    def _on_json(self, exchange: Exchange, status: int, body: bytes) -> None:
        kind = exchange.kind
        if status == 404 and exchange.session_id is not None and kind not in (
            Kind.DELETE, Kind.REINIT, Kind.REINIT_NOTE,
        ):
            self._renewal.session_gone(exchange)
            return
        if kind is Kind.DELETE:
            exchange.done = True
            return
        if kind is Kind.REINIT:
            if status == 200 and body:
                try:
                    value = _codec.decode(body, self.connection.max_depth)
                except InvalidMessage:
                    value = None
                self._renewal.on_answer(exchange, value)
            else:
                self._renewal.failed(f"HTTP {status}")
            return
        if kind is Kind.REINIT_NOTE:
            exchange.done = True
            return
        if kind in (Kind.STANDALONE, Kind.RESUME, Kind.LEGACY_GET):
            if kind is Kind.STANDALONE:
                if status == 405:  # the server offers no standalone stream
                    self._standalone_refused = True
                    self._standalone = None
                    exchange.done = True
                else:
                    self._streams.reconnect(exchange)
                return
            if kind is Kind.LEGACY_GET:
                self._legacy.failed(exchange, status)
                return
            self._refused(exchange, status, body)
            return
        if not exchange.ids:  # (a POST from here on)
            exchange.done = True  # 202 for a notification or a response
            if status >= 400:  # refused: nothing to end, but the application may want to know
                why = explain(exchange.error_headers, body[:MAX_BODY]).summary()
                self._events.append(TransportFailed(
                    status=status, detail=f"a message was refused (HTTP {status})"
                    + (f": {why}" if why else ""),
                    headers=exchange.error_headers, body=body[:MAX_BODY]))
            return
        if body:
            try:
                value = _codec.decode(body, self.connection.max_depth)
            except InvalidMessage:
                value = None
            if value is not None and self._carries_answer(exchange, value) and not (
                    is_auth_challenge(exchange, status)):
                # An authorization challenge is the transport's failure even when its body
                # answers the request (a tool's scopes, RFC 6750 §3.1): the client's
                # authorization retries it after a step-up, else its error says why.
                if (
                    status >= 400 and exchange.ids[0] == self._init_id
                    and self._legacy.allows(exchange, status, value)
                ):
                    self._legacy.init_refusal = (status, body, True)
                    self._start_legacy()
                    return
                exchange.done = True
                self._on_value(exchange, value)  # decoded just above: not twice
                return
        if status == 202:
            exchange.done = True  # the answer will come on another stream (legacy)
            return
        if exchange.ids and exchange.ids[0] == self._init_id and self._legacy.allows(
            exchange, status, None
        ):
            self._legacy.init_refusal = (status, body, False)
            self._start_legacy()
            return
        self._refused(exchange, status, body)

    def _carries_answer(self, exchange: Exchange, value: Any) -> bool:
        items = value if type(value) is list else [value]
        return any(type(item) is dict and "method" not in item and item.get("id") in exchange.ids
                   for item in items)

    def _on_stream_end(self, exchange: Exchange, *, broken: bool) -> None:
        if exchange.kind is Kind.LEGACY_GET:
            exchange.done = True
            if self._legacy.endpoint is None:
                self._legacy.failed(exchange, exchange.status)
            elif not self._closing:
                # HTTP+SSE cannot be resumed: the session is over.
                self.connection.receive_eof(now=self._now)
            return
        self._streams.ended(exchange, broken=broken)

    def _refused(self, exchange: Exchange, status: int, body: bytes) -> None:
        """An HTTP status without a JSON-RPC answer: fail with what the server said why."""
        body = body[:MAX_BODY] if status >= 400 else b""
        why = explain(exchange.error_headers, body).summary() if status >= 400 else ""
        self._fail(exchange, status, f"HTTP {status}: {why}" if why else f"HTTP {status}",
                   body)

    def _fail(self, exchange: Exchange, status: int | None, detail: str,
              body: bytes = b"") -> None:
        """An exchange failed without a JSON-RPC answer: end what it carried."""
        exchange.done = True
        open_ids = exchange.open_ids
        if exchange.kind is Kind.STANDALONE:
            self._standalone = None
            self._standalone_refused = True
            return
        if not open_ids:
            return
        reason = detail if status is None or detail.startswith(f"HTTP {status}") \
            else f"{detail} (HTTP {status})"
        headers = exchange.error_headers if status is not None else ()
        conn = self.connection
        cancelled = []
        for request_id in open_ids:
            self._by_id.pop(request_id, None)
            method = self._methods.pop(request_id, None)
            if conn.state is State.PROBING or method in SESSION_OPENERS:
                self.connect_failure = TransportFailed(status=status, detail=detail,
                                                       request_ids=(request_id,),
                                                       headers=headers, body=body)
                # The connection judges these answers itself: an HTTP failure is "anything
                # else" -> fall back (probe) or close (initialize, with this reason).
                conn.receive_message(_codec.error_message(
                    request_id, _HTTP_FAILURE_CODE, f"HTTP failure: {reason}"), now=self._now)
                continue
            try:
                conn.cancel(request_id, reason=f"HTTP failure: {reason}", now=self._now)
            except LocalProtocolError:
                continue
            self._failed.add(request_id)
            cancelled.append(request_id)
        if cancelled:
            # Before the connection's RequestCancelled events (ours are handed out first).
            self._events.append(TransportFailed(status=status, detail=reason,
                                                request_ids=tuple(cancelled),
                                                headers=headers, body=body))

    def _renewed(self, previous: str) -> None:
        """A renewal made a new session (:mod:`._client_renewal`): tell the application."""
        self._events.append(SessionRenewed(previous_session_id=previous,
                                           session_id=self.session_id))

    # -- the standalone stream -----------------------------------------------------------------

    def _open_standalone(self) -> None:
        exchange = Exchange(Kind.STANDALONE, "GET", self._target)
        self._standalone = exchange
        if self._gate is not None:
            # Requests wait for this stream's head too (bounded): a server may send a message
            # that is not a response on any open stream, and one that answers GET late would
            # otherwise see it open only after the requests that follow.
            self._gate_stream = exchange
            self._gate_deadline = self._now + _STANDALONE_WAIT
        self._start(exchange)

    def _release_gate(self) -> None:
        """Send what waited for the handshake's end (see :meth:`_outgoing`) once
        ``notifications/initialized`` is answered and the standalone stream is open."""
        assert self._gate is not None
        if not self._gate.done:
            return
        stream = self._gate_stream
        if (
            stream is not None and not stream.done and stream.status is None
            and self._gate_deadline is not None and self._now < self._gate_deadline
        ):
            return
        self._gate = self._gate_stream = self._gate_deadline = None
        gated, self._gated = self._gated, []
        for exchange in gated:
            if not exchange.done:
                self._start(exchange)

    # -- legacy HTTP+SSE (:mod:`._client_legacy`) ----------------------------------------------

    def _start_legacy(self) -> None:
        self.transport = Transport.LEGACY
        self._legacy.start()
