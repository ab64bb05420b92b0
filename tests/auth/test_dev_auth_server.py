"""The development authorization server: its sans-IO logic answers our OAuth client flow
(registration, PKCE, refresh, client credentials, refusals), the served one drives the OAuth
client end to end against our protected server on every runtime -- including a step-up the
authorization server refuses, whose error says why -- and the command prints its issuer,
clients and tokens and stops on SIGTERM with status 0."""

from __future__ import annotations

import base64
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from joserfc.jwk import ECKey
from mcp_sansio.adapters.asyncio import Server
from mcp_sansio.adapters.auth import MemoryStorage, OAuth, follow_redirect_sync
from mcp_sansio.adapters.testing_auth import DevAuthServer

from mcp_sansio.auth import (
    AuthorizationDenied,
    Authorized,
    ClientConfig,
    HTTPRequest,
    OAuthClientFlow,
    ProtectedResource,
    UserAuthorization,
)
from mcp_sansio.testing.auth_server import AuthorizationServer
from tests.auth.test_auth_server import serving
from tests.auth_world import counter_entropy

ISSUER = "http://127.0.0.1:9000"
RESOURCE = "http://127.0.0.1:9001/mcp"
REDIRECT = "http://127.0.0.1:9/callback"
WAIT = 60.0


def logic(**options: Any) -> AuthorizationServer:
    key = ECKey.generate_key("P-256", parameters={"kid": "k1", "alg": "ES256"})
    return AuthorizationServer(ISSUER, key.as_dict(private=True), counter_entropy(),
                               **options)


def challenge(scope: str = "mcp:read") -> Any:
    from mcp_sansio.auth import HTTPResponse
    metadata = "http://127.0.0.1:9001/.well-known/oauth-protected-resource/mcp"
    return HTTPResponse(401, (("WWW-Authenticate",
                               f'Bearer scope="{scope}", resource_metadata="{metadata}"'),))


def drive(server: AuthorizationServer, flow: OAuthClientFlow, scope: str = "mcp:read",
          now: float = 1000.0) -> Authorized:
    """Our client flow against the logic; the protected resource's metadata answered here."""
    from mcp_sansio.auth import HTTPResponse
    action: Any = flow.start(now, challenge(scope))
    for _ in range(50):
        if isinstance(action, Authorized):
            return action
        if isinstance(action, UserAuthorization):
            back = server.handle(HTTPRequest("GET", action.url), now)
            action = flow.receive_redirect(back.header("Location") or "", now)
        elif action.url.startswith(ISSUER):
            action = flow.receive_response(server.handle(action, now), now)
        else:  # the protected resource's metadata document
            doc = {"resource": RESOURCE, "authorization_servers": [ISSUER]}
            action = flow.receive_response(HTTPResponse(200, (), json.dumps(doc).encode()),
                                           now)
    raise AssertionError("the flow did not finish")


def new_flow() -> OAuthClientFlow:
    return OAuthClientFlow(RESOURCE, ClientConfig(REDIRECT, request_offline_access=False),
                           entropy=counter_entropy())


def test_the_client_flow_gets_a_token_the_verifier_accepts_and_refreshes_it() -> None:
    server = logic()
    flow = new_flow()
    tokens = drive(server, flow).tokens
    info = server.verifier(RESOURCE).verify(tokens.access_token, 1001.0)
    assert (info.subject, info.scopes, info.client_id) == (
        "dev-user", frozenset({"mcp:read"}), next(iter(server.clients)))
    # Refresh (rotated: the old refresh token is spent).
    form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token,
            "client_id": next(iter(server.clients))}
    post = HTTPRequest("POST", ISSUER + "/token", (), urlencode(form).encode())
    assert server.handle(post, 2000.0).status == 200
    again = server.handle(post, 2000.0)
    assert (again.status, json.loads(again.body)["error"]) == (400, "invalid_grant")


def test_a_scope_it_does_not_grant_is_refused_and_the_error_says_why() -> None:
    with pytest.raises(AuthorizationDenied) as caught:
        drive(logic(), new_flow(), scope="mcp:read mcp:admin")
    assert caught.value.error == "invalid_scope"
    assert "mcp:admin" in str(caught.value)


def test_client_credentials_for_a_pre_registered_confidential_client() -> None:
    server = logic()
    client = server.register(confidential=True, client_id="ci")
    basic = base64.b64encode(f"ci:{client.secret}".encode()).decode()
    form = urlencode({"grant_type": "client_credentials", "scope": "mcp:write",
                      "resource": RESOURCE}).encode()
    answer = server.handle(HTTPRequest("POST", ISSUER + "/token",
                                       (("Authorization", f"Basic {basic}"),), form), 1000.0)
    token = json.loads(answer.body)["access_token"]
    info = server.verifier(RESOURCE).verify(token, 1000.0)
    assert (info.subject, info.scopes) == ("ci", frozenset({"mcp:write"}))
    wrong = server.handle(HTTPRequest("POST", ISSUER + "/token", (), form + b"&client_id=ci"
                                      b"&client_secret=nope"), 1000.0)
    assert (wrong.status, json.loads(wrong.body)["error"]) == (401, "invalid_client")
    public = server.register([REDIRECT])
    refused = server.handle(HTTPRequest("POST", ISSUER + "/token", (), form
                                        + f"&client_id={public.client_id}".encode()), 1000.0)
    assert json.loads(refused.body)["error"] == "unauthorized_client"


def test_asking_which_user_approves_and_a_wrong_verifier() -> None:
    server = logic(user=None)
    client = server.register([REDIRECT])
    query = {"response_type": "code", "client_id": client.client_id, "redirect_uri": REDIRECT,
             "state": "s", "code_challenge": "x" * 43, "code_challenge_method": "S256"}
    page = server.handle(HTTPRequest("GET", ISSUER + "/authorize?" + urlencode(query)), 0.0)
    assert page.status == 200 and b"Approve" in page.body
    ticket = page.body.decode().split('name="ticket" value="')[1].split('"')[0]
    back = server.handle(HTTPRequest("GET", ISSUER + "/approve?" + urlencode(
        {"ticket": ticket, "user": "ada", "decision": "approve"})), 0.0)
    got = parse_qs(urlsplit(back.header("Location") or "").query)
    assert got["state"] == ["s"] and got["iss"] == [ISSUER]
    form = {"grant_type": "authorization_code", "code": got["code"][0], "code_verifier": "y",
            "client_id": client.client_id, "redirect_uri": REDIRECT}
    refused = server.handle(HTTPRequest("POST", ISSUER + "/token", (),
                                        urlencode(form).encode()), 0.0)
    assert "code_verifier does not match" in json.loads(refused.body)["error_description"]
    # An unregistered redirect URI is never redirected to.
    stray = server.handle(HTTPRequest("GET", ISSUER + "/authorize?" + urlencode(
        {**query, "redirect_uri": "http://evil.example/cb"})), 0.0)
    assert stray.status == 400 and stray.header("Location") is None


@pytest.mark.parametrize("body", [b"", b"{", b"[]", b'{"redirect_uris": 3}', b"\xff"])
def test_garbage_is_answered_never_raised(body: bytes) -> None:
    server = logic()
    for path in ("/register", "/token", "/authorize", "/nope"):
        answer = server.handle(HTTPRequest("POST", ISSUER + path, (), body), 0.0)
        assert 400 <= answer.status < 500


# -- served: our OAuth client, end to end, on every runtime ----------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def whoami() -> Server:
    server = Server("protected")

    @server.tool()
    async def who(ctx: Any) -> str:
        return f"{ctx.auth.subject} {' '.join(sorted(ctx.auth.scopes))}"

    @server.tool(scopes=["mcp:admin"])
    async def wipe() -> str:
        return "wiped"

    return server


@contextmanager
def protected_service(runtime: str, auth_server: DevAuthServer) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    protection = ProtectedResource(url, [auth_server.issuer], auth_server.logic.verifier(url),
                                   scopes_supported=["mcp:read", "mcp:write"],
                                   required_scopes=["mcp:read"])
    with serving(runtime, whoami(), auth=protection, port=port):
        yield url


def call(runtime: str, url: str, auth: OAuth, tool: str) -> str:
    if runtime == "threading":
        from mcp_sansio.adapters.threading import connect_http

        with connect_http(url, auth=auth, request_timeout=WAIT) as client:
            return str(client.call_tool(tool, {})["content"][0]["text"])

    async def body(connect: Any) -> str:
        async with connect(url, auth=auth, request_timeout=WAIT) as client:
            return str((await client.call_tool(tool, {}))["content"][0]["text"])

    if runtime == "trio":
        import trio
        from mcp_sansio.adapters.trio import connect_http as connect_trio

        return str(trio.run(body, connect_trio))
    import asyncio

    from mcp_sansio.adapters.asyncio import connect_http as connect_aio

    return asyncio.run(asyncio.wait_for(body(connect_aio), WAIT))


@pytest.mark.parametrize("runtime", ["asyncio", "trio", "threading"])
def test_our_oauth_client_end_to_end(runtime: str) -> None:
    with DevAuthServer(user="ada") as auth_server, protected_service(runtime,
                                                                     auth_server) as url:
        auth = OAuth(follow_redirect_sync, redirect_uri=REDIRECT, storage=MemoryStorage())
        assert call(runtime, url, auth, "who") == "ada mcp:read"
        # The step-up the authorization server refuses: the error says why.
        with pytest.raises(AuthorizationDenied) as caught:
            call(runtime, url, auth, "wipe")
    assert caught.value.error == "invalid_scope"
    assert "not granted here: mcp:admin" in str(caught.value)


def test_the_command_prints_its_issuer_clients_and_tokens_and_stops_on_sigterm() -> None:
    resource = "http://127.0.0.1:9/mcp"
    proc = subprocess.Popen([sys.executable, "-P", "-m", "mcp_sansio", "dev-auth-server",
                             "--client", "ci", "--token", resource, "--user", "ada"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        issuer = proc.stdout.readline().strip()
        client = proc.stdout.readline().split()
        token = proc.stdout.readline().split()
        assert issuer.startswith("http://127.0.0.1:") and client[:3] == ["client", "ci",
                                                                          "secret"]
        assert token[:2] == ["token", resource]
        from mcp_sansio.adapters.auth.flow import fetch_sync
        answer = fetch_sync(HTTPRequest("GET", issuer + "/jwks"))
        from mcp_sansio.auth.jwt import JWTVerifier
        verifier = JWTVerifier(json.loads(answer.body), issuer=issuer, audience=resource)
        assert verifier.verify(token[2], time.time()).subject == "ada"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 0 and "Traceback" not in err, err
