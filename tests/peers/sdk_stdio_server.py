"""A stdio server built on the official Python SDK (``mcp``): the peer for our client's
interop tests (tests/adapters/common/test_interop.py). Tools to list and call (one reports progress
and can be cancelled, one asks the client for input), a resource, a template, a prompt. Nothing here
is part of mcp-sansio; the library never imports ``mcp``."""

from __future__ import annotations

import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("sdk-peer", version="2.0", instructions="The official SDK, as a peer.")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def countdown(ctx: Context, steps: int = 3, delay: float = 0.05) -> str:
    """Report progress `steps` times, `delay` seconds apart (cancel it to stop it)."""
    for step in range(1, steps + 1):
        await anyio.sleep(delay)
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


class Name(BaseModel):
    name: str


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the user for a name (elicitation)."""
    answer = await ctx.elicit("What is your name?", Name)
    return f"Hello, {answer.data.name}!" if answer.action == "accept" else answer.action


@server.resource("memo://greeting")
def greeting() -> str:
    """A fixed text resource."""
    return "hello from the SDK"


@server.resource("memo://items/{item}")
def item(item: str) -> str:
    """One item, from a template."""
    return f"item {item}"


@server.prompt()
def summarize(topic: str) -> str:
    """Ask for a summary of a topic."""
    return f"Summarize {topic}."


if __name__ == "__main__":
    print("sdk peer starting", file=sys.stderr)
    server.run("stdio")
