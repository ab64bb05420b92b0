"""Serve the hello server over Streamable HTTP in this process, and call it by its URL."""

import asyncio

from hello_server import server
from mcp_sansio.adapters.asyncio import connect_http, start_http


async def main() -> None:
    async with start_http(server, "127.0.0.1", 0) as service:  # port 0: any free port
        print(service.url)  # e.g. http://127.0.0.1:53813/mcp
        async with connect_http(service.url) as client:
            result = await client.call_tool("greet", {"name": "Ada"}, timeout=10)
            print(result["content"][0]["text"])


if __name__ == "__main__":
    asyncio.run(main())
