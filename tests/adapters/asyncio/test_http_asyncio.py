"""The asyncio HTTP server adapter over loopback sockets: both eras, keep-alive, many
concurrent connections, and the CLI. (Malformed HTTP, a closed stream cancelling its
handler and list changes on listen streams: tests/adapters/common/test_http_server_runtimes.py, for
every runtime.)"""

from __future__ import annotations

import asyncio
import sys

from mcp_sansio.adapters.asyncio import Server, start_http

from tests.http_stories import AsyncConn, add_tools, tool_call, url_process
from tests.http_util import init_body


class Conn(AsyncConn):
    """A keep-alive HTTP/1.1 client connection on asyncio's streams."""

    @classmethod
    async def open(cls, port: int) -> Conn:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        async def send_all(data: bytes) -> None:
            writer.write(data)
            await writer.drain()

        async def aclose() -> None:
            writer.close()
            await writer.wait_closed()

        return cls(f"127.0.0.1:{port}", reader.read, send_all, aclose)


def make_server() -> Server:
    server = Server("http-test")

    @server.tool()
    async def add(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    add_tools(server, "echo", "change")
    return server


def test_handshake_era_session_on_one_keep_alive_connection() -> None:
    async def main() -> None:
        async with start_http(make_server()) as service:
            assert service.url == f"http://127.0.0.1:{service.port}/mcp"
            conn = await Conn.open(service.port)
            status, headers, messages = await conn.request("POST", init_body())
            assert status == 200
            assert messages[0]["result"]["serverInfo"]["name"] == "http-test"
            sid = headers["mcp-session-id"]
            assert len(sid) >= 32
            session = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
            status, _, _ = await conn.request(
                "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
            assert status == 202
            status, _, messages = await conn.request(
                "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}, session)
            assert status == 200
            assert messages[-1]["result"]["content"][0]["text"] == "5"
            status, _, _ = await conn.request("DELETE", None, session)
            assert status == 200
            status, _, _ = await conn.request(
                "POST", {"jsonrpc": "2.0", "id": 3, "method": "ping"}, session)
            assert status == 404
            await conn.close()
    asyncio.run(main())


def test_stateless_era_request_with_its_log_on_the_stream() -> None:
    async def main() -> None:
        async with start_http(make_server()) as service:
            conn = await Conn.open(service.port)
            body, headers = tool_call("echo", {"text": "hi"}, 7)
            status, got, messages = await conn.request("POST", body, headers)
            assert status == 200
            assert "mcp-session-id" not in got
            assert messages[-1]["id"] == 7
            assert messages[-1]["result"]["content"][0]["text"] == "hi"
            await conn.close()
    asyncio.run(main())


def test_many_concurrent_connections() -> None:
    async def one(port: int, i: int) -> int:
        conn = await Conn.open(port)
        try:
            body, headers = tool_call("add", {"a": i, "b": 1}, i)
            total = 0
            for _ in range(3):  # keep-alive: several requests per connection
                status, _, messages = await conn.request("POST", body, headers)
                assert status == 200
                total += int(messages[-1]["result"]["content"][0]["text"])
            return total
        finally:
            await conn.close()

    async def main() -> None:
        async with start_http(make_server()) as service:
            results = await asyncio.gather(*(one(service.port, i) for i in range(200)))
            assert results == [3 * (i + 1) for i in range(200)]
            assert not service._sockets or all(
                s.transport is None or s.transport.is_closing()
                for s in service._sockets.values())
    asyncio.run(main())


def test_cli_serve_example_over_http_prints_its_url() -> None:
    with url_process([sys.executable, "-m", "mcp_sansio", "serve-example", "--transport",
                      "http", "--host", "127.0.0.1", "--port", "0"]) as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        port = int(url.rsplit(":", 1)[1].split("/")[0])

        async def main() -> None:
            conn = await Conn.open(port)
            body, headers = tool_call("test_simple_text", {}, 1)
            status, _, messages = await conn.request("POST", body, headers)
            assert status == 200
            assert messages[-1]["result"]["content"][0]["type"] == "text"
            await conn.close()
        asyncio.run(main())
