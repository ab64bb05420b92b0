"""The threading server starts an ``async def`` handler that takes no ``ctx`` on the thread
that dispatched it (the reader), as asyncio does; one that suspends goes on in a worker with
the loop it was stepped on. ``def`` handlers and handlers that take ``ctx`` run in the pool.
(The edge cases shared with the pool path -- raising, cancelling, context variables -- are
in test_adapter_threading_eager.py.)
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

from mcp_sansio.adapters.threading import serve_stdio

from mcp_sansio import STATELESS_REVISIONS, ClientConnection, Era
from mcp_sansio.app.server import Server
from tests.adapters.threading.test_adapter_threading_eager import Peer, text


def make_server() -> Server:
    server = Server("reader-threads")

    @server.tool()
    async def where() -> str:
        return threading.current_thread().name

    @server.tool()
    def where_sync() -> str:
        return threading.current_thread().name

    @server.tool()
    async def where_with_ctx(ctx: Any) -> str:
        return threading.current_thread().name

    @server.tool()
    async def hops(delay: float) -> str:
        before = threading.current_thread().name
        loop = asyncio.get_running_loop()
        await asyncio.sleep(delay)
        assert asyncio.get_running_loop() is loop  # the loop it was stepped on came along
        return f"{before}->{threading.current_thread().name}"

    return server


def test_async_handlers_without_ctx_start_on_the_reader() -> None:
    peer = Peer(make_server())
    reader = peer.thread.name
    ids = [peer.call("where"), peer.call("where_sync"), peer.call("where_with_ctx")]
    peer.send()
    by_id = peer.answers(3)
    inline, sync, with_ctx = (text(by_id[i]) for i in ids)
    assert inline == reader
    assert sync.startswith("mcp-sansio-handler") and with_ctx.startswith("mcp-sansio-handler")
    peer.close()


def test_suspending_handlers_go_on_in_workers_each_with_its_loop() -> None:
    peer = Peer(make_server())
    reader = peer.thread.name
    ids = [peer.call("hops", delay=0.02 * (i % 3)) for i in range(40)]
    peer.send()
    by_id = peer.answers(40)
    for request_id in ids:
        before, _, after = text(by_id[request_id]).partition("->")
        assert before == reader
        assert after.startswith("mcp-sansio-handler")  # a zero sleep suspends too
    # The reader still answers at once after handing its loops away.
    quick = peer.call("where")
    peer.send()
    assert text(peer.answers(1)[quick]) == reader
    peer.close()


class StatelessPeer(Peer):
    """The same pipes, with a client that speaks the stateless era (no handshake)."""

    def __init__(self, server: Server) -> None:
        self.to_server_r, self.to_server_w = os.pipe()
        self.from_server_r, self.from_server_w = os.pipe()
        self.client = ClientConnection(versions=list(STATELESS_REVISIONS))
        self.thread = threading.Thread(target=serve_stdio, args=(server,), kwargs={
            "stdin_fd": self.to_server_r, "stdout_fd": self.from_server_w}, daemon=True)
        self.thread.start()
        self.client.connect(era=Era.STATELESS)  # the probe: server/discover
        self.send()
        assert [type(e).__name__ for e in self.collect_events(1)] == ["Initialized"]


def test_stateless_era_handlers_with_ctx_start_on_the_reader_too() -> None:
    # Their ask never blocks (it answers input_required), so they need not wait for the pool.
    peer = StatelessPeer(make_server())
    reader = peer.thread.name
    ids = [peer.call("where_with_ctx"), peer.call("where_sync")]
    peer.send()
    by_id = peer.answers(2)
    assert text(by_id[ids[0]]) == reader
    assert text(by_id[ids[1]]).startswith("mcp-sansio-handler")
    peer.close()
