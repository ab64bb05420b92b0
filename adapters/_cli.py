"""The I/O half of the ``mcp-sansio`` command line: ``demo``, ``serve-example`` and ``probe``.

``mcp_sansio/__main__.py`` parses the arguments and calls into this module, which lives with
the adapters because it spawns processes and runs event loops (the core never does).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import shutil
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from mcp_sansio import HANDSHAKE_REVISIONS, STATELESS_REVISIONS, Era, __version__

from . import _example_server
from ._session import ConnectionClosedError, McpError, RequestTimeout

__all__ = ["RUNTIMES", "demo", "probe", "serve_example"]

RUNTIMES = _example_server.RUNTIMES

#: The example server, as this interpreter runs it. ``-P`` keeps the current directory off
#: ``sys.path``: run from a source checkout, ``-m`` would otherwise import the checkout's
#: ``mcp_sansio/`` (which has no ``adapters`` subpackage until installed) instead of the
#: installed package.
EXAMPLE_COMMAND = [sys.executable, "-P", "-m", "mcp_sansio", "serve-example"]


def _missing_runtime(runtime: str, command: str) -> bool:
    """Say so (and return True) when the runtime's package is not installed."""
    if runtime == "trio" and importlib.util.find_spec("trio") is None:
        sys.stderr.write(f"mcp-sansio {command}: the trio runtime needs trio: "
                         "pip install 'mcp-sansio[trio]'\n")
        return True
    return False


def serve_example(runtime: str, *, transport: str = "stdio", host: str = "127.0.0.1",
                  port: int = 0) -> int:
    if _missing_runtime(runtime, "serve-example"):
        return 2
    if transport == "http":
        if runtime != "asyncio":
            sys.stderr.write(f"mcp-sansio serve-example: --transport http runs on asyncio "
                             f"only for now, not {runtime}\n")
            return 2
        _example_server.run_http(host, port)
        return 0
    _example_server.run(runtime)
    return 0


# -- demo --------------------------------------------------------------------------------------


def _elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


async def _demo(out: TextIO, revision: str) -> int:
    import asyncio

    from .asyncio import connect_stdio

    def say(text: str = "") -> None:
        out.write(text + "\n")
        out.flush()

    command = [*EXAMPLE_COMMAND, "--runtime", "asyncio"]
    say(f"# mcp-sansio {__version__} demo: the example server as a subprocess over stdio "
        "(asyncio)")
    say(f"# $ {' '.join(['python', *command[1:]])}")
    async with connect_stdio(command, versions=[revision]) as client:
        say(f"1. handshake: {client.protocol_version} ({client.era.value if client.era else '?'}"
            f" era) with {client.server_info.get('name')} {client.server_info.get('version')}")
        tools = await client.list_tools()
        names = [t["name"] for t in tools]
        say(f"2. tools/list: {len(tools)} tools: {', '.join(names[:5])}, ...")

        say("3. tools/call sleep(seconds=0.5), asking for progress:")

        def progress(value: float, total: float | None, message: str | None) -> None:
            say(f"     progress {value:g}/{total:g}: {message}")

        result = await client.call_tool("sleep", {"seconds": 0.5}, progress=progress,
                                        timeout=10)
        say(f"   -> {result['content'][0]['text']!r}")

        say("4. a cancelled call: sleep(seconds=30), cancelled after 0.3 s")
        call = asyncio.ensure_future(client.call_tool("sleep", {"seconds": 30}))
        await asyncio.sleep(0.3)
        call.cancel()
        try:
            await call
        except asyncio.CancelledError:
            say("   -> the task was cancelled; notifications/cancelled went to the server, "
                "which cancelled its handler and answers nothing for it")
        pong = await client.ping(timeout=10)
        say(f"   ping afterwards: {pong} (the connection goes on)")
    say(f"   closed: stdin closed, the server exited with status {client.returncode}")

    say(f"5. stateless era ({STATELESS_REVISIONS[-1]}): a new connection; server/discover "
        "instead of initialize")
    async with connect_stdio(command, elicitation=_elicit) as client:
        say(f"   negotiated {client.protocol_version} ({client.era.value if client.era else '?'}"
            " era)")
        result = await client.call_tool("test_input_required_result_elicitation",
                                        timeout=10)
        say("   tools/call test_input_required_result_elicitation -> input_required; "
            "the elicitation callback answered, the call was retried")
        say(f"   -> {result['content'][0]['text']!r}")
    say(f"# done: the server exited with status {client.returncode}")
    return 0


def demo(out: TextIO, revision: str = HANDSHAKE_REVISIONS[-1]) -> int:
    import asyncio  # here: serving on trio or threads should not pay for importing it

    try:
        return asyncio.run(_demo(out, revision))
    except (ConnectionClosedError, McpError, RequestTimeout, OSError) as exc:
        sys.stderr.write(f"mcp-sansio demo: {exc}\n")
        return 1


# -- probe -------------------------------------------------------------------------------------


def _table(out: TextIO, title: str, columns: Sequence[str], rows: list[list[str]]) -> None:
    out.write(f"\n{title} ({len(rows)})\n")
    if not rows:
        out.write("  (none)\n")
        return
    width = shutil.get_terminal_size((120, 24)).columns
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    budget = max(20, width - sum(widths[:-1]) - 2 * len(columns) - 2)
    widths[-1] = min(widths[-1], budget)

    def line(cells: Sequence[str]) -> str:
        cut = [c if len(c) <= w else c[:max(w - 1, 0)] + "…" for c, w in zip(cells, widths,
                                                                           strict=True)]
        return "  " + "  ".join(c.ljust(w) for c, w in zip(cut, widths, strict=True)).rstrip()

    out.write(line(columns) + "\n")
    out.write(line(["-" * w for w in widths]) + "\n")
    for row in rows:
        out.write(line(row) + "\n")


def _first_line(text: object) -> str:
    return str(text or "").strip().splitlines()[0] if str(text or "").strip() else ""


async def _probe_lists(client: Any) -> dict[str, list[dict[str, Any]]]:
    caps = client.server_capabilities
    found: dict[str, list[dict[str, Any]]] = {}
    if "tools" in caps:
        found["tools"] = await client.list_tools()
    if "resources" in caps:
        found["resources"] = await client.list_resources()
        found["templates"] = await client.list_resource_templates()
    if "prompts" in caps:
        found["prompts"] = await client.list_prompts()
    return found


def _report(out: TextIO, client: Any, found: dict[str, list[dict[str, Any]]],
            took: float) -> None:
    era = client.era.value if client.era else "?"
    info = client.server_info
    out.write(f"era       {era}\nversion   {client.protocol_version}\n")
    out.write(f"server    {info.get('name')} {info.get('version')}"
              f"{' (' + info['title'] + ')' if info.get('title') else ''}\n")
    out.write(f"connected in {took * 1000:.0f} ms\n")
    if client.instructions:
        out.write(f"instructions  {_first_line(client.instructions)}\n")
    out.write("capabilities  " + json.dumps(client.server_capabilities, sort_keys=True) + "\n")
    if "tools" in found:
        _table(out, "tools", ["name", "description"],
               [[t.get("name", ""), _first_line(t.get("description"))]
                for t in found["tools"]])
    if "resources" in found:
        _table(out, "resources", ["uri", "name", "mimeType"],
               [[r.get("uri", ""), str(r.get("name", "")), str(r.get("mimeType", ""))]
                for r in found["resources"]])
        _table(out, "resource templates", ["uriTemplate", "name"],
               [[r.get("uriTemplate", ""), str(r.get("name", ""))]
                for r in found["templates"]])
    if "prompts" in found:
        _table(out, "prompts", ["name", "arguments", "description"],
               [[p.get("name", ""),
                 ", ".join(a.get("name", "") + ("" if a.get("required") else "?")
                           for a in p.get("arguments") or []),
                 _first_line(p.get("description"))] for p in found["prompts"]])


def _adapter(runtime: str) -> Any:
    """The adapter module of a runtime (imported only when asked for: trio is an extra)."""
    return importlib.import_module(f"{__package__}.{runtime}")


async def _probe_async(runtime: str, command: Sequence[str], era: Era | None,
                       timeout: float) -> tuple[Any, dict[str, list[dict[str, Any]]], float]:
    started = time.monotonic()
    async with _adapter(runtime).connect_stdio(list(command), era=era, request_timeout=timeout,
                             shutdown_timeout=1.0) as client:
        took = time.monotonic() - started
        return client, await _probe_lists(client), took


def probe(out: TextIO, command: Sequence[str], *, runtime: str = "asyncio",
          era: str | None = None, timeout: float = 10.0, verbose: bool = False) -> int:
    """Connect to a stdio server, print what it offers; 0 on success, 1 with a clear
    message on failure."""
    logging.basicConfig(level=logging.INFO if verbose else logging.CRITICAL,
                        stream=sys.stderr, format="%(name)s: %(message)s")
    if not command:
        sys.stderr.write("mcp-sansio probe: no server command given (probe -- COMMAND ...)\n")
        return 2
    cached = Era(era) if era else None
    if _missing_runtime(runtime, "probe"):
        return 2
    try:
        if runtime == "asyncio":
            import asyncio

            client, found, took = asyncio.run(_probe_async(runtime, command, cached, timeout))
        elif runtime == "trio":
            trio: Any = importlib.import_module("trio")
            client, found, took = trio.run(_probe_async, runtime, command, cached, timeout)
        else:
            client, found, took = _probe_threads(command, cached, timeout)
    except FileNotFoundError as exc:
        sys.stderr.write(f"mcp-sansio probe: cannot run {command[0]!r}: {exc.strerror}\n")
        return 1
    except (ConnectionClosedError, McpError, RequestTimeout, OSError) as exc:
        sys.stderr.write(f"mcp-sansio probe: {' '.join(command)}: {exc}\n")
        return 1
    _report(out, client, found, took)
    return 0


def _probe_threads(command: Sequence[str], era: Era | None, timeout: float
                   ) -> tuple[Any, dict[str, list[dict[str, Any]]], float]:
    started = time.monotonic()
    with _adapter("threading").connect_stdio(list(command), era=era, request_timeout=timeout,
                       shutdown_timeout=1.0) as client:
        took = time.monotonic() - started
        caps = client.server_capabilities
        found: dict[str, list[dict[str, Any]]] = {}
        if "tools" in caps:
            found["tools"] = client.list_tools()
        if "resources" in caps:
            found["resources"] = client.list_resources()
            found["templates"] = client.list_resource_templates()
        if "prompts" in caps:
            found["prompts"] = client.list_prompts()
        return client, found, took
