"""OAuth 2.1 authorization for MCP over HTTP, sans I/O: the client flow and the resource server.

Theory of operation
-------------------
MCP authorization (2025-06-18 and later, basic/authorization.mdx) is plain OAuth 2.1 with a
fixed choice of companions: protected-resource metadata (RFC 9728) to find the authorization
server, its metadata (RFC 8414 / OpenID Connect Discovery), a client identity (pre-registered,
a client ID metadata document, or RFC 7591), PKCE S256 (RFC 7636), resource indicators
(RFC 8707), issuer identification on the redirect (RFC 9207), and bearer tokens (RFC 6750).
Beyond the browser: grants for machine clients (client credentials, workload identity,
enterprise-managed ID-JAG: :mod:`mcp_sansio.auth._grants`) and DPoP-bound tokens in both
roles (RFC 9449: :mod:`mcp_sansio.auth.dpop`, :mod:`mcp_sansio.auth._dpop_resource`).

Like the rest of the core, nothing here performs I/O: the client flow
(:class:`OAuthClientFlow`) hands out :class:`HTTPRequest` values and takes
:class:`HTTPResponse` values, time is ``now`` and randomness an injected ``entropy``
callable; the resource-server pieces build documents and headers and judge tokens with a
:class:`TokenVerifier` that is given its keys. The rules (orders of discovery, preference
orders, limits) are tables in :mod:`mcp_sansio.auth._rules`. The JWT verifier lives in
:mod:`mcp_sansio.auth.jwt` and DPoP in :mod:`mcp_sansio.auth.dpop`; they, and signing
``private_key_jwt`` assertions, need the ``auth`` extra (joserfc); nothing else here does.
"""

from __future__ import annotations

from . import _rules as rules
from ._access import AccessInfo
from ._challenge import (
    Challenge,
    auth_params,
    bearer_challenge,
    bearer_params,
    parse_challenges,
)
from ._client import (
    Action,
    Authorized,
    ClientConfig,
    OAuthClientFlow,
    ResourceMetadata,
    ServerMetadata,
    UserAuthorization,
    as_metadata_urls,
    choose_auth_method,
)
from ._deferred import VerificationPending, VerificationUnavailable
from ._errors import (
    STEPS,
    AuthFlowError,
    AuthorizationDenied,
    InsufficientScope,
    InvalidRequest,
    InvalidToken,
    IssuerMismatch,
    LimitExceeded,
    MetadataError,
    PKCENotSupported,
    RegistrationError,
    TokenError,
)
from ._grants import (
    ClientCredentialsGrant,
    IdentityAssertionGrant,
    JWTBearerGrant,
    MachineGrant,
)
from ._http import DEFAULT_MAX_RESPONSE_BYTES, HTTPRequest, HTTPResponse, canonical_resource
from ._introspection import IntrospectionVerifier
from ._resource import (
    ProtectedResource,
    authorize_request,
    extract_bearer_token,
    metadata_url,
    protected_resource_metadata,
)
from ._storage import ClientCredentials, MemoryStorage, Tokens, TokenStorage
from ._verdict import Refusal, TokenVerifier, judge

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES", "STEPS", "AccessInfo", "Action", "AuthFlowError",
    "AuthorizationDenied", "Authorized", "Challenge", "ClientConfig", "ClientCredentials",
    "ClientCredentialsGrant", "IdentityAssertionGrant", "JWTBearerGrant", "MachineGrant",
    "HTTPRequest", "HTTPResponse", "InsufficientScope", "IntrospectionVerifier",
    "InvalidRequest", "InvalidToken", "IssuerMismatch", "LimitExceeded", "MemoryStorage",
    "MetadataError", "OAuthClientFlow", "PKCENotSupported", "ProtectedResource", "Refusal",
    "RegistrationError",
    "ResourceMetadata", "ServerMetadata", "TokenError", "TokenStorage", "TokenVerifier",
    "Tokens", "UserAuthorization", "VerificationPending", "VerificationUnavailable",
    "as_metadata_urls", "auth_params", "authorize_request",
    "bearer_challenge", "bearer_params", "canonical_resource", "choose_auth_method",
    "extract_bearer_token", "judge", "metadata_url", "parse_challenges",
    "protected_resource_metadata",
    "rules",
]
