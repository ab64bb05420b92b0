"""Call sites of both client colours, for the type checker only: ``tests/app/test_call_types.py``
runs ``mypy --strict`` on this file (it is never imported or collected). Each named call is
made in both colours with its options, and ``assert_type`` pins what mypy infers -- so the
signatures derived from ``mcp_sansio/app/calls.py`` are checked where users call them.

The imports name the source tree's ``adapters`` package (installed as
``mcp_sansio.adapters``), as ``mypy --strict mcp_sansio adapters`` sees it."""

from __future__ import annotations

from typing import Any, assert_type

from adapters.common.async_session import AsyncClient
from adapters.threading.session import CancelToken, SyncClient
from mcp_sansio.app.calls import TaskClient
from mcp_sansio.app.client_tasks import ClientTask

Items = list[dict[str, Any]]
Result = dict[str, Any]


def progress(done: float, total: float | None, message: str | None) -> None:
    pass


async def async_colour(client: AsyncClient) -> None:
    assert_type(await client.list_tools(), Items)
    assert_type(await client.list_tools(timeout=5, max_total=None, progress=progress), Items)
    assert_type(await client.call_tool("t"), Result)
    assert_type(await client.call_tool("t", {"x": 1}, timeout=2.5), Result)
    assert_type(await client.call_tool(name="t", arguments=None), Result)
    assert_type(await client.list_resources(), Items)
    assert_type(await client.list_resource_templates(), Items)
    assert_type(await client.read_resource("file:///a"), Result)
    assert_type(await client.subscribe("file:///a"), Result)
    assert_type(await client.unsubscribe("file:///a"), Result)
    assert_type(await client.list_prompts(), Items)
    assert_type(await client.get_prompt("p", {"a": "b"}), Result)
    assert_type(await client.complete({"type": "ref/prompt", "name": "p"},
                                      {"name": "a", "value": ""}), Result)
    assert_type(await client.set_logging_level("info"), Result)
    assert_type(await client.ping(max_total=1), Result)
    assert_type(await client.discover(), Result)
    task = await client.call_tool_as_task("t", {"x": 1}, ttl_ms=1000, on_status=None)
    assert_type(task, ClientTask)
    assert_type(await client.task_result(task), Result)
    assert_type(await client.refresh_task(task), ClientTask)
    assert_type(await client.cancel_task(task), None)
    assert_type(await client.answer_task(task, {"q": {}}), None)
    assert_type(await client.list_tasks(), Items)


def blocking_colour(client: SyncClient) -> None:
    token = CancelToken()
    assert_type(client.list_tools(cancel=token), Items)
    assert_type(client.call_tool("t", {"x": 1}, timeout=None, cancel=token), Result)
    assert_type(client.call_tool("t", progress=progress, cancel=None), Result)
    assert_type(client.list_resources(), Items)
    assert_type(client.list_resource_templates(), Items)
    assert_type(client.read_resource("file:///a", cancel=token), Result)
    assert_type(client.subscribe("file:///a"), Result)
    assert_type(client.unsubscribe("file:///a"), Result)
    assert_type(client.list_prompts(), Items)
    assert_type(client.get_prompt("p"), Result)
    assert_type(client.complete({"type": "ref/prompt", "name": "p"}, {"name": "a", "value": ""},
                                {"arguments": {}}), Result)
    assert_type(client.set_logging_level("debug"), Result)
    assert_type(client.ping(), Result)
    assert_type(client.discover(timeout=1), Result)
    task = client.call_tool_as_task("t")
    assert_type(task, ClientTask)
    assert_type(client.task_result(task), Result)
    assert_type(client.refresh_task(task), ClientTask)
    assert_type(client.cancel_task(task), None)
    assert_type(client.answer_task(task, {}), None)
    assert_type(client.list_tasks(), Items)


def both_colours_are_task_clients(a: AsyncClient, s: SyncClient) -> list[TaskClient]:
    return [a, s]
