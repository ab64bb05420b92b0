"""The client side of tasks (``mcp_sansio/app/client_tasks.py``): the plans on their own (fed by
hand, no I/O), then the async and blocking clients against our own server over stdio in
both wire forms (2025-11-25 ``params.task``; the 2026-07-28 extension)."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from mcp_sansio.adapters import asyncio as aio
from mcp_sansio.adapters import threading as thr

from mcp_sansio import Era
from mcp_sansio.app.client_tasks import (
    FORM_EXTENSION,
    FORM_V1,
    TASKS_EXTENSION,
    ClientTask,
    Send,
    Sleep,
    await_plan,
    cancel_plan,
    list_plan,
    start_plan,
)
from mcp_sansio.app.errors import McpError, RequestCancelledError, ResultRejected

# -- the plans, driven by hand ----------------------------------------------------------------


def run(plan: Any, answers: list[Any]) -> tuple[Any, list[Any]]:
    """Drive ``plan``: each Send gets the next answer (an exception is thrown in); returns
    the plan's value and the steps it took."""
    steps: list[Any] = []
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = plan.throw(error) if error is not None else plan.send(value)
        except StopIteration as stop:
            return stop.value, steps
        steps.append(step)
        value = error = None
        if isinstance(step, Send):
            answer = answers.pop(0)
            if isinstance(answer, BaseException):
                error = answer
            else:
                value = answer


TASK_V1 = {"taskId": "t1", "status": "working", "createdAt": "x", "lastUpdatedAt": "x",
           "ttl": 60000, "pollInterval": 250}
TASK_EXT = {"taskId": "t2", "status": "working", "createdAt": "x", "lastUpdatedAt": "x",
            "ttlMs": 60000, "pollIntervalMs": 100}


def test_v1_start_and_result() -> None:
    task, steps = run(start_plan("2025-11-25", "slow", {"n": 1}, 5000, None),
                      [{"task": TASK_V1}])
    assert steps[0].params == {"name": "slow", "arguments": {"n": 1}, "task": {"ttl": 5000}}
    assert (task.task_id, task.form, task.poll_interval, task.ttl_ms) == (
        "t1", FORM_V1, 0.25, 60000)
    result, steps = run(await_plan(task), [{"content": []}])
    assert [s.method for s in steps] == ["tasks/result"] and result == {"content": []}
    assert task.status == "completed"


def test_v1_failure_is_raised_and_remembered() -> None:
    task = ClientTask("t1", FORM_V1)
    with pytest.raises(McpError) as info:
        run(await_plan(task), [McpError(-32603, "Internal error")])
    assert info.value.code == -32603 and task.status == "failed"


def test_extension_polls_at_the_servers_interval() -> None:
    created = ResultRejected(-32603, "unknown resultType 'task'",
                             {"resultType": "task", **TASK_EXT})
    seen: list[str] = []
    task, steps = run(start_plan("2026-07-28", "slow", None, None, None), [created])
    assert "task" not in steps[0].params  # the server decides in this form
    assert task.form == FORM_EXTENSION and task.poll_interval == 0.1
    task._emit = lambda: seen.append(task.status)
    result, steps = run(await_plan(task), [
        {**TASK_EXT, "status": "working"},
        {**TASK_EXT, "status": "input_required", "inputRequests": {"k": {}}},
        {**TASK_EXT, "status": "completed", "result": {"content": [], "isError": False}},
    ])
    assert [type(s).__name__ for s in steps] == ["Sleep", "Send"] * 3
    assert all(s.seconds == 0.1 for s in steps if isinstance(s, Sleep))
    assert result == {"content": [], "isError": False}
    assert seen == ["input_required", "completed"]


def test_extension_plain_answer_is_a_completed_task() -> None:
    task, _ = run(start_plan("2026-07-28", "quick", None, None, None), [{"content": []}])
    assert task.terminal and task.task_id == ""
    assert run(await_plan(task), [])[0] == {"content": []}


def test_extension_failure_and_cancel() -> None:
    failed = ClientTask("t", FORM_EXTENSION)
    failed.update({"status": "failed", "error": {"code": -32603, "message": "Internal error"}})
    with pytest.raises(McpError):
        run(await_plan(failed), [])
    cancelled = ClientTask("t", FORM_EXTENSION)
    cancelled.update({"status": "cancelled"})
    cancelled.update({"status": "working"})  # terminal statuses are final
    with pytest.raises(RequestCancelledError):
        run(await_plan(cancelled), [])


def test_no_tasks_before_2025_11_25_and_no_list_in_the_extension() -> None:
    with pytest.raises(McpError):
        run(start_plan("2025-06-18", "x", None, None, None), [])
    with pytest.raises(McpError):
        run(list_plan("2026-07-28"), [])
    tasks, steps = run(list_plan("2025-11-25"), [
        {"tasks": [TASK_V1], "nextCursor": "2"}, {"tasks": [TASK_V1], "nextCursor": "2"}])
    assert len(tasks) == 2 and steps[1].params == {"cursor": "2"}


# -- end to end against our own server ----------------------------------------------------------

SERVER = """
import time
from mcp_sansio.adapters import threading as thr
server = thr.Server("tasks")
server.enable_tasks(poll_interval_ms=20)

@server.tool(task_support="optional")
def slow(n: int) -> str:
    time.sleep(0.2)
    return f"done {n}"

@server.tool(task_support="optional")
def forever(ctx: thr.Context) -> str:
    while not ctx.cancelled:
        time.sleep(0.02)
    return "stopped"

thr.run_stdio(server)
"""

ERAS = {"v1": dict(era=Era.HANDSHAKE),
        "extension": dict(era=Era.STATELESS,
                          capabilities={"extensions": {TASKS_EXTENSION: {}}})}


@pytest.mark.parametrize("form", sorted(ERAS))
def test_asyncio_client(form: str) -> None:
    statuses: list[str] = []

    async def on_status(task: ClientTask) -> None:
        statuses.append(task.status)

    async def main() -> None:
        async with aio.connect_stdio([sys.executable, "-c", SERVER], **ERAS[form]) as client:
            task = await client.call_tool_as_task("slow", {"n": 7}, on_status=on_status)
            assert task.task_id and task.status == "working"
            result = await client.task_result(task)
            assert result["content"][0]["text"] == "done 7"
            assert task.status == "completed"
            if form == "v1":
                assert task.task_id in {t["taskId"] for t in await client.list_tasks()}
            else:
                with pytest.raises(McpError):
                    await client.list_tasks()
            stuck = await client.call_tool_as_task("forever", {})
            await client.refresh_task(stuck)
            assert stuck.status == "working"
            await client.cancel_task(stuck)
            assert stuck.status == "cancelled"
            with pytest.raises(RequestCancelledError):
                await client.task_result(stuck)
            await asyncio.sleep(0)  # let the status callbacks run

    asyncio.run(main())
    assert statuses[0] == "working" and statuses[-1] == "completed"


@pytest.mark.parametrize("form", sorted(ERAS))
def test_threads_client(form: str) -> None:
    statuses: list[str] = []
    with thr.connect_stdio([sys.executable, "-c", SERVER], **ERAS[form]) as client:
        task = client.call_tool_as_task("slow", {"n": 3},
                                        on_status=lambda t: statuses.append(t.status))
        assert client.task_result(task)["content"][0]["text"] == "done 3"
        stuck = client.call_tool_as_task("forever", {})
        client.cancel_task(stuck)
        with pytest.raises(RequestCancelledError):
            client.task_result(stuck)
    assert statuses[0] == "working" and statuses[-1] == "completed"


# -- over HTTP (asyncio client and server in process, loopback) --------------------------------


@pytest.mark.parametrize("form", sorted(ERAS))
def test_asyncio_over_http(form: str) -> None:
    server = aio.Server("tasks-http")
    server.enable_tasks(poll_interval_ms=20)

    @server.tool(task_support="optional")
    async def slow(n: int) -> str:
        await asyncio.sleep(0.1)
        return f"done {n}"

    statuses: list[str] = []

    async def main() -> None:
        async with aio.start_http(server) as service, \
                aio.connect_http(service.url, **ERAS[form]) as client:
            task = await client.call_tool_as_task(
                "slow", {"n": 5}, on_status=lambda t: statuses.append(t.status))
            assert task.task_id
            assert (await client.task_result(task))["content"][0]["text"] == "done 5"

    asyncio.run(main())
    assert statuses[0] == "working" and statuses[-1] == "completed"


def test_trio_client() -> None:
    import trio
    from mcp_sansio.adapters import trio as trio_adapter

    async def main() -> str:
        async with trio_adapter.connect_stdio([sys.executable, "-c", SERVER],
                                              **ERAS["extension"]) as client:
            task = await client.call_tool_as_task("slow", {"n": 9})
            result = await client.task_result(task)  # polls with trio's sleep
            return str(result["content"][0]["text"])

    assert trio.run(main) == "done 9"


def test_asyncio_answers_an_input_required_task_from_its_status_callback() -> None:
    server = aio.Server("tasks-ask")
    server.enable_tasks(poll_interval_ms=20)

    @server.tool(task_support="optional")
    async def confirm(ctx: aio.Context) -> str:
        answer = await ctx.elicit("sure?", {"type": "object", "properties": {}})
        return str(answer["action"])

    answered: list[list[str]] = []

    async def main() -> str:
        async with aio.start_http(server) as service, \
                aio.connect_http(service.url, elicitation=lambda params: {},
                                 **ERAS["extension"]) as client:
            async def on_status(task: ClientTask) -> None:
                if task.status == "input_required":
                    answered.append(sorted(task.input_requests))
                    await client.answer_task(task, {key: {"action": "accept", "content": {}}
                                                    for key in task.input_requests})

            task = await client.call_tool_as_task("confirm", {}, on_status=on_status)
            result = await client.task_result(task)
            return str(result["content"][0]["text"])

    assert asyncio.run(main()) == "accept"
    assert answered and answered[0]


# -- answers other servers may give (the spec allows them; ours does not send them) -------------


def test_extension_creation_that_reports_an_end_is_fetched_with_one_tasks_get() -> None:
    """The extension's creation answer is a Task ("seed state", any status) and never inlines
    the end: a terminal one is read with tasks/get at once (no sleep), its inline field
    beyond the schema ignored."""
    created = {"resultType": "task", **TASK_EXT, "status": "completed",
               "result": {"content": [{"type": "text", "text": "not from tasks/get"}]}}
    task, _ = run(start_plan("2026-07-28", "quick", None, None, None), [created])
    assert task.status == "completed" and task.result is None and not task.settled
    done = {"content": [], "isError": False}
    result, steps = run(await_plan(task), [
        {"resultType": "complete", **TASK_EXT, "status": "completed", "result": done}])
    assert result == done and [type(s).__name__ for s in steps] == ["Send"]
    assert steps[0].method == "tasks/get"

    failed, _ = run(start_plan("2026-07-28", "quick", None, None, None),
                    [{"resultType": "task", **TASK_EXT, "status": "failed"}])
    with pytest.raises(McpError) as info:
        run(await_plan(failed), [{**TASK_EXT, "status": "failed",
                                  "error": {"code": -32602, "message": "bad row"}}])
    assert (info.value.code, info.value.message) == (-32602, "bad row")


def test_a_server_that_never_inlines_the_end_is_an_error_not_a_loop() -> None:
    task = ClientTask("t", FORM_EXTENSION)
    task.update({"status": "completed"})
    with pytest.raises(McpError) as info:
        run(await_plan(task), [{**TASK_EXT, "status": "completed"}])  # one get, then give up
    assert info.value.code == -32603


def test_v1_creation_that_reports_an_end_asks_tasks_result() -> None:
    for status in ("completed", "failed"):
        task, _ = run(start_plan("2025-11-25", "quick", None, None, None),
                      [{"task": {**TASK_V1, "status": status}}])
        result, steps = run(await_plan(task), [{"content": []}])
        assert result == {"content": []} and [s.method for s in steps] == ["tasks/result"]


def test_extension_cancel_reads_where_the_task_ended() -> None:
    """The extension's cancel is an ack; the task may have ended otherwise, or still run."""
    done = {"content": [], "isError": False}
    task = ClientTask("t2", FORM_EXTENSION)
    _, steps = run(cancel_plan(task), [
        {"resultType": "complete"},
        {**TASK_EXT, "status": "completed", "result": done}])
    assert [s.method for s in steps] == ["tasks/cancel", "tasks/get"]
    assert task.status == "completed" and run(await_plan(task), [])[0] == done

    running = ClientTask("t2", FORM_EXTENSION)
    run(cancel_plan(running), [{"resultType": "complete"}, {**TASK_EXT, "status": "working"}])
    assert running.status == "working"  # not yet: task_result keeps polling

    forgotten = ClientTask("t2", FORM_EXTENSION)
    run(cancel_plan(forgotten), [{"resultType": "complete"},
                                 McpError(-32602, "unknown taskId")])
    assert forgotten.status == "cancelled"
    with pytest.raises(McpError):
        run(cancel_plan(ClientTask("t2", FORM_EXTENSION)),
            [{"resultType": "complete"}, McpError(-32603, "Internal error")])
