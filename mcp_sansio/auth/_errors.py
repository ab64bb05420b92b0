"""The errors of the authorization pieces: each names the step and the URL it concerns.

Theory of operation
-------------------
The OAuth flow talks to up to three parties (the MCP server, its authorization server, the
user's browser); when something goes wrong the application has to tell the user *which* of
them misbehaved. Every failure of the client flow is therefore an :class:`AuthFlowError`
carrying ``step`` (one of :data:`STEPS`) and ``url`` (the URL being fetched or checked),
with a subclass per kind of failure an application may want to handle differently. Nothing
here is fatal to the process: the flow raises, stays failed, and a new ``start`` begins
afresh.

On the resource-server side, :class:`InvalidToken` and :class:`InsufficientScope` are what a
:class:`~mcp_sansio.auth.TokenVerifier` raises; they map onto RFC 6750 §3.1 error codes.
"""

from __future__ import annotations

#: The steps of the client flow, in the order the flow takes them (MCP 2025-11-25
#: basic/authorization.mdx, "Authorization Flow Steps").
STEPS = (
    "protected-resource-metadata",   # RFC 9728 §3
    "authorization-server-metadata",  # RFC 8414 §3, OpenID Connect Discovery 1.0 §4
    "registration",                  # pre-registration, CIMD, RFC 7591
    "authorization",                 # OAuth 2.1 §4.1.1, RFC 7636, RFC 8707
    "authorization-response",        # OAuth 2.1 §4.1.2, RFC 9207 §2.4
    "token-exchange",                # RFC 8693 §2 at an enterprise IdP (ID-JAG grant)
    "token",                         # OAuth 2.1 §4.1.3
    "refresh",                       # OAuth 2.1 §4.3
    "challenge",                     # RFC 6750 §3, the 401/403 that started the flow
    "transport",                     # an adapter could not carry one of the flow's requests
)


class AuthFlowError(Exception):
    """The OAuth client flow could not go on; ``step`` and ``url`` say where."""

    def __init__(self, step: str, url: str | None, reason: str) -> None:
        self.step = step
        self.url = url
        self.reason = reason
        where = f" ({url})" if url else ""
        super().__init__(f"{step}{where}: {reason}")


class MetadataError(AuthFlowError):
    """A metadata document was missing, not JSON, or lacked a required field."""


class IssuerMismatch(AuthFlowError):
    """An issuer (in metadata, RFC 8414 §3.3, or on the redirect, RFC 9207 §2.4) differs."""


class PKCENotSupported(AuthFlowError):
    """The authorization server does not advertise PKCE ``S256`` (MCP 2025-11-25 requires it)."""


class RegistrationError(AuthFlowError):
    """No client identity could be obtained, or the registration endpoint refused."""


class AuthorizationDenied(AuthFlowError):
    """The redirect carried an OAuth ``error`` (OAuth 2.1 §4.1.2.1), or no code."""

    def __init__(self, step: str, url: str | None, reason: str, error: str = "") -> None:
        super().__init__(step, url, reason)
        self.error = error


class TokenError(AuthFlowError):
    """The token endpoint refused (OAuth 2.1 §3.2.4) or answered something unusable."""

    def __init__(self, step: str, url: str | None, reason: str, error: str = "") -> None:
        super().__init__(step, url, reason)
        self.error = error


class LimitExceeded(AuthFlowError):
    """A bound was hit: too many requests, redirects or challenges, or a response too large."""


class InvalidRequest(Exception):
    """A request presented its token in a way RFC 6750 forbids (e.g. in the query string)."""


class InvalidToken(Exception):
    """The access token is malformed, expired, revoked, or not meant for this resource."""


class InsufficientScope(Exception):
    """The token is valid but lacks scopes the operation needs (RFC 6750 §3.1)."""

    def __init__(self, required: frozenset[str], reason: str = "") -> None:
        self.required = required
        super().__init__(reason or f"requires scope {' '.join(sorted(required))}")
