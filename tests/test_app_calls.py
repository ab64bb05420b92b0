"""The client's named calls are data (``mcp_sansio/app/calls.py``): every one names a method
of the method table, and both colours of client wrap exactly these (no call of their own)."""

from __future__ import annotations

import inspect

import pytest
from mcp_sansio.adapters._api import AsyncClient
from mcp_sansio.adapters._sync_api import SyncClient

from mcp_sansio import KNOWN_REVISIONS
from mcp_sansio._capabilities import lookup
from mcp_sansio.app import calls

NAMES = [name for name in calls.__all__ if name != "NamedCall"]


def _sample(name: str) -> calls.NamedCall:
    fn = getattr(calls, name)
    args = {"name": "n", "uri": "u", "level": "info", "ref": {"type": "ref/prompt"},
            "argument": {"name": "a", "value": "v"}}
    wanted = [p for p in inspect.signature(fn).parameters.values() if p.default is p.empty]
    result: calls.NamedCall = fn(*(args[p.name] for p in wanted))
    return result


@pytest.mark.parametrize("name", NAMES)
def test_each_named_call_is_a_method_of_the_table(name: str) -> None:
    call = _sample(name)
    assert any(lookup(call.method, revision) is not None for revision in KNOWN_REVISIONS)
    if call.pages is not None:
        assert call.method.endswith("/list") and call.params is None


@pytest.mark.parametrize("client", [AsyncClient, SyncClient])
def test_both_colours_wrap_every_named_call(client: type) -> None:
    for name in NAMES:
        source = inspect.getsource(getattr(client, name))
        assert f"calls.{name}(" in source, f"{client.__name__}.{name} builds its own call"


def test_params_are_copied_not_shared() -> None:
    arguments = {"x": 1}
    call = calls.call_tool("t", arguments)
    arguments["x"] = 2
    assert call.params == {"name": "t", "arguments": {"x": 1}}
    assert calls.complete({"type": "ref/prompt", "name": "p"}, {"name": "a", "value": ""},
                          {"arguments": {}}).params == {
        "ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""},
        "context": {"arguments": {}}}
