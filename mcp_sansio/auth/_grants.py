"""Grants without a browser: client credentials, JWT bearer (workload identity), ID-JAG.

Theory of operation
-------------------
A machine client has no user to send to an authorization endpoint; it trades something it
holds for a token at the token endpoint, after the same discovery as the browser flow
(protected-resource metadata, then authorization-server metadata). Put one of these in
:attr:`ClientConfig.grant <mcp_sansio.auth.ClientConfig.grant>` and the
:class:`~mcp_sansio.auth.OAuthClientFlow` runs it instead of the authorization-code flow:

* :class:`ClientCredentialsGrant` -- RFC 6749 §4.4 (the MCP extension
  ``io.modelcontextprotocol/oauth-client-credentials``): the client authenticates with a
  secret (``client_secret_basic`` or ``client_secret_post``) or a signed assertion
  (``private_key_jwt``, RFC 7523 §2.2, :func:`client_assertion`);
* :class:`JWTBearerGrant` -- RFC 7523 §2.1 with a platform-issued token as the assertion
  (workload identity federation, ``io.modelcontextprotocol/auth/wif``); the assertion is a
  callable, so the adapter can re-read a token file that the platform rotates;
* :class:`IdentityAssertionGrant` -- enterprise-managed authorization
  (``io.modelcontextprotocol/enterprise-managed-authorization``): RFC 8693 token exchange
  at the enterprise IdP of the user's ID token for an ID-JAG (an identity assertion
  authorization grant), then that ID-JAG with the RFC 7523 §2.1 grant at the MCP server's
  authorization server.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ._storage import ClientCredentials

__all__ = ["GRANTS", "ClientCredentialsGrant", "IdentityAssertionGrant", "JWTBearerGrant",
           "MachineGrant", "client_assertion", "current"]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

#: The grants, each: (grant_type at the MCP server's token endpoint, what it sends).
GRANTS = {
    "client_credentials": ("client_credentials",
                           "RFC 6749 §4.4.2: scope, resource; the client authenticates"),
    "jwt-bearer": (JWT_BEARER, "RFC 7523 §2.1: assertion (the platform token), scope, "
                   "resource; client authentication only if the client has credentials"),
    "id-jag": (JWT_BEARER, "first RFC 8693 §2.1 at the IdP: subject_token (the ID token, "
               "subject_token_type id_token), requested_token_type id-jag, audience (the "
               "authorization server's issuer), resource; then RFC 7523 §2.1 with the "
               "ID-JAG as assertion, the client authenticating"),
}

#: Seconds a client assertion (RFC 7523 §3: ``exp``) stays valid: long enough for one
#: token request, short enough that a leaked one is soon worthless.
ASSERTION_LIFETIME = 300


@attrs.frozen
class ClientCredentialsGrant:
    """RFC 6749 §4.4 with ``credentials`` (a secret, or ``private_key`` for
    ``private_key_jwt``); ``scope`` None: the challenge's or the resource's scopes."""

    credentials: ClientCredentials
    scope: str | None = None
    kind = "client_credentials"


@attrs.frozen
class JWTBearerGrant:
    """RFC 7523 §2.1 with ``assertion(now)`` (e.g. a workload identity token); ``client``
    authenticates too when given, else ``client_id`` (if any) goes in the body."""

    assertion: Callable[[float], str] | str
    client_id: str | None = None
    client: ClientCredentials | None = None
    scope: str | None = None
    kind = "jwt-bearer"


@attrs.frozen
class IdentityAssertionGrant:
    """Enterprise-managed authorization: ``id_token(now)`` (the user's ID token from the
    enterprise IdP) exchanged at ``idp_token_endpoint`` (as ``idp_client``) for an ID-JAG,
    presented by ``client`` to the MCP server's authorization server."""

    id_token: Callable[[float], str] | str
    idp_token_endpoint: str
    idp_client: ClientCredentials
    client: ClientCredentials
    scope: str | None = None
    kind = "id-jag"


MachineGrant = ClientCredentialsGrant | JWTBearerGrant | IdentityAssertionGrant


def current(value: Callable[[float], str] | str, now: float) -> str:
    """A token given as a string, or by a callable asked each time (a rotated file)."""
    return value if isinstance(value, str) else value(now)


def client_assertion(credentials: ClientCredentials, audience: str, *, now: float,
                     jti: str) -> str:
    """A ``private_key_jwt`` client assertion (RFC 7523 §2.2, §3): ``iss`` and ``sub`` the
    client id, ``aud`` the authorization server's issuer, short-lived, unique ``jti``;
    signed with ``credentials.private_key`` (PEM or JWK JSON). Needs the ``auth`` extra."""
    from joserfc import jwt
    from joserfc.jwk import JWKRegistry

    key_text = credentials.private_key
    if not key_text:
        raise ValueError("private_key_jwt needs ClientCredentials.private_key")
    alg = credentials.signing_alg or "ES256"
    stripped = key_text.strip()
    data: Any = stripped
    if stripped.startswith("{"):
        import json

        data = json.loads(stripped)
    key = JWKRegistry.import_key(data, _KTY.get(alg[:2], "EC") if isinstance(data, str)
                                 else None)
    claims: Mapping[str, Any] = {
        "iss": credentials.client_id, "sub": credentials.client_id, "aud": audience,
        "iat": int(now), "exp": int(now) + ASSERTION_LIFETIME, "jti": jti,
    }
    return jwt.encode({"alg": alg, "typ": "JWT"}, dict(claims), key, algorithms=[alg])


_KTY = {"ES": "EC", "RS": "RSA", "PS": "RSA", "Ed": "OKP"}
