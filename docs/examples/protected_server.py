"""A protected MCP server: it accepts JWT access tokens of one authorization server, and its
tools see who called. Needs the ``auth`` extra (``pip install mcp-sansio[auth]``)."""

import asyncio
import json
import time
import urllib.error
import urllib.request

from joserfc import jwt
from joserfc.jwk import ECKey
from mcp_sansio.adapters.asyncio import Context, Server, connect_http, start_http

from mcp_sansio.auth import ProtectedResource
from mcp_sansio.auth.jwt import JWTVerifier

ISSUER = "https://auth.example.com"
RESOURCE = "https://mcp.example.com/mcp"  # this server's public URL: the tokens' audience

# Stand-in for the authorization server: its signing key, and the JWKS it publishes at its
# jwks_uri (a real server fetches that document; see "Keeping the keys" below).
signing_key = ECKey.generate_key("P-256", parameters={"kid": "k1", "alg": "ES256"})
jwks = {"keys": [signing_key.as_dict(private=False)]}


def access_token(scope: str) -> str:
    claims = {"iss": ISSUER, "aud": RESOURCE, "sub": "ada", "scope": scope,
              "client_id": "example-client", "exp": int(time.time()) + 3600}
    return jwt.encode({"alg": "ES256", "kid": "k1"}, claims, signing_key)


server = Server("protected")


@server.tool(description="Says who the access token speaks for.")
async def whoami(ctx: Context) -> str:
    assert ctx.auth is not None  # always set on a server with auth=
    return f"{ctx.auth.subject} via {ctx.auth.client_id}, scopes {sorted(ctx.auth.scopes)}"


auth = ProtectedResource(
    RESOURCE, [ISSUER], JWTVerifier(jwks, issuer=ISSUER, audience=RESOURCE),
    scopes_supported=["mcp:read", "mcp:write"], required_scopes=["mcp:read"])


def post_without_token(url: str) -> str:
    request = urllib.request.Request(url, data=b"{}", method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    try:
        urllib.request.urlopen(request, timeout=30)
    except urllib.error.HTTPError as refused:
        return f"{refused.code} {refused.headers['WWW-Authenticate']}"
    raise AssertionError("served without a token")


async def main() -> None:
    async with start_http(server, "127.0.0.1", 0, auth=auth) as service:
        print(await asyncio.to_thread(post_without_token, service.url))
        document_url = service.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        with await asyncio.to_thread(urllib.request.urlopen, document_url, timeout=30) as got:
            print(json.load(got)["authorization_servers"])
        headers = {"Authorization": f"Bearer {access_token('mcp:read')}"}
        async with connect_http(service.url, headers=headers) as client:
            result = await client.call_tool("whoami", {}, timeout=30)
            print(result["content"][0]["text"])


if __name__ == "__main__":
    asyncio.run(main())
