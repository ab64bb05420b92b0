"""A small stdio server on the official Python SDK (``mcp``): ``echo``, a ``sleep`` that
reports progress, one prompt. The peer of the checker's "never a traceback" tests
(tests/check/test_check_proof.py); nothing here is part of mcp-sansio."""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sdk-small", version="1.0")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
async def sleep(ctx: Context, seconds: float = 0.1) -> str:
    """Sleep, reporting progress every 0.1 s."""
    steps = max(1, min(int(seconds / 0.1), 10_000))
    for step in range(1, steps + 1):
        await anyio.sleep(0.1)
        await ctx.report_progress(step, steps)
    return f"slept {seconds}"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Say hello to {name}."


if __name__ == "__main__":
    server.run("stdio")
