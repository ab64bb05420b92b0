"""A small server built on the official Python SDK (``mcp``), run over stdio.

It is a test peer for ``mcp_sansio.testing`` (tests/check/test_testing_kit.py): tools, prompts
and resources to list and call, a slow tool to cancel, a tool that reports progress, a
resource whose read fails inside the handler. Nothing here is part of mcp-sansio.
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sdk-kit-server", version="1.0")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def slow(ctx: Context, seconds: float = 0.2) -> str:
    """Sleep a little (at most half a second), reporting progress twice."""
    delay = min(max(seconds, 0.0), 0.5)
    await ctx.report_progress(1, 2)
    await anyio.sleep(delay)
    await ctx.report_progress(2, 2)
    return "done"


@server.resource("memo://greeting")
def greeting() -> str:
    """A fixed text resource."""
    return "hello"


@server.resource("memo://broken")
def broken() -> str:
    """A resource whose handler fails."""
    raise RuntimeError("secret internal detail")


@server.prompt()
def summarize(topic: str) -> str:
    """Ask for a summary of a topic."""
    return f"Summarize {topic}."


if __name__ == "__main__":
    server.run("stdio")
