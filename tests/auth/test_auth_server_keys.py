"""adapters/auth/verify.py's JWKSKeeper on asyncio: the synchronous verifier a protected
server is given -- its JWKS fetched before serving, asked for again by a token that names an
unknown key (rotation) within the refetch bound, and used over the wire. The other runtimes:
tests/auth/test_auth_verify_runtimes.py."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey
from mcp_sansio.adapters.asyncio import Server, connect_http, start_http
from mcp_sansio.adapters.auth.verify import JWKSKeeper

from mcp_sansio.auth import HTTPRequest, HTTPResponse, ProtectedResource, VerificationPending
from mcp_sansio.auth.jwt import UnknownKey

ISSUER = "https://auth.example.com"
RESOURCE = "https://mcp.example.com/mcp"
JWKS = ISSUER + "/jwks"
WAIT = 60.0


def _key(kid: str) -> ECKey:
    return ECKey.generate_key("P-256", parameters={"kid": kid, "alg": "ES256"})


def _token(key: ECKey, sub: str = "ada") -> str:
    claims = {"iss": ISSUER, "aud": RESOURCE, "sub": sub, "scope": "mcp:read",
              "exp": int(time.time()) + 3600}
    return jwt.encode({"alg": "ES256", "kid": key.kid}, claims, key)


class JWKSServer:
    def __init__(self, *keys: ECKey) -> None:
        self.keys = list(keys)

    async def __call__(self, request: HTTPRequest) -> HTTPResponse:
        assert request.url == JWKS
        body = json.dumps({"keys": [k.as_dict(private=False) for k in self.keys]}).encode()
        return HTTPResponse(200, (), body)


async def _until(condition: Any) -> None:
    async with asyncio.timeout(WAIT):  # a bound for a failing test only
        while not condition():
            await asyncio.sleep(0.01)


def test_a_rotated_key_is_asked_for_by_the_first_token_that_names_it() -> None:
    old, new = _key("old"), _key("new")
    issuer = JWKSServer(old)

    async def main() -> None:
        keeper = JWKSKeeper(JWKS, issuer=ISSUER, audience=RESOURCE, fetcher=issuer,
                            min_refetch=0.0)
        async with keeper:
            assert keeper.fetches == 1  # before the first request
            assert keeper.verify(_token(old), time.time()).subject == "ada"
            issuer.keys.append(new)
            # the HTTP server parks such a request while its adapter fetches the set
            with pytest.raises(VerificationPending) as pending:
                keeper.verify(_token(new), time.time())
            assert keeper.fetches == 2
            response = await issuer(pending.value.request)
            assert pending.value.finish(response, time.time()).subject == "ada"
            assert keeper.verify(_token(new, "bob"), time.time()).subject == "bob"

    asyncio.run(main())


def test_made_up_key_ids_do_not_hammer_the_authorization_server() -> None:
    known, stranger = _key("known"), _key("stranger")

    async def main() -> None:
        keeper = JWKSKeeper(JWKS, issuer=ISSUER, audience=RESOURCE,
                            fetcher=JWKSServer(known), min_refetch=3600.0)
        async with keeper:
            for _ in range(20):
                with pytest.raises(UnknownKey):
                    keeper.verify(_token(stranger), time.time())
                await asyncio.sleep(0.01)
            assert keeper.fetches == 1

    asyncio.run(main())


def test_a_protected_asyncio_server_checks_tokens_with_kept_keys() -> None:
    key = _key("k1")
    server = Server("kept")

    @server.tool()
    async def whoami(ctx: Any) -> str:
        return str(ctx.auth.subject)

    async def main() -> str:
        keeper = JWKSKeeper(JWKS, issuer=ISSUER, audience=RESOURCE, fetcher=JWKSServer(key))
        auth = ProtectedResource(RESOURCE, [ISSUER], keeper, required_scopes=["mcp:read"])
        async with keeper, start_http(server, auth=auth) as service, connect_http(
                service.url, headers={"Authorization": f"Bearer {_token(key)}"}) as client:
            result = await client.call_tool("whoami", {}, timeout=WAIT)
            return str(result["content"][0]["text"])

    assert asyncio.run(main()) == "ada"
