"""The exceptions a user of the high-level ``Client`` and ``Server`` catches or raises.

Theory of operation: the classes live in the sans-IO layer (:mod:`mcp_sansio.app.errors`:
call outcomes; the HTTP client's logic; the core); this module only gives them one public,
stable home, ``mcp_sansio.adapters.errors``, so that ``except errors.McpError`` does not
depend on a private module's name. The same classes are also re-exported by each runtime
module (``mcp_sansio.adapters.asyncio`` ...); they are the same objects.

A client call ends in exactly one of: its result; :class:`McpError` (the server answered
with a JSON-RPC error; :class:`ResultRejected` when the core refused the result);
:class:`RequestTimeout` (a ``TimeoutError``); :class:`ConnectionClosedError` (a
``ConnectionError``; :class:`HTTPTransportError` when an HTTP exchange failed); the
runtime's cancellation (:class:`RequestCancelledError` on threads); or
:class:`LocalProtocolError` raised before anything is sent, for a call the negotiated
revision does not have (``ping`` in 2026-07-28). An HTTP client given ``auth`` adds
:class:`AuthFlowError` (one subclass per kind of failure, each naming the step and the
URL): the server asked for authorization and the OAuth flow could not get a token. A
server handler raises :class:`ToolError` for a tool's own failure (answered as a result
with ``isError``) or :class:`McpError` to answer with that JSON-RPC error. A server that
cannot listen raises :class:`ListenError` (an ``OSError`` naming the address and the
reason: ``cannot listen on 127.0.0.1:8000: address already in use``).

:class:`HTTPTransportError` and the authorization errors are loaded on first use, like the
HTTP names of the runtime modules, so that a stdio process does not import h11 or the
OAuth flow to catch errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_sansio import LocalProtocolError
from mcp_sansio.app.errors import (
    ConnectionClosedError,
    McpError,
    RequestCancelledError,
    RequestTimeout,
    ResultRejected,
    ToolError,
)

from .common.listen_error import ListenError

if TYPE_CHECKING:
    from mcp_sansio.app.http_client import HTTPTransportError
    from mcp_sansio.auth import (
        AuthFlowError,
        AuthorizationDenied,
        IssuerMismatch,
        LimitExceeded,
        MetadataError,
        PKCENotSupported,
        RegistrationError,
        TokenError,
    )

#: The OAuth client flow's errors (:mod:`mcp_sansio.auth`), loaded on first use too.
_AUTH_ERRORS = frozenset({
    "AuthFlowError", "AuthorizationDenied", "IssuerMismatch", "LimitExceeded",
    "MetadataError", "PKCENotSupported", "RegistrationError", "TokenError"})

__all__ = [
    "AuthFlowError",
    "AuthorizationDenied",
    "ConnectionClosedError",
    "HTTPTransportError",
    "IssuerMismatch",
    "LimitExceeded",
    "ListenError",
    "LocalProtocolError",
    "McpError",
    "MetadataError",
    "PKCENotSupported",
    "RegistrationError",
    "RequestCancelledError",
    "RequestTimeout",
    "ResultRejected",
    "TokenError",
    "ToolError",
]


def __getattr__(name: str) -> Any:
    if name == "HTTPTransportError":
        # Lazy: loaded on first use of the name (module __getattr__).
        from mcp_sansio.app.http_client import HTTPTransportError

        return HTTPTransportError
    if name in _AUTH_ERRORS:
        import mcp_sansio.auth  # lazy: loaded on first use of the name (module __getattr__)

        return getattr(mcp_sansio.auth, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
