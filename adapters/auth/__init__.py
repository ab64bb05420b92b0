"""Authorization for the HTTP clients of every runtime: ``connect_http(url, auth=OAuth(...))``.

Theory of operation: this module is only the public, stable home of the names an
application needs to authorize an HTTP client; they live where they work.
:class:`OAuth` (the option, and one :class:`~mcp_sansio.auth.OAuthClientFlow` per MCP
server URL) is in the runtime-free hook :mod:`.auth.session`, which each runtime's client
calls on a 401 or 403 ``insufficient_scope``; the carriers of the flow's I/O are in
:mod:`.auth.flow`: :class:`LoopbackListener` (the user step for a native application: the
browser comes back to 127.0.0.1, RFC 8252 §7.3), :func:`follow_redirect_sync` (the user
step for an authorization server that approves without a user, e.g. in tests) and
:class:`FileStorage` (tokens in a 0600 JSON file, for command-line tools).
:func:`default_token_path` is where the ``mcp-sansio`` CLI keeps its tokens.

Without a browser, ``auth=`` takes :class:`~mcp_sansio.auth.ClientCredentials` itself (the
client-credentials grant) or a grant: :class:`~mcp_sansio.auth.ClientCredentialsGrant`,
:class:`~mcp_sansio.auth.JWTBearerGrant` (workload identity, with :class:`TokenFile` for a
token file the platform rotates), :class:`~mcp_sansio.auth.IdentityAssertionGrant`
(enterprise-managed, ID-JAG); ``OAuth(..., dpop=True)`` asks for DPoP-bound tokens.

Importing it imports no runtime and no HTTP stack beyond h11.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp_sansio.auth import (
    ClientConfig,
    ClientCredentials,
    ClientCredentialsGrant,
    IdentityAssertionGrant,
    JWTBearerGrant,
    MemoryStorage,
    TokenStorage,
)

from .flow import (
    FileStorage,
    LoopbackListener,
    TokenFile,
    follow_redirect,
    follow_redirect_sync,
)
from .session import OAuth

__all__ = [
    "ClientConfig",
    "ClientCredentials",
    "ClientCredentialsGrant",
    "FileStorage",
    "IdentityAssertionGrant",
    "JWTBearerGrant",
    "LoopbackListener",
    "MemoryStorage",
    "OAuth",
    "TokenFile",
    "TokenStorage",
    "default_token_path",
    "follow_redirect",
    "follow_redirect_sync",
]


def default_token_path() -> Path:
    """Where the CLI keeps tokens: ``$XDG_CACHE_HOME/mcp-sansio/tokens.json`` (default
    ``~/.cache``) on Linux and other Unixes, ``~/Library/Caches/mcp-sansio/tokens.json`` on
    macOS, ``%LOCALAPPDATA%\\mcp-sansio\\tokens.json`` on Windows. A cache directory,
    because the file only saves logging in again: deleting it is always safe."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mcp-sansio" / "tokens.json"
