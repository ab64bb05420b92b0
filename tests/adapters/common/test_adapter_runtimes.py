"""Every runtime against every runtime, over real stdio subprocesses: our client on asyncio,
trio and threads against the example server on asyncio, trio and threads, in both eras;
cancellation the runtime's way; the reliability cases on trio and threads (asyncio's are in
test_adapter_asyncio.py); and what each server runtime sends (or does not) for cancelled
and failing handlers, checked with a raw core connection.

No wall-clock assertion; timeouts are the behaviour under test or safety nets.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp_sansio.adapters import asyncio as asyncio_adapter
from mcp_sansio.adapters import threading as threading_adapter
from mcp_sansio.adapters import trio as trio_adapter

from mcp_sansio import (
    HANDSHAKE_REVISIONS,
    ClientConnection,
    Era,
    ErrorResponse,
    Initialized,
    Response,
)
from mcp_sansio.app.errors import ConnectionClosedError, RequestCancelledError, RequestTimeout
from tests.paths import PEERS

RUNTIMES = ["asyncio", "trio", "threading"]
SAFETY = 60
ERAS = {"handshake": list(HANDSHAKE_REVISIONS), "stateless": None}


def example(runtime: str) -> list[str]:
    return [sys.executable, "-m", "mcp_sansio", "serve-example", "--runtime", runtime]


def sampling(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}


def elicitation(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ann", "color": "blue"}}


CALLBACKS: dict[str, Any] = {"sampling": sampling, "elicitation": elicitation,
                             "roots": [{"uri": "file:///tmp"}]}


def text_of(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


# -- one story, three client runtimes ----------------------------------------------------------


def check_story(results: dict[str, Any], era: str) -> None:
    assert results["era"] is (Era.HANDSHAKE if era == "handshake" else Era.STATELESS)
    assert results["tools"] == 38
    assert results["echo"] == "hi"
    assert results["add"] == {"sum": 5}
    assert results["sleep"] == "slept 0.3 s" and results["progress"] == [1, 2, 3]
    assert results["sampling"] == "LLM response: Paris"
    assert results["multi_round"] == "Hello, Ann! Your favorite color is blue."
    assert results["error"] is True
    assert '"id":"9"' in results["template"]
    assert "arg1='a'" in results["prompt"]


async def async_story(client: Any) -> dict[str, Any]:
    progress: list[float] = []
    return {
        "era": client.era,
        "tools": len(await client.list_tools()),
        "echo": text_of(await client.call_tool("echo", {"text": "hi"})),
        "add": (await client.call_tool("add", {"a": 2, "b": 3}))["structuredContent"],
        "sleep": text_of(await client.call_tool(
            "sleep", {"seconds": 0.3}, progress=lambda p, t, m: progress.append(p))),
        "progress": progress,
        "sampling": text_of(await client.call_tool("test_sampling", {"prompt": "?"})),
        "multi_round": text_of(await client.call_tool("test_input_required_result_multi_round")),
        "error": (await client.call_tool("test_error_handling"))["isError"],
        "template": (await client.read_resource("test://template/9/data"))["contents"][0]["text"],
        "prompt": (await client.get_prompt("test_prompt_with_arguments",
                                           {"arg1": "a", "arg2": "b"}))["messages"][0]["content"]
        ["text"],
    }


def sync_story(client: Any) -> dict[str, Any]:
    progress: list[float] = []
    return {
        "era": client.era,
        "tools": len(client.list_tools()),
        "echo": text_of(client.call_tool("echo", {"text": "hi"})),
        "add": client.call_tool("add", {"a": 2, "b": 3})["structuredContent"],
        "sleep": text_of(client.call_tool(
            "sleep", {"seconds": 0.3}, progress=lambda p, t, m: progress.append(p))),
        "progress": progress,
        "sampling": text_of(client.call_tool("test_sampling", {"prompt": "?"})),
        "multi_round": text_of(client.call_tool("test_input_required_result_multi_round")),
        "error": client.call_tool("test_error_handling")["isError"],
        "template": client.read_resource("test://template/9/data")["contents"][0]["text"],
        "prompt": client.get_prompt("test_prompt_with_arguments",
                                    {"arg1": "a", "arg2": "b"})["messages"][0]["content"]["text"],
    }


def run_client(runtime: str, command: list[str], body: Any, **options: Any) -> Any:
    """Run ``body(client)`` with a client of ``runtime`` connected to ``command``."""
    if runtime == "threading":
        with threading_adapter.connect_stdio(command, **options) as client:
            return body(client)

    async def main() -> Any:
        adapter: Any = asyncio_adapter if runtime == "asyncio" else trio_adapter
        async with adapter.connect_stdio(command, **options) as client:
            return await body(client)

    if runtime == "asyncio":
        return asyncio.run(asyncio.wait_for(main(), SAFETY))

    async def bounded() -> Any:
        with trio.fail_after(SAFETY):
            return await main()
    return trio.run(bounded)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("server_runtime", RUNTIMES)
@pytest.mark.parametrize("client_runtime", RUNTIMES)
def test_every_client_runtime_with_every_server_runtime(
    client_runtime: str, server_runtime: str, era: str,
) -> None:
    body = sync_story if client_runtime == "threading" else async_story
    results = run_client(client_runtime, example(server_runtime), body,
                         versions=ERAS[era], **CALLBACKS)
    check_story(results, era)


# -- cancellation, the runtime's way -------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_trio_cancel_scope_cancels_the_call(era: str) -> None:
    async def body(client: Any) -> None:
        with trio.move_on_after(0.3) as scope:
            await client.call_tool("sleep", {"seconds": 30})
        assert scope.cancelled_caught
        assert client.conn.pending_requests == 0
        assert text_of(await client.call_tool("echo", {"text": "after"})) == "after"

    run_client("trio", example("trio"), body, versions=ERAS[era])


@pytest.mark.parametrize("era", ERAS)
def test_threading_cancel_token_cancels_the_call(era: str) -> None:
    def body(client: Any) -> None:
        token = threading_adapter.CancelToken()
        timer = threading.Timer(0.3, token.cancel)
        timer.start()
        with pytest.raises(RequestCancelledError):
            client.call_tool("sleep", {"seconds": 30}, cancel=token)
        timer.join()
        assert client.conn.pending_requests == 0
        assert text_of(client.call_tool("echo", {"text": "after"})) == "after"

    run_client("threading", example("threading"), body, versions=ERAS[era])


# -- reliability on trio and threads ---------------------------------------------------------------


@pytest.mark.parametrize("runtime", ["trio", "threading"])
def test_server_killed_mid_request(runtime: str) -> None:
    def kill(client: Any) -> None:
        os.killpg(client._process.pid, signal.SIGKILL)

    if runtime == "threading":
        def body(client: Any) -> None:
            threading.Timer(0.3, kill, (client,)).start()
            with pytest.raises(ConnectionClosedError, match="server"):
                client.call_tool("sleep", {"seconds": 30})
    else:
        async def body(client: Any) -> None:  # type: ignore[misc]
            async def killer() -> None:
                await trio.sleep(0.3)
                kill(client)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(killer)
                with pytest.raises(ConnectionClosedError, match="server"):
                    await client.call_tool("sleep", {"seconds": 30})

    run_client(runtime, example(runtime), body)


@pytest.mark.parametrize("runtime", ["trio", "threading"])
def test_a_server_that_never_answers(runtime: str) -> None:
    silent = [sys.executable, str(PEERS / "silent_server.py")]
    if runtime == "threading":
        def body(client: Any) -> None:
            with pytest.raises(RequestTimeout):
                client.call_tool("anything", timeout=0.2)
    else:
        async def body(client: Any) -> None:  # type: ignore[misc]
            with pytest.raises(RequestTimeout):
                await client.call_tool("anything", timeout=0.2)
    run_client(runtime, silent, body, shutdown_timeout=0.2)
    mute = [sys.executable, str(PEERS / "mute_server.py")]
    with pytest.raises(ConnectionClosedError, match="initialize"):
        run_client(runtime, mute, body, versions=list(HANDSHAKE_REVISIONS),
                   request_timeout=0.3, shutdown_timeout=0.2)


@pytest.mark.parametrize("runtime", ["trio", "threading"])
def test_twenty_megabyte_result(runtime: str) -> None:
    big = "y" * (20 * 1024 * 1024)
    if runtime == "threading":
        def body(client: Any) -> int:
            return len(text_of(client.call_tool("echo", {"text": big})))
    else:
        async def body(client: Any) -> int:  # type: ignore[misc]
            return len(text_of(await client.call_tool("echo", {"text": big})))
    assert run_client(runtime, example(runtime), body) == len(big)


@pytest.mark.parametrize("runtime", ["trio", "threading"])
def test_stderr_flood(runtime: str) -> None:
    noisy = [sys.executable, str(PEERS / "noisy_server.py"), runtime]
    if runtime == "threading":
        def body(client: Any) -> list[str]:
            return [text_of(client.call_tool("echo", {"text": str(i)})) for i in range(10)]
    else:
        async def body(client: Any) -> list[str]:  # type: ignore[misc]
            return [text_of(await client.call_tool("echo", {"text": str(i)}))
                    for i in range(10)]
    assert run_client(runtime, noisy, body) == [str(i) for i in range(10)]


# -- the server runtimes, seen through a raw core connection ------------------------------


class RawPeer:
    """A ClientConnection on a server subprocess's pipes, driven by hand."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        self.client = ClientConnection(versions=list(HANDSHAKE_REVISIONS))

    def send(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(self.client.data_to_send())
        self.process.stdin.flush()

    def next_events(self) -> list[Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the server closed its stdout"
        self.client.receive_data(line)
        return self.client.events()

    def handshake(self) -> None:
        self.client.initialize()
        self.send()
        assert [type(e) for e in self.next_events()] == [Initialized]
        self.send()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_server_cancel_and_error_semantics(runtime: str) -> None:
    peer = RawPeer([sys.executable, str(PEERS / "boom_server.py"), runtime])
    peer.handshake()
    slow = peer.client.send_request("tools/call", {"name": "slow"})
    boom = peer.client.send_request("tools/call", {"name": "boom"})
    peer.send()
    [error] = peer.next_events()
    assert isinstance(error, ErrorResponse) and error.request_id == boom
    assert (error.code, error.message, error.data) == (-32603, "Internal error", None)
    peer.client.cancel(slow)
    peer.client.events()
    printed = peer.client.send_request("tools/call", {"name": "printer",
                                                      "arguments": {"text": "hi"}})
    double = peer.client.send_request("tools/call", {"name": "double",
                                                     "arguments": {"x": 21}})
    peer.send()
    answers = peer.next_events() + peer.next_events()
    # Nothing came for the cancelled call: the next two lines answer the next two requests.
    assert {e.request_id for e in answers} == {printed, double}
    assert all(isinstance(e, Response) for e in answers)
    texts = {e.request_id: e.result["content"][0]["text"] for e in answers}
    assert texts == {printed: "HI", double: "42"}
    assert peer.process.stdin is not None
    peer.process.stdin.close()
    assert peer.process.wait(SAFETY) == 0
    assert peer.process.stderr is not None
    stderr = peer.process.stderr.read().decode()
    assert "slow handler cancelled" in stderr
    assert "secret detail" in stderr  # logged there, never sent
    assert "stray print hi" in stderr


@pytest.mark.parametrize("runtime", ["trio", "threading"])
def test_server_exits_when_the_client_disappears(runtime: str) -> None:
    peer = RawPeer(example(runtime))
    peer.handshake()
    assert peer.process.stdin is not None
    os.close(peer.process.stdin.fileno())
    assert peer.process.wait(SAFETY) == 0


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_server_on_files_and_dev_null(runtime: str, tmp_path: Path) -> None:
    """stdin and stdout that cannot be polled (a file, /dev/null) are read whole and written
    with blocking writes; end of input ends the server."""
    with open(os.devnull, "rb") as devnull:
        assert subprocess.run(example(runtime), stdin=devnull, timeout=SAFETY,
                              capture_output=False, stdout=subprocess.DEVNULL,
                              check=False).returncode == 0
    requests = tmp_path / "in.jsonl"
    requests.write_bytes(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    answers = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        assert subprocess.run(example(runtime), stdin=stdin, stdout=stdout, timeout=SAFETY,
                              check=False).returncode == 0
    assert answers.read_bytes() == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_cancelling_a_call_cancels_the_servers_handler(
    runtime: str, caplog: pytest.LogCaptureFixture,
) -> None:
    """End to end: the client's cancellation (the runtime's way) reaches the server as
    notifications/cancelled and the handler is cancelled (the server says so on stderr,
    which the client logs line by line)."""
    boom = [sys.executable, str(PEERS / "boom_server.py"), runtime]
    caplog.set_level("INFO", logger="mcp_sansio.stdio.stderr")

    def server_said_it() -> bool:
        return any("slow handler cancelled" in r.getMessage() for r in caplog.records)

    if runtime == "threading":
        def body(client: Any) -> None:
            token = threading_adapter.CancelToken()
            threading.Timer(0.3, token.cancel).start()
            with pytest.raises(RequestCancelledError):
                client.call_tool("slow", cancel=token)
            assert text_of(client.call_tool("double", {"x": 2})) == "4"
            for _ in range(500):
                if server_said_it():
                    return
                threading.Event().wait(0.01)
    elif runtime == "trio":
        async def body(client: Any) -> None:  # type: ignore[misc]
            with trio.move_on_after(0.3):
                await client.call_tool("slow")
            assert text_of(await client.call_tool("double", {"x": 2})) == "4"
            for _ in range(500):
                if server_said_it():
                    return
                await trio.sleep(0.01)
    else:
        async def body(client: Any) -> None:  # type: ignore[misc]
            task = asyncio.ensure_future(client.call_tool("slow"))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert text_of(await client.call_tool("double", {"x": 2})) == "4"
            for _ in range(500):
                if server_said_it():
                    return
                await asyncio.sleep(0.01)

    run_client(runtime, boom, body)
    assert server_said_it()
