"""The old home of the HTTP client's session logic, and the runtimes' default TLS context.

Theory of operation: the runtime-free HTTP client logic moved into the sans-IO layer
(:mod:`mcp_sansio.app.http_client`, the link an HTTP client holds); this module re-exports
its error (the same object) under its old path, and adds the one thing that reads the
machine: :func:`default_tls`, the system's trusted certificates as an ``ssl`` context for an
``https`` endpoint.
"""

from __future__ import annotations

import ssl

from mcp_sansio.app.http_client import HTTPTransportError

__all__ = ["HTTPTransportError", "default_tls"]


def default_tls(scheme: str) -> ssl.SSLContext | None:
    """TLS for ``https``: the system's trusted certificates; None for plain ``http``."""
    return ssl.create_default_context() if scheme == "https" else None
