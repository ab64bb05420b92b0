"""The official Python SDK's authorization-server routes with its SEP-990 leg 2 enabled (the
JWT bearer grant carrying an ID-JAG): a peer for our enterprise-managed client
(tests/auth/test_auth_machine_interop.py).

Usage: ``sdk_idjag_issuer.py IDP_PUBLIC_JWK_JSON CLIENT_ID CLIENT_SECRET``. The provider is
sdk_jwt_issuer.py's, with ``exchange_identity_assertion`` added: the ID-JAG must be signed by
the IdP key given, typed ``oauth-id-jag+jwt``, for this issuer, unexpired, and name the
authenticated client; the access token (an ES256 JWT, keys at ``/jwks``) is for the ID-JAG's
``resource`` and subject. The client is pre-registered as confidential
(``client_secret_post``). Prints ``http://127.0.0.1:PORT/`` (the issuer) once it accepts
connections. Nothing here is part of mcp-sansio.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time

import uvicorn
from joserfc import jwt
from joserfc.jwk import JWKRegistry
from mcp.server.auth.provider import IdentityAssertionParams, TokenError
from mcp.server.auth.routes import create_auth_routes
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from sdk_jwt_issuer import KEY, JWTProvider, jwks
from starlette.applications import Starlette
from starlette.routing import Route

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class IdJagProvider(JWTProvider):
    def __init__(self, issuer: str, idp_key: object) -> None:
        super().__init__(issuer)
        self.idp_key = idp_key

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull,
                                          params: IdentityAssertionParams) -> OAuthToken:
        try:
            decoded = jwt.decode(params.assertion, self.idp_key)  # type: ignore[arg-type]
        except Exception as exc:  # any bad assertion is invalid_grant
            raise TokenError("invalid_grant", f"bad ID-JAG: {exc}") from None
        c = decoded.claims
        if (decoded.header.get("typ") != "oauth-id-jag+jwt" or c.get("aud") != self.issuer
                or c.get("exp", 0) <= time.time() or c.get("client_id") != client.client_id):
            raise TokenError("invalid_grant", "the ID-JAG is not for this client here")
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": c["resource"], "sub": c["sub"],
                  "client_id": client.client_id, "scope": "mcp:read", "iat": now,
                  "exp": now + 3600}
        access = jwt.encode({"alg": "ES256", "kid": KEY.kid}, claims, KEY)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=3600,
                          scope="mcp:read")


async def main() -> None:
    idp_key = JWKRegistry.import_key(json.loads(sys.argv[1]))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = IdJagProvider(origin + "/", idp_key)
    provider.clients[sys.argv[2]] = OAuthClientInformationFull(
        client_id=sys.argv[2], client_secret=sys.argv[3], redirect_uris=None,
        grant_types=[JWT_BEARER], token_endpoint_auth_method="client_secret_post")
    routes = create_auth_routes(provider, AnyHttpUrl(origin), identity_assertion_enabled=True)
    app = Starlette(routes=[*routes, Route("/jwks", jwks)])
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    userver = uvicorn.Server(config)
    task = asyncio.ensure_future(userver.serve(sockets=[sock]))
    while not userver.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.01)
    sys.stdout.write(f"{origin}/\n")
    sys.stdout.flush()
    await task


if __name__ == "__main__":
    asyncio.run(main())
