"""A trio or threads server's store thread (adapters/stores/home.py), in process: a store
that does not answer is a 503 with Retry-After within the driver's bound, as on asyncio;
the server leaves the bus when it stops; two servers on one MemoryStores share a session;
and against a real Redis (tests/_redis.py) stopped with SIGSTOP, a 503 with Retry-After
until it continues, then the session carries on."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from typing import Any

import pytest
from mcp_sansio.adapters.stores.tasks import SharedTasks
from mcp_sansio.adapters.tools import _example_server

from mcp_sansio.stores import MemoryStores
from tests._redis import RedisServer, redis_server  # noqa: F401  (the fixture, by name)
from tests.http_stories import SyncConn

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


def subscribed(stores: MemoryStores) -> set[str]:
    """The bus topics someone listens on."""
    return set(stores.bus._subscribers)


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
    stores = hung_stores()
    with start_http(server, stores=stores, store_timeout=STORE_TIMEOUT) as service:
        assert len(store_threads()) == 1
        assert {"sessions", "events", "answers", "workers"} <= subscribed(stores)
        assert_unavailable(service.port)
    assert subscribed(stores) == set()


def test_trio_a_store_that_hangs_is_a_503_with_retry_after() -> None:
    trio = pytest.importorskip("trio")
    from mcp_sansio.adapters.trio import start_http

    server = _example_server.build(_example_server._sleep_for("trio"))
    stores = hung_stores()

    async def main() -> None:
        async with start_http(server, stores=stores, store_timeout=STORE_TIMEOUT) as service:
            assert len(store_threads()) == 1
            assert {"sessions", "events", "answers", "workers"} <= subscribed(stores)
            await trio.to_thread.run_sync(assert_unavailable, service.port)

    trio.run(main)
    assert subscribed(stores) == set()


def test_threads_and_trio_servers_on_one_memory_store_share_a_session() -> None:
    """A session opened on a threads server is served by a trio server of the same process
    on the same :class:`MemoryStores` (one store thread serves both)."""
    trio = pytest.importorskip("trio")
    from mcp_sansio.adapters import threading as threads
    from mcp_sansio.adapters import trio as trio_adapter

    stores = MemoryStores()
    server = _example_server.build(_example_server._sleep_for("threading"))
    trio_server = _example_server.build(_example_server._sleep_for("trio"))
    with threads.start_http(server, stores=stores) as one:
        sid = initialize(one.port)

        async def main() -> None:
            async with trio_adapter.start_http(trio_server, stores=stores) as two:
                answer = await trio.to_thread.run_sync(echo, two.port, sid)
                assert answer["result"]["content"][0]["text"] == "on two"

        trio.run(main)


def initialize(port: int) -> str:
    conn = SyncConn(port)
    try:
        status, headers, messages = conn.request("POST", {
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}})
    finally:
        conn.close()
    assert status == 200, messages
    sid = headers["mcp-session-id"]
    conn = SyncConn(port)
    try:
        status, _, _ = conn.request("POST", {"jsonrpc": "2.0",
                                             "method": "notifications/initialized"},
                                    {"mcp-session-id": sid,
                                     "mcp-protocol-version": "2025-11-25"})
    finally:
        conn.close()
    assert status == 202
    return sid


def echo(port: int, sid: str) -> dict[str, Any]:
    conn = SyncConn(port)
    try:
        status, _, messages = conn.request("POST", {
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "on two"}}},
            {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
    finally:
        conn.close()
    assert status == 200, messages
    answer: dict[str, Any] = messages[-1]
    return answer


# -- a real Redis, stopped and continued ----------------------------------------------------------


def _stopped_then_continued(redis: RedisServer, port_a: int, port_b: int) -> None:
    """A session opened on A; Redis stopped (SIGSTOP): B, which must read the session from
    the table, answers 503 with Retry-After; Redis continued: B serves the session."""
    sid = initialize(port_a)
    os.kill(redis.process.pid, signal.SIGSTOP)
    try:
        conn = SyncConn(port_b)
        try:
            status, headers, _ = conn.request("POST", LIST, {
                "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
        finally:
            conn.close()
    finally:
        os.kill(redis.process.pid, signal.SIGCONT)
    assert status == 503, status
    assert int(headers["retry-after"]) >= 1
    assert echo(port_b, sid)["result"]["content"][0]["text"] == "on two"


@pytest.mark.parametrize("runtime", ["threading", "trio"])
def test_a_stopped_redis_is_a_503_with_retry_after_then_the_session_carries_on(
        runtime: str, redis_server: RedisServer) -> None:  # noqa: F811
    server = _example_server.build(_example_server._sleep_for(runtime))
    options = {"stores": redis_server.url, "store_timeout": STORE_TIMEOUT}
    if runtime == "threading":
        from mcp_sansio.adapters.threading import start_http

        with start_http(server, **options) as a, start_http(server, **options) as b:
            _stopped_then_continued(redis_server, a.port, b.port)
        return
    trio = pytest.importorskip("trio")
    from mcp_sansio.adapters.trio import start_http as start_trio

    async def main() -> None:
        async with start_trio(server, **options) as a, start_trio(server, **options) as b:
            await trio.to_thread.run_sync(_stopped_then_continued, redis_server, a.port, b.port)

    trio.run(main)


# -- a task cancelled on a server of the other runtime ---------------------------------------------


def _waiting_server(runtime: str, cancelled: threading.Event, stores: MemoryStores) -> Any:
    """A server whose task ``wait`` sleeps until cancelled (then sets ``cancelled``), its
    tasks shared through ``stores`` given at once (``start_http(stores=)`` keeps them)."""
    import importlib

    server = importlib.import_module(f"mcp_sansio.adapters.{runtime}").Server("cancel-demo")
    server.enable_tasks(shared=stores)
    sleep = _example_server._sleep_for(runtime)

    @server.tool(task_support="optional")
    async def wait(seconds: float) -> str:
        try:
            await sleep(seconds)
        except BaseException:
            cancelled.set()
            raise
        return "done"

    return server


def _cancel_elsewhere(port_a: int, port_b: int, cancelled: threading.Event) -> None:
    """A task made on A, cancelled on B: the handler on A is cancelled (the bus's ``tasks``
    topic reached it), and B answers with the cancelled task."""
    sid = initialize(port_a)
    headers = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}

    def call(port: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        conn = SyncConn(port)
        try:
            status, _, messages = conn.request("POST", {
                "jsonrpc": "2.0", "id": 7, "method": method, "params": params}, headers)
        finally:
            conn.close()
        assert status == 200, messages
        answer: dict[str, Any] = messages[-1]
        return answer

    made = call(port_a, "tools/call", {"name": "wait", "arguments": {"seconds": 600},
                                       "task": {}})
    task_id = made["result"]["task"]["taskId"]
    answer = call(port_b, "tasks/cancel", {"taskId": task_id})
    assert answer["result"]["status"] == "cancelled", answer
    assert cancelled.wait(60), "the handler on A was not cancelled"


@pytest.mark.parametrize("runs", ["trio", "threading"])
def test_a_task_is_cancelled_from_a_server_of_the_other_runtime(runs: str) -> None:
    """One :class:`MemoryStores`, a trio and a threads server in one process: a task that
    runs on one (``runs``) is cancelled by a ``tasks/cancel`` sent to the other."""
    trio = pytest.importorskip("trio")
    from mcp_sansio.adapters import threading as threads
    from mcp_sansio.adapters import trio as trio_adapter

    stores = MemoryStores()
    cancelled = threading.Event()
    trio_server = _waiting_server(
        "trio", cancelled if runs == "trio" else threading.Event(), stores)
    thread_server = _waiting_server(
        "threading", cancelled if runs == "threading" else threading.Event(), stores)
    with threads.start_http(thread_server, stores=stores) as on_threads:

        async def main() -> None:
            async with trio_adapter.start_http(trio_server, stores=stores) as on_trio:
                ports = (on_trio.port, on_threads.port)
                a, b = ports if runs == "trio" else ports[::-1]
                await trio.to_thread.run_sync(_cancel_elsewhere, a, b, cancelled)

        trio.run(main)


class _HungTasks:
    """A task table whose reads never answer."""

    async def get(self, task_id: str, *, wall_time: float) -> Any:
        await asyncio.Event().wait()


def test_a_task_read_from_a_store_that_hangs_fails_within_the_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``tasks/get`` of a task this worker does not run reads the shared table: a table
    that does not answer fails the request, with an error that says so (no hang)."""
    from mcp_sansio.adapters.threading import start_http

    stores = MemoryStores()
    stores.tasks = _HungTasks()  # type: ignore[assignment]
    server = _waiting_server("threading", threading.Event(), stores)
    monkeypatch.setattr(SharedTasks, "store_timeout", STORE_TIMEOUT)
    with start_http(server, stores=stores) as service:
        sid = initialize(service.port)
        conn = SyncConn(service.port)
        try:
            status, _, messages = conn.request("POST", {
                "jsonrpc": "2.0", "id": 3, "method": "tasks/get",
                "params": {"taskId": "a-task-of-another-worker"}},
                {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
        finally:
            conn.close()
    assert status == 200, messages
    error = messages[-1]["error"]
    assert "no answer within" in error["message"], error
