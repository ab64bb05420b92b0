"""The HTTP server adapters of every runtime (asyncio, trio, threads) checked alike, with the
same blocking raw HTTP/1.1 client over loopback: malformed HTTP answered 400 while the
server goes on, a stateless-era stream the client closes cancelling its handler, and a
list change reaching the listen streams of other requests. (The asyncio and trio servers run
in a thread of their own; what is particular to one runtime is in its own test file.)"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import h11
import pytest
from mcp_sansio.adapters import threading as threading_adapter

from mcp_sansio.app.server import Server
from mcp_sansio.http import SSEParser
from tests.http_stories import (
    GUARD,
    SyncConn,
    add_tools,
    asyncio_service,
    block_tool,
    no_leaked_threads,  # noqa: F401 - a fixture
    sse_messages,
    stateless,
    tool_call,
    trio_service,
)
from tests.http_util import init_body

RUNTIMES = ["asyncio", "trio", "threading"]

pytestmark = pytest.mark.usefixtures("no_leaked_threads")


class Probe:
    """What a ``block`` tool saw (set from the server's thread, awaited by the test)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()


def story_server(runtime: str, probe: Probe) -> Server:
    """``add``, ``change`` and the runtime's ``block`` tools (threads: a plain ``def`` one,
    cancelled cooperatively, and ``block_async``, an ``async def`` one cancelled for real)."""
    server = Server("http-runtimes")

    @server.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    add_tools(server, "change")
    if runtime != "threading":
        server.add_tool(block_tool(probe, runtime))
    else:
        @server.tool(name="block")
        def block_sync(ctx: Any) -> str:
            probe.started.set()
            deadline = time.monotonic() + GUARD  # a bound for a failing test only
            while not ctx.cancelled and time.monotonic() < deadline:
                time.sleep(0.01)
            if ctx.cancelled:
                probe.cancelled.set()
            return "released"

        server.add_tool(block_tool(probe), name="block_async")
    return server


@contextlib.contextmanager
def serving(runtime: str, server: Server) -> Iterator[int]:
    """``server`` over HTTP on ``runtime`` while the block runs: its port."""
    if runtime == "threading":
        with threading_adapter.start_http(server) as service:
            yield service.port
        return
    with (asyncio_service if runtime == "asyncio" else trio_service)(server) as url:
        yield int(url.rsplit(":", 1)[1].split("/")[0])


def text_of(message: Any) -> str:
    return str(message["result"]["content"][0]["text"])


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_malformed_http_gets_400_and_the_server_goes_on(runtime: str) -> None:
    with serving(runtime, story_server(runtime, Probe())) as port:
        sock = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):  # the server closes after its answer
            data += chunk
        assert data.startswith(b"HTTP/1.1 400")
        sock.close()
        conn = SyncConn(port)
        status, _, _ = conn.request("POST", init_body())
        assert status == 200
        conn.close()


@pytest.mark.parametrize(("runtime", "tool"), [
    ("asyncio", "block"), ("trio", "block"), ("threading", "block"),
    ("threading", "block_async")])
def test_closing_a_stateless_stream_cancels_its_handler(runtime: str, tool: str) -> None:
    probe = Probe()
    with serving(runtime, story_server(runtime, probe)) as port:
        conn = SyncConn(port)
        conn.send("POST", *tool_call(tool, {}, 1))
        assert probe.started.wait(GUARD)
        conn.close()
        assert probe.cancelled.wait(GUARD)
        # the server goes on serving
        conn = SyncConn(port)
        status, _, messages = conn.request("POST", *tool_call("add", {"a": 1, "b": 1}))
        assert status == 200 and text_of(messages[-1]) == "2"
        conn.close()


def _one_per_chunk(conn: SyncConn) -> Iterator[Any]:
    """The messages of an SSE response as they come, each in a body chunk of its own."""
    parser = SSEParser()
    while True:
        event = conn.next()
        assert isinstance(event, h11.Data), event
        found = sse_messages(parser, event.data)
        if found:
            assert len(found) == 1
            yield found[0]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_list_change_reaches_the_listen_streams_of_other_requests(runtime: str) -> None:
    with serving(runtime, story_server(runtime, Probe())) as port:
        listen = SyncConn(port)
        listen.send("POST", *stateless("subscriptions/listen",
                                       {"notifications": {"toolsListChanged": True}}, 1))
        assert listen.head()[0] == 200
        messages = _one_per_chunk(listen)
        assert next(messages)["method"] == "notifications/subscriptions/acknowledged"
        other = SyncConn(port)
        status, _, answer = other.request("POST", *tool_call("change", {}, 2))
        assert status == 200 and text_of(answer[-1]) == "changed"
        assert next(messages)["method"] == "notifications/tools/list_changed"
        other.close()
        listen.close()
