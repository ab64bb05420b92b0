"""A tool called with arguments that do not fit it (a value of the wrong type, an unknown or
missing name) is answered as its revision says -- a tool execution error (``isError``)
naming the argument from 2025-11-25 on, -32602 before -- and never reaches the handler nor
turns into -32603 "Internal error"; the server logs it at WARNING (visible by default),
without the argument's value."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_sansio.adapters.asyncio import connect_stdio

from mcp_sansio import KNOWN_REVISIONS, Request
from mcp_sansio.app.context import Context
from mcp_sansio.app.errors import McpError
from mcp_sansio.app.server import (
    _TYPE_TESTS,
    INVALID_ARGUMENTS_ANSWER,
    Server,
    ServerLogic,
    _argument_types,
    _wrong_type,
)
from tests.paths import ROOT

EXAMPLE = [sys.executable, "-P", "-m", "mcp_sansio", "serve-example"]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=3),
    max_leaves=8)


def json_type(value: Any) -> str:
    """The JSON Schema type of a decoded JSON value (integer for a number without a
    fractional part, 2020-12 validation 6.1.1)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


@given(JSON)
def test_each_type_test_accepts_exactly_its_json_values(value: Any) -> None:
    kind = json_type(value)
    for name, test in _TYPE_TESTS.items():
        # Every integer is also a number; nothing else belongs to two types.
        expected = name == kind or (name == "number" and kind == "integer")
        assert test(value) is expected, (name, value)


def test_the_answer_table_covers_every_revision() -> None:
    assert set(INVALID_ARGUMENTS_ANSWER) == set(KNOWN_REVISIONS)
    assert set(INVALID_ARGUMENTS_ANSWER.values()) == {"protocol-error", "tool-error"}


def test_argument_types_from_a_signature_and_from_a_hand_written_schema() -> None:
    server = Server("types")

    @server.tool()
    def typed(a: int, b: float, c: str, d: bool, e: dict[str, Any], f: list[int], g: Any,
              h: int | None = None) -> str:
        return "ok"

    assert server.tools["typed"].arg_types == {
        "a": ("integer",), "b": ("number",), "c": ("string",), "d": ("boolean",)}
    # dict[...] and list[...] are generic aliases: the signature's schema leaves them (and
    # Any, and unions) untyped, so they are not checked.
    schema = {"type": "object", "properties": {
        "n": {"type": ["integer", "null"]}, "odd": {"type": "decimal"}, "free": {}}}
    assert _argument_types(schema) == {"n": ("integer", "null")}
    assert _wrong_type({"n": ("integer", "null")}, {"n": None}) is None
    assert _wrong_type({"n": ("integer", "null")}, {"n": "1"}) == (
        "argument 'n' must be an integer or null, not a string")
    assert _argument_types({"type": "object", "properties": []}) == {}
    assert _argument_types(None) == {}


def route(server: Server, params: dict[str, Any]) -> Any:
    session = ServerLogic(server.connection(), server)
    request = Request(request_id=7, method="tools/call", params=params)
    job = server._route(request, Context(session, request))
    if job.fn is None:
        return job.shape(None)
    value = job.fn(*job.args, **job.kwargs)
    if asyncio.iscoroutine(value):
        value = asyncio.run(value)
    return job.shape(value)


def make_server(calls: list[Any]) -> Server:
    server = Server("args")

    @server.tool()
    def add(a: int, b: int = 1) -> str:
        calls.append((a, b))
        return str(a + b)

    return server


@pytest.mark.parametrize(("arguments", "says"), [
    ({"a": "x"}, "argument 'a' must be an integer, not a string"),
    ({"a": 1, "b": True}, "argument 'b' must be an integer, not a boolean"),
    ({"a": 1.5}, "argument 'a' must be an integer, not a number"),
    ({"a": None}, "argument 'a' must be an integer, not null"),
    ({"a": [1]}, "argument 'a' must be an integer, not an array"),
    ({"b": 1}, "missing required argument(s): a"),
    ({"a": 1, "c": 2}, "unexpected argument(s): c"),
])
def test_arguments_that_do_not_fit_are_a_tool_error_that_names_them(
        arguments: dict[str, Any], says: str, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[Any] = []
    caplog.set_level(logging.WARNING, "mcp_sansio.adapters")
    result = route(make_server(calls), {"name": "add", "arguments": arguments})
    assert result == {"content": [{"type": "text",
                                   "text": f"Invalid arguments for tool add: {says}"}],
                      "isError": True}
    assert calls == []  # the handler never ran
    [record] = [r for r in caplog.records if r.name == "mcp_sansio.adapters"]
    assert record.levelno == logging.WARNING
    assert says in record.getMessage() and "request 7" in record.getMessage()


def test_the_warning_does_not_carry_the_argument_value(caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    caplog.set_level(logging.WARNING)
    route(make_server([]), {"name": "add", "arguments": {"a": "sk-secret-token-value"}})
    assert caplog.records and "sk-secret" not in caplog.text


def test_arguments_that_fit_reach_the_handler() -> None:
    calls: list[Any] = []
    result = route(make_server(calls), {"name": "add", "arguments": {"a": 2, "b": 3.0}})
    assert calls == [(2, 3.0)]  # 3.0 is a JSON integer (no fractional part)
    assert result["content"][0]["text"] == "5.0" and "isError" not in result


@pytest.mark.parametrize("revision", KNOWN_REVISIONS)
def test_a_wrong_type_over_stdio_is_answered_as_the_revision_says(revision: str) -> None:
    """add(a: float, b: float) of the example server, called with a="x", in a real
    subprocess: never -32603."""

    async def main() -> None:
        async with connect_stdio(EXAMPLE, versions=[revision]) as client:
            assert client.protocol_version == revision
            says = "Invalid arguments for tool add: argument 'a' must be a number, not a string"
            if INVALID_ARGUMENTS_ANSWER[revision] == "protocol-error":
                with pytest.raises(McpError) as info:
                    await client.call_tool("add", {"a": "x", "b": 1}, timeout=60)
                assert info.value.code == -32602
                assert info.value.message == f"Invalid params: {says}"
            else:
                result = await client.call_tool("add", {"a": "x", "b": 1}, timeout=60)
                assert result["isError"] is True
                assert result["content"] == [{"type": "text", "text": says}]
            fine = await client.call_tool("add", {"a": 2, "b": 0.5}, timeout=60)
            assert math.isclose(fine["structuredContent"]["sum"], 2.5)

    asyncio.run(asyncio.wait_for(main(), 120))


def test_the_docs_table_says_what_the_code_does() -> None:

    text = (ROOT / "docs" / "errors.rst").read_text()
    table = text[text.index("Tool arguments that do not fit"):]
    rows = re.findall(r"^   \* - ([0-9, -]+)\n     - (.+)$", table, re.M)
    said = {revision.strip(): "protocol-error" if answer.startswith("-32602")
            else "tool-error" for revisions, answer in rows for revision in revisions.split(",")}
    assert said == INVALID_ARGUMENTS_ANSWER
