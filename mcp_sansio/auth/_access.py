"""What a verified access token grants: :class:`AccessInfo`.

Theory of operation
-------------------
A verifier's verdict on a good token (RFC 6750 §2: a bearer token is judged by the resource
server) is one immutable record: the principal it speaks for, its scopes, the client, when
it expires on the verifier's ``now`` clock, and the claims it carried. The resource side
(:mod:`._resource`) makes decisions with it and the deferred verdicts (:mod:`._deferred`:
introspection, a JWKS refresh) cache it; it sits in a module of its own, below both, so that
neither imports the other for its type. Re-exported as :class:`mcp_sansio.auth.AccessInfo`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["AccessInfo"]


@attrs.frozen
class AccessInfo:
    """Who a valid token speaks for, and what it allows."""

    #: The principal: the token's ``sub`` (or the client id when there is no user).
    subject: str
    scopes: frozenset[str] = frozenset()
    client_id: str | None = None
    #: When the token stops being valid, in the verifier's ``now`` clock, if known.
    expires_at: float | None = None
    claims: Mapping[str, Any] = attrs.field(factory=dict)
