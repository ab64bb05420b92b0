"""The official Python SDK's client, with its OAuth provider (``mcp.client.auth``), against our
protected server (asyncio adapter, ``auth=`` a :class:`~mcp_sansio.auth.ProtectedResource`
with our :class:`~mcp_sansio.auth.jwt.JWTVerifier`) and a test issuer of JWTs built on the
SDK's authorization-server routes (tests/peers/sdk_jwt_issuer.py, a subprocess on
127.0.0.1). The SDK discovers the authorization server from our challenge and metadata,
registers, authorizes with PKCE and ``resource``, and calls a tool that sees the principal."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from mcp_sansio.app.server import Server
from mcp_sansio.auth import ProtectedResource
from mcp_sansio.auth.jwt import JWTVerifier
from tests.http_stories import asyncio_service
from tests.paths import PEERS

PEER = PEERS / "sdk_jwt_issuer.py"
WAIT = 120.0  # generous: the machine is shared


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, str(PEER)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        origin = proc.stdout.readline().strip()
        assert origin.startswith("http://127.0.0.1:"), origin
        yield origin
    finally:
        proc.terminate()
        proc.wait(30)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def whoami_server() -> Server:
    server = Server("protected")

    @server.tool()
    async def whoami(ctx: Any) -> str:
        auth = ctx.auth
        return json.dumps({"sub": auth.subject, "scopes": sorted(auth.scopes),
                           "aud": auth.claims["aud"], "era": ctx.era.value})

    return server


class MemoryTokens:
    """The SDK's ``TokenStorage`` protocol, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


async def sdk_session(url: str, mode: str) -> tuple[list[str], str, list[str]]:
    """Connect with the SDK's client and OAuth provider; the tools, whoami's answer, and the
    URLs the SDK's HTTP client asked for."""
    try:  # the SDK's HTTP library: httpx2 since mcp 2, httpx before
        import httpx2
    except ImportError:
        import httpx as httpx2  # type: ignore[no-redef]
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    redirect: dict[str, str] = {}

    async def approve(authorization_url: str) -> None:
        # The test issuer's user approves at once: follow to the redirect by hand.
        async with httpx2.AsyncClient() as http:
            answer = await http.get(authorization_url)
        assert answer.status_code in (302, 303, 307), answer.text
        redirect["location"] = answer.headers["location"]

    async def callback() -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(redirect["location"]).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0],
                                       iss=query.get("iss", [None])[0])

    provider = OAuthClientProvider(
        url, OAuthClientMetadata(client_name="sdk-client",
                                 redirect_uris=["http://127.0.0.1:9/callback"],
                                 grant_types=["authorization_code", "refresh_token"],
                                 response_types=["code"]),
        MemoryTokens(), redirect_handler=approve, callback_handler=callback)
    seen: list[str] = []

    async def record(request: Any) -> None:
        seen.append(f"{request.method} {str(request.url).split('?', 1)[0]}")

    http = httpx2.AsyncClient(auth=provider, event_hooks={"request": [record]}, timeout=WAIT)
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode,
                            read_timeout_seconds=WAIT) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("whoami", {})
        text = result.content[0].text  # type: ignore[union-attr]
    return tools, text, seen


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])  # the handshake era, stateless
def test_the_sdk_client_authorizes_against_our_protected_server(issuer: str, mode: str) -> None:
    import anyio

    jwks = json.loads(urllib.request.urlopen(f"{issuer}jwks", timeout=WAIT).read())
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    verifier = JWTVerifier(jwks, issuer=issuer, audience=url)
    auth = ProtectedResource(url, [issuer], verifier, scopes_supported=["mcp:read"],
                             required_scopes=["mcp:read"])
    with asyncio_service(whoami_server(), port=port, auth=auth) as served:
        assert served == url
        tools, text, seen = anyio.run(sdk_session, url, mode)
    assert tools == ["whoami"]
    era = "stateless" if mode == "2026-07-28" else "handshake"
    assert json.loads(text) == {"sub": "ada", "scopes": ["mcp:read"], "aud": url, "era": era}
    # it found the authorization server through our challenge and metadata document
    assert f"GET http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp" in seen
    assert f"POST {issuer}token" in seen
