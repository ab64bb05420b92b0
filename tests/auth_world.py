"""A fake MCP server and authorization server that answer the OAuth client flow's requests.

Every document is a plain dict the tests edit to make one thing wrong at a time; the world
records each request so a test can assert what the flow asked for and in which order.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import attrs

from mcp_sansio.auth import (
    Action,
    Authorized,
    ClientConfig,
    HTTPRequest,
    HTTPResponse,
    OAuthClientFlow,
    UserAuthorization,
)

SERVER = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"
REDIRECT = "http://127.0.0.1:33418/callback"


def counter_entropy() -> Callable[[int], bytes]:
    """Deterministic 'randomness' for tests: distinct bytes on every call."""
    state = {"n": 0}

    def entropy(n: int) -> bytes:
        state["n"] += 1
        return hashlib.sha256(str(state["n"]).encode()).digest()[:n].ljust(n, b"\0")

    return entropy


def json_response(doc: Any, status: int = 200) -> HTTPResponse:
    return HTTPResponse(status, (("Content-Type", "application/json"),),
                        json.dumps(doc).encode())


@attrs.define
class World:
    issuer: str = ISSUER
    server: str = SERVER
    prm: dict[str, Any] = attrs.field(factory=dict)
    asm: dict[str, Any] = attrs.field(factory=dict)
    #: URL -> response overriding the defaults (for broken servers).
    overrides: dict[str, HTTPResponse] = attrs.field(factory=dict)
    requests: list[HTTPRequest] = attrs.field(factory=list)
    #: ``iss`` the fake authorization endpoint puts on its redirect (None: leave it out;
    #: "issuer": this world's issuer).
    redirect_iss: str | None = "issuer"
    token_lifetime: int = 3600
    issued: int = 0
    registered: list[dict[str, Any]] = attrs.field(factory=list)
    codes: dict[str, dict[str, str]] = attrs.field(factory=dict)
    refresh_tokens: set[str] = attrs.field(factory=set)
    token_requests: list[dict[str, str]] = attrs.field(factory=list)
    authorization_requests: list[dict[str, str]] = attrs.field(factory=list)
    #: access token -> the scope it was granted
    granted: dict[str, str] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if self.redirect_iss == "issuer":
            self.redirect_iss = self.issuer
        if not self.prm:
            self.prm = {"resource": self.server, "authorization_servers": [self.issuer],
                        "scopes_supported": ["mcp:read"]}
        if not self.asm:
            self.asm = {
                "issuer": self.issuer,
                "authorization_endpoint": self.issuer + "/authorize",
                "token_endpoint": self.issuer + "/token",
                "registration_endpoint": self.issuer + "/register",
                "code_challenge_methods_supported": ["S256"],
                "authorization_response_iss_parameter_supported": True,
            }

    def prm_url(self) -> str:
        parts = urlsplit(self.server)
        return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource" \
            f"{parts.path}"

    def challenge(self, scope: str | None = None, status: int = 401,
                  error: str | None = None, with_metadata: bool = True) -> HTTPResponse:
        params = []
        if error:
            params.append(f'error="{error}"')
        if scope:
            params.append(f'scope="{scope}"')
        if with_metadata:
            params.append(f'resource_metadata="{self.prm_url()}"')
        return HTTPResponse(status, (("WWW-Authenticate", "Bearer " + ", ".join(params)),))

    def answer(self, request: HTTPRequest) -> HTTPResponse:
        self.requests.append(request)
        if request.url in self.overrides:
            return self.overrides[request.url]
        parts = urlsplit(request.url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if request.url == self.prm_url():
            return json_response(self.prm)
        if origin == urlsplit(self.issuer).scheme + "://" + urlsplit(self.issuer).netloc:
            path = parts.path
            issuer_path = urlsplit(self.issuer).path.rstrip("/")
            if path in ("/.well-known/oauth-authorization-server" + issuer_path,):
                return json_response(self.asm)
            if request.method == "GET" and request.url.startswith(
                    str(self.asm.get("authorization_endpoint")) + "?"):
                # An authorization endpoint that approves at once and redirects back.
                query = parse_qs(urlsplit(request.url).query)
                back = self.authorize(UserAuthorization(
                    request.url, query["state"][0], query["redirect_uri"][0]))
                return HTTPResponse(302, (("Location", back),))
            if request.url == self.asm.get("token_endpoint"):
                return self._token(request)
            if request.url == self.asm.get("registration_endpoint"):
                doc = json.loads(request.body)
                self.registered.append(doc)
                return json_response({"client_id": f"client-{len(self.registered)}",
                                      **doc}, 201)
        return HTTPResponse(404)

    def authorize(self, action: UserAuthorization) -> str:
        """What a browser would come back with after the user approved."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(action.url).query).items()}
        self.authorization_requests.append(query)
        code = f"code-{len(self.codes) + 1}"
        self.codes[code] = query
        back = {"code": code, "state": query["state"]}
        if self.redirect_iss is not None:
            back["iss"] = self.redirect_iss
        return action.redirect_uri + "?" + urlencode(back)

    def _token(self, request: HTTPRequest) -> HTTPResponse:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        self.token_requests.append(form)
        if form.get("grant_type") == "authorization_code":
            asked = self.codes.pop(form.get("code", ""), None)
            if asked is None:
                return json_response({"error": "invalid_grant"}, 400)
            challenge = base64.urlsafe_b64encode(
                hashlib.sha256(form["code_verifier"].encode()).digest()).rstrip(b"=").decode()
            if challenge != asked["code_challenge"]:
                return json_response({"error": "invalid_grant"}, 400)
            scope = asked.get("scope")
        elif form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return json_response({"error": "invalid_grant"}, 400)
            scope = None
        else:
            return json_response({"error": "unsupported_grant_type"}, 400)
        self.issued += 1
        refresh = f"refresh-{self.issued}"
        self.refresh_tokens.add(refresh)
        doc: dict[str, Any] = {"access_token": f"access-{self.issued}", "token_type": "Bearer",
                               "expires_in": self.token_lifetime, "refresh_token": refresh}
        if scope:
            doc["scope"] = scope
        self.granted[doc["access_token"]] = scope or ""
        return json_response(doc)


def drive(flow: OAuthClientFlow, world: World, first: Action, now: float = 1000.0,
          limit: int = 200) -> Authorized:
    """Answer every action from ``world`` until the flow is done."""
    action = first
    for _ in range(limit):
        if isinstance(action, Authorized):
            return action
        if isinstance(action, HTTPRequest):
            action = flow.receive_response(world.answer(action), now)
        else:
            action = flow.receive_redirect(world.authorize(action), now)
    raise AssertionError("the flow did not finish")


def new_flow(world: World, **config: Any) -> OAuthClientFlow:
    return OAuthClientFlow(world.server, ClientConfig(REDIRECT, **config),
                           entropy=counter_entropy())
