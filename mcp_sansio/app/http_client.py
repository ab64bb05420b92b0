"""The runtime-free half of an MCP client over HTTP: :class:`HTTPClientLink`, the sans-IO
:class:`mcp_sansio.http.HTTPClient` held by a client as its ``link``.

Theory of operation
-------------------
On stdio a client session is one byte stream: :meth:`Session.feed` hands bytes to the
connection and :meth:`Session.service` writes ``conn.data_to_send()`` to one pipe. Over HTTP
the connection's messages travel as HTTP exchanges on several TCP connections, which the
sans-IO :class:`~mcp_sansio.http.HTTPClient` manages as *channels*. An HTTP client is the
plain client of its runtime's colour (the same calls, callbacks, listen streams and
``input_required`` handling as every stdio client) holding an :class:`HTTPClientLink` as
``client.link`` -- the same hook the HTTP server's sessions use
(:class:`~.http_service.HTTPLink`; :class:`~.session.ClientLink` is what the client asks of
it). Composed, not mixed in: the client's pump hands over to the link, which

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mcp_sansio import Event
from mcp_sansio.http import ClientChannel, HTTPClient, SessionRenewed, TransportFailed
from mcp_sansio.http._refusal import explain

from .errors import ConnectionClosedError, secret_prefix
from .session import ClientLogic

__all__ = ["ADAPTER_OPTIONS", "HTTPClientLink", "HTTPTransportError", "attach_http"]

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
                 headers: tuple[tuple[str, str], ...] = (), body: bytes = b"") -> None:
        super().__init__(f"{method}: HTTP transport failure: {detail}"
                         + (f" ({url})" if url else ""))
        why = explain(headers, body)
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
        #: The refusing response's body (bounded; empty without a status).
        self.body = body
        #: The ``WWW-Authenticate`` challenge's ``error`` (``invalid_token``,
        #: ``insufficient_scope``; RFC 6750 §3.1), or an OAuth error body's, else None.
        self.error = why.error
        #: The challenge's (or OAuth error body's) ``error_description``, else None.
        self.error_description = why.error_description
        #: The JSON-RPC error the body carried, as ``(code, message)``, else None.
        self.rpc_error = why.rpc_error
        #: The body as printable text (bounded) when it was neither of those, else None.
        self.body_text = why.text

    def header(self, name: str) -> str | None:
        """The first value of the response header ``name`` (any case), or None."""
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


#: The ``http_options`` of ``connect_http`` that are the runtime's socket options, not the
#: HTTP client's (each runtime documents its defaults).
ADAPTER_OPTIONS = ("connect_timeout", "max_write_buffer", "ssl_context")


def _no_socket(channel: ClientChannel, data: bytes) -> None:  # pragma: no cover
    raise RuntimeError("this HTTP client has no socket object yet (attach_http's caller "
                       "sets link.send)")


def attach_http(client: ClientLogic, url: str, *,
                headers: Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
                http_options: Mapping[str, Any] | None = None,
                ) -> tuple[HTTPClientLink, dict[str, Any]]:
    """Make ``client`` an HTTP client of the MCP endpoint ``url``: install an
    :class:`HTTPClientLink` as ``client.link`` (``headers`` on every request,
    ``http_options`` for :class:`~mcp_sansio.http.HTTPClient`: ``transport``,
    ``standalone_stream``, limits), and return it with the options of
    :data:`ADAPTER_OPTIONS` that were given, for the runtime's socket object (an
    ``ssl_context`` of None is left out: the runtime's default context for ``https``)."""
    rest = dict(http_options or {})
    own = {name: rest.pop(name) for name in ADAPTER_OPTIONS if name in rest}
    if own.get("ssl_context") is None:
        own.pop("ssl_context", None)
    link = client.link = HTTPClientLink(client, url, headers=headers, http_options=rest)
    return link, own


class HTTPClientLink:
    """The tie between a client session and the sans-IO HTTP client that carries its
    connection, held as ``client.link`` (see the module's documentation)."""

    __slots__ = ("_connect_cause", "_connect_error", "arm", "closing", "connections_opened",
                 "http", "send", "session", "session_renewals")

    #: Who a request spoke for: a server's notion (:class:`~.session.Link`); None here.
    auth: Any = None

    def __init__(self, session: ClientLogic, url: str, *,
                 headers: Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
                 http_options: Mapping[str, Any] | None = None) -> None:
        if isinstance(headers, Mapping):
            headers = list(headers.items())
        self.session = session
        #: The sans-IO HTTP client (its ``transport``, ``session_id``, ``host``, ``port``).
        self.http = HTTPClient(session.conn, url, headers=headers or (),
                               **dict(http_options or {}))
        #: The runtime socket object's ``send(channel, data)`` (module documentation).
        self.send: Callable[[ClientChannel, bytes], None] = _no_socket
        #: Where the pump arms the one timer: the session's (its runtime's), unless the
        #: socket object keeps a timer of its own (threads: no stdio reader waits there).
        self.arm: Callable[[float | None], None] = session._arm
        #: How many times the server forgot the session and a new one was made.
        self.session_renewals = 0
        #: TCP connections the socket object opened so far (keep-alive reuses them).
        self.connections_opened = 0
        self.closing = False
        self._connect_error: str | None = None
        #: The last socket error opening a channel (cleared once the server answers).
        self._connect_cause: BaseException | None = None

    def broadcast(self, method: str, params: Mapping[str, Any] | None) -> bool:
        """A client sends no server-wide notification: always False."""
        return False

    # -- the pump ----------------------------------------------------------------------------

    def service(self) -> None:
        """The session's ``service()`` (which checked it is not running already): drain
        the HTTP client's events (dispatching each), then its output (to :attr:`send`),
        then re-arm the timer."""
        session = self.session
        http = self.http
        session._servicing = True
        try:
            session._drain(http.next_event)
            if session.keepalive is not None and not self.closing:
                session._keepalive_step()  # after the events: the handshake may be done
            out = http.data_to_send()
        finally:
            session._servicing = False
        send = self.send
        for channel, data in out:
            send(channel, data)
        deadline = http.next_deadline()
        keepalive = session.keepalive
        ping = keepalive.deadline() if keepalive is not None else None
        self.arm(ping if ping is not None and (deadline is None or ping < deadline)
                 else deadline)

    def on_timer(self) -> None:
        """The deadline the runtime armed has passed (the client's ``on_timer``)."""
        session = self.session
        with session.lock:
            self.http.handle_timeout(session._now())
            session.service()

    def begin_close(self) -> None:
        """End the session: ``DELETE`` (handshake era), every stream closed, pending calls
        aborted. The socket object then waits (briefly) for its sockets to be closed."""
        session = self.session
        with session.lock:
            if self.closing:
                return
            self.closing = True
            self.http.close(now=session._now())
            session.service()

    def keepalive_close(self) -> None:
        """Too many missed pings: end the session as :meth:`begin_close` does (streams,
        ``DELETE``); called from inside the pump, which writes what that sends."""
        self.closing = True
        self.http.close(now=self.session._now())

    def check_connect(self) -> None:
        """Raise :class:`HTTPTransportError` (status, URL, socket error) when the connect
        failed because of an HTTP failure, rather than the connection's account of the
        made-up JSON-RPC error it was fed."""
        failure = self.http.connect_failure
        if failure is None:
            return
        detail = failure.detail
        if self._connect_cause is not None:
            detail = (f"cannot connect to {self.http.host}:{self.http.port}: "
                      f"{self._connect_cause or type(self._connect_cause).__name__}")
        raise HTTPTransportError("connect", detail, failure.status, url=self.http.url,
                                 cause=self._connect_cause, headers=failure.headers,
                                 body=failure.body)

    # -- what the socket object calls --------------------------------------------------------

    def channel_data(self, channel: ClientChannel, data: bytes) -> None:
        """Bytes read from a channel's socket (``b""``: end of file)."""
        session = self.session
        with session.lock:
            if data:
                if session.transport_detail is not None:
                    session.transport_detail = None  # the server is reachable again
                self._connect_cause = None
            channel.receive_data(data, now=session._now())
            session.service()

    def channel_lost(self, channel: ClientChannel) -> None:
        """A channel's socket broke (or was closed under it)."""
        session = self.session
        with session.lock:
            if not channel.closed or channel.exchange is not None:
                channel.connection_lost(now=session._now())
            session.service()

    def channel_failed(self, channel: ClientChannel, error: BaseException) -> None:
        """A channel's socket could not be opened (the server is not there)."""
        log.debug("could not connect to %s:%s: %s", self.http.host, self.http.port, error)
        session = self.session
        with session.lock:
            self._connect_cause = error
            # Named in the errors of the calls this fails, and in closed_detail() when the
            # connection closes for it (e.g. initialize could not be sent).
            self._connect_error = session.transport_detail = (
                f"cannot connect to {self.http.host}:{self.http.port}: "
                f"{error or type(error).__name__}")
            try:
                channel.connection_failed(now=session._now())
                session.service()
            finally:
                self._connect_error = None

    # -- the HTTP client's own events --------------------------------------------------------

    def on_event(self, event: Event) -> None:
        """An event the client's dispatch does not know: the HTTP client's
        :class:`~mcp_sansio.http.TransportFailed` and
        :class:`~mcp_sansio.http.SessionRenewed`."""
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

    def _transport_failed(self, event: TransportFailed) -> None:
        # The requests it names end next, each with a RequestCancelled: make their callers
        # see the HTTP failure instead of a cancellation they never asked for.
        detail = event.detail
        if self._connect_error is not None:
            detail = self._connect_error
        calls = self.session._calls
        for request_id in event.request_ids:
            call = calls.get(request_id)
            if call is not None:
                call.error = HTTPTransportError(call.method, detail, event.status,
                                                url=self.http.url, cause=self._connect_cause,
                                                headers=event.headers, body=event.body)
        log.info("HTTP exchange with %s failed: %s", self.http.url, event.detail)
        self._transport_event(event)

    def _transport_event(self, event: Event) -> None:
        session = self.session
        callback = session.on_transport_event
        if callback is not None:
            session._callback(callback, event)

