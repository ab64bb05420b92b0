"""Driving the OAuth client flow by hand, against a toy server and authorization server.

Everything runs in this process: ``network`` plays the MCP server and its authorization
server, ``browser`` plays the user who approves. A real application would make the requests
with its HTTP client and open a real browser.
"""

import base64
import hashlib
import json
import secrets
import time
from urllib.parse import parse_qs, urlencode, urlsplit

from mcp_sansio.auth import (
    AccessInfo,
    Authorized,
    ClientConfig,
    HTTPRequest,
    HTTPResponse,
    InvalidToken,
    OAuthClientFlow,
    Refusal,
    authorize_request,
    metadata_url,
    protected_resource_metadata,
)

MCP = "https://mcp.example.com/mcp"
AS = "https://auth.example.com"
issued: dict[str, str] = {}  # access token -> subject
codes: dict[str, str] = {}   # authorization code -> PKCE code_challenge


class ToyVerifier:
    """A TokenVerifier: the tokens this toy authorization server issued."""

    def verify(self, token: str, now: float) -> AccessInfo:
        if token not in issued:
            raise InvalidToken("unknown token")
        return AccessInfo(issued[token], frozenset({"mcp:read"}))


def reply(doc: object, status: int = 200) -> HTTPResponse:
    return HTTPResponse(status, (("Content-Type", "application/json"),),
                        json.dumps(doc).encode())


def mcp_server(headers: list[tuple[str, str]]) -> HTTPResponse:
    decision = authorize_request(headers, "/mcp", ToyVerifier(), time.time(),
                                 resource_metadata=metadata_url(MCP),
                                 required_scopes=["mcp:read"])
    if isinstance(decision, Refusal):
        return HTTPResponse(decision.status, decision.headers)
    return reply({"hello": decision.subject})


def network(request: HTTPRequest) -> HTTPResponse:
    if request.url == metadata_url(MCP):
        return reply(protected_resource_metadata(MCP, [AS], scopes_supported=["mcp:read"]))
    if request.url == AS + "/.well-known/oauth-authorization-server":
        return reply({"issuer": AS, "authorization_endpoint": AS + "/authorize",
                      "token_endpoint": AS + "/token", "registration_endpoint": AS + "/register",
                      "code_challenge_methods_supported": ["S256"]})
    if request.url == AS + "/register":
        return reply({"client_id": "client-1", **json.loads(request.body)}, 201)
    if request.url == AS + "/token":
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        digest = hashlib.sha256(form["code_verifier"].encode()).digest()
        challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()  # RFC 7636 S256
        if codes.pop(form["code"], None) != challenge:
            return reply({"error": "invalid_grant"}, 400)
        token = secrets.token_urlsafe(16)
        issued[token] = "ada"
        return reply({"access_token": token, "token_type": "Bearer", "expires_in": 3600})
    return HTTPResponse(404)


def browser(url: str) -> str:
    """The user approves; the authorization server redirects back with a code."""
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    code = secrets.token_urlsafe(8)
    codes[code] = query["code_challenge"]
    return query["redirect_uri"] + "?" + urlencode({"code": code, "state": query["state"]})


# The client: the request is refused, the flow runs, the request is retried with the token.
first = mcp_server([])
print("first attempt:", first.status, first.header("WWW-Authenticate"))

flow = OAuthClientFlow(MCP, ClientConfig("http://127.0.0.1:8765/callback"),
                       entropy=secrets.token_bytes)
action = flow.start(time.time(), first)
while not isinstance(action, Authorized):
    if isinstance(action, HTTPRequest):
        print("flow asks:", action.method, action.url)
        action = flow.receive_response(network(action), time.time())
    else:
        print("send the user to:", action.url.split("?")[0])
        action = flow.receive_redirect(browser(action.url), time.time())

retry = mcp_server([action.tokens.authorization_header()])
flow.request_succeeded()
print("retry:", retry.status, json.loads(retry.body))
