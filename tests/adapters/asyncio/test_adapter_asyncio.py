"""The asyncio adapter: a real subprocess over stdio, both eras, the high-level Client and
Server, and the reliability cases (a server that dies, one that never answers, a 20 MB
result, a stderr flood, a client that disappears).

No wall-clock assertion: timeouts here are either the behaviour under test (short, on a
peer that never answers) or generous safety nets.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
from typing import Any

import pytest
from mcp_sansio.adapters.asyncio import Context, connect_stdio, serve_stdio
from mcp_sansio.adapters.tools import _example_server

from mcp_sansio import HANDSHAKE_REVISIONS, ClientConnection, Era, Response
from mcp_sansio.app.errors import ConnectionClosedError, McpError, RequestTimeout, ToolError
from mcp_sansio.app.server import Server
from tests.paths import PEERS

EXAMPLE = [sys.executable, "-c", "from mcp_sansio.adapters.tools._example_server import run; run()"]
SAFETY = 60  # seconds: a safety net only, never the thing measured

ERAS = {"handshake": list(HANDSHAKE_REVISIONS), "stateless": None}


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, SAFETY))


def sampling(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}


def elicitation(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ann", "color": "blue", "ok": True}}


ROOTS = [{"uri": "file:///tmp", "name": "tmp"}]


def text_of(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@pytest.mark.parametrize("era", ERAS)
def test_example_server_both_eras(era: str) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def main() -> None:
        async with connect_stdio(EXAMPLE, versions=ERAS[era], sampling=sampling,
                                 elicitation=elicitation, roots=ROOTS) as client:
            assert client.era is (Era.HANDSHAKE if era == "handshake" else Era.STATELESS)
            assert client.server_info["name"] == "mcp-sansio-example"
            tools = {t["name"]: t for t in await client.list_tools()}
            assert {"echo", "add", "sleep", "test_simple_text"} <= set(tools)
            assert tools["add"]["outputSchema"]["required"] == ["sum"]
            assert text_of(await client.call_tool("echo", {"text": "hi"})) == "hi"
            assert (await client.call_tool("add", {"a": 2, "b": 3}))["structuredContent"] == {
                "sum": 5}
            result = await client.call_tool(
                "sleep", {"seconds": 0.3},
                progress=lambda p, t, m: progress.append((p, t, m)))
            assert text_of(result) == "slept 0.3 s"
            assert [p for p, _, _ in progress] == [1, 2, 3]
            # Asking the client: real requests (handshake), input_required (stateless).
            assert text_of(await client.call_tool("test_sampling", {"prompt": "?"})) == (
                "LLM response: Paris")
            assert "Ann" in text_of(await client.call_tool(
                "test_input_required_result_multi_round"))
            assert "state-ok" in text_of(await client.call_tool(
                "test_input_required_result_request_state"))
            assert "1 roots" in text_of(await client.call_tool(
                "test_input_required_result_multiple_inputs"))
            failed = await client.call_tool("test_error_handling")
            assert failed["isError"] is True
            bad_args = await client.call_tool("echo", {"nope": 1})
            assert bad_args["isError"] is True
            with pytest.raises(McpError) as info:
                await client.call_tool("no_such_tool")
            assert info.value.code == -32602
            resources = {r["uri"] for r in await client.list_resources()}
            assert "test://static-text" in resources
            templates = await client.list_resource_templates()
            assert templates[0]["uriTemplate"] == "test://template/{id}/data"
            data = await client.read_resource("test://template/7/data")
            assert '"id":"7"' in data["contents"][0]["text"]
            with pytest.raises(McpError) as info:
                await client.read_resource("test://nonexistent")
            assert info.value.code == -32602 and info.value.data == {"uri": "test://nonexistent"}
            prompts = {p["name"] for p in await client.list_prompts()}
            assert "test_prompt_with_arguments" in prompts
            prompt = await client.get_prompt("test_prompt_with_arguments",
                                             {"arg1": "a", "arg2": "b"})
            assert "arg1='a'" in prompt["messages"][0]["content"]["text"]
            completion = await client.complete(
                {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                {"name": "arg1", "value": "pa"})
            assert completion["completion"]["values"] == ["paris", "park", "party"]
            if era == "handshake":
                assert await client.ping() == {}
                assert await client.set_logging_level("debug") == {}
                assert await client.subscribe("test://watched-resource") == {}
            else:
                discovered = await client.discover()
                assert "2026-07-28" in discovered["supportedVersions"]

    run(main())


@pytest.mark.parametrize("era", ERAS)
def test_cancelling_the_awaiting_task_cancels_the_request(era: str) -> None:
    async def main() -> None:
        async with connect_stdio(EXAMPLE, versions=ERAS[era]) as client:
            task = asyncio.ensure_future(client.call_tool("sleep", {"seconds": 30}))
            for _ in range(100):  # let the request go out
                await asyncio.sleep(0)
            assert client.conn.pending_requests == 1
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert client.conn.pending_requests == 0
            # The connection goes on.
            assert text_of(await client.call_tool("echo", {"text": "after"})) == "after"

    run(main())


def test_listen_stream_gets_list_changed() -> None:
    async def main() -> None:
        async with connect_stdio(EXAMPLE) as client:
            assert client.era is Era.STATELESS
            async with await client.listen({"toolsListChanged": True,
                                            "promptsListChanged": True}) as stream:
                assert stream.acknowledged == {"toolsListChanged": True,
                                               "promptsListChanged": True}
                await client.call_tool("test_trigger_tool_change")
                note = await stream.__anext__()
                assert note.method == "notifications/tools/list_changed"

    run(main())


def test_server_killed_mid_request_fails_pending_calls() -> None:
    async def main() -> None:
        async with connect_stdio(EXAMPLE) as client:
            calls = [asyncio.ensure_future(client.call_tool("sleep", {"seconds": 30}))
                     for _ in range(3)]
            while client.conn.pending_requests < 3:
                await asyncio.sleep(0)
            assert client._process is not None
            os.killpg(client._process.get_pid(), signal.SIGKILL)
            for call in calls:
                with pytest.raises(ConnectionClosedError) as info:
                    await call
                assert "server" in str(info.value)
            with pytest.raises(ConnectionClosedError):
                await client.ping()

    run(main())


def test_a_server_that_never_answers() -> None:
    async def main() -> None:
        # The handshake answered, then silence: each call ends by its own timeout.
        async with connect_stdio([sys.executable, str(PEERS / "silent_server.py")],
                                 shutdown_timeout=0.2) as client:
            assert client.era is Era.HANDSHAKE
            with pytest.raises(RequestTimeout):
                await client.call_tool("anything", timeout=0.2)
            with pytest.raises(RequestTimeout) as info:
                await client.call_tool("anything", timeout=None, max_total=0.2,
                                       progress=lambda *a: None)
            assert info.value.hard_limit
        # No answer to initialize at all: connect ends with the initialize timeout.
        with pytest.raises(ConnectionClosedError, match="initialize"):
            async with connect_stdio([sys.executable, str(PEERS / "mute_server.py")],
                                     versions=list(HANDSHAKE_REVISIONS),
                                     request_timeout=0.3, shutdown_timeout=0.2):
                pass  # pragma: no cover

    run(main())


def test_twenty_megabyte_tool_result() -> None:
    big = "x" * (20 * 1024 * 1024)

    async def main() -> None:
        async with connect_stdio(EXAMPLE) as client:
            result = await client.call_tool("echo", {"text": big})
            assert len(text_of(result)) == len(big)

    run(main())


def test_stderr_flood_is_logged_line_by_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_sansio.stdio.stderr")

    async def main() -> None:
        async with connect_stdio([sys.executable, str(PEERS / "noisy_server.py")]) as client:
            for i in range(20):
                assert text_of(await client.call_tool("echo", {"text": str(i)})) == str(i)

    run(main())
    lines = [r.getMessage() for r in caplog.records if r.name == "mcp_sansio.stdio.stderr"]
    assert any(line.startswith("before line 19999") for line in lines)
    assert all(len(line) <= 64 * 1024 for line in lines)


@pytest.mark.parametrize("how", ["close-stdin", "kill-client"])
def test_server_exits_when_the_client_disappears(how: str) -> None:
    server = subprocess.Popen(EXAMPLE, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    client = ClientConnection(versions=list(HANDSHAKE_REVISIONS))
    client.initialize()
    server.stdin.write(client.data_to_send())
    server.stdin.flush()
    client.receive_data(server.stdout.readline())
    assert [type(e).__name__ for e in client.events()] == ["Initialized"]
    if how == "close-stdin":
        server.stdin.close()
    else:  # the client's end of the pipe goes away without a word
        os.close(server.stdin.fileno())
    assert server.wait(SAFETY) == 0
    assert b"Traceback" not in server.stderr.read()


def test_print_in_a_handler_stays_off_the_protocol_stream() -> None:
    script = (
        "import asyncio\n"
        "from mcp_sansio.adapters.asyncio import Server, run_stdio\n"
        "server = Server('printer')\n"
        "@server.tool()\n"
        "async def shout(text: str) -> str:\n"
        "    print('stray output', text)\n"
        "    import os; os.write(1, b'raw fd 1 output\\n')\n"
        "    return text.upper()\n"
        "run_stdio(server)\n"
    )

    async def main() -> None:
        async with connect_stdio([sys.executable, "-c", script]) as client:
            assert text_of(await client.call_tool("shout", {"text": "hi"})) == "HI"
            assert text_of(await client.call_tool("shout", {"text": "again"})) == "AGAIN"

    run(main())


# -- the server in process, over a pair of pipes ---------------------------------------------------


class PipePeer:
    """Our end of a served connection: a raw ClientConnection on two pipes."""

    def __init__(self) -> None:
        self.to_server_r, self.to_server_w = os.pipe()
        self.from_server_r, self.from_server_w = os.pipe()
        self.client = ClientConnection(versions=list(HANDSHAKE_REVISIONS))
        self.buffer: list[Any] = []

    def send(self) -> None:
        os.write(self.to_server_w, self.client.data_to_send())

    async def events(self) -> list[Any]:
        loop = asyncio.get_running_loop()
        data = await loop.run_in_executor(None, os.read, self.from_server_r, 1 << 20)
        self.client.receive_data(data)
        return self.client.events()


def make_server(log: list[str]) -> Server:
    server = Server("in-process")

    @server.tool()
    async def slow(ctx: Context) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            log.append("handler cancelled")
            raise
        return "never"  # pragma: no cover

    @server.tool()
    async def boom() -> str:
        raise RuntimeError("secret detail")

    @server.tool()
    def sync_tool(x: int) -> int:
        return x * 2

    @server.tool()
    async def fails_as_tool() -> str:
        raise ToolError("nope")

    return server


def test_served_in_process_cancel_and_errors(caplog: pytest.LogCaptureFixture) -> None:
    log: list[str] = []
    peer = PipePeer()

    async def main() -> None:
        serving = asyncio.ensure_future(serve_stdio(
            make_server(log), stdin_fd=peer.to_server_r, stdout_fd=peer.from_server_w))
        peer.client.initialize()
        peer.send()
        assert [type(e).__name__ for e in await peer.events()] == ["Initialized"]
        peer.send()  # notifications/initialized
        slow = peer.client.send_request("tools/call", {"name": "slow"})
        boom = peer.client.send_request("tools/call", {"name": "boom"})
        peer.send()
        [error] = await peer.events()
        assert error.request_id == boom and error.code == -32603
        assert error.message == "Internal error" and error.data is None
        peer.client.cancel(slow)
        peer.client.events()
        sync = peer.client.send_request("tools/call", {"name": "sync_tool",
                                                       "arguments": {"x": 21}})
        tool_error = peer.client.send_request("tools/call", {"name": "fails_as_tool"})
        peer.send()
        got: list[Any] = []
        while len(got) < 2:
            got.extend(await peer.events())
        by_id = {e.request_id: e for e in got}
        assert set(by_id) == {sync, tool_error}  # nothing at all for the cancelled call
        assert isinstance(by_id[sync], Response)
        assert by_id[sync].result["content"][0]["text"] == "42"
        assert by_id[tool_error].result["isError"] is True
        assert log == ["handler cancelled"]
        os.close(peer.to_server_w)  # EOF: the server returns
        await serving

    with caplog.at_level(logging.ERROR, logger="mcp_sansio.adapters"):
        run(main())
    assert any("secret detail" in (r.exc_text or "") or r.exc_info for r in caplog.records)


def test_example_definition_builds_for_every_runtime() -> None:
    server = _example_server.build(asyncio.sleep)
    caps = server.capabilities()
    assert {"tools", "resources", "prompts", "completions", "logging"} <= set(caps)
