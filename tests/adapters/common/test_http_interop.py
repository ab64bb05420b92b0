"""Interop with the official Python SDK (``mcp``) over Streamable HTTP, both eras:

* the SDK's HTTP client (``mcp.client.client.Client(url, mode=...)``) against our HTTP
  server (the example server) in JSON, SSE and auto response modes: on asyncio in this
  process (the handler's cancellation observed), on trio and threads as a process;
* our HTTP client (asyncio, trio, threads) against the SDK's Streamable HTTP server
  (tests/peers/sdk_http_server.py, uvicorn on 127.0.0.1 in a subprocess), in its
  JSON-response and SSE modes;
* the legacy HTTP+SSE transport (2024-11-05) both ways: our client's fallback against the
  SDK's SSE app, the SDK's SSE client against our server's legacy endpoints.

List tools, call tools, read resources, get prompts, progress, cancellation, and the server
asking the client (sampling, elicitation, ``input_required``). Where a peer deviates from the
spec, the test states what it does instead as an explicit expectation. Loopback only; no
wall-clock assertion (timeouts are safety nets or the cancellation under test).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio
from mcp_sansio.adapters import asyncio as asyncio_adapter
from mcp_sansio.adapters import threading as threading_adapter
from mcp_sansio.adapters import trio as trio_adapter
from mcp_sansio.adapters.asyncio import start_http
from mcp_sansio.adapters.tools._example_server import build

from mcp_sansio import Era
from mcp_sansio.app.errors import McpError
from mcp_sansio.http import ResponseMode, Transport
from tests.adapters.common.test_adapter_runtimes import RUNTIMES, text_of
from tests.adapters.common.test_interop import CALLBACKS, ERAS, cancel_after, sync_cancel_after
from tests.http_stories import url_process
from tests.paths import PEERS

SAFETY = 60

mcp = pytest.importorskip("mcp", reason="the official SDK is a test dependency")
anyio = pytest.importorskip("anyio")


# -- the SDK's HTTP client <-> our server ------------------------------------------------------


def our_server(flag: Callable[[], Any] = asyncio.Event) -> tuple[Any, dict[str, Any]]:
    """The example server plus a ``block`` tool that records its own cancellation (in two
    ``flag()`` events: ``asyncio.Event``'s shape, which the test awaits)."""
    server = build(asyncio.sleep)
    seen = {"started": flag(), "cancelled": flag()}

    @server.tool(description="Waits until cancelled.")
    async def block() -> str:
        seen["started"].set()
        try:
            await asyncio.sleep(SAFETY)
        except asyncio.CancelledError:
            seen["cancelled"].set()
            raise
        return "never"

    return server, seen


async def sdk_story(url: str, mode: str, seen: dict[str, asyncio.Event] | None,
                    sessions: Any = None) -> dict[str, Any]:
    """The SDK's client through the whole story. With ``seen`` (our server in this
    process), cancellation is checked on the server's side too; ``sessions()`` counts the
    server's live sessions."""
    from mcp import types
    from mcp.client.client import Client

    async def on_sampling(ctx: Any, params: Any) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Paris"), model="m")

    async def on_elicit(ctx: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"name": "Ann", "color": "blue"})

    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    got: dict[str, Any] = {}
    async with Client(url, mode=mode, sampling_callback=on_sampling,
                      elicitation_callback=on_elicit, logging_callback=on_log,
                      log_level="debug") as c:
        got["version"] = c.protocol_version
        got["server"] = c.session.server_info.name if c.session.server_info else None
        got["tools"] = {t.name for t in (await c.list_tools()).tools}
        got["echo"] = (await c.call_tool("echo", {"text": "hi"})).content[0].text
        got["add"] = (await c.call_tool("add", {"a": 2, "b": 3})).structured_content
        progress: list[float] = []

        async def on_progress(p: float, t: float | None, m: str | None) -> None:
            progress.append(p)
        got["sleep"] = (await c.call_tool("sleep", {"seconds": 0.3},
                                          progress_callback=on_progress)).content[0].text
        got["progress"] = progress
        got["logged"] = (await c.call_tool("test_tool_with_logging", {})).content[0].text
        got["logs"] = list(logs)
        got["sampling"] = (await c.call_tool("test_sampling", {"prompt": "?"})).content[0].text
        got["mrtr"] = (await c.call_tool("test_input_required_result_multi_round",
                                         {})).content[0].text
        got["error"] = (await c.call_tool("test_error_handling", {})).is_error
        got["resources"] = {r.uri for r in (await c.list_resources()).resources}
        got["static"] = (await c.read_resource("test://static-text")).contents[0].text
        got["read"] = (await c.read_resource("test://template/3/data")).contents[0].text
        got["prompts"] = {p.name for p in (await c.list_prompts()).prompts}
        got["prompt"] = (await c.get_prompt(
            "test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})).messages[0].content.text
        if seen is None:  # a server in another process: the SDK's side of it only
            with anyio.move_on_after(0.3) as scope:
                await c.call_tool("sleep", {"seconds": 30})
            got["cancelled"] = scope.cancelled_caught
        else:
            with anyio.move_on_after(SAFETY) as scope:
                async with anyio.create_task_group() as group:
                    async def call_block() -> None:
                        await c.call_tool("block", {})
                    group.start_soon(call_block)
                    await seen["started"].wait()
                    group.cancel_scope.cancel()
                # the server's handler hears of it (cancelled notification or closed stream)
                await seen["cancelled"].wait()
            got["cancelled"] = not scope.cancelled_caught and seen["cancelled"].is_set()
        got["after"] = (await c.call_tool("add", {"a": 1, "b": 2})).structured_content
        got["sessions"] = sessions() if sessions is not None else None
    return got


def check_sdk_client_story(got: dict[str, Any], mode: str, response_mode: str, *,
                           with_block: bool) -> None:
    stateless = mode == "auto"
    assert got["version"] == ("2026-07-28" if stateless else "2025-11-25")
    assert got["server"] == "mcp-sansio-example"
    assert {"echo", "add", "sleep", "test_sampling"} <= got["tools"]
    assert ("block" in got["tools"]) is with_block
    assert got["echo"] == "hi" and got["add"] == {"sum": 5}
    assert got["sleep"] == "slept 0.3 s"
    if stateless and response_mode == "json":
        # Our server in JSON mode has nowhere to put a stateless-era request's progress
        # (no standalone stream in that era): it is dropped (ResponseMode.JSON's contract).
        assert got["progress"] == []
        assert got["logs"] == []
    else:
        # handshake era in JSON mode: progress and logs travel on the SDK's GET stream
        assert got["progress"] == [1, 2, 3]
        assert len(got["logs"]) == 3
    assert got["logged"]
    assert got["sampling"] == "LLM response: Paris"
    assert got["mrtr"] == "Hello, Ann! Your favorite color is blue."
    assert got["error"] is True
    assert "test://static-text" in got["resources"]
    assert got["static"] == "This is the content of the static text resource."
    assert '"id":"3"' in got["read"]
    assert "test_prompt_with_arguments" in got["prompts"]
    assert "arg1='a'" in got["prompt"]
    assert got["cancelled"] is True and got["after"] == {"sum": 3}


@pytest.mark.parametrize("response_mode", ["json", "sse", "auto"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_sdk_client_with_our_server(mode: str, response_mode: str) -> None:
    async def main() -> dict[str, Any]:
        server, seen = our_server()
        async with start_http(server, response_mode=ResponseMode(response_mode)) as service:
            got = await sdk_story(service.url, mode, seen,
                                  lambda: len(service.http.sessions))
            for _ in range(100):  # the SDK's DELETE is sent as its client closes
                if not service.http.sessions:
                    break
                await asyncio.sleep(0.01)
            got["sessions_after"] = len(service.http.sessions)
            return got

    got = asyncio.run(asyncio.wait_for(main(), SAFETY))
    check_sdk_client_story(got, mode, response_mode, with_block=True)
    # handshake era: one session while the client lives, ended by its DELETE on close;
    # stateless era: no session at all
    stateless = mode == "auto"
    assert (got["sessions"], got["sessions_after"]) == ((0, 0) if stateless else (1, 0))


SERVE = ("import sys; from mcp_sansio.adapters.tools._example_server import run_http; "
         "from mcp_sansio.http import ResponseMode; "
         "run_http(runtime=sys.argv[1], response_mode=ResponseMode(sys.argv[2]))")


@contextlib.contextmanager
def our_server_process(runtime: str, response_mode: str) -> Iterator[str]:
    """The example server over HTTP on ``runtime`` in a subprocess: its URL."""
    with url_process([sys.executable, "-c", SERVE, runtime, response_mode]) as url:
        yield url


@pytest.mark.parametrize("response_mode", ["json", "sse"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("runtime", ["trio", "threading"])
def test_sdk_client_with_our_server_on_other_runtimes(runtime: str, mode: str,
                                                      response_mode: str) -> None:
    with our_server_process(runtime, response_mode) as url:
        got = anyio.run(sdk_story, url, mode, None)
    check_sdk_client_story(got, mode, response_mode, with_block=False)


# -- our HTTP client <-> the SDK's Streamable HTTP server --------------------------------------


@pytest.fixture(scope="module", params=["sse", "json"])
def sdk_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """The SDK's Streamable HTTP server in a subprocess: (its URL, its response mode)."""
    flags = ["--cancel-probe", *(["--json"] if request.param == "json" else [])]
    # killed at the end: a peer with nothing to save (uvicorn would wait for running handlers)
    with url_process([sys.executable, str(PEERS / "sdk_http_server.py"), *flags], kill=True,
                     quiet=False) as url:
        yield url, request.param


async def our_story(c: Any, era: str, runtime: str) -> dict[str, Any]:
    progress: list[float] = []
    got: dict[str, Any] = {
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
        "prompt": (await c.get_prompt("summarize", {"topic": "mcp"}))["messages"][0]["content"]
        ["text"],
    }
    before = int(text_of(await c.call_tool("cancelled_blocks")))
    got["cancelled"] = await cancel_after(runtime, 0.3, lambda: c.call_tool("block"))
    for _ in range(20):  # did the SDK's handler hear of it? (bounded: it may never)
        got["sdk_cancelled"] = int(text_of(await c.call_tool("cancelled_blocks"))) > before
        if got["sdk_cancelled"]:
            break
        await anyio.sleep(0.05)
    got["after"] = text_of(await c.call_tool("echo", {"text": "after"}))
    if era == "handshake":
        try:
            got["ask"] = text_of(await c.call_tool("ask_name"))
        except McpError as exc:
            got["ask"] = exc
    return got


def our_story_sync(c: Any, era: str) -> dict[str, Any]:
    progress: list[float] = []
    got: dict[str, Any] = {
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
        "prompt": c.get_prompt("summarize", {"topic": "mcp"})["messages"][0]["content"]["text"],
    }
    before = int(text_of(c.call_tool("cancelled_blocks")))
    got["cancelled"] = sync_cancel_after(0.3, lambda token: c.call_tool("block", cancel=token))
    for _ in range(20):  # did the SDK's handler hear of it? (bounded: it may never)
        got["sdk_cancelled"] = int(text_of(c.call_tool("cancelled_blocks"))) > before
        if got["sdk_cancelled"]:
            break
        time.sleep(0.05)
    got["after"] = text_of(c.call_tool("echo", {"text": "after"}))
    if era == "handshake":
        try:
            got["ask"] = text_of(c.call_tool("ask_name"))
        except McpError as exc:
            got["ask"] = exc
    return got


def run_our_client(runtime: str, url: str, era: str) -> dict[str, Any]:
    """Our HTTP client of ``runtime`` through the story against ``url``."""
    options: dict[str, Any] = {"versions": ERAS[era], **CALLBACKS}
    if runtime == "threading":
        with threading_adapter.connect_http(url, **options) as client:
            return our_story_sync(client, era)

    async def main() -> dict[str, Any]:
        adapter: Any = asyncio_adapter if runtime == "asyncio" else trio_adapter
        async with adapter.connect_http(url, **options) as client:
            return await our_story(client, era, runtime)

    if runtime == "asyncio":
        result: dict[str, Any] = asyncio.run(asyncio.wait_for(main(), SAFETY))
        return result

    async def bounded() -> dict[str, Any]:
        with trio.fail_after(SAFETY):
            return await main()
    result = trio.run(bounded)
    return result


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_our_client_with_the_sdk_server(sdk_server: tuple[str, str], runtime: str,
                                        era: str) -> None:
    url, response_mode = sdk_server
    got = run_our_client(runtime, url, era)
    assert got["era"] is (Era.HANDSHAKE if era == "handshake" else Era.STATELESS)
    assert got["server"] == "sdk-peer"
    assert got["tools"] == ["echo", "add", "countdown", "ask_name", "block", "cancelled_blocks"]
    assert got["echo"] == "hi" and got["add"] == "5"
    assert got["countdown"] == "counted 3"
    assert got["resources"] == ["memo://greeting"]
    assert got["templates"] == ["memo://items/{item}"]
    assert got["item"] == "item 7" and got["prompt"] == "Summarize mcp."
    assert got["cancelled"] is True and got["after"] == "after"
    if response_mode == "json" and era == "stateless":
        # SDK deviation: its JSON mode runs a 2026-07-28 request's handler to the end when
        # the client closes the connection (the spec's cancellation in that era); its SSE
        # mode cancels it, and in the handshake era notifications/cancelled is honoured.
        assert got["sdk_cancelled"] is False
    else:
        assert got["sdk_cancelled"] is True
    if response_mode == "json":
        # The SDK's JSON mode answers with one JSON object and drops the progress
        # notifications sent before it, in both eras (ours, in the handshake era, sends
        # them on the standalone GET stream; the spec allows either).
        assert got["progress"] == []
    else:
        assert got["progress"] == [1, 2, 3]
    if era == "handshake" and response_mode == "json":
        # SDK deviation: in JSON response mode its server refuses to send a request to the
        # client at all (the spec lets it use the standalone GET stream, which our client
        # keeps open); the tool call fails with -32600 "no back-channel".
        assert isinstance(got["ask"], McpError) and got["ask"].code == -32600
        assert "back-channel" in str(got["ask"])
    elif era == "handshake":
        assert got["ask"] == "Hello, Ann!"


# -- legacy HTTP+SSE (2024-11-05), both directions ----------------------------------------------


def test_our_client_falls_back_to_the_sdks_legacy_sse_server() -> None:
    """The SDK's HTTP+SSE app refuses a POSTed initialize (405 on its SSE path): our client
    falls back to the legacy transport, follows the ``endpoint`` event and goes on."""
    async def main(url: str) -> dict[str, Any]:
        progress: list[float] = []
        async with asyncio_adapter.connect_http(url, **CALLBACKS) as c:
            return {
                "transport": c.http.transport, "version": c.protocol_version,
                "tools": [t["name"] for t in await c.list_tools()],
                "echo": text_of(await c.call_tool("echo", {"text": "hi"})),
                "countdown": text_of(await c.call_tool(
                    "countdown", {"steps": 3}, progress=lambda p, t, m: progress.append(p))),
                "progress": progress,
                "ask": text_of(await c.call_tool("ask_name")),
                "item": (await c.read_resource("memo://items/7"))["contents"][0]["text"],
            }

    with url_process([sys.executable, str(PEERS / "sdk_http_server.py"), "--legacy-sse"],
                     kill=True) as url:
        assert url.endswith("/sse"), url
        got = asyncio.run(asyncio.wait_for(main(url), SAFETY))
    assert got["transport"] is Transport.LEGACY
    assert got["version"] == "2025-11-25"  # the SDK's newest handshake revision
    assert got["tools"][:4] == ["echo", "add", "countdown", "ask_name"]
    assert got["echo"] == "hi" and got["countdown"] == "counted 3"
    assert got["progress"] == [1, 2, 3]
    assert got["ask"] == "Hello, Ann!" and got["item"] == "item 7"


def test_the_sdks_legacy_sse_client_with_our_server() -> None:
    from mcp import types
    from mcp.client.client import Client
    from mcp.client.sse import sse_client

    async def on_sampling(ctx: Any, params: Any) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Paris"), model="m")

    async def main() -> dict[str, Any]:
        async with start_http(build(asyncio.sleep), legacy_sse_path="/sse") as service:
            url = f"http://127.0.0.1:{service.port}/sse"
            progress: list[float] = []

            async def on_progress(p: float, t: float | None, m: str | None) -> None:
                progress.append(p)

            async with Client(sse_client(url), mode="legacy",
                              sampling_callback=on_sampling) as c:
                got: dict[str, Any] = {
                    "version": c.protocol_version,
                    "tools": {t.name for t in (await c.list_tools()).tools},
                    "echo": (await c.call_tool("echo", {"text": "hi"})).content[0].text,
                    "sleep": (await c.call_tool("sleep", {"seconds": 0.3},
                                                progress_callback=on_progress)).content[0].text,
                    "sampling": (await c.call_tool("test_sampling",
                                                   {"prompt": "?"})).content[0].text,
                    "sessions": [s.legacy for s in service.http.sessions.values()],
                }
                got["progress"] = progress
            return got

    got = asyncio.run(asyncio.wait_for(main(), SAFETY))
    assert got["version"] == "2025-11-25"
    assert {"echo", "sleep", "test_sampling"} <= got["tools"]
    assert got["echo"] == "hi" and got["sleep"] == "slept 0.3 s"
    assert got["progress"] == [1, 2, 3]
    assert got["sampling"] == "LLM response: Paris"
    assert got["sessions"] == [True]  # one session, on the legacy transport


def test_the_sdk_client_does_not_renew_a_session_our_server_ended() -> None:
    """SDK deviation (the spec: a client that gets 404 for its session MUST start a new
    one with initialize): the SDK's HTTP client surfaces the 404 as an error and opens no new
    session. Our client renews (tests/adapters/common/test_http_reliability.py)."""
    from mcp.client.client import Client
    from mcp.shared.exceptions import MCPError

    async def main() -> tuple[str, str, int]:
        async with start_http(build(asyncio.sleep)) as service, \
                Client(service.url, mode="legacy") as c:
            first = (await c.call_tool("echo", {"text": "1"})).content[0].text
            (sid,) = list(service.http.sessions)
            service.http.end_session(sid)
            service._pump()
            try:
                await c.call_tool("echo", {"text": "2"})
                second = "answered"
            except MCPError as exc:
                second = str(exc)
            return first, second, len(service.http.sessions)

    first, second, sessions = asyncio.run(asyncio.wait_for(main(), SAFETY))
    assert first == "1"
    assert "unknown or terminated session" in second
    assert sessions == 0
