"""The client's named calls are written once (``mcp_sansio/app/calls.py``): every one names a
method of the method table, and both colours of client are made from exactly these
definitions (``adapters/common/plans.py``) -- the same calls with the same parameters, apart
from the colour options, with the definition's docstring and a real signature."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_sansio.adapters.common.async_session import AsyncClient
from mcp_sansio.adapters.common.plans import asynchronous, blocking, colour_options
from mcp_sansio.adapters.threading.session import SyncClient

from mcp_sansio import KNOWN_REVISIONS
from mcp_sansio._capabilities import lookup
from mcp_sansio.app import calls
from mcp_sansio.app.calls import CallOptions, ClientCalls, NamedCall
from mcp_sansio.app.client_tasks import ClientTask

#: Every definition, by name: what both colours must have.
DEFINITIONS: dict[str, Callable[..., Any]] = {
    name: getattr(ClientCalls, name) for name, value in vars(ClientCalls).items()
    if isinstance(value, staticmethod)}
NAMED = [name for name, fn in DEFINITIONS.items() if not inspect.isgeneratorfunction(fn)]
TASK_CALLS = [name for name, fn in DEFINITIONS.items() if inspect.isgeneratorfunction(fn)]
SAMPLE_ARGS = {"name": "n", "uri": "u", "level": "info", "ref": {"type": "ref/prompt"},
               "argument": {"name": "a", "value": "v"}}


def _sample(name: str) -> NamedCall[Any]:
    fn = DEFINITIONS[name]
    wanted = [p for p in inspect.signature(fn).parameters.values()
              if p.default is p.empty and p.kind is not p.VAR_KEYWORD]
    result: NamedCall[Any] = fn(*(SAMPLE_ARGS[p.name] for p in wanted))
    return result


def test_the_definitions_are_the_thirteen_named_calls_and_the_six_task_calls() -> None:
    assert len(NAMED) == 13 and len(TASK_CALLS) == 6


@pytest.mark.parametrize("name", NAMED)
def test_each_named_call_is_a_method_of_the_table(name: str) -> None:
    call = _sample(name)
    assert any(lookup(call.method, revision) is not None for revision in KNOWN_REVISIONS)
    if call.pages is not None:
        assert call.method.endswith("/list") and call.params is None
    # A list call's method returns the gathered items, any other the result.
    returns = str(inspect.signature(DEFINITIONS[name]).return_annotation)
    assert returns.startswith("NamedCall[list[") == (call.pages is not None)


def _colour_methods(client: type) -> dict[str, Any]:
    return {name: value for name, value in vars(client).items()
            if hasattr(value, "definition")}


@pytest.mark.parametrize("client", [AsyncClient, SyncClient])
def test_each_colour_has_exactly_the_defined_calls(client: type) -> None:
    methods = _colour_methods(client)
    assert set(methods) == set(DEFINITIONS)
    for name, method in methods.items():
        assert method.definition is DEFINITIONS[name]
        assert getattr(client, name) is method  # a plain function on the class
        assert inspect.iscoroutinefunction(method) == (client is AsyncClient)


def _call_params(method: Any, colour: str) -> list[inspect.Parameter]:
    """A colour method's parameters without ``self`` and the colour's options."""
    params = list(inspect.signature(method).parameters.values())
    assert params[0].name == "self"
    options = {p.name for p in colour_options(colour)}
    return [p for p in params[1:] if not (
        p.name in options and not inspect.isgeneratorfunction(method.definition))]


@pytest.mark.parametrize("name", list(DEFINITIONS))
def test_both_colours_take_the_definitions_parameters(name: str) -> None:
    definition = list(inspect.signature(DEFINITIONS[name]).parameters.values())
    if name in TASK_CALLS:
        assert definition[0].name == "client"
        own = definition[1:]  # the client is the method's self
    else:
        assert definition[-1].kind is inspect.Parameter.VAR_KEYWORD  # **options
        own = definition[:-1]
    async_method, sync_method = getattr(AsyncClient, name), getattr(SyncClient, name)
    assert _call_params(async_method, "async") == own
    assert _call_params(sync_method, "blocking") == own
    for method in (async_method, sync_method):
        assert method.__name__ == name
        assert method.__qualname__.endswith(f"Client.{name}")
        assert inspect.cleandoc(DEFINITIONS[name].__doc__ or "") in (method.__doc__ or "")


def test_the_colour_options_are_the_call_options_and_only_threads_cancel() -> None:
    declared = list(CallOptions.__annotations__)
    assert declared == ["timeout", "max_total", "progress", "cancel"]
    assert [p.name for p in colour_options("blocking")] == declared
    assert [p.name for p in colour_options("async")] == declared[:-1]
    for colour, client in (("async", AsyncClient), ("blocking", SyncClient)):
        signature = inspect.signature(client.call_tool)
        for option in colour_options(colour):
            assert signature.parameters[option.name] == option
            assert option.kind is inspect.Parameter.KEYWORD_ONLY
        names = ", ".join(f"``{p.name}``" for p in colour_options(colour))
        assert f"{names}: as for :meth:`request`." in (client.call_tool.__doc__ or "")
    assert "cancel" not in inspect.signature(AsyncClient.list_tools).parameters


def test_a_method_must_bear_its_definitions_name() -> None:
    # Python 3.11 wraps an error of ``__set_name__`` in a RuntimeError (3.12 does not).
    with pytest.raises((TypeError, RuntimeError)) as raised:
        class Wrong:
            list_tools = asynchronous(ClientCalls[Any].call_tool)
    error = raised.value.__cause__ or raised.value
    assert isinstance(error, TypeError) and "Wrong.list_tools wraps call_tool" in str(error)


class _Fake:
    """A blocking client that records its requests and answers from a script."""

    def __init__(self, answers: list[dict[str, Any]], protocol_version: str = "2025-11-25"
                 ) -> None:
        self.answers = answers
        self.sent: list[tuple[str, Any, dict[str, Any]]] = []
        self.protocol_version = protocol_version
        self.slept: list[float] = []

    def request(self, method: str, params: Any = None, **options: Any) -> dict[str, Any]:
        self.sent.append((method, params, options))
        return self.answers.pop(0)

    def _sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    def _follow_task(self, task: ClientTask) -> ClientTask:
        return task

    call_tool = blocking(ClientCalls[Any].call_tool)
    list_tools = blocking(ClientCalls[Any].list_tools)
    call_tool_as_task = blocking(ClientCalls[Any].call_tool_as_task)
    list_tasks = blocking(ClientCalls[Any].list_tasks)


def test_a_named_call_passes_only_the_options_given() -> None:
    client = _Fake([{"content": []}, {"content": []}])
    assert client.call_tool("t", {"x": 1}, timeout=2) == {"content": []}
    assert client.call_tool(name="u") == {"content": []}
    assert client.sent == [("tools/call", {"name": "t", "arguments": {"x": 1}}, {"timeout": 2}),
                           ("tools/call", {"name": "u"}, {})]


OPTION_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "timeout": st.none() | st.floats(0.001, 1e6),
    "max_total": st.none() | st.floats(0.001, 1e6),
    "progress": st.none() | st.just(print),
    "cancel": st.none() | st.builds(object),
}


@given(name=st.sampled_from(NAMED), options=st.fixed_dictionaries(
    {}, optional=OPTION_VALUES))
def test_every_named_call_sends_its_definition_with_the_options_as_given(
        name: str, options: dict[str, Any]) -> None:
    """Whatever subset of the options a caller gives reaches ``request`` unchanged (a left
    out one is not passed), with the definition's method and params."""
    expected = _sample(name)
    fn = DEFINITIONS[name]
    wanted = [p.name for p in inspect.signature(fn).parameters.values()
              if p.default is p.empty and p.kind is not p.VAR_KEYWORD]
    owner = type("Owner", (_Fake,), {name: blocking(fn)})  # runs __set_name__
    client = owner([{"items": []}])
    getattr(client, name)(*(SAMPLE_ARGS[arg] for arg in wanted), **options)
    assert client.sent == [(expected.method, expected.params, options)]


def test_a_list_call_gathers_every_page_until_a_cursor_repeats() -> None:
    client = _Fake([{"tools": [{"name": "a"}], "nextCursor": "c1"},
                    {"tools": [{"name": "b"}], "nextCursor": "c2"},
                    {"tools": "not a list", "nextCursor": "c1"}])
    assert client.list_tools(max_total=9) == [{"name": "a"}, {"name": "b"}]
    assert [(params, options) for _, params, options in client.sent] == [
        (None, {"max_total": 9}), ({"cursor": "c1"}, {"max_total": 9}),
        ({"cursor": "c2"}, {"max_total": 9})]


def test_a_task_call_runs_its_plan_with_the_client_as_self() -> None:
    client = _Fake([{"task": {"taskId": "T", "status": "working"}},
                    {"tasks": [{"taskId": "T"}]}])
    task = client.call_tool_as_task("t", ttl_ms=5)
    assert (task.task_id, task.status) == ("T", "working")
    assert client.sent[0] == ("tools/call", {"name": "t", "arguments": {}, "task": {"ttl": 5}},
                              {})
    assert client.list_tasks() == [{"taskId": "T"}]


def test_params_are_copied_not_shared() -> None:
    arguments = {"x": 1}
    call = ClientCalls[Any].call_tool("t", arguments)
    arguments["x"] = 2
    assert call.params == {"name": "t", "arguments": {"x": 1}}
    assert ClientCalls[Any].complete({"type": "ref/prompt", "name": "p"},
                                     {"name": "a", "value": ""}, {"arguments": {}}).params == {
        "ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""},
        "context": {"arguments": {}}}


def test_a_walk_of_pages_is_sans_io_data_in_data_out() -> None:
    walk = calls.walk_pages("prompts")
    assert next(walk) is None
    assert walk.send({"prompts": [1], "nextCursor": "x"}) == {"cursor": "x"}
    with pytest.raises(StopIteration) as done:
        walk.send({"prompts": [2]})
    assert done.value.value == [1, 2]
