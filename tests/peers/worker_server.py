"""One of several server processes that share a request-state key, for the tests that send
each request to the next process in turn (tests/adapters/common/test_http_processes.py).

Usage: ``python worker_server.py RUNTIME [--sessionless]``, with the key in hex in the
``MCP_SANSIO_TEST_STATE_KEY`` environment variable. Serves, on a free loopback port, the
example server (page size 4, so that its lists span pages) plus three tools that show which
process did what: ``whoami`` (this process's id), ``sealed_where`` (a 2026-07-28
multi-round-trip call whose requestState names the process that sealed it) and
``ask_name`` (asks for elicitation and reports what happened instead). Prints the URL on
stdout once it listens, like ``mcp-sansio serve-example --transport http``.

:func:`build` is the server definition on its own, for launchers that serve it some other
way (an ASGI engine's workers).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from mcp_sansio.adapters.common.async_session import AsyncContext
from mcp_sansio.adapters.tools import _example_server

from mcp_sansio import SessionlessError
from mcp_sansio.app.context import elicit_request
from mcp_sansio.app.server import Server

#: Items per page of every list (the example server has dozens of tools).
PAGE_SIZE = 4
KEY_VARIABLE = "MCP_SANSIO_TEST_STATE_KEY"
_CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def build(runtime: str) -> Server:
    server = _example_server.build(_example_server._sleep_for(runtime))
    server.page_size = PAGE_SIZE

    @server.tool(description="This process's id.")
    async def whoami() -> str:
        return str(os.getpid())

    @server.tool(description="Asks for a confirmation; the answer says which process sealed "
                             "the requestState and which one opened it.")
    async def sealed_where(ctx: AsyncContext) -> str:
        await ctx.ask({"confirm": elicit_request("Please confirm", _CONFIRM)},
                      request_state=f"sealed-by-{os.getpid()}")
        return f"{ctx.request_state} opened-by-{os.getpid()}"

    @server.tool(description="Asks the user's name; says what happened if it cannot.")
    async def ask_name(ctx: AsyncContext) -> str:
        try:
            answer = await ctx.elicit("What is your name?", {
                "type": "object", "properties": {"name": {"type": "string"}}})
        except SessionlessError as exc:
            return f"refused: {exc}"
        return f"answered: {answer}"

    return server


def main(argv: list[str]) -> None:
    runtime = argv[0]
    key = bytes.fromhex(os.environ[KEY_VARIABLE])
    adapter = importlib.import_module(f"mcp_sansio.adapters.{runtime}")
    options: dict[str, Any] = {"request_state_key": key}
    if "--sessionless" in argv[1:]:
        options["sessionless"] = True
    adapter.run_http(build(runtime), "127.0.0.1", 0, **options)


if __name__ == "__main__":
    main(sys.argv[1:])
