"""The trio server runs handlers in runner tasks (not a task per request): a runner takes the
queued handlers one after the other, each still in a fresh copy of the context and a cancel
scope of its own; a cancelled one is cancelled for real, one cancelled while queued runs
cancelled, and one that waits does not hold up the handlers queued behind it.
"""

from __future__ import annotations

import contextvars
import os
import select
import threading
import time
from functools import partial
from typing import Any

import trio
from mcp_sansio.adapters.common.async_session import AsyncContext as Context
from mcp_sansio.adapters.trio import serve_stdio

from mcp_sansio import HANDSHAKE_REVISIONS, ClientConnection
from mcp_sansio.app.errors import RequestTimeout
from mcp_sansio.app.server import Server
from tests.adapters.threading.test_adapter_threading_eager import text

SAFETY = 60.0
VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


def make_server(log: list[str]) -> Server:
    server = Server("reuse-trio")
    tasks: list[Any] = []  # held, so that no two tasks can share an id

    @server.tool()
    async def which() -> str:
        task = trio.lowlevel.current_task()
        if task not in tasks:
            tasks.append(task)
        return str(tasks.index(task))

    @server.tool()
    async def sets(value: str) -> str:
        VAR.set(value)
        await trio.sleep(0)
        return VAR.get()

    @server.tool()
    async def reads() -> str:
        return VAR.get()

    @server.tool()
    async def asks(ctx: Context) -> str:
        # A request to the client that is never answered: the server's own deadline (its
        # timer task; no runner is reading then but the one that reads) ends it.
        try:
            await ctx.session.request("roots/list", timeout=0.2)
        except RequestTimeout:
            return "timed out"
        return "answered"  # pragma: no cover

    @server.tool()
    async def leaker(ctx: Context) -> str:
        # After a wait (so not in a runner's taking step), with VAR set, something queued:
        # a runner is spawned from inside this handler's context.
        await trio.sleep(0)
        VAR.set("leaked")
        ctx.session._spawn_awaitable(trio.sleep(0))
        return "ok"

    @server.tool()
    async def waits() -> str:
        log.append("waits: started")
        try:
            await trio.sleep(30)
        except trio.Cancelled:
            log.append("waits: cancelled")
            raise
        return "never"  # pragma: no cover

    return server


class Peer:
    """A trio server on a pair of pipes, in a thread; a core client on this side."""

    def __init__(self, server: Server) -> None:
        self.to_server_r, self.to_server_w = os.pipe()
        self.from_server_r, self.from_server_w = os.pipe()
        self.client = ClientConnection(versions=list(HANDSHAKE_REVISIONS),
                                       capabilities={"roots": {}})
        serve = partial(serve_stdio, server, stdin_fd=self.to_server_r,
                        stdout_fd=self.from_server_w)
        self.thread = threading.Thread(target=trio.run, args=(serve,), daemon=True)
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
            readable, _, _ = select.select([self.from_server_r], [], [], SAFETY)
            assert readable, "the server sent nothing"
            self.client.receive_data(os.read(self.from_server_r, 1 << 20))
            got.extend(self.client.events())
        return got

    def answers(self, n: int) -> dict[Any, Any]:
        return {e.request_id: e for e in self.collect_events(n)}

    def call(self, name: str, **arguments: Any) -> Any:
        return self.client.send_request("tools/call", {"name": name, "arguments": arguments})

    def ask(self, name: str, **arguments: Any) -> str:
        request_id = self.call(name, **arguments)
        self.send()
        return text(self.answers(1)[request_id])

    def close(self) -> None:
        os.close(self.to_server_w)
        self.thread.join(SAFETY)
        assert not self.thread.is_alive()


def test_a_finished_handlers_task_runs_the_next_handler() -> None:
    peer = Peer(make_server([]))
    first = peer.ask("which")
    assert peer.ask("which") == first  # the same task, not a new one
    peer.close()


def test_each_handler_gets_a_fresh_context() -> None:
    peer = Peer(make_server([]))
    assert peer.ask("sets", value="a") == "a"
    assert peer.ask("reads") == "unset"  # nothing leaked from the previous handler
    ids = {peer.call("sets", value=str(i)): str(i) for i in range(20)}
    peer.send()
    answers = peer.answers(20)
    assert {request_id: text(answers[request_id]) for request_id in ids} == ids
    assert peer.ask("reads") == "unset"
    peer.close()


def test_a_handler_on_a_reused_task_is_cancelled_for_real() -> None:
    log: list[str] = []
    peer = Peer(make_server(log))
    peer.ask("reads")  # its task is now idle, and takes the next handler
    waits = peer.call("waits")
    peer.send()
    deadline = time.monotonic() + SAFETY
    while log != ["waits: started"] and time.monotonic() < deadline:
        time.sleep(0.01)
    peer.client.cancel(waits)
    peer.client.events()
    assert peer.ask("reads") == "unset"  # served meanwhile; nothing for the cancelled call
    while "waits: cancelled" not in log and time.monotonic() < deadline:
        time.sleep(0.01)
    assert log == ["waits: started", "waits: cancelled"]
    peer.close()


def test_a_waiting_handler_does_not_hold_up_the_ones_queued_behind_it() -> None:
    # One write: the runner steps "waits", which suspends and keeps that runner; the
    # handlers queued behind it are run by another runner, not after it.
    log: list[str] = []
    peer = Peer(make_server(log))
    waits = peer.call("waits")
    later = [peer.call("sets", value=str(i)) for i in range(5)]
    peer.send()
    answers = peer.answers(5)
    assert sorted(answers) == sorted(later)
    assert waits not in answers
    assert log == ["waits: started"]
    peer.client.cancel(waits)
    peer.send()
    assert peer.ask("reads") == "unset"
    peer.close()
    assert log == ["waits: started", "waits: cancelled"]


def test_a_handler_cancelled_before_it_started_runs_cancelled() -> None:
    # The request and its cancellation in one read: the handler is still queued when the
    # cancellation comes; it runs in a scope cancelled from the start (as a task spawned
    # into a cancelled scope would), so its first wait raises Cancelled.
    log: list[str] = []
    peer = Peer(make_server(log))
    waits = peer.call("waits")
    peer.client.cancel(waits)
    peer.send()
    assert peer.ask("reads") == "unset"
    deadline = time.monotonic() + SAFETY
    while "waits: cancelled" not in log and time.monotonic() < deadline:
        time.sleep(0.01)
    assert log == ["waits: started", "waits: cancelled"]
    peer.close()


def test_a_handler_waiting_on_the_client_leaves_the_reading_to_another_runner() -> None:
    # "asks" waits for the client's answer in the runner that read its request; another
    # runner reads on (the client's later requests are served), and the server's deadline
    # for the unanswered request fires on time (a cancelled roots/list goes out).
    peer = Peer(make_server([]))
    asks = peer.call("asks")
    peer.send()
    events = peer.collect_events(1)
    assert type(events[0]).__name__ == "Request" and events[0].method == "roots/list"
    assert peer.ask("reads") == "unset"  # read and answered while asks waits
    answers: dict[Any, Any] = {}
    deadline = time.monotonic() + SAFETY
    while asks not in answers and time.monotonic() < deadline:
        for event in peer.collect_events(1):
            if type(event).__name__ == "Response":
                answers[event.request_id] = event
    assert text(answers[asks]) == "timed out"
    peer.close()


def test_a_runner_spawned_from_a_handler_reads_in_the_servers_context() -> None:
    # "leaker" spawns a runner from its own context (VAR set); two waiting handlers then
    # leave the reading to one of the idle runners -- that one or another, as trio's
    # scheduler orders them, hence a few rounds. What a runner reads must be fed in the
    # serving context: a later handler sees VAR unset, never the value leaker set.
    log: list[str] = []
    peer = Peer(make_server(log))
    deadline = time.monotonic() + SAFETY
    for round_ in range(1, 7):
        assert peer.ask("leaker") == "ok"
        first, second = peer.call("waits"), peer.call("waits")
        peer.send()
        while log.count("waits: started") < 2 * round_ and time.monotonic() < deadline:
            time.sleep(0.01)
        assert peer.ask("reads") == "unset"
        peer.client.cancel(first)
        peer.client.cancel(second)
        peer.send()
        while log.count("waits: cancelled") < 2 * round_ and time.monotonic() < deadline:
            time.sleep(0.01)
    peer.close()
