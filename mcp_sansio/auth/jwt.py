"""A JWT access-token verifier on joserfc (install ``mcp-sansio[auth]``).

Theory of operation
-------------------
Many authorization servers issue access tokens as signed JWTs (RFC 9068). A resource server
can check one without asking anybody: the signature against the authorization server's
public keys (a JWKS, RFC 7517 §5), then the claims -- ``iss`` is the expected issuer, ``aud``
names this resource (MCP 2025-11-25 "Token Handling", RFC 8707 §2: a token for another
resource is refused), ``exp`` is in the future and ``nbf``/``iat`` not (RFC 7519 §4.1, with
``now`` in seconds since the epoch handed in), and, if asked, that the token carries the
required scopes.

The core never fetches: the JWKS is handed in (the adapter fetches it from the server's
``jwks_uri`` and caches it) and can be replaced with :meth:`JWTVerifier.set_jwks`. A token
signed by a key the set does not hold raises :class:`InvalidToken` with ``unknown_key`` set,
the hint for an adapter to refetch the keys once (key rotation).

Only asymmetric signature algorithms are accepted by default (:data:`DEFAULT_ALGORITHMS`):
an ``HS256`` token "signed" with a public key and ``none`` are the classic confusions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from joserfc import jwt
from joserfc.errors import ClaimError, InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from ._errors import InsufficientScope, InvalidToken
from ._resource import AccessInfo

#: Asymmetric JWS algorithms (RFC 7518 §3) accepted unless the verifier is told otherwise.
DEFAULT_ALGORITHMS = ("RS256", "PS256", "ES256")

#: Clock skew tolerated on ``exp``/``nbf``/``iat``. RFC 7519 §4.1.4 allows "a few minutes";
#: 30 seconds covers ordinary NTP drift without stretching short-lived tokens much.
DEFAULT_LEEWAY = 30


class UnknownKey(InvalidToken):
    """The token names a key the JWKS does not hold: refetch the JWKS once, then refuse."""

    unknown_key = True


class JWTVerifier:
    """A :class:`~mcp_sansio.auth.TokenVerifier` for JWT access tokens."""

    def __init__(
        self,
        jwks: Mapping[str, Any] | None,
        *,
        issuer: str,
        audience: str,
        required_scopes: Iterable[str] = (),
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        leeway: int = DEFAULT_LEEWAY,
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.required_scopes = frozenset(required_scopes)
        self.algorithms = tuple(algorithms)
        self.leeway = leeway
        #: None until a JWKS is handed in: every token is then an :class:`UnknownKey`.
        self._keys = self._import(jwks) if jwks is not None else None

    @staticmethod
    def _import(jwks: Mapping[str, Any]) -> KeySet:
        try:
            return KeySet.import_key_set(dict(jwks))  # type: ignore[arg-type]
        except (JoseError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a usable JWKS: {exc}") from None

    def set_jwks(self, jwks: Mapping[str, Any]) -> None:
        """Replace the keys (after the adapter refetched ``jwks_uri``)."""
        self._keys = self._import(jwks)

    def verify(self, token: str, now: float) -> AccessInfo:
        if self._keys is None:
            raise UnknownKey("no JWKS yet")
        try:
            decoded = jwt.decode(token, self._keys, algorithms=list(self.algorithms))
        except InvalidKeyIdError:
            raise UnknownKey("the JWKS holds no key with this token's kid") from None
        except JoseError as exc:
            raise InvalidToken(f"bad token: {exc.error}") from None
        except (ValueError, TypeError, KeyError) as exc:
            # Input joserfc does not wrap in its own errors (e.g. a header that is valid
            # JSON but not an object): still just a bad token.
            raise InvalidToken(f"malformed token: {exc.__class__.__name__}") from None
        claims = decoded.claims
        registry = jwt.JWTClaimsRegistry(
            now=int(now), leeway=self.leeway,
            iss={"essential": True, "value": self.issuer},
            exp={"essential": True},
        )
        try:
            registry.validate(claims)
        except ClaimError as exc:
            raise InvalidToken(f"bad claim {exc.claim!r}: {exc.description or exc.error}"
                               ) from None
        except JoseError as exc:
            raise InvalidToken(f"bad claims: {exc.description or exc.error}") from None
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else aud
        if not isinstance(audiences, list) or self.audience not in audiences:
            raise InvalidToken("the token is not for this resource (aud, RFC 8707 §2)")
        scopes = _scopes(claims)
        missing = self.required_scopes - scopes
        if missing:
            raise InsufficientScope(self.required_scopes)
        subject = claims.get("sub")
        client_id = claims.get("client_id") or claims.get("azp")
        return AccessInfo(
            subject=subject if isinstance(subject, str) else str(client_id or ""),
            scopes=scopes,
            client_id=client_id if isinstance(client_id, str) else None,
            expires_at=float(claims["exp"]),
            claims=claims,
        )


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """RFC 9068 §2.2.3 ``scope`` (space-separated), or the common ``scp`` list."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, list) and all(isinstance(s, str) for s in scp):
        return frozenset(scp)
    return frozenset()
