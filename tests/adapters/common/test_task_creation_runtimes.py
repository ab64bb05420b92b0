"""A task whose handler ends before its ``tools/call`` is answered, on the real runtimes
(the sans-IO account of every order is ``test_app_task_creation.py``).

The order is forced, not hoped for: on threads the task runtime's ``launch`` returns only
once the handler's own thread has ended (what happens when that thread wins the race); on
asyncio and trio an *eager* runner runs a handler that never suspends to its end inside the
dispatch (what an eager task factory does). Either way the creation answer says ``working``
and the client's ``task_result`` is the handler's value or error, in both eras, over HTTP
(loopback) and stdio."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from mcp_sansio.adapters import asyncio as aio
from mcp_sansio.adapters import threading as thr
from mcp_sansio.adapters.common.tasks import _AsyncioRunner, _TaskRuntime

from mcp_sansio import Era
from mcp_sansio.app.client_tasks import TASKS_EXTENSION
from mcp_sansio.app.errors import McpError

ERAS = {"2025-11-25": {"era": Era.HANDSHAKE},
        "2026-07-28": {"era": Era.STATELESS,
                       "capabilities": {"extensions": {TASKS_EXTENSION: {}}}}}

#: A task runtime over the threads' one whose ``launch`` waits for the handler to end. Source
#: text, so that the stdio server (a child process) defines the very same class.
HANDLER_FIRST = '''
import time


class HandlerFirst:
    """The threads' task runtime, but launch returns once the handler has ended."""

    def __init__(self, inner):
        self.inner = inner
        self.lock = inner.lock

    def wall(self):
        return self.inner.wall()

    def monotonic(self):
        return self.inner.monotonic()

    def new_task_id(self):
        return self.inner.new_task_id()

    def waiter(self):
        return self.inner.waiter()

    def share(self, ledger, stores):
        return self.inner.share(ledger, stores)

    def launch(self, ledger, task, job, ctx):
        # Until the ledger has the end (not until its callbacks ran: in 2025-11-25 the status
        # notification waits for this very dispatch to be free).
        self.inner.launch(ledger, task, job, ctx)
        deadline = time.monotonic() + 30
        while not task.terminal:
            if time.monotonic() > deadline:
                raise AssertionError("the handler did not end")
            time.sleep(0.002)
'''
_namespace: dict[str, Any] = {}
exec(HANDLER_FIRST, _namespace)  # this module's own source text
HandlerFirst = _namespace["HandlerFirst"]

STDIO_SERVER = HANDLER_FIRST + '''
from mcp_sansio.adapters import threading as thr
from mcp_sansio.adapters.common.tasks import THREAD_TASKS
from mcp_sansio.app.errors import McpError

server = thr.Server("race")
server.enable_tasks(runtime=HandlerFirst(THREAD_TASKS), poll_interval_ms=20)


@server.tool(task_support="optional")
def quick(n: int) -> str:
    return f"quick {n}"


@server.tool(task_support="optional")
def refuse() -> str:
    raise McpError(-32602, "no such row")


thr.run_stdio(server)
'''


def says_working(era: str, created: Any) -> bool:
    """The creation answer said ``working``: the client's view still says so -- or, in
    2025-11-25, a ``notifications/tasks/status`` that came after it already moved it on."""
    return bool(created.task_id) and (created.status == "working" or (
        era == "2025-11-25" and created.status == "completed"))


def check(era: str, client: Any, created: Any, outcome: Any) -> None:
    """(blocking client) the creation answer says working; the outcome is the handler's."""
    assert says_working(era, created)
    assert client.task_result(created)["content"][0]["text"] == "quick 4"
    assert created.status == "completed"
    with pytest.raises(McpError) as info:
        client.task_result(outcome)
    assert (info.value.code, info.value.message) == (-32602, "no such row")


@pytest.mark.parametrize("era", sorted(ERAS))
def test_threads_over_http(era: str) -> None:
    from mcp_sansio.adapters.common.tasks import THREAD_TASKS

    server = thr.Server("race")
    server.enable_tasks(runtime=HandlerFirst(THREAD_TASKS), poll_interval_ms=20)

    @server.tool(task_support="optional")
    def quick(n: int) -> str:
        return f"quick {n}"

    @server.tool(task_support="optional")
    def refuse() -> str:
        raise McpError(-32602, "no such row")

    with thr.start_http(server) as service, thr.connect_http(service.url,
                                                             **ERAS[era]) as client:
        check(era, client, client.call_tool_as_task("quick", {"n": 4}),
              client.call_tool_as_task("refuse", {}))


@pytest.mark.parametrize("era", sorted(ERAS))
def test_threads_over_stdio(era: str) -> None:
    with thr.connect_stdio([sys.executable, "-c", STDIO_SERVER], **ERAS[era]) as client:
        check(era, client, client.call_tool_as_task("quick", {"n": 4}),
              client.call_tool_as_task("refuse", {}))


class _Eager:
    """A runner that runs a handler which never suspends to its end inside ``start`` (the
    dispatch), as an eager task factory does."""

    def start(self, run: Any, task: Any, is_async: bool) -> None:
        coroutine = run()
        try:
            coroutine.send(None)
        except StopIteration:
            task._cancel = None
            return
        coroutine.close()
        raise AssertionError("this test's handlers never suspend")


class _EagerAsyncio(_Eager, _AsyncioRunner):
    pass


@pytest.mark.parametrize("era", sorted(ERAS))
def test_asyncio_eager_over_http(era: str) -> None:
    import asyncio

    server = aio.Server("eager")
    server.enable_tasks(runtime=_TaskRuntime(_EagerAsyncio), poll_interval_ms=20)

    @server.tool(task_support="optional")
    async def quick(n: int) -> str:
        return f"quick {n}"

    @server.tool(task_support="optional")
    async def refuse() -> str:
        raise McpError(-32602, "no such row")

    async def main() -> None:
        async with aio.start_http(server) as service, \
                aio.connect_http(service.url, **ERAS[era]) as client:
            created = await client.call_tool_as_task("quick", {"n": 4})
            assert says_working(era, created)
            result = await client.task_result(created)
            assert result["content"][0]["text"] == "quick 4"
            failing = await client.call_tool_as_task("refuse", {})
            with pytest.raises(McpError) as info:
                await client.task_result(failing)
            assert info.value.code == -32602

    asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.parametrize("era", sorted(ERAS))
def test_trio_eager_over_http(era: str) -> None:
    trio = pytest.importorskip("trio")
    from mcp_sansio.adapters import trio as trio_adapter
    from mcp_sansio.adapters.common.tasks import _TrioRunner

    class EagerTrio(_Eager, _TrioRunner):
        pass

    server = trio_adapter.Server("eager")
    server.enable_tasks(runtime=_TaskRuntime(EagerTrio), poll_interval_ms=20)

    @server.tool(task_support="optional")
    async def quick(n: int) -> str:
        return f"quick {n}"

    async def main() -> None:
        with trio.fail_after(60):
            async with trio_adapter.start_http(server) as service, \
                    trio_adapter.connect_http(service.url, **ERAS[era]) as client:
                created = await client.call_tool_as_task("quick", {"n": 4})
                assert says_working(era, created)
                result = await client.task_result(created)
                assert result["content"][0]["text"] == "quick 4"

    trio.run(main)
