"""The official Python SDK's machine clients against our resource server: its
client-credentials providers (``client_secret_basic``, ``client_secret_post``,
``private_key_jwt``) and its enterprise-managed (ID-JAG) provider, each discovering the
authorization server from our challenge and metadata and calling a tool on our server
(asyncio adapter, ``ProtectedResource(dpop="allowed")``: the SDK has no DPoP), with the
loopback authorization server of tests/auth_machine_world.py checking what they send."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
import urllib.request
from typing import Any

import pytest

from tests.auth.test_auth_server import whoami_server
from tests.auth.test_auth_server_interop import MemoryTokens
from tests.auth_machine_world import (
    CLIENT_ID,
    IDP_CLIENT,
    SECRET,
    MachineAS,
    machine_world,
    protected,
)
from tests.http_stories import asyncio_service
from tests.paths import PEERS

WAIT = 120.0


async def sdk_call(url: str, provider: Any) -> dict[str, Any]:
    try:  # the SDK's HTTP library: httpx2 since mcp 2, httpx before
        import httpx2
    except ImportError:
        import httpx as httpx2  # type: ignore[no-redef]
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(auth=provider, timeout=WAIT)
    async with http, Client(streamable_http_client(url, http_client=http),
                            read_timeout_seconds=WAIT) as client:
        result = await client.call_tool("whoami", {})
    return dict(json.loads(result.content[0].text))  # type: ignore[union-attr]


def served_call(world: MachineAS, port: int, provider: Any) -> dict[str, Any]:
    import anyio

    with asyncio_service(whoami_server(), port=port, auth=protected(world, dpop="allowed")):
        answer: dict[str, Any] = anyio.run(sdk_call, world.resource, provider)
    return answer


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_the_sdks_client_credentials_provider(method: str) -> None:
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

    with machine_world() as (world, port):
        provider = ClientCredentialsOAuthProvider(
            world.resource, MemoryTokens(), CLIENT_ID, SECRET,
            token_endpoint_auth_method=method,  # type: ignore[arg-type]
            scope="mcp:read", issuer=world.issuer)
        answer = served_call(world, port, provider)
        assert answer["sub"] == CLIENT_ID
        (request,) = world.token_requests()
        assert request["form"]["grant_type"] == "client_credentials"
        assert request["form"]["resource"] == world.resource


def test_the_sdks_private_key_jwt_provider() -> None:
    from mcp.client.auth.extensions.client_credentials import (
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    with machine_world() as (world, port):
        signer = SignedJWTParameters(issuer=CLIENT_ID, subject=CLIENT_ID,
                                     signing_key=world.client_key.as_pem(private=True).decode(),
                                     signing_algorithm="ES256")
        provider = PrivateKeyJWTOAuthProvider(
            world.resource, MemoryTokens(), CLIENT_ID, signer.create_assertion_provider(),
            issuer=world.issuer)
        assert served_call(world, port, provider)["sub"] == CLIENT_ID


def test_the_sdks_identity_assertion_provider() -> None:
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    with machine_world() as (world, port):
        id_token = world.id_token("grace@example.com")

        def exchange(audience: str, resource: str) -> str:
            # The application's part: RFC 8693 at the enterprise IdP for an ID-JAG.
            body = urllib.parse.urlencode({
                "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                "subject_token": id_token,
                "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                "audience": audience, "resource": resource, "client_id": IDP_CLIENT}).encode()
            with urllib.request.urlopen(f"{world.issuer}/idp/token", body,
                                        timeout=WAIT) as got:
                return str(json.loads(got.read())["access_token"])

        async def assertion(audience: str, resource: str) -> str:
            return await asyncio.to_thread(exchange, audience, resource)

        provider = IdentityAssertionOAuthProvider(
            world.resource, MemoryTokens(), CLIENT_ID, SECRET, world.issuer, assertion)
        assert served_call(world, port, provider)["sub"] == "grace@example.com"
        bearer = world.token_requests()[-1]
        assert bearer["form"]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"


def test_our_enterprise_managed_client_against_the_sdks_authorization_server() -> None:
    """Leg 2 at the SDK's token endpoint (its jwt-bearer grant for ID-JAGs), leg 1 at the
    loopback IdP; our server trusts the SDK issuer's tokens."""
    import subprocess
    import sys

    from mcp_sansio.adapters.asyncio import connect_http
    from mcp_sansio.adapters.auth import ClientCredentials, IdentityAssertionGrant

    from mcp_sansio.auth import ProtectedResource
    from mcp_sansio.auth.jwt import JWTVerifier

    peer = PEERS / "sdk_idjag_issuer.py"
    with machine_world() as (world, port):
        proc = subprocess.Popen(
            [sys.executable, str(peer), json.dumps(world.idp_key.as_dict(private=False)),
             CLIENT_ID, SECRET], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            issuer = proc.stdout.readline().strip()
            assert issuer.startswith("http://127.0.0.1:"), issuer
            keys = json.loads(urllib.request.urlopen(f"{issuer}jwks", timeout=WAIT).read())
            rs = ProtectedResource(world.resource, [issuer],
                                   JWTVerifier(keys, issuer=issuer, audience=world.resource))
            grant = IdentityAssertionGrant(
                id_token=world.id_token("linus@example.com"),
                idp_token_endpoint=f"{world.issuer}/idp/token",
                idp_client=ClientCredentials(IDP_CLIENT),
                client=ClientCredentials(CLIENT_ID, SECRET,
                                         token_endpoint_auth_method="client_secret_post"))

            async def call() -> dict[str, Any]:
                async with connect_http(world.resource, auth=grant,
                                        request_timeout=WAIT) as client:
                    result = await client.call_tool("whoami", {})
                return dict(json.loads(result["content"][0]["text"]))

            with asyncio_service(whoami_server(), port=port, auth=rs):
                answer = asyncio.run(call())
        finally:
            proc.terminate()
            proc.wait(30)
        assert answer["sub"] == "linus@example.com" and answer["iss"] == issuer
        (exchange,) = world.requests
        assert exchange["form"]["audience"] == issuer
