"""A small mcp-sansio server on the runtime named in argv[1]: a tool that raises, one that
sleeps until cancelled (and says so on stderr), one that prints to stdout, a sync one."""

import sys

from mcp_sansio.app.server import Server

runtime = sys.argv[1] if len(sys.argv) > 1 else "asyncio"
if runtime == "trio":
    import trio
    from mcp_sansio.adapters import trio as adapter

    sleep = trio.sleep
    cancelled: type[BaseException] = trio.Cancelled
else:
    import asyncio

    if runtime == "threading":
        from mcp_sansio.adapters import threading as adapter
    else:
        from mcp_sansio.adapters import asyncio as adapter  # type: ignore[no-redef]
    sleep = asyncio.sleep
    cancelled = asyncio.CancelledError

server = Server("boom")


@server.tool()
async def boom() -> str:
    raise RuntimeError("secret detail that must not leave the process")


@server.tool()
async def slow() -> str:
    try:
        await sleep(30)
    except cancelled:
        sys.stderr.write("slow handler cancelled\n")
        sys.stderr.flush()
        raise
    return "never"


@server.tool()
async def printer(text: str) -> str:
    # One string, so that on threads another handler's stderr line cannot land between
    # print's pieces (print writes its arguments and separators one by one).
    print(f"stray print {text}")
    return text.upper()


@server.tool()
def double(x: int) -> int:
    return 2 * x


adapter.run_stdio(server)
