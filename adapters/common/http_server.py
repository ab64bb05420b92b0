"""The HTTP server every bundled runtime serves: the sans-IO one with the defaults drawn from
:mod:`secrets` and the options derived from the :class:`~mcp_sansio.app.server.Server`.

Theory of operation: what the HTTP server adapters (asyncio, trio, threads) share lives in
the sans-IO layer (:mod:`mcp_sansio.app.http_service`: the service base, the link a session
logic holds, the server-wide broadcast, the HTTP server's construction). This module adds
only what is not sans-IO -- a random ``requestState`` key and random session ids unless
given -- and the ``tool_param_headers`` and ``tool_scopes`` options read off the server.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any

from mcp_sansio import KeyRing
from mcp_sansio.app.http_service import http_server_for
from mcp_sansio.app.server import Server
from mcp_sansio.http import HTTPServer

from ..auth.scopes import tool_scopes
from ..keys import request_state_keys, shares_state
from .http_options import tool_param_headers

__all__ = ["new_http_server"]


def new_http_server(
    server: Server, *, request_state_key: bytes | KeyRing | None,
    connection_options: Mapping[str, Any] | None,
    new_session_id: Callable[[], str] | None, http_options: dict[str, Any],
) -> HTTPServer:
    """The :class:`~mcp_sansio.http.HTTPServer` that ``start_http`` serves ``server`` with
    (its parameters are documented there): each session's connection from
    ``server.connection`` with ``connection_options``; session ids from :mod:`secrets`;
    ``request_state_key`` as given, else from the environment, else random -- and then
    valid for this process only (:func:`mcp_sansio.adapters.keys.request_state_keys`; a
    server with a store other than the in-memory one counts as shared)."""
    # 2026-07-28 Mcp-Param-* checking follows the server's tools unless told otherwise
    http_options.setdefault("tool_param_headers", tool_param_headers(server))
    http_options.setdefault("tool_scopes", tool_scopes(server))  # per-tool scopes (auth)
    return http_server_for(
        server, request_state_key=request_state_keys(
            request_state_key, shared=shares_state(http_options)),
        new_session_id=new_session_id or (lambda: secrets.token_urlsafe(32)),
        connection_options=connection_options, http_options=http_options)

