"""Token verification that needs the network, on asyncio: a JWKS cache and an introspection
cache around the pure verifiers of :mod:`mcp_sansio.auth`.

Theory of operation
-------------------
The core's verifiers never fetch. :class:`~mcp_sansio.auth.jwt.JWTVerifier` is handed a JWKS;
:class:`JWKSVerifier` keeps it: it fetches the authorization server's ``jwks_uri`` before the
first verification, again when the copy is older than ``max_age``, and once more when a token
names a key the copy lacks (key rotation, RFC 7517 §5 sets are replaced as a whole) -- but
not more often than every ``min_refetch`` seconds, so that tokens with made-up ``kid`` values
cannot make the resource server hammer the authorization server.

:class:`IntrospectionCache` asks the RFC 7662 endpoint through
:class:`~mcp_sansio.auth.IntrospectionVerifier` and remembers an active answer for ``ttl``
seconds, never beyond the token's own ``exp``; refusals are not remembered (a token may
become valid a moment later, e.g. after a clock step on the authorization server). Tokens are
secrets: cache keys are their SHA-256, and nothing is logged beyond a short prefix.

The HTTP server judges tokens synchronously (it never waits inside a request; see
:mod:`mcp_sansio.auth._resource`), so it cannot await :class:`JWKSVerifier`.
:class:`JWKSKeeper` is its asyncio companion: a synchronous verifier for
``ProtectedResource`` whose keys a task of its own keeps current -- fetched before serving,
again after ``max_age``, and soon after a token names an unknown key (that token is refused
``invalid_token``; the client's retry after re-authorizing finds the new key), with the same
``min_refetch`` bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from mcp_sansio.auth import AccessInfo, HTTPRequest, IntrospectionVerifier

from ._auth_flow import Fetch, fetch

__all__ = ["DEFAULT_JWKS_MAX_AGE", "DEFAULT_JWKS_MIN_REFETCH", "DEFAULT_INTROSPECTION_TTL",
           "IntrospectionCache", "JWKSKeeper", "JWKSVerifier"]

log = logging.getLogger("mcp_sansio.auth")

#: Seconds a fetched JWKS is used before it is fetched again: one hour. Keys rotate on a scale
#: of days; an hour bounds how long a withdrawn key keeps being trusted.
DEFAULT_JWKS_MAX_AGE = 3600.0
#: Least seconds between two fetches of the JWKS: 60. Rotation needs one refetch; tokens with
#: unknown ``kid`` values beyond that are refused without asking the server again.
DEFAULT_JWKS_MIN_REFETCH = 60.0
#: Seconds an active introspection answer is reused: 60. Revocation is noticed within a
#: minute while a busy client does not cost one round trip per request.
DEFAULT_INTROSPECTION_TTL = 60.0
#: Introspection answers kept at most (least recently used dropped first): 10 000 tokens.
DEFAULT_INTROSPECTION_ENTRIES = 10_000


class JWKSVerifier:
    """A :class:`~mcp_sansio.auth.TokenVerifier`-like object for JWT access tokens whose keys
    come from ``jwks_uri`` (needs the ``auth`` extra). ``await verify(token)``."""

    def __init__(self, jwks_uri: str, *, issuer: str, audience: str,
                 required_scopes: tuple[str, ...] = (), fetcher: Fetch = fetch,
                 clock: Callable[[], float] = time.time,
                 max_age: float = DEFAULT_JWKS_MAX_AGE,
                 min_refetch: float = DEFAULT_JWKS_MIN_REFETCH,
                 **verifier_options: Any) -> None:
        from mcp_sansio.auth.jwt import JWTVerifier

        self.jwks_uri = jwks_uri
        self._fetcher = fetcher
        self._clock = clock
        self.max_age = max_age
        self.min_refetch = min_refetch
        self._fetched_at: float | None = None
        self._verifier = JWTVerifier(None, issuer=issuer, audience=audience,
                                     required_scopes=required_scopes, **verifier_options)
        #: How many times the JWKS was fetched (for tests and metrics).
        self.fetches = 0

    async def _refresh(self) -> None:
        self._fetched_at = self._clock()
        self.fetches += 1
        response = await self._fetcher(HTTPRequest("GET", self.jwks_uri,
                                                   (("Accept", "application/json"),)))
        if response.status != 200:
            log.warning("auth: JWKS %s answered %s; keeping the keys held", self.jwks_uri,
                        response.status)
            return
        try:
            self._verifier.set_jwks(json.loads(response.body))
        except (ValueError, TypeError, RecursionError) as exc:
            log.warning("auth: JWKS %s is not usable (%s); keeping the keys held",
                        self.jwks_uri, exc)

    def _may_refetch(self, now: float) -> bool:
        return self._fetched_at is None or now - self._fetched_at >= self.min_refetch

    async def verify(self, token: str) -> AccessInfo:
        from mcp_sansio.auth.jwt import UnknownKey

        now = self._clock()
        if self._fetched_at is None or (now - self._fetched_at >= self.max_age):
            await self._refresh()
        try:
            return self._verifier.verify(token, now)
        except UnknownKey:
            if not self._may_refetch(now):
                raise
            await self._refresh()
            return self._verifier.verify(token, now)


class JWKSKeeper:
    """A synchronous :class:`~mcp_sansio.auth.TokenVerifier` for JWT access tokens (needs the
    ``auth`` extra) whose JWKS a background task keeps current, for
    :class:`~mcp_sansio.auth.ProtectedResource` on asyncio::

        keeper = JWKSKeeper(jwks_uri, issuer=..., audience=resource)
        async with keeper, start_http(server, auth=ProtectedResource(resource, [issuer],
                                                                   keeper)):
            ...

    Entering fetches the keys (a failure is logged; tokens are refused until keys arrive)
    and starts the task; leaving stops it."""

    def __init__(self, jwks_uri: str, *, issuer: str, audience: str,
                 required_scopes: tuple[str, ...] = (), fetcher: Fetch = fetch,
                 clock: Callable[[], float] = time.time,
                 max_age: float = DEFAULT_JWKS_MAX_AGE,
                 min_refetch: float = DEFAULT_JWKS_MIN_REFETCH,
                 **verifier_options: Any) -> None:
        self._keys = JWKSVerifier(jwks_uri, issuer=issuer, audience=audience,
                                  required_scopes=required_scopes, fetcher=fetcher,
                                  clock=clock, max_age=max_age, min_refetch=min_refetch,
                                  **verifier_options)
        self._clock = clock
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def fetches(self) -> int:
        """How many times the JWKS was fetched (for tests and metrics)."""
        return self._keys.fetches

    def verify(self, token: str, now: float) -> AccessInfo:
        from mcp_sansio.auth.jwt import UnknownKey

        try:
            return self._keys._verifier.verify(token, now)
        except UnknownKey:
            if self._wake is not None:
                self._wake.set()  # rotation, or a made-up kid: the task decides (rate bound)
            raise

    async def _run(self) -> None:
        assert self._wake is not None
        keys = self._keys
        while True:
            due = (keys._fetched_at or 0.0) + keys.max_age - self._clock()
            with contextlib.suppress(TimeoutError):  # asyncio's, since Python 3.11
                await asyncio.wait_for(self._wake.wait(), max(due, 0.0))
            self._wake.clear()
            now = self._clock()
            if not keys._may_refetch(now):
                # asked again within min_refetch: wait out the bound, then look once more
                await asyncio.sleep(keys.min_refetch - (now - (keys._fetched_at or now)))
            try:
                await keys._refresh()
            except Exception:  # the transport failed: keep the keys held, try again later
                log.warning("auth: fetching the JWKS %s failed; keeping the keys held",
                            keys.jwks_uri, exc_info=True)

    async def __aenter__(self) -> JWKSKeeper:
        self._wake = asyncio.Event()
        try:
            await self._keys._refresh()
        except Exception:
            log.warning("auth: fetching the JWKS %s failed; tokens are refused until it "
                        "succeeds", self._keys.jwks_uri, exc_info=True)
        self._task = asyncio.ensure_future(self._run())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        task, self._task = self._task, None
        self._wake = None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class IntrospectionCache:
    """Verifies opaque tokens by RFC 7662 introspection, remembering active answers."""

    def __init__(self, introspection: IntrospectionVerifier, *, fetcher: Fetch = fetch,
                 clock: Callable[[], float] = time.time,
                 ttl: float = DEFAULT_INTROSPECTION_TTL,
                 max_entries: int = DEFAULT_INTROSPECTION_ENTRIES) -> None:
        self.introspection = introspection
        self._fetcher = fetcher
        self._clock = clock
        self.ttl = ttl
        self.max_entries = max_entries
        self._cache: OrderedDict[bytes, tuple[float, AccessInfo]] = OrderedDict()
        #: Introspection requests made so far.
        self.requests = 0

    async def verify(self, token: str) -> AccessInfo:
        key = hashlib.sha256(token.encode()).digest()
        now = self._clock()
        hit = self._cache.get(key)
        if hit is not None:
            until, info = hit
            if now < until:
                self._cache.move_to_end(key)
                return info
            del self._cache[key]
        self.requests += 1
        response = await self._fetcher(self.introspection.request(token))
        info = self.introspection.decide(response, now)  # InvalidToken: not remembered
        until = now + self.ttl
        if info.expires_at is not None:
            until = min(until, info.expires_at)
        self._cache[key] = (until, info)
        while len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)
        return info

