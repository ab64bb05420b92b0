"""Token introspection (RFC 7662) as request/response, for opaque access tokens.

Theory of operation
-------------------
An opaque token can only be judged by asking the authorization server. The core never
fetches, so :class:`IntrospectionVerifier` splits the question in two like the client flow:
:meth:`~IntrospectionVerifier.request` gives the :class:`HTTPRequest` to make (RFC 7662 §2.1,
authenticated as the resource server with ``client_secret_basic``), and
:meth:`~IntrospectionVerifier.decide` turns the response into an :class:`AccessInfo` or
:class:`InvalidToken`. The adapter carries the request and should cache answers for a short
while, never beyond the token's ``exp``.

Used as the verifier of a :class:`~mcp_sansio.auth.ProtectedResource` (every runtime's HTTP
server), :meth:`~IntrospectionVerifier.verify` answers from a cache of active answers
(:class:`~mcp_sansio.auth._deferred.AnswerCache`, driven by ``now``) and otherwise raises
:class:`~mcp_sansio.auth._deferred.VerificationPending` carrying :meth:`request` and
:meth:`decide`: the server parks the exchange and the adapter makes the request (see
:mod:`mcp_sansio.auth._deferred`). An answer other than 200 is no verdict on the token (RFC
7662 §2.3): :class:`~mcp_sansio.auth._deferred.VerificationUnavailable`, answered 503.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import json
from typing import Any

from ._access import AccessInfo
from ._deferred import AnswerCache, VerificationPending, VerificationUnavailable
from ._errors import InvalidToken
from ._http import HTTPRequest, HTTPResponse, basic_credentials, form_body

#: Seconds an active introspection answer is reused: 60. Revocation is noticed within a
#: minute while a busy client does not cost one round trip per request.
DEFAULT_INTROSPECTION_TTL = 60.0
#: Introspection answers kept at most (least recently used dropped first): 10 000 tokens,
#: a few megabytes.
DEFAULT_INTROSPECTION_ENTRIES = 10_000


class IntrospectionVerifier:
    """Judges tokens by RFC 7662 introspection; see the module doc for the call order."""

    def __init__(self, endpoint: str, *, client_id: str, client_secret: str, resource: str,
                 issuer: str | None = None, ttl: float = DEFAULT_INTROSPECTION_TTL,
                 max_entries: int = DEFAULT_INTROSPECTION_ENTRIES,
                 require_audience: bool = True) -> None:
        self.endpoint = endpoint
        self.client_id = client_id
        self._secret = client_secret
        self.resource = resource
        self.issuer = issuer
        #: Refuse an active answer that names no audience (the module docstring).
        self.require_audience = require_audience
        self.cache = AnswerCache(ttl, max_entries)
        #: Introspection requests asked for so far (for tests and metrics).
        self.requests = 0

    def verify(self, token: str, now: float) -> AccessInfo:
        """A remembered active answer, else :class:`VerificationPending` with the request
        to make (the module docstring)."""
        info = self.cache.get(token, now)
        if info is not None:
            return info
        self.requests += 1

        def finish(response: HTTPResponse, when: float) -> AccessInfo:
            answer = self.decide(response, when)  # InvalidToken: not remembered
            self.cache.put(token, answer, when)
            return answer

        raise VerificationPending(self.request(token), finish, "token introspection")

    def request(self, token: str) -> HTTPRequest:
        return HTTPRequest(
            "POST", self.endpoint,
            (("Content-Type", "application/x-www-form-urlencoded"),
             ("Accept", "application/json"),
             ("Authorization", basic_credentials(self.client_id, self._secret))),
            form_body([("token", token), ("token_type_hint", "access_token")]))

    def decide(self, response: HTTPResponse, now: float) -> AccessInfo:
        if response.status != 200:
            # RFC 7662 §2.3: not a verdict on the token; the caller may retry later. Never
            # let the request through; answered 503 (a subclass of InvalidToken).
            raise VerificationUnavailable(f"introspection answered {response.status}")
        try:
            doc: Any = json.loads(response.body)
        except (ValueError, RecursionError):
            raise InvalidToken("introspection response is not JSON") from None
        if not isinstance(doc, dict) or doc.get("active") is not True:
            raise InvalidToken("token is not active (RFC 7662 §2.2)")
        exp = doc.get("exp")
        if isinstance(exp, int | float) and not isinstance(exp, bool) and now >= exp:
            raise InvalidToken("token expired")
        aud = doc.get("aud")
        if aud is None:
            if self.require_audience:
                raise InvalidToken("introspection names no audience: the token cannot be "
                                   "shown to be for this resource (MCP Token Handling)")
        else:
            audiences = [aud] if isinstance(aud, str) else aud
            if not isinstance(audiences, list) or self.resource not in audiences:
                raise InvalidToken("token is not for this resource (RFC 8707 §2)")
        if self.issuer is not None and doc.get("iss") != self.issuer:
            raise InvalidToken("token is from another issuer")
        scope = doc.get("scope")
        subject = doc.get("sub") or doc.get("client_id") or ""
        return AccessInfo(
            subject=str(subject),
            scopes=frozenset(scope.split()) if isinstance(scope, str) else frozenset(),
            client_id=doc.get("client_id") if isinstance(doc.get("client_id"), str) else None,
            expires_at=float(exp) if isinstance(exp, int | float) else None,
            claims=doc)
