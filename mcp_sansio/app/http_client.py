"""The runtime-free half of an MCP client over HTTP: :class:`ClientLogic` on top of the
sans-IO :class:`mcp_sansio.http.HTTPClient`.

Theory of operation
-------------------
On stdio a client session is one byte stream: :meth:`Session.feed` hands bytes to the
connection and :meth:`Session.service` writes ``conn.data_to_send()`` to one pipe. Over HTTP
the connection's messages travel as HTTP exchanges on several TCP connections, which the
sans-IO :class:`~mcp_sansio.http.HTTPClient` manages as *channels*. :class:`HTTPClientLogic`
is :class:`~mcp_sansio.app.session.ClientLogic` (the same calls, callbacks, listen streams and
``input_required`` handling as every stdio client) with the pump rewired to that HTTP
client:

* events come from :meth:`HTTPClient.next_event` (the connection's events, plus
  :class:`~mcp_sansio.http.SessionRenewed` and :class:`~mcp_sansio.http.TransportFailed`);
* output is ``(channel, bytes)`` pairs from :meth:`HTTPClient.data_to_send`, handed to the
  runtime's :meth:`_send`;
* the one timer follows :meth:`HTTPClient.next_deadline` (the core's request timeouts and
  the HTTP client's stream resumptions alike) and fires :meth:`on_timer`.

How a runtime uses it
---------------------
A runtime's client class mixes this in before its client API class (the colour), and holds
its runtime object as every session does (``session.runtime``), e.g. on asyncio::

    class HTTPClientSession(HTTPClientLogic, AsyncClient): ...

(Four or five classes of ours: the one place left where a session resolves through more
than three, see docs/architecture.rst.)

and is made with :meth:`HTTPClientLogic.create_http` (``url``, ``headers``,
``http_options`` for :class:`HTTPClient`, the callbacks, ``info`` and the
:class:`~mcp_sansio.ClientConnection` options). The runtime then supplies, besides the usual
``_now``, ``_arm`` (call :meth:`on_timer` at the deadline) and the task hooks:

``_send(channel, data)``
    Called from the pump for every pair :meth:`HTTPClient.data_to_send` gives. A channel
    not seen before needs a new TCP connection to ``self.http.host``, ``self.http.port``
    (TLS when ``self.http.scheme == "https"``); buffer ``data`` until it is open. Then write
    ``data``; when ``channel.closed`` is true, close the socket after writing. Never call
    back into the session from ``_send`` (it runs inside the pump).

and reports what happens on each socket, from its reader (a protocol callback, a task or a
thread), always through these methods, which take the session's lock:

* :meth:`channel_data` with the bytes read (``b""`` at end of file);
* :meth:`channel_failed` when the socket could not be opened (refused, unreachable, TLS
  failure): the server is not there, so a stream being resumed is not tried again and its
  requests fail at once; :meth:`channel_lost` when an open socket broke.

Closing is :meth:`begin_close` (the HTTP client sends ``DELETE`` for a handshake-era
session, closes every stream, and the connection aborts pending calls); the runtime then
waits, with a short bound, until the sockets it still has are closed by the pump (the
``DELETE``'s channel comes back with ``channel.closed``), and drops what is left.

Failures and renewals
---------------------
An HTTP exchange that fails without a JSON-RPC answer (a status with no answer in the body,
a stream that broke and could not be resumed, a refused connection) ends the requests it
carried: their callers get :class:`HTTPTransportError` (a
:class:`~mcp_sansio.app.errors.ConnectionClosedError`) naming the HTTP failure, not a
cancellation. The
connection itself stays usable: the next request opens a new TCP connection.

When the server forgot the session (404) the HTTP client initializes again and retries
(``basic/transports.mdx``, session management: the client MUST start a new session); the
server's per-session state (resource subscriptions, the log level) is gone with the old
session. That is logged as a warning and passed to :attr:`HTTPClientLogic.on_transport_event`
(with every :class:`~mcp_sansio.http.TransportFailed`), so an application that subscribed
can subscribe again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self

from mcp_sansio import ClientConnection, Event, Initialized, Notification
from mcp_sansio.http import ClientChannel, HTTPClient, SessionRenewed, Transport, TransportFailed

from .errors import ConnectionClosedError, secret_prefix
from .keepalive import DEFAULT_MAX_MISSED
from .session import ClientLogic, default_client_info

__all__ = ["HTTPClientLogic", "HTTPTransportError"]

log = logging.getLogger("mcp_sansio.adapters.http")


class HTTPTransportError(ConnectionClosedError):
    """A request ended because its HTTP exchange failed (an HTTP error status without a
    JSON-RPC answer, a broken stream that could not be resumed, the server unreachable).

    Also what ``connect`` raises when the era probe or ``initialize`` failed that way (a
    server that answers 501, a port nobody listens on): the core judges those failures as
    JSON-RPC errors (``-32000``, implementation-defined), but the caller is told what
    happened on the wire, not a made-up error code.
    """

    def __init__(self, method: str, detail: str, status: int | None, url: str | None = None,
                 cause: BaseException | None = None,
                 headers: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(f"{method}: HTTP transport failure: {detail}"
                         + (f" ({url})" if url else ""))
        self.method = method
        self.detail = detail
        #: The HTTP status, when there was one.
        self.status = status
        #: The MCP endpoint the exchange went to.
        self.url = url
        #: The socket error when the server could not be reached (e.g.
        #: :class:`ConnectionRefusedError`), else None.
        self.cause = cause
        #: The refusing response's headers (lower-case names; empty without a status): a
        #: 401/403's ``WWW-Authenticate`` challenge is there.
        self.headers = headers

    def header(self, name: str) -> str | None:
        """The first value of the response header ``name`` (any case), or None."""
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


#: The ``http_options`` of ``connect_http`` that are the adapter's, not the HTTP client's.
_ADAPTER_OPTIONS = ("connect_timeout", "max_write_buffer", "ssl_context")


class HTTPClientLogic(ClientLogic):
    """:class:`~mcp_sansio.app.session.ClientLogic` whose pump is a
    :class:`~mcp_sansio.http.HTTPClient` (see the module's documentation for the hooks a
    runtime implements)."""

    def __init__(
        self, conn: ClientConnection, *, url: str,
        headers: Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
        http_options: Mapping[str, Any] | None = None, **kwargs: Any,
    ) -> None:
        super().__init__(conn, **kwargs)
        if isinstance(headers, Mapping):
            headers = list(headers.items())
        #: The sans-IO HTTP client (its ``transport``, ``session_id``, ``host``, ``port``).
        self.http = HTTPClient(conn, url, headers=headers or (), **dict(http_options or {}))
        #: Called with each :class:`~mcp_sansio.http.SessionRenewed` and
        #: :class:`~mcp_sansio.http.TransportFailed` (a plain or async function).
        self.on_transport_event: Callable[[Event], Any] | None = None
        #: How many times the server forgot the session and a new one was made.
        self.session_renewals = 0
        self._http_closing = False
        self._connect_error: str | None = None
        #: The last socket error opening a channel (cleared once the server answers).
        self._connect_cause: BaseException | None = None

    def _socket_options(self, connect_timeout: float, max_write_buffer: int,
                        ssl_context: Any) -> None:
        """The runtime's socket options at its defaults (``connect_http`` may change them:
        :meth:`create_for_adapter`); ``ssl_context`` is the runtime's default TLS context
        for an ``https`` URL (None for ``http``): building one reads the system's trusted
        certificates, which this layer does not do."""
        #: Seconds to wait for a TCP (and TLS) connection to open.
        self.connect_timeout = connect_timeout
        #: Unwritten output (bytes) a socket may hold before it is dropped.
        self.max_write_buffer = max_write_buffer
        #: TLS for ``https``: the system's trusted certificates unless told otherwise.
        self.ssl_context: Any = ssl_context

    @classmethod
    def create_for_adapter(cls, url: str, *, http_options: Mapping[str, Any] | None = None,
                           **options: Any) -> Self:
        """:meth:`create_http`, after taking out of ``http_options`` the three that are the
        adapter's own (``connect_timeout``, ``max_write_buffer``, ``ssl_context``: see
        :meth:`_socket_options`) and applying them to the client; what every runtime's
        ``connect_http`` does first."""
        rest = dict(http_options or {})
        own = {name: rest.pop(name) for name in _ADAPTER_OPTIONS if name in rest}
        if own.get("ssl_context") is None:
            own.pop("ssl_context", None)  # None: the default context (for https)
        client = cls.create_http(url, http_options=rest, **options)
        for name, value in own.items():
            setattr(client, name, value)
        return client

    @classmethod
    def create_http(
        cls, url: str, *,
        headers: Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
        http_options: Mapping[str, Any] | None = None,
        sampling: Callable[[dict[str, Any]], Any] | None = None,
        elicitation: Callable[[dict[str, Any]], Any] | None = None,
        roots: Callable[[dict[str, Any]], Any] | list[dict[str, Any]] | None = None,
        on_notification: Callable[[Notification], Any] | None = None,
        on_log: Callable[[dict[str, Any]], Any] | None = None,
        info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None, keepalive: float | None = None,
        keepalive_misses: int = DEFAULT_MAX_MISSED, **connection_options: Any,
    ) -> Self:
        """A client for the MCP endpoint ``url`` on a fresh
        :class:`~mcp_sansio.ClientConnection` that declares what the callbacks make true.
        ``http_options`` go to :class:`~mcp_sansio.http.HTTPClient` (``transport``,
        ``standalone_stream``, limits); ``capabilities``, ``keepalive`` and
        ``keepalive_misses`` as for :meth:`~mcp_sansio.app.session.ClientLogic._create`;
        ``connection_options`` to the connection."""
        conn = ClientConnection(
            info=info or default_client_info(),
            capabilities=cls._capabilities_for(sampling, elicitation, roots),
            **connection_options,
        )
        return cls(conn, url=url, headers=headers, http_options=http_options,
                   sampling=sampling, elicitation=elicitation, roots=roots,
                   on_notification=on_notification, on_log=on_log,
                   capabilities=capabilities or {}, keepalive=keepalive,
                   keepalive_misses=keepalive_misses)

    # -- what the runtime implements -------------------------------------------------------

    def _send(self, channel: ClientChannel, data: bytes) -> None:  # pragma: no cover
        raise NotImplementedError

    def _write(self, data: bytes) -> None:  # pragma: no cover - HTTP writes by channel
        raise TypeError("an HTTP client writes to channels (_send)")

    def _connect_outcome(self) -> Initialized:
        """As for stdio, but a connection that could not be made because of an HTTP failure
        raises :class:`HTTPTransportError` (status, URL, socket error) rather than the
        connection's account of the made-up JSON-RPC error it was fed."""
        failure = self.http.connect_failure
        if self.initialized is None and failure is not None:
            detail = failure.detail
            if self._connect_cause is not None:
                detail = (f"cannot connect to {self.http.host}:{self.http.port}: "
                          f"{self._connect_cause or type(self._connect_cause).__name__}")
            raise HTTPTransportError("connect", detail, failure.status, url=self.http.url,
                                     cause=self._connect_cause, headers=failure.headers)
        return super()._connect_outcome()

    # -- what the runtime calls --------------------------------------------------------------

    @property
    def transport(self) -> Transport | None:
        """The HTTP transport in use once known (streamable, or legacy HTTP+SSE)."""
        return self.http.transport

    @property
    def session_id(self) -> str | None:
        """The handshake era's ``Mcp-Session-Id`` (None in the stateless era)."""
        return self.http.session_id

    def channel_data(self, channel: ClientChannel, data: bytes) -> None:
        """Bytes read from a channel's socket (``b""``: end of file)."""
        with self.lock:
            if data and self.transport_detail is not None:
                self.transport_detail = None  # the server is reachable again
            if data:
                self._connect_cause = None
            channel.receive_data(data, now=self._now())
            self.service()

    def channel_lost(self, channel: ClientChannel) -> None:
        """A channel's socket broke (or was closed under it)."""
        with self.lock:
            if not channel.closed or channel.exchange is not None:
                channel.connection_lost(now=self._now())
            self.service()

    def channel_failed(self, channel: ClientChannel, error: BaseException) -> None:
        """A channel's socket could not be opened (the server is not there)."""
        log.debug("could not connect to %s:%s: %s", self.http.host, self.http.port, error)
        with self.lock:
            self._connect_cause = error
            # Named in the errors of the calls this fails, and in closed_detail() when the
            # connection closes for it (e.g. initialize could not be sent).
            self._connect_error = self.transport_detail = (
                f"cannot connect to {self.http.host}:{self.http.port}: "
                f"{error or type(error).__name__}")
            try:
                channel.connection_failed(now=self._now())
                self.service()
            finally:
                self._connect_error = None

    def on_timer(self) -> None:
        """The deadline the runtime armed has passed."""
        with self.lock:
            self.http.handle_timeout(self._now())
            self.service()

    def _keepalive_close(self) -> None:
        # Too many missed pings: end the session as begin_close does (streams, DELETE).
        self._http_closing = True
        self.http.close(now=self._now())

    def begin_close(self) -> None:
        """End the session: ``DELETE`` (handshake era), every stream closed, pending calls
        aborted. The runtime then waits (briefly) for its sockets to be closed."""
        with self.lock:
            if self._http_closing:
                return
            self._http_closing = True
            self.http.close(now=self._now())
            self.service()

    # -- the pump ----------------------------------------------------------------------------

    def service(self) -> None:
        """Drain the HTTP client's events (dispatching each), then its output (to
        :meth:`_send`), then re-arm the timer."""
        if self._servicing:
            return  # the outer call's loop picks up whatever we were called for
        self._servicing = True
        http = self.http
        try:
            self._drain(http.next_event)
            if self.keepalive is not None and not self._http_closing:
                self._keepalive_step()  # after the events: the handshake may be done
            out = http.data_to_send()
        finally:
            self._servicing = False
        for channel, data in out:
            self._send(channel, data)
        deadline = http.next_deadline()
        ping = self.keepalive.deadline() if self.keepalive is not None else None
        self._arm(ping if ping is not None and (deadline is None or ping < deadline)
                  else deadline)
        if self.on_step is not None:
            self._note_step()

    def _on_event(self, event: Event) -> None:
        if isinstance(event, TransportFailed):
            self._transport_failed(event)
        elif isinstance(event, SessionRenewed):
            self.session_renewals += 1
            log.warning("the server at %s forgot session %s; a new session was initialized "
                        "(%s) and the failed requests retried: subscriptions and the log "
                        "level set on the old session are gone", self.http.url,
                        secret_prefix(event.previous_session_id),
                        secret_prefix(event.session_id))
            self._transport_event(event)
        else:
            super()._on_event(event)

    def _transport_failed(self, event: TransportFailed) -> None:
        # The requests it names end next, each with a RequestCancelled: make their callers
        # see the HTTP failure instead of a cancellation they never asked for.
        detail = event.detail
        if self._connect_error is not None:
            detail = self._connect_error
        for request_id in event.request_ids:
            call = self._calls.get(request_id)
            if call is not None:
                call.error = HTTPTransportError(call.method, detail, event.status,
                                                url=self.http.url, cause=self._connect_cause,
                                                headers=event.headers)
        log.info("HTTP exchange with %s failed: %s", self.http.url, event.detail)
        self._transport_event(event)

    def _transport_event(self, event: Event) -> None:
        if self.on_transport_event is not None:
            self._callback(self.on_transport_event, event)
