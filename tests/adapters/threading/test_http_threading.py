"""The threading HTTP adapters over loopback sockets: the server checked with raw HTTP
(both eras, JSON and SSE, stateless-era async handlers stepped during the dispatch,
progress, the GET stream, DELETE and 404, many connections, oversized, half-closed and
non-reading peers, session expiry on the timer thread, no thread left behind), the threaded
client against it (both eras), each against the asyncio side, the CLI, TLS, and the official
SDK's client and server. (Malformed HTTP, cancellation by closing the stream and list
changes on listen streams: tests/adapters/common/test_http_server_runtimes.py, for every
runtime.)"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import h11
import pytest
from mcp_sansio.adapters.threading import (
    CancelToken,
    ConnectionClosedError,
    Context,
    HTTPClientSession,
    HTTPTransportError,
    RequestCancelledError,
    RequestTimeout,
    Server,
    connect_http,
    start_http,
)

from mcp_sansio import Era, Notification
from mcp_sansio.http import ResponseMode, Transport
from tests.http_stories import (
    ACCEPT,
    ERAS,
    HAIKU,
    SyncConn,
    add_tools,
    asyncio_service,
    block_tool,
    elicit,
    no_leaked_threads,  # noqa: F401 - a fixture
    self_signed,
    stateless,
    tls_front,
    url_process,
)
from tests.http_stories import tool_call as call
from tests.http_util import init_body

WAIT = 30.0  # generous: the machine is shared and noisy; a pass never waits this long

Conn = SyncConn  # a blocking keep-alive HTTP/1.1 client connection on h11


def text_of(message: Any) -> str:
    return str(message["result"]["content"][0]["text"])


def raised_in_thread(call: Callable[[], Any], meanwhile: Callable[[], Any]
                     ) -> BaseException | None:
    """Run ``call()`` in a thread of its own while ``meanwhile()`` runs here; what the call
    raised (None: it returned)."""
    raised: list[BaseException] = []

    def calling() -> None:
        try:
            call()
        except BaseException as exc:  # returned to the test
            raised.append(exc)
    caller = threading.Thread(target=calling)
    caller.start()
    meanwhile()
    caller.join(WAIT)
    return raised[0] if raised else None


def cancel_once_started(probe: Any, token: CancelToken) -> None:
    """Cancel ``token`` once the probe's blocking tool has started."""
    assert probe.started.wait(WAIT)
    token.cancel()


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)


class Probe:
    """What the test tools report to the test."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.release = threading.Event()


def make_server(probe: Probe | None = None) -> Server:
    probe = probe or Probe()
    server = Server("http-threads")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def echo(text: str, ctx: Context) -> str:
        ctx.log("info", f"echo {text}")
        return text

    @server.tool()
    def steps(count: int, ctx: Context) -> str:
        for i in range(count):
            ctx.progress(i + 1, count, f"step {i + 1}")
        return "done"

    @server.tool()
    def change(ctx: Context) -> str:
        ctx.notify_list_changed("tools")
        return "changed"

    @server.tool()
    def block(ctx: Context) -> str:  # a plain def handler: cancelled cooperatively
        probe.started.set()
        while not ctx.cancelled and not probe.release.is_set():
            time.sleep(0.01)
        if ctx.cancelled:
            probe.cancelled.set()
        return "released"

    @server.tool()
    async def block_async() -> str:  # an async def handler: cancelled for real
        probe.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            probe.cancelled.set()
            raise
        return "never"

    @server.tool()
    async def quick(text: str) -> str:  # answers before it first suspends
        return text

    @server.tool()
    async def later(text: str) -> str:  # suspends first
        await asyncio.sleep(0.01)
        return text

    @server.tool()
    async def needs_sampling(ctx: Any) -> str:
        result = await ctx.sample({"messages": [], "maxTokens": 1})
        return str(result)

    @server.tool()
    def flood(count: int, size: int, ctx: Context) -> str:
        for _ in range(count):
            ctx.log("info", "x" * size)
        return "flooded"

    return server


pytestmark = pytest.mark.usefixtures("no_leaked_threads")


# -- the server, raw HTTP ------------------------------------------------------------------------


def test_handshake_era_session_on_one_keep_alive_connection() -> None:
    with start_http(make_server()) as service:
        assert service.url == f"http://127.0.0.1:{service.port}/mcp"
        conn = Conn(service.port)
        status, headers, messages = conn.request("POST", init_body())
        assert status == 200
        assert headers["content-type"] == "application/json"
        assert messages[0]["result"]["serverInfo"]["name"] == "http-threads"
        sid = headers["mcp-session-id"]
        assert len(sid) >= 32
        session = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        status, _, _ = conn.request(
            "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        assert status == 202
        status, headers, messages = conn.request(
            "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}, session)
        assert status == 200
        assert headers["content-type"] == "text/event-stream"  # a def handler: a stream
        assert messages[-1]["id"] == 2 and text_of(messages[-1]) == "5"
        status, headers, messages = conn.request(
            "POST", {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                     "params": {"name": "quick", "arguments": {"text": "q"}}}, session)
        assert status == 200  # an async def one without ctx, stepped during the dispatch
        assert headers["content-type"] == "application/json"
        assert messages == [{"jsonrpc": "2.0", "id": 6, "result": {
            "content": [{"type": "text", "text": "q"}]}}]
        status, _, messages = conn.request(
            "POST", {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, session)
        assert status == 200
        assert {t["name"] for t in messages[-1]["result"]["tools"]} >= {"add", "echo"}
        status, _, _ = conn.request("DELETE", None, session)
        assert status == 200
        status, _, _ = conn.request(
            "POST", {"jsonrpc": "2.0", "id": 4, "method": "ping"}, session)
        assert status == 404
        status, _, _ = conn.request(
            "POST", {"jsonrpc": "2.0", "id": 5, "method": "ping"},
            {"mcp-session-id": "no-such-session", "mcp-protocol-version": "2025-11-25"})
        assert status == 404
        conn.close()


def test_stateless_era_request_with_its_log_on_the_stream() -> None:
    with start_http(make_server()) as service:
        conn = Conn(service.port)
        body, headers = call("echo", {"text": "hi"}, 7,
                             **{"io.modelcontextprotocol/logLevel": "info"})
        status, got, messages = conn.request("POST", body, headers)
        assert status == 200
        assert "mcp-session-id" not in got
        assert messages[0]["method"] == "notifications/message"
        assert messages[0]["params"]["data"] == "echo hi"
        assert messages[-1]["id"] == 7 and text_of(messages[-1]) == "hi"
        conn.close()


def test_stateless_async_handlers_are_stepped_during_the_dispatch() -> None:
    with start_http(make_server()) as service:
        conn = Conn(service.port)
        # answered before it suspends: plain JSON, even in the default (SSE) mode
        status, got, messages = conn.request("POST", *call("quick", {"text": "now"}, 2))
        assert status == 200 and got["content-type"] == "application/json"
        assert text_of(messages[0]) == "now"
        # a refusal before it suspends carries its HTTP status: -32021 is a 400
        status, got, messages = conn.request("POST", *call("needs_sampling", {}, 3))
        assert status == 400 and got["content-type"] == "application/json"
        assert messages[0]["error"]["code"] == -32021
        assert messages[0]["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
        # one that suspends goes on in the pool, on the loop it was stepped with; its
        # answer is still the first message for the request: JSON (the SSE head of a
        # 2026-07-28 request waits for its first message)
        status, got, messages = conn.request("POST", *call("later", {"text": "soon"}, 4))
        assert status == 200 and got["content-type"] == "application/json"
        assert messages[-1]["id"] == 4 and text_of(messages[-1]) == "soon"
        # many at once, from many connections
        results: dict[int, str] = {}

        def one(i: int) -> None:
            other = Conn(service.port)
            tool = "quick" if i % 2 else "later"
            results[i] = text_of(other.request("POST", *call(tool, {"text": str(i)}, i))[2][-1])
            other.close()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(40)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
        assert results == {i: str(i) for i in range(40)}
        conn.close()


def test_a_stepped_handler_that_leaves_a_task_does_not_lend_its_loop_out() -> None:
    # A stateless-era async def handler that answers at once but leaves a task on the loop
    # it was stepped with: that loop goes to the pool (which ends the task), never back to
    # the idle loops the next handler is stepped with (threading.http_server._idle).
    ended = threading.Event()
    server = make_server()

    @server.tool()
    async def spawn() -> str:
        task = asyncio.get_running_loop().create_task(asyncio.sleep(0))
        task.add_done_callback(lambda _: ended.set())
        return "spawned"

    with start_http(server) as service:
        conn = Conn(service.port)
        status, _, messages = conn.request("POST", *call("spawn", {}, 2))
        assert status == 200 and text_of(messages[-1]) == "spawned"
        assert ended.wait(WAIT)
        with service.lock:
            assert all(not asyncio.all_tasks(loop) for loop in service._steppers)
        status, _, messages = conn.request("POST", *call("quick", {"text": "next"}, 3))
        assert status == 200 and text_of(messages[-1]) == "next"
        with service.lock:
            assert service._steppers  # a loop the quick one left clean is kept
        conn.close()


def test_json_response_mode_answers_one_json_object() -> None:
    with start_http(make_server(), response_mode=ResponseMode.JSON) as service:
        conn = Conn(service.port)
        body, headers = call("add", {"a": 20, "b": 22}, 3)
        status, got, messages = conn.request("POST", body, headers)
        assert status == 200 and got["content-type"] == "application/json"
        assert messages == [{"jsonrpc": "2.0", "id": 3, "result": messages[0]["result"]}]
        assert text_of(messages[0]) == "42"
        conn.close()


def test_progress_travels_on_the_request_stream() -> None:
    with start_http(make_server()) as service:
        conn = Conn(service.port)
        body, headers = call("steps", {"count": 3}, 9, progressToken="p-1")
        status, _, messages = conn.request("POST", body, headers)
        assert status == 200
        progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
        assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [
            ("p-1", 1, 3), ("p-1", 2, 3), ("p-1", 3, 3)]
        assert messages[-1]["id"] == 9 and text_of(messages[-1]) == "done"
        conn.close()


def test_the_get_stream_carries_what_concerns_no_request() -> None:
    with start_http(make_server()) as service:
        conn = Conn(service.port)
        status, headers, _ = conn.request("POST", init_body())
        session = {"mcp-session-id": headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-11-25"}
        status, _, _ = conn.request(
            "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        assert status == 202
        get = Conn(service.port)
        get.send("GET", None, session, accept="text/event-stream")
        status, headers = get.head()
        assert status == 200 and headers["content-type"] == "text/event-stream"
        status, _, messages = conn.request(
            "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "change", "arguments": {}}}, session)
        assert status == 200 and text_of(messages[-1]) == "changed"
        assert all(m.get("method") != "notifications/tools/list_changed" for m in messages)
        assert next(get.stream())["method"] == "notifications/tools/list_changed"
        # a second GET stream for the session is refused while this one is open
        other = Conn(service.port)
        other.send("GET", None, session, accept="text/event-stream")
        assert other.head()[0] == 409
        for c in (conn, get, other):
            c.close()


def test_many_concurrent_connections() -> None:
    results: dict[int, int] = {}
    failures: list[BaseException] = []

    def one(port: int, i: int) -> None:
        try:
            conn = Conn(port)
            total = 0
            for _ in range(3):  # keep-alive: several requests per connection
                status, _, messages = conn.request("POST", *call("add", {"a": i, "b": 1}, i))
                assert status == 200
                total += int(text_of(messages[-1]))
            conn.close()
            results[i] = total
        except BaseException as exc:  # reported below
            failures.append(exc)

    with start_http(make_server()) as service:
        clients = [threading.Thread(target=one, args=(service.port, i)) for i in range(150)]
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join(WAIT)
        assert not failures, failures[:3]
        assert results == {i: 3 * (i + 1) for i in range(150)}


def test_oversized_body_gets_413_and_the_connection_closes() -> None:
    with start_http(make_server(), max_body_size=1024) as service:
        sock = socket.create_connection(("127.0.0.1", service.port), timeout=WAIT)
        body = b"x" * 4096
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: " + ACCEPT.encode()
                     + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                     % len(body))
        data = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                data += chunk
        assert data.startswith(b"HTTP/1.1 413")
        sock.close()
        wait_for(lambda: not service._sockets)
        assert not service._sockets


def test_half_closed_and_partial_requests_end_their_connections() -> None:
    with start_http(make_server()) as service:
        # half of a request head, then the client goes away
        partial = socket.create_connection(("127.0.0.1", service.port), timeout=WAIT)
        partial.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        # a whole request, then the client shuts its sending side: it is gone
        half = Conn(service.port)
        half.send("POST", *call("add", {"a": 1, "b": 1}))
        half.sock.shutdown(socket.SHUT_WR)
        partial.close()
        wait_for(lambda: not service._sockets)
        assert not service._sockets
        half.close()
        conn = Conn(service.port)  # and the server goes on
        assert conn.request("POST", *call("add", {"a": 1, "b": 1}))[0] == 200
        conn.close()


def test_idle_sessions_expire_on_the_timer_thread() -> None:
    with start_http(make_server(), session_idle_timeout=0.2) as service:
        conn = Conn(service.port)
        status, headers, _ = conn.request("POST", init_body())
        sid = headers["mcp-session-id"]
        assert sid in service.http.sessions
        wait_for(lambda: sid not in service.http.sessions)
        assert sid not in service.http.sessions  # only the timer thread drives the clock here
        status, _, _ = conn.request(
            "POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
        assert status == 404
        conn.close()


def test_a_peer_that_does_not_read_is_dropped_at_the_write_bound() -> None:
    with start_http(make_server(), max_write_buffer=256 * 1024) as service:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(WAIT)
        sock.connect(("127.0.0.1", service.port))
        conn = Conn(service.port, sock)
        # 64 MiB of log messages on the request's stream, to a client that reads nothing
        body, headers = call("flood", {"count": 1024, "size": 64 * 1024}, 1,
                             **{"io.modelcontextprotocol/logLevel": "info"})
        conn.send("POST", body, headers)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            with service.lock:
                if not service._sockets:
                    break
            time.sleep(0.01)
        with service.lock:
            assert not service._sockets  # dropped, not buffered
        received = 0  # what the kernels held, then the end of the stream (or a reset)
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(1 << 20):
                received += len(chunk)
        assert received < 32 * 1024 * 1024
        sock.close()
        # the server goes on serving
        conn = Conn(service.port)
        status, _, messages = conn.request("POST", *call("add", {"a": 1, "b": 2}))
        assert status == 200 and text_of(messages[-1]) == "3"
        conn.close()


def test_close_drops_open_streams_and_stops_running_handlers() -> None:
    probe = Probe()
    with start_http(make_server(probe)) as service:
        conn = Conn(service.port)
        conn.send("POST", *call("block_async", {}))
        assert probe.started.wait(WAIT)
        listen = Conn(service.port)
        body, headers = stateless("subscriptions/listen",
                                  {"notifications": {"toolsListChanged": True}}, 1)
        listen.send("POST", body, headers)
        assert listen.head()[0] == 200
    assert probe.cancelled.wait(WAIT)
    with pytest.raises((h11.RemoteProtocolError, OSError)):
        list(listen.stream())
    conn.close()
    listen.close()


# -- the client, against the threaded server -------------------------------------------------


def sample(params: dict[str, Any]) -> dict[str, Any]:
    return HAIKU


def client_server(probe: Probe | None = None) -> Server:
    server = make_server(probe)

    @server.tool()
    def ask_name(ctx: Context) -> str:
        answer = ctx.elicit("Your name?", {"type": "object",  # type: ignore[attr-defined]
                                           "properties": {"name": {"type": "string"}}})
        return f"hello {answer['content']['name']}"

    add_tools(server, "haiku")
    return server


@pytest.mark.parametrize("mode", [ResponseMode.SSE, ResponseMode.JSON])
@pytest.mark.parametrize("era", ERAS)
def test_client_both_eras_and_response_modes(era: str, mode: ResponseMode) -> None:
    logs: list[dict[str, Any]] = []
    with start_http(client_server(), response_mode=mode) as service, \
            connect_http(service.url, era=ERAS[era], on_log=logs.append) as client:
        assert isinstance(client, HTTPClientSession)
        assert client.era is (Era.HANDSHAKE if era == "handshake" else Era.STATELESS)
        assert client.transport is Transport.STREAMABLE
        assert (client.session_id is not None) is (era == "handshake")
        assert client.server_info["name"] == "http-threads"
        assert {"add", "echo", "steps", "block"} <= {t["name"] for t in client.list_tools()}
        assert text_of({"result": client.call_tool("add", {"a": 2, "b": 3},
                                                   timeout=WAIT)}) == "5"
        opened = client.connections_opened
        for _ in range(5):  # one call at a time: the same kept-alive connection
            client.call_tool("add", {"a": 2, "b": 3})
        assert client.connections_opened == opened
        seen: list[tuple[float, float | None, str | None]] = []
        result = client.call_tool("steps", {"count": 3}, progress=lambda *p: seen.append(p))
        assert text_of({"result": result}) == "done"
        if mode is ResponseMode.SSE:  # a JSON answer has no room for progress
            assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        if era == "handshake":
            client.set_logging_level("info")
            client.call_tool("echo", {"text": "logged"})
            # on the call's stream (SSE), or on the GET stream (JSON: maybe after the answer)
            wait_for(lambda: bool(logs))
            assert [entry["data"] for entry in logs] == ["echo logged"]
        # several calls at once from several threads, on as many connections as needed
        texts: dict[int, str] = {}

        def one(i: int) -> None:
            texts[i] = text_of({"result": client.call_tool("echo", {"text": str(i)})})
        callers = [threading.Thread(target=one, args=(i,)) for i in range(20)]
        for thread in callers:
            thread.start()
        for thread in callers:
            thread.join(WAIT)
        assert texts == {i: str(i) for i in range(20)}


@pytest.mark.parametrize("tool", ["block", "block_async"])
@pytest.mark.parametrize("era", ERAS)
def test_client_cancel_token_cancels_the_handler(era: str, tool: str) -> None:
    probe = Probe()
    with start_http(client_server(probe)) as service, \
            connect_http(service.url, era=ERAS[era]) as client:
        token = CancelToken()
        failed = raised_in_thread(lambda: client.call_tool(tool, {}, cancel=token),
                                  lambda: cancel_once_started(probe, token))
        assert isinstance(failed, RequestCancelledError), failed
        assert probe.cancelled.wait(WAIT)  # notifications/cancelled, or the stream closed
        assert text_of({"result": client.call_tool("echo", {"text": "after"})}) == "after"


def test_client_per_call_timeout() -> None:
    probe = Probe()
    with start_http(client_server(probe)) as service, connect_http(service.url) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("block_async", {}, timeout=0.2)
        assert probe.cancelled.wait(WAIT)


def test_client_listen_stream_receives_list_changes() -> None:
    with start_http(client_server()) as service, connect_http(service.url) as client:
        assert client.era is Era.STATELESS
        with client.listen({"toolsListChanged": True}) as subscription:
            assert subscription.acknowledged == {"toolsListChanged": True}
            client.call_tool("change", {})
            assert next(subscription).method == "notifications/tools/list_changed"


def test_client_handshake_era_get_stream_and_server_requests() -> None:
    notes: list[Notification] = []
    with start_http(client_server()) as service, \
            connect_http(service.url, era=Era.HANDSHAKE, elicitation=elicit,
                         sampling=sample, on_notification=notes.append) as client:
        assert text_of({"result": client.call_tool("ask_name", {})}) == "hello Ada"
        assert text_of({"result": client.call_tool("haiku", {})}) == "old pond, frog"
        client.call_tool("change", {})  # broadcast: on the standalone GET stream
        wait_for(lambda: bool(notes))
        assert [n.method for n in notes] == ["notifications/tools/list_changed"]


def test_client_stateless_era_input_required_is_answered_and_retried() -> None:
    with start_http(client_server()) as service, \
            connect_http(service.url, elicitation=elicit, sampling=sample) as client:
        assert client.era is Era.STATELESS
        assert text_of({"result": client.call_tool("ask_name", {})}) == "hello Ada"
        assert text_of({"result": client.call_tool("haiku", {})}) == "old pond, frog"


@pytest.mark.parametrize("era", ERAS)
def test_client_pending_calls_fail_when_the_server_goes_away(era: str) -> None:
    probe = Probe()
    with start_http(client_server(probe)) as service, \
            connect_http(service.url, era=ERAS[era]) as client:
        def going_away() -> None:
            assert probe.started.wait(WAIT)
            service.close()  # sockets dropped, nothing listens any more

        failed = raised_in_thread(lambda: client.call_tool("block_async", {}, timeout=None),
                                  going_away)
        assert isinstance(failed, HTTPTransportError), failed
        with pytest.raises(HTTPTransportError, match="cannot connect"):
            client.call_tool("echo", {"text": "x"})


def test_client_connecting_to_nothing_fails_clearly() -> None:
    with start_http(client_server()) as service:
        url = service.url
    with pytest.raises(ConnectionClosedError, match="cannot connect"), connect_http(url):
        pass  # pragma: no cover


def test_client_renews_a_forgotten_session_and_retries() -> None:
    with start_http(client_server()) as service:
        port = service.port
        with connect_http(service.url, era=Era.HANDSHAKE) as client:
            first = client.session_id
            service.close()
            # the same port, a new server: it knows no session
            with start_http(client_server(), port=port) as again:
                assert text_of({"result": client.call_tool("echo", {"text": "x"})}) == "x"
                assert client.session_id is not None and client.session_id != first
                assert client.session_renewals == 1
                assert list(again.http.sessions) == [client.session_id]


def test_client_legacy_http_sse_fallback() -> None:
    # A 2024-11-05 server: only the legacy transport, at its own paths.
    with start_http(client_server(), path="/streamable", legacy_sse_path="/mcp",
                    connection_options={"versions": ["2024-11-05"]}) as service, \
            connect_http(f"http://127.0.0.1:{service.port}/mcp") as client:
        assert client.transport is Transport.LEGACY
        assert client.protocol_version == "2024-11-05"
        assert text_of({"result": client.call_tool("echo", {"text": "old"})}) == "old"


def test_client_close_sends_delete_and_ends_the_session() -> None:
    with start_http(client_server()) as service:
        with connect_http(service.url, era=Era.HANDSHAKE) as client:
            sid = client.session_id
            assert sid in service.http.sessions
        assert sid not in service.http.sessions  # DELETE ended it
        assert not client.sockets.open
        with pytest.raises(ConnectionClosedError):
            client.ping()


# -- across runtimes -----------------------------------------------------------------------------


class AsyncProbe:
    """What the asyncio server's handlers saw (read from the test's thread)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()


def asyncio_server(probe: AsyncProbe) -> Server:
    server = Server("http-asyncio")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    @server.tool()
    async def steps(count: int, ctx: Any) -> str:
        for i in range(count):
            ctx.progress(i + 1, count, f"step {i + 1}")
            await asyncio.sleep(0)
        return "done"

    server.add_tool(block_tool(probe))
    add_tools(server, "ask_name")
    return server


@pytest.mark.parametrize("era", ERAS)
def test_threaded_client_against_the_asyncio_server(era: str) -> None:
    probe = AsyncProbe()
    with asyncio_service(asyncio_server(probe)) as url, \
            connect_http(url, era=ERAS[era], elicitation=elicit) as client:
        assert client.server_info["name"] == "http-asyncio"
        assert client.era is (Era.HANDSHAKE if era == "handshake" else Era.STATELESS)
        assert text_of({"result": client.call_tool("echo", {"text": "hi"})}) == "hi"
        seen: list[Any] = []
        client.call_tool("steps", {"count": 2}, progress=lambda *p: seen.append(p))
        assert seen == [(1, 2, "step 1"), (2, 2, "step 2")]
        # server requests (handshake era) or input_required (stateless era)
        assert text_of({"result": client.call_tool("ask_name", {})}) == "hello Ada"
        token = CancelToken()
        failed = raised_in_thread(lambda: client.call_tool("block", {}, cancel=token),
                                  lambda: cancel_once_started(probe, token))
        assert isinstance(failed, RequestCancelledError), failed
        assert probe.cancelled.wait(WAIT)


@pytest.mark.parametrize("era", ERAS)
def test_asyncio_client_against_the_threaded_server(era: str) -> None:
    from mcp_sansio.adapters import asyncio as aio

    probe = Probe()
    with start_http(client_server(probe)) as service:
        async def main() -> None:
            async with aio.connect_http(service.url, era=ERAS[era],
                                        elicitation=elicit) as client:
                assert client.server_info["name"] == "http-threads"
                result = await client.call_tool("echo", {"text": "hi"})
                assert text_of({"result": result}) == "hi"
                seen: list[Any] = []
                await client.call_tool("steps", {"count": 2},
                                       progress=lambda *p: seen.append(p))
                assert seen == [(1, 2, "step 1"), (2, 2, "step 2")]
                result = await client.call_tool("ask_name", {})
                assert text_of({"result": result}) == "hello Ada"
                call = asyncio.ensure_future(client.call_tool("block_async", {}))
                while not probe.started.is_set():
                    await asyncio.sleep(0.005)
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
        asyncio.run(asyncio.wait_for(main(), WAIT))
        assert probe.cancelled.wait(WAIT)


def test_cli_serve_example_on_threads_with_the_threaded_client() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_sansio", "serve-example", "--transport", "http",
         "--runtime", "threading"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url
        for era in ERAS.values():
            seen: list[Any] = []
            with connect_http(url, era=era) as client:
                result = client.call_tool("test_simple_text", {})
                assert result["content"][0]["type"] == "text"
                client.call_tool("test_tool_with_progress", {},
                                 progress=lambda *p, seen=seen: seen.append(p))
            assert seen
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C: the service closes, the command exits 130
        try:
            proc.wait(WAIT)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hang is the failure
            proc.kill()
            proc.wait()
    assert proc.returncode == 130  # docs/cli.rst: interrupted


# -- TLS -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_client_over_tls(era: str, tmp_path: Any) -> None:
    cert, key = self_signed(tmp_path)
    trust = ssl.create_default_context(cafile=cert)
    with start_http(client_server()) as service, tls_front(service.port, cert, key) as port:
        url = f"https://localhost:{port}/mcp"
        with connect_http(url, era=ERAS[era], http_options={"ssl_context": trust}) as client:
            assert client.era is (Era.HANDSHAKE if era == "handshake" else Era.STATELESS)
            seen: list[Any] = []
            client.call_tool("steps", {"count": 3}, progress=lambda *p: seen.append(p))
            assert len(seen) == 3
            big = "x" * 300_000  # many TLS records each way
            assert text_of({"result": client.call_tool("echo", {"text": big})}) == big
        # a certificate we do not trust: the connection fails, clearly
        with pytest.raises(ConnectionClosedError, match="cannot connect"), \
                connect_http(url, era=ERAS[era]):
            pass  # pragma: no cover


# -- the official SDK ------------------------------------------------------------------------------


class ThreadFlag:
    """An event a server thread sets and an asyncio test awaits (``asyncio.Event``'s shape)."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def set(self) -> None:
        self.event.set()

    def is_set(self) -> bool:
        return self.event.is_set()

    async def wait(self) -> None:
        while not self.event.is_set():
            await asyncio.sleep(0.005)


@pytest.mark.parametrize("response_mode", ["json", "sse"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_sdk_client_with_the_threaded_server(mode: str, response_mode: str) -> None:
    """The official SDK's HTTP client against the example server on threads (the story of
    tests/adapters/common/test_http_interop.py)."""
    pytest.importorskip("mcp", reason="the official SDK is a test dependency")

    from tests.adapters.common.test_http_interop import (
        SAFETY,
        check_sdk_client_story,
        our_server,
        sdk_story,
    )

    server, seen = our_server(ThreadFlag)
    with start_http(server, response_mode=ResponseMode(response_mode)) as service:
        story = sdk_story(service.url, mode, seen, lambda: len(service.http.sessions))
        got = asyncio.run(asyncio.wait_for(story, SAFETY))
        wait_for(lambda: not service.http.sessions)  # the SDK's DELETE, sent as it closes
        sessions_after = len(service.http.sessions)
    check_sdk_client_story(got, mode, response_mode, with_block=True)
    assert (got["sessions"], sessions_after) == ((0, 0) if mode == "auto" else (1, 0))


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_threaded_client_with_the_sdk_server(era: str) -> None:
    """Our threaded HTTP client against the official SDK's Streamable HTTP server."""
    pytest.importorskip("mcp", reason="the official SDK is a test dependency")
    from tests.adapters.common.test_interop import CALLBACKS
    from tests.adapters.common.test_interop import ERAS as VERSIONS
    from tests.paths import PEERS

    # terminated at the end, killed after 2 s (uvicorn waits for running handlers)
    with url_process([sys.executable, str(PEERS / "sdk_http_server.py")], grace=2,
                     quiet=False) as url, \
            connect_http(url, versions=VERSIONS[era], **CALLBACKS) as client:
        assert client.era is (Era.HANDSHAKE if era == "handshake" else Era.STATELESS)
        assert client.server_info["name"] == "sdk-peer"
        assert [t["name"] for t in client.list_tools()] == [
            "echo", "add", "countdown", "ask_name"]
        assert text_of({"result": client.call_tool("add", {"a": 2, "b": 3})}) == "5"
        progress: list[float] = []
        result = client.call_tool("countdown", {"steps": 3},
                                  progress=lambda p, t, m: progress.append(p))
        assert text_of({"result": result}) == "counted 3" and progress == [1, 2, 3]
        assert client.read_resource("memo://items/7")["contents"][0]["text"] == "item 7"
        token = CancelToken()
        threading.Timer(0.3, token.cancel).start()
        with pytest.raises(RequestCancelledError):
            client.call_tool("countdown", {"steps": 300, "delay": 0.1}, cancel=token)
        assert text_of({"result": client.call_tool("echo", {"text": "after"})}) == "after"
        if era == "handshake":
            assert text_of({"result": client.call_tool("ask_name")}) == "Hello, Ann!"
