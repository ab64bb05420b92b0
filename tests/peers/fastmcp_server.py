"""A FastMCP 4 server as a peer for ``mcp-sansio check`` (checked by hand: the ``fastmcp``
package is not a test dependency; docs/checking.rst lists what it trips): echo, a sleep that
reports progress, one prompt."""

from __future__ import annotations

import asyncio

from fastmcp import Context, FastMCP

mcp = FastMCP("fastmcp-peer")


@mcp.tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool
async def sleep(ctx: Context, seconds: float = 0.1) -> str:
    """Sleep, reporting progress."""
    steps = max(1, min(int(seconds / 0.1), 10_000))
    for step in range(1, steps + 1):
        await asyncio.sleep(0.1)
        await ctx.report_progress(step, steps)
    return f"slept {seconds}"


@mcp.prompt
def greet(name: str) -> str:
    """Greet someone."""
    return f"Say hello to {name}."


if __name__ == "__main__":
    mcp.run()
