"""A FastMCP 4 client as a peer for ``mcp-sansio check --client`` (checked by hand: the
``fastmcp`` package is not a test dependency; docs/checking-clients.rst lists what it
trips). Connects, lists the tools, calls the first with ``text``, leaves.

    python fastmcp_client.py -- SERVER ARGV...   (stdio)
    python fastmcp_client.py --http URL          (Streamable HTTP)
"""

from __future__ import annotations

import asyncio
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport


async def main(argv: list[str]) -> int:
    if argv[0] == "--http":
        transport: object = StreamableHttpTransport(argv[1])
    else:
        command = argv[1:]
        transport = StdioTransport(command=command[0], args=command[1:])
    async with Client(transport) as client:  # type: ignore[arg-type]
        tools = await client.list_tools()
        if tools:
            await client.call_tool(tools[0].name, {"text": "hi"})
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
