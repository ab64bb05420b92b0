"""Per-tool scopes: a tool registered with ``scopes=`` needs them in the caller's token over
a protected HTTP server -- 403 ``insufficient_scope`` naming every scope the call needs
(the endpoint's and the tool's), on every runtime and in both eras; other tools, other
methods and servers without ``auth`` are unaffected."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_sansio.app.server import Server
from mcp_sansio.auth import AccessInfo, InvalidToken, ProtectedResource, parse_challenges
from tests.auth.test_auth_server import RUNTIMES, bearer, protected, serving, token
from tests.http_stories import SyncConn, tool_call
from tests.http_util import Harness, init_body


def scoped_server() -> Server:
    server = Server("scoped")

    @server.tool(scopes=["mcp:admin"])
    async def wipe() -> str:
        return "wiped"

    @server.tool()
    async def read() -> str:
        return "read"

    return server


def challenge(headers: dict[str, str]) -> dict[str, str]:
    (found,) = parse_challenges(headers["www-authenticate"])
    return dict(found.params)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_tool_needs_its_scopes(runtime: str) -> None:
    with serving(runtime, scoped_server(), auth=protected()) as port:
        conn = SyncConn(port)
        body, headers = tool_call("wipe", {})
        status, got, messages = conn.request(
            "POST", body, {**headers, **bearer(token(scope="mcp:read"))})
        assert status == 403
        params = challenge(got)
        assert params["error"] == "insufficient_scope"
        assert params["scope"] == "mcp:admin mcp:read"  # everything the call needs
        assert messages[0]["id"] == body["id"]  # the JSON-RPC error answers the request
        status, _, _ = conn.request(
            "POST", body, {**headers, **bearer(token(scope="mcp:read mcp:admin"))})
        assert status == 200
        body, headers = tool_call("read", {})  # a tool without scopes of its own
        status, _, _ = conn.request("POST", body, {**headers, **bearer(token(scope="mcp:read"))})
        assert status == 200
        conn.close()


def test_without_auth_tool_scopes_are_not_looked_at() -> None:
    with serving("threading", scoped_server()) as port:
        conn = SyncConn(port)
        body, headers = tool_call("wipe", {})
        status, _, _ = conn.request("POST", body, headers)
        assert status == 200
        conn.close()


class Tokens:
    def verify(self, token: str, now: float) -> AccessInfo:
        scopes = {"reader": {"mcp:read"}, "admin": {"mcp:read", "mcp:admin"}}.get(token)
        if scopes is None:
            raise InvalidToken("unknown token")
        return AccessInfo("ada", frozenset(scopes), claims={"iss": "https://as"})


def test_a_handshake_session_call_is_refused_and_the_session_lives_on() -> None:
    auth = ProtectedResource("http://localhost/mcp", ["https://as"], Tokens(),
                             required_scopes=["mcp:read"])
    needs: dict[str, Any] = {"wipe": ["mcp:admin"]}
    h = Harness(auth=auth, tool_scopes=needs.get)
    opened = h.conn().send(body=init_body(), headers=[("authorization", "Bearer reader")])
    session = [("mcp-session-id", opened.headers["mcp-session-id"]),
               ("mcp-protocol-version", "2025-11-25")]
    h.conn().send(body={"jsonrpc": "2.0", "method": "notifications/initialized"},
                  headers=[("authorization", "Bearer reader"), *session])
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "wipe", "arguments": {}}}
    refused = h.conn().send(body=call, headers=[("authorization", "Bearer reader"), *session])
    assert refused.status == 403
    assert challenge(refused.headers)["scope"] == "mcp:admin mcp:read"
    # a batch holding the call is refused whole (nothing of it served)
    batch = [call, {"jsonrpc": "2.0", "id": 8, "method": "ping"}]
    assert h.conn().send(body=batch, headers=[("authorization", "Bearer reader"),
                                              *session]).status == 403
    # stepped up: the same session, now allowed
    allowed = h.conn().send(body=call, headers=[("authorization", "Bearer admin"), *session])
    assert allowed.status == 200
    other = {**call, "id": 9, "params": {"name": "read", "arguments": {}}}
    assert h.conn().send(body=other, headers=[("authorization", "Bearer reader"),
                                              *session]).status == 200
