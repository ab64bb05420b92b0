"""What every runtime's HTTP client sockets are set up with: the connect timeout, the write
bound, a Unix socket's path and the TLS context -- by default the system's trusted
certificates (the one thing of the client's HTTP set-up that reads the machine; the rest is
the sans-IO :mod:`mcp_sansio.app.http_client`)."""

from __future__ import annotations

import ssl
from typing import Any

from mcp_sansio.app.http_client import HTTPClientLink

__all__ = ["SocketOptions", "default_tls"]


def default_tls(scheme: str) -> ssl.SSLContext | None:
    """TLS for ``https``: the system's trusted certificates; None for plain ``http``."""
    return ssl.create_default_context() if scheme == "https" else None


class SocketOptions:
    """The set-up of a runtime's client sockets (``client.sockets``), the same on every
    runtime."""

    #: Seconds to wait for a TCP (and TLS) connection to open.
    connect_timeout: float
    #: Unwritten output (bytes) a socket may hold before it is dropped.
    max_write_buffer: int
    #: A Unix socket's path to connect to instead of the URL's host and port.
    uds: str | None
    #: TLS for ``https``: the system's trusted certificates unless told otherwise.
    ssl_context: Any

    def _set_up(self, link: HTTPClientLink, connect_timeout: float, max_write_buffer: int,
                ssl_context: Any) -> None:
        self.connect_timeout = connect_timeout
        self.max_write_buffer = max_write_buffer
        self.uds = None
        self.ssl_context = (ssl_context if ssl_context is not None
                            else default_tls(link.http.scheme))
