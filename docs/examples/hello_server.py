"""An MCP server with one tool, served on stdio (the client is hello_client.py)."""

from mcp_sansio.adapters.asyncio import Server, run_stdio

server = Server("hello")


@server.tool(description="Says hello.")
async def greet(name: str) -> str:
    return f"Hello, {name}!"


if __name__ == "__main__":
    run_stdio(server)
