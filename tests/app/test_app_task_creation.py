"""The creation answer of a task and the order of events around it, sans-IO: the ledger
(``mcp_sansio/app/tasks.py``) driven by hand with a virtual clock, and the client's plans
(``mcp_sansio/app/client_tasks.py``) answered by that ledger -- no runtime, no socket.

The race under test: a handler may end (or be cancelled) before the ``tools/call`` that
created its task is answered -- on a thread of its own it can, and on an eager runtime a
handler that never suspends ends inside the dispatch. Whatever the order, the creation answer
is the task as it was created (``working``, nothing inlined: both eras' ``CreateTaskResult``
is a bare Task), and the client's ``task_result`` is the handler's value or error, once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio import Era, Request
from mcp_sansio.app.client_tasks import (
    TERMINAL,
    ClientTask,
    Send,
    Sleep,
    await_plan,
    cancel_plan,
    start_plan,
)
from mcp_sansio.app.context import Job
from mcp_sansio.app.errors import McpError, RequestCancelledError, ToolError
from mcp_sansio.app.tasks import RELATED_TASK, TASKS_EXTENSION, Task, TaskLedger

V1, EXT = "2025-11-25", "2026-07-28"
#: The 2025-11-25 Task's fields (schema ``Task``), and the extension's (``CreateTaskResult``
#: = ``Result & Task``): neither carries a result, an error or input requests.
V1_TASK_KEYS = {"taskId", "status", "createdAt", "lastUpdatedAt", "ttl", "pollInterval"}
EXT_CREATED_KEYS = {"resultType", "taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs",
                    "pollIntervalMs"}


class Waiter:
    def __init__(self) -> None:
        self.is_set = False

    def set(self) -> None:
        self.is_set = True

    async def wait(self) -> None:  # pragma: no cover - the harness never awaits
        raise AssertionError("driven by hand")

    def wait_blocking(self) -> None:  # pragma: no cover
        raise AssertionError("driven by hand")


class Runtime:
    """A hand-driven :class:`~mcp_sansio.app.tasks.TaskRuntime`: a virtual clock, counted
    ids, no lock needed (one thread), and ``launch`` that records the handler -- or, with
    ``eager``, runs it to its end right there (a handler that never suspends on an eager
    runtime; a thread that wins the race)."""

    def __init__(self) -> None:
        self.wall_now = 1_700_000_000.0
        self.mono_now = 10.0
        self.lock = contextlib.nullcontext()
        self.ids = iter(f"task-{i}" for i in range(1, 1000))
        self.launched: list[tuple[Task, Job]] = []
        self.eager: Callable[[TaskLedger, Task, Job], None] | None = None

    def wall(self) -> float:
        return self.wall_now

    def monotonic(self) -> float:
        return self.mono_now

    def new_task_id(self) -> str:
        return next(self.ids)

    def waiter(self) -> Waiter:
        return Waiter()

    def launch(self, ledger: TaskLedger, task: Task, job: Job, ctx: Any) -> None:
        self.launched.append((task, job))
        if self.eager is not None:
            self.runtime_tick()
            self.eager(ledger, task, job)

    def share(self, ledger: TaskLedger, stores: Any) -> Any:  # pragma: no cover
        raise AssertionError("not shared")

    def runtime_tick(self) -> None:
        """Time passes between two steps (so a change shows in ``lastUpdatedAt``)."""
        self.wall_now += 0.25
        self.mono_now += 0.25


class Entry:
    definition: ClassVar[dict[str, Any]] = {
        "name": "quick", "execution": {"taskSupport": "optional"}}


class Router:
    """The server side the ledger asks (:class:`~mcp_sansio.app.tasks.ToolRouter`)."""

    tools: ClassVar[dict[str, Entry]] = {"quick": Entry()}

    def _route_tool(self, params: Any, ctx: Any) -> Job:
        return Job(lambda: None,
                   shape=lambda value: {"content": [{"type": "text", "text": value}]})


class Conn:
    sessionless = False

    def __init__(self, revision: str) -> None:
        self.revision = revision


class Session:
    def __init__(self, revision: str) -> None:
        self.conn = Conn(revision)


class Ctx:
    """The request context the ledger reads, for one era."""

    def __init__(self, revision: str, session: Session, sent: list[dict[str, Any]]) -> None:
        self.era = Era.STATELESS if revision == EXT else Era.HANDSHAKE
        self.session = session
        self.client_capabilities: dict[str, Any] = (
            {"extensions": {TASKS_EXTENSION: {}}} if revision == EXT else {})
        self.params: dict[str, Any] = {}
        self.input_responses: dict[str, Any] = {}
        self._sent = sent

    def notify(self, method: str, params: Any = None) -> None:
        assert method == "notifications/tasks/status"
        self._sent.append(params)


#: What a handler may end with, and what the client's ``task_result`` then gives.
OUTCOMES: dict[str, tuple[dict[str, Any], Any]] = {
    "value": ({"value": "done"}, {"content": [{"type": "text", "text": "done"}]}),
    "tool error": ({"error": ToolError("bad input")},
                   {"content": [{"type": "text", "text": "bad input"}], "isError": True}),
    "protocol error": ({"error": McpError(-32602, "no such row", {"row": 7})},
                       McpError(-32602, "no such row", {"row": 7})),
    "crash": ({"error": RuntimeError("secret detail")}, McpError(-32603, "Internal error")),
}


class World:
    """One server ledger and one client, the client's requests answered by the ledger."""

    def __init__(self, revision: str) -> None:
        self.revision = revision
        self.runtime = Runtime()
        self.ledger = TaskLedger(self.runtime, ttl_ms=60_000, poll_interval_ms=100)
        self.router = Router()
        self.session = Session(revision)
        self.notified: list[dict[str, Any]] = []
        self.next_id = 0
        self.answers: list[tuple[str, Any]] = []
        #: Called when the client waits (a Sleep, or a blocking tasks/result).
        self.on_wait: Callable[[], None] = lambda: None

    def ctx(self, params: dict[str, Any]) -> Ctx:
        ctx = Ctx(self.revision, self.session, self.notified)
        ctx.params = params
        return ctx

    def answer(self, step: Send) -> Any:
        """The ledger's answer to one request of the client (or the error it raises)."""
        self.next_id += 1
        params = dict(step.params or {})
        request = Request(request_id=self.next_id, method=step.method, params=params)
        # An McpError raised by the route is answered as the request's error (ServerLogic).
        job = self.ledger._route(self.router, request, self.ctx(params))  # type: ignore[arg-type]
        assert job is not None
        if job.fn is None:
            # A job without fn is shaped at once, where nothing turns a raise into an answer
            # (over HTTP it was a 500 and a closed connection): its shape must not raise.
            try:
                answer = job.shape(None)
            except McpError as exc:
                raise AssertionError(f"{step.method}: the shape raised {exc!r}") from exc
            self.answers.append((step.method, answer))
            return answer
        # tasks/result on a task not yet terminal: the server holds the answer until it is
        # (then shapes it where a raise is the request's error); here the world moves on.
        assert step.method == "tasks/result"
        task = self.ledger._store.get(params["taskId"])
        for _ in range(10):
            if task is None or task.terminal:
                break
            self.on_wait()
        task = self.ledger._store.get(params["taskId"])
        assert task is not None and task.terminal, "tasks/result would block forever"
        answer = job.shape(None)
        self.answers.append((step.method, answer))
        return answer

    def drive(self, plan: Any) -> Any:
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = plan.throw(error) if error is not None else plan.send(value)
            except StopIteration as stop:
                return stop.value
            value = error = None
            if isinstance(step, Sleep):
                self.runtime.runtime_tick()
                self.on_wait()
                continue
            try:
                value = self.answer(step)
            except McpError as exc:
                error = exc


def finish(world: World, task: Task, job: Job, outcome: str) -> None:
    world.runtime.runtime_tick()
    world.ledger._finish(task, job, **OUTCOMES[outcome][0])


def check_creation(world: World) -> None:
    """The creation answer is the task as created: ``working``, updated when created,
    nothing of its end inlined (2025-11-25 tasks.mdx: "Tasks MUST begin in the working
    status"; the extension's CreateTaskResult is ``Result & Task``, its seed state)."""
    method, created = world.answers[0]
    assert method == "tools/call"
    if world.revision == V1:
        assert set(created) == {"task"} and set(created["task"]) == V1_TASK_KEYS
        body = created["task"]
    else:
        assert set(created) == EXT_CREATED_KEYS and created["resultType"] == "task"
        body = created
    assert body["status"] == "working"
    assert body["createdAt"] == body["lastUpdatedAt"]


def expect(outcome: Any, run: Callable[[], Any]) -> None:
    if isinstance(outcome, BaseException):
        with pytest.raises(type(outcome)) as caught:
            run()
        if isinstance(outcome, McpError):
            assert isinstance(caught.value, McpError)
            assert (caught.value.code, caught.value.message, caught.value.data) == (
                outcome.code, outcome.message, outcome.data)
    else:
        assert run() == outcome


# -- the race, reproduced on one order -----------------------------------------------------------


@pytest.mark.parametrize("revision", [V1, EXT])
def test_a_handler_that_ends_inside_the_dispatch_still_gets_a_working_creation_answer(
        revision: str) -> None:
    world = World(revision)
    world.runtime.eager = lambda ledger, task, job: ledger._finish(task, job, value="done")
    seen: list[str] = []
    task = world.drive(start_plan(revision, "quick", {}, None, None))
    check_creation(world)
    task._emit = lambda: seen.append(task.status)
    result = world.drive(await_plan(task))
    assert result["content"] == [{"type": "text", "text": "done"}]
    assert seen == ["completed"]
    # The end is fetched the way the revision says: tasks/result, or tasks/get inlining it.
    assert [m for m, _ in world.answers[1:]] == (
        ["tasks/result"] if revision == V1 else ["tasks/get"])


# -- every order -------------------------------------------------------------------------------

#: Where the handler's end falls: inside its launch (before the creation answer is built),
#: after the client has the creation answer, after the client's cancel, or while the
#: client waits for the outcome (at its n-th poll; a blocking tasks/result in 2025-11-25).
ENDS = ["inside launch", "after creation", "after cancel", "while waiting"]


@settings(max_examples=150, deadline=None)
@given(revision=st.sampled_from([V1, EXT]), outcome=st.sampled_from(sorted(OUTCOMES)),
       end=st.sampled_from(ENDS), cancel=st.booleans(), polls=st.integers(0, 3))
def test_every_order_of_end_answer_and_cancel(revision: str, outcome: str, end: str,
                                              cancel: bool, polls: int) -> None:
    world = World(revision)
    ended: list[bool] = []

    def end_now() -> None:
        if not ended:
            ended.append(True)
            task, job = world.runtime.launched[0]
            finish(world, task, job, outcome)

    if end == "inside launch":
        world.runtime.eager = lambda ledger, task, job: end_now()
    statuses: list[str] = []
    client_task: ClientTask = world.drive(start_plan(revision, "quick", {}, None, None))
    client_task._emit = lambda: statuses.append(client_task.status)
    check_creation(world)
    if end == "after creation":
        end_now()
    # The cancel reaches a task still running only if the handler has not ended yet.
    cancel_took = cancel and not ended
    if cancel:
        if revision == V1 and ended:
            # 2025-11-25 tasks.mdx: cancelling a terminal task is -32602.
            with pytest.raises(McpError) as caught:
                world.drive(cancel_plan(client_task))
            assert caught.value.code == -32602
        else:
            world.drive(cancel_plan(client_task))
    if end == "after cancel":
        end_now()  # a handler that ignores the cancel still ends: the cancellation stands
    waits = [0]

    def waiting() -> None:
        waits[0] += 1
        if end == "while waiting" and waits[0] > polls:
            end_now()
    world.on_wait = waiting
    if end == "while waiting" and cancel_took:
        end_now()
    expected: Any = RequestCancelledError("") if cancel_took else OUTCOMES[outcome][1]
    if revision == V1 and isinstance(expected, dict):
        # 2025-11-25 tasks/result: the call's result, marked with its task.
        expected = {**expected, "_meta": {RELATED_TASK: {"taskId": client_task.task_id}}}
    expect(expected, lambda: world.drive(await_plan(client_task)))
    # Asking again gives the same outcome and sends nothing more.
    asked = len(world.answers)
    expect(expected, lambda: world.drive(await_plan(client_task)))
    assert len(world.answers) == asked
    # Exactly one end: one terminal status on the server (announced once in 2025-11-25),
    # one terminal status seen by the client.
    server_task = world.runtime.launched[0][0]
    assert server_task.status == ("cancelled" if cancel_took else
                                  "failed" if isinstance(expected, McpError) else "completed")
    if revision == V1:
        assert [n["status"] for n in world.notified if n["status"] in TERMINAL] == [
            server_task.status]
    assert [s for s in statuses if s in TERMINAL] == [server_task.status]
