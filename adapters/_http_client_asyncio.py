"""The asyncio HTTP client adapter: asyncio's own sockets + :class:`mcp_sansio.http.HTTPClient`.

The pump is asyncio's protocol callbacks, as for stdio: bytes read from a socket go straight
into the sans-IO HTTP client (:meth:`~._http_client_logic.HTTPClientLogic.channel_data`), the
events are dispatched to the waiting calls, what the HTTP client has to send is written to
its sockets, and one timer handle follows
:meth:`~mcp_sansio.http.HTTPClient.next_deadline`. No thread (but for resolving a host name),
no queue: a waiting caller is the only task involved.

Each :class:`~mcp_sansio.http.ClientChannel` the HTTP client opens is one TCP connection
(``loop.create_connection`` to the URL's host and port, TLS for ``https``), kept alive for
the next exchange until the HTTP client closes it. Buffers are bounded: what is written
before a socket is open is one HTTP request; a socket whose unwritten output passes
``max_write_buffer`` is dropped; responses are bounded by the HTTP client's
``max_body_size`` (JSON bodies and each SSE event).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

from mcp_sansio import Era, Notification
from mcp_sansio.http import ClientChannel

from ._api import AsyncClient
from ._asyncio_runtime import AsyncioRuntime
from ._asyncio_session import _small_reads
from ._auth_session import OAuth, SessionAuth, challenge_of
from ._http_authorized import authorized_request
from ._http_client_logic import HTTPClientLogic, HTTPTransportError, default_tls

__all__ = [
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_WRITE_BUFFER",
    "HTTPClientSession",
    "HTTPTransportError",
    "connect_http",
]

#: Seconds to wait for a TCP (and TLS) connection to open: 10 s. A server that is up answers
#: in milliseconds; beyond this the exchange fails rather than wait for the system's own
#: timeout (minutes, for an address that drops packets).
DEFAULT_CONNECT_TIMEOUT = 10.0
#: Seconds :meth:`HTTPClientSession.aclose` waits for the session's ``DELETE`` to be answered
#: before dropping the sockets: 2 s (the DELETE is a courtesy; the server expires idle
#: sessions anyway).
DEFAULT_CLOSE_TIMEOUT = 2.0
#: Unwritten output (bytes) a socket may hold before it is dropped: 16 MiB, far above any
#: request (a server that does not read what we send is stuck).
DEFAULT_MAX_WRITE_BUFFER = 16 * 1024 * 1024


class _Socket(asyncio.Protocol):
    """One channel's TCP connection: opened on the first bytes for it, fed back to the
    session as it reads."""

    def __init__(self, client: HTTPClientSession, channel: ClientChannel) -> None:
        self.client = client
        self.channel = channel
        self.transport: asyncio.Transport | None = None
        self.pending = bytearray()  # written before the socket was open (one request)
        self.opening: asyncio.Task[None] | None = None

    def open(self) -> None:
        self.client.connections_opened += 1
        self.opening = self.client.runtime.loop.create_task(self._open())

    async def _open(self) -> None:
        client = self.client
        http = client.http
        try:
            await asyncio.wait_for(client.runtime.loop.create_connection(
                lambda: self, http.host, http.port, ssl=client.ssl_context,
                server_hostname=http.host if client.ssl_context is not None else None,
            ), client.connect_timeout)
        except asyncio.CancelledError:
            self._forget()
            raise
        except Exception as exc:  # refused, unreachable, timed out, TLS, a bad address...
            self._forget()
            client.channel_failed(self.channel, exc)
        finally:
            self.opening = None

    def _forget(self) -> None:
        if self.client._sockets.get(self.channel) is self:
            del self.client._sockets[self.channel]
            self.client._socket_gone()

    def send(self, data: bytes, close: bool) -> None:
        transport = self.transport
        if transport is None:
            if close:
                # Dropped before it was open: nothing to say on it.
                if self.opening is not None:
                    self.opening.cancel()
                self._forget()
                return
            self.pending += data
            return
        if transport.is_closing():
            return
        if data:
            transport.write(data)
        if close:
            transport.close()  # after the buffered bytes are written
        elif transport.get_write_buffer_size() > self.client.max_write_buffer:
            transport.abort()

    def abort(self) -> None:
        if self.opening is not None:
            self.opening.cancel()
        if self.transport is not None:
            self.transport.abort()

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        _small_reads(transport)  # 64 KiB reads: see adapters/asyncio.py _READ_SIZE
        if self.pending:
            transport.write(bytes(self.pending))
            self.pending.clear()

    def data_received(self, data: bytes) -> None:
        self.client.channel_data(self.channel, data)

    def eof_received(self) -> bool:
        self.client.channel_data(self.channel, b"")
        return False  # the server is done: close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._forget()
        channel = self.channel
        if not channel.closed or channel.exchange is not None:
            self.client.channel_lost(channel)


class HTTPClientSession(HTTPClientLogic, AsyncClient):
    """An MCP client over HTTP on asyncio, with the methods of the stdio
    :class:`~mcp_sansio.adapters.asyncio.Client` (see
    :class:`~mcp_sansio.adapters._api.AsyncClient`). Made by :func:`connect_http`.
    Cancelling a task that awaits a call cancels the request (handshake era:
    ``notifications/cancelled``; stateless era: its stream is closed)."""

    runtime: AsyncioRuntime

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.runtime = AsyncioRuntime(self)
        super().__init__(*args, **kwargs)
        self._sockets: dict[ClientChannel, _Socket] = {}
        self._sockets_changed = asyncio.Event()
        self._socket_options(DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_WRITE_BUFFER,
                            default_tls(self.http.scheme))
        #: TCP connections opened so far (keep-alive reuses them).
        self.connections_opened = 0
        #: The authorization hook (``connect_http(auth=...)``), else None.
        self.auth: SessionAuth | None = None
        self._auth_lock = asyncio.Lock()

    async def request(self, method: str, params: Mapping[str, Any] | None = None,
                      **options: Any) -> dict[str, Any]:
        """:meth:`~._api.AsyncClient.request`, authorizing first when the session has
        ``auth`` and the server challenges (see :mod:`._auth_session`).

        :raises ~mcp_sansio.auth.AuthFlowError: authorization was needed and failed."""
        auth = self.auth
        if auth is None:
            return await super().request(method, params, **options)

        async def send() -> dict[str, Any]:
            return await super(HTTPClientSession, self).request(method, params, **options)
        return await authorized_request(auth, send, self._authorize)

    async def _authorize(self, auth: SessionAuth, challenge: Any, generation: int) -> None:
        async with self._auth_lock:
            if auth.generation == generation:  # else another call already did
                await auth.run_async(challenge, asyncio.to_thread, native_fetch=True)

    def _send(self, channel: ClientChannel, data: bytes) -> None:
        sock = self._sockets.get(channel)
        if sock is None:
            if channel.closed:
                return  # never opened
            sock = _Socket(self, channel)
            self._sockets[channel] = sock
            sock.open()
        sock.send(data, channel.closed)

    def _socket_gone(self) -> None:
        self._sockets_changed.set()

    async def aclose(self, timeout: float = DEFAULT_CLOSE_TIMEOUT) -> None:
        """End the session: ``DELETE`` it (handshake era, waiting at most ``timeout``
        seconds for the answer), close every socket, abort what is still pending."""
        self.begin_close()
        loop = self.runtime.loop
        deadline = loop.time() + timeout
        while self._sockets and (left := deadline - loop.time()) > 0:
            self._sockets_changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._sockets_changed.wait(), left)
        for sock in list(self._sockets.values()):
            sock.abort()
        self._sockets.clear()
        await self.runtime.stop_tasks()


@contextlib.asynccontextmanager
async def connect_http(
    url: str, *, connect: bool = True, era: Era | None = None,
    sampling: Callable[[dict[str, Any]], Any] | None = None,
    elicitation: Callable[[dict[str, Any]], Any] | None = None,
    roots: Callable[[dict[str, Any]], Any] | list[dict[str, Any]] | None = None,
    on_notification: Callable[[Notification], Any] | None = None,
    on_log: Callable[[dict[str, Any]], Any] | None = None,
    info: Mapping[str, Any] | None = None,
    headers: Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
    http_options: Mapping[str, Any] | None = None, auth: OAuth | None = None,
    **connection_options: Any,
) -> AsyncIterator[HTTPClientSession]:
    """Connect to the MCP server at ``url`` (its endpoint, e.g. ``http://127.0.0.1:8000/mcp``)
    and yield a connected :class:`HTTPClientSession`.

    The era is probed as on stdio (``server/discover`` first, then ``initialize``; ``era``
    is a cached verdict), and a server that refuses ``initialize`` with 4xx is tried with
    the legacy HTTP+SSE transport. ``headers`` go on every request (e.g.
    ``Authorization``). ``http_options`` go to :class:`~mcp_sansio.http.HTTPClient`
    (``transport``, ``standalone_stream``, ``max_connections``, ``max_body_size``,
    reconnection settings), except three that are the adapter's: ``connect_timeout``,
    ``max_write_buffer`` and ``ssl_context`` (for ``https``; default:
    :func:`ssl.create_default_context`). The callbacks and ``connection_options`` are as
    for :func:`~mcp_sansio.adapters.asyncio.connect_stdio`. ``auth``
    (:class:`~mcp_sansio.adapters.auth.OAuth`): run the OAuth flow when the server answers
    401 (or 403 ``insufficient_scope``), then retry with the token. On exit the session is
    ended (``DELETE``) and every socket closed."""
    session_auth = SessionAuth(auth, url) if auth is not None else None
    while True:
        client = HTTPClientSession.create_for_adapter(
            url, headers=headers, http_options=http_options, sampling=sampling,
            elicitation=elicitation, roots=roots, on_notification=on_notification,
            on_log=on_log, info=info, **connection_options)
        if session_auth is not None:
            client.auth = session_auth
            session_auth.install(client.http)
        if not connect:
            break
        try:
            if session_auth is not None and session_auth.due():
                await session_auth.run_async(None, asyncio.to_thread, native_fetch=True)
            await client.connect(era=era)
            if session_auth is not None:
                session_auth.succeeded()
            break
        except BaseException as exc:
            await asyncio.shield(client.aclose())
            challenge = challenge_of(exc) if session_auth is not None else None
            if challenge is None or session_auth is None:
                raise
            # The session never opened: authorize, then start over on a new connection
            # (the refused initialize closed this one). Bounded by the flow's challenges.
            await session_auth.run_async(challenge, asyncio.to_thread, native_fetch=True)
    try:
        yield client
    finally:
        await asyncio.shield(client.aclose())
