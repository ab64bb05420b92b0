"""Token verification that needs the network: a JWKS keeper for every runtime, and asyncio's
JWKS and introspection caches around the pure verifiers of :mod:`mcp_sansio.auth`.

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

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from mcp_sansio.auth import (
    AccessInfo,
    HTTPRequest,
    HTTPResponse,
    IntrospectionVerifier,
    VerificationPending,
)
from mcp_sansio.auth._deferred import AnswerCache
from mcp_sansio.auth._introspection import (
    DEFAULT_INTROSPECTION_ENTRIES,
    DEFAULT_INTROSPECTION_TTL,
)

from .flow import Fetch, fetch, fetch_sync

__all__ = ["DEFAULT_JWKS_MAX_AGE", "DEFAULT_JWKS_MIN_REFETCH", "DEFAULT_INTROSPECTION_TTL",
           "IntrospectionCache", "JWKSKeeper", "JWKSVerifier", "shared_replay_cache"]

log = logging.getLogger("mcp_sansio.auth")

#: Seconds a fetched JWKS is used before it is fetched again: one hour (the value of
#: ``mcp_sansio.auth.jwt.DEFAULT_JWKS_MAX_AGE``, repeated here so that importing this module
#: does not need the ``auth`` extra). Keys rotate on a scale of days; an hour bounds how long
#: a withdrawn key keeps being trusted.
DEFAULT_JWKS_MAX_AGE = 3600.0
#: Least seconds between two fetches of the JWKS: 60 (``DEFAULT_JWKS_MIN_REFETCH`` there).
#: Rotation needs one refetch; tokens with unknown ``kid`` values beyond that are refused
#: without asking the server again.
DEFAULT_JWKS_MIN_REFETCH = 60.0


class JWKSVerifier:
    """A :class:`~mcp_sansio.auth.TokenVerifier`-like object for JWT access tokens whose keys
    come from ``jwks_uri`` (needs the ``auth`` extra). ``await verify(token)``: the pure
    :class:`mcp_sansio.auth.jwt.JWKSCache` decides when to fetch, this makes the request
    with ``fetcher`` and waits for it."""

    def __init__(self, jwks_uri: str, *, issuer: str, audience: str,
                 required_scopes: tuple[str, ...] = (), fetcher: Fetch = fetch,
                 clock: Callable[[], float] = time.time,
                 max_age: float = DEFAULT_JWKS_MAX_AGE,
                 min_refetch: float = DEFAULT_JWKS_MIN_REFETCH,
                 **verifier_options: Any) -> None:
        from mcp_sansio.auth.jwt import JWKSCache  # lazy: the auth extra (joserfc)

        self.jwks_uri = jwks_uri
        self._fetcher = fetcher
        self._clock = clock
        #: The pure keeper: the keys, when they were asked for and loaded.
        self.cache = JWKSCache(jwks_uri, issuer=issuer, audience=audience,
                               required_scopes=required_scopes, max_age=max_age,
                               min_refetch=min_refetch, **verifier_options)

    @property
    def fetches(self) -> int:
        """How many times the JWKS was fetched (for tests and metrics)."""
        return self.cache.fetches

    async def verify(self, token: str) -> AccessInfo:
        now = self._clock()
        try:
            return self.cache.verify(token, now)
        except VerificationPending as pending:
            try:
                response = await self._fetcher(pending.request)
            except Exception as exc:  # the transport failed: the held keys, if any
                log.warning("auth: fetching the JWKS %s failed: %s", self.jwks_uri, exc)
                return pending.fail(str(exc), now)
            if response.status != 200:
                log.warning("auth: JWKS %s answered %s; keeping the keys held",
                            self.jwks_uri, response.status)
            return pending.finish(response, now)


class JWKSKeeper:
    """A synchronous :class:`~mcp_sansio.auth.TokenVerifier` for JWT access tokens (needs the
    ``auth`` extra), for :class:`~mcp_sansio.auth.ProtectedResource` on every runtime::

        keeper = JWKSKeeper(jwks_uri, issuer=..., audience=resource)
        async with keeper, start_http(server, auth=ProtectedResource(resource, [issuer],
                                                                   keeper)):  # asyncio, trio
            ...
        with keeper, start_http(server, auth=...):  # threads
            ...

    Entering fetches the keys (a failure is logged; the first request then asks again).
    After that the pure :class:`mcp_sansio.auth.jwt.JWKSCache` inside decides when the set
    is fetched again -- after ``max_age``, and when a token names a key the set lacks, at
    most once per ``min_refetch`` -- by raising
    :class:`~mcp_sansio.auth.VerificationPending`: the HTTP server parks that request while
    its adapter fetches the set, then judges the token with it. No task or thread of its
    own: the same object serves asyncio, trio and threads.

    ``fetcher`` (``await fetcher(request)``) and ``fetcher_sync`` replace the carriers of the
    first fetch (tests); the refreshes go through the HTTP server's adapter."""

    def __init__(self, jwks_uri: str, *, issuer: str, audience: str,
                 required_scopes: tuple[str, ...] = (), fetcher: Fetch | None = None,
                 fetcher_sync: Callable[[HTTPRequest], HTTPResponse] | None = None,
                 clock: Callable[[], float] = time.time,
                 max_age: float = DEFAULT_JWKS_MAX_AGE,
                 min_refetch: float = DEFAULT_JWKS_MIN_REFETCH,
                 **verifier_options: Any) -> None:
        from mcp_sansio.auth.jwt import JWKSCache  # lazy: the auth extra (joserfc)

        #: The pure keeper: the keys, when they were asked for and loaded.
        self.cache = JWKSCache(jwks_uri, issuer=issuer, audience=audience,
                               required_scopes=required_scopes, max_age=max_age,
                               min_refetch=min_refetch, **verifier_options)
        self._fetcher = fetcher
        self._fetcher_sync = fetcher_sync
        self._clock = clock

    @property
    def fetches(self) -> int:
        """How many times the JWKS was asked for (for tests and metrics)."""
        return self.cache.fetches

    def verify(self, token: str, now: float) -> AccessInfo:
        return self.cache.verify(token, now)

    def _loaded(self, response: HTTPResponse | None, error: BaseException | None) -> None:
        if response is not None and self.cache.receive(response, self._clock()):
            return
        log.warning("auth: the first fetch of the JWKS %s failed (%s); the first request "
                    "asks again", self.cache.jwks_uri,
                    self.cache.last_error if error is None else error)
        self.cache.asked_at = None  # the first token may ask at once

    async def __aenter__(self) -> JWKSKeeper:
        request = self.cache.asked(self._clock())
        response: HTTPResponse | None = None
        error: BaseException | None = None
        try:
            if self._fetcher is not None:
                response = await self._fetcher(request)
            elif _running_trio():
                import trio  # lazy: trio is optional

                response = await trio.to_thread.run_sync(fetch_sync, request)
            else:
                response = await fetch(request)
        except Exception as exc:
            error = exc
        self._loaded(response, error)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    def __enter__(self) -> JWKSKeeper:
        request = self.cache.asked(self._clock())
        response: HTTPResponse | None = None
        error: BaseException | None = None
        try:
            response = (self._fetcher_sync or fetch_sync)(request)
        except Exception as exc:
            error = exc
        self._loaded(response, error)
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


def _running_trio() -> bool:
    try:
        import sniffio  # lazy: trio's, optional
    except ImportError:  # trio needs sniffio: without it, not trio
        return False
    try:
        return sniffio.current_async_library() == "trio"
    except sniffio.AsyncLibraryNotFoundError:
        return False


class IntrospectionCache:
    """Verifies opaque tokens by RFC 7662 introspection, remembering active answers (the
    core's :class:`~mcp_sansio.auth._deferred.AnswerCache`, the one
    :meth:`IntrospectionVerifier.verify <mcp_sansio.auth.IntrospectionVerifier.verify>`
    uses on the HTTP servers)."""

    def __init__(self, introspection: IntrospectionVerifier, *, fetcher: Fetch = fetch,
                 clock: Callable[[], float] = time.time,
                 ttl: float = DEFAULT_INTROSPECTION_TTL,
                 max_entries: int = DEFAULT_INTROSPECTION_ENTRIES) -> None:
        self.introspection = introspection
        self._fetcher = fetcher
        self._clock = clock
        self._cache = AnswerCache(ttl, max_entries)
        #: Introspection requests made so far.
        self.requests = 0

    @property
    def ttl(self) -> float:
        return self._cache.ttl

    @property
    def max_entries(self) -> int:
        return self._cache.max_entries

    async def verify(self, token: str) -> AccessInfo:
        now = self._clock()
        info = self._cache.get(token, now)
        if info is not None:
            return info
        self.requests += 1
        response = await self._fetcher(self.introspection.request(token))
        info = self.introspection.decide(response, now)  # InvalidToken: not remembered
        self._cache.put(token, info, now)
        return info


@contextlib.asynccontextmanager
async def shared_replay_cache(bus: Any, *, max_entries: int = 100_000) -> AsyncIterator[Any]:
    """A :class:`~mcp_sansio.auth.dpop.SharedReplayCache` on ``bus`` (an
    :class:`~mcp_sansio.stores.EventBus`, e.g. the Redis one) for the block: give it to
    ``ProofVerifier(replay=...)`` on every worker of an asyncio service. Publications go out
    as tasks (the proof check does not wait for them); the block's end waits for them."""
    # Lazy: the auth extra (joserfc).
    from mcp_sansio.auth.dpop import REPLAY_TOPIC, SharedReplayCache

    loop = asyncio.get_running_loop()
    sending: set[asyncio.Task[None]] = set()

    def publish(message: bytes) -> None:
        task = loop.create_task(bus.publish(REPLAY_TOPIC, message))
        sending.add(task)
        task.add_done_callback(sending.discard)

    cache = SharedReplayCache(publish, max_entries=max_entries)
    unsubscribe = await bus.subscribe(
        REPLAY_TOPIC, lambda topic, message: cache.receive(message, time.time()))
    try:
        yield cache
    finally:
        await unsubscribe()
        await asyncio.gather(*sending, return_exceptions=True)
