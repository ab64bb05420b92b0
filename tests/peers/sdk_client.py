"""The official Python SDK's client (``mcp.Client``) as a client checker sees it: connect,
list the tools, call the first one, leave -- with sampling, elicitation and roots callbacks.

    python sdk_client.py [--mode legacy|auto|2026-07-28] -- SERVER ARGV...   (stdio)
    python sdk_client.py [--mode legacy|auto|2026-07-28] --http URL          (HTTP)

A test peer only: the library never imports ``mcp``.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def sampling(context: Any, params: Any) -> Any:
    return types.CreateMessageResult(role="assistant", model="sdk-client",
                                     content=types.TextContent(type="text", text="hi"))


async def elicitation(context: Any, params: Any) -> Any:
    return types.ElicitResult(action="decline")


async def roots(context: Any) -> Any:
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp", name="tmp")])


async def main(argv: list[str]) -> None:
    mode = "auto"
    if argv[0] == "--mode":
        mode, argv = argv[1], argv[2:]
    server: Any
    if argv[0] == "--http":
        server = argv[1]
    else:
        server = StdioServerParameters(command=argv[1], args=argv[2:])
    async with Client(server, mode=mode, sampling_callback=sampling,
                      elicitation_callback=elicitation, list_roots_callback=roots,
                      read_timeout_seconds=30) as client:
        tools = (await client.list_tools()).tools
        if tools:
            properties = (tools[0].input_schema or {}).get("properties") or {}
            await client.call_tool(tools[0].name, {"text": "hi"} if "text" in properties
                                   else {})


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
