"""The trio HTTP adapters over loopback sockets: the server checked with a raw HTTP/1.1
client (both eras, JSON and SSE response modes, progress, the GET stream, DELETE, unknown
sessions, many concurrent connections, backpressure, shutdown), our trio client against it,
and across runtimes. (What the trio adapters do as the asyncio ones do is checked for both
in tests/adapters/common/test_http_server_runtimes.py and test_http_client_runtimes.py.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import h11
import pytest

trio = pytest.importorskip("trio")

from mcp_sansio.adapters.trio import (  # noqa: E402
    Context,
    HTTPClientSession,
    RequestTimeout,
    Server,
    connect_http,
    start_http,
)

from mcp_sansio import Era  # noqa: E402
from mcp_sansio.http import ResponseMode, SSEParser  # noqa: E402
from tests.http_stories import (  # noqa: E402
    ERAS,
    GUARD,
    AsyncConn,
    Stream,
    add_tools,
    asyncio_service,
    block_tool,
    tool_call,
    trio_service,
)
from tests.http_util import init_body  # noqa: E402


class Conn(AsyncConn):
    """A keep-alive HTTP/1.1 client connection on a trio socket."""

    def __init__(self, stream: Any, host: str) -> None:
        super().__init__(host, stream.receive_some, stream.send_all, stream.aclose)
        self.stream = stream

    @classmethod
    async def open(cls, port: int) -> Conn:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        return cls(stream, f"127.0.0.1:{port}")


def call(name: str, arguments: dict[str, Any], request_id: int = 2,
         meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def text(message: Any) -> str:
    return str(message["result"]["content"][0]["text"])


class Probe:
    """What the blocking tool saw."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.cancelled = trio.Event()
        self.gate = trio.Event()


def make_server(probe: Probe | None = None) -> Server:
    server = Server("http-trio-test")

    @server.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def add_later(a: int, b: int) -> int:
        await trio.sleep(0)  # suspends: the answer comes after the request was processed
        return a + b

    @server.tool()
    async def gated(a: int, b: int) -> int:
        assert probe is not None
        await probe.gate.wait()
        return a + b

    add_tools(server, "echo", "change")

    @server.tool()
    async def count(n: int, ctx: Context) -> str:
        for i in range(n):
            ctx.progress(i + 1, n)
            await trio.sleep(0)
        return "counted"

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("name?", {"type": "object", "properties": {}})
        return str(answer)

    server.add_tool(block_tool(probe, "trio"))
    return server


async def handshake(conn: Conn, version: str = "2025-11-25",
                    name: str = "http-trio-test") -> dict[str, str]:
    status, headers, messages = await conn.request("POST", init_body(version))
    assert status == 200
    assert messages[0]["result"]["serverInfo"]["name"] == name
    session = {"mcp-session-id": headers["mcp-session-id"], "mcp-protocol-version": version}
    status, _, _ = await conn.request(
        "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    assert status == 202
    return session


# -- the server, handshake era -------------------------------------------------------------------


def test_handshake_era_session_on_one_keep_alive_connection() -> None:
    async def main() -> None:
        probe = Probe()
        async with start_http(make_server(probe)) as service:
            assert service.url == f"http://127.0.0.1:{service.port}/mcp"
            conn = await Conn.open(service.port)
            session = await handshake(conn)
            assert len(session["mcp-session-id"]) >= 32
            status, got, messages = await conn.request("POST", call("add", {"a": 2, "b": 3}),
                                                       session)
            # answered before the handler suspended: a plain JSON response
            assert status == 200 and got["content-type"] == "application/json"
            assert text(messages[-1]) == "5"
            await conn.send("POST", call("gated", {"a": 2, "b": 3}, 3), session)
            # the handler suspended: the request's SSE stream will carry the answer
            status, got = await conn.head()
            assert status == 200 and got["content-type"] == "text/event-stream"
            probe.gate.set()
            stream = Stream(conn)
            message = await stream.message()
            assert message["id"] == 3 and text(message) == "5"
            assert isinstance(await conn.next(), h11.EndOfMessage)
            conn.h11.start_next_cycle()
            status, _, _ = await conn.request("DELETE", None, session)
            assert status == 200
            status, _, _ = await conn.request(
                "POST", {"jsonrpc": "2.0", "id": 4, "method": "ping"}, session)
            assert status == 404
            await conn.close()
    trio.run(main)


def test_unknown_and_missing_sessions() -> None:
    async def main() -> None:
        async with start_http(make_server()) as service:
            conn = await Conn.open(service.port)
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            status, _, _ = await conn.request(
                "POST", ping, {"mcp-session-id": "no-such-session",
                               "mcp-protocol-version": "2025-11-25"})
            assert status == 404
            await handshake(conn)
            status, _, _ = await conn.request("POST", ping,
                                              {"mcp-protocol-version": "2025-11-25"})
            assert status == 400
            await conn.close()
    trio.run(main)


def test_progress_and_logs_go_on_the_request_stream_in_sse_mode() -> None:
    async def main() -> None:
        async with start_http(make_server()) as service:
            conn = await Conn.open(service.port)
            session = await handshake(conn)
            status, got, messages = await conn.request(
                "POST", call("count", {"n": 3}, meta={"progressToken": "p"}), session)
            assert status == 200 and got["content-type"] == "text/event-stream"
            progress = [m["params"]["progress"] for m in messages
                        if m.get("method") == "notifications/progress"]
            assert progress == [1, 2, 3]
            assert messages[-1]["id"] == 2 and text(messages[-1]) == "counted"
            # a log is sent only at or above the level the client set
            status, _, _ = await conn.request(
                "POST", {"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel",
                         "params": {"level": "info"}}, session)
            assert status == 200
            status, got, messages = await conn.request("POST", call("echo", {"text": "x"}, 4),
                                                       session)
            assert got["content-type"] == "text/event-stream"
            assert messages[0]["method"] == "notifications/message"
            assert messages[0]["params"]["data"] == "echo x"
            assert text(messages[-1]) == "x"
            await conn.close()
    trio.run(main)


def test_json_mode_answers_json_and_sends_the_rest_on_the_get_stream() -> None:
    async def main() -> None:
        async with start_http(make_server(), response_mode=ResponseMode.JSON) as service:
            conn = await Conn.open(service.port)
            session = await handshake(conn)
            get = await Conn.open(service.port)
            await get.send("GET", None, session)
            status, got = await get.head()
            assert status == 200 and got["content-type"] == "text/event-stream"
            standalone = Stream(get)
            status, got, messages = await conn.request(
                "POST", call("count", {"n": 2}, meta={"progressToken": "p"}), session)
            assert status == 200 and got["content-type"] == "application/json"
            assert len(messages) == 1 and text(messages[0]) == "counted"
            # the progress of a JSON-answered request goes on the standalone stream
            first, second = await standalone.message(), await standalone.message()
            assert [first["params"]["progress"], second["params"]["progress"]] == [1, 2]
            # a list change is for every session: on the GET stream
            status, got, messages = await conn.request("POST", call("change", {}, 3), session)
            assert status == 200 and text(messages[0]) == "changed"
            assert (await standalone.message())["method"] == "notifications/tools/list_changed"
            await get.close()
            await conn.close()
    trio.run(main)


def test_get_stream_receives_list_changes_from_other_sessions() -> None:
    async def main() -> None:
        async with start_http(make_server()) as service:
            a, b = await Conn.open(service.port), await Conn.open(service.port)
            session_a = await handshake(a)
            session_b = await handshake(b)
            get = await Conn.open(service.port)
            await get.send("GET", None, session_a)
            assert (await get.head())[0] == 200
            status, _, messages = await b.request("POST", call("change", {}), session_b)
            assert status == 200 and text(messages[-1]) == "changed"
            assert (await Stream(get).message())["method"] == "notifications/tools/list_changed"
            for conn in (a, b, get):
                await conn.close()
    trio.run(main)


def test_handshake_era_cancellation_cancels_the_handler() -> None:
    async def main() -> None:
        probe = Probe()
        async with start_http(make_server(probe)) as service:
            conn = await Conn.open(service.port)
            session = await handshake(conn)
            other = await Conn.open(service.port)
            await conn.send("POST", call("block", {}, 7), session)
            await probe.started.wait()
            status, _, _ = await other.request(
                "POST", {"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 7, "reason": "test"}}, session)
            assert status == 202
            await probe.cancelled.wait()
            # the stream of the cancelled request ends without an answer
            status, _ = await conn.head()
            assert status == 200
            parser, seen = SSEParser(), []
            while not isinstance(event := await conn.next(), h11.EndOfMessage):
                seen += [json.loads(e.data) for e in parser.feed(event.data) if e.data]
            assert not [m for m in seen if m.get("id") == 7]
            await conn.close()
            await other.close()
    trio.run(main)


def test_the_pump_timer_expires_idle_sessions_and_keeps_streams_alive() -> None:
    async def main() -> None:
        async with start_http(make_server(), session_idle_timeout=0.2,
                              keepalive_interval=0.05) as service:
            conn = await Conn.open(service.port)
            idle = await handshake(conn)
            kept = await handshake(conn)
            get = await Conn.open(service.port)
            await get.send("GET", None, kept)  # an open stream: the session is not idle
            assert (await get.head())[0] == 200
            comments = 0
            with trio.fail_after(GUARD):
                while idle["mcp-session-id"] in service.http.sessions or comments < 3:
                    event = await get.next()  # keep-alive comments, from the timer
                    assert isinstance(event, h11.Data), event
                    comments += sum(line.startswith(b":")
                                    for line in bytes(event.data).split(b"\n"))
            assert kept["mcp-session-id"] in service.http.sessions
            status, _, _ = await conn.request(
                "POST", {"jsonrpc": "2.0", "id": 5, "method": "ping"}, idle)
            assert status == 404
            await get.close()
            await conn.close()
    trio.run(main)


# -- the server, stateless era ---------------------------------------------------------------------


def test_stateless_era_request_with_its_log_on_the_stream() -> None:
    async def main() -> None:
        async with start_http(make_server()) as service:
            conn = await Conn.open(service.port)
            body, headers = tool_call("add", {"a": 1, "b": 2}, 5)
            status, got, messages = await conn.request("POST", body, headers)
            assert status == 200 and got["content-type"] == "application/json"
            assert "mcp-session-id" not in got
            assert messages[-1]["id"] == 5 and text(messages[-1]) == "3"
            body, headers = tool_call("count", {"n": 2}, 6)
            body["params"]["_meta"]["progressToken"] = "t"
            status, got, messages = await conn.request("POST", body, headers)
            assert got["content-type"] == "text/event-stream"
            assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2]
            assert messages[-1]["id"] == 6 and text(messages[-1]) == "counted"
            await conn.close()
    trio.run(main)


def test_stateless_refusal_before_suspending_is_an_http_400() -> None:
    async def main() -> None:
        async with start_http(make_server()) as service:
            conn = await Conn.open(service.port)
            # the client declared no elicitation capability: -32021 before any await
            body, headers = tool_call("ask", {}, 1)
            status, got, messages = await conn.request("POST", body, headers)
            assert status == 400 and got["content-type"] == "application/json"
            assert messages[0]["error"]["code"] == -32021
            # and GET / DELETE are not part of the stateless era
            status, _, _ = await conn.request("GET", None, {"mcp-protocol-version": "2026-07-28"})
            assert status == 405
            await conn.close()
    trio.run(main)


# -- the server, connections ---------------------------------------------------------------------


def test_many_concurrent_connections() -> None:
    results: dict[int, int] = {}

    async def one(port: int, i: int) -> None:
        conn = await Conn.open(port)
        try:
            name = "add" if i % 2 else "add_later"
            body, headers = tool_call(name, {"a": i, "b": 1}, i)
            total = 0
            for _ in range(3):  # keep-alive: several requests per connection
                status, _, messages = await conn.request("POST", body, headers)
                assert status == 200
                total += int(text(messages[-1]))
            results[i] = total
        finally:
            await conn.close()

    async def main() -> None:
        async with start_http(make_server()) as service:
            async with trio.open_nursery() as nursery:
                for i in range(200):
                    nursery.start_soon(one, service.port, i)
            assert results == {i: 3 * (i + 1) for i in range(200)}
            with trio.fail_after(10):
                while service._sockets:  # every socket the clients closed is gone
                    await trio.sleep(0.01)
    trio.run(main)


def test_a_request_followed_by_a_half_close_is_answered_first() -> None:
    async def main() -> None:
        async with start_http(make_server()) as service:
            stream = await trio.open_tcp_stream("127.0.0.1", service.port)
            conn = Conn(stream, f"127.0.0.1:{service.port}")
            body, headers = tool_call("add", {"a": 4, "b": 4}, 1)
            await conn.send("POST", body, headers)
            await stream.send_eof()
            data = b""
            while chunk := await stream.receive_some(65536):
                data += chunk
            assert data.startswith(b"HTTP/1.1 200 ") and b'"text":"8"' in data
            await stream.aclose()
    trio.run(main)


def test_a_client_that_does_not_read_is_dropped_at_the_write_buffer_limit() -> None:
    async def main() -> None:
        server = Server("flood")

        @server.tool()
        async def flood(ctx: Context) -> str:
            for _ in range(400):
                ctx.log("info", "x" * 4096)
                await trio.sleep(0)
            return "done"

        async with start_http(server, max_write_buffer=256 * 1024) as service:
            conn = await Conn.open(service.port)
            session = await handshake(conn, name="flood")
            await conn.request("POST", {"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel",
                                        "params": {"level": "info"}}, session)
            # small kernel buffers both ways, so that the flood (1.6 MB) piles up in the
            # server's own queue whatever the system's socket buffer sizes
            conn.stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            for sock in service._sockets.values():
                sock.stream.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            await conn.send("POST", call("flood", {}), session)  # and never read the answer
            with trio.fail_after(20):
                while service._sockets:
                    await trio.sleep(0.01)
            # the server is still there for others
            other = await Conn.open(service.port)
            status, _, _ = await other.request("POST", init_body())
            assert status == 200
            await other.close()
            await conn.close()
    trio.run(main)


def test_leaving_the_block_closes_connections_and_cancels_handlers() -> None:
    async def main() -> None:
        probe = Probe()
        async with start_http(make_server(probe)) as service:
            conn = await Conn.open(service.port)
            body, headers = tool_call("block", {}, 1)
            await conn.send("POST", body, headers)
            await probe.started.wait()
            port = service.port
        assert probe.cancelled.is_set()
        with trio.fail_after(5):
            rest = b""
            with pytest.raises(trio.BrokenResourceError):
                while chunk := await conn.stream.receive_some(65536):
                    rest += chunk
                raise trio.BrokenResourceError  # end of file is as good as a reset
        await conn.close()
        with pytest.raises(OSError):
            await trio.open_tcp_stream("127.0.0.1", port)
    trio.run(main)


def test_serve_http_reports_the_service_to_nursery_start() -> None:
    from mcp_sansio.adapters.trio import serve_http

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            service = await nursery.start(serve_http, make_server(), "127.0.0.1", 0)
            conn = await Conn.open(service.port)
            status, _, _ = await conn.request("POST", init_body())
            assert status == 200
            await conn.close()
            nursery.cancel_scope.cancel()
    trio.run(main)


# -- our trio client against our trio server -------------------------------------------------------


def rtext(result: dict[str, Any]) -> str:
    """The text of a tool result."""
    return str(result["content"][0]["text"])


def run(main: Callable[[], Any]) -> None:
    async def guarded() -> None:
        with trio.fail_after(GUARD):
            await main()
    trio.run(guarded)


@contextlib.asynccontextmanager
async def served_and_connected(probe: Probe | None = None, *, era: Era | None = None,
                               server_options: dict[str, Any] | None = None,
                               **client_options: Any
                               ) -> AsyncIterator[tuple[Any, HTTPClientSession]]:
    async with start_http(make_server(probe), **(server_options or {})) as service, \
            connect_http(service.url, era=era, **client_options) as client:
        yield service, client


@pytest.mark.parametrize("era", ERAS)
def test_client_cancel_scope_cancels_the_handler(era: str) -> None:
    async def main() -> None:
        probe = Probe()
        async with served_and_connected(probe, era=ERAS[era]) as (_, client):
            with trio.move_on_after(GUARD) as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(client.call_tool, "block", {})
                    await probe.started.wait()
                    nursery.cancel_scope.cancel()
            assert not scope.cancelled_caught
            await probe.cancelled.wait()  # notifications/cancelled, or the stream closed
            assert rtext(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
    run(main)


def test_client_timer_rests_after_a_deadline_passed() -> None:
    async def main() -> None:
        probe = Probe()
        async with served_and_connected(probe) as (_, client):
            with pytest.raises(RequestTimeout):
                await client.call_tool("block", {}, timeout=0.1)
            fired = 0
            on_timer = client.on_timer

            def counting() -> None:
                nonlocal fired
                fired += 1
                on_timer()

            client.on_timer = counting  # type: ignore[method-assign]
            await trio.sleep(0.3)
            # nothing is due: the timer task waits (a passed deadline re-armed lazily would
            # fire again and again)
            assert fired < 5
            assert rtext(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
    run(main)


# -- across runtimes -------------------------------------------------------------------------------


def asyncio_server() -> Any:
    """An asyncio server for the trio client."""
    from mcp_sansio.adapters import asyncio as aio

    server = aio.Server("asyncio-side")

    @server.tool()
    async def add(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    @server.tool()
    async def count(n: int, ctx: aio.Context) -> str:
        for i in range(n):
            ctx.progress(i + 1, n)
            await asyncio.sleep(0)
        return "counted"

    return server


@pytest.mark.parametrize("mode", [ResponseMode.SSE, ResponseMode.JSON])
@pytest.mark.parametrize("era", ERAS)
def test_trio_client_against_the_asyncio_server(era: str, mode: ResponseMode) -> None:
    with asyncio_service(asyncio_server(), response_mode=mode) as url:
        async def main() -> None:
            async with connect_http(url, era=ERAS[era]) as client:
                assert client.era is (Era.HANDSHAKE if era == "handshake" else Era.STATELESS)
                assert client.server_info["name"] == "asyncio-side"
                assert rtext(await client.call_tool("add", {"a": 20, "b": 22})) == "42"
                seen: list[float] = []
                result = await client.call_tool("count", {"n": 2},
                                                progress=lambda p, *_: seen.append(p))
                assert rtext(result) == "counted"
                if mode is ResponseMode.SSE:
                    assert seen == [1, 2]
        run(main)


@pytest.mark.parametrize("era", ERAS)
def test_asyncio_client_against_the_trio_server(era: str) -> None:
    from mcp_sansio.adapters import asyncio as aio

    with trio_service(make_server()) as url:
        async def main() -> None:
            async with aio.connect_http(url, era=ERAS[era]) as client:
                assert client.server_info["name"] == "http-trio-test"
                result = await client.call_tool("add_later", {"a": 1, "b": 41})
                assert result["content"][0]["text"] == "42"
        asyncio.run(asyncio.wait_for(main(), GUARD))
