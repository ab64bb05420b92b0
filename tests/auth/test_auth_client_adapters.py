"""``connect_http(url, auth=OAuth(...))`` on asyncio, trio and threads against a protected
server: the official Python SDK's authorization server and OAuth-protected MCP server
(tests/peers/sdk_auth_server.py, a subprocess on 127.0.0.1), seen through a small proxy
that records what the client sent and can answer in the server's place (a 401 for an
expired token, a 403 ``insufficient_scope`` step-up, a plain failure).

Each test runs the same session body on the three runtimes: what it asserts is what the
client did on the wire (statuses seen, user steps, tokens stored), not timings.
"""

from __future__ import annotations

import http.client
import http.server
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from mcp_sansio.adapters import errors
from mcp_sansio.adapters.auth import (
    FileStorage,
    LoopbackListener,
    MemoryStorage,
    OAuth,
    default_token_path,
    follow_redirect_sync,
)

from mcp_sansio.auth import UserAuthorization
from tests.paths import PEERS

PEER = PEERS / "sdk_auth_server.py"
RUNTIMES = ["asyncio", "trio", "threads"]
WAIT = 120.0  # generous: the machine is shared


@pytest.fixture(scope="module")
def peer() -> Iterator[Proxy]:
    """The SDK's servers, protecting the proxy's URL (its protected-resource metadata names
    the proxy, so the resource the client asks for is the one it connects to)."""
    front = Proxy()
    proc = subprocess.Popen([sys.executable, str(PEER), front.url], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        front.upstream = urlsplit(url)
        yield front
    finally:
        front.close()
        proc.terminate()
        proc.wait(30)


class Proxy:
    """A threaded HTTP proxy in front of the SDK peer. ``answer`` may answer a POST in the
    server's place: it gets (authorization header, body) and returns (status, headers) or
    None to forward. A GET of the MCP endpoint (the standalone stream) is answered 405: the
    proxy does not carry streams, and the client does without one."""

    def __init__(self) -> None:
        self.upstream = urlsplit("http://127.0.0.1:9/mcp")  # set once the peer is up
        self.seen: list[tuple[str, int, str]] = []  # (method, status, authorization)
        self.answer: Callable[[str, bytes], tuple[int, list[tuple[str, str]]] | None] = (
            lambda auth, body: None)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == proxy.upstream.path:
                    self._reply(405, [], b"")
                else:
                    self._forward()  # the protected-resource metadata

            def do_DELETE(self) -> None:
                self._forward()

            def do_POST(self) -> None:
                self._forward()

            def _reply(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                proxy.seen.append((self.command, status, self.headers.get("Authorization", "")))
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                auth = self.headers.get("Authorization", "")
                if self.command == "POST":
                    mine = proxy.answer(auth, body)
                    if mine is not None:
                        self._reply(mine[0], mine[1], b"")
                        return
                up = http.client.HTTPConnection(proxy.upstream.hostname,
                                                proxy.upstream.port, timeout=WAIT)
                try:
                    headers = {k: v for k, v in self.headers.items()
                               if k.lower() not in ("host", "connection", "content-length")}
                    up.request(self.command, self.path, body=body or None, headers=headers)
                    resp = up.getresponse()
                    data = resp.read()
                    self._reply(resp.status, [
                        (k, v) for k, v in resp.getheaders()
                        if k.lower() not in ("content-length", "transfer-encoding",
                                             "connection")], data)
                finally:
                    up.close()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mcp"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def statuses(self) -> list[int]:
        return [status for method, status, _ in self.seen if method == "POST"]


@pytest.fixture
def proxy(peer: Proxy) -> Proxy:
    peer.seen.clear()
    peer.answer = lambda auth, body: None
    return peer


class Steps:
    """The user step, counted: the SDK's authorization server approves at once, so the
    step follows its redirect (what a user clicking "allow" would make the browser do)."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def __call__(self, action: UserAuthorization) -> str:
        self.urls.append(action.url)
        return follow_redirect_sync(action)


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def oauth(steps: Steps, clock: Clock | None = None, storage: Any = None) -> OAuth:
    return OAuth(steps, redirect_uri="http://127.0.0.1:9/callback",
                 storage=storage if storage is not None else MemoryStorage(),
                 clock=clock or time.time)


def session(runtime: str, url: str, auth: OAuth, calls: int = 1,
            between: Callable[[int], None] = lambda i: None) -> list[str]:
    """Connect on ``runtime`` and call the ``whoami`` tool ``calls`` times, running
    ``between(i)`` before call ``i``; the tool's answers."""
    def text(result: dict[str, Any]) -> str:
        return str(result["content"][0]["text"])

    if runtime == "threads":
        from mcp_sansio.adapters.threading import connect_http as connect_threads

        with connect_threads(url, auth=auth, request_timeout=WAIT) as client:
            out = []
            for i in range(calls):
                between(i)
                out.append(text(client.call_tool("whoami", {})))
            return out

    async def body(connect: Any) -> list[str]:
        async with connect(url, auth=auth, request_timeout=WAIT) as client:
            out = []
            for i in range(calls):
                between(i)
                out.append(text(await client.call_tool("whoami", {})))
            return out

    if runtime == "trio":
        import trio
        from mcp_sansio.adapters.trio import connect_http as connect_trio

        result: list[str] = trio.run(body, connect_trio)
        return result
    import asyncio

    from mcp_sansio.adapters.asyncio import connect_http as connect_asyncio

    return asyncio.run(body(connect_asyncio))


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_first_connect_runs_the_flow_then_the_token_is_reused(
        runtime: str, proxy: Proxy, tmp_path: Path) -> None:
    steps = Steps()
    storage = FileStorage(tmp_path / "tokens.json")
    auth = oauth(steps, storage=storage)
    assert session(runtime, proxy.url, auth, calls=2) == ["ada", "ada"]
    assert len(steps.urls) == 1  # one authorization
    posts = [(status, auth) for method, status, auth in proxy.seen if method == "POST"]
    # Without a token the server refused (the era probe, then initialize: a 401 does not
    # decide the era); with it every request was accepted.
    assert posts[0] == (401, "")
    assert all(status == 401 for status, auth in posts if not auth), posts
    assert all(status < 400 for status, auth in posts if auth), posts
    assert len([1 for status, auth in posts if auth]) >= 3  # initialize + the two calls
    # Token reused by a later process: a new OAuth over the same file asks no one.
    proxy.seen.clear()
    again = Steps()
    assert session(runtime, proxy.url, oauth(again, storage=FileStorage(storage.path))) == [
        "ada"]
    assert again.urls == []
    assert 401 not in proxy.statuses()
    assert (tmp_path / "tokens.json").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_tokens_are_refreshed_before_they_expire(runtime: str, proxy: Proxy) -> None:
    steps, clock, storage = Steps(), Clock(), MemoryStorage()
    auth = oauth(steps, clock, storage)
    tokens: list[str] = []

    def later(i: int) -> None:
        tokens.append(proxy.seen[-1][2])
        if i == 1:
            clock.offset = 7200.0  # the SDK's tokens last an hour

    assert session(runtime, proxy.url, auth, calls=2, between=later) == ["ada", "ada"]
    assert len(steps.urls) == 1  # refreshed, not authorized again
    # Refreshed before the server could refuse: no request with a token was refused.
    assert all(status < 400 for method, status, auth in proxy.seen if auth), proxy.seen
    assert proxy.seen[-1][2] != tokens[-1]  # the last call went with the new token


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_later_session_refreshes_stored_tokens_that_expired_before_connecting(
        runtime: str, proxy: Proxy) -> None:
    steps, clock, storage = Steps(), Clock(), MemoryStorage()
    assert session(runtime, proxy.url, oauth(steps, clock, storage)) == ["ada"]
    first = proxy.seen[-1][2]
    proxy.seen.clear()
    clock.offset = 7200.0  # the SDK's tokens last an hour
    assert session(runtime, proxy.url, oauth(steps, clock, storage)) == ["ada"]
    assert len(steps.urls) == 1  # refreshed, not authorized again
    posts = [(status, auth) for method, status, auth in proxy.seen if method == "POST"]
    assert all(status < 400 and auth and auth != first for status, auth in posts), posts


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_expired_token_refused_401_is_refreshed_and_the_call_retried(
        runtime: str, proxy: Proxy) -> None:
    steps = Steps()
    refused: list[str] = []

    def expire(i: int) -> None:
        if i == 1:
            token = proxy.seen[-1][2]
            resource_metadata = proxy.url.replace(
                "/mcp", "/.well-known/oauth-protected-resource/mcp")

            def answer(auth: str, body: bytes) -> tuple[int, list[tuple[str, str]]] | None:
                if auth == token:
                    refused.append(auth)
                    return 401, [("WWW-Authenticate", 'Bearer error="invalid_token", '
                                  f'resource_metadata="{resource_metadata}"')]
                return None
            proxy.answer = answer

    assert session(runtime, proxy.url, oauth(steps), calls=2, between=expire) == [
        "ada", "ada"]
    assert len(refused) == 1
    assert len(steps.urls) == 1  # the refresh token did it


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_403_insufficient_scope_steps_up_and_retries(runtime: str, proxy: Proxy) -> None:
    steps = Steps()

    def step_up(i: int) -> None:
        if i == 1:
            token = proxy.seen[-1][2]

            def answer(auth: str, body: bytes) -> tuple[int, list[tuple[str, str]]] | None:
                if auth == token and b"tools/call" in body:
                    return 403, [("WWW-Authenticate",
                                  'Bearer error="insufficient_scope", scope="user"')]
                return None
            proxy.answer = answer

    assert session(runtime, proxy.url, oauth(steps), calls=2, between=step_up) == [
        "ada", "ada"]
    assert 403 in proxy.statuses()
    assert len(steps.urls) == 2  # a new authorization for the wider scope
    assert "scope=user" in steps.urls[1]


def _always(status: int, headers: list[tuple[str, str]]) -> tuple[str, Callable[[], None]]:
    """A server answering every request ``status`` with ``headers``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _any(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_DELETE = _any

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
    return f"http://127.0.0.1:{server.server_address[1]}/mcp", stop


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_failing_authorization_server_is_a_clear_error(runtime: str) -> None:
    dead = f"http://127.0.0.1:{_dead_port()}/.well-known/oauth-protected-resource/mcp"
    url, stop = _always(401, [("WWW-Authenticate", f'Bearer resource_metadata="{dead}"')])
    steps = Steps()
    try:
        with pytest.raises(errors.AuthFlowError) as caught:
            session(runtime, url, oauth(steps))
    finally:
        stop()
    assert caught.value.step == "transport"
    assert caught.value.url == dead and dead in str(caught.value)
    assert steps.urls == []


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize(("status", "headers"), [
    (500, []),
    (403, [("WWW-Authenticate", 'Bearer error="invalid_token"')]),  # not a scope problem
])
def test_other_failures_stay_http_transport_errors(
        runtime: str, status: int, headers: list[tuple[str, str]]) -> None:
    url, stop = _always(status, headers)
    steps = Steps()
    try:
        with pytest.raises(errors.HTTPTransportError) as caught:
            session(runtime, url, oauth(steps))
    finally:
        stop()
    assert caught.value.status == status
    assert steps.urls == []
    if headers:
        assert caught.value.header("www-authenticate") == headers[0][1]


def test_a_server_that_never_accepts_ends_in_the_flows_limit(proxy: Proxy) -> None:
    # Every POST with a token is refused 401: the flow re-authorizes a bounded number of
    # times, then the connect fails with LimitExceeded (never a loop).
    resource_metadata = proxy.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    proxy.answer = lambda auth, body: (
        (401, [("WWW-Authenticate", f'Bearer resource_metadata="{resource_metadata}"')])
        if auth else None)
    steps = Steps()
    with pytest.raises(errors.LimitExceeded):
        session("threads", proxy.url, oauth(steps))
    assert 1 <= len(steps.urls) <= 5


def test_loopback_listener_takes_the_redirect_and_refuses_other_paths() -> None:
    got: list[str] = []

    def browser(url: str) -> None:
        def visit() -> None:
            port = int(urlsplit(url).port or 0)
            for path in ("/favicon.ico", "/callback?code=c1&state=s1&iss=x"):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
                conn.request("GET", path)
                got.append(f"{path} {conn.getresponse().status}")
                conn.close()
        threading.Thread(target=visit, daemon=True).start()

    with LoopbackListener(lambda url: None, timeout=WAIT) as listener:
        listener.open_browser = lambda url: browser(listener.redirect_uri)
        redirect = listener(UserAuthorization(url="https://as.example/authorize?x=1",
                                              redirect_uri=listener.redirect_uri,
                                              state="s1"))
    assert redirect == f"{listener.redirect_uri}?code=c1&state=s1&iss=x"
    assert got[0] == "/favicon.ico 404"


def test_loopback_listener_gives_up_with_a_clear_error() -> None:
    with (LoopbackListener(lambda url: None, timeout=0.2) as listener,
          pytest.raises(errors.AuthFlowError) as caught):
        listener(UserAuthorization(url="https://as.example/authorize",
                                   redirect_uri=listener.redirect_uri, state="s"))
    assert caught.value.step == "authorization-response"
    assert listener.redirect_uri in str(caught.value)


def test_default_token_path_is_under_the_cache_dir(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "platform", "linux")
    assert default_token_path() == tmp_path / "mcp-sansio" / "tokens.json"


def test_calls_refused_together_run_the_flow_once(proxy: Proxy) -> None:
    import asyncio

    from mcp_sansio.adapters.asyncio import connect_http

    steps = Steps()
    resource_metadata = proxy.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    refused: list[str] = []

    def refuse(auth: str) -> tuple[int, list[tuple[str, str]]]:
        refused.append(auth)
        return 401, [("WWW-Authenticate", 'Bearer error="invalid_token", '
                      f'resource_metadata="{resource_metadata}"')]

    async def main() -> tuple[list[str], int]:
        async with connect_http(proxy.url, auth=oauth(steps), request_timeout=WAIT) as client:
            assert client.auth is not None
            old = proxy.seen[-1][2]
            proxy.answer = lambda auth, body: refuse(auth) if auth == old else None
            before = client.auth.generation
            results = await asyncio.gather(*(client.call_tool("whoami", {})
                                             for _ in range(4)))
            return [r["content"][0]["text"] for r in results], client.auth.generation - before

    texts, runs = asyncio.run(main())
    assert texts == ["ada"] * 4
    assert len(refused) == 4  # all four went out with the old token, and were refused
    assert runs == 1  # one refresh for the four refused calls
    assert len(steps.urls) == 1
