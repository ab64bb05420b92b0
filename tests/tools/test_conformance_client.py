"""``mcp-sansio conformance-client``, the client of the official harness's client mode, driven
against our own asyncio HTTP server over loopback in both eras: what it calls, with which
arguments, how it answers elicitation, and its exit status."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from typing import Any

import pytest
from mcp_sansio.adapters.asyncio import Context, Server, start_http
from mcp_sansio.adapters.tools import _conformance_client as cc

from mcp_sansio import Era

ERAS = ["2025-11-25", "2026-07-28"]

DEFAULTS_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "default": "John Doe"},
    "age": {"type": "integer", "default": 30},
    "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
    "note": {"type": "string"},
}}

RICH_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addr", "type": "object",
                          "properties": {"city": {"type": "string"}}}},
    "properties": {"home": {"$ref": "#/$defs/address"}},
    "allOf": [{"anyOf": [{"required": ["home"]}, {}]}],
    "if": {"required": ["home"]}, "then": {}, "else": {},
    "additionalProperties": False,
}


def make_server(seen: list[tuple[str, Any]]) -> Server:
    """A small server that records what the client did."""
    server = Server("conformance-client-test")

    @server.tool(input_schema={"type": "object", "properties": {
        "a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]})
    async def add_numbers(a: float, b: float) -> str:
        seen.append(("add_numbers", {"a": a, "b": b}))
        return f"The sum of {a} and {b} is {a + b}"

    @server.tool(input_schema={"type": "object", "properties": {}})
    async def ask_defaults(ctx: Context) -> str:
        answer = await ctx.elicit("accept the defaults", DEFAULTS_SCHEMA)
        seen.append(("ask_defaults", answer))
        return "ok"

    @server.resource("test://one", name="one", mime_type="text/plain")
    async def one() -> str:
        seen.append(("read", "test://one"))
        return "one"

    @server.prompt()
    async def greet(who: str) -> str:
        seen.append(("greet", who))
        return f"Hello, {who}"

    return server


def schema_server(seen: list[tuple[str, Any]]) -> Server:
    server = Server("schema-test")

    @server.tool(input_schema=RICH_SCHEMA)
    async def json_schema_2020_12_tool() -> str:
        seen.append(("focal", None))
        return "ok"

    @server.tool(input_schema={"type": "object", "properties": {"schema": {"type": "object"}},
                               "required": ["schema"]})
    async def json_schema_echo(schema: dict[str, Any]) -> str:
        seen.append(("echo", schema))
        return "echoed"

    return server


# -- the pieces ----------------------------------------------------------------------------------


def test_the_era_and_versions_come_from_the_protocol_version() -> None:
    assert cc.settings_for("2025-06-18") == (["2024-11-05", "2025-03-26", "2025-06-18"],
                                             Era.HANDSHAKE)
    assert cc.settings_for("2025-11-25")[0][-1] == "2025-11-25"
    assert cc.settings_for("2026-07-28") == (["2026-07-28"], Era.STATELESS)
    with pytest.raises(ValueError, match="unknown protocol version '2099-01-01'"):
        cc.settings_for("2099-01-01")


def test_elicitation_is_accepted_with_the_schema_defaults() -> None:
    answer = cc.elicitation({"message": "m", "requestedSchema": DEFAULTS_SCHEMA})
    assert answer == {"action": "accept",
                      "content": {"name": "John Doe", "age": 30, "status": "active"}}
    assert cc.elicitation({"mode": "url", "url": "https://x", "message": "m",
                           "elicitationId": "1"}) == {"action": "decline"}


def test_made_up_arguments_fit_the_required_properties() -> None:
    schema = {"type": "object", "required": ["s", "n", "i", "b", "e", "d", "o"],
              "properties": {"s": {"type": "string"}, "n": {"type": "number"},
                             "i": {"type": "integer"}, "b": {"type": "boolean"},
                             "e": {"enum": ["x", "y"]}, "d": {"type": "string", "default": "z"},
                             "o": {"type": "object", "required": ["k"],
                                   "properties": {"k": {"type": ["null", "integer"]}}},
                             "optional": {"type": "string"}}}
    assert cc.sample_arguments(schema) == {"s": "test", "n": 1, "i": 1, "b": True, "e": "x",
                                           "d": "z", "o": {"k": 1}}
    assert cc.sample_arguments({"type": "object"}) == {}


# -- against our HTTP server ---------------------------------------------------------------------


async def _run(server: Server, scenario: str, version: str,
               context: dict[str, Any] | None = None) -> None:
    async with start_http(server) as service:
        await asyncio.wait_for(cc.run(service.url, scenario, version, context), 20)


@pytest.mark.parametrize("version", ERAS)
def test_generic_exercise_uses_every_tool_resource_and_prompt(version: str) -> None:
    seen: list[tuple[str, Any]] = []
    asyncio.run(_run(make_server(seen), "tools_call", version))
    assert ("add_numbers", {"a": 1, "b": 1}) in seen
    # SEP-1034: the defaults the requested schema gives come back in the accepted content
    # (handshake era: an elicitation request; stateless era: input_required and a retry).
    assert ("ask_defaults", {"action": "accept", "content": {
        "name": "John Doe", "age": 30, "status": "active"}}) in seen
    assert ("read", "test://one") in seen
    assert ("greet", "test") in seen


@pytest.mark.parametrize("version", ERAS)
def test_tool_calls_from_the_context_replace_the_made_up_ones(version: str) -> None:
    seen: list[tuple[str, Any]] = []
    context = {"toolCalls": [{"name": "add_numbers", "arguments": {"a": 2, "b": 40}},
                             {"name": "add_numbers", "arguments": {"a": -1, "b": 0.5}}]}
    asyncio.run(_run(make_server(seen), "http-custom-headers", version, context))
    tool_calls = [entry for entry in seen if entry[0] in ("add_numbers", "ask_defaults")]
    assert tool_calls == [("add_numbers", {"a": 2, "b": 40}),
                          ("add_numbers", {"a": -1, "b": 0.5})]


@pytest.mark.parametrize("version", ERAS)
def test_json_schema_preservation_echoes_the_schema_verbatim(version: str) -> None:
    seen: list[tuple[str, Any]] = []
    asyncio.run(_run(schema_server(seen), "json-schema-2020-12-preservation", version))
    assert seen == [("echo", RICH_SCHEMA)]


# -- the command line ----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _env(scenario: str, version: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("MCP_CONFORMANCE_CONTEXT", None)
    env.update(MCP_CONFORMANCE_SCENARIO=scenario, MCP_CONFORMANCE_PROTOCOL_VERSION=version)
    return env


@pytest.mark.parametrize("version", ERAS)
def test_cli_runs_the_scenario_and_exits_0(version: str) -> None:
    seen: list[tuple[str, Any]] = []

    async def main() -> tuple[int, bytes]:
        async with start_http(make_server(seen)) as service:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "mcp_sansio", "conformance-client", service.url,
                env=_env("tools_call", version), stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
            _out, err = await asyncio.wait_for(proc.communicate(), 30)
            assert proc.returncode is not None
            return proc.returncode, err

    code, err = asyncio.run(main())
    assert code == 0, err.decode()
    assert ("add_numbers", {"a": 1, "b": 1}) in seen
    assert b"scenario 'tools_call' done" in err


def test_cli_exits_1_when_it_cannot_connect() -> None:
    url = f"http://127.0.0.1:{_free_port()}/mcp"
    proc = subprocess.run([sys.executable, "-m", "mcp_sansio", "conformance-client", url],
                          env=_env("initialize", "2025-11-25"), capture_output=True,
                          timeout=30, check=False)
    assert proc.returncode == 1
    assert b"scenario 'initialize' failed" in proc.stderr


def test_cli_exits_1_on_an_unknown_protocol_version() -> None:
    proc = subprocess.run([sys.executable, "-m", "mcp_sansio", "conformance-client",
                           "http://127.0.0.1:9/mcp"], env=_env("initialize", "1999-01-01"),
                          capture_output=True, timeout=30, check=False)
    assert proc.returncode == 1
    assert b"unknown protocol version '1999-01-01'" in proc.stderr
