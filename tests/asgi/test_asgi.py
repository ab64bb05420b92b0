"""The ASGI application in memory, on asyncio and on trio: a tiny ASGI server drives it (no
sockets), so that what an engine hands over -- body chunks, ``http.disconnect``, the
``lifespan`` messages, a mount's ``root_path`` -- is played exactly. The real engines:
tests/asgi/test_asgi_engines.py."""

from __future__ import annotations

import functools
import json
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import anyio
import pytest
from mcp_sansio.adapters import asgi
from mcp_sansio.adapters.asyncio import Context, Server

from mcp_sansio import Request
from mcp_sansio.auth import AccessInfo, IntrospectionVerifier, InvalidToken, ProtectedResource
from mcp_sansio.http import HTTPServer, ResponseMode, Session
from tests.http_util import ACCEPT_BOTH, CLIENT_INFO, init_body, result_for, stateless_meta

BACKENDS = ["asyncio", "trio"]
TIMEOUT = 30.0  # generous: the machine is shared; nothing here waits on purpose


class Call:
    """One request played against an ASGI application: what it was sent, as it came."""

    def __init__(self, app: Any, scope: dict[str, Any], chunks: Iterable[bytes]) -> None:
        self.app = app
        self.scope = scope
        self.chunks = deque(chunks)
        self.read = 0  # body chunks the application asked for
        self.read_when_answered: int | None = None  # ... when the answer's head went out
        self.sent: list[dict[str, Any]] = []
        self.leave = anyio.Event()  # set: the client disconnects
        self.changed = anyio.Event()
        self.done = False

    async def receive(self) -> dict[str, Any]:
        if self.chunks:
            self.read += 1
            body = self.chunks.popleft()
            return {"type": "http.request", "body": body, "more_body": bool(self.chunks)}
        await self.leave.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if not self.sent:
            self.read_when_answered = self.read
        self.sent.append(message)
        self.changed.set()

    async def run(self) -> Call:
        with anyio.fail_after(TIMEOUT):
            await self.app(self.scope, self.receive, self.send)
        self.done = True
        self.changed.set()
        return self

    async def until(self, test: Callable[[], bool]) -> None:
        with anyio.fail_after(TIMEOUT):
            while not test():
                self.changed = anyio.Event()
                await self.changed.wait()

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])

    @property
    def headers(self) -> dict[str, str]:
        return {k.decode(): v.decode() for k, v in self.sent[0]["headers"]}

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent[1:])

    def json(self) -> Any:
        return json.loads(self.body)

    def sse(self) -> list[Any]:
        return [json.loads(line[5:]) for line in self.body.decode().splitlines()
                if line.startswith("data:") and line[5:].strip()]


def scope(method: str, path: str = "/mcp", headers: Iterable[tuple[str, str]] = (), *,
          root_path: str = "", query: bytes = b"") -> dict[str, Any]:
    raw = [("host", "127.0.0.1:8000"), ("accept", ACCEPT_BOTH),
           ("content-type", "application/json"), *headers]
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
            "root_path": root_path, "query_string": query,
            "headers": [(k.lower().encode(), v.encode()) for k, v in raw],
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}


def post(app: Any, body: Any, headers: Iterable[tuple[str, str]] = (), **options: Any) -> Call:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Call(app, scope("POST", headers=headers, **options), [data])


def stateless(method: str, params: dict[str, Any] | None = None, name: str | None = None,
              request_id: int = 1) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """A 2026-07-28 request and its headers."""
    p = dict(params or {})
    p["_meta"] = stateless_meta()
    hdrs = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)]
    if name is not None:
        p["name"] = name
        hdrs.append(("mcp-name", name))
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": p}, hdrs


class Probe:
    """What the test server's tools saw."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = anyio.Event()


def make_server(probe: Probe) -> Server:
    server = Server("asgi-test")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    @server.tool()
    async def steps(n: int, ctx: Context) -> str:
        for i in range(n):
            ctx.log("info", f"step {i}")
            await anyio.sleep(0)
        return "done"

    @server.tool()
    async def wait() -> str:
        probe.started.set()
        try:
            await anyio.sleep_forever()
        finally:
            probe.cancelled.set()
        return "never"  # pragma: no cover

    return server


def run(backend: str, main: Callable[[], Any]) -> None:
    anyio.run(main, backend=backend)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def handshake(app: Any, **options: Any) -> str:
    call = await post(app, init_body(), **options).run()
    assert call.status == 200, call.sent
    assert call.json()["result"]["serverInfo"]["name"] == "asgi-test"
    sid = call.headers["mcp-session-id"]
    hdrs = [("mcp-session-id", sid), ("mcp-protocol-version", "2025-11-25")]
    call = await post(app, {"jsonrpc": "2.0", "method": "notifications/initialized"}, hdrs,
                      **options).run()
    assert call.status == 202
    return sid


def test_both_eras_are_served(backend: str) -> None:
    async def main() -> None:
        app = asgi.app(make_server(Probe()), response_mode=ResponseMode.JSON)
        sid = await handshake(app)
        hdrs = [("mcp-session-id", sid), ("mcp-protocol-version", "2025-11-25")]
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hi"}}}
        call = await post(app, body, hdrs).run()
        assert call.status == 200
        assert call.headers["content-length"] == str(len(call.body))
        assert call.json()["result"]["content"][0]["text"] == "hi"
        body, hdrs = stateless("tools/call", {"arguments": {"text": "new"}}, name="echo")
        call = await post(app, body, hdrs).run()
        assert call.status == 200 and "mcp-session-id" not in call.headers
        assert call.json()["result"]["content"][0]["text"] == "new"
        # a bad request is answered, as on our own sockets
        call = await post(app, b"{not json").run()
        assert call.status == 400
        await app.aclose()
    run(backend, main)


def test_a_streamed_answer_is_sent_as_more_body_pieces(backend: str) -> None:
    async def main() -> None:
        app = asgi.app(make_server(Probe()))
        body, hdrs = stateless("tools/call", {"arguments": {"n": 3}}, name="steps")
        body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = "debug"
        call = await post(app, body, hdrs).run()
        assert call.status == 200
        assert call.headers["content-type"] == "text/event-stream"
        assert "content-length" not in call.headers
        pieces = call.sent[1:]
        assert all(m["more_body"] for m in pieces[:-1]) and not pieces[-1]["more_body"]
        messages = call.sse()
        assert messages[-1]["result"]["content"][0]["text"] == "done"
        logs = [m for m in messages if m.get("method") == "notifications/message"]
        assert len(logs) == 3 and len(pieces) >= 4  # each log left as it was sent
        await app.aclose()
    run(backend, main)


def test_the_body_limit_is_enforced_as_the_body_streams(backend: str) -> None:
    async def main() -> None:
        app = asgi.app(make_server(Probe()), max_body_size=1000)
        call = Call(app, scope("POST"), [b"x" * 100] * 100)  # 10 kB in 100 pieces
        await call.run()
        assert call.status == 413 and call.headers["connection"] == "close"
        # refused once the limit was passed, before the rest of the body was asked for
        assert call.read_when_answered is not None and 10 < call.read_when_answered <= 12
        # then the rest is read and discarded before the answer ends (so that an engine
        # does not close on unread bytes: a reset would lose the answer)
        assert call.read == 100
        assert all(m.get("more_body") for m in call.sent[1:-1])
        assert call.sent[-1]["more_body"] is False and b"larger than" in call.body
        await app.aclose()
    run(backend, main)


def test_disconnect_cancels_a_2026_request(backend: str) -> None:
    async def main() -> None:
        probe = Probe()
        app = asgi.app(make_server(probe))
        body, hdrs = stateless("tools/call", {"arguments": {}}, name="wait")
        call = post(app, body, hdrs)
        async with anyio.create_task_group() as group:
            group.start_soon(call.run)
            with anyio.fail_after(TIMEOUT):
                await probe.started.wait()
            assert not probe.cancelled.is_set()
            call.leave.set()  # the client goes away
            with anyio.fail_after(TIMEOUT):
                await probe.cancelled.wait()
        assert call.done
        await app.aclose()
    run(backend, main)


def test_lifespan_starts_the_service_and_shutdown_cancels_handlers(backend: str) -> None:
    async def main() -> None:
        probe = Probe()
        app = asgi.app(make_server(probe))
        inbox: list[dict[str, Any]] = [{"type": "lifespan.startup"}]
        outbox: list[dict[str, Any]] = []
        shutdown = anyio.Event()

        async def receive() -> dict[str, Any]:
            if inbox:
                return inbox.pop(0)
            await shutdown.wait()
            return {"type": "lifespan.shutdown"}

        async def send(message: dict[str, Any]) -> None:
            outbox.append(message)

        async with anyio.create_task_group() as group:
            group.start_soon(app, {"type": "lifespan", "asgi": {"version": "3.0"}},
                             receive, send)
            with anyio.fail_after(TIMEOUT):
                while not outbox:
                    await anyio.sleep(0.01)
            assert outbox == [{"type": "lifespan.startup.complete"}]
            assert app._service is not None  # started before any request
            body, hdrs = stateless("tools/call", {"arguments": {}}, name="wait")
            call = post(app, body, hdrs)
            group.start_soon(call.run)
            with anyio.fail_after(TIMEOUT):
                await probe.started.wait()
            shutdown.set()
            with anyio.fail_after(TIMEOUT):
                await probe.cancelled.wait()
                while len(outbox) < 2:
                    await anyio.sleep(0.01)
            assert outbox[1] == {"type": "lifespan.shutdown.complete"}
            call.leave.set()
    run(backend, main)


def test_mounted_at_a_prefix(backend: str) -> None:
    async def main() -> None:
        app = asgi.app(make_server(Probe()))
        # Starlette's Mount("/tools"): root_path is the prefix, path the whole path
        await handshake(app, root_path="/tools", path="/tools/mcp")
        # a proxy that strips the prefix: the wire's raw_path has no prefix
        call = post(app, init_body(), root_path="/tools", path="/tools/mcp")
        call.scope["raw_path"] = b"/mcp"
        await call.run()
        assert call.status == 200 and "mcp-session-id" in call.headers
        call = await post(app, init_body(), root_path="/tools", path="/tools/other").run()
        assert call.status == 404
        call = await post(app, init_body(), path="/mcp", query=b"a=1").run()
        assert call.status == 200
        await app.aclose()
    run(backend, main)


class Verifier:
    def verify(self, token: str, now: float) -> AccessInfo:
        if token != "good":
            raise InvalidToken("not a token we know")
        return AccessInfo(subject="alice", scopes=frozenset({"mcp"}), claims={"iss": "x"})


def test_the_protected_resource_metadata_of_a_mounted_app(backend: str) -> None:
    async def main() -> None:
        resource = "http://127.0.0.1:8000/tools/mcp"
        auth = ProtectedResource(resource, ["https://as.example"], Verifier())
        app = asgi.app(make_server(Probe()), auth=auth)
        well_known = "/.well-known/oauth-protected-resource/tools/mcp"
        assert well_known in app.well_known_paths
        call = await post(app, init_body(), root_path="/tools", path="/tools/mcp").run()
        assert call.status == 401
        assert f'resource_metadata="http://127.0.0.1:8000{well_known}"' in (
            call.headers["www-authenticate"])
        # the well-known path routed to the same app (say, Mount("/.well-known", app)):
        # matched whole, whatever the prefix
        call = await Call(app, scope("GET", well_known, root_path="/.well-known"),
                          [b""]).run()
        assert call.status == 200 and call.json()["resource"] == resource
        call = await post(app, init_body(), [("authorization", "Bearer good")],
                          root_path="/tools", path="/tools/mcp").run()
        assert call.status == 200
        await app.aclose()
    run(backend, main)


def test_a_token_the_verifier_must_ask_about_is_decided_on_the_running_loop(
        backend: str) -> None:
    """An introspection verifier parks the request (http/_park.py); the ASGI app asks the
    authorization server on its own loop (asyncio task or trio worker thread) and answers."""
    from tests.auth.test_auth_verify_runtimes import RESOURCE as AS_RESOURCE
    from tests.auth.test_auth_verify_runtimes import authorization_server

    async def main(issuer_url: str) -> None:
        verifier = IntrospectionVerifier(issuer_url + "/introspect", client_id="rs",
                                         client_secret="s3cret", resource=AS_RESOURCE)
        auth = ProtectedResource(AS_RESOURCE, ["http://127.0.0.1"], verifier)
        app = asgi.app(make_server(Probe()), auth=auth, decision_timeout=5.0)
        call = await post(app, init_body(), [("authorization", "Bearer good")]).run()
        assert call.status == 200, call.sent
        call = await post(app, init_body(), [("authorization", "Bearer inactive")]).run()
        assert call.status == 401
        await app.aclose()

    with authorization_server() as issuer:
        run(backend, functools.partial(main, issuer.url))
        assert issuer.introspections == 2


def test_a_bare_http_server_with_its_own_handler(backend: str) -> None:
    async def main() -> None:
        from mcp_sansio import ServerConnection

        later: list[tuple[Session, Request]] = []

        def on_event(session: Session, event: Any) -> None:
            if isinstance(event, Request):
                if event.method == "tools/list":
                    later.append((session, event))  # answered later, outside the dispatch
                else:
                    session.connection.send_response(event.request_id,
                                                     result_for(event.method))

        http = HTTPServer(lambda: ServerConnection(info={"name": "bare", "version": "1"},
                                                   capabilities={"tools": {}}),
                          new_session_id=lambda: "s-1", response_mode=ResponseMode.JSON)
        app = asgi.http_app(http, on_event)
        call = await post(app, init_body()).run()
        assert call.status == 200 and call.headers["mcp-session-id"] == "s-1"
        hdrs = [("mcp-session-id", "s-1"), ("mcp-protocol-version", "2025-11-25")]
        call = await post(app, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                          hdrs).run()
        assert call.status == 202
        call = post(app, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, hdrs)
        async with anyio.create_task_group() as group:
            group.start_soon(call.run)
            with anyio.fail_after(TIMEOUT):
                while not later:
                    await anyio.sleep(0.01)
            session, request = later[0]
            session.connection.send_response(request.request_id, {"tools": []})
            session.flush()
            app.wake()
        assert call.json() == {"jsonrpc": "2.0", "id": 5, "result": {"tools": []}}
        await app.aclose()
    run(backend, main)


def test_a_client_that_does_not_read_is_dropped(backend: str) -> None:
    async def main() -> None:
        app = asgi.app(make_server(Probe()), max_write_buffer=1000)
        body, hdrs = stateless("tools/call", {"arguments": {"n": 200}}, name="steps")
        body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = "debug"
        blocked = anyio.Event()
        call = post(app, body, hdrs)

        async def stuck_send(message: dict[str, Any]) -> None:
            call.sent.append(message)
            if message["type"] == "http.response.body":
                await blocked.wait()  # the client never reads

        call.send = stuck_send  # type: ignore[method-assign]
        await call.run()  # returns: the request was dropped, the response cut short
        assert call.sent[0]["status"] == 200
        assert len(call.sent) == 2 and call.sent[1]["more_body"]
        await app.aclose()
    run(backend, main)


def test_an_unknown_scope_is_left_alone_and_websocket_refused(backend: str) -> None:
    async def main() -> None:
        app = asgi.app(make_server(Probe()))
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "websocket.connect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app({"type": "websocket", "path": "/mcp"}, receive, send)
        assert sent == [{"type": "websocket.close", "code": 1000}]
    run(backend, main)


def test_app_takes_one_of_server_and_handler() -> None:
    http = HTTPServer(lambda: make_server(Probe()).connection(), new_session_id=lambda: "x")
    with pytest.raises(TypeError):
        asgi.ASGIApp(http)
    assert CLIENT_INFO  # the helpers' client identity is what the requests above carry


def test_serve_example_says_when_an_engine_cannot_run(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    import importlib.util

    from mcp_sansio.adapters.tools import _cli

    assert _cli.serve_example("asyncio", transport="http", workers=2) == 2
    assert "--workers needs --engine" in capsys.readouterr().err
    assert _cli.serve_example("asyncio", engine="uvicorn") == 2
    assert "--engine needs --transport http" in capsys.readouterr().err
    assert _cli.serve_example("trio", transport="http", engine="granian") == 2
    assert "hypercorn's trio worker only" in capsys.readouterr().err
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "granian" else real(name, *a))
    assert _cli.serve_example("asyncio", transport="http", engine="granian") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1  # one line
    assert "needs granian: pip install 'mcp-sansio[granian]'" in err


@pytest.mark.parametrize("version", ["1.1", "2"])
def test_connection_fields_only_on_http1(backend: str, version: str) -> None:
    async def main() -> None:
        app = asgi.app(make_server(Probe()), max_body_size=10)
        call = Call(app, scope("POST"), [b"x" * 100])
        call.scope["http_version"] = version
        await call.run()
        assert call.status == 413
        # HTTP/2 forbids connection-specific fields (RFC 9113 section 8.2.2)
        assert ("connection" in call.headers) is (version == "1.1")
        await app.aclose()
    run(backend, main)


def test_timers_run_on_the_running_loop(backend: str) -> None:
    """An idle session expires with no request to drive the server: the HTTP server's
    timer is armed on the loop the application runs on (asyncio or trio)."""
    async def main() -> None:
        app = asgi.app(make_server(Probe()), session_idle_timeout=0.05)
        sid = await handshake(app)
        assert sid in app.http.sessions
        with anyio.fail_after(TIMEOUT):
            while sid in app.http.sessions:
                await anyio.sleep(0.02)
        await app.aclose()
    run(backend, main)


def test_the_uvicorn_workers_socket_accepts_without_nagle() -> None:
    """Several uvicorn workers share one socket uvicorn binds with protocol 0, for which
    asyncio never sets TCP_NODELAY: the launcher sets it on the listening socket, and the
    connections it accepts have it (no ~40 ms delayed-ACK stall per answer)."""
    import socket

    from mcp_sansio.adapters.tools._asgi_serve import _no_delay

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # protocol 0, as uvicorn's
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    with _no_delay(listener), socket.create_connection(listener.getsockname()) as client:
        accepted, _ = listener.accept()
        with accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        assert client  # the peer


class CountingCall(Call):
    """A Call that counts every ``receive`` the application makes."""

    receives = 0

    async def receive(self) -> dict[str, Any]:
        self.receives += 1
        return await super().receive()


def test_an_answer_queued_whole_is_sent_without_reading_past_the_body(backend: str) -> None:
    # A JSON answer (or a refusal) complete when the body ends needs no watcher of
    # http.disconnect; an answer a handler is still making gets one (it reads again).
    async def main() -> None:
        app = asgi.app(make_server(Probe()), response_mode=ResponseMode.JSON)
        body, hdrs = stateless("tools/call", {"arguments": {"text": "hi"}}, name="echo")
        quick = CountingCall(app, scope("POST", headers=hdrs), [json.dumps(body).encode()])
        await quick.run()
        assert quick.status == 200 and quick.json()["result"]["content"][0]["text"] == "hi"
        body, hdrs = stateless("tools/call", {"arguments": {"n": 3}}, name="steps")
        slow = CountingCall(app, scope("POST", headers=hdrs), [json.dumps(body).encode()])
        await slow.run()
        assert slow.status == 200
        assert slow.json()["result"]["content"][0]["text"] == "done"
        assert (quick.receives, slow.receives) == (1, 2)
        refused = CountingCall(app, scope("POST", headers=[("content-type", "text/plain")]),
                               [b"x"])
        await refused.run()
        assert refused.status == 415 and refused.receives == 1
        await app.aclose()

    run(backend, main)
