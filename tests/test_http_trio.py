"""The trio HTTP adapters over loopback sockets: the server checked with a raw HTTP/1.1
client (both eras, JSON and SSE response modes, progress, the GET stream, DELETE, unknown
sessions, cancellation by closing a stream, many concurrent connections, backpressure,
shutdown), our trio client against it, and across runtimes."""

from __future__ import annotations

import json
from typing import Any

import h11
import pytest

trio = pytest.importorskip("trio")

from mcp_sansio.adapters.trio import Context, Server, start_http  # noqa: E402

from mcp_sansio.http import ResponseMode, SSEParser  # noqa: E402

from .http_util import init_body, stateless_meta  # noqa: E402

ACCEPT = "application/json, text/event-stream"


class Conn:
    """A keep-alive HTTP/1.1 client connection on h11 and a trio socket."""

    def __init__(self, stream: Any, host: str) -> None:
        self.stream, self.host = stream, host
        self.h11 = h11.Connection(h11.CLIENT)

    @classmethod
    async def open(cls, port: int) -> Conn:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        return cls(stream, f"127.0.0.1:{port}")

    async def next(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(await self.stream.receive_some(65536))

    async def send(self, method: str, body: Any = None, headers: dict[str, str] | None = None,
                   path: str = "/mcp") -> None:
        data = b"" if body is None else json.dumps(body).encode()
        accept = "text/event-stream" if method == "GET" else ACCEPT
        hdrs = [("host", self.host), ("accept", accept), ("content-length", str(len(data)))]
        if body is not None:
            hdrs.append(("content-type", "application/json"))
        hdrs += list((headers or {}).items())
        out = self.h11.send(h11.Request(method=method, target=path, headers=hdrs)) or b""
        if data:
            out += self.h11.send(h11.Data(data=data)) or b""
        out += self.h11.send(h11.EndOfMessage()) or b""
        await self.stream.send_all(out)

    async def head(self) -> tuple[int, dict[str, str]]:
        event = await self.next()
        assert isinstance(event, h11.Response), event
        return event.status_code, {k.decode(): v.decode() for k, v in event.headers}

    async def request(self, method: str, body: Any = None,
                      headers: dict[str, str] | None = None
                      ) -> tuple[int, dict[str, str], list[Any]]:
        """Send, read the whole answer; the JSON-RPC messages it carried."""
        await self.send(method, body, headers)
        status, got = await self.head()
        raw = b""
        while not isinstance(event := await self.next(), h11.EndOfMessage):
            raw += event.data
        self.h11.start_next_cycle()
        messages: list[Any] = []
        if got.get("content-type", "").startswith("text/event-stream"):
            messages = [json.loads(e.data) for e in SSEParser().feed(raw) if e.data]
        elif raw:
            messages = [json.loads(raw)]
        return status, got, messages

    async def close(self) -> None:
        await self.stream.aclose()


class Stream:
    """The SSE messages of one streaming response, read as they come."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.parser = SSEParser()
        self.queue: list[Any] = []

    async def message(self) -> Any:
        while not self.queue:
            event = await self.conn.next()
            assert isinstance(event, h11.Data), event
            self.queue += [json.loads(e.data) for e in self.parser.feed(event.data) if e.data]
        return self.queue.pop(0)


def stateless(method: str, params: dict[str, Any], request_id: int = 1,
              name: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**params, "_meta": stateless_meta()}}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return body, headers


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
    async def echo(text: str, ctx: Context) -> str:
        ctx.log("info", f"echo {text}")
        return text

    @server.tool()
    async def count(n: int, ctx: Context) -> str:
        for i in range(n):
            ctx.progress(i + 1, n)
            await trio.sleep(0)
        return "counted"

    @server.tool()
    async def change(ctx: Context) -> str:
        ctx.notify_list_changed("tools")
        return "changed"

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("name?", {"type": "object", "properties": {}})
        return str(answer)

    @server.tool()
    async def block() -> str:
        assert probe is not None
        probe.started.set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            probe.cancelled.set()
            raise
        return "never"

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
        async with start_http(make_server()) as service:
            assert service.url == f"http://127.0.0.1:{service.port}/mcp"
            conn = await Conn.open(service.port)
            session = await handshake(conn)
            assert len(session["mcp-session-id"]) >= 32
            status, got, messages = await conn.request("POST", call("add", {"a": 2, "b": 3}),
                                                       session)
            # answered before the handler suspended: a plain JSON response
            assert status == 200 and got["content-type"] == "application/json"
            assert text(messages[-1]) == "5"
            status, got, messages = await conn.request(
                "POST", call("add_later", {"a": 2, "b": 3}, 3), session)
            # the handler suspended: the request's SSE stream carries the answer
            assert status == 200 and got["content-type"] == "text/event-stream"
            assert messages[-1]["id"] == 3 and text(messages[-1]) == "5"
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


# -- the server, stateless era ---------------------------------------------------------------------


def test_stateless_era_request_with_its_log_on_the_stream() -> None:
    async def main() -> None:
        async with start_http(make_server()) as service:
            conn = await Conn.open(service.port)
            body, headers = stateless("tools/call",
                                      {"name": "add", "arguments": {"a": 1, "b": 2}}, 5, "add")
            status, got, messages = await conn.request("POST", body, headers)
            assert status == 200 and got["content-type"] == "application/json"
            assert "mcp-session-id" not in got
            assert messages[-1]["id"] == 5 and text(messages[-1]) == "3"
            body, headers = stateless("tools/call",
                                      {"name": "count", "arguments": {"n": 2}}, 6, "count")
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
            body, headers = stateless("tools/call", {"name": "ask", "arguments": {}}, 1, "ask")
            status, got, messages = await conn.request("POST", body, headers)
            assert status == 400 and got["content-type"] == "application/json"
            assert messages[0]["error"]["code"] == -32021
            # and GET / DELETE are not part of the stateless era
            status, _, _ = await conn.request("GET", None, {"mcp-protocol-version": "2026-07-28"})
            assert status == 405
            await conn.close()
    trio.run(main)


def test_closing_a_stateless_stream_cancels_its_handler() -> None:
    async def main() -> None:
        probe = Probe()
        async with start_http(make_server(probe)) as service:
            conn = await Conn.open(service.port)
            body, headers = stateless("tools/call", {"name": "block", "arguments": {}}, 1,
                                      "block")
            await conn.send("POST", body, headers)
            await probe.started.wait()
            await conn.close()
            await probe.cancelled.wait()
            # the server goes on serving
            conn = await Conn.open(service.port)
            body, headers = stateless("tools/call", {"name": "add",
                                                     "arguments": {"a": 1, "b": 1}}, 1, "add")
            status, _, messages = await conn.request("POST", body, headers)
            assert status == 200 and text(messages[-1]) == "2"
            await conn.close()
    trio.run(main)


def test_a_list_change_reaches_the_listen_streams_of_other_requests() -> None:
    async def main() -> None:
        async with start_http(make_server()) as service:
            listen = await Conn.open(service.port)
            body, headers = stateless("subscriptions/listen",
                                      {"notifications": {"toolsListChanged": True}}, 1)
            await listen.send("POST", body, headers)
            assert (await listen.head())[0] == 200
            stream = Stream(listen)
            first = await stream.message()
            assert first["method"] == "notifications/subscriptions/acknowledged"
            other = await Conn.open(service.port)
            body, headers = stateless("tools/call", {"name": "change", "arguments": {}}, 2,
                                      "change")
            status, _, messages = await other.request("POST", body, headers)
            assert status == 200 and text(messages[-1]) == "changed"
            changed = await stream.message()
            assert changed["method"] == "notifications/tools/list_changed"
            await other.close()
            await listen.close()
    trio.run(main)


# -- the server, connections ---------------------------------------------------------------------


def test_many_concurrent_connections() -> None:
    results: dict[int, int] = {}

    async def one(port: int, i: int) -> None:
        conn = await Conn.open(port)
        try:
            name = "add" if i % 2 else "add_later"
            body, headers = stateless("tools/call",
                                      {"name": name, "arguments": {"a": i, "b": 1}}, i, name)
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


def test_malformed_http_gets_400_and_the_server_goes_on() -> None:
    async def main() -> None:
        async with start_http(make_server()) as service:
            stream = await trio.open_tcp_stream("127.0.0.1", service.port)
            await stream.send_all(b"NOT HTTP AT ALL\r\n\r\n")
            data = b""
            while chunk := await stream.receive_some(65536):  # the server closes after it
                data += chunk
            assert data.startswith(b"HTTP/1.1 400")
            await stream.aclose()
            conn = await Conn.open(service.port)
            status, _, _ = await conn.request("POST", init_body())
            assert status == 200
            await conn.close()
    trio.run(main)


def test_a_request_followed_by_a_half_close_is_answered_first() -> None:
    async def main() -> None:
        async with start_http(make_server()) as service:
            stream = await trio.open_tcp_stream("127.0.0.1", service.port)
            conn = Conn(stream, f"127.0.0.1:{service.port}")
            body, headers = stateless("tools/call",
                                      {"name": "add", "arguments": {"a": 4, "b": 4}}, 1, "add")
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
            body, headers = stateless("tools/call", {"name": "block", "arguments": {}}, 1,
                                      "block")
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
