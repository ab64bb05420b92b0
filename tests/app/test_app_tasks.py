"""The task ledger on its own (``mcp_sansio/app/tasks.py``): no runtime, no socket, a virtual
clock and ids handed in. The runtime-driven behaviour over HTTP is in ``test_tasks.py``."""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

import pytest

from mcp_sansio import FEATURES, KNOWN_REVISIONS, Era
from mcp_sansio.app.context import Job
from mcp_sansio.app.errors import McpError
from mcp_sansio.app.tasks import InMemoryTaskStore, Task, TaskLedger


class FakeRuntime:
    """Everything a ledger is handed, under the test's control."""

    def __init__(self) -> None:
        self.wall_now = 1_700_000_000.0
        self.mono_now = 50.0
        self.lock = contextlib.nullcontext()
        self.launched: list[tuple[Task, Job]] = []
        self._ids = iter(f"t{i}" for i in range(1, 100))

    def wall(self) -> float:
        return self.wall_now

    def monotonic(self) -> float:
        return self.mono_now

    def new_task_id(self) -> str:
        return next(self._ids)

    def waiter(self) -> Any:  # pragma: no cover - these tests never wait
        raise AssertionError("no waiter expected")

    def launch(self, ledger: TaskLedger, task: Task, job: Job, ctx: Any) -> None:
        self.launched.append((task, job))


class FakeContext:
    """The parts of a handler context the ledger reads (a 2026-07-28 request)."""

    era = Era.STATELESS
    session = None

    def __init__(self) -> None:
        self.params: dict[str, Any] = {"name": "slow"}

    def notify(self, method: str, params: Any = None) -> None:  # pragma: no cover
        raise AssertionError("a stateless task sends no status notification")


def make(**options: Any) -> tuple[TaskLedger, FakeRuntime]:
    runtime = FakeRuntime()
    return TaskLedger(runtime, **options), runtime


def test_a_task_is_created_with_the_handed_in_id_and_times_and_launched() -> None:
    ledger, runtime = make(ttl_ms=2000, poll_interval_ms=100)
    job = Job(lambda: "x", shape=lambda v: {"content": [{"type": "text", "text": v}]})
    task = ledger.start(job, FakeContext())  # type: ignore[arg-type]
    assert task is not None and task.task_id == "t1"
    assert runtime.launched == [(task, job)]
    answer = ledger.get({"taskId": "t1"}, FakeContext())  # type: ignore[arg-type]
    assert answer["status"] == "working"
    assert answer["createdAt"] == "2023-11-14T22:13:20.000Z"
    assert (answer["ttlMs"], answer["pollIntervalMs"]) == (2000, 100)


def test_the_outcome_is_kept_and_shaped_until_the_ttl_on_the_virtual_clock() -> None:
    ledger, runtime = make(ttl_ms=2000)
    job = Job(lambda: "x", shape=lambda v: {"content": [{"type": "text", "text": v}]})
    task = ledger.start(job, FakeContext())  # type: ignore[arg-type]
    assert task is not None
    runtime.wall_now += 1
    ledger._finish(task, job, value="done")
    answer = ledger.get({"taskId": "t1"}, FakeContext())  # type: ignore[arg-type]
    assert answer["status"] == "completed"
    assert answer["result"] == {"content": [{"type": "text", "text": "done"}]}
    assert answer["lastUpdatedAt"] == "2023-11-14T22:13:21.000Z"
    runtime.mono_now += 1.999
    assert len(ledger) == 1
    runtime.mono_now += 0.001
    assert len(ledger) == 0
    with pytest.raises(McpError) as caught:
        ledger.get({"taskId": "t1"}, FakeContext())  # type: ignore[arg-type]
    assert caught.value.code == -32602


def test_a_handler_failure_is_a_generic_failed_task() -> None:
    ledger, _ = make()
    job = Job(lambda: None)
    task = ledger.start(job, FakeContext())  # type: ignore[arg-type]
    assert task is not None
    ledger._finish(task, job, error=RuntimeError("secret detail"))
    answer = ledger.get({"taskId": task.task_id}, FakeContext())  # type: ignore[arg-type]
    assert answer["status"] == "failed"
    assert answer["error"] == {"code": -32603, "message": "Internal error"}


def test_cancel_stops_the_handler_once_and_a_full_ledger_refuses_a_task() -> None:
    ledger, _ = make(max_tasks=1)
    task = ledger.start(Job(lambda: None), FakeContext())  # type: ignore[arg-type]
    assert task is not None
    stopped: list[str] = []
    task._cancel = lambda: stopped.append(task.task_id)
    assert ledger.start(Job(lambda: None), FakeContext()) is None  # type: ignore[arg-type]
    assert ledger.cancel({"taskId": "t1"}, FakeContext()) == {  # type: ignore[arg-type]
        "resultType": "complete"}
    ledger.cancel({"taskId": "t1"}, FakeContext())  # type: ignore[arg-type]
    assert stopped == ["t1"]
    assert task.status == "cancelled"


def test_options_must_be_positive() -> None:
    for bad in ({"ttl_ms": 0}, {"poll_interval_ms": -1}, {"max_tasks": 0}):
        with pytest.raises(ValueError):
            TaskLedger(FakeRuntime(), **bad)


def test_the_in_memory_store_lists_by_owner_and_expiry() -> None:
    store = InMemoryTaskStore()
    owner = FakeRuntime()  # any object a weak reference can point at
    a = Task("a", 0.0, expires=10.0, ttl_ms=10_000, poll_interval_ms=1)
    b = Task("b", 0.0, expires=20.0, ttl_ms=20_000, poll_interval_ms=1)
    a.owner = weakref.ref(owner)
    store.put(a)
    store.put(b)
    assert store.owned_by(owner) == [a]
    assert store.expired(10.0) == [a]
    assert store.remove("a") is a and store.get("a") is None and len(store) == 1


def test_only_2025_11_25_has_tasks_in_the_core_protocol() -> None:
    assert [r for r in KNOWN_REVISIONS if FEATURES[r].core_tasks] == ["2025-11-25"]


def test_the_feature_columns_that_replaced_revision_comparisons() -> None:
    # changelog.mdx: audio content from 2025-03-26; client/elicitation.mdx: modes from
    # 2025-11-25 (the example server and the client checker consult these columns).
    assert [r for r in KNOWN_REVISIONS if not FEATURES[r].audio_content] == ["2024-11-05"]
    assert [r for r in KNOWN_REVISIONS if FEATURES[r].elicitation_modes] == [
        "2025-11-25", "2026-07-28"]


# -- the seam: a ledger without a runtime takes the serving session's ---------------------------


class Host:
    """A session whose runtime runs tasks (:class:`mcp_sansio.app.tasks.TaskHost`)."""

    def __init__(self, runtime: FakeRuntime) -> None:
        self.runtime = runtime

    def _task_runtime(self) -> FakeRuntime:
        return self.runtime


def hosted(runtime: FakeRuntime) -> FakeContext:
    ctx = FakeContext()
    ctx.session = Host(runtime)  # type: ignore[assignment]
    return ctx


def test_an_unbound_ledger_runs_each_task_on_its_sessions_runtime() -> None:
    ledger = TaskLedger(ttl_ms=1000)
    assert len(ledger) == 0  # nothing served yet: no clock needed
    with pytest.raises(RuntimeError, match="no runtime"):
        ledger.runtime  # noqa: B018 - the property raises
    first, second = FakeRuntime(), FakeRuntime()
    second.wall_now, second.mono_now = 0.0, 0.0
    a = ledger.start(Job(lambda: None), hosted(first))  # type: ignore[arg-type]
    b = ledger.start(Job(lambda: None), hosted(second))  # type: ignore[arg-type]
    assert a is not None and b is not None
    assert [t for t, _ in first.launched] == [a] and [t for t, _ in second.launched] == [b]
    # Clocks, ids and the lock come from the first runtime that served the ledger.
    assert ledger.runtime is first and (a.task_id, b.task_id) == ("t1", "t2")
    assert b.created == first.wall_now and b.expires == first.mono_now + 1.0


def test_a_session_whose_runtime_runs_no_tasks_is_answered_with_an_error() -> None:
    ledger = TaskLedger()
    ctx = FakeContext()
    ctx.session = object()  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="runs no tasks"):
        ledger.start(Job(lambda: None), ctx)  # type: ignore[arg-type]
    # Given a runtime once, the same session's request runs as a task.
    runtime = FakeRuntime()
    pinned = TaskLedger(runtime)
    assert pinned.start(Job(lambda: None), ctx) is not None  # type: ignore[arg-type]
    assert len(runtime.launched) == 1


def test_the_servers_ledger_is_the_sans_io_one_with_clock_overrides() -> None:
    from mcp_sansio.app.server import Server

    server = Server("s")
    ledger = server.enable_tasks(ttl_ms=500, monotonic=lambda: 7.0, clock=lambda: 0.0)
    assert type(ledger) is TaskLedger and server.tasks is ledger
    runtime = FakeRuntime()
    task = ledger.start(Job(lambda: None), hosted(runtime))  # type: ignore[arg-type]
    assert task is not None and (task.created, task.expires) == (0.0, 7.5)


def test_stores_given_before_any_runtime_are_shared_once_one_binds() -> None:
    built: list[tuple[TaskLedger, object]] = []

    class SharingRuntime(FakeRuntime):
        def share(self, ledger: TaskLedger, stores: object) -> Any:
            built.append((ledger, stores))
            return f"sharing over {stores}"

    stores = "stores"
    ledger = TaskLedger(shared=stores)
    assert ledger.sharing is None and built == []
    ledger.share(stores)  # the same stores again (start_http(stores=...)): nothing changes
    with pytest.raises(ValueError, match="other stores"):
        ledger.share("others")
    ledger.bind(SharingRuntime())
    assert built == [(ledger, stores)] and ledger.sharing == "sharing over stores"
    # Stores attached by share() itself may be replaced (a new loop, new stores).
    auto = TaskLedger(SharingRuntime())
    auto.share("one")
    auto.share("two")
    assert auto.sharing == "sharing over two"
