"""The runtime-free half of the adapters: routing and shaping in ``Server``, pagination on
both sides, the stderr line logger, and the signature binding."""

from __future__ import annotations

import asyncio
import base64
import logging
import sys
from typing import Any

import pytest
from mcp_sansio.adapters.asyncio import connect_stdio
from mcp_sansio.adapters.common.stdio import LineLogger

from mcp_sansio import Request
from mcp_sansio.app.context import Context, tool_error_result
from mcp_sansio.app.errors import McpError
from mcp_sansio.app.server import Server, ServerLogic


def route(server: Server, method: str, params: dict[str, Any] | None = None) -> Any:
    session = ServerLogic(server.connection(), server)
    request = Request(request_id=1, method=method, params=params)
    job = server._route(request, Context(session, request))
    if job.fn is None:
        return job.shape(None)
    value = job.fn(*job.args, **job.kwargs)
    if asyncio.iscoroutine(value):
        value = asyncio.run(value)
    return job.shape(value)


def make_server() -> Server:
    server = Server("unit", page_size=2)
    for i in range(5):
        server.add_tool(lambda i=i: f"tool {i}", name=f"t{i}", description=f"tool {i}")

    @server.tool(output_schema={"type": "object"})
    def structured(x: int, y: int = 1) -> dict[str, int]:
        return {"product": x * y}

    @server.resource("mem://bytes", mime_type="application/octet-stream")
    def raw() -> bytes:
        return b"\x00\x01"

    @server.resource("mem://{a}/{b}")
    def pair(a: str, b: str) -> dict[str, str]:
        return {"a": a, "b": b}

    @server.prompt()
    def messages(topic: str, tone: str = "calm") -> list[dict[str, Any]]:
        return [{"role": "user", "content": {"type": "text", "text": f"{topic} {tone}"}}]

    @server.completion()
    def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        return [f"v{i}" for i in range(150)]

    return server


def test_pages_and_cursors() -> None:
    server = make_server()
    first = route(server, "tools/list")
    assert [t["name"] for t in first["tools"]] == ["t0", "t1"] and first["nextCursor"] == "2"
    last = route(server, "tools/list", {"cursor": "4"})
    assert [t["name"] for t in last["tools"]] == ["t4", "structured"]
    assert "nextCursor" not in last
    with pytest.raises(McpError) as info:
        route(server, "tools/list", {"cursor": "nonsense"})
    assert info.value.code == -32602


def test_shaping_of_results() -> None:
    server = make_server()
    result = route(server, "tools/call", {"name": "structured", "arguments": {"x": 6, "y": 7}})
    assert result["structuredContent"] == {"product": 42}
    assert route(server, "tools/call", {"name": "structured", "arguments": {"z": 1}})[
        "isError"] is True
    assert route(server, "tools/call", {"name": "structured", "arguments": []})["isError"]
    blob = route(server, "resources/read", {"uri": "mem://bytes"})["contents"][0]
    assert base64.b64decode(blob["blob"]) == b"\x00\x01"
    pair = route(server, "resources/read", {"uri": "mem://x/y"})["contents"][0]
    assert pair["text"] == '{"a": "x", "b": "y"}'
    assert route(server, "prompts/get", {"name": "messages", "arguments": {"topic": "t"}})[
        "messages"][0]["content"]["text"] == "t calm"
    with pytest.raises(McpError):
        route(server, "prompts/get", {"name": "messages", "arguments": {}})
    values = route(server, "completion/complete", {"ref": {}, "argument": {}})["completion"]
    assert len(values["values"]) == 100
    with pytest.raises(McpError) as info:
        route(server, "nope/nope")
    assert info.value.code == -32601
    assert tool_error_result("x") == {"content": [{"type": "text", "text": "x"}],
                                      "isError": True}


def test_schema_from_signature_and_capabilities() -> None:
    server = make_server()
    schema = server.tools["structured"].definition["inputSchema"]
    assert schema == {"type": "object", "properties": {"x": {"type": "integer"},
                                                       "y": {"type": "integer"}},
                      "required": ["x"]}
    assert server.prompts["messages"].definition["arguments"] == [
        {"name": "topic", "required": True}, {"name": "tone", "required": False}]
    assert server.templates["mem://{a}/{b}"].definition["uriTemplate"] == "mem://{a}/{b}"
    caps = server.capabilities()
    assert caps["tools"] == {"listChanged": True}
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    assert Server("bare", list_changed=False).capabilities() == {"logging": {}}


def test_line_logger(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.lines")
    lines = LineLogger(logger, max_line=8)
    with caplog.at_level(logging.INFO, logger="test.lines"):
        lines.feed(b"one\r\ntw")
        lines.feed(b"o\nthree-is-long\n")
        lines.feed(b"0123456789")
        lines.feed(b"")
    assert [r.getMessage() for r in caplog.records] == [
        "one", "two", "three-is", "-long", "01234567", "89"]


def test_client_follows_every_page() -> None:
    script = (
        "from mcp_sansio.adapters.asyncio import Server, run_stdio\n"
        "server = Server('paged', page_size=3)\n"
        "for i in range(8):\n"
        "    server.add_tool(lambda: 'x', name=f'tool{i}', description='x')\n"
        "    server.add_prompt(lambda: 'x', name=f'prompt{i}')\n"
        "run_stdio(server)\n"
    )

    async def main() -> tuple[list[str], list[str]]:
        async with connect_stdio([sys.executable, "-c", script]) as client:
            return ([t["name"] for t in await client.list_tools()],
                    [p["name"] for p in await client.list_prompts()])

    tools, prompts = asyncio.run(asyncio.wait_for(main(), 60))
    assert tools == [f"tool{i}" for i in range(8)]
    assert prompts == [f"prompt{i}" for i in range(8)]
