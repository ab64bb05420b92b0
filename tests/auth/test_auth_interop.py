"""Our OAuth client flow against the official Python SDK's authorization server and
OAuth-protected MCP server (tests/peers/sdk_auth_server.py, a subprocess on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_sansio.adapters.asyncio import connect_http
from mcp_sansio.adapters.auth.flow import FileStorage, fetch, follow_redirect, run_flow
from mcp_sansio.adapters.auth.session import OAuth

from mcp_sansio.auth import (
    ClientConfig,
    HTTPRequest,
    HTTPResponse,
    OAuthClientFlow,
    UserAuthorization,
)
from tests.paths import PEERS

PEER = PEERS / "sdk_auth_server.py"
WAIT = 120.0  # generous: the machine is shared
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "0"}}}


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, str(PEER)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def _recording(seen: list[str]) -> Any:
    async def fetcher(request: HTTPRequest) -> HTTPResponse:
        seen.append(f"{request.method} {request.url.split('?', 1)[0]}")
        return await fetch(request)
    return fetcher


def test_our_client_authorizes_with_the_sdk_and_calls_a_protected_tool(
        sdk_url: str, tmp_path: Path) -> None:
    storage = FileStorage(tmp_path / "tokens.json")
    steps: list[str] = []

    async def approve(action: UserAuthorization) -> str:
        steps.append(action.url.split("?", 1)[0])
        return await follow_redirect(action)

    async def session() -> str:
        auth = OAuth(approve, redirect_uri="http://127.0.0.1:9/callback", storage=storage)
        async with connect_http(sdk_url, auth=auth, request_timeout=WAIT) as client:
            tools = await client.list_tools()
            assert [t["name"] for t in tools] == ["whoami"]
            result = await client.call_tool("whoami", {})
            return str(result["content"][0]["text"])

    assert asyncio.run(asyncio.wait_for(session(), WAIT)) == "ada"
    origin = sdk_url.removesuffix("/mcp")
    assert steps == [f"{origin}/authorize"]  # the SDK's metadata led the flow there
    assert FileStorage(storage.path).get_issuer(sdk_url) is not None

    # A second session with the same storage: the tokens are reused, nothing is asked.
    assert asyncio.run(asyncio.wait_for(session(), WAIT)) == "ada"
    assert steps == [f"{origin}/authorize"]


def test_our_client_refreshes_with_the_sdk(sdk_url: str) -> None:
    async def main() -> tuple[str, str]:
        flow = OAuthClientFlow(sdk_url, ClientConfig("http://127.0.0.1:9/callback"),
                               entropy=secrets.token_bytes)
        first = await run_flow(flow, None, follow_redirect)
        # An hour later the token is about to expire: start() refreshes it.
        later = await run_flow(flow, None, follow_redirect, clock=lambda: time.time() + 3590)
        probe = await fetch(HTTPRequest(
            "POST", sdk_url, (("Content-Type", "application/json"),
                              ("Accept", "application/json, text/event-stream"),
                              later.authorization_header()),
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}'))
        assert probe.status != 401
        return first.access_token, later.access_token

    first, later = asyncio.run(asyncio.wait_for(main(), WAIT))
    assert first != later


# -- our tables and documents, read by the SDK's own helpers ---------------------------------------


@pytest.mark.parametrize("issuer", ["https://auth.example.com", "https://auth.example.com/t1",
                                    "https://auth.example.com/a/b/"])
def test_the_discovery_orders_agree_with_the_sdk(issuer: str) -> None:
    from mcp.client.auth.utils import (
        build_oauth_authorization_server_metadata_discovery_urls,
        build_protected_resource_metadata_discovery_urls,
    )

    from mcp_sansio.auth import as_metadata_urls

    assert as_metadata_urls(issuer) == \
        build_oauth_authorization_server_metadata_discovery_urls(issuer, "https://x/mcp")
    for server in ("https://mcp.example.com/mcp", "https://mcp.example.com"):
        flow = OAuthClientFlow(server, ClientConfig("http://127.0.0.1:9/cb"),
                               entropy=secrets.token_bytes)
        ours = [url for _, url in flow._prm_candidates("https://meta.example.com/prm")]
        assert ours == build_protected_resource_metadata_discovery_urls(
            "https://meta.example.com/prm", server)


def test_our_challenge_and_metadata_read_as_the_sdk_reads_them() -> None:
    try:  # the SDK's HTTP library: httpx2 since mcp 2, httpx before
        from httpx2 import Response
    except ImportError:
        from httpx import Response
    from mcp.client.auth.utils import (
        extract_resource_metadata_from_www_auth,
        extract_scope_from_www_auth,
    )
    from mcp.shared.auth import ProtectedResourceMetadata

    from mcp_sansio.auth import bearer_challenge, metadata_url, protected_resource_metadata

    resource = "https://mcp.example.com/mcp"
    header = bearer_challenge(resource_metadata=metadata_url(resource), scope="files:read a",
                              error="insufficient_scope", error_description="need more")
    response = Response(403, headers={"WWW-Authenticate": header})
    assert extract_scope_from_www_auth(response) == "files:read a"
    assert extract_resource_metadata_from_www_auth(response) == metadata_url(resource)
    document = protected_resource_metadata(resource, ["https://auth.example.com"],
                                           scopes_supported=["files:read"])
    parsed = ProtectedResourceMetadata.model_validate(document)
    assert str(parsed.resource) == resource
    assert [str(u).rstrip("/") for u in parsed.authorization_servers] == \
        ["https://auth.example.com"]
