"""Errors that say why: an HTTP refusal's reason (the ``WWW-Authenticate`` challenge's
``error``, the JSON-RPC error or body text the server sent) reaches the client's exception,
read from a real server's answers -- our own HTTP server protected with a JWT verifier
(expired, wrong audience, bad signature, garbage token, scope step-up refused)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_sansio.adapters import errors
from mcp_sansio.adapters.asyncio import Server
from mcp_sansio.adapters.threading import connect_http

from mcp_sansio.auth import LimitExceeded, TokenError
from mcp_sansio.auth import _rules as rules
from mcp_sansio.http._refusal import MAX_REASON, explain
from tests.auth.test_auth_server import OTHER_KEY, protected, serving, token
from tests.auth_world import World, drive, json_response, new_flow


def scoped() -> Server:
    server = Server("scoped")

    @server.tool(scopes=["mcp:admin"])
    async def wipe() -> str:
        return "wiped"

    return server


def refused(port: int, tok: str) -> errors.HTTPTransportError:
    headers = {"Authorization": f"Bearer {tok}"}
    with pytest.raises(errors.HTTPTransportError) as caught, connect_http(
            f"http://127.0.0.1:{port}/mcp", headers=headers):
        pass
    return caught.value


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("expired", {"exp": int(time.time()) - 3600}, "bad claim 'exp'"),
    ("wrong audience", {"aud": "https://elsewhere.example/mcp"}, "not for this resource"),
    ("bad signature", {"key": OTHER_KEY}, "bad token"),
]


@pytest.mark.parametrize(("name", "claims", "said"), CASES, ids=[c[0] for c in CASES])
def test_a_refused_token_says_why(name: str, claims: dict[str, Any], said: str) -> None:
    with serving("threading", scoped(), auth=protected()) as port:
        error = refused(port, token(**claims))
    assert error.status == 401
    assert error.error == "invalid_token"
    assert error.rpc_error is not None and said in error.rpc_error[1]
    assert said in str(error) and "invalid_token" in str(error) and "401" in str(error)


def test_a_garbage_token_says_why() -> None:
    # (h11 hands the control character to the authorization check, which says why)
    with serving("threading", scoped(), auth=protected(), wire="h11") as port:
        error = refused(port, "not-a-jwt\x1b[31m")
    assert error.status in (400, 401)
    assert error.error is not None
    assert "\x1b" not in str(error)


def test_a_header_the_parser_refuses_says_why() -> None:
    # llhttp refuses a control character in a field value itself (RFC 9110 section 5.5
    # allows either): its 400 is not JSON-RPC, the client then tries the legacy transport,
    # and when that fails too the initialize refusal is what the error says. (The wire is
    # the fast extra's: an install without it, as the wheel's smoke run, has no llhttp.)
    pytest.importorskip("httptools")
    with serving("threading", scoped(), auth=protected(), wire="httptools") as port:
        error = refused(port, "not-a-jwt\x1b[31m")
    assert error.status == 400
    assert "Invalid header value char" in str(error) and "\x1b" not in str(error)


def test_a_refused_step_up_names_the_scope() -> None:
    # A tool's scopes: the 403 challenge answers the call; without OAuth to step up, the
    # call fails with the challenge and the server's JSON-RPC error.
    headers = {"Authorization": f"Bearer {token(scope='mcp:read')}"}
    with serving("threading", scoped(), auth=protected()) as port, connect_http(
            f"http://127.0.0.1:{port}/mcp", headers=headers) as client:
        with pytest.raises(errors.HTTPTransportError) as caught:
            client.call_tool("wipe", {})
        client.list_tools()  # the session lives on
    error = caught.value
    assert (error.status, error.error, error.method) == (403, "insufficient_scope", "tools/call")
    assert "requires scope mcp:admin mcp:read" in str(error)


def test_a_plain_text_body_is_kept_bounded_and_printable() -> None:
    why = explain((), b"upstream \x00 down " + b"x" * 5000)
    assert why.text is not None and why.text.startswith("upstream ? down")
    assert len(why.text) <= MAX_REASON + 3
    why = explain((("WWW-Authenticate", 'Bearer error="invalid_token", '
                    'error_description="expired"'),), b"")
    assert why.summary() == "invalid_token (expired)"
    why = explain((), b'{"error": "invalid_grant", "error_description": "code used"}')
    assert (why.error, why.error_description) == ("invalid_grant", "code used")


@given(st.binary(max_size=400), st.text(max_size=200))
def test_explain_never_raises_and_stays_printable(body: bytes, header: str) -> None:
    summary = explain((("www-authenticate", header),), body).summary()
    assert all(c.isprintable() for c in summary)


def test_an_oauth_flow_that_gives_up_names_the_last_answer_and_its_endpoint() -> None:
    world = World()
    flow = new_flow(world)
    forbidden = world.challenge(scope="b", status=403, error="insufficient_scope")
    for _ in range(rules.MAX_CONSECUTIVE_CHALLENGES):
        drive(flow, world, flow.start(1000.0, forbidden))
    with pytest.raises(LimitExceeded) as caught:
        flow.start(1000.0, forbidden)
    assert f"the last answer: HTTP 403 from {world.server}: insufficient_scope" in str(
        caught.value)


def test_a_refused_token_request_names_the_oauth_error_and_its_description() -> None:
    world = World()
    world.overrides[world.asm["token_endpoint"]] = json_response(
        {"error": "invalid_client", "error_description": "client secret \x07 wrong"}, 401)
    flow = new_flow(world)
    with pytest.raises(TokenError) as caught:
        drive(flow, world, flow.start(1000.0, world.challenge()))
    assert caught.value.error == "invalid_client"
    assert "invalid_client (client secret ? wrong)" in str(caught.value)
    assert caught.value.url == world.asm["token_endpoint"]


@pytest.mark.parametrize("runtime", ["asyncio", "trio", "threading"])
def test_a_port_in_use_is_a_clear_error_from_the_library(runtime: str) -> None:
    import errno
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(errors.ListenError) as caught:
            listen_on(runtime, port)
    assert caught.value.errno == errno.EADDRINUSE
    assert isinstance(caught.value, OSError)
    assert str(caught.value) == f"cannot listen on 127.0.0.1:{port}: address already in use"


def listen_on(runtime: str, port: int) -> None:
    """Start (and stop) an HTTP server on ``runtime`` at 127.0.0.1:``port``."""
    if runtime == "threading":
        from mcp_sansio.adapters import threading as threads

        with threads.start_http(scoped(), port=port):
            return

    async def main(adapter: Any) -> None:
        async with adapter.start_http(scoped(), port=port):
            return

    if runtime == "trio":
        import trio
        from mcp_sansio.adapters import trio as trio_adapter

        trio.run(main, trio_adapter)
        return
    import asyncio

    from mcp_sansio.adapters import asyncio as aio

    asyncio.run(main(aio))
