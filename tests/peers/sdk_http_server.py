"""The official Python SDK's Streamable HTTP server as a peer for our HTTP client
(tests/adapters/common/test_http_interop.py, benchmarks/http_layer.py): the same tools,
resources and prompt as tests/peers/sdk_stdio_server.py, served by uvicorn on 127.0.0.1.

Usage: ``sdk_http_server.py [--json] [--stateless] [--idle-timeout SECONDS] [--legacy-sse]
[--cancel-probe]``.
It listens on a free port and prints its URL (``http://127.0.0.1:PORT/mcp``) on stdout once
it accepts connections. ``--json`` answers requests with one JSON object instead of an SSE
stream; ``--legacy-sse`` serves the 2024-11-05 HTTP+SSE transport instead (URL
``http://127.0.0.1:PORT/sse``); ``--cancel-probe`` adds two tools, ``block`` (waits until
cancelled) and ``cancelled_blocks`` (how many were), to see whether a cancellation reached the
SDK's handler.
Nothing here is part of mcp-sansio; the library never imports ``mcp``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import sys
from pathlib import Path

import anyio
import uvicorn

sys.path.insert(0, str(Path(__file__).parent))
from sdk_stdio_server import server

logging.getLogger("mcp").setLevel(logging.WARNING)  # no INFO line per session on stderr

#: How many ``block`` calls were cancelled in this process (what the interop tests read back
#: with ``cancelled_blocks``, to see whether a cancellation reached the SDK's handler).
CANCELLED = [0]


async def block() -> str:
    """Wait until cancelled."""
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        CANCELLED[0] += 1
        raise
    return "never"


def cancelled_blocks() -> int:
    """How many ``block`` calls were cancelled so far."""
    return CANCELLED[0]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true", help="JSON responses, not SSE")
    parser.add_argument("--stateless", action="store_true", help="the SDK's stateless_http")
    parser.add_argument("--idle-timeout", type=float, default=None)
    parser.add_argument("--legacy-sse", action="store_true", help="2024-11-05 HTTP+SSE")
    parser.add_argument("--cancel-probe", action="store_true",
                        help="add the tools block and cancelled_blocks")
    args = parser.parse_args()
    if args.cancel_probe:
        server.tool()(block)
        server.tool()(cancelled_blocks)
    options = {} if args.idle_timeout is None else {"session_idle_timeout": args.idle_timeout}
    if args.legacy_sse:
        app, path = server.sse_app(host="127.0.0.1"), "/sse"
    else:
        app, path = server.streamable_http_app(json_response=args.json,
                                               stateless_http=args.stateless,
                                               host="127.0.0.1", **options), "/mcp"
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it uvicorn's head and body writes meet the client's delayed ACK (40 ms a call).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    userver = uvicorn.Server(config)
    task = asyncio.ensure_future(userver.serve(sockets=[sock]))
    while not userver.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.01)
    sys.stdout.write(f"http://127.0.0.1:{port}{path}\n")
    sys.stdout.flush()
    await task


if __name__ == "__main__":
    asyncio.run(main())
