"""The asyncio server's eager handler start: a request's handler is stepped once the
incoming events are drained and gets a task only if it suspends. Its edge cases: a handler
that suspends, one that raises before suspending, one cancelled before it was stepped
(request and cancellation in the same chunk) and one cancelled while suspended, context
variables, and many handlers answered by one write.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
from typing import Any

import pytest
from mcp_sansio.adapters.asyncio import Context, serve_stdio
from mcp_sansio.adapters.common.async_session import _Resumed

from mcp_sansio import ErrorResponse, Response
from mcp_sansio.app.server import Server
from tests.adapters.asyncio.test_adapter_asyncio import PipePeer, run

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


def make_server(log: list[str], gate: asyncio.Event | None = None) -> Server:
    server = Server("eager")

    @server.tool()
    async def quick(text: str) -> str:
        log.append(f"quick {text} task={asyncio.current_task() is not None}")
        return text

    @server.tool()
    async def suspends(text: str, ctx: Context) -> str:
        log.append("suspends: before")
        await asyncio.sleep(0)
        log.append(f"suspends: after, in a task: {asyncio.current_task() is not None}")
        return text.upper()

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
    async def raises_at_once() -> str:
        raise RuntimeError("secret before any await")

    @server.tool()
    async def raises_later() -> str:
        await asyncio.sleep(0)
        raise RuntimeError("secret after an await")

    @server.tool()
    async def sets_var(value: str) -> str:
        before = VAR.get()
        VAR.set(value)
        await asyncio.sleep(0)
        return f"{before}->{VAR.get()}"

    @server.tool()
    async def reads_var() -> str:
        return VAR.get()

    return server


async def start(peer: PipePeer, server: Server) -> asyncio.Future[None]:
    serving = asyncio.ensure_future(serve_stdio(
        server, stdin_fd=peer.to_server_r, stdout_fd=peer.from_server_w))
    peer.client.initialize()
    peer.send()
    assert [type(e).__name__ for e in await peer.events()] == ["Initialized"]
    peer.send()  # notifications/initialized
    return serving


async def collect(peer: PipePeer, n: int) -> dict[Any, Any]:
    got: list[Any] = []
    while len(got) < n:
        got.extend(await peer.events())
    return {e.request_id: e for e in got}


def call(peer: PipePeer, name: str, **arguments: Any) -> Any:
    return peer.client.send_request("tools/call", {"name": name, "arguments": arguments})


def text(event: Any) -> str:
    assert isinstance(event, Response), event
    return str(event.result["content"][0]["text"])


def test_quick_and_suspending_handlers(caplog: pytest.LogCaptureFixture) -> None:
    log: list[str] = []
    peer = PipePeer()

    async def main() -> None:
        serving = await start(peer, make_server(log))
        ids = [call(peer, "quick", text="a"), call(peer, "suspends", text="b"),
               call(peer, "quick", text="c")]
        peer.send()  # all three in one chunk
        by_id = await collect(peer, 3)
        assert [text(by_id[i]) for i in ids] == ["a", "B", "c"]
        # The quick ones finished without a task; the suspending one went on in one.
        assert log == ["quick a task=False", "suspends: before", "quick c task=False",
                       "suspends: after, in a task: True"]
        os.close(peer.to_server_w)
        await serving

    run(main())


def test_raising_before_and_after_suspending(caplog: pytest.LogCaptureFixture) -> None:
    peer = PipePeer()

    async def main() -> None:
        serving = await start(peer, make_server([]))
        at_once, later = call(peer, "raises_at_once"), call(peer, "raises_later")
        peer.send()
        by_id = await collect(peer, 2)
        for request_id in (at_once, later):
            error = by_id[request_id]
            assert isinstance(error, ErrorResponse)
            assert (error.code, error.message, error.data) == (-32603, "Internal error", None)
        os.close(peer.to_server_w)
        await serving

    with caplog.at_level(logging.ERROR, logger="mcp_sansio.adapters"):
        run(main())
    logged = " ".join(r.exc_text or str(r.exc_info) for r in caplog.records)
    assert "secret before any await" in logged and "secret after an await" in logged


def test_cancelled_in_the_same_chunk_never_runs() -> None:
    log: list[str] = []
    peer = PipePeer()

    async def main() -> None:
        serving = await start(peer, make_server(log))
        quick = call(peer, "quick", text="x")
        peer.client.cancel(quick)  # request and cancellation in one write
        peer.client.events()
        after = call(peer, "quick", text="y")
        peer.send()
        by_id = await collect(peer, 1)
        assert set(by_id) == {after}  # nothing at all for the cancelled one
        assert log == ["quick y task=False"]
        os.close(peer.to_server_w)
        await serving

    run(main())


def test_cancelling_a_suspended_eager_handler() -> None:
    log: list[str] = []
    peer = PipePeer()

    async def main() -> None:
        serving = await start(peer, make_server(log))
        waits = call(peer, "waits")
        peer.send()
        while log != ["waits: started"]:
            await asyncio.sleep(0.01)
        peer.client.cancel(waits)
        peer.client.events()
        after = call(peer, "quick", text="z")
        peer.send()
        by_id = await collect(peer, 1)
        assert set(by_id) == {after}  # nothing for the cancelled call
        while "waits: cancelled" not in log:
            await asyncio.sleep(0.01)
        assert sorted(log) == ["quick z task=False", "waits: cancelled", "waits: started"]
        os.close(peer.to_server_w)
        await serving

    run(main())


def test_cancelled_before_its_task_first_runs() -> None:
    # The task that goes on with a stepped handler may be cancelled before its own first
    # step: the handler still gets CancelledError at the await it stopped at.
    log: list[str] = []

    async def handler() -> None:
        log.append("started")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            log.append("cancelled")
            raise

    async def main() -> None:
        coro = handler()
        first = coro.send(None)
        task = asyncio.get_running_loop().create_task(_Resumed(coro, first))
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled()

    run(main())
    assert log == ["started", "cancelled"]


def test_a_stepped_handler_resumes_with_the_awaited_value() -> None:
    async def handler() -> int:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, 41)
        return await future + 1

    async def main() -> int:
        coro = handler()
        first = coro.send(None)
        return await asyncio.get_running_loop().create_task(_Resumed(coro, first))

    assert run(main()) == 42


def test_context_variables_stay_per_handler() -> None:
    peer = PipePeer()

    async def main() -> None:
        VAR.set("outer")
        serving = await start(peer, make_server([]))
        first = call(peer, "sets_var", value="one")
        second = call(peer, "sets_var", value="two")
        peer.send()
        by_id = await collect(peer, 2)
        # Each saw the context as it was when served, and kept its own value across its
        # suspension; neither leaked into the pump.
        assert {text(by_id[first]), text(by_id[second])} == {"outer->one", "outer->two"}
        read = call(peer, "reads_var")
        peer.send()
        assert text((await collect(peer, 1))[read]) == "outer"
        os.close(peer.to_server_w)
        await serving

    run(main())


def test_stopping_with_handlers_suspended() -> None:
    log: list[str] = []
    peer = PipePeer()

    async def main() -> None:
        serving = await start(peer, make_server(log))
        call(peer, "waits")
        peer.send()
        while log != ["waits: started"]:
            await asyncio.sleep(0.01)
        os.close(peer.to_server_w)  # EOF: the server stops its handlers and returns
        await serving
        assert log == ["waits: started", "waits: cancelled"]

    run(main())
