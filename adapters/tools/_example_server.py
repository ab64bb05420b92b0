"""The example server behind ``mcp-sansio serve-example`` and ``mcp-sansio demo``.

It implements every fixture the official conformance harness calls by name in server mode
(tools ``test_*``, the tasks-extension tools ``greet``, ``slow_compute``, ``failing_job``,
``protocol_error_job``, ``confirm_delete``, ``multi_input``, ``test_tool_with_task``, an
``x-mcp-header`` tool, resources ``test://...``, prompts ``test_*``; what each must return is
described in the harness's scenarios, summed up in ``docs/example-server.rst``) plus three
tools of its own: ``echo(text)``, ``add(a, b)`` and ``sleep(seconds)`` (progress every 0.1 s,
stops when cancelled).

One definition serves every runtime and both eras: handlers are ``async`` and get the
runtime's ``sleep`` from :func:`build`; asking the client for input goes through
``ctx.ask`` (a real request in the handshake era, ``input_required`` in the stateless era).
"""

from __future__ import annotations

import base64
import json
import struct
import sys
import zlib
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from mcp_sansio import FEATURES
from mcp_sansio.app.context import elicit_request, sampling_request
from mcp_sansio.app.errors import ToolError
from mcp_sansio.app.server import Server
from mcp_sansio.app.session import INPUT_METHODS

from ..common.async_session import AsyncContext as Context

if TYPE_CHECKING:
    import logging

__all__ = ["JSON_SCHEMA_2020_12", "PNG", "WAV", "build"]

Sleep = Callable[[float], Awaitable[Any]]


class DeliberateFailure(RuntimeError):
    """Raised by a fixture that fails on purpose (``protocol_error_job``, which the harness's
    tasks scenarios call to see a task end ``failed``). It takes the path of any handler
    exception -- a generic error on the wire, logged with its traceback by the adapters --
    and only the log handler that ``serve-example`` installs (:func:`_log_to_stderr`) knows
    it: there it is one INFO line without a traceback, so a passing conformance run prints
    no traceback. Every other exception keeps its ERROR line and traceback."""


def _quiet_deliberate(record: logging.LogRecord) -> bool:
    """A filter for serve-example's stderr handler: demote a :class:`DeliberateFailure` to
    one INFO line (dropped at the default WARNING level); pass every other record as is."""
    error = record.exc_info[1] if record.exc_info else None
    if not isinstance(error, DeliberateFailure):
        return True
    import logging

    record.msg = f"{record.getMessage()}: {error} (on purpose; no traceback)"
    record.args = None
    record.exc_info = record.exc_text = None
    record.levelno, record.levelname = logging.INFO, "INFO"
    return logging.getLogger().isEnabledFor(logging.INFO)


def _png_1x1_red() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then one red pixel
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
            + chunk(b"IEND", b""))


def _wav_silence() -> bytes:
    rate, samples = 8000, 80  # 10 ms of 8 kHz, 8-bit mono silence
    data = b"\x80" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt "
            + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data)


PNG = base64.b64encode(_png_1x1_red()).decode("ascii")
WAV = base64.b64encode(_wav_silence()).decode("ascii")

_NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}},
                "required": ["name"]}

#: The JSON Schema 2020-12 tool of the ``json-schema-2020-12`` scenario (keywords kept as is).
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
        "street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

_SEP1034_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "default": "John Doe"},
    "age": {"type": "integer", "default": 30},
    "score": {"type": "number", "default": 95.5},
    "status": {"type": "string", "enum": ["active", "inactive", "pending"],
               "default": "active"},
    "verified": {"type": "boolean", "default": True},
}}

_SEP1330_SCHEMA = {"type": "object", "properties": {
    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {"type": "string", "oneOf": [
        {"const": "value1", "title": "First Option"},
        {"const": "value2", "title": "Second Option"},
        {"const": "value3", "title": "Third Option"}]},
    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                   "enumNames": ["Option One", "Option Two", "Option Three"]},
    "untitledMulti": {"type": "array", "items": {
        "type": "string", "enum": ["option1", "option2", "option3"]}},
    "titledMulti": {"type": "array", "items": {"anyOf": [
        {"const": "value1", "title": "First Choice"},
        {"const": "value2", "title": "Second Choice"},
        {"const": "value3", "title": "Third Choice"}]}},
}}

_NO_ARGS = {"type": "object", "properties": {}}

_CONFIRM_SCHEMA = {"type": "object", "properties": {"confirm": {"type": "boolean"}},
                   "required": ["confirm"]}


def _elicited(answer: dict[str, Any]) -> str:
    return f"action={answer.get('action')}, content={json.dumps(answer.get('content'))}"


def _sampled_text(answer: dict[str, Any]) -> str:
    content = answer.get("content")
    if isinstance(content, list):  # 2025-11-25 allows a list of blocks
        content = content[0] if content else {}
    return str(content.get("text", "")) if isinstance(content, dict) else ""


def build(sleep: Sleep, name: str = "mcp-sansio-example") -> Server:
    """The example server, with the runtime's ``sleep`` (``asyncio.sleep``, ``trio.sleep``)."""
    from mcp_sansio import __version__

    server = Server(name, __version__, title="mcp-sansio example server",
                    instructions="An example server: the conformance fixtures, plus echo, "
                                 "add and sleep.")
    tool = server.tool
    no_args: dict[str, Any] = {"input_schema": _NO_ARGS}

    # -- our own tools --------------------------------------------------------------------

    @tool(description="Returns its text argument.")
    async def echo(text: str) -> str:
        return text

    @tool(description="Adds two numbers.",
          input_schema={"type": "object", "properties": {"a": {"type": "number"},
                                                         "b": {"type": "number"}},
                        "required": ["a", "b"]},
          output_schema={"type": "object", "properties": {"sum": {"type": "number"}},
                         "required": ["sum"]})
    async def add(a: float, b: float) -> dict[str, Any]:
        return {"sum": a + b}

    @tool(name="sleep", description="Sleeps for `seconds`, reporting progress every 0.1 s; "
                                    "stops when cancelled.")
    async def sleep_tool(seconds: float, ctx: Context) -> str:
        steps = max(1, round(float(seconds) / 0.1))
        for step in range(1, steps + 1):
            await sleep(float(seconds) / steps)
            ctx.progress(step, steps, f"slept {step * float(seconds) / steps:.1f} s")
        return f"slept {float(seconds):g} s"

    # -- the conformance fixtures: content types -----------------------------------------------

    @tool(**no_args)
    async def test_simple_text() -> str:
        """Returns simple text content."""
        return "This is a simple text response for testing."

    @tool(**no_args)
    async def test_image_content() -> list[dict[str, Any]]:
        """Returns a 1x1 red PNG."""
        return [{"type": "image", "data": PNG, "mimeType": "image/png"}]

    @tool(**no_args)
    async def test_audio_content(ctx: Context) -> list[dict[str, Any]]:
        """Returns a short WAV."""
        revision = ctx.session.conn.revision
        if revision in FEATURES and not FEATURES[revision].audio_content:
            # Audio content exists from 2025-03-26 on: an older client gets a text stand-in
            # (its schema's content union has no audio member).
            return [{"type": "text", "text": "(a short WAV; audio needs 2025-03-26)"}]
        return [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]

    @tool(**no_args)
    async def test_embedded_resource() -> list[dict[str, Any]]:
        """Returns an embedded text resource."""
        return [{"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain",
            "text": "This is an embedded resource content."}}]

    @tool(**no_args)
    async def test_multiple_content_types() -> list[dict[str, Any]]:
        """Returns text, an image and an embedded resource."""
        return [
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "resource", "resource": {
                "uri": "test://mixed-content-resource", "mimeType": "application/json",
                "text": json.dumps({"test": "data", "value": 123})}},
        ]

    @tool(**no_args)
    async def test_error_handling() -> str:
        """Always fails, as a tool (isError: true)."""
        raise ToolError("This tool intentionally returns an error for testing")

    # -- logging, progress, notifications ------------------------------------------------------

    @tool(**no_args)
    async def test_tool_with_logging(ctx: Context) -> str:
        """Sends three info log messages, 50 ms apart."""
        ctx.log("info", "Tool execution started")
        await sleep(0.05)
        ctx.log("info", "Tool processing data")
        await sleep(0.05)
        ctx.log("info", "Tool execution completed")
        return "Tool with logging executed successfully"

    @tool(**no_args)
    async def test_logging_tool(ctx: Context) -> str:
        """Logs at every level (the core sends only what the request asked for)."""
        for level in ("debug", "info", "warning", "error"):
            ctx.log(level, f"a {level} message", logger="example")
        return "logged"

    @tool(**no_args)
    async def test_tool_with_progress(ctx: Context) -> str:
        """Reports progress 0, 50 and 100 of 100, 50 ms apart."""
        ctx.progress(0, 100)
        await sleep(0.05)
        ctx.progress(50, 100)
        await sleep(0.05)
        ctx.progress(100, 100)
        return "Tool with progress executed successfully"

    @tool(**no_args)
    async def test_trigger_tool_change(ctx: Context) -> str:
        """Sends notifications/tools/list_changed."""
        ctx.notify_list_changed("tools")
        return "tools list changed"

    @tool(**no_args)
    async def test_trigger_prompt_change(ctx: Context) -> str:
        """Sends notifications/prompts/list_changed."""
        ctx.notify_list_changed("prompts")
        return "prompts list changed"

    @tool(**no_args)
    async def test_reconnection() -> str:
        """Over HTTP the harness closes the stream mid-call; on stdio it simply answers."""
        await sleep(0.05)
        return "Reconnection test completed"

    @tool(description="A tool whose input schema uses JSON Schema 2020-12 keywords.",
          input_schema=JSON_SCHEMA_2020_12)
    async def json_schema_2020_12_tool(**arguments: Any) -> str:
        return f"received: {json.dumps(arguments, sort_keys=True)}"

    # -- asking the client: sampling and elicitation -------------------------------------------

    @tool(input_schema={"type": "object", "properties": {"prompt": {"type": "string"}},
                        "required": ["prompt"]})
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Asks the client's LLM (sampling/createMessage)."""
        answer = await ctx.sample({"messages": [
            {"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 100})
        return f"LLM response: {_sampled_text(answer)}"

    @tool(input_schema={"type": "object", "properties": {"message": {"type": "string"}},
                        "required": ["message"]})
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Asks the user for a username and an email (elicitation/create)."""
        answer = await ctx.elicit(message, {"type": "object", "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}},
            "required": ["username", "email"]})
        return f"User response: {_elicited(answer)}"

    @tool(**no_args)
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Elicitation whose schema has a default for every primitive type."""
        answer = await ctx.elicit("Please review and update the form fields with defaults",
                                  _SEP1034_SCHEMA)
        return f"Elicitation completed: {_elicited(answer)}"

    @tool(**no_args)
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Elicitation with the five enum forms."""
        answer = await ctx.elicit("Please select options from the enum fields",
                                  _SEP1330_SCHEMA)
        return f"Elicitation completed: {_elicited(answer)}"

    @tool(**no_args)
    async def test_missing_capability(ctx: Context) -> str:
        """Needs the client's sampling capability (-32021 in the stateless era without it)."""
        answer = await ctx.sample({"messages": [
            {"role": "user", "content": {"type": "text", "text": "ping"}}], "maxTokens": 10})
        return f"LLM response: {_sampled_text(answer)}"

    @tool(**no_args)
    async def test_streaming_elicitation(ctx: Context) -> str:
        """Elicitation from a streaming call (stateless era: input_required, never a request)."""
        answer = await ctx.elicit("What is your name?", _NAME_SCHEMA)
        return f"Hello, {(answer.get('content') or {}).get('name', 'stranger')}!"

    # -- multi-round-trip requests (stateless era; real requests in the handshake era) ---------

    @tool(**no_args)
    async def test_input_required_result_elicitation(ctx: Context) -> str:
        """Asks for a name (key user_name)."""
        answer = await ctx.ask({"user_name": elicit_request("What is your name?",
                                                            _NAME_SCHEMA)})
        content = answer["user_name"].get("content") or {}
        return f"Hello, {content.get('name', 'stranger')}!"

    @tool(**no_args)
    async def test_input_required_result_sampling(ctx: Context) -> str:
        """Asks the client's LLM (key capital_question)."""
        answer = await ctx.ask({"capital_question": sampling_request({"messages": [
            {"role": "user", "content": {"type": "text",
                                         "text": "What is the capital of France?"}}],
            "maxTokens": 100})})
        return f"The answer was: {_sampled_text(answer['capital_question'])}"

    @tool(**no_args)
    async def test_input_required_result_list_roots(ctx: Context) -> str:
        """Asks for the client's roots (key client_roots)."""
        answer = await ctx.ask({"client_roots": ("roots/list", {})})
        roots = answer["client_roots"].get("roots") or []
        uris = [r.get("uri") for r in roots if isinstance(r, dict)]
        return f"Received {len(uris)} roots: {', '.join(map(str, uris))}"

    @tool(**no_args)
    async def test_input_required_result_request_state(ctx: Context) -> str:
        """Round-trips requestState (sealed by the core) and says state-ok."""
        await ctx.ask({"confirm": elicit_request("Please confirm", {
            "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})},
            request_state="awaiting-confirmation")
        if ctx.request_state not in (None, "awaiting-confirmation"):
            raise ToolError("unexpected requestState")
        return "state-ok: confirmation received"

    @tool(**no_args)
    async def test_input_required_result_tampered_state(ctx: Context) -> str:
        """Its requestState is sealed: a tampered one is refused by the core (-32602)."""
        await ctx.ask({"confirm": elicit_request("Please confirm", {
            "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})},
            request_state="integrity-protected")
        return "state-ok: integrity verified"

    @tool(**no_args)
    async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
        """Asks for an elicitation, a sampling and the roots at once."""
        answers = await ctx.ask({
            "user_name": elicit_request("What is your name?", _NAME_SCHEMA),
            "greeting": sampling_request({"messages": [
                {"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
                "maxTokens": 50}),
            "client_roots": ("roots/list", {}),
        }, request_state="multiple-inputs")
        name = (answers["user_name"].get("content") or {}).get("name", "stranger")
        return (f"Hello, {name}! Greeting: {_sampled_text(answers['greeting'])}; "
                f"{len(answers['client_roots'].get('roots') or [])} roots")

    @tool(**no_args)
    async def test_input_required_result_multi_round(ctx: Context) -> str:
        """Two rounds of elicitation; the state carries the first answer into the second."""
        state = ctx.request_state or ""
        if state.startswith("round-2:"):
            name = state.removeprefix("round-2:")
        else:
            first = await ctx.ask({"step1": elicit_request("Step 1: What is your name?",
                                                           _NAME_SCHEMA)},
                                  request_state="round-1")
            name = str((first["step1"].get("content") or {}).get("name", "stranger"))
        second = await ctx.ask({"step2": elicit_request(
            "Step 2: What is your favorite color?",
            {"type": "object", "properties": {"color": {"type": "string"}},
             "required": ["color"]})}, request_state=f"round-2:{name}")
        color = (second["step2"].get("content") or {}).get("color", "none")
        return f"Hello, {name}! Your favorite color is {color}."

    @tool(**no_args)
    async def test_input_required_result_capabilities(ctx: Context) -> str:
        """Asks only for the inputs the client declared it can give."""
        candidates = {
            "user_name": elicit_request("What is your name?", _NAME_SCHEMA),
            "greeting": sampling_request({"messages": [
                {"role": "user", "content": {"type": "text", "text": "Say hi"}}],
                "maxTokens": 20}),
            "client_roots": ("roots/list", {}),
        }
        caps = ctx.client_capabilities
        wanted = {key: item for key, item in candidates.items()
                  if INPUT_METHODS[item[0]][0] in caps}
        if not wanted:
            return "the client declared no capability to ask with"
        answers = await ctx.ask(wanted)
        return f"received answers for {', '.join(sorted(answers))}"

    # -- the tasks extension (2026-07-28, SEP-2663): see adapters/common/tasks.py ------------------

    tasks = server.enable_tasks()

    @tool(description="Greets by name (never a task).")
    async def greet(name: str) -> str:
        return f"Hello, {name}!"

    @tool(description="Sleeps `seconds`, then answers; runs as a task for a client that "
                      "negotiated the tasks extension (0 s: at once).",
          input_schema={"type": "object", "properties": {
              "seconds": {"type": "number"}, "label": {"type": "string"}},
              "required": ["seconds"]},
          task_support="optional")
    async def slow_compute(seconds: float, label: str = "") -> str:
        if float(seconds) > 0:
            await sleep(float(seconds))
        return f"computed {label or 'result'} after {float(seconds):g} s"

    @tool(description="A task that fails as a tool after half a second (isError).",
          task_support="required", **no_args)
    async def failing_job() -> str:
        await sleep(0.5)
        raise ToolError("failing_job failed, as it always does")

    @tool(description="A task that fails with a protocol-level error (status failed).",
          task_support="optional", **no_args)
    async def protocol_error_job() -> str:
        await sleep(0.1)
        raise DeliberateFailure("protocol_error_job breaks on purpose")

    @tool(description="A task that asks the user to confirm a deletion.",
          input_schema={"type": "object", "properties": {"filename": {"type": "string"}},
                        "required": ["filename"]},
          task_support="optional")
    async def confirm_delete(filename: str, ctx: Context) -> str:
        answer = await ctx.elicit(f"Delete {filename}?", _CONFIRM_SCHEMA, key="confirm")
        confirmed = answer.get("action") == "accept" and (
            answer.get("content") or {}).get("confirm") is True
        return f"{'deleted' if confirmed else 'kept'} {filename}"

    @tool(description="A task that asks two questions at once.", task_support="optional",
          **no_args)
    async def multi_input(ctx: Context) -> str:
        answers = await ctx.ask({
            "name": elicit_request("What is your name?", _NAME_SCHEMA),
            "confirm": elicit_request("Go ahead?", _CONFIRM_SCHEMA),
        })
        name = (answers["name"].get("content") or {}).get("name", "stranger")
        return f"Hello, {name}! (confirmed: {answers['confirm'].get('action')})"

    @tool(description="Asks for a name with input_required, then goes on as a task.",
          task_support="required", **no_args)
    async def test_tool_with_task(ctx: Context) -> str:
        answer = await ctx.ask({"user_name": elicit_request("What is your name?",
                                                            _NAME_SCHEMA)})
        await sleep(0.1)
        name = (answer["user_name"].get("content") or {}).get("name", "stranger")
        return f"Hello, {name}! (from a task)"

    # The MRTR -> task composition: the name is gathered on the request, before the task.
    tasks.gather_first("test_tool_with_task", {
        "user_name": elicit_request("What is your name?", _NAME_SCHEMA)})

    # -- custom headers (2026-07-28 x-mcp-header: mirrored into Mcp-Param-Region) -------------

    @tool(description="Echoes its region, which HTTP clients mirror into Mcp-Param-Region.",
          input_schema={"type": "object", "properties": {
              "region": {"type": "string", "x-mcp-header": "Region"},
              "query": {"type": "string"}}, "required": ["region"]})
    async def test_param_headers(region: str, query: str = "") -> str:
        return f"region={region}, query={query}"

    # -- resources -----------------------------------------------------------------------------

    @server.resource("test://static-text", name="static-text", mime_type="text/plain")
    async def static_text() -> str:
        """A static text resource."""
        return "This is the content of the static text resource."

    @server.resource("test://static-binary", name="static-binary", mime_type="image/png")
    async def static_binary() -> bytes:
        """A static binary resource (a PNG)."""
        return base64.b64decode(PNG)

    @server.resource("test://watched-resource", name="watched-resource",
                     mime_type="text/plain")
    async def watched() -> str:
        """A resource to subscribe to."""
        return "Watched resource content"

    @server.resource("test://template/{id}/data", name="template-data",
                     mime_type="application/json")
    async def template_data(id: str) -> str:
        """Data for one id, from a resource template."""
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"},
                          separators=(",", ":"))

    # -- prompts -------------------------------------------------------------------------------

    @server.prompt()
    async def test_simple_prompt() -> str:
        """A prompt without arguments."""
        return "This is a simple prompt for testing."

    @server.prompt(arguments=[
        {"name": "arg1", "description": "First test argument", "required": True},
        {"name": "arg2", "description": "Second test argument", "required": True}])
    async def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        """A prompt with two arguments."""
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @server.prompt(arguments=[{"name": "resourceUri", "description": "URI of the resource "
                               "to embed", "required": True}])
    async def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict[str, Any]]:
        """A prompt embedding a resource."""
        return [
            {"role": "user", "content": {"type": "resource", "resource": {
                "uri": resourceUri, "mimeType": "text/plain",
                "text": "Embedded resource content for testing."}}},
            {"role": "user", "content": {"type": "text",
                                         "text": "Please process the embedded resource above."}},
        ]

    @server.prompt()
    async def test_prompt_with_image() -> list[dict[str, Any]]:
        """A prompt with an image."""
        return [
            {"role": "user", "content": {"type": "image", "data": PNG,
                                         "mimeType": "image/png"}},
            {"role": "user", "content": {"type": "text",
                                         "text": "Please analyze the image above."}},
        ]

    @server.prompt(arguments=[])
    async def test_input_required_result_prompt(ctx: Context) -> str:
        """A prompt that first asks the user for context."""
        answer = await ctx.ask({"user_context": elicit_request(
            "What context should the prompt use?",
            {"type": "object", "properties": {"context": {"type": "string"}},
             "required": ["context"]})})
        context = (answer["user_context"].get("content") or {}).get("context", "")
        return f"Use this context: {context}"

    # -- completion ----------------------------------------------------------------------------

    words = ["paris", "park", "party", "hello", "world", "test"]

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        value = str((argument or {}).get("value", "")) if isinstance(argument, dict) else ""
        return [w for w in words if w.startswith(value)]

    return server


RUNTIMES = ("asyncio", "trio", "threading")


def _sleep_for(runtime: str) -> Sleep:
    """The runtime's ``sleep`` for the handlers (the threading adapter runs ``async``
    handlers on a private asyncio loop per worker, so it takes ``asyncio.sleep``)."""
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r} (one of {', '.join(RUNTIMES)})")
    if runtime == "trio":
        import trio

        return trio.sleep
    if runtime == "threading":
        return _asyncio_sleep  # asyncio imported by the first sleep, not by a cold start
    import asyncio

    return asyncio.sleep


async def _asyncio_sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def _log_to_stderr() -> None:
    """Warnings and errors to stderr, one line each (unless logging is set up already, as
    under a test runner); the fixtures' deliberate failures quietly (see
    :class:`DeliberateFailure`)."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_quiet_deliberate)
    logging.basicConfig(level=logging.WARNING, handlers=[handler])


def run(runtime: str = "asyncio") -> None:
    """Serve the example server on stdio with one runtime, until stdin closes."""
    import importlib

    sleep = _sleep_for(runtime)
    _log_to_stderr()
    adapter = importlib.import_module(f"mcp_sansio.adapters.{runtime}")
    adapter.run_stdio(build(sleep))


def run_http(host: str = "127.0.0.1", port: int = 0, *, runtime: str = "asyncio",
             allowed_hosts: Iterable[str] | None = None, **options: Any) -> None:
    """Serve the example server over Streamable HTTP with one runtime; the runtime's
    ``run_http`` prints the URL once it listens.

    ``allowed_hosts`` (``Host`` values accepted, see :class:`~mcp_sansio.http.HTTPServer`)
    replaces the loopback-only default when given; other ``options`` go to the runtime's
    ``run_http`` as they are."""
    import importlib

    sleep = _sleep_for(runtime)
    _log_to_stderr()
    if allowed_hosts is not None:
        options["allowed_hosts"] = list(allowed_hosts)
    server = build(sleep)  # (each runtime's start_http derives tool_param_headers)
    adapter = importlib.import_module(f"mcp_sansio.adapters.{runtime}")
    adapter.run_http(server, host, port, **options)


def tool_param_headers(server: Server) -> Callable[[str], dict[str, tuple[str, ...]] | None]:
    """The ``tool_param_headers`` option of :class:`~mcp_sansio.http.HTTPServer` for
    ``server`` (every runtime's ``start_http`` uses it by default; see
    :func:`mcp_sansio.adapters.common.http_options.tool_param_headers`)."""
    from ..common.http_options import tool_param_headers as derive

    return derive(server)
