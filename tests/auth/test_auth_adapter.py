"""adapters/auth/flow.py: the flow's requests carried over real loopback sockets, the
loopback redirect listener, and the file storage."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import h11
import pytest
from mcp_sansio.adapters.auth.flow import (
    FileStorage,
    LoopbackRedirect,
    fetch,
    follow_redirect,
    run_flow,
)

from mcp_sansio.auth import (
    AuthFlowError,
    ClientConfig,
    ClientCredentials,
    HTTPRequest,
    HTTPResponse,
    LimitExceeded,
    OAuthClientFlow,
    Tokens,
)
from tests.auth_world import REDIRECT, World, counter_entropy

WAIT = 60.0  # generous: the machine is shared


@asynccontextmanager
async def serve(answer: type[World] | None = None,
                raw: bytes | None = None) -> AsyncIterator[tuple[int, list[HTTPRequest]]]:
    """A loopback HTTP server: each request becomes an HTTPRequest answered by ``answer``
    (a World whose URLs are rewritten to this port), or ``raw`` bytes written as they are."""
    seen: list[HTTPRequest] = []
    holder: dict[str, World | str] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        body = b""
        head = None
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await reader.read(65536))
                    continue
                if isinstance(event, h11.Request):
                    head = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
            if raw is not None:
                writer.write(raw)
                await writer.drain()
                return
            assert head is not None
            world = holder["world"]
            assert isinstance(world, World)
            headers = tuple((k.decode(), v.decode()) for k, v in head.headers)
            request = HTTPRequest(head.method.decode(), f"{holder['origin']}{head.target.decode()}",
                                  headers, body)
            seen.append(request)
            response = world.answer(request)
            out = [(k, v) for k, v in response.headers]
            out.append(("Content-Length", str(len(response.body))))
            writer.write(conn.send(h11.Response(status_code=response.status, headers=out)))
            writer.write(conn.send(h11.Data(data=response.body)) or b"")
            writer.write(conn.send(h11.EndOfMessage()) or b"")
            await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    if answer is not None:
        origin = f"http://127.0.0.1:{port}"
        world = World(issuer=origin + "/as", server=origin + "/mcp")
        holder["world"] = world
        holder["origin"] = origin
    try:
        yield port, seen
    finally:
        server.close()
        await server.wait_closed()


def run(coro: object) -> object:
    return asyncio.run(asyncio.wait_for(coro, WAIT))  # type: ignore[arg-type]


def test_the_flow_over_real_sockets_with_an_approving_server() -> None:
    async def main() -> tuple[Tokens, list[HTTPRequest]]:
        async with serve(World) as (port, seen):
            origin = f"http://127.0.0.1:{port}"
            flow = OAuthClientFlow(origin + "/mcp", ClientConfig(REDIRECT),
                                   entropy=counter_entropy())
            challenge = HTTPResponse(401, (("WWW-Authenticate", "Bearer"),))
            tokens = await run_flow(flow, challenge, follow_redirect)
            return tokens, seen

    tokens, seen = run(main())  # type: ignore[misc]
    assert tokens.access_token == "access-1"
    assert [r.method for r in seen] == ["GET", "GET", "POST", "GET", "POST"]
    assert seen[1].url.endswith("/.well-known/oauth-authorization-server/as")


def test_fetch_stops_reading_past_the_limit_and_names_unreachable_servers() -> None:
    async def main() -> None:
        big = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000
        async with serve(raw=big) as (port, _):
            response = await fetch(HTTPRequest("GET", f"http://127.0.0.1:{port}/",
                                               max_response_bytes=1000))
            assert response.status == 200 and len(response.body) == 1001
        async with serve(raw=b"garbage\r\n\r\n") as (port, _):
            with pytest.raises(AuthFlowError) as caught:
                await fetch(HTTPRequest("GET", f"http://127.0.0.1:{port}/x"))
            assert caught.value.step == "transport"
        with pytest.raises(AuthFlowError, match="transport"):
            await fetch(HTTPRequest("GET", f"http://127.0.0.1:{port}/gone"), timeout=WAIT)

    run(main())


def test_an_oversized_metadata_document_over_the_wire_is_a_named_error() -> None:
    async def main() -> None:
        body = b"{" + b" " * (2 << 20) + b"}"
        raw = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        async with serve(raw=raw) as (port, _):
            flow = OAuthClientFlow(f"http://127.0.0.1:{port}/mcp", ClientConfig(REDIRECT),
                                   entropy=counter_entropy())
            with pytest.raises(LimitExceeded) as caught:
                await run_flow(flow, HTTPResponse(401), follow_redirect)
            assert caught.value.step == "protected-resource-metadata"

    run(main())


def test_the_loopback_listener_takes_the_browser_back() -> None:
    async def main() -> str:
        async def browser(url: str) -> None:
            # The "browser": the authorization server sends it to the redirect URI.
            asyncio.get_running_loop().create_task(fetch(HTTPRequest(
                "GET", listener.redirect_uri + "?code=abc&state=xyz")))

        async with LoopbackRedirect(browser) as listener:
            assert listener.redirect_uri.startswith("http://127.0.0.1:")
            from mcp_sansio.auth import UserAuthorization
            return await listener(UserAuthorization("https://as/authorize?x", "xyz",
                                                    listener.redirect_uri))

    got = run(main())
    assert isinstance(got, str) and got.endswith("/callback?code=abc&state=xyz")


def test_the_loopback_listener_gives_up() -> None:
    async def main() -> None:
        async with LoopbackRedirect(lambda url: None, timeout=0.01) as listener:
            from mcp_sansio.auth import UserAuthorization
            with pytest.raises(AuthFlowError, match="did not come back"):
                await listener(UserAuthorization("https://as/a", "s", listener.redirect_uri))

    run(main())


def test_file_storage_persists_privately(tmp_path: Path) -> None:
    path = tmp_path / "dir" / "tokens.json"
    storage = FileStorage(path)
    tokens = Tokens("at", "https://as", "https://mcp/x", "https://as/token", expires_at=5.0,
                    refresh_token="rt", scope="a b")
    storage.set_client("https://as", ClientCredentials("id", "secret"))
    storage.set_tokens("https://as", "https://mcp/x", tokens)
    storage.set_issuer("https://mcp/x", "https://as")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = FileStorage(path)
    assert again.get_tokens("https://as", "https://mcp/x") == tokens
    assert again.get_client("https://as") == ClientCredentials("id", "secret")
    assert again.get_issuer("https://mcp/x") == "https://as"
    assert again.get_client("https://other") is None
    again.set_tokens("https://as", "https://mcp/x", None)
    assert FileStorage(path).get_tokens("https://as", "https://mcp/x") is None
    path.write_text("not json at all")
    with pytest.raises(ValueError):
        FileStorage(path)


# -- the HTTP client's authorization hook (adapters/auth/session.py) ---------------------------


@pytest.mark.parametrize(("status", "challenge", "is_challenge"), [
    (401, 'Bearer resource_metadata="https://mcp/x"', True),
    (401, None, True),  # no header: the flow falls back to the well-known URLs
    (403, 'Bearer error="insufficient_scope", scope="a b"', True),  # step-up
    (403, 'Bearer error="invalid_token"', False),  # a refusal the flow cannot fix
    (403, 'Bearer error="invalid_token", error_description="not insufficient_scope"', False),
    (403, 'Basic realm="insufficient_scope"', False),  # not a Bearer challenge
    (403, None, False),
    (404, None, False),
    (500, 'Bearer error="insufficient_scope"', False),
    (None, None, False),  # unreachable
])
def test_which_failures_are_challenges(status: int | None, challenge: str | None,
                                       is_challenge: bool) -> None:
    from mcp_sansio.adapters.auth.session import challenge_of

    from mcp_sansio.app.http_client import HTTPTransportError

    headers = (("www-authenticate", challenge),) if challenge else ()
    found = challenge_of(HTTPTransportError("tools/call", "refused", status, headers=headers))
    assert (found is not None) == is_challenge
    if found is not None:
        assert found.status == status and found.header("WWW-Authenticate") == challenge
    assert challenge_of(ConnectionResetError()) is None


class _FakeHTTP:
    def __init__(self) -> None:
        self.extra_headers: list[tuple[str, str]] = [("X-Other", "1")]


def test_the_session_auth_keeps_one_current_authorization_header() -> None:
    from mcp_sansio.adapters.auth.session import OAuth, SessionAuth

    world = World()

    async def fetcher(request: HTTPRequest) -> HTTPResponse:
        return world.answer(request)

    async def user_step(action: Any) -> str:
        return await follow_redirect(action, fetcher=fetcher)

    http = _FakeHTTP()
    auth = SessionAuth(OAuth(user_step, redirect_uri=REDIRECT, entropy=counter_entropy()),
                       world.server)
    auth.install(http)
    assert http.extra_headers == [("X-Other", "1")]  # nothing stored yet

    async def main() -> None:
        import mcp_sansio.adapters.auth.session as hook

        real = hook.fetch
        hook.fetch = lambda request, **_: fetcher(request)  # type: ignore[assignment]
        try:
            for _ in range(2):
                await auth.run_async(world.challenge(scope="files:read"), asyncio.to_thread,
                                     native_fetch=True)
        finally:
            hook.fetch = real

    run(main())
    assert auth.generation == 2
    assert ("X-Other", "1") in http.extra_headers
    assert [k for k, _ in http.extra_headers].count("Authorization") == 1
    assert dict(http.extra_headers)["Authorization"] == (
        auth.tokens.authorization_header()[1] if auth.tokens else None)
