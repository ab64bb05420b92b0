"""adapters/auth/verify.py: the JWKS cache (first fetch, age, rotation, refetch bound) and
the introspection cache (TTL, exp, refusals not remembered, size bound)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey
from mcp_sansio.adapters.auth.verify import IntrospectionCache, JWKSVerifier

from mcp_sansio.auth import HTTPRequest, HTTPResponse, IntrospectionVerifier, InvalidToken
from mcp_sansio.auth.jwt import UnknownKey

ISSUER = "https://auth.example.com"
RESOURCE = "https://mcp.example.com/mcp"
JWKS = ISSUER + "/jwks"
NOW = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def _key(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "RS256"})


def _token(key: RSAKey, **claims: Any) -> str:
    base = {"iss": ISSUER, "aud": RESOURCE, "sub": "ada", "exp": int(NOW) + 100_000,
            "scope": "mcp:read"}
    base.update(claims)
    return jwt.encode({"alg": "RS256", "kid": key.kid}, base, key)


class JWKSServer:
    def __init__(self, *keys: RSAKey) -> None:
        self.keys = list(keys)
        self.status = 200
        self.hits = 0

    async def __call__(self, request: HTTPRequest) -> HTTPResponse:
        assert request.url == JWKS
        self.hits += 1
        body = json.dumps({"keys": [k.as_dict(private=False) for k in self.keys]}).encode()
        return HTTPResponse(self.status, (), body)


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_the_jwks_is_fetched_once_then_on_age_and_on_rotation_within_bounds() -> None:
    k1, k2, k3 = _key("k1"), _key("k2"), _key("k3")
    server, clock = JWKSServer(k1), Clock()
    verifier = JWKSVerifier(JWKS, issuer=ISSUER, audience=RESOURCE, fetcher=server,
                            clock=clock, max_age=3600, min_refetch=60)

    async def main() -> None:
        assert (await verifier.verify(_token(k1))).subject == "ada"
        await verifier.verify(_token(k1))
        assert server.hits == 1  # cached
        server.keys.append(k2)  # rotation: a token signed with the new key
        clock.now += 61
        assert (await verifier.verify(_token(k2))).subject == "ada"
        assert server.hits == 2
        with pytest.raises(UnknownKey):  # a made-up kid, within min_refetch: no fetch
            await verifier.verify(_token(k3))
        assert server.hits == 2
        clock.now += 3600  # too old: fetched again before use
        await verifier.verify(_token(k1))
        assert server.hits == 3
        server.status = 500  # the authorization server is down: the held keys still work
        clock.now += 3600
        await verifier.verify(_token(k2))
        assert server.hits == 4
        with pytest.raises(InvalidToken):
            await verifier.verify(_token(k1, aud="https://other"))

    run(main())


class Introspection:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.hits = 0

    async def __call__(self, request: HTTPRequest) -> HTTPResponse:
        self.hits += 1
        return HTTPResponse(200, (), json.dumps(self.doc).encode())


def _introspection() -> IntrospectionVerifier:
    return IntrospectionVerifier(ISSUER + "/introspect", client_id="rs", client_secret="pw",
                                 resource=RESOURCE)


def test_active_answers_are_remembered_until_ttl_or_exp_and_refusals_never() -> None:
    server = Introspection({"active": True, "sub": "ada", "aud": RESOURCE, "exp": NOW + 30})
    clock = Clock()
    cache = IntrospectionCache(_introspection(), fetcher=server, clock=clock, ttl=60)

    async def main() -> None:
        await cache.verify("tok")
        await cache.verify("tok")
        assert server.hits == 1
        clock.now += 31  # past the token's exp (before the TTL): asked again, and refused
        server.doc = {"active": False}
        with pytest.raises(InvalidToken):
            await cache.verify("tok")
        with pytest.raises(InvalidToken):
            await cache.verify("tok")
        assert server.hits == 3  # refusals are not remembered

    run(main())


def test_the_introspection_cache_is_bounded() -> None:
    server = Introspection({"active": True, "sub": "ada", "aud": RESOURCE})
    cache = IntrospectionCache(_introspection(), fetcher=server, clock=Clock(), max_entries=2)

    async def main() -> None:
        for token in ("a", "b", "c", "a"):
            await cache.verify(token)

    run(main())
    assert server.hits == 4  # "a" was dropped when "c" came in
    assert len(cache._cache) == 2
