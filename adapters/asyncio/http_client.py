"""The asyncio HTTP client adapter: asyncio's own sockets + :class:`mcp_sansio.http.HTTPClient`.

An HTTP client on asyncio is the plain asyncio client (:class:`~.async_session.AsyncClient`, the
colour) holding two objects: the sans-IO HTTP link (``client.link``, an
:class:`~mcp_sansio.app.http_client.HTTPClientLink`: the HTTP client, its pump, its failure
mapping) and :class:`AsyncioSockets` (``client.sockets``: the TCP connections, the OAuth
step's lock, the close) -- the way a stdio client holds its child process.
:data:`HTTPClientSession` is that client class under its HTTP name.

The pump is asyncio's protocol callbacks, as for stdio: bytes read from a socket go straight
into the sans-IO HTTP client (:meth:`~mcp_sansio.app.http_client.HTTPClientLink.channel_data`),
the events are dispatched to the waiting calls, what the HTTP client has to send is written
to its sockets, and one timer handle follows
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
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from mcp_sansio.app.http_client import HTTPClientLink, HTTPTransportError, attach_http
from mcp_sansio.http import ClientChannel

from ..auth.session import SessionAuth
from ..common import entry_points
from ..common.async_session import AsyncClient
from ..common.authorized import AsyncAuthorizing, run_async
from ..common.entry_points import HTTPClientCall, runs
from ..common.http_client import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_WRITE_BUFFER,
    SocketOptions,
)
from .runtime import AsyncioRuntime
from .session import _small_reads

__all__ = [
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_WRITE_BUFFER",
    "AsyncioSockets",
    "HTTPClientSession",
    "HTTPTransportError",
    "connect_http",
]



class _Socket(asyncio.Protocol):
    """One channel's TCP connection: opened on the first bytes for it, fed back to the
    session as it reads."""

    def __init__(self, sockets: AsyncioSockets, channel: ClientChannel) -> None:
        self.sockets = sockets
        self.link = sockets.link
        self.channel = channel
        self.transport: asyncio.Transport | None = None
        self.pending = bytearray()  # written before the socket was open (one request)
        self.opening: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        sockets = self.sockets
        http = self.link.http
        try:
            tls = sockets.ssl_context
            hostname = http.host if tls is not None else None
            await asyncio.wait_for(sockets.loop.create_connection(
                lambda: self, http.host, http.port, ssl=tls, server_hostname=hostname,
            ) if sockets.uds is None else sockets.loop.create_unix_connection(
                lambda: self, sockets.uds, ssl=tls, server_hostname=hostname,
            ), sockets.connect_timeout)
        except asyncio.CancelledError:
            self._forget()
            raise
        except Exception as exc:  # refused, unreachable, timed out, TLS, a bad address...
            self._forget()
            self.link.channel_failed(self.channel, exc)
        finally:
            self.opening = None

    def _forget(self) -> None:
        sockets = self.sockets
        if sockets.open.get(self.channel) is self:
            del sockets.open[self.channel]
            sockets.changed.set()

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
        elif transport.get_write_buffer_size() > self.sockets.max_write_buffer:
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
        self.link.channel_data(self.channel, data)

    def eof_received(self) -> bool:
        self.link.channel_data(self.channel, b"")
        return False  # the server is done: close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._forget()
        channel = self.channel
        if not channel.closed or channel.exchange is not None:
            self.link.channel_lost(channel)


class AsyncioSockets(AsyncAuthorizing, SocketOptions[_Socket]):
    """An HTTP client's TCP connections on asyncio (``client.sockets``): one
    :class:`_Socket` per channel, opened by :meth:`send` (the link's ``send``); the lock
    that serializes OAuth flows; the close."""

    def __init__(self, link: HTTPClientLink, runtime: AsyncioRuntime, **options: Any) -> None:
        self.runtime = runtime
        self.loop = runtime.loop
        #: Set whenever a socket is gone (the close waits on it).
        self.changed = asyncio.Event()
        super().__init__(link, asyncio.Lock(), **options)

    async def _run_flow(self, auth: SessionAuth, challenge: Any, generation: int) -> None:
        await _authorize(auth, challenge, generation)

    def _start(self, channel: ClientChannel) -> _Socket:
        sock = _Socket(self, channel)
        sock.opening = self.loop.create_task(sock.connect())
        return sock

    def _write(self, sock: _Socket, data: bytes, closed: bool) -> None:
        sock.send(data, closed)

    async def aclose(self, timeout: float | None) -> None:
        """End the session: ``DELETE`` it (handshake era, waiting at most ``timeout``
        seconds for the answer; None: :data:`DEFAULT_CLOSE_TIMEOUT`), close every socket,
        abort what is still pending."""
        self.link.begin_close()
        loop = self.loop
        deadline = loop.time() + (DEFAULT_CLOSE_TIMEOUT if timeout is None else timeout)
        while self.open and (left := deadline - loop.time()) > 0:
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)
        for sock in list(self.open.values()):
            sock.abort()
        self.open.clear()
        await self.runtime.stop_tasks()


#: An MCP client over HTTP on asyncio: the asyncio client (the methods of the stdio
#: :class:`~mcp_sansio.adapters.asyncio.Client`, see :class:`~.async_session.AsyncClient`) holding
#: an HTTP link and :class:`AsyncioSockets`. Made by :func:`connect_http`. Cancelling a task
#: that awaits a call cancels the request (handshake era: ``notifications/cancelled``;
#: stateless era: its stream is closed).
HTTPClientSession = AsyncClient


def http_client(url: str, *, headers: Iterable[tuple[str, str]] | Mapping[str, str] | None,
                http_options: Mapping[str, Any] | None, **options: Any) -> AsyncClient:
    """A new, unconnected asyncio HTTP client of ``url`` (``options``: the callbacks and
    connection options of :meth:`~mcp_sansio.app.session.ClientLogic._create`)."""
    client = AsyncClient._create(**options)
    runtime = client.runtime = AsyncioRuntime(client)
    link, own = attach_http(client, url, headers=headers, http_options=http_options)
    client.sockets = AsyncioSockets(link, runtime, **own)
    return client


async def _authorize(auth: SessionAuth, challenge: Any, generation: int) -> None:
    """Run the OAuth flow, its blocking parts in a thread (unless it ran since
    ``generation``: another call already did)."""
    if auth.generation == generation:
        await auth.run_async(challenge, asyncio.to_thread, native_fetch=True)


@runs(entry_points.connect_http)
@contextlib.asynccontextmanager
async def connect_http(call: HTTPClientCall) -> AsyncIterator[AsyncClient]:
    session_auth = SessionAuth(call.auth, call.url) if call.auth is not None else None

    async def attempt() -> AsyncClient:
        client = http_client(call.url, headers=call.headers, http_options=call.http_options,
                             **call.client)
        assert isinstance(client.sockets, AsyncioSockets)
        client.sockets.use(call.uds, session_auth)
        if call.connect:
            try:
                await client.connect(era=call.era)
            except BaseException:
                await asyncio.shield(client.aclose())
                raise
        return client

    if session_auth is None or not call.connect:
        client = await attempt()
    else:  # a refused connect is tried again on a new connection, once authorized
        client = await run_async(session_auth, attempt, _authorize)
    try:
        yield client
    finally:
        await asyncio.shield(client.aclose())
