"""The threads' HTTP client: one TCP connection per channel of the sans-IO HTTP client.

Theory of operation: :data:`HTTPClientSession` is the plain blocking client
(:class:`~mcp_sansio.adapters.threading.session.SyncClient`) holding the runtime-free HTTP
link (``client.link``, an :class:`~mcp_sansio.app.http_client.HTTPClientLink`) and a
:class:`ThreadSockets` (``client.sockets``): the link drains the sans-IO client and hands
each ``(channel, bytes)`` to the sockets, which open one TCP (and TLS) connection per
channel with a reader thread each, write what the pump gives them (the server's
:class:`~.http_server._Writer`), and report what arrives back to the link. A timer thread
of its own keeps the client's deadline (the link's ``arm``). :func:`connect_http` is the
definition in :mod:`~mcp_sansio.adapters.common.entry_points` run on threads.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from mcp_sansio.app.http_client import HTTPClientLink, attach_http
from mcp_sansio.http import ClientChannel

from ..auth.session import SessionAuth
from ..common import entry_points
from ..common.authorized import run_blocking
from ..common.entry_points import HTTPClientCall, runs
from ..common.http_client import DEFAULT_CLOSE_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, SocketOptions
from .http_server import _CHUNK, _Writer, log
from .runtime import ThreadRuntime
from .session import SyncClient

__all__ = ["DEFAULT_CLOSE_TIMEOUT", "DEFAULT_CONNECT_TIMEOUT", "HTTPClientSession",
           "ThreadSockets", "connect_http"]

# -- the client ----------------------------------------------------------------------------------



class _ClientSocket(_Writer):
    """One channel's TCP connection: opened by its reader thread (connect, then the TLS
    handshake for ``https``), which then reads until the connection ends. What the session
    writes before it is open waits (one request: the HTTP client sends one exchange at a
    time per channel).

    TLS runs over memory buffers (:class:`ssl.SSLObject`): the socket itself carries only
    ciphertext, written the same non-blocking way as plain bytes, and the TLS object is used
    by one thread at a time (the writers and the reader) under its own lock."""

    def __init__(self, sockets: ThreadSockets, channel: ClientChannel) -> None:
        super().__init__(None, sockets.max_write_buffer)
        self.sockets = sockets
        self.link = sockets.link
        self.channel = channel
        self._ready = False
        self._pending: list[bytes] = []
        self._tls: ssl.SSLObject | None = None
        self._tls_in = ssl.MemoryBIO()
        self._tls_out = ssl.MemoryBIO()
        self._tls_lock = threading.Lock()
        self.reader = threading.Thread(target=self._run, name="mcp-sansio-http-client-reader",
                                       daemon=True)

    def write(self, data: bytes, close: bool) -> None:
        """(The session's lock held.) Plain bytes from the HTTP client."""
        with self._lock:
            if not self._ready:
                if close:  # dropped before it was open: nothing to say on it
                    self._shutdown()
                elif not self._dead:
                    self._pending.append(data)
                return
        if data and not self._write_plain(data):
            return
        if close:
            self.close_after_flush()

    def _write_plain(self, data: bytes) -> bool:
        if self._tls is None:
            return self.send(data)
        with self._tls_lock:
            self._tls.write(data)
            return self.send(self._tls_out.read())

    def _run(self) -> None:
        sockets, link, channel = self.sockets, self.link, self.channel
        opened = False
        try:
            try:
                sock = self._open()
            except Exception as exc:  # refused, unreachable, timed out, TLS, a bad name
                self.abort()
                sockets.forget(self)
                link.channel_failed(channel, exc)
                return
            opened = True
            if not self._attach(sock):  # dropped while it was opening
                sock.close()
                sockets.forget(self)
                return
            with sockets.lock:  # what waited goes first, in order, before any later write
                pending, self._pending = self._pending, []
                for data in pending:
                    self._write_plain(data)
                with self._lock:
                    self._ready = True
            self._read(sock)
        except Exception:  # pragma: no cover - a bug: log it, drop the connection
            log.exception("the reader of an HTTP client connection failed")
        finally:
            self.abort()
            sockets.forget(self)
            if opened:
                with sockets.lock:
                    if not channel.closed or channel.exchange is not None:
                        link.channel_lost(channel)
            self._release()

    def _open(self) -> socket.socket:
        sockets = self.sockets
        http = self.link.http
        if sockets.uds is None:
            sock = socket.create_connection((http.host, http.port),
                                            timeout=sockets.connect_timeout)
        else:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(sockets.connect_timeout)
            try:
                sock.connect(sockets.uds)
            except BaseException:
                sock.close()
                raise
        try:
            if sock.family != socket.AF_UNIX:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if sockets.ssl_context is not None:
                tls = sockets.ssl_context.wrap_bio(self._tls_in, self._tls_out,
                                                  server_hostname=http.host)
                while True:
                    try:
                        tls.do_handshake()
                        break
                    except ssl.SSLWantReadError:
                        sock.sendall(self._tls_out.read())
                        data = sock.recv(_CHUNK)
                        if not data:
                            raise ConnectionError("closed during the TLS handshake") from None
                        self._tls_in.write(data)
                sock.sendall(self._tls_out.read())
                self._tls = tls
            sock.settimeout(None)
        except BaseException:
            sock.close()
            raise
        return sock

    def _read(self, sock: socket.socket) -> None:
        link, channel = self.link, self.channel
        while True:
            try:
                data = sock.recv(_CHUNK)
            except OSError:
                return  # lost: the finally of _run says so
            plain = data if self._tls is None else self._decrypt(data)
            if plain or not data:
                link.channel_data(channel, plain)
            if not data:
                return

    def _decrypt(self, data: bytes) -> bytes:
        tls = self._tls
        assert tls is not None
        out = bytearray()
        with self._tls_lock:
            if data:
                self._tls_in.write(data)
            else:
                self._tls_in.write_eof()
            while True:
                try:
                    chunk = tls.read(_CHUNK)
                except (ssl.SSLWantReadError, ssl.SSLZeroReturnError, ssl.SSLEOFError):
                    break
                if not chunk:
                    break
                out += chunk
            reply = self._tls_out.read()  # e.g. a key update's answer
            if reply:
                self.send(reply)
        return bytes(out)


class ThreadSockets(SocketOptions[_ClientSocket]):
    """A blocking HTTP client's TCP connections (``client.sockets``): one
    :class:`_ClientSocket` per channel with its reader thread, opened by :meth:`send` (the
    link's ``send``); the client's timer thread (the link's ``arm``: an HTTP client has no
    stdio reader whose wait could keep its deadline); the lock that serializes OAuth flows;
    the close, which joins every thread it started. Everything runs under the session's
    lock (the :class:`~.runtime.ThreadRuntime`'s)."""

    def __init__(self, client: SyncClient, link: HTTPClientLink, runtime: ThreadRuntime,
                 **options: Any) -> None:
        self.client = client
        self.runtime = runtime
        self.lock = runtime.lock
        self._changed = threading.Condition(self.lock)
        self._timer = threading.Condition(self.lock)
        self._deadline: float | None = None
        self._timer_at: float | None = None
        self._stopping = False
        self._timer_thread: threading.Thread | None = None
        self._readers: set[threading.Thread] = set()
        # Not the session's lock for OAuth: the flow makes HTTP requests and waits for the user.
        super().__init__(link, threading.Lock(), **options)
        link.arm = self.arm

    def authorized(self, auth: SessionAuth, send: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """``send()`` under the OAuth retry (:mod:`~mcp_sansio.adapters.common.authorized`)."""
        return run_blocking(auth, send, self.authorize)

    def authorize(self, auth: SessionAuth, challenge: Any, generation: int) -> None:
        """Run the OAuth flow (on the calling thread), one at a time."""
        with self._auth_lock:
            _authorize(auth, challenge, generation)

    # -- the link's hooks (the session's lock is held) -------------------------------------

    def arm(self, deadline: float | None) -> None:
        with self.lock:
            self._deadline = deadline
            if deadline is not None and (self._timer_at is None or deadline < self._timer_at):
                self._timer_at = deadline
                self._timer.notify()

    def _start(self, channel: ClientChannel) -> _ClientSocket:
        sock = _ClientSocket(self, channel)
        self._readers.add(sock.reader)
        sock.reader.start()
        return sock

    def _write(self, sock: _ClientSocket, data: bytes, closed: bool) -> None:
        sock.write(data, closed)

    def forget(self, sock: _ClientSocket) -> None:
        with self.lock:
            if self.open.get(sock.channel) is sock:
                del self.open[sock.channel]
                self._changed.notify_all()
            self._readers.discard(sock.reader)

    def _run_timer(self) -> None:
        client = self.client
        with self.lock:
            while not self._stopping:
                deadline = self._deadline
                now = time.monotonic()
                if deadline is not None and deadline <= now:
                    self._deadline = self._timer_at = None
                    client.on_timer()
                    continue
                self._timer_at = deadline
                self._timer.wait(None if deadline is None else deadline - now)

    def start(self) -> None:
        """Start the timer thread."""
        self._timer_thread = threading.Thread(target=self._run_timer, daemon=True,
                                              name="mcp-sansio-http-client-timer")
        self._timer_thread.start()

    # -- lifetime ----------------------------------------------------------------------------

    def close(self, timeout: float | None) -> None:
        """End the session: ``DELETE`` it (handshake era, waiting at most ``timeout``
        seconds for the answer; None: :data:`DEFAULT_CLOSE_TIMEOUT`), close every socket,
        abort what is still pending, and join the threads the client started."""
        self.link.begin_close()
        deadline = time.monotonic() + (DEFAULT_CLOSE_TIMEOUT if timeout is None else timeout)
        with self.lock:
            while self.open and (left := deadline - time.monotonic()) > 0:
                self._changed.wait(left)
            sockets = list(self.open.values())
            readers = list(self._readers)
            self._stopping = True
            self._timer.notify_all()
        for sock in sockets:
            sock.abort()
        for reader in readers:
            if reader is not threading.current_thread():
                reader.join()
        if self._timer_thread is not None and self._timer_thread is not threading.current_thread():
            self._timer_thread.join()
        self.runtime.stop_workers()


#: A blocking MCP client over HTTP: the threading client (the methods of the stdio
#: :class:`~mcp_sansio.adapters.threading.Client`, see :class:`~.session.SyncClient`)
#: holding an HTTP link and :class:`ThreadSockets`. Made by :func:`connect_http`. One reader
#: thread per TCP connection feeds the sans-IO HTTP client under the session's lock; a
#: thread that calls writes its request to the socket itself; one timer thread follows
#: :meth:`~mcp_sansio.http.HTTPClient.next_deadline`. Cancelling a call (a
#: :class:`~mcp_sansio.adapters.threading.CancelToken`) cancels the request (handshake
#: era: ``notifications/cancelled``; stateless era: its stream is closed).
HTTPClientSession = SyncClient


def http_client(url: str, *, headers: Iterable[tuple[str, str]] | Mapping[str, str] | None,
                http_options: Mapping[str, Any] | None,
                **options: Any) -> tuple[SyncClient, ThreadSockets]:
    """A new, unconnected blocking HTTP client of ``url`` and its sockets object
    (``options``: the callbacks and connection options of
    :meth:`~mcp_sansio.app.session.ClientLogic._create`)."""
    client = SyncClient._create(**options)
    link, own = attach_http(client, url, headers=headers, http_options=http_options)
    sockets = client.sockets = ThreadSockets(client, link, client.runtime, **own)
    return client, sockets


def _authorize(auth: SessionAuth, challenge: Any, generation: int) -> None:
    """Run the OAuth flow on this thread (unless it ran since ``generation``: another call
    already did)."""
    if auth.generation == generation:
        auth.run_sync(challenge)


@runs(entry_points.connect_http, "On threads the OAuth flow's user step must be a plain "
      "function; on exit every thread of the client is joined too.")
@contextlib.contextmanager
def connect_http(call: HTTPClientCall) -> Iterator[SyncClient]:
    session_auth = SessionAuth(call.auth, call.url) if call.auth is not None else None

    def attempt() -> SyncClient:
        client, sockets = http_client(call.url, headers=call.headers,
                                      http_options=call.http_options, **call.client)
        sockets.use(call.uds, session_auth)
        sockets.start()
        if call.connect:
            try:
                client.connect(era=call.era)
            except BaseException:
                client.close()
                raise
        return client

    if session_auth is None or not call.connect:
        client = attempt()
    else:  # a refused connect is tried again on a new connection, once authorized
        client = run_blocking(session_auth, attempt, _authorize)
    try:
        yield client
    finally:
        client.close()
