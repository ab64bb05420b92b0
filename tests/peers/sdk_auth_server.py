"""The official Python SDK as an OAuth-protected MCP server *and* its authorization server,
a peer for our client flow (tests/auth/test_auth_interop.py).

One uvicorn app on 127.0.0.1: the SDK's authorization-server routes (RFC 8414 metadata,
``/authorize``, ``/token``, ``/register``) backed by an in-memory provider that approves every
authorization at once (it redirects straight back with a code, like a user who clicks
"allow"), its protected-resource metadata, and an MCP endpoint ``/mcp`` behind its bearer
middleware requiring the scope ``user``, with one tool ``whoami``.

Usage: ``sdk_auth_server.py [RESOURCE_URL]``; prints ``http://127.0.0.1:PORT/mcp`` once it
accepts connections. ``RESOURCE_URL`` (default: that URL) is the resource it protects, for a
test that puts a proxy in front of it (tests/auth/test_auth_client_adapters.py). Nothing here is
part of mcp-sansio; the library never imports ``mcp``.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket
import sys
import time

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

logging.getLogger("mcp").setLevel(logging.WARNING)

SCOPE = "user"


class ApprovingProvider:
    """An in-memory authorization server whose user always says yes."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}
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
            code=code, scopes=params.scopes or [SCOPE], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource, subject="ada")
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.tokens[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + 3600,
                                          resource=resource, subject="ada")
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
        return self.tokens.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.tokens.pop(token.token, None)


async def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
    resource = sys.argv[1] if len(sys.argv) > 1 else f"{origin}/mcp"
    server = MCPServer(
        "sdk-auth-peer", auth_server_provider=ApprovingProvider(),
        auth=AuthSettings(
            issuer_url=origin, resource_server_url=resource, required_scopes=[SCOPE],
            validate_token_resource=True,
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE])))

    @server.tool()
    def whoami() -> str:
        """Who the token speaks for."""
        return "ada"

    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    userver = uvicorn.Server(config)
    task = asyncio.ensure_future(userver.serve(sockets=[sock]))
    while not userver.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.01)
    sys.stdout.write(f"{origin}/mcp\n")
    sys.stdout.flush()
    await task


if __name__ == "__main__":
    asyncio.run(main())
