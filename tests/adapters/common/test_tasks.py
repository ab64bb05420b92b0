"""The Server's tasks (mcp_sansio/app/tasks.py, run by adapters/common/tasks.py; the 2026-07-28
tasks extension): expiry, the cap, progress as the status message, cancelling a task that
waits for input, plain ``def`` handlers on a thread, a server without tasks, and the
registration checks. In process, over
the asyncio HTTP adapter on loopback."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from mcp_sansio.adapters.asyncio import Context, Server, start_http
from mcp_sansio.adapters.common.tasks import TASKS_EXTENSION, THREAD_TASKS, Task, Tasks

from tests.adapters.asyncio.test_http_asyncio import Conn
from tests.http_util import stateless_meta

CAPS = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}


class Client:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.next_id = 0

    async def call(self, method: str, params: dict[str, Any],
                   caps: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        self.next_id += 1
        meta = stateless_meta()
        meta["io.modelcontextprotocol/clientCapabilities"] = CAPS if caps is None else caps
        headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
        name = params.get("name", params.get("taskId"))
        if isinstance(name, str):
            headers["mcp-name"] = name
        status, _, messages = await self.conn.request("POST", {
            "jsonrpc": "2.0", "id": self.next_id, "method": method,
            "params": {**params, "_meta": meta}}, headers)
        return status, messages[-1]

    async def result(self, method: str, params: dict[str, Any], **kw: Any) -> dict[str, Any]:
        status, message = await self.call(method, params, **kw)
        assert status == 200 and "result" in message, (status, message)
        return message["result"]  # type: ignore[no-any-return]

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        for _ in range(400):
            task = await self.result("tasks/get", {"taskId": task_id})
            if task["status"] in (*statuses, "completed", "failed", "cancelled"):
                return task
            await asyncio.sleep(0.01)
        raise AssertionError(f"task {task_id} is stuck")


def serve(server: Server, test: Any) -> None:
    async def main() -> None:
        async with start_http(server) as service:
            conn = await Conn.open(service.port)
            try:
                await test(Client(conn))
            finally:
                await conn.close()
    asyncio.run(main())


def test_a_task_is_kept_for_its_ttl_then_forgotten_and_stopped() -> None:
    now = [1000.0]
    server = Server("ttl")
    server.enable_tasks(ttl_ms=5000, monotonic=lambda: now[0])
    stopped = asyncio.Event()

    @server.tool(task_support="optional")
    async def forever() -> str:
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        return "never"

    async def test(client: Client) -> None:
        created = await client.result("tools/call", {"name": "forever", "arguments": {}})
        assert created["ttlMs"] == 5000
        now[0] += 4.9  # not a moment early
        assert (await client.result("tasks/get", {"taskId": created["taskId"]}))[
            "status"] == "working"
        now[0] += 0.2
        _, message = await client.call("tasks/get", {"taskId": created["taskId"]})
        assert message["error"]["code"] == -32602
        await asyncio.wait_for(stopped.wait(), 5)
    serve(server, test)


def test_a_full_store_runs_the_call_synchronously() -> None:
    server = Server("cap")
    server.enable_tasks(max_tasks=1)

    @server.tool(task_support="optional")
    async def nap(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"napped {seconds:g}"

    async def test(client: Client) -> None:
        first = await client.result("tools/call", {"name": "nap", "arguments": {"seconds": 30}})
        assert first["resultType"] == "task"
        second = await client.result("tools/call", {"name": "nap",
                                                    "arguments": {"seconds": 0}})
        assert second["resultType"] == "complete"
        assert second["content"] == [{"type": "text", "text": "napped 0"}]
        await client.result("tasks/cancel", {"taskId": first["taskId"]})
    serve(server, test)


def test_progress_becomes_the_status_message_and_arguments_are_checked() -> None:
    server = Server("progress")
    server.enable_tasks()
    go = asyncio.Event()

    @server.tool(task_support="optional")
    async def steps(n: int, ctx: Context) -> str:
        ctx.progress(1, n, "first step done")
        ctx.log("info", "not sent anywhere: the request is answered")
        await go.wait()
        return "all done"

    async def test(client: Client) -> None:
        created = await client.result("tools/call", {"name": "steps", "arguments": {"n": 2}})
        task = await client.result("tasks/get", {"taskId": created["taskId"]})
        for _ in range(100):
            if "statusMessage" in task:
                break
            await asyncio.sleep(0.01)
            task = await client.result("tasks/get", {"taskId": created["taskId"]})
        assert task["statusMessage"] == "first step done" and task["status"] == "working"
        go.set()
        done = await client.until(created["taskId"])
        assert done["result"]["content"][0]["text"] == "all done"
        # Arguments that do not fit: an isError result at once, no task.
        bad = await client.result("tools/call", {"name": "steps", "arguments": {}})
        assert bad["resultType"] == "complete" and bad["isError"] is True
    serve(server, test)


def test_cancelling_a_task_that_waits_for_input_stops_its_handler() -> None:
    server = Server("cancel")
    server.enable_tasks()
    stopped = asyncio.Event()

    @server.tool(task_support="optional")
    async def ask(ctx: Context) -> str:
        try:
            await ctx.elicit("Anything?", {"type": "object", "properties": {}})
        except asyncio.CancelledError:
            stopped.set()
            raise
        return "answered"

    async def test(client: Client) -> None:
        created = await client.result("tools/call", {"name": "ask", "arguments": {}})
        parked = await client.until(created["taskId"], "input_required")
        assert parked["status"] == "input_required"
        await client.result("tasks/cancel", {"taskId": created["taskId"]})
        await asyncio.wait_for(stopped.wait(), 5)
        task = await client.result("tasks/get", {"taskId": created["taskId"]})
        assert task["status"] == "cancelled" and "inputRequests" not in task
        # An answer after the end changes nothing.
        await client.result("tasks/update", {"taskId": created["taskId"], "inputResponses": {
            "elicitation": {"action": "accept", "content": {}}}})
        assert (await client.result("tasks/get", {"taskId": created["taskId"]}))[
            "status"] == "cancelled"
        _, message = await client.call("tasks/update", {"taskId": created["taskId"],
                                                             "inputResponses": [1]})
        assert message["error"]["code"] == -32602
    serve(server, test)


@pytest.mark.parametrize("kind", ["def", "async def"])
def test_handlers_on_a_thread_of_their_own(kind: str) -> None:
    server = Server("threads")
    server.enable_tasks(runtime=THREAD_TASKS)  # every handler on a thread of its own
    threads: list[str] = []

    if kind == "def":
        @server.tool(name="hello", task_support="required")
        def hello_sync(ctx: Context) -> str:
            threads.append(threading.current_thread().name)
            answer = ctx.elicit("Name?", {"type": "object", "properties": {
                "name": {"type": "string"}}})
            return f"hello {answer['content']['name']}"
    else:
        @server.tool(name="hello", task_support="required")
        async def hello_async(ctx: Context) -> str:
            threads.append(threading.current_thread().name)
            answer = await ctx.elicit("Name?", {"type": "object", "properties": {
                "name": {"type": "string"}}})
            return f"hello {answer['content']['name']}"

    async def test(client: Client) -> None:
        created = await client.result("tools/call", {"name": "hello", "arguments": {}})
        parked = await client.until(created["taskId"], "input_required")
        [key] = parked["inputRequests"]
        await client.result("tasks/update", {"taskId": created["taskId"], "inputResponses": {
            key: {"action": "accept", "content": {"name": "Ada"}}}})
        done = await client.until(created["taskId"])
        assert done["result"]["content"][0]["text"] == "hello Ada"
        assert threads == [f"mcp task {created['taskId']}"]
    serve(server, test)


def test_without_tasks_enabled_the_methods_do_not_exist_and_tools_run_plainly() -> None:
    server = Server("plain")

    @server.tool(task_support="optional")
    async def quick() -> str:
        return "quick"

    assert "extensions" not in server.capabilities()

    async def test(client: Client) -> None:
        result = await client.result("tools/call", {"name": "quick", "arguments": {}})
        assert result["resultType"] == "complete"
        _, message = await client.call("tasks/get", {"taskId": "x"})
        assert message["error"]["code"] == -32601
    serve(server, test)


def test_registration_checks() -> None:
    server = Server("checks")
    with pytest.raises(ValueError, match="task_support"):
        server.add_tool(lambda: None, name="bad", task_support="sometimes")
    for bad in ({"ttl_ms": 0}, {"poll_interval_ms": -1}, {"max_tasks": 0}):
        with pytest.raises(ValueError):
            Tasks(**bad)
    tasks = server.enable_tasks(ttl_ms=1500.0, poll_interval_ms=250)  # type: ignore[arg-type]
    assert server.capabilities()["extensions"] == {TASKS_EXTENSION: {}}
    assert len(tasks) == 0
    task = Task("t1", created=0.0, expires=1.0, ttl_ms=1500, poll_interval_ms=250)
    assert task.created_result() == {
        "resultType": "task", "taskId": "t1", "status": "working",
        "createdAt": "1970-01-01T00:00:00.000Z", "lastUpdatedAt": "1970-01-01T00:00:00.000Z",
        "ttlMs": 1500, "pollIntervalMs": 250}
    task.status, task.error = "failed", {"code": -32603, "message": "Internal error"}
    assert task.detailed()["error"] == task.error and "result" not in task.detailed()


# -- 2025-11-25 tasks, over stdio with the example server on each runtime -----------------------


@pytest.mark.parametrize("runtime", ["asyncio", "trio", "threading"])
def test_handshake_era_tasks_over_stdio(runtime: str) -> None:
    import sys

    from mcp_sansio.adapters.asyncio import connect_stdio

    from mcp_sansio.app.errors import McpError

    if runtime == "trio":
        pytest.importorskip("trio")
    command = [sys.executable, "-c", "import sys; from mcp_sansio.adapters.tools._example_server "
               "import run; run(sys.argv[1])", runtime]
    statuses: dict[str, list[str]] = {}
    asked: list[dict[str, Any]] = []

    def on_notification(note: Any) -> None:
        if note.method == "notifications/tasks/status":
            statuses.setdefault(note.params["taskId"], []).append(note.params["status"])

    def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"confirm": True}}

    async def main() -> None:
        async with connect_stdio(command, versions=["2025-11-25"], elicitation=elicitation,
                                 on_notification=on_notification) as client:
            assert client.server_capabilities["tasks"] == {
                "list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
            created = await client.request("tools/call", {
                "name": "slow_compute", "arguments": {"seconds": 0.2}, "task": {"ttl": 60000}})
            task = created["task"]
            assert task["status"] == "working" and task["ttl"] == 60000
            assert {"taskId", "createdAt", "lastUpdatedAt", "pollInterval"} <= task.keys()
            got = await client.request("tasks/get", {"taskId": task["taskId"]})
            assert got["taskId"] == task["taskId"]
            listed = await client.request("tasks/list", {})
            assert [t["taskId"] for t in listed["tasks"]] == [task["taskId"]]
            # tasks/result waits for the end and answers what the call would have.
            result = await client.request("tasks/result", {"taskId": task["taskId"]})
            assert result["content"][0]["text"] == "computed result after 0.2 s"
            assert result["_meta"]["io.modelcontextprotocol/related-task"] == {
                "taskId": task["taskId"]}

            # A task that asks: a real elicitation marked with its task.
            created = await client.request("tools/call", {
                "name": "confirm_delete", "arguments": {"filename": "f"}, "task": {}})
            result = await client.request("tasks/result",
                                          {"taskId": created["task"]["taskId"]})
            assert result["content"][0]["text"] == "deleted f"
            assert asked[0]["_meta"]["io.modelcontextprotocol/related-task"] == {
                "taskId": created["task"]["taskId"]}

            # Errors: a tool error is a result; anything else is the error, verbatim.
            created = await client.request("tools/call", {
                "name": "protocol_error_job", "arguments": {}, "task": {}})
            with pytest.raises(McpError) as info:
                await client.request("tasks/result", {"taskId": created["task"]["taskId"]})
            assert (info.value.code, info.value.message) == (-32603, "Internal error")

            # Cancelling: the task is cancelled; cancelling it again is -32602.
            created = await client.request("tools/call", {
                "name": "slow_compute", "arguments": {"seconds": 60}, "task": {}})
            cancelled = await client.request("tasks/cancel",
                                             {"taskId": created["task"]["taskId"]})
            assert cancelled["status"] == "cancelled"
            with pytest.raises(McpError) as info:
                await client.request("tasks/cancel", {"taskId": created["task"]["taskId"]})
            assert info.value.code == -32602
            with pytest.raises(McpError) as info:
                await client.request("tasks/get", {"taskId": "no-such-task"})
            assert info.value.code == -32602
            # Tools without task support refuse a task; task-only tools refuse a plain call.
            with pytest.raises(McpError) as info:
                await client.request("tools/call", {"name": "greet",
                                                    "arguments": {"name": "x"}, "task": {}})
            assert info.value.code == -32601
            with pytest.raises(McpError) as info:
                await client.call_tool("failing_job")
            assert info.value.code == -32601
            first = (await client.request("tasks/list", {}))["tasks"][0]["taskId"]
            await asyncio.sleep(0.05)  # let the last status notifications arrive
            assert statuses[first] == ["completed"]
            listed_ids = [t["taskId"] for t in (await client.request(
                "tasks/list", {}))["tasks"]]
            assert len(listed_ids) == 4  # slow, confirm_delete, protocol error, cancelled
            assert statuses[listed_ids[1]] == ["input_required", "working", "completed"]
            assert statuses[listed_ids[2]] == ["failed"]
            assert statuses[created["task"]["taskId"]] == ["cancelled"]

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_handshake_era_task_notifies_on_its_session() -> None:
    import sys

    from mcp_sansio.adapters.asyncio import connect_stdio

    script = (
        "import asyncio\n"
        "from mcp_sansio.adapters.asyncio import Server, run_stdio\n"
        "server = Server('notifier')\n"
        "server.enable_tasks()\n"
        "@server.tool(task_support='required')\n"
        "async def change(ctx) -> str:\n"
        "    ctx.notify_list_changed('tools')\n"
        "    return 'changed'\n"
        "run_stdio(server)\n")
    seen: list[str] = []

    async def main() -> None:
        async with connect_stdio([sys.executable, "-c", script], versions=["2025-11-25"],
                                 on_notification=lambda n: seen.append(n.method)) as client:
            created = await client.request("tools/call", {"name": "change", "arguments": {},
                                                          "task": {}})
            result = await client.request("tasks/result", {"taskId": created["task"]["taskId"]})
            assert result["content"][0]["text"] == "changed"
            await asyncio.sleep(0.05)
        assert "notifications/tools/list_changed" in seen
        assert seen[-1] == "notifications/tasks/status"

    asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.parametrize("stateless", [False, True], ids=["2025-11-25", "2026-07-28"])
def test_a_trio_server_runs_its_tasks_as_trio_system_tasks(stateless: bool) -> None:
    """The ledger is built without a runtime (Server.enable_tasks); the trio session serving
    the call supplies trio's task runtime, so the handler runs in a trio system task."""
    trio = pytest.importorskip("trio")
    from mcp_sansio.adapters import trio as trio_adapter
    from mcp_sansio.adapters.common.tasks import TRIO_TASKS

    from mcp_sansio import Era
    from mcp_sansio.app.tasks import TaskLedger

    server = trio_adapter.Server("trio-tasks")
    ledger = server.enable_tasks(poll_interval_ms=20)
    names: list[str] = []

    @server.tool(task_support="required")
    async def slow() -> str:
        names.append(trio.lowlevel.current_task().name)
        await trio.sleep(0.01)
        return "done"

    async def main() -> None:
        with trio.fail_after(30):
            async with trio_adapter.start_http(server) as service, trio_adapter.connect_http(
                    service.url, era=None if stateless else Era.HANDSHAKE,
                    capabilities={"extensions": {TASKS_EXTENSION: {}}} if stateless
                    else None) as client:
                task = await client.call_tool_as_task("slow", {})
                result = await client.task_result(task)
        assert result["content"][0]["text"] == "done"
        assert names == [f"mcp task {task.task_id}"]

    trio.run(main)
    assert type(ledger) is TaskLedger and ledger.runtime is TRIO_TASKS


@pytest.mark.parametrize("stateless", [False, True], ids=["2025-11-25", "2026-07-28"])
def test_a_threading_http_server_runs_its_tasks_on_threads_of_their_own(
        stateless: bool) -> None:
    """The thread HTTP session supplies the threads' task runtime (thread_task_runtime)."""
    from mcp_sansio.adapters import threading as thr
    from mcp_sansio.adapters.common.tasks import THREAD_TASKS

    from mcp_sansio import Era

    server = thr.Server("thread-tasks")
    ledger = server.enable_tasks(poll_interval_ms=20)
    names: list[str] = []

    # It may end before its creating call is answered: the answer is the task as created
    # either way (that order is forced in test_task_creation_runtimes.py).
    @server.tool(task_support="required")
    def slow() -> str:
        names.append(threading.current_thread().name)
        return "done"

    with thr.start_http(server) as service, thr.connect_http(
            service.url, era=None if stateless else Era.HANDSHAKE,
            capabilities={"extensions": {TASKS_EXTENSION: {}}} if stateless else None,
    ) as client:
        task = client.call_tool_as_task("slow", {})
        result = client.task_result(task)
    assert result["content"][0]["text"] == "done"
    assert names == [f"mcp task {task.task_id}"]
    assert ledger.runtime is THREAD_TASKS
