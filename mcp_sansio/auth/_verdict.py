"""What every resource-server decision shares: the verifier interface, the refusal record and
the judgement of a verifier's verdict (401 ``invalid_token``, 403 ``insufficient_scope``, 503
when no verdict could be reached), for Bearer (:mod:`._resource`) and DPoP
(:mod:`._dpop_resource`) tokens alike."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Protocol

import attrs

from ._access import AccessInfo
from ._challenge import bearer_challenge
from ._deferred import VerificationUnavailable
from ._errors import InsufficientScope, InvalidToken

__all__ = ["Refusal", "TokenVerifier", "judge"]

#: RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


class TokenVerifier(Protocol):
    """Decides whether an access token is good for this resource.

    Raise :class:`InvalidToken` (answered 401) for a token that is malformed, expired, not
    from the expected issuer or not for this resource (MCP 2025-11-25 "Token Handling": the
    audience check is mandatory); return its :class:`AccessInfo` otherwise.

    Raise :class:`~mcp_sansio.auth._deferred.VerificationPending` when the token can only
    be decided by asking someone (the HTTP server then waits for the adapter's answer).
    """

    def verify(self, token: str, now: float) -> AccessInfo: ...


@attrs.frozen
class Refusal:
    """The response to send instead of handling the request."""

    status: int
    headers: tuple[tuple[str, str], ...]
    reason: str


def judge(verdict: Callable[[], AccessInfo], *, resource_metadata: str,
          required_scopes: Iterable[str] = ()) -> AccessInfo | Refusal:
    """The decision on a verifier's verdict (``verdict()`` returns the :class:`AccessInfo`
    or raises): 401 ``invalid_token``, 403 ``insufficient_scope`` naming every scope needed,
    503 when no verdict could be reached
    (:class:`~mcp_sansio.auth._deferred.VerificationUnavailable`), else the access."""
    required = frozenset(required_scopes)
    scope = " ".join(sorted(required)) or None
    try:
        info = verdict()
    except VerificationUnavailable as exc:
        # RFC 9110 §15.6.4; no challenge: the token was not judged (mcp_sansio.auth._deferred)
        return Refusal(503, (), str(exc))
    except InvalidToken as exc:
        return _refuse(401, str(exc), resource_metadata, scope, "invalid_token")
    except InsufficientScope as exc:
        needed = " ".join(sorted(required | exc.required))
        return _refuse(403, str(exc), resource_metadata, needed, "insufficient_scope")
    missing = required - info.scopes
    if missing:
        return _refuse(403, str(InsufficientScope(required)), resource_metadata, scope,
                       "insufficient_scope")
    return info


def _refuse(status: int, reason: str, resource_metadata: str, scope: str | None,
            error: str | None) -> Refusal:
    challenge = bearer_challenge(resource_metadata=resource_metadata, scope=scope, error=error)
    return Refusal(status, (("WWW-Authenticate", challenge),), reason)
