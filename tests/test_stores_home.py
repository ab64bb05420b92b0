"""A trio or threads server's store thread (adapters/stores/home.py), in process: a store
that does not answer is a 503 with Retry-After within the driver's bound, as on asyncio;
the store thread ends with the server."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from mcp_sansio.adapters.tools import _example_server
from mcp_sansio.stores import MemoryStores

from .http_stories import SyncConn

#: The driver's bound on one store call in these tests (seconds): short, so a hung store
#: is told quickly; nothing here asserts on time.
STORE_TIMEOUT = 0.3
HEADERS = {"mcp-session-id": "a-session-no-worker-knows", "mcp-protocol-version": "2025-11-25"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


class _Hung:
    """A session table whose reads never answer (a Redis stopped with SIGSTOP)."""

    async def get(self, session_id: str, *, wall_time: float) -> Any:
        await asyncio.Event().wait()


def hung_stores() -> MemoryStores:
    stores = MemoryStores()
    stores.sessions = _Hung()  # type: ignore[assignment]
    return stores


def store_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "mcp-sansio-stores"]


def assert_unavailable(port: int) -> None:
    conn = SyncConn(port)
    try:
        status, headers, _ = conn.request("POST", LIST, HEADERS)
    finally:
        conn.close()
    assert status == 503, status
    assert int(headers["retry-after"]) >= 1


def test_threads_a_store_that_hangs_is_a_503_with_retry_after() -> None:
    from mcp_sansio.adapters.threading import start_http

    server = _example_server.build(_example_server._sleep_for("threading"))
    before = len(store_threads())
    with start_http(server, stores=hung_stores(), store_timeout=STORE_TIMEOUT) as service:
        assert len(store_threads()) == before + 1
        assert_unavailable(service.port)
    assert len(store_threads()) == before


def test_trio_a_store_that_hangs_is_a_503_with_retry_after() -> None:
    trio = pytest.importorskip("trio")
    from mcp_sansio.adapters.trio import start_http

    server = _example_server.build(_example_server._sleep_for("trio"))
    before = len(store_threads())

    async def main() -> None:
        async with start_http(server, stores=hung_stores(),
                              store_timeout=STORE_TIMEOUT) as service:
            assert len(store_threads()) == before + 1
            await trio.to_thread.run_sync(assert_unavailable, service.port)

    trio.run(main)
    assert len(store_threads()) == before
