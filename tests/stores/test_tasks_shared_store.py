"""Shared task records (issue 18) without HTTP: the task table's contract on the in-memory
store and a real Redis, the records' wall-clock lifetime between hosts whose clocks are
skewed (injected clocks), and the visibility rules of the ledger's remote path (another
session's or another principal's task is unknown, and never listed)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_sansio.adapters.stores.tasks import SharedTasks

from mcp_sansio import Era
from mcp_sansio.app.errors import McpError
from mcp_sansio.app.tasks import Task, TaskLedger
from mcp_sansio.stores import DEFAULT_TASK_SKEW, MemoryStores, MemoryTaskTable, task_deadline
from tests._redis import RedisServer, redis_server  # noqa: F401  (the fixture)
from tests.app.test_app_tasks import FakeRuntime

_prefixes = itertools.count()
#: Now: Redis expires keys on its own clock, so the contract runs near the real one.
NOW = time.time()


@pytest.fixture(params=["memory", "redis"])
def open_table(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        @contextlib.asynccontextmanager
        async def memory() -> AsyncIterator[Any]:
            yield MemoryTaskTable()
        return memory
    server: RedisServer = request.getfixturevalue("redis_server")
    from mcp_sansio.adapters.redis import RedisStores

    @contextlib.asynccontextmanager
    async def redis() -> AsyncIterator[Any]:
        stores = RedisStores.from_url(server.url, prefix=f"ts{next(_prefixes)}:")
        try:
            yield stores.tasks
        finally:
            await stores.aclose()
    return redis


def record(task_id: str, status: str = "working", owner: str | None = "o1",
           principal: str | None = None) -> dict[str, Any]:
    task = Task(task_id, NOW, float("inf"), 60_000, 500)
    task.status = status
    task.owner_key, task.principal = owner, principal
    return task.record()


def test_the_task_table_contract(open_table: Any) -> None:
    async def main() -> None:
        async with open_table() as table:
            await table.put("a", record("a"), owner="o1", expires_at=NOW + 60, wall_time=NOW)
            await table.put("b", record("b"), owner="o2", expires_at=NOW + 60, wall_time=NOW)
            await table.put("c", record("c"), owner="o1", expires_at=NOW + 60, wall_time=NOW)
            await table.put("d", record("d", owner=None), owner=None, expires_at=NOW + 60,
                            wall_time=NOW)
            # A rewrite replaces the record and keeps its place in its owner's list.
            await table.put("a", record("a", "completed"), owner="o1", expires_at=NOW + 60,
                            wall_time=NOW + 1)
            got = await table.get("a", wall_time=NOW + 1)
            assert got is not None and got["status"] == "completed"
            assert await table.get("missing", wall_time=NOW) is None
            assert [r["taskId"] for r in await table.owned("o1", wall_time=NOW + 1)] == [
                "a", "c"]
            assert [r["taskId"] for r in await table.owned("o2", wall_time=NOW + 1)] == ["b"]
            assert await table.owned("nobody", wall_time=NOW) == []
            # Judged at the reader's wall time: past the deadline it is gone and unlisted.
            await table.put("e", record("e"), owner="o2", expires_at=NOW + 5, wall_time=NOW)
            assert await table.get("e", wall_time=NOW + 4.9) is not None
            assert await table.get("e", wall_time=NOW + 5) is None
            assert [r["taskId"] for r in await table.owned("o2", wall_time=NOW + 5)] == ["b"]
    asyncio.run(main())


def test_a_record_lives_its_ttl_on_every_host_whose_clock_is_within_the_skew() -> None:
    """Host A writes at its wall time; host B, whose clock runs ahead or behind, reads. SEP-2663
    ("TTL"): never dropped before its TTL; the allowance bounds how long after."""
    async def main() -> None:
        stores = MemoryStores()
        a_wall, b_wall = [1_700_000_000.0], [0.0]
        a = SharedTasks(stores, wall=lambda: a_wall[0])
        b = SharedTasks(stores, wall=lambda: b_wall[0])
        task = Task("t1", a_wall[0], float("inf"), 60_000, 500)
        task.owner_key = "o"
        a.saved(task, task.record())
        await a.stored("t1")
        ttl = 60.0
        for offset in (-DEFAULT_TASK_SKEW, -10.0, 0.0, 10.0, DEFAULT_TASK_SKEW - 0.001):
            # B's clock is `offset` ahead of A's; A's clock says the TTL just ended.
            b_wall[0] = a_wall[0] + ttl + offset
            got = await b.fetch("t1")
            assert got is not None and got["created"] == a_wall[0], offset
            assert Task.from_record(got).v1()["createdAt"] == task.v1()["createdAt"]
        b_wall[0] = task_deadline(a_wall[0], 60_000)
        assert b_wall[0] == a_wall[0] + ttl + DEFAULT_TASK_SKEW
        assert await b.fetch("t1") is None
        assert await b.owned("o") == []
        await a.aclose()
        await b.aclose()
    asyncio.run(main())


@settings(max_examples=60, deadline=None)
@given(created=st.floats(1e9, 3e9), ttl_ms=st.integers(1, 10**8),
       offset=st.floats(-DEFAULT_TASK_SKEW, DEFAULT_TASK_SKEW - 0.001),  # (float rounding)
       before=st.floats(0, 10**5))
def test_no_reader_within_the_skew_loses_a_record_before_its_ttl(
        created: float, ttl_ms: int, offset: float, before: float) -> None:
    """For any creation time and TTL: a reader whose clock is off by less than the allowance
    finds the record at any moment up to the TTL's end on the writer's clock, and nobody
    finds it once the deadline has passed on their own clock."""
    async def main() -> None:
        table = MemoryTaskTable()
        deadline = task_deadline(created, ttl_ms)
        await table.put("t", record("t"), owner="o", expires_at=deadline, wall_time=created)
        end = created + ttl_ms / 1000
        moment = max(created, end - before)  # on the writer's clock, within the TTL
        assert await table.get("t", wall_time=moment + offset) is not None
        assert [r["taskId"] for r in await table.owned("o", wall_time=moment + offset)] == [
            "t"]
        assert await table.get("t", wall_time=deadline) is None
    asyncio.run(main())


class StubSharing:
    """The records another worker stored; identity as the test says."""

    def __init__(self, records: list[dict[str, Any]], owner: str | None,
                 principal: str | None) -> None:
        self.records = {r["taskId"]: r for r in records}
        self.me = (owner, principal)
        self.sent: list[tuple[str, str]] = []

    def identity(self, ctx: Any) -> tuple[str | None, str | None]:
        return self.me

    def saved(self, task: Task, record: dict[str, Any]) -> None:
        self.records[task.task_id] = record

    async def stored(self, task_id: str) -> None:
        pass

    async def fetch(self, task_id: str) -> dict[str, Any] | None:
        return self.records.get(task_id)

    async def owned(self, owner: str) -> list[dict[str, Any]]:
        return [r for r in self.records.values() if r["owner"] == owner]

    async def send(self, task_id: str, op: str, data: Any) -> None:
        self.sent.append((task_id, op))

    async def until_changed(self, task_id: str, timeout: float) -> None:
        pass


@pytest.mark.parametrize("me", [("s1", "alice"), ("s1", "bob"), ("s2", "alice"),
                                ("s1", None)])
def test_another_sessions_or_principals_tasks_are_unknown_and_unlisted(
        me: tuple[str, str | None]) -> None:
    records = [record("mine", owner="s1", principal="alice"),
               record("done", "completed", owner="s1", principal="alice"),
               record("bobs", owner="s1", principal="bob"),
               record("other", owner="s2", principal="alice")]
    sharing = StubSharing(records, *me)
    ledger = TaskLedger(FakeRuntime(), sharing=sharing)
    ctx: Any = SimpleNamespace(era=Era.HANDSHAKE)

    async def run(method: str, params: dict[str, Any]) -> Any:
        job = ledger._remote_job(method, params, ctx)
        assert job.fn is not None
        return job.shape(await job.fn())

    async def main() -> None:
        listed = await run("tasks/list", {})
        visible = {r["taskId"] for r in records
                   if (r["owner"], r["principal"]) == me}
        assert {t["taskId"] for t in listed["tasks"]} == visible
        for r in records:
            if r["taskId"] in visible:
                assert (await run("tasks/get", {"taskId": r["taskId"]}))["taskId"] == r[
                    "taskId"]
                continue
            for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                with pytest.raises(McpError) as refused:
                    await run(method, {"taskId": r["taskId"]})
                assert refused.value.code == -32602
        # Nothing was sent to another worker for a task the caller may not see.
        assert sharing.sent == []
    asyncio.run(main())


def test_a_remote_cancel_whose_worker_is_gone_is_written_here() -> None:
    """2025-11-25 tasks/cancel on a worker that does not run the task: the running worker
    stores the cancelled record; when none does within the bound (its host died), this
    worker writes it, and answers the cancelled Task."""
    sharing = StubSharing([record("t", owner="s1")], "s1", None)
    runtime = FakeRuntime()
    ledger = TaskLedger(runtime, sharing=sharing)
    ctx: Any = SimpleNamespace(era=Era.HANDSHAKE)
    waits: list[float] = []

    async def nobody_answers(task_id: str, timeout: float) -> None:
        waits.append(timeout)
        runtime.mono_now += timeout  # the wait took its whole timeout
    sharing.until_changed = nobody_answers  # type: ignore[method-assign]

    async def main() -> None:
        job = ledger._remote_job("tasks/cancel", {"taskId": "t"}, ctx)
        assert job.fn is not None
        answer = job.shape(await job.fn())
        assert answer["status"] == "cancelled" and sharing.sent == [("t", "cancel")]
        assert sum(waits) == pytest.approx(5.0)  # REMOTE_CANCEL_WAIT, a poll at a time
        assert set(waits) == {0.5}
        assert sharing.records["t"]["status"] == "cancelled"
        again = ledger._remote_job("tasks/cancel", {"taskId": "t"}, ctx)
        assert again.fn is not None
        with pytest.raises(McpError) as refused:
            await again.fn()
        assert refused.value.code == -32602
    asyncio.run(main())


def test_tasks_are_shared_through_one_set_of_stores_only() -> None:
    from mcp_sansio.adapters.common.tasks import Tasks

    first, second = MemoryStores(), MemoryStores()
    tasks = Tasks(shared=first)
    tasks.share(first)  # what start_http(stores=first) does: the same stores stay
    assert isinstance(tasks.sharing, SharedTasks) and tasks.sharing.stores is first
    with pytest.raises(ValueError, match="other stores"):
        tasks.share(second)
    plain = Tasks()
    assert plain.sharing is None
    plain.share(second)
    assert isinstance(plain.sharing, SharedTasks) and plain.sharing.ledger is plain
    plain.share(first)  # attached by share (an ASGI app on a new loop): replaced
    assert isinstance(plain.sharing, SharedTasks) and plain.sharing.stores is first


def test_a_task_that_changes_faster_than_the_store_writes_costs_one_write_per_round() -> None:
    """Records queued for one task while a write is in flight are coalesced: the newest is
    written, the ones it replaced never are, and ``stored`` returns once it is."""
    class CountingTable(MemoryTaskTable):
        def __init__(self) -> None:
            super().__init__()
            self.writes: list[str | None] = []

        async def put(self, task_id: str, record: Any, **options: Any) -> None:
            self.writes.append(record["statusMessage"])
            await asyncio.sleep(0)  # a network round trip
            await super().put(task_id, record, **options)

    async def main() -> None:
        stores = MemoryStores()
        stores.tasks = CountingTable()
        sharing = SharedTasks(stores, wall=lambda: NOW)
        task = Task("t", NOW, float("inf"), 60_000, 500)
        for n in range(100):  # progress in a loop: 100 changes before the writer runs
            task.status_message = str(n)
            sharing.saved(task, task.record())
        await sharing.stored("t")
        assert stores.tasks.writes == ["99"]
        got = await sharing.fetch("t")
        assert got is not None and got["statusMessage"] == "99"
        await sharing.aclose()
    asyncio.run(main())
