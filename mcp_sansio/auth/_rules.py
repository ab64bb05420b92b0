"""The rules of the authorization flow as tables, each next to the text it comes from.

Theory of operation
-------------------
The client flow (:mod:`mcp_sansio.auth._client`) consults these tables instead of spelling
the orders out in code, so that the documentation can print them and the tests can
enumerate them. Limits are here too, each with the reason for its default.
"""

from __future__ import annotations

#: RFC 9728 §3.1 well-known suffix for protected-resource metadata.
PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"

#: Where protected-resource metadata is looked for, in order (MCP 2025-11-25
#: basic/authorization.mdx "Protected Resource Metadata Discovery Requirements"): the URL the
#: ``resource_metadata`` parameter of the challenge names, else the path-based well-known
#: URL (RFC 9728 §3.1: the suffix inserted between host and path), else the one at the root.
PRM_DISCOVERY_ORDER = ("challenge", "path", "root")

#: Where authorization-server metadata is looked for, in order (MCP 2025-11-25
#: basic/authorization.mdx "Authorization Server Metadata Discovery"; unchanged in
#: 2026-07-28). ``insert``: the well-known suffix goes between host and the issuer's path
#: (RFC 8414 §3.1); ``append``: it goes after the path (OpenID Connect Discovery 1.0 §4.1).
#: For an issuer without a path the two coincide and the duplicate is tried once.
AS_DISCOVERY_ORDER = (
    ("/.well-known/oauth-authorization-server", "insert"),
    ("/.well-known/openid-configuration", "insert"),
    ("/.well-known/openid-configuration", "append"),
)

#: Client registration, in the order of preference (MCP 2025-11-25 basic/authorization.mdx
#: "Client Registration Approaches"; 2026-07-28 basic/authorization/client-registration.mdx):
#: credentials the application pre-registered for this issuer (or that an earlier dynamic
#: registration stored), a client ID metadata document when the authorization server says
#: ``client_id_metadata_document_supported``, dynamic registration (RFC 7591) when it has a
#: ``registration_endpoint``. The fourth option of the spec, asking the user, is the
#: application's: the flow raises :class:`RegistrationError` and the application may retry
#: with pre-registered credentials.
REGISTRATION_ORDER = ("pre-registered", "stored", "client-id-metadata-document", "dynamic")

#: Client authentication at the token endpoint, in the order tried, for a client with a
#: secret and for one without (OAuth 2.1 §2.4; RFC 8414 §2: when the server lists no
#: ``token_endpoint_auth_methods_supported`` the default is ``client_secret_basic``).
AUTH_METHODS_WITH_SECRET = ("client_secret_basic", "client_secret_post")
AUTH_METHODS_WITHOUT_SECRET = ("none",)
DEFAULT_AUTH_METHODS_SUPPORTED = ("client_secret_basic",)

#: Scope selection for the authorization request (MCP 2025-11-25 "Scope Selection
#: Strategy"): the challenge's ``scope``, else all of the resource's ``scopes_supported``,
#: else no ``scope`` parameter. Step-up adds the union with what was requested before
#: (MCP 2026-07-28 "Step-Up Authorization Flow", step 2).
SCOPE_SOURCES = ("challenge", "scopes_supported", "none")

#: RFC 9207 §2.4 as MCP 2026-07-28 "Authorization Response Validation" tabulates it:
#: (``authorization_response_iss_parameter_supported``, ``iss`` present) -> action.
ISS_CHECK = {
    (True, True): "compare",
    (True, False): "reject",
    (False, True): "compare",
    (False, False): "proceed",
}

#: PKCE method the flow uses and requires the server to list (RFC 7636 §4.2; MCP 2025-11-25
#: "Authorization Code Protection": refuse a server whose metadata lacks it).
PKCE_METHOD = "S256"

#: HTTP statuses that redirect a GET (RFC 9110 §15.4); the flow follows them for metadata.
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

#: Redirects followed per metadata fetch. Five covers http->https plus a move or two; a
#: longer chain is a loop or an attack, and the flow names it instead of following forever.
MAX_REDIRECTS = 5

#: HTTP requests one run of the flow may ask for before it gives up. A full run needs at
#: most 3 (resource metadata, with redirects not counted) + 3 (server metadata) + 1
#: (registration) + 2 (refresh, then token) = 9, plus redirects; 32 leaves room for those
#: and still ends a hostile sequence quickly.
MAX_REQUESTS = 32

#: Consecutive challenges (401, or 403 ``insufficient_scope``) the flow answers before it
#: treats the failure as permanent (MCP 2026-07-28 "Step-Up Authorization Flow", step 4: "no
#: more than a few times"). Three lets a token be refreshed, re-obtained and stepped up once.
MAX_CONSECUTIVE_CHALLENGES = 3

#: Seconds before ``expires_at`` at which a stored access token counts as expired, so that
#: it is refreshed before a server refuses it (clock skew and request latency).
REFRESH_MARGIN = 60.0

#: Random bytes behind the PKCE verifier (32 bytes -> 43 base64url characters, the minimum
#: RFC 7636 §4.1 allows, with 256 bits of entropy as §7.1 recommends) and behind ``state``.
VERIFIER_BYTES = 32
STATE_BYTES = 16

#: Grant types a dynamically registered client asks for (RFC 7591 §2; MCP 2026-07-28
#: "Refresh Tokens": SHOULD include ``refresh_token``).
GRANT_TYPES = ("authorization_code", "refresh_token")

#: The scope that asks for a refresh token (OpenID Connect Core §11). MCP 2026-07-28
#: "Refresh Tokens": a client MAY add it when the authorization server's metadata lists it
#: in ``scopes_supported``; the flow adds it then (to a non-empty scope set) and never
#: otherwise. A resource server SHOULD NOT put it in its challenge or its metadata.
OFFLINE_ACCESS = "offline_access"

#: Hosts that make a redirect URI "native" for ``application_type`` (MCP 2026-07-28
#: client-registration.mdx "Application Type and Redirect URI Constraints": CLI tools and
#: locally hosted applications SHOULD register as ``native``).
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
