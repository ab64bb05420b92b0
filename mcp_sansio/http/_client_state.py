"""What an HTTP client's parts share: its exchanges, its channels and the face of the client
they see.

An :class:`Exchange` is one HTTP request and its response -- for a stream, the logical
stream it carries, which a resumption carries on in a new exchange -- and its :class:`Kind`
says what it is for. A :class:`ClientChannel` is one TCP connection (or one connection of
the application's own HTTP library) carrying one exchange at a time. :class:`ClientHost`
is what the client's parts (:mod:`._client_headers`, :mod:`._client_streams`,
:mod:`._client_renewal`, :mod:`._client_legacy`) and its channels use of
:class:`~._client.HTTPClient`: they hold a reference to it under that type, so that they
need not import the client's module.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from .._connection import ClientConnection
from .._events import Event, RequestId
from .._versions import Era, judge_probe
from ._client_exchange import ClientExchangeWire
from ._exchange import ClientExchangeInput, ClientExchangeOutput
from ._sse import SSEParser
from ._wire import ClientWire

__all__ = ["AUTH_CHALLENGE_STATUSES", "ClientChannel", "ClientHost", "Exchange", "Kind",
           "header", "is_auth_challenge", "is_stateless_error"]


class Kind(enum.Enum):
    """What an exchange is for."""

    POST = "post"  # one message (or its retry)
    STANDALONE = "standalone"  # the handshake era's GET stream
    RESUME = "resume"  # GET with Last-Event-ID for a broken POST stream
    DELETE = "delete"
    LEGACY_GET = "legacy-get"  # the HTTP+SSE stream (and its endpoint event)
    REINIT = "reinit"  # the hidden initialize after a 404
    REINIT_NOTE = "reinit-note"  # its notifications/initialized


class Exchange:
    """One HTTP request/response, and for streams the logical stream it carries."""

    __slots__ = (
        "answered", "attempts", "body", "channel", "done", "error_headers", "fresh_only",
        "got_bytes", "ids", "json", "kind", "last_event_id", "message", "method", "retried",
        "retry_ms", "reused", "session_id", "sse", "stateless", "status", "target", "unreachable",
    )

    def __init__(self, kind: Kind, method: str, target: str) -> None:
        self.kind = kind
        self.method = method  # HTTP method
        self.target = target
        self.body = b""
        self.message: Any = None  # the JSON-RPC message a POST carries
        self.ids: tuple[RequestId, ...] = ()  # request ids it carries (or resumes)
        self.answered: set[RequestId] = set()
        self.channel: ClientChannel | None = None
        self.status: int | None = None
        # A refusal's headers (status >= 400 only: kept for TransportFailed.headers).
        self.error_headers: tuple[tuple[str, str], ...] = ()
        self.json: bytearray | None = None
        self.sse: SSEParser | None = None
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self.attempts = 0
        self.retried = False  # already retried after a 404 (re-initialization)
        self.done = False
        self.got_bytes = False
        self.session_id: str | None = None  # the session it was sent for
        self.stateless = False
        self.fresh_only = False  # retry on a new connection after a stale keep-alive
        self.reused = False  # sent on a connection that had carried an exchange before
        self.unreachable = False  # its connection could not be opened

    @property
    def open_ids(self) -> list[RequestId]:
        return [i for i in self.ids if i not in self.answered]


class ClientChannel:
    """One TCP connection of the client. The adapter opens a socket for it when it first
    appears in :meth:`HTTPClient.data_to_send`, feeds :meth:`receive_data` what it reads,
    and closes it once :attr:`closed` is true and its data is written.

    On a client made with ``events=True`` it is one connection of the application's own
    HTTP library instead: send what :meth:`HTTPClient.events_to_send` gives for it, feed
    :meth:`receive_event` the response, drop it on ``CloseConnection``."""

    def __init__(self, client: ClientHost) -> None:
        self._client = client
        #: What frames this connection's requests and responses: the h11 wire for a socket's
        #: bytes, or a :class:`~mcp_sansio.http._client_exchange.ClientExchangeWire` for an
        #: HTTP library that takes and gives exchange events. The client reads only the
        #: exchange events both produce (``next_exchange_event``).
        self.wire: ClientWire | ClientExchangeWire = (
            ClientExchangeWire() if client.events
            else ClientWire(max_header_size=client.max_header_size))
        self.exchange: Exchange | None = None
        self.used = False  # has carried an exchange before (keep-alive reuse)
        self._gone = False

    def __repr__(self) -> str:
        return f"<ClientChannel at 0x{id(self):x}{' closed' if self.closed else ''}>"

    @property
    def closed(self) -> bool:
        return self.wire.closed

    def receive_data(self, data: bytes, *, now: float | None = None) -> None:
        """Bytes read from the socket; ``b""`` is end of file."""
        client = self._client
        client._clock(now)
        self.wire.receive_data(data)
        client._read(self)

    def receive_event(self, event: ClientExchangeInput, *, now: float | None = None) -> None:
        """A response event from the HTTP library (a client made with ``events=True``): the
        head, body pieces as they arrive (an SSE body may be cut anywhere), the end, or
        :class:`~mcp_sansio.http._exchange.PeerClosed` when the connection closed or broke.
        Out-of-order events are answered as a broken connection, never raised."""
        wire = self.wire
        if not isinstance(wire, ClientExchangeWire):
            raise TypeError("receive_event needs a client made with events=True")
        client = self._client
        client._clock(now)
        wire.receive_event(event)
        client._read(self)

    def events_to_send(self) -> list[ClientExchangeOutput]:
        """What the HTTP library should send on this connection now (``events=True``; the
        counterpart of :meth:`data_to_send`)."""
        self._client._writable.pop(self, None)
        wire = self.wire
        return wire.events_to_send() if isinstance(wire, ClientExchangeWire) else []

    def connection_lost(self, *, now: float | None = None) -> None:
        """The socket could not be opened, or broke."""
        client = self._client
        client._clock(now)
        self.wire.receive_data(b"")
        client._read(self)
        if not self.wire.closed:
            self.wire.close()
        client._lost(self)

    def connection_failed(self, *, now: float | None = None) -> None:
        """The socket could not be opened (refused, unreachable): the server is not there,
        so a broken stream this channel was to resume is not tried again (its requests end
        now rather than after every backoff step); otherwise as :meth:`connection_lost`."""
        if self.exchange is not None:
            self.exchange.unreachable = True
        self.connection_lost(now=now)

    def data_to_send(self) -> bytes:
        self._client._writable.pop(self, None)
        return self.wire.data_to_send()


class ClientHost(Protocol):
    """What the client's parts and channels use of :class:`~._client.HTTPClient`."""

    connection: ClientConnection
    url: str
    scheme: str
    host: str
    port: int
    events: bool
    max_header_size: int
    session_id: str | None
    max_reconnects: int
    reconnect_delay: float
    max_reconnect_delay: float
    extra_headers: list[tuple[str, str]]
    request_headers: Callable[[str, str], list[tuple[str, str]]] | None
    _now: float
    _target: str
    _authority: str
    _writable: dict[ClientChannel, None]
    _events: deque[Event]
    _by_id: dict[RequestId, Exchange]
    _init_id: RequestId | None
    _init_params: dict[str, Any] | None
    _standalone: Exchange | None
    _standalone_refused: bool
    _closing: bool
    _gate: Exchange | None
    _gated: list[Exchange]

    def _clock(self, now: float | None) -> float: ...
    def _read(self, channel: ClientChannel) -> None: ...
    def _lost(self, channel: ClientChannel) -> None: ...
    def _start(self, exchange: Exchange) -> None: ...
    def _drop_channel(self, channel: ClientChannel) -> None: ...
    def _fail(self, exchange: Exchange, status: int | None, detail: str,
              body: bytes = b"") -> None: ...
    def _refused(self, exchange: Exchange, status: int, body: bytes) -> None: ...
    def _on_message(self, exchange: Exchange, data: bytes) -> None: ...
    def _renewed(self, previous: str) -> None: ...


#: Statuses that, with a ``WWW-Authenticate`` header, are an authorization challenge rather
#: than a server that does not speak Streamable HTTP: ``basic/authorization.mdx``
#: (2025-06-18 onwards) answers a request without a valid token 401 and one with too few
#: scopes 403 ``insufficient_scope`` (RFC 6750 §3.1), each with the challenge. The legacy
#: fallback of ``basic/transports.mdx`` "Backwards Compatibility" (any 4xx to the
#: ``initialize`` POST) must not take them for an old server: the client's authorization
#: hook answers them (TransportFailed.headers carries the challenge).
AUTH_CHALLENGE_STATUSES = frozenset({401, 403})


def is_auth_challenge(exchange: Exchange, status: int) -> bool:
    return status in AUTH_CHALLENGE_STATUSES and any(
        name.lower() == "www-authenticate" for name, _ in exchange.error_headers)


def header(headers: tuple[tuple[str, str], ...], name: str) -> str | None:
    """The first value of the header ``name`` (lower-case) in a response head: a scan, since
    the client reads two headers of a response of a few; an HTTP library may give the names
    in any case (RFC 9110 section 5.1: they are case-insensitive)."""
    for key, value in headers:
        if key == name or key.lower() == name:
            return value
    return None


def is_stateless_error(value: Any) -> bool:
    """Whether a body is a recognised stateless-era JSON-RPC error (judge_probe)."""
    return type(value) is dict and "error" in value and judge_probe(value) is Era.STATELESS

