"""The high-level API's public surface: the exceptions' public module, and the explicit
keywords of every named client call (no bare ``**options``), which reach the request."""

from __future__ import annotations

import asyncio
import inspect
import re
import subprocess
import sys

import pytest
from mcp_sansio.adapters import asyncio as aio
from mcp_sansio.adapters import errors
from mcp_sansio.adapters import threading as threads
from mcp_sansio.adapters import trio as trio_adapter

import mcp_sansio
from tests.paths import ROOT

EXAMPLE_SERVER = [sys.executable, "-P", "-m", "mcp_sansio", "serve-example"]

NAMED_CALLS = ["list_tools", "call_tool", "list_resources", "list_resource_templates",
               "read_resource", "subscribe", "unsubscribe", "list_prompts", "get_prompt",
               "complete", "set_logging_level", "ping", "discover"]
#: The client's task calls (docs/client-features.rst, mcp_sansio/app/client_tasks.py).
TASK_CALLS = ["call_tool_as_task", "task_result", "refresh_task", "cancel_task",
              "answer_task", "list_tasks"]


def test_the_errors_module_names_the_classes_the_runtimes_raise() -> None:
    for name in ("McpError", "RequestTimeout", "ConnectionClosedError", "ToolError",
                 "HTTPTransportError"):
        assert getattr(errors, name) is getattr(aio, name) is getattr(threads, name), name
    assert errors.RequestCancelledError is threads.RequestCancelledError
    assert errors.LocalProtocolError is mcp_sansio.LocalProtocolError
    assert issubclass(errors.RequestTimeout, TimeoutError)
    assert issubclass(errors.ConnectionClosedError, ConnectionError)
    assert issubclass(errors.HTTPTransportError, errors.ConnectionClosedError)
    assert issubclass(errors.ResultRejected, errors.McpError)
    assert sorted(errors.__all__) == sorted(
        name for name in errors.__all__ if isinstance(getattr(errors, name), type))
    with pytest.raises(AttributeError):
        errors.NoSuchError  # noqa: B018


def test_importing_the_errors_module_does_not_load_http() -> None:
    code = ("import sys; from mcp_sansio.adapters import errors; "
            "assert 'h11' not in sys.modules; errors.HTTPTransportError; "
            "assert 'h11' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("client_class", [aio.Client, trio_adapter.Client, threads.Client],
                         ids=["asyncio", "trio", "blocking"])
@pytest.mark.parametrize("name", NAMED_CALLS)
def test_named_calls_take_explicit_keywords(client_class: type, name: str) -> None:
    parameters = inspect.signature(getattr(client_class, name)).parameters
    assert all(p.kind is not p.VAR_KEYWORD for p in parameters.values())
    keywords = {n for n, p in parameters.items() if p.kind is p.KEYWORD_ONLY}
    expected = {"timeout", "max_total", "progress"}
    if client_class is threads.Client:
        expected.add("cancel")
    assert keywords == expected


def test_the_keywords_reach_the_request_and_a_typo_is_refused() -> None:
    async def main() -> None:
        async with aio.connect_stdio(EXAMPLE_SERVER) as client:
            with pytest.raises(TypeError):
                await client.list_tools(timout=5)  # type: ignore[call-arg]
            seen: list[float] = []
            result = await client.call_tool(
                "sleep", {"seconds": 0.2}, timeout=60,
                progress=lambda progress, total, message: seen.append(progress))
            assert result["content"][0]["text"] == "slept 0.2 s" and seen
            with pytest.raises(errors.RequestTimeout) as caught:
                await client.call_tool("sleep", {"seconds": 60}, max_total=0.3)
            assert caught.value.hard_limit
            assert [tool["name"] for tool in await client.list_tools(timeout=60)][:2] == [
                "echo", "add"]

    asyncio.run(main())


def test_the_blocking_client_takes_the_same_keywords() -> None:
    with threads.connect_stdio(EXAMPLE_SERVER) as client:
        token = threads.CancelToken()
        token.cancel()
        with pytest.raises(errors.RequestCancelledError):
            client.list_tools(cancel=token)
        with pytest.raises(errors.RequestTimeout) as caught:
            client.call_tool("sleep", {"seconds": 60}, timeout=0.3)
        assert not caught.value.hard_limit


#: What docs/reference.rst documents of the clients, besides the named calls.
#: What every client tells of its HTTP transport: meaningful over HTTP (the client then
#: holds an HTTP link), neutral otherwise (None, 0) -- an HTTP client is the plain client of
#: its runtime, so these are members of every client, not of a subclass.
HTTP_FACTS = {"http", "transport", "session_id", "session_renewals", "on_transport_event",
              "connections_opened", "auth"}
CLIENT_API = {"connect", "era", "protocol_version", "server_info", "server_capabilities",
              "instructions", "request", "listen", *NAMED_CALLS, *TASK_CALLS, *HTTP_FACTS}
#: The pump's hooks, which every runtime adapter and the HTTP client logic call: still
#: public by name (renaming them touches every adapter), and not documented for users.
PUMP_HOOKS = {"feed", "service", "on_timer"}


@pytest.mark.parametrize(("client_class", "closing"), [(aio.Client, "aclose"),
                                                        (trio_adapter.Client, "aclose"),
                                                        (threads.Client, "close")],
                         ids=["asyncio", "trio", "blocking"])
def test_the_clients_public_names_are_the_documented_ones(client_class: type,
                                                          closing: str) -> None:
    public = {name for name in dir(client_class) if not name.startswith("_")}
    assert public - PUMP_HOOKS == CLIENT_API | {closing}
    page = (ROOT / "docs" / "reference.rst").read_text()
    for name in CLIENT_API | {closing}:
        assert re.search(rf"\b{name}\b", page), name


def test_the_server_and_context_have_no_internal_public_methods() -> None:
    public = {name for name in dir(aio.Server) if not name.startswith("_")}
    assert public == {"tool", "add_tool", "resource", "add_resource", "prompt", "add_prompt",
                      "completion", "set_completion", "enable_tasks", "capabilities",
                      "connection"}
    public = {name for name in dir(aio.Context) if not name.startswith("_")}
    assert public == {"ask", "elicit", "sample", "list_roots", "progress", "log", "notify",
                      "notify_list_changed", "input_required", "input_responses",
                      "request_state", "era", "client_capabilities", "auth"}
