"""Spawn hello_server.py with this very Python and call its tool over stdio."""

import asyncio
import sys
from pathlib import Path

from mcp_sansio.adapters.asyncio import connect_stdio

SERVER = Path(__file__).with_name("hello_server.py")


async def main() -> None:
    async with connect_stdio([sys.executable, str(SERVER)]) as client:
        print(client.server_info["name"], client.protocol_version)
        print([tool["name"] for tool in await client.list_tools()])
        result = await client.call_tool("greet", {"name": "Ada"}, timeout=10)
        print(result["content"][0]["text"])


if __name__ == "__main__":
    asyncio.run(main())
