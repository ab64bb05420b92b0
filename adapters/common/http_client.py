"""The runtimes' default TLS context for an HTTP client: the system's trusted certificates
(the one thing of the client's HTTP set-up that reads the machine; the rest is the sans-IO
:mod:`mcp_sansio.app.http_client`)."""

from __future__ import annotations

import ssl

__all__ = ["default_tls"]


def default_tls(scheme: str) -> ssl.SSLContext | None:
    """TLS for ``https``: the system's trusted certificates; None for plain ``http``."""
    return ssl.create_default_context() if scheme == "https" else None
