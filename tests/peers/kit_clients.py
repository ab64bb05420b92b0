"""Our own high-level clients, as a client checker sees them: connect, list the tools, call
the first one, leave -- declaring sampling, elicitation and roots.

    python kit_clients.py RUNTIME [--era handshake|stateless] -- SERVER ARGV...   (stdio)
    python kit_clients.py RUNTIME [--era handshake|stateless] --http URL          (HTTP)

``RUNTIME`` is ``asyncio``, ``trio`` or ``threads``. Exit status 0 when the exercise
completed.
"""

from __future__ import annotations

import sys
from typing import Any

from mcp_sansio import Era

OPTIONS: dict[str, Any] = {
    "sampling": lambda params: {"role": "assistant", "model": "kit-client",
                                "content": {"type": "text", "text": "hi"}},
    "elicitation": lambda params: {"action": "decline"},
    "roots": [{"uri": "file:///tmp", "name": "tmp"}],
    "info": {"name": "kit-client", "version": "1"},
    "request_timeout": 30.0,
}


#: Further exercises a test switches on (stateless era): ``"listen"`` opens a
#: ``subscriptions/listen`` stream, takes one notification from it and closes it; ``"task"``
#: calls the tool as a task (the 2026-07-28 tasks extension, which the test then declares in
#: ``OPTIONS["capabilities"]``) and waits for its outcome.
EXERCISES: set[str] = set()


def arguments(tool: dict[str, Any]) -> dict[str, Any]:
    properties = (tool.get("inputSchema") or {}).get("properties") or {}
    return {"text": "hi"} if "text" in properties else {}


async def run_async(adapter: Any, target: list[str], http: bool, era: Era | None) -> None:
    if http:
        opened = adapter.connect_http(target[0], era=era, **OPTIONS)
    else:
        opened = adapter.connect_stdio(target, era=era, **OPTIONS)
    async with opened as client:
        if "listen" in EXERCISES:
            subscription = await client.listen({"toolsListChanged": True})
            async for _ in subscription:
                break
            await subscription.close()
        tools = await client.list_tools()
        if tools and "task" in EXERCISES:
            task = await client.call_tool_as_task(tools[0]["name"], arguments(tools[0]))
            await client.task_result(task)
        elif tools:
            await client.call_tool(tools[0]["name"], arguments(tools[0]))


def run_threads(target: list[str], http: bool, era: Era | None) -> None:
    from mcp_sansio.adapters import threading as adapter

    if http:
        opened = adapter.connect_http(target[0], era=era, **OPTIONS)
    else:
        opened = adapter.connect_stdio(target, era=era, **OPTIONS)
    with opened as client:
        if "listen" in EXERCISES:
            subscription = client.listen({"toolsListChanged": True})
            for _ in subscription:
                break
            subscription.close()
        tools = client.list_tools()
        if tools and "task" in EXERCISES:
            client.task_result(client.call_tool_as_task(tools[0]["name"],
                                                        arguments(tools[0])))
        elif tools:
            client.call_tool(tools[0]["name"], arguments(tools[0]))


def main(argv: list[str]) -> int:
    runtime, rest = argv[0], argv[1:]
    era: Era | None = None
    if rest[0] == "--era":
        era = Era(rest[1])
        rest = rest[2:]
    http = rest[0] == "--http"
    target = rest[1:]
    if runtime == "threads":
        run_threads(target, http, era)
    elif runtime == "trio":
        import trio
        from mcp_sansio.adapters import trio as trio_adapter

        trio.run(run_async, trio_adapter, target, http, era)
    else:
        import asyncio

        from mcp_sansio.adapters import asyncio as asyncio_adapter

        asyncio.run(run_async(asyncio_adapter, target, http, era))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
