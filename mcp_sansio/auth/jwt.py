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

:class:`JWKSCache` keeps that set current with ``now``: it fetches nothing either, but when
its keys are missing, older than ``max_age`` or lack a token's ``kid`` it raises
:class:`~mcp_sansio.auth._deferred.VerificationPending` with the request for ``jwks_uri``
(at most once per ``min_refetch`` seconds), so that any runtime's HTTP server waits for the
adapter to fetch the set and then judges the token with it. The adapters' ``JWKSKeeper``
adds the first fetch, before serving.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from joserfc import jwt
from joserfc.errors import ClaimError, InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from ._access import AccessInfo
from ._deferred import VerificationPending, VerificationUnavailable
from ._errors import InsufficientScope, InvalidToken
from ._http import HTTPRequest, HTTPResponse

#: Asymmetric JWS algorithms (RFC 7518 §3) accepted unless the verifier is told otherwise.
DEFAULT_ALGORITHMS = ("RS256", "PS256", "ES256")

#: Clock skew tolerated on ``exp``/``nbf``/``iat``. RFC 7519 §4.1.4 allows "a few minutes";
#: 30 seconds covers ordinary NTP drift without stretching short-lived tokens much.
DEFAULT_LEEWAY = 30

#: Seconds a fetched JWKS is used before it is fetched again: one hour. Keys rotate on a scale
#: of days; an hour bounds how long a withdrawn key keeps being trusted.
DEFAULT_JWKS_MAX_AGE = 3600.0
#: Least seconds between two fetches of the JWKS: 60. Rotation needs one refetch; tokens with
#: unknown ``kid`` values beyond that are refused without asking the server again, so made-up
#: key ids cannot make the resource server hammer the authorization server.
DEFAULT_JWKS_MIN_REFETCH = 60.0


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


class JWKSCache:
    """A :class:`~mcp_sansio.auth.TokenVerifier` for JWT access tokens whose JWKS it keeps
    current from ``jwks_uri`` through :class:`~mcp_sansio.auth._deferred.VerificationPending`
    (the module docstring): asked for when there are no keys, when they are ``max_age``
    old, and when a token names a key the set lacks -- never twice within ``min_refetch``
    seconds. A failed refresh keeps the keys held (an old set is better than none while the
    authorization server is down); a failed first fetch, or a failed refetch for an unknown
    key, is answered 503."""

    def __init__(self, jwks_uri: str, *, issuer: str, audience: str,
                 required_scopes: Iterable[str] = (),
                 max_age: float = DEFAULT_JWKS_MAX_AGE,
                 min_refetch: float = DEFAULT_JWKS_MIN_REFETCH,
                 **verifier_options: Any) -> None:
        self.jwks_uri = jwks_uri
        self.max_age = max_age
        self.min_refetch = min_refetch
        self.verifier = JWTVerifier(None, issuer=issuer, audience=audience,
                                    required_scopes=required_scopes, **verifier_options)
        #: When the set was last asked for (``now``), None before the first time.
        self.asked_at: float | None = None
        #: When a usable set last arrived.
        self.loaded_at: float | None = None
        #: Why the last fetch was not used (None: it was).
        self.last_error: str | None = None
        #: How many times the set was asked for.
        self.fetches = 0

    def request(self) -> HTTPRequest:
        return HTTPRequest("GET", self.jwks_uri, (("Accept", "application/json"),))

    def may_fetch(self, now: float) -> bool:
        return self.asked_at is None or now - self.asked_at >= self.min_refetch

    def asked(self, now: float) -> HTTPRequest:
        """Record that the set is being fetched now; the request to make."""
        self.asked_at = now
        self.fetches += 1
        return self.request()

    def receive(self, response: HTTPResponse, now: float) -> bool:
        """The answer to :meth:`request`: True when it replaced the keys."""
        if response.status != 200:
            self.last_error = f"{self.jwks_uri} answered {response.status}"
            return False
        try:
            self.verifier.set_jwks(json.loads(response.body))
        except (ValueError, TypeError, RecursionError) as exc:
            self.last_error = f"{self.jwks_uri} is not a usable JWKS ({exc})"
            return False
        self.loaded_at, self.last_error = now, None
        return True

    def verify(self, token: str, now: float) -> AccessInfo:
        stale = self.loaded_at is None or now - self.loaded_at >= self.max_age
        if stale and self.may_fetch(now):
            raise self._pending(token, now, "fetching the JWKS",
                                held=self.loaded_at is not None)
        try:
            return self.verifier.verify(token, now)
        except UnknownKey:
            if not self.may_fetch(now):
                raise
        raise self._pending(token, now, "fetching the JWKS for a key it lacks", held=False)

    def _pending(self, token: str, now: float, reason: str, *,
                 held: bool) -> VerificationPending:
        def with_held_keys(when: float) -> AccessInfo:
            try:
                return self.verifier.verify(token, when)
            except UnknownKey:  # the set could not be fetched: no verdict on the token
                raise VerificationUnavailable(self.last_error or reason) from None

        def finish(response: HTTPResponse, when: float) -> AccessInfo:
            if self.receive(response, when):
                return self.verifier.verify(token, when)
            return with_held_keys(when)

        return VerificationPending(self.asked(now), finish, reason,
                                   fallback=with_held_keys if held else None)


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """RFC 9068 §2.2.3 ``scope`` (space-separated), or the common ``scp`` list."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, list) and all(isinstance(s, str) for s in scp):
        return frozenset(scp)
    return frozenset()
