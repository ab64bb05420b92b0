"""A protected MCP server (``auth=`` a :class:`~mcp_sansio.auth.ProtectedResource`) on every
runtime (asyncio, trio, threads) over loopback, in both eras, with JWT access tokens judged
by :class:`~mcp_sansio.auth.jwt.JWTVerifier`: the metadata document at both well-known
paths, 401 with the challenge without a token or with a bad or expired one, 403
``insufficient_scope``, 400 for a token in the query string, the principal visible to a tool,
and a session that another principal's request cannot use (404)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import h11
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey
from mcp_sansio.adapters import threading as threading_adapter

from mcp_sansio.app.server import Server
from mcp_sansio.auth import ProtectedResource, parse_challenges
from mcp_sansio.auth.jwt import JWTVerifier
from tests.http_stories import SyncConn, asyncio_service, tool_call, trio_service
from tests.http_util import init_body
from tests.paths import ROOT

RUNTIMES = ["asyncio", "trio", "threading"]

ISSUER = "https://auth.example.com"
RESOURCE = "http://127.0.0.1/mcp"
PRM = "http://127.0.0.1/.well-known/oauth-protected-resource/mcp"
KEY = ECKey.generate_key("P-256", parameters={"kid": "k1", "alg": "ES256"})
OTHER_KEY = ECKey.generate_key("P-256", parameters={"kid": "k1", "alg": "ES256"})


def token(sub: str = "ada", scope: str = "mcp:read mcp:write", *, key: ECKey = KEY,
          **claims: Any) -> str:
    base: dict[str, Any] = {"iss": ISSUER, "aud": RESOURCE, "sub": sub, "scope": scope,
                            "exp": int(time.time()) + 3600, "client_id": "test-client"}
    base.update(claims)
    return jwt.encode({"alg": "ES256", "kid": key.kid}, base, key)


def protected(*, required: tuple[str, ...] = ("mcp:read",)) -> ProtectedResource:
    verifier = JWTVerifier({"keys": [KEY.as_dict(private=False)]}, issuer=ISSUER,
                           audience=RESOURCE)
    return ProtectedResource(RESOURCE, [ISSUER], verifier, scopes_supported=["mcp:read",
                             "mcp:write"], required_scopes=required)


@contextlib.contextmanager
def serving(runtime: str, server: Server, **options: Any) -> Iterator[int]:
    """``server`` over HTTP on ``runtime`` with ``options``: its port."""
    if runtime == "threading":
        with threading_adapter.start_http(server, **options) as service:
            yield service.port
        return
    with (asyncio_service if runtime == "asyncio" else trio_service)(server, **options) as url:
        yield int(url.rsplit(":", 1)[1].split("/")[0])


def whoami_server() -> Server:
    server = Server("protected")

    @server.tool()
    async def whoami(ctx: Any) -> str:
        auth = ctx.auth
        return json.dumps({"sub": auth.subject, "scopes": sorted(auth.scopes),
                           "client": auth.client_id, "iss": auth.claims["iss"]})

    return server


def bearer(tok: str) -> dict[str, str]:
    return {"authorization": f"Bearer {tok}"}


def challenge_of(headers: dict[str, str]) -> dict[str, str]:
    (challenge,) = parse_challenges(headers["www-authenticate"])
    assert challenge.scheme == "bearer"
    return dict(challenge.params)


def get(conn: SyncConn, path: str) -> tuple[int, dict[str, str], bytes]:
    conn.send("GET", None, None, path, "application/json")
    status, headers = conn.head()
    raw = b""
    while not isinstance(event := conn.next(), h11.EndOfMessage):
        raw += event.data
    conn.h11.start_next_cycle()
    return status, headers, raw


def whoami_text(messages: list[Any]) -> dict[str, Any]:
    (message,) = [m for m in messages if "result" in m or "error" in m]
    return dict(json.loads(message["result"]["content"][0]["text"]))


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_metadata_is_served_at_both_well_known_paths(runtime: str) -> None:
    with serving(runtime, whoami_server(), auth=protected()) as port:
        conn = SyncConn(port)
        for path in ("/.well-known/oauth-protected-resource/mcp",
                     "/.well-known/oauth-protected-resource"):
            status, headers, body = get(conn, path)
            assert status == 200, (path, body)
            assert headers["content-type"] == "application/json"
            doc = json.loads(body)
            assert doc["resource"] == RESOURCE
            assert doc["authorization_servers"] == [ISSUER]
            assert doc["scopes_supported"] == ["mcp:read", "mcp:write"]
            assert doc["bearer_methods_supported"] == ["header"]
        conn.close()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_refusals_carry_the_challenge_the_spec_describes(runtime: str) -> None:
    with serving(runtime, whoami_server(), auth=protected(required=("mcp:write",))) as port:
        conn = SyncConn(port)
        # no token: 401 naming the metadata and the scope needed (RFC 9728 section 5.1)
        status, headers, _ = conn.request("POST", init_body())
        assert status == 401
        params = challenge_of(headers)
        assert params == {"resource_metadata": PRM, "scope": "mcp:write"}
        # a bad signature, an expired token, a token for another resource: invalid_token
        for bad in (token(key=OTHER_KEY), token(exp=int(time.time()) - 3600),
                    token(aud="http://elsewhere.example/mcp"), "not-a-jwt"):
            status, headers, _ = conn.request("POST", init_body(), bearer(bad))
            assert status == 401, bad
            assert challenge_of(headers)["error"] == "invalid_token"
        # too little scope: 403 insufficient_scope with the scopes needed (RFC 6750 3.1)
        status, headers, _ = conn.request("POST", init_body(), bearer(token(scope="mcp:read")))
        assert status == 403
        params = challenge_of(headers)
        assert params["error"] == "insufficient_scope"
        assert params["scope"] == "mcp:write"
        assert params["resource_metadata"] == PRM
        conn.close()
        # a token in the query string is refused even with a good one in the header
        conn = SyncConn(port)
        conn.send("POST", init_body(), bearer(token()),
                  f"/mcp?access_token={token()}")
        status, headers = conn.head()
        assert status == 400
        assert challenge_of(headers)["error"] == "invalid_request"
        conn.close()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_handshake_session_is_bound_to_its_principal(runtime: str) -> None:
    with serving(runtime, whoami_server(), auth=protected()) as port:
        conn = SyncConn(port)
        ada = bearer(token("ada"))
        status, headers, _ = conn.request("POST", init_body(), ada)
        assert status == 200
        session = {"mcp-session-id": headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-11-25"}
        status, _, _ = conn.request("POST", {"jsonrpc": "2.0",
                                             "method": "notifications/initialized"},
                                    {**ada, **session})
        assert status == 202
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "whoami", "arguments": {}}}
        status, _, messages = conn.request("POST", call, {**ada, **session})
        assert status == 200
        assert whoami_text(messages) == {"sub": "ada", "scopes": ["mcp:read", "mcp:write"],
                                         "client": "test-client", "iss": ISSUER}
        # bob holds a good token but not this session: as if it did not exist
        bob = bearer(token("bob"))
        status, _, _ = conn.request("POST", {**call, "id": 3}, {**bob, **session})
        assert status == 404
        conn.send("DELETE", None, {**bob, **session})
        status, _ = conn.head()
        assert status == 404
        conn.close()
        conn = SyncConn(port)
        # ... and ada's session lives on
        status, _, messages = conn.request("POST", {**call, "id": 4}, {**ada, **session})
        assert status == 200 and whoami_text(messages)["sub"] == "ada"
        # a session id without any token is challenged, not looked up
        status, headers, _ = conn.request("POST", {**call, "id": 5}, session)
        assert status == 401 and "resource_metadata" in challenge_of(headers)
        conn.close()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_stateless_requests_carry_their_own_token(runtime: str) -> None:
    with serving(runtime, whoami_server(), auth=protected()) as port:
        conn = SyncConn(port)
        body, headers = tool_call("whoami", {})
        status, got, _ = conn.request("POST", body, headers)
        assert status == 401
        assert challenge_of(got)["scope"] == "mcp:read"
        for sub in ("ada", "bob"):
            status, _, messages = conn.request(
                "POST", body, {**headers, **bearer(token(sub, scope="mcp:read"))})
            assert status == 200
            assert whoami_text(messages)["sub"] == sub
        conn.close()


def test_the_protecting_example_prints_what_the_page_shows() -> None:
    import subprocess
    import sys

    root = ROOT
    page = (root / "docs" / "authorization.rst").read_text()
    script = root / "docs" / "examples" / "protected_server.py"
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            check=True, cwd=script.parent, timeout=120)
    shown = page.split("``python docs/examples/protected_server.py`` prints:\n\n"
                       ".. code-block:: text\n", 1)[1]
    expected = [line.strip() for line in shown.strip("\n").split("\n\n", 1)[0].splitlines()]
    assert result.stdout.splitlines() == expected


def test_a_plain_def_handler_on_threads_sees_the_principal_too() -> None:
    server = Server("protected-sync")

    @server.tool()
    def whoami(ctx: Any) -> str:  # runs on a worker thread with a ThreadContext
        return json.dumps({"sub": ctx.auth.subject, "scopes": sorted(ctx.auth.scopes),
                           "client": ctx.auth.client_id, "iss": ctx.auth.claims["iss"]})

    with serving("threading", server, auth=protected()) as port:
        conn = SyncConn(port)
        body, headers = tool_call("whoami", {})
        status, _, messages = conn.request("POST", body, {**headers, **bearer(token("cy"))})
        assert status == 200
        assert whoami_text(messages)["sub"] == "cy"
        conn.close()


def test_without_auth_there_is_no_principal_and_no_metadata() -> None:
    server = Server("open")

    @server.tool()
    async def whoami(ctx: Any) -> str:
        return json.dumps({"auth": repr(ctx.auth)})

    with serving("asyncio", server) as port:
        conn = SyncConn(port)
        body, headers = tool_call("whoami", {})
        status, _, messages = conn.request("POST", body, {**headers, **bearer(token())})
        assert status == 200 and whoami_text(messages) == {"auth": "None"}
        status, _, _ = get(conn, "/.well-known/oauth-protected-resource/mcp")
        assert status == 404
        conn.close()
