"""Token decisions that need an answer from elsewhere: raised, carried, finished with ``now``.

Theory of operation
-------------------
A :class:`~mcp_sansio.auth.TokenVerifier` decides synchronously with what it holds. Some
tokens cannot be decided that way: an opaque token nobody introspected yet (RFC 7662), a JWT
signed with a key the held JWKS lacks (rotation), keys too old to trust. Such a verifier
raises :class:`VerificationPending` instead of answering: the exception carries the
:class:`~mcp_sansio.auth.HTTPRequest` that would settle it and a ``finish(response, now)``
that turns the response into the verdict (an :class:`~mcp_sansio.auth.AccessInfo`, or
:class:`~mcp_sansio.auth.InvalidToken`/:class:`~mcp_sansio.auth.InsufficientScope` raised).

The core still never fetches. :class:`mcp_sansio.http.HTTPServer` parks the exchange on the
exception (its "exchange waits on an asynchronous decision" hook) and the runtime adapter
makes the request its own way -- a task on asyncio, a worker thread on trio and threads --
and hands back the response, or the exception the transport raised; the server then calls
:meth:`ProtectedResource.conclude <mcp_sansio.auth.ProtectedResource.conclude>`. A failure
to get an answer (transport error, the server's decision timeout, an authorization server
answering other than 200) is :class:`VerificationUnavailable`: answered ``503``, not
``401``, because nothing was learnt about the token -- a 401 would tell the client to throw
a possibly good token away and authorize again (RFC 6750 §3.1 ``invalid_token`` says the
token *is* bad; RFC 7662 §2.3 says a non-200 introspection answer is no verdict; RFC 9110
§15.6.4: 503 is "temporarily unable to handle the request").

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable

from ._access import AccessInfo
from ._errors import InvalidToken
from ._http import HTTPRequest, HTTPResponse

__all__ = ["AnswerCache", "VerificationPending", "VerificationUnavailable"]


class VerificationUnavailable(InvalidToken):
    """No verdict could be reached (the authorization server unreachable, slow, or answering
    an error): answered ``503 Service Unavailable``, the token neither accepted nor refused.
    A subclass of :class:`InvalidToken` so that code which knows only that one still never
    lets the request through."""


class VerificationPending(Exception):
    """Raised by a verifier's ``verify`` when the token can only be decided by asking:
    make :attr:`request` and pass the response to :meth:`finish`.

    :param request: the HTTP request that settles the question.
    :param finish: ``finish(response, now)`` -> the verdict, as ``verify`` would give it.
    :param fallback: ``fallback(now)`` -> the verdict when no response came (transport
        failure, timeout); None: :class:`VerificationUnavailable`. A JWKS refresh falls back
        on the keys held, an introspection has nothing to fall back on.
    """

    def __init__(self, request: HTTPRequest,
                 finish: Callable[[HTTPResponse, float], AccessInfo], reason: str, *,
                 fallback: Callable[[float], AccessInfo] | None = None) -> None:
        super().__init__(reason)
        self.request = request
        self.finish = finish
        self.fallback = fallback

    def fail(self, reason: str, now: float) -> AccessInfo:
        """The verdict when the request could not be made or answered in time."""
        if self.fallback is not None:
            return self.fallback(now)
        raise VerificationUnavailable(f"{self}: {reason}")


class AnswerCache:
    """Active answers remembered for ``ttl`` seconds, never past the token's own expiry,
    at most ``max_entries`` of them (least recently used dropped first). Keyed by the
    token's SHA-256: the cache holds no token. Refusals are not remembered (a token may be
    good a moment later, e.g. after a clock step on the authorization server)."""

    def __init__(self, ttl: float, max_entries: int) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._entries: OrderedDict[bytes, tuple[float, AccessInfo]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def _key(token: str) -> bytes:
        return hashlib.sha256(token.encode()).digest()

    def get(self, token: str, now: float) -> AccessInfo | None:
        key = self._key(token)
        hit = self._entries.get(key)
        if hit is None:
            return None
        until, info = hit
        if now >= until:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return info

    def put(self, token: str, info: AccessInfo, now: float) -> None:
        until = now + self.ttl
        if info.expires_at is not None:
            until = min(until, info.expires_at)
        if until <= now:
            return
        self._entries[self._key(token)] = (until, info)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
