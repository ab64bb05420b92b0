"""The trio HTTP client: one TCP connection per channel of the sans-IO HTTP client.

Theory of operation: :data:`HTTPClientSession` is the plain trio client
(:class:`~mcp_sansio.adapters.common.async_session.AsyncClient`) holding the runtime-free
HTTP link (``client.link``, an :class:`~mcp_sansio.app.http_client.HTTPClientLink`) and a
:class:`TrioSockets` (``client.sockets``): the link drains the sans-IO client and hands each
``(channel, bytes)`` to the sockets, which open one TCP (and TLS) connection per channel, in
the nursery of :func:`connect_http`, and report what arrives back to the link. The client's
timer is a task of that nursery. :func:`connect_http` is the definition in
:mod:`~mcp_sansio.adapters.common.entry_points` run on trio.
"""

from __future__ import annotations

import contextlib
import logging
import math
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

import trio

from mcp_sansio.app.http_client import HTTPClientLink, HTTPTransportError, attach_http
from mcp_sansio.http import ClientChannel

from ..auth.session import SessionAuth
from ..common import entry_points
from ..common.async_session import AsyncClient
from ..common.authorized import ATTEMPT, AsyncAuthorizing, Authorize, authorized
from ..common.entry_points import HTTPClientCall, runs
from ..common.http_client import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    SocketOptions,
)
from ..common.plans import advance
from .runtime import TrioRuntime, enqueue, send_queued
from .session import _one_error

__all__ = ["DEFAULT_CLOSE_TIMEOUT", "DEFAULT_CONNECT_TIMEOUT", "HTTPClientSession", "TrioSockets",
           "connect_http"]

log = logging.getLogger("mcp_sansio.adapters.http")


#: Bytes asked of the socket per read.
_CHUNK = 1 << 16
#: Whether a socket's descriptor can be written with os.write (not on Windows).
_DIRECT_WRITES = sys.platform != "win32"

# -- the client ----------------------------------------------------------------------------------


class _ClientSocket:
    """One channel's TCP connection: opened by its task on the first bytes for it."""

    __slots__ = ("channel", "closing", "fd", "out", "queued", "ready", "scope", "sending",
                 "stream")

    def __init__(self, channel: ClientChannel) -> None:
        self.channel = channel
        self.stream: trio.abc.Stream | None = None
        #: The descriptor of an open plain-TCP socket, for writes straight from the pump.
        self.fd: int | None = None
        self.out = bytearray()  # before the socket is open: one request
        self.sending = False  # the writer task is in send_all
        self.queued = 0
        self.closing = False
        self.ready = trio.lowlevel.ParkingLot()
        self.scope = trio.CancelScope()


class TrioSockets(AsyncAuthorizing, SocketOptions[_ClientSocket]):
    """An HTTP client's TCP connections on trio (``client.sockets``): one task per channel
    (:meth:`_run_socket`), opened by :meth:`send` (the link's ``send``); the timer task;
    the lock that serializes OAuth flows; the close."""

    def __init__(self, client: AsyncClient, link: HTTPClientLink, runtime: TrioRuntime,
                 **options: Any) -> None:
        self.client = client
        self.runtime = runtime
        #: Unparked whenever a socket is gone (the close waits on it).
        self.changed = trio.lowlevel.ParkingLot()
        super().__init__(link, trio.Lock(), **options)

    # -- the pump's output -------------------------------------------------------------------

    async def _run_flow(self, auth: SessionAuth, challenge: Any, generation: int) -> None:
        await _authorize(auth, challenge, generation)

    def _start(self, channel: ClientChannel) -> _ClientSocket:
        nursery = self.runtime.nursery
        assert nursery is not None
        sock = _ClientSocket(channel)
        nursery.start_soon(self._run_socket, sock)
        return sock

    def _write(self, sock: _ClientSocket, data: bytes, closed: bool) -> None:
        if enqueue(sock, data) is None:  # broken: its task reports the loss
            sock.fd = None
            sock.scope.cancel()
            return
        if closed:
            sock.closing = True
            if sock.stream is None:
                sock.scope.cancel()  # dropped before it was open: nothing to say on it
        elif sock.queued > self.max_write_buffer:
            log.info("dropping an HTTP connection: %d bytes unread by the server", sock.queued)
            sock.scope.cancel()
        sock.ready.unpark_all()

    # -- one task per socket -----------------------------------------------------------------

    async def _open(self, sock: _ClientSocket) -> trio.abc.Stream | None:
        http = self.link.http
        try:
            with trio.fail_after(self.connect_timeout):
                stream: trio.abc.Stream = (
                    await trio.open_tcp_stream(http.host, http.port) if self.uds is None
                    else await trio.open_unix_socket(self.uds))
                if self.ssl_context is not None:
                    stream = trio.SSLStream(stream, self.ssl_context, server_hostname=http.host,
                                            https_compatible=True)
                    await stream.do_handshake()
        except trio.TooSlowError:
            self.link.channel_failed(sock.channel, TimeoutError(
                f"no connection within {self.connect_timeout:g} s"))
            return None
        except Exception as exc:  # refused, unreachable, TLS refused, a name not found...
            # ...or anything else: a socket that cannot be opened is always reported.
            cause = exc.__cause__ if isinstance(exc, trio.BrokenResourceError) else None
            self.link.channel_failed(sock.channel, cause or exc)
            return None
        return stream

    async def _run_socket(self, sock: _ClientSocket) -> None:
        channel = sock.channel
        opened = False
        try:
            with sock.scope:
                stream = await self._open(sock)
                if stream is None:
                    return
                opened = True
                sock.stream = stream
                if _DIRECT_WRITES and isinstance(stream, trio.SocketStream):
                    sock.fd = stream.socket.fileno()
                try:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._socket_writer, sock, nursery.cancel_scope)
                        await self._socket_reader(sock)
                        nursery.cancel_scope.cancel()
                finally:
                    sock.fd = None  # never written again: the descriptor may be reused
                    await trio.aclose_forcefully(stream)
        finally:
            if self.open.get(channel) is sock:
                del self.open[channel]
            self.changed.unpark_all()
            if opened or not channel.closed:
                # channel_lost does nothing for a channel that ended cleanly
                self.link.channel_lost(channel)

    async def _socket_reader(self, sock: _ClientSocket) -> None:
        stream = sock.stream
        assert stream is not None
        channel = sock.channel
        while True:
            try:
                data = await stream.receive_some(_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                log.debug("HTTP connection lost: %r", exc)
                return
            self.link.channel_data(channel, bytes(data))
            if not data:
                return  # the server is done with it: close our side too

    async def _socket_writer(self, sock: _ClientSocket, scope: trio.CancelScope) -> None:
        stream = sock.stream
        assert stream is not None
        try:
            while True:
                while not sock.out:
                    if sock.closing:
                        return
                    await sock.ready.park()
                await send_queued(sock, stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            log.debug("HTTP connection lost while writing: %r", exc)
        finally:
            sock.fd = None
            scope.cancel()  # the socket is over: stop reading too

    # -- the timer ---------------------------------------------------------------------------

    async def timer(self) -> None:
        """The client's one timer: wait for the runtime's deadline, then run the client's
        ``on_timer`` (looked up on the client at each firing)."""
        runtime = self.runtime
        while True:
            with trio.CancelScope(deadline=runtime.deadline) as scope:
                runtime.scope = scope
                await trio.sleep_forever()
            runtime.scope = None
            runtime.deadline = math.inf  # passed: on_timer arms the next one (_arm is lazy)
            self.client.on_timer()

    # -- lifetime ----------------------------------------------------------------------------

    async def aclose(self, timeout: float | None) -> None:
        """End the session: ``DELETE`` it (handshake era, waiting at most ``timeout``
        seconds for the answer; None: :data:`DEFAULT_CLOSE_TIMEOUT`), close every socket,
        abort what is still pending."""
        self.link.begin_close()
        with trio.move_on_after(DEFAULT_CLOSE_TIMEOUT if timeout is None else timeout):
            while self.open:
                await self.changed.park()
        for sock in list(self.open.values()):
            sock.scope.cancel()
        self.runtime.stop_tasks()


#: An MCP client over HTTP on trio: the trio client (the methods of the stdio
#: :class:`~mcp_sansio.adapters.trio.Client`, see :class:`~.async_session.AsyncClient`) holding an
#: HTTP link and :class:`TrioSockets`. Made by :func:`connect_http`. A call whose cancel
#: scope is cancelled cancels the request (handshake era: ``notifications/cancelled``;
#: stateless era: its stream is closed).
HTTPClientSession = AsyncClient


def http_client(url: str, *, headers: Iterable[tuple[str, str]] | Mapping[str, str] | None,
                http_options: Mapping[str, Any] | None,
                **options: Any) -> tuple[AsyncClient, TrioSockets]:
    """A new, unconnected trio HTTP client of ``url`` and its sockets object (``options``:
    the callbacks and connection options of
    :meth:`~mcp_sansio.app.session.ClientLogic._create`)."""
    client = AsyncClient._create(**options)
    runtime = client.runtime = TrioRuntime(client)
    link, own = attach_http(client, url, headers=headers, http_options=http_options)
    sockets = client.sockets = TrioSockets(client, link, runtime, **own)
    return client, sockets


@runs(entry_points.connect_http, "On trio the OAuth flow's HTTP requests and a plain user "
      "step run in worker threads.")
@contextlib.asynccontextmanager
async def connect_http(call: HTTPClientCall) -> AsyncIterator[AsyncClient]:
    # The OAuth retry's plan (common/authorized.py), run here: each attempt's client lives
    # in a nursery of its own, which the authorizing between two attempts is outside of.
    session_auth = SessionAuth(call.auth, call.url) if call.auth is not None else None
    plan = authorized(session_auth) if session_auth is not None and call.connect else None
    error: Exception | None = None
    while True:
        step: Any = ATTEMPT
        if plan is not None:
            _, step = advance(plan, None, error)
        if isinstance(step, Authorize):
            assert session_auth is not None
            await _authorize(session_auth, step.challenge, step.generation)
            error = None
            continue
        client, sockets = http_client(call.url, headers=call.headers,
                                      http_options=call.http_options, **call.client)
        sockets.use(call.uds, session_auth)
        error = None
        async with _one_error(), trio.open_nursery() as nursery:
            sockets.runtime.nursery = nursery
            nursery.start_soon(sockets.timer)
            try:
                if call.connect:
                    try:
                        await client.connect(era=call.era)
                    except HTTPTransportError as exc:
                        if plan is None:
                            raise
                        error = exc  # the plan's to judge, once this client is closed
                if error is None:
                    if plan is not None:
                        advance(plan, None, None)  # connected: the plan ends
                    yield client
            finally:
                with trio.CancelScope(shield=True):
                    await client.aclose()
                nursery.cancel_scope.cancel()
        if error is None:
            return


async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    # Blocking auth steps (the flow's requests, a plain user step) in a worker thread; each
    # is bounded by its own timeout, and a cancelled caller does not wait for it.
    return await trio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)


async def _authorize(auth: SessionAuth, challenge: Any, generation: int) -> None:
    """Run the OAuth flow, its blocking parts in worker threads (unless it ran since
    ``generation``: another call already did)."""
    if auth.generation == generation:
        await auth.run_async(challenge, _in_thread, native_fetch=False)
