"""A machine client and a DPoP-protected server: client credentials, workload identity, DPoP.

Runs, on 127.0.0.1, a stand-in authorization server (it checks the client's secret or the
platform token, and binds each token to the key of the request's DPoP proof), an MCP server
that accepts only DPoP-bound tokens, and two clients: one with a client secret, one with a
workload token read from a file. Needs the ``auth`` extra (``pip install mcp-sansio[auth]``).
"""

import asyncio
import base64
import json
import socket
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

from joserfc import jwt
from joserfc.jwk import ECKey
from mcp_sansio.adapters.asyncio import Context, Server, connect_http, start_http
from mcp_sansio.adapters.auth import ClientCredentials, JWTBearerGrant, OAuth, TokenFile

from mcp_sansio.auth import ClientCredentialsGrant, ProtectedResource
from mcp_sansio.auth.dpop import ProofVerifier
from mcp_sansio.auth.jwt import JWTVerifier

with socket.socket() as probe:  # pick the MCP server's port first: the tokens name its URL
    probe.bind(("127.0.0.1", 0))
    PORT = probe.getsockname()[1]
RESOURCE = f"http://127.0.0.1:{PORT}/mcp"
signing_key = ECKey.generate_key("P-256", parameters={"kid": "as", "alg": "ES256"})
platform_key = ECKey.generate_key("P-256")  # the workload platform's token signer


class TokenEndpoint(BaseHTTPRequestHandler):
    """The stand-in authorization server: metadata and a token endpoint."""

    proofs = ProofVerifier()

    def log_message(self, *args: object) -> None:
        pass

    def reply(self, status: int, doc: dict) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.reply(200, {"issuer": ISSUER, "token_endpoint": f"{ISSUER}/token",
                         "authorization_endpoint": f"{ISSUER}/authorize",
                         "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                         "dpop_signing_alg_values_supported": ["ES256"]})

    def do_POST(self) -> None:
        form = parse_qs(self.rfile.read(int(self.headers["content-length"])).decode())
        if form["grant_type"] == ["client_credentials"]:
            basic = base64.b64decode(self.headers["authorization"][6:]).decode()
            if basic != "reporting-job:s3cret":
                return self.reply(401, {"error": "invalid_client"})
            subject = "reporting-job"
        else:  # the JWT bearer grant with a workload token
            subject = jwt.decode(form["assertion"][0], platform_key).claims["sub"]
        now = time.time()
        proof = self.proofs.check(self.headers.get_all("DPoP"), method="POST",
                                  url=f"{ISSUER}/token", now=now, access_token=None)
        claims = {"iss": ISSUER, "aud": RESOURCE, "sub": subject, "scope": "reports",
                  "exp": int(now) + 600, "cnf": {"jkt": proof.jkt}}
        token = jwt.encode({"alg": "ES256", "kid": "as"}, claims, signing_key)
        self.reply(200, {"access_token": token, "token_type": "DPoP", "expires_in": 600})


authorization_server = ThreadingHTTPServer(("127.0.0.1", 0), TokenEndpoint)
ISSUER = f"http://127.0.0.1:{authorization_server.server_address[1]}"
threading.Thread(target=authorization_server.serve_forever, daemon=True).start()

server = Server("reports")


@server.tool(description="Says who the DPoP-bound token speaks for.")
async def whoami(ctx: Context) -> str:
    assert ctx.auth is not None
    return f"{ctx.auth.subject} (key {ctx.auth.claims['cnf']['jkt'][:8]}...)"


protected = ProtectedResource(
    RESOURCE, [ISSUER], JWTVerifier({"keys": [signing_key.as_dict(private=False)]},
                                    issuer=ISSUER, audience=RESOURCE),
    dpop="required")


async def main() -> None:
    async with start_http(server, "127.0.0.1", PORT, auth=protected):
        # A service with a client secret: the client-credentials grant, DPoP-bound tokens.
        secret = OAuth(grant=ClientCredentialsGrant(
            ClientCredentials("reporting-job", "s3cret")), dpop=True)
        async with connect_http(RESOURCE, auth=secret) as client:
            result = await client.call_tool("whoami", {})
            print("client credentials:", result["content"][0]["text"].split(" (")[0])
        # A workload whose platform writes (and rotates) a token file.
        with tempfile.TemporaryDirectory() as folder:
            token_file = Path(folder) / "token"
            token_file.write_text(jwt.encode({"alg": "ES256"}, {
                "sub": "batch-7", "aud": ISSUER, "exp": int(time.time()) + 600}, platform_key))
            workload = OAuth(grant=JWTBearerGrant(TokenFile(token_file)), dpop=True)
            async with connect_http(RESOURCE, auth=workload) as client:
                result = await client.call_tool("whoami", {})
                print("workload identity:", result["content"][0]["text"].split(" (")[0])
    authorization_server.shutdown()


asyncio.run(main())
