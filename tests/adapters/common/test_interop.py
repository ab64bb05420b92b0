"""Interop with real peers over stdio, both eras:

* our client, on each runtime, against the official Python SDK's stdio server
  (tests/peers/sdk_stdio_server.py);
* the official SDK's stdio client against our example server on each runtime;
* our client, on each runtime, against the TypeScript reference server
  ``@modelcontextprotocol/server-everything`` (installed by npm into .cache/npm, once).

List tools, call tools, read resources, get prompts, progress, cancellation, and answering the
server's requests (sampling, elicitation, roots). No wall-clock assertion.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
from typing import Any

import anyio
import pytest
import trio
from mcp_sansio.adapters import threading as threading_adapter

from mcp_sansio import HANDSHAKE_REVISIONS, Era
from mcp_sansio.app.errors import RequestCancelledError
from tests.adapters.common.test_adapter_runtimes import RUNTIMES, example, run_client, text_of
from tests.paths import PEERS, ROOT

SDK_SERVER = [sys.executable, str(PEERS / "sdk_stdio_server.py")]
ERAS = {"handshake": list(HANDSHAKE_REVISIONS), "stateless": None}
EVERYTHING_VERSION = "2026.8.31"

mcp = pytest.importorskip("mcp", reason="the official SDK is a test dependency")


def sampling(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}


def elicitation(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ann", "color": "blue"}}


CALLBACKS: dict[str, Any] = {"sampling": sampling, "elicitation": elicitation,
                             "roots": [{"uri": "file:///tmp", "name": "tmp"}]}


async def cancel_after(runtime: str, seconds: float, call: Any) -> bool:
    """Start ``call()``, cancel it the runtime's way after ``seconds``; True if cancelled."""
    if runtime == "trio":
        with trio.move_on_after(seconds) as scope:
            await call()
        return scope.cancelled_caught
    task = asyncio.ensure_future(call())
    await asyncio.sleep(seconds)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return True
    return False


def sync_cancel_after(seconds: float, call: Any) -> bool:
    token = threading_adapter.CancelToken()
    timer = threading.Timer(seconds, token.cancel)
    timer.start()
    try:
        call(token)
    except RequestCancelledError:
        return True
    finally:
        timer.join()
    return False


# -- our client <-> the official SDK's server --------------------------------------------------


def check_sdk_story(got: dict[str, Any], era: str) -> None:
    assert got["era"] is (Era.HANDSHAKE if era == "handshake" else Era.STATELESS)
    assert got["server"] == "sdk-peer"
    assert got["tools"] == ["echo", "add", "countdown", "ask_name"]
    assert got["echo"] == "hi" and got["add"] == "5"
    assert got["countdown"] == "counted 3" and got["progress"] == [1, 2, 3]
    assert got["resources"] == ["memo://greeting"]
    assert got["templates"] == ["memo://items/{item}"]
    assert got["item"] == "item 7" and got["prompt"] == "Summarize mcp."
    assert got["cancelled"] is True and got["after"] == "after"
    if era == "handshake":
        assert got["ask"] == "Hello, Ann!"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_our_client_with_the_sdk_server(runtime: str, era: str) -> None:
    if runtime == "threading":
        def body(c: Any) -> dict[str, Any]:
            progress: list[float] = []
            got = {
                "era": c.era, "server": c.server_info["name"],
                "tools": [t["name"] for t in c.list_tools()],
                "echo": text_of(c.call_tool("echo", {"text": "hi"})),
                "add": text_of(c.call_tool("add", {"a": 2, "b": 3})),
                "countdown": text_of(c.call_tool(
                    "countdown", {"steps": 3}, progress=lambda p, t, m: progress.append(p))),
                "progress": progress,
                "resources": [r["uri"] for r in c.list_resources()],
                "templates": [r["uriTemplate"] for r in c.list_resource_templates()],
                "item": c.read_resource("memo://items/7")["contents"][0]["text"],
                "prompt": c.get_prompt("summarize", {"topic": "mcp"})["messages"][0]["content"]
                ["text"],
                "cancelled": sync_cancel_after(0.3, lambda token: c.call_tool(
                    "countdown", {"steps": 300, "delay": 0.1}, cancel=token)),
                "after": text_of(c.call_tool("echo", {"text": "after"})),
            }
            if era == "handshake":
                got["ask"] = text_of(c.call_tool("ask_name"))
            return got
    else:
        async def body(c: Any) -> dict[str, Any]:  # type: ignore[misc]
            progress: list[float] = []
            got = {
                "era": c.era, "server": c.server_info["name"],
                "tools": [t["name"] for t in await c.list_tools()],
                "echo": text_of(await c.call_tool("echo", {"text": "hi"})),
                "add": text_of(await c.call_tool("add", {"a": 2, "b": 3})),
                "countdown": text_of(await c.call_tool(
                    "countdown", {"steps": 3}, progress=lambda p, t, m: progress.append(p))),
                "progress": progress,
                "resources": [r["uri"] for r in await c.list_resources()],
                "templates": [r["uriTemplate"] for r in await c.list_resource_templates()],
                "item": (await c.read_resource("memo://items/7"))["contents"][0]["text"],
                "prompt": (await c.get_prompt("summarize", {"topic": "mcp"}))["messages"][0]
                ["content"]["text"],
                "cancelled": await cancel_after(runtime, 0.3, lambda: c.call_tool(
                    "countdown", {"steps": 300, "delay": 0.1})),
                "after": text_of(await c.call_tool("echo", {"text": "after"})),
            }
            if era == "handshake":
                got["ask"] = text_of(await c.call_tool("ask_name"))
            return got
    check_sdk_story(run_client(runtime, SDK_SERVER, body, versions=ERAS[era], **CALLBACKS),
                    era)


# -- the official SDK's client <-> our server --------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_sdk_client_with_our_server(runtime: str, mode: str) -> None:
    from mcp import types
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    async def on_sampling(ctx: Any, params: Any) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Paris"), model="m")

    async def on_elicit(ctx: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"name": "Ann", "color": "blue"})

    async def on_roots(ctx: Any) -> Any:
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp")])

    command = example(runtime)
    params = StdioServerParameters(command=command[0], args=command[1:],
                                   env={"PYTHONPATH": os.pathsep.join(sys.path)})
    got: dict[str, Any] = {}

    async def main() -> None:
        async with Client(params, mode=mode, sampling_callback=on_sampling,
                          elicitation_callback=on_elicit, list_roots_callback=on_roots) as c:
            got["version"] = c.protocol_version
            got["tools"] = len((await c.list_tools()).tools)
            got["echo"] = (await c.call_tool("echo", {"text": "hi"})).content[0].text
            progress: list[float] = []

            async def on_progress(p: float, t: float | None, m: str | None) -> None:
                progress.append(p)
            got["sleep"] = (await c.call_tool("sleep", {"seconds": 0.3},
                                              progress_callback=on_progress)).content[0].text
            got["progress"] = progress
            got["sampling"] = (await c.call_tool("test_sampling", {"prompt": "?"})).content[0].text
            got["mrtr"] = (await c.call_tool("test_input_required_result_multi_round",
                                             {})).content[0].text
            got["error"] = (await c.call_tool("test_error_handling", {})).is_error
            got["read"] = (await c.read_resource("test://template/3/data")).contents[0].text
            got["prompt"] = (await c.get_prompt(
                "test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})).messages[0].content.text
            with anyio.move_on_after(0.3) as scope:
                await c.call_tool("sleep", {"seconds": 30})
            got["cancelled"] = scope.cancelled_caught
            got["after"] = (await c.call_tool("add", {"a": 1, "b": 2})).structured_content

    anyio.run(main)
    assert got["version"] == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert got["tools"] == 38 and got["echo"] == "hi"
    assert got["sleep"] == "slept 0.3 s" and got["progress"] == [1, 2, 3]
    assert got["sampling"] == "LLM response: Paris"
    assert got["mrtr"] == "Hello, Ann! Your favorite color is blue."
    assert got["error"] is True
    assert '"id":"3"' in got["read"] and "arg1='a'" in got["prompt"]
    assert got["cancelled"] is True and got["after"] == {"sum": 3}


# -- our client <-> the TypeScript reference server --------------------------------------------


@pytest.fixture(scope="session")
def everything() -> list[str]:
    """``node .../server-everything/dist/index.js stdio``, installed once into .cache/npm."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get("CI"):
            pytest.fail("node and npm are needed for the server-everything interop tests")
        pytest.skip("node and npm are not installed")
    prefix = ROOT / ".cache" / "npm"
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / (
        "index.js")
    if not entry.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--silent",
             f"@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}"],
            check=True, timeout=600, stdout=subprocess.DEVNULL)
    return [node, str(entry), "stdio"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_our_client_with_server_everything(runtime: str, everything: list[str]) -> None:
    if runtime == "threading":
        def body(c: Any) -> dict[str, Any]:
            progress: list[float] = []
            return {
                "era": c.era, "server": c.server_info["name"],
                "tools": {t["name"] for t in c.list_tools()},
                "echo": text_of(c.call_tool("echo", {"message": "hi"})),
                "sum": text_of(c.call_tool("get-sum", {"a": 2, "b": 3})),
                "long": text_of(c.call_tool("trigger-long-running-operation",
                                            {"duration": 0.4, "steps": 4},
                                            progress=lambda p, t, m: progress.append(p))),
                "progress": progress,
                "sampling": text_of(c.call_tool("trigger-sampling-request", {"prompt": "?"})),
                "roots": text_of(c.call_tool("get-roots-list", {})),
                "resources": c.list_resources(),
                "read": c.read_resource("demo://resource/static/document/features.md"),
                "prompt": c.get_prompt("args-prompt", {"city": "Paris"}),
                "cancelled": sync_cancel_after(0.3, lambda token: c.call_tool(
                    "trigger-long-running-operation", {"duration": 30, "steps": 30},
                    cancel=token)),
                "after": text_of(c.call_tool("echo", {"message": "after"})),
            }
    else:
        async def body(c: Any) -> dict[str, Any]:  # type: ignore[misc]
            progress: list[float] = []
            return {
                "era": c.era, "server": c.server_info["name"],
                "tools": {t["name"] for t in await c.list_tools()},
                "echo": text_of(await c.call_tool("echo", {"message": "hi"})),
                "sum": text_of(await c.call_tool("get-sum", {"a": 2, "b": 3})),
                "long": text_of(await c.call_tool("trigger-long-running-operation",
                                                  {"duration": 0.4, "steps": 4},
                                                  progress=lambda p, t, m: progress.append(p))),
                "progress": progress,
                "sampling": text_of(await c.call_tool("trigger-sampling-request",
                                                      {"prompt": "?"})),
                "roots": text_of(await c.call_tool("get-roots-list", {})),
                "resources": await c.list_resources(),
                "read": await c.read_resource("demo://resource/static/document/features.md"),
                "prompt": await c.get_prompt("args-prompt", {"city": "Paris"}),
                "cancelled": await cancel_after(runtime, 0.3, lambda: c.call_tool(
                    "trigger-long-running-operation", {"duration": 30, "steps": 30})),
                "after": text_of(await c.call_tool("echo", {"message": "after"})),
            }
    got = run_client(runtime, everything, body, **CALLBACKS)
    assert got["era"] is Era.HANDSHAKE  # it answers server/discover with an error: fallback
    assert got["server"] == "mcp-servers/everything"
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= got["tools"]
    assert got["echo"] == "Echo: hi" and got["sum"] == "The sum of 2 and 3 is 5."
    assert got["long"].startswith("Long running operation completed")
    assert got["progress"] == [1, 2, 3, 4]
    assert "Paris" in got["sampling"] and "file:///tmp" in got["roots"]
    assert len(got["resources"]) >= 1
    assert got["read"]["contents"][0]["uri"].endswith("features.md")
    assert "Paris" in got["prompt"]["messages"][0]["content"]["text"]
    assert got["cancelled"] is True and got["after"] == "Echo: after"
