"""What every runtime's HTTP client sockets share: the set-up (the connect timeout, the write
bound, a Unix socket's path and the TLS context -- by default the system's trusted
certificates, the one thing of the client's HTTP set-up that reads the machine; the rest is
the sans-IO :mod:`mcp_sansio.app.http_client`) and the link's ``send``, which opens a
channel's connection on its first bytes. A runtime says how it opens one (``_start``) and
how it writes to it (``_write``)."""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from mcp_sansio.app.http_client import HTTPClientLink
from mcp_sansio.http import ClientChannel

if TYPE_CHECKING:
    from ..auth.session import SessionAuth

__all__ = ["DEFAULT_CLOSE_TIMEOUT", "DEFAULT_CONNECT_TIMEOUT", "DEFAULT_MAX_WRITE_BUFFER",
           "SocketOptions", "default_tls"]

#: Seconds to wait for a TCP (and TLS) connection to open: 10 s. A server that is up answers
#: in milliseconds; beyond this the exchange fails rather than wait for the system's own
#: timeout (minutes, for an address that drops packets).
DEFAULT_CONNECT_TIMEOUT = 10.0
#: Seconds a client's close waits for the session's ``DELETE`` to be answered before
#: dropping the sockets: 2 s (a courtesy: the server expires idle sessions anyway).
DEFAULT_CLOSE_TIMEOUT = 2.0
#: Unwritten output (bytes) a socket may hold before it is dropped: 16 MiB, far above any
#: request (a server that does not read what we send is stuck).
DEFAULT_MAX_WRITE_BUFFER = 16 * 1024 * 1024


def default_tls(scheme: str) -> ssl.SSLContext | None:
    """TLS for ``https``: the system's trusted certificates; None for plain ``http``."""
    return ssl.create_default_context() if scheme == "https" else None


S = TypeVar("S")


class SocketOptions(Generic[S]):
    """A runtime's client sockets (``client.sockets``): their set-up and the opening of a
    channel's connection (of type ``S``), the same on every runtime. ``auth_lock`` (the
    runtime's own lock) serializes OAuth flows."""

    #: The runtime-free HTTP link whose ``send`` this is.
    link: HTTPClientLink
    #: The open sockets, by channel.
    open: dict[ClientChannel, S]
    #: Serializes OAuth flows (the runtime's own lock).
    _auth_lock: Any

    #: Seconds to wait for a TCP (and TLS) connection to open.
    connect_timeout: float
    #: Unwritten output (bytes) a socket may hold before it is dropped.
    max_write_buffer: int
    #: A Unix socket's path to connect to instead of the URL's host and port.
    uds: str | None
    #: TLS for ``https``: the system's trusted certificates unless told otherwise.
    ssl_context: Any

    def __init__(self, link: HTTPClientLink, auth_lock: Any, *,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER,
                 ssl_context: Any = None) -> None:
        self.link = link
        self.open = {}
        self._auth_lock = auth_lock
        self.connect_timeout = connect_timeout
        self.max_write_buffer = max_write_buffer
        self.uds = None
        self.ssl_context = (ssl_context if ssl_context is not None
                            else default_tls(link.http.scheme))
        link.send = self.send

    def use(self, uds: str | None, auth: SessionAuth | None) -> None:
        """Set the new client up for one ``connect_http`` attempt: the Unix socket to dial
        instead of the URL's host and port, and the OAuth session (installed on the sans-IO
        client, so that its requests carry the token)."""
        self.uds = uds
        if auth is not None:
            self.link.session.auth = auth
            auth.install(self.link.http)

    def send(self, channel: ClientChannel, data: bytes) -> None:
        """The link's ``send``: ``data`` for ``channel``, whose connection opens on its first
        bytes (a channel closed before it had any is never opened)."""
        sock = self.open.get(channel)
        if sock is None:
            if channel.closed:
                return
            sock = self.open[channel] = self._start(channel)
            self.link.connections_opened += 1
        self._write(sock, data, channel.closed)

    def _start(self, channel: ClientChannel) -> S:
        """Start opening ``channel``'s connection (the runtime's way)."""
        raise NotImplementedError

    def _write(self, sock: S, data: bytes, closed: bool) -> None:
        """Write ``data`` to ``sock`` (held until it is open); ``closed``: the channel ends
        with it."""
        raise NotImplementedError
