"""Client credentials and tokens, and where the flow keeps them.

Theory of operation
-------------------
MCP 2026-07-28 "Authorization Server Binding": credentials belong to the authorization
server that issued them, keyed by its ``issuer``, and are never reused with another. So the
storage interface (:class:`TokenStorage`) is keyed by issuer for client credentials, and by
(issuer, resource) for tokens. The flow asks for tokens for an issuer it has just discovered,
so tokens from a previous authorization server are simply not found -- that is how
re-registration and re-authorization happen when the server moves.

:class:`MemoryStorage` is the default and keeps everything in dicts. A file-backed storage
for command-line tools lives in the adapters (the core does no I/O). ``expires_at`` is in the
same clock as the ``now`` given to the flow; use wall-clock seconds (``time.time()``) when
the storage outlives the process.
"""

from __future__ import annotations

from typing import Any, Protocol

import attrs


@attrs.frozen
class ClientCredentials:
    """A client identity at one authorization server."""

    client_id: str
    client_secret: str | None = None
    #: RFC 7591 §2 ``token_endpoint_auth_method`` the registration agreed, if it said.
    token_endpoint_auth_method: str | None = None
    #: RFC 7591 §3.2.1: when the secret expires (0 or None: never), in ``now``'s clock.
    client_secret_expires_at: float | None = None
    #: For ``private_key_jwt`` (RFC 7523 §2.2): the private key (PEM, or a JWK as JSON)
    #: that signs the client assertions, and its JWS algorithm (default ES256).
    private_key: str | None = attrs.field(default=None, repr=False)
    signing_alg: str | None = None

    def expired(self, now: float) -> bool:
        expires = self.client_secret_expires_at
        return bool(expires) and expires is not None and now >= expires

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClientCredentials:
        fields: dict[str, Any] = {f.name: data.get(f.name) for f in attrs.fields(cls)}
        return cls(**fields)


@attrs.frozen
class Tokens:
    """What a token endpoint issued, with what it takes to refresh it."""

    access_token: str
    issuer: str
    resource: str
    token_endpoint: str
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = None
    #: The scopes granted (the response's ``scope``), else the ones requested.
    scope: str | None = None
    #: For a DPoP-bound token (``token_type`` DPoP, RFC 9449 §5): the private JWK of the
    #: key it is bound to, kept with it -- the token is worthless without it.
    dpop_jwk: dict[str, Any] | None = attrs.field(default=None, repr=False, eq=False)

    def usable(self, now: float, margin: float) -> bool:
        return self.expires_at is None or now < self.expires_at - margin

    @property
    def dpop_bound(self) -> bool:
        return self.token_type.lower() == "dpop" and self.dpop_jwk is not None

    def authorization_header(self) -> tuple[str, str]:
        """The header to send with every MCP request (OAuth 2.1 §5.1.1; RFC 9449 §7.1 for a
        DPoP-bound token, which also needs its proof per request)."""
        scheme = "DPoP" if self.dpop_bound else "Bearer"
        return ("Authorization", f"{scheme} {self.access_token}")

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tokens:
        fields: dict[str, Any] = {f.name: data[f.name] for f in attrs.fields(cls)
                                  if f.name in data}
        return cls(**fields)


class TokenStorage(Protocol):
    """Where the flow keeps client credentials (by issuer) and tokens (by issuer, resource)."""

    def get_client(self, issuer: str) -> ClientCredentials | None: ...
    def set_client(self, issuer: str, credentials: ClientCredentials | None) -> None: ...
    def get_tokens(self, issuer: str, resource: str) -> Tokens | None: ...
    def set_tokens(self, issuer: str, resource: str, tokens: Tokens | None) -> None: ...
    #: The issuer last used for a resource, so a fresh flow can find its tokens before it
    #: has rediscovered anything.
    def get_issuer(self, resource: str) -> str | None: ...
    def set_issuer(self, resource: str, issuer: str) -> None: ...


class MemoryStorage:
    """The default :class:`TokenStorage`: dicts, gone with the process."""

    def __init__(self) -> None:
        self.clients: dict[str, ClientCredentials] = {}
        self.tokens: dict[tuple[str, str], Tokens] = {}
        self.issuers: dict[str, str] = {}

    def get_client(self, issuer: str) -> ClientCredentials | None:
        return self.clients.get(issuer)

    def set_client(self, issuer: str, credentials: ClientCredentials | None) -> None:
        if credentials is None:
            self.clients.pop(issuer, None)
        else:
            self.clients[issuer] = credentials

    def get_tokens(self, issuer: str, resource: str) -> Tokens | None:
        return self.tokens.get((issuer, resource))

    def set_tokens(self, issuer: str, resource: str, tokens: Tokens | None) -> None:
        if tokens is None:
            self.tokens.pop((issuer, resource), None)
        else:
            self.tokens[(issuer, resource)] = tokens

    def get_issuer(self, resource: str) -> str | None:
        return self.issuers.get(resource)

    def set_issuer(self, resource: str, issuer: str) -> None:
        self.issuers[resource] = issuer
