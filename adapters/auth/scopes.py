"""Per-tool scopes: the ``tool_scopes`` option of the HTTP server, derived from the tools.

Theory of operation: a tool registered with ``scopes=[...]`` (``Server.add_tool`` /
``@server.tool(scopes=...)``) needs those scopes, on top of the endpoint's
``required_scopes``, in the token of whoever calls it over a protected HTTP server. The
check is the HTTP server's (a ``tools/call`` lacking them is answered 403
``insufficient_scope`` naming every scope it needs, MCP 2026-07-28 "Runtime Insufficient
Scope Errors"), which asks the function made here; it looks the tool up in ``server.tools``
at each call, so it follows tools added, replaced or removed while the server runs. Without
``auth`` the scopes are not looked at (stdio servers take credentials from the
environment).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_sansio.app.server import Server

__all__ = ["tool_scopes"]


def tool_scopes(server: Server) -> Callable[[str], frozenset[str] | None]:
    """The ``tool_scopes`` option of :class:`~mcp_sansio.http.HTTPServer` for ``server``."""

    def lookup(name: str) -> frozenset[str] | None:
        entry = server.tools.get(name)
        return entry.scopes if entry is not None else None

    return lookup
