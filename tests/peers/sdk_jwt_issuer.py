"""A test authorization server that issues JWT access tokens, on the official Python SDK's
authorization-server routes: a peer for our protected server
(tests/auth/test_auth_server_interop.py).

One uvicorn app on 127.0.0.1: the SDK's routes (RFC 8414 metadata, ``/authorize``,
``/token``, ``/register``) over an in-memory provider whose user approves at once, issuing
access tokens as ES256 JWTs (``iss`` this server, ``aud`` the RFC 8707 ``resource`` the
client asked for, ``sub`` ``ada``, ``scope``, ``client_id``, ``exp`` in an hour), and the
public key set at ``/jwks``.

Usage: ``sdk_jwt_issuer.py``; prints ``http://127.0.0.1:PORT/`` (the issuer, spelled as the
SDK's metadata spells it) once it accepts connections. Nothing here is part of mcp-sansio;
the library never imports ``mcp``.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket
import sys
import time

import uvicorn
from joserfc import jwt
from joserfc.jwk import ECKey
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

logging.getLogger("mcp").setLevel(logging.WARNING)

SCOPES = ["mcp:read", "mcp:write"]
KEY = ECKey.generate_key("P-256", parameters={"kid": "issuer-1", "alg": "ES256"})


class JWTProvider:
    """An in-memory authorization server whose user always says yes; tokens are JWTs."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or ["mcp:read"], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource, subject="ada")
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        claims = {"iss": self.issuer, "aud": resource, "sub": "ada", "client_id": client_id,
                  "scope": " ".join(scopes), "iat": int(time.time()),
                  "exp": int(time.time()) + 3600, "jti": secrets.token_urlsafe(8)}
        access = jwt.encode({"alg": "ES256", "kid": KEY.kid}, claims, KEY)
        refresh = secrets.token_urlsafe(24)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id,
                                             scopes=scopes, resource=resource, subject="ada")
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=3600,
                          scope=" ".join(scopes), refresh_token=refresh)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(authorization_code.client_id, authorization_code.scopes,
                           authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes,
                           refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None  # this server is no resource server

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.refresh.pop(token.token, None)


async def jwks(request: Request) -> JSONResponse:
    return JSONResponse({"keys": [KEY.as_dict(private=False)]})


async def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
    routes = create_auth_routes(
        # the SDK's metadata names the issuer as pydantic spells it, with a trailing slash
        JWTProvider(origin + "/"), AnyHttpUrl(origin),
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=SCOPES, default_scopes=["mcp:read"]))
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
