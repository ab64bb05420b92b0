"""The threading server steps an ``async def`` handler once in its worker (its private loop
set as the running loop) and runs the loop only if the handler suspends. Edge cases: one
that returns at once, one that suspends, one that raises before suspending, one cancelled
while suspended, the running loop and context variables during the first step.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time
from typing import Any

from mcp_sansio.adapters.threading import serve_stdio

from mcp_sansio import HANDSHAKE_REVISIONS, ClientConnection, ErrorResponse, Response
from mcp_sansio.app.server import Server

SAFETY = 60.0
VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


def make_server(log: list[str]) -> Server:
    server = Server("eager-threads")

    @server.tool()
    async def quick(text: str) -> str:
        asyncio.get_running_loop()  # there is one, even before the first await
        # ... and a task: sniffio (anyio, httpx) asks for it from the first step on
        assert asyncio.current_task() is not None
        return text

    @server.tool()
    async def suspends(text: str) -> str:
        VAR.set(text)
        await asyncio.sleep(0.01)
        return f"{VAR.get()}:{asyncio.current_task() is not None}"

    @server.tool()
    async def raises_at_once() -> str:
        raise RuntimeError("secret")

    @server.tool()
    async def waits() -> str:
        log.append("waits: started")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            log.append("waits: cancelled")
            raise
        return "never"  # pragma: no cover

    @server.tool()
    async def reads_var() -> str:
        return VAR.get()

    return server


class Peer:
    def __init__(self, server: Server) -> None:
        self.to_server_r, self.to_server_w = os.pipe()
        self.from_server_r, self.from_server_w = os.pipe()
        self.client = ClientConnection(versions=list(HANDSHAKE_REVISIONS))
        self.thread = threading.Thread(target=serve_stdio, args=(server,), kwargs={
            "stdin_fd": self.to_server_r, "stdout_fd": self.from_server_w}, daemon=True)
        self.thread.start()
        self.client.initialize()
        self.send()
        assert [type(e).__name__ for e in self.collect_events(1)] == ["Initialized"]
        self.send()

    def send(self) -> None:
        os.write(self.to_server_w, self.client.data_to_send())

    def collect_events(self, n: int) -> list[Any]:
        got: list[Any] = []
        while len(got) < n:
            self.client.receive_data(os.read(self.from_server_r, 1 << 20))
            got.extend(self.client.events())
        return got

    def answers(self, n: int) -> dict[Any, Any]:
        return {e.request_id: e for e in self.collect_events(n)}

    def call(self, name: str, **arguments: Any) -> Any:
        return self.client.send_request("tools/call", {"name": name, "arguments": arguments})

    def close(self) -> None:
        os.close(self.to_server_w)
        self.thread.join(SAFETY)
        assert not self.thread.is_alive()


def text(event: Any) -> str:
    assert isinstance(event, Response), event
    return str(event.result["content"][0]["text"])


def test_quick_suspending_and_raising_async_handlers() -> None:
    peer = Peer(make_server([]))
    quick, a, b, boom = (peer.call("quick", text="q"), peer.call("suspends", text="a"),
                         peer.call("suspends", text="b"), peer.call("raises_at_once"))
    peer.send()
    by_id = peer.answers(4)
    assert text(by_id[quick]) == "q"
    # Each kept its own context variable across its suspension, and went on in a task.
    assert (text(by_id[a]), text(by_id[b])) == ("a:True", "b:True")
    error = by_id[boom]
    assert isinstance(error, ErrorResponse)
    assert (error.code, error.message, error.data) == (-32603, "Internal error", None)
    read = peer.call("reads_var")
    peer.send()
    assert text(peer.answers(1)[read]) == "unset"  # nothing leaked into the worker
    peer.close()


def test_cancelling_a_suspended_async_handler_on_threads() -> None:
    log: list[str] = []
    peer = Peer(make_server(log))
    waits = peer.call("waits")
    peer.send()
    deadline = time.monotonic() + SAFETY
    while log != ["waits: started"] and time.monotonic() < deadline:
        time.sleep(0.01)
    peer.client.cancel(waits)
    peer.client.events()
    after = peer.call("quick", text="z")
    peer.send()
    assert set(peer.answers(1)) == {after}  # nothing for the cancelled call
    while "waits: cancelled" not in log and time.monotonic() < deadline:
        time.sleep(0.01)
    assert log == ["waits: started", "waits: cancelled"]
    peer.close()
