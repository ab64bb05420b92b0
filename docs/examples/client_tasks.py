"""Call a tool as a task, follow its status, await its result, and cancel another one --
against a small server with tasks, spawned over stdio, in both wire forms."""

import asyncio
import sys

from mcp_sansio.adapters import asyncio as mcp
from mcp_sansio.adapters.tasks import TASKS_EXTENSION

from mcp_sansio import Era

SERVER = """
import time
from mcp_sansio.adapters import threading as thr

server = thr.Server("tasks-demo")
server.enable_tasks(poll_interval_ms=50)

@server.tool(task_support="optional")
def report(pages: int) -> str:
    time.sleep(0.2)  # the slow part
    return f"{pages} pages written"

@server.tool(task_support="optional")
def forever(ctx: thr.Context) -> str:
    while not ctx.cancelled:
        time.sleep(0.02)
    return "stopped"

thr.run_stdio(server)
"""


async def demo(**options):
    async with mcp.connect_stdio([sys.executable, "-c", SERVER], **options) as client:
        task = await client.call_tool_as_task(
            "report", {"pages": 3},
            on_status=lambda t: print(f"  {t.task_id[:8]}... is {t.status}"))
        result = await client.task_result(task)  # polls, or waits on tasks/result
        print(" ", result["content"][0]["text"])

        stuck = await client.call_tool_as_task("forever", {})
        await client.cancel_task(stuck)
        print("  the other one is", stuck.status)


print("2025-11-25 (the client asks for a task):")
asyncio.run(demo(era=Era.HANDSHAKE))
print("2026-07-28 (the tasks extension; the server decides):")
asyncio.run(demo(era=Era.STATELESS, capabilities={"extensions": {TASKS_EXTENSION: {}}}))
