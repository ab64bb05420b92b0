"""mcp_sansio.types: every type of every revision against that revision's official schema.

The central property: for every type (class or alias) of every revision namespace, values
drawn by its hypothesis strategy unstructure to JSON that validates against the schema's own
definition of that type, and structure back to an equal value. Types shared by several
revisions are drawn once and validated against each revision that has them.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import typing
from collections.abc import Iterator
from typing import Any

import attrs
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sansio import types
from mcp_sansio.types import _generate, _strategies
from mcp_sansio.types._base import FieldValueError
from tests import schemas

REVISIONS = types.REVISIONS
EXAMPLES = 12  # per distinct type; about 450 of them


@functools.cache
def model() -> tuple[list[_generate.Revision], dict[tuple[str, str], _generate.Shared]]:
    return _generate.build()


@functools.cache
def validator(revision: str, pointer: str) -> Any:
    schema = schemas.load(revision)
    key = "$defs" if "$defs" in schema else "definitions"
    wrapper = {"$schema": schema["$schema"], key: schema[key], "$ref": f"#/{pointer}"}
    cls = jsonschema.validators.validator_for(wrapper)
    return cls(wrapper)


def distinct_types() -> list[tuple[str, str, tuple[tuple[str, str], ...]]]:
    """(owner revision, name, ((revision, schema pointer), ...)) per distinct Python type."""
    revs, shared = model()
    pointers = {(r.revision, n): e.pointer for r in revs for n, e in r.entities.items()}
    seen: dict[int, tuple[str, str, list[tuple[str, str]]]] = {}
    for r in revs:
        for name in r.entities:
            s = shared[r.revision, name]
            entry = seen.setdefault(id(s), (s.owner, s.name, []))
            entry[2].append((r.revision, pointers[r.revision, name]))
    return [(owner, name, tuple(where)) for owner, name, where in seen.values()]


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


@pytest.mark.parametrize(("owner", "name", "where"), distinct_types(),
                         ids=lambda x: x if isinstance(x, str) else None)
def test_every_type_round_trips_and_validates(owner: str, name: str,
                                              where: tuple[tuple[str, str], ...]) -> None:
    tp = getattr(types.namespace(owner), name)
    validators = [validator(revision, pointer) for revision, pointer in where]

    @SETTINGS
    @given(_strategies.strategy_for(tp))
    def check(value: Any) -> None:
        wire = json.loads(json.dumps(types.unstructure(value)))
        for v in validators:
            v.validate(wire)
        back = types.structure(wire, tp)
        assert types.unstructure(back) == wire
        if back != value:
            # Only an undiscriminated union may pick another member with the same JSON.
            assert _contains_ambiguous_union(tp), (back, value)

    check()


#: Unions of the schemas whose members the JSON cannot always tell apart: a
#: ``LegacyTitledEnumSchema`` without ``enumNames`` is byte for byte an
#: ``UntitledSingleSelectEnumSchema``; ``ServerResult``/``ClientResult`` include the plain
#: ``Result``, which takes any object, and ``GetTaskResult``/``CancelTaskResult`` are one shape.
#: (``structure_result`` knows the method, so it never meets these.)
AMBIGUOUS = ("PrimitiveSchemaDefinition", "EnumSchema", "ServerResult", "ClientResult")


@functools.cache
def ambiguous_unions() -> frozenset[Any]:
    return frozenset(getattr(types.namespace(r), name) for r in REVISIONS for name in AMBIGUOUS
                     if name in types.namespace(r).__all__)


def _contains_ambiguous_union(tp: Any, seen: set[Any] | None = None) -> bool:
    """True when ``tp`` is, or reaches through its fields, one of the AMBIGUOUS unions."""
    seen = set() if seen is None else seen
    if tp in seen:
        return False
    seen.add(tp)
    if tp in ambiguous_unions():
        return True
    if isinstance(tp, type) and attrs.has(tp):
        hints = typing.get_type_hints(tp)
        return any(_contains_ambiguous_union(h, seen) for h in hints.values())
    return any(_contains_ambiguous_union(a, seen) for a in typing.get_args(tp))


# -- the namespaces mirror the schemas -------------------------------------------------------


@pytest.mark.parametrize("revision", REVISIONS)
def test_every_schema_definition_has_a_name(revision: str) -> None:
    module = types.namespace(revision)
    definitions = schemas.definition_names(revision)
    assert definitions <= set(module.__all__)
    for name in definitions:
        assert getattr(module, name) is not None


def test_generated_modules_are_up_to_date() -> None:
    assert _generate.main(["--check"]) == 0, "run: python -m mcp_sansio.types._generate"


def test_unchanged_types_are_shared_and_changed_ones_are_not() -> None:
    v24, v25a, v25b, v25c, v26 = (types.namespace(r) for r in REVISIONS)
    assert v25a.ImageContent is v24.ImageContent is not None
    assert v25b.TextContent is v25c.TextContent  # 2025-06-18 added _meta; then unchanged
    assert v24.TextContent is not v25b.TextContent
    assert v25b.Tool is not v25c.Tool  # 2025-11-25 added icons and execution
    assert v25c.Implementation is v26.Implementation
    assert "AudioContent" not in v24.__all__
    assert v25c.TextContent.__module__.endswith("v2025_06_18")


@pytest.mark.parametrize("revision", REVISIONS)
def test_method_tables_follow_the_schema_unions(revision: str) -> None:
    module = types.namespace(revision)
    defs = schemas.load(revision)["$defs" if revision >= "2025-11" else "definitions"]
    methods = {kind: set() for kind in ("request", "notification")}
    for union, kind in (("ClientRequest", "request"), ("ServerRequest", "request"),
                        ("InputRequest", "request"), ("ClientNotification", "notification"),
                        ("ServerNotification", "notification")):
        for ref in defs.get(union, {}).get("anyOf", []):
            name = ref["$ref"].rsplit("/", 1)[-1]
            methods[kind].add(defs[name]["properties"]["method"]["const"])
    assert methods["request"] <= set(module.REQUEST_PARAMS)
    assert methods["notification"] <= set(module.NOTIFICATION_PARAMS)
    assert set(module.RESULTS) == set(module.REQUEST_PARAMS)
    if revision != "2026-07-28":
        assert module.RESULTS["ping"] == (module.EmptyResult,)
    assert module.RESULTS["tools/call"][0] is module.CallToolResult


def test_result_alternatives() -> None:
    v25c, v26 = types.namespace("2025-11-25"), types.namespace("2026-07-28")
    assert v25c.RESULTS["tools/call"] == (v25c.CallToolResult, v25c.CreateTaskResult)
    assert v26.RESULTS["tools/call"] == (v26.CallToolResult, v26.InputRequiredResult)
    assert v26.RESULTS["tools/list"] == (v26.ListToolsResult,)


@pytest.mark.parametrize("revision", REVISIONS)
def test_strategies_cover_every_type_of_a_revision(revision: str) -> None:
    module = types.namespace(revision)
    found = _strategies.strategies(revision)
    assert set(found) == {n for n in module.__all__ if not n.isupper()}
    assert found["TextContent"] is _strategies.strategy_for(module.TextContent)


def test_a_copied_union_is_an_alias() -> None:
    v26 = types.namespace("2026-07-28")
    assert v26.ClientNotification is v26.CancelledNotification
    assert v26.ClientResult is v26.Result


# -- by method -------------------------------------------------------------------------------


def method_cases(table: str) -> Iterator[tuple[str, str]]:
    for revision in REVISIONS:
        for method in getattr(types.namespace(revision), table):
            yield revision, method


@pytest.mark.parametrize(("revision", "method"), list(method_cases("REQUEST_PARAMS")))
def test_structure_request_by_method(revision: str, method: str) -> None:
    tp = types.namespace(revision).REQUEST_PARAMS[method]

    @settings(SETTINGS, max_examples=5)
    @given(_strategies.strategy_for(tp))
    def check(params: Any) -> None:
        wire = types.unstructure(params)
        back = types.structure_request(method, wire, revision)
        assert types.unstructure(back) == wire

    check()


@pytest.mark.parametrize(("revision", "method"), list(method_cases("NOTIFICATION_PARAMS")))
def test_structure_notification_by_method(revision: str, method: str) -> None:
    tp = types.namespace(revision).NOTIFICATION_PARAMS[method]

    @settings(SETTINGS, max_examples=5)
    @given(_strategies.strategy_for(tp))
    def check(params: Any) -> None:
        wire = types.unstructure(params)
        assert types.unstructure(types.structure_notification(method, wire, revision)) == wire

    check()


@pytest.mark.parametrize(("revision", "method"), list(method_cases("RESULTS")))
def test_structure_result_by_method(revision: str, method: str) -> None:
    choices = types.namespace(revision).RESULTS[method]

    @settings(SETTINGS, max_examples=5)
    @given(st.sampled_from(choices).flatmap(_strategies.strategy_for))
    def check(result: Any) -> None:
        wire = types.unstructure(result)
        if type(result).__name__ == "InputRequiredResult":
            wire["resultType"] = "input_required"
        elif "resultType" in wire:
            wire["resultType"] = "complete"
        back = types.structure_result(method, wire, revision)
        assert type(back) is type(result)
        assert types.unstructure(back) == wire

    check()


def test_params_absent_read_as_empty() -> None:
    v = types.namespace("2025-06-18")
    assert types.structure_request("tools/list", None, "2025-06-18") == \
        v.ListToolsRequestParams()
    assert types.structure_notification("notifications/initialized", None, "2025-06-18") == \
        v.InitializedNotificationParams()


def test_unknown_method_and_revision() -> None:
    with pytest.raises(types.TypeValidationError, match="'tools/nope' is not a request"):
        types.structure_request("tools/nope", {}, "2025-06-18")
    with pytest.raises(types.TypeValidationError, match="not a notification in MCP 2026"):
        types.structure_notification("notifications/initialized", {}, "2026-07-28")
    with pytest.raises(ValueError, match="no types for MCP revision '1999-01-01'"):
        types.namespace("1999-01-01")


# -- the wire conventions --------------------------------------------------------------------


def test_camel_case_on_the_wire_snake_case_in_python() -> None:
    v = types.namespace("2025-11-25")
    result = v.CallToolResult(content=[v.TextContent(text="hi")], is_error=True,
                              structured_content={"a": 1}, meta={"k": 1})
    assert types.unstructure(result) == {
        "content": [{"type": "text", "text": "hi"}], "isError": True,
        "structuredContent": {"a": 1}, "_meta": {"k": 1},
    }


def test_absent_optional_fields_are_omitted_and_null_reads_as_absent() -> None:
    v = types.namespace("2025-06-18")
    assert types.unstructure(v.Implementation(name="n", version="1")) == \
        {"name": "n", "version": "1"}
    assert types.structure({"name": "n", "version": "1", "title": None}, v.Implementation) == \
        v.Implementation(name="n", version="1")


def test_required_nullable_field_is_sent_as_null() -> None:
    v = types.namespace("2025-11-25")
    task = v.Task(task_id="t", status="working", created_at="a", last_updated_at="b", ttl=None)
    assert types.unstructure(task)["ttl"] is None
    assert types.structure(types.unstructure(task), v.Task) == task


def test_constants_have_defaults_and_are_sent() -> None:
    v = types.namespace("2026-07-28")
    assert types.unstructure(v.TextContent(text="x")) == {"type": "text", "text": "x"}
    assert types.unstructure(v.CallToolResult(content=[]))["resultType"] == "complete"
    assert v.InputRequiredResult().result_type == "input_required"
    request = v.CallToolRequest(id=1, params=v.CallToolRequestParams(
        name="t", meta=v.RequestMetaObject(protocol_version="2026-07-28",
                                           client_capabilities=v.ClientCapabilities())))
    assert types.unstructure(request) == {
        "jsonrpc": "2.0", "method": "tools/call", "id": 1,
        "params": {"name": "t", "_meta": {
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
    }


def test_meta_is_kept() -> None:
    wire = {"name": "echo", "_meta": {"progressToken": "p1", "com.example/trace": [1, 2]}}
    params = types.structure_request("tools/call", wire, "2025-06-18")
    assert params.meta.progress_token == "p1"
    assert params.meta.extra == {"com.example/trace": [1, 2]}
    assert types.unstructure(params) == wire


def test_unknown_keys_round_trip_at_every_level() -> None:
    wire = {
        "content": [{"type": "text", "text": "hi", "futureField": {"x": 1},
                     "annotations": {"priority": 0.5, "newHint": True}}],
        "structuredContent": {"a": 1},
        "someNewTopLevelKey": [1, "two"],
    }
    result = types.structure_result("tools/call", wire, "2025-06-18")
    assert result.extra == {"someNewTopLevelKey": [1, "two"]}
    assert result.content[0].extra == {"futureField": {"x": 1}}
    assert result.content[0].annotations.extra == {"newHint": True}
    assert types.unstructure(result) == wire


def test_a_field_wins_over_a_stray_extra_key() -> None:
    v = types.namespace("2025-06-18")
    content = v.TextContent(text="real", extra={"text": "stray", "other": 1})
    assert types.unstructure(content) == {"type": "text", "text": "real", "other": 1}


def test_content_blocks_are_resolved_by_type() -> None:
    v = types.namespace("2025-06-18")
    blocks = types.structure([
        {"type": "text", "text": "t"},
        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///a", "name": "a"},
        {"type": "resource", "resource": {"uri": "file:///a", "blob": "aGk="}},
        {"type": "resource", "resource": {"uri": "file:///a", "text": "hi"}},
    ], list[v.ContentBlock])
    assert [type(b).__name__ for b in blocks] == [
        "TextContent", "ImageContent", "AudioContent", "ResourceLink", "EmbeddedResource",
        "EmbeddedResource"]
    assert type(blocks[4].resource).__name__ == "BlobResourceContents"
    assert type(blocks[5].resource).__name__ == "TextResourceContents"


def test_elicitation_params_resolved_by_their_keys() -> None:
    form = types.structure_request("elicitation/create", {
        "message": "name?", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string"}, "n": {"type": "number"},
            "c": {"type": "string", "enum": ["a", "b"]}}}}, "2025-11-25")
    assert type(form).__name__ == "ElicitRequestFormParams"
    props = form.requested_schema.properties
    assert [type(props[k]).__name__ for k in ("name", "n", "c")] == [
        "StringSchema", "NumberSchema", "UntitledSingleSelectEnumSchema"]
    url = types.structure_request("elicitation/create", {
        "mode": "url", "message": "log in", "url": "https://x", "elicitationId": "e"},
        "2025-11-25")
    assert type(url).__name__ == "ElicitRequestURLParams"


def test_numbers() -> None:
    v = types.namespace("2025-06-18")
    # An integral float is an integer (JSON does not tell them apart); a bool is not.
    assert types.structure({"progressToken": 1, "progress": 2.0, "total": 3},
                           v.ProgressNotificationParams).total == 3
    assert types.structure({"priority": 1}, v.Annotations).priority == 1  # kept an int
    with pytest.raises(types.TypeValidationError, match=r"\$\.progress: expected a number"):
        types.structure({"progressToken": 1, "progress": True}, v.ProgressNotificationParams)
    with pytest.raises(types.TypeValidationError, match=r"expected string \| integer, got a n"):
        types.structure({"progressToken": 1.5, "progress": 1}, v.ProgressNotificationParams)


# -- errors ----------------------------------------------------------------------------------


def test_errors_name_every_bad_field_by_its_json_path() -> None:
    bad = {"content": [{"type": "text", "text": 1}, {"type": "video"},
                       {"type": "image", "data": "x"}], "isError": "no"}
    with pytest.raises(types.TypeValidationError) as info:
        types.structure_result("tools/call", bad, "2025-06-18")
    error = info.value
    assert isinstance(error, ValueError)
    assert error.what == "CallToolResult"
    paths = dict(error.errors)
    assert paths["result.content[0].text"] == "expected a string, got an integer"
    assert "type='video' is none of 'text', 'image'" in paths["result.content[1]"]
    assert paths["result.content[2].mimeType"] == "required field missing"
    assert paths["result.isError"] == "expected a boolean, got a string"
    assert str(error).startswith("invalid CallToolResult: result.content[0].text: expected")


@pytest.mark.parametrize(("data", "path", "message"), [
    ("x", "params", "expected an object, got a string"),
    ({}, "params.name", "required field missing"),
    ({"name": 3}, "params.name", "expected a string, got an integer"),
    ({"name": "t", "arguments": []}, "params.arguments", "expected an object, got an array"),
    ({"name": "t", "_meta": {"progressToken": []}}, "params._meta.progressToken",
     "expected string | integer, got an array"),
])
def test_error_paths(data: Any, path: str, message: str) -> None:
    with pytest.raises(types.TypeValidationError) as info:
        types.structure_request("tools/call", data, "2025-06-18")
    assert (path, message) in info.value.errors


def test_a_missing_discriminator_is_named() -> None:
    with pytest.raises(types.TypeValidationError) as info:
        types.structure_result("tools/call", {"content": [{"text": "x"}]}, "2025-06-18")
    [(path, message)] = info.value.errors
    assert path == "result.content[0]"
    assert message.startswith("type missing: one of 'text', 'image'")


def test_schema_bounds_are_checked_when_structuring_and_building() -> None:
    v = types.namespace("2025-06-18")
    with pytest.raises(types.TypeValidationError) as info:
        types.structure({"type": "text", "text": "x", "annotations": {"priority": 2}},
                        v.TextContent)
    assert info.value.errors == (("$.annotations.priority", "must be at most 1, got 2"),)
    with pytest.raises(FieldValueError, match="priority: must be at least 0"):
        v.Annotations(priority=-0.5)
    v26 = types.namespace("2026-07-28")
    with pytest.raises(FieldValueError, match="values: must have at most 100 items"):
        v26.Completion(values=["x"] * 101)


def test_literal_mismatch() -> None:
    v = types.namespace("2025-06-18")
    with pytest.raises(types.TypeValidationError) as info:
        types.structure({"type": "image", "text": "x"}, v.TextContent)
    assert info.value.errors == (("$.type", "expected 'text', got 'image'"),)


# -- examples --------------------------------------------------------------------------------


def _schema_examples() -> Iterator[tuple[str, str, Any]]:
    """(revision, definition, example) for every ``examples`` list in the schemas."""
    for revision in REVISIONS:
        schema = schemas.load(revision)
        for name, definition in schema["$defs" if "$defs" in schema else "definitions"].items():
            for example in definition.get("examples", []):
                yield revision, name, example


def test_schema_examples_structure() -> None:
    # The schemas of the five revisions carry no ``examples`` today; this keeps them honest
    # the day they do.
    for revision, name, example in _schema_examples():
        tp = getattr(types.namespace(revision), name)
        assert types.unstructure(types.structure(example, tp)) == example


#: Messages as the specification shows them (basic/lifecycle, server/tools, server/resources,
#: client/sampling, client/elicitation), as (revision, kind, method, payload).
SPEC_MESSAGES = [
    ("2024-11-05", "request", "initialize", {
        "protocolVersion": "2024-11-05",
        "capabilities": {"roots": {"listChanged": True}, "sampling": {}},
        "clientInfo": {"name": "ExampleClient", "version": "1.0.0"}}),
    ("2024-11-05", "result", "initialize", {
        "protocolVersion": "2024-11-05",
        "capabilities": {"logging": {}, "prompts": {"listChanged": True},
                         "resources": {"subscribe": True, "listChanged": True},
                         "tools": {"listChanged": True}},
        "serverInfo": {"name": "ExampleServer", "version": "1.0.0"}}),
    ("2025-06-18", "result", "tools/list", {
        "tools": [{"name": "get_weather", "title": "Weather Information Provider",
                   "description": "Get current weather information for a location",
                   "inputSchema": {"type": "object", "properties": {
                       "location": {"type": "string", "description": "City name or zip"}},
                       "required": ["location"]}}],
        "nextCursor": "next-page-cursor"}),
    ("2025-06-18", "result", "tools/call", {
        "content": [{"type": "text", "text": "{\"temperature\": 22.5}"}],
        "structuredContent": {"temperature": 22.5, "conditions": "Partly cloudy"}}),
    ("2025-06-18", "result", "resources/read", {
        "contents": [{"uri": "file:///project/src/main.rs", "name": "main.rs",
                      "mimeType": "text/x-rust", "text": "fn main() {}"}]}),
    ("2025-06-18", "request", "sampling/createMessage", {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Capital?"}}],
        "modelPreferences": {"hints": [{"name": "claude-3-sonnet"}], "intelligencePriority": 0.8,
                             "speedPriority": 0.5},
        "systemPrompt": "You are a helpful assistant.", "maxTokens": 100}),
    ("2025-06-18", "result", "elicitation/create", {
        "action": "accept", "content": {"name": "octocat", "email": "o@github.com"}}),
    ("2025-11-25", "request", "tools/call", {
        "name": "get_weather", "arguments": {"city": "New York"}, "task": {"ttl": 60000}}),
    ("2025-11-25", "notification", "notifications/elicitation/complete",
     {"elicitationId": "550e8400-e29b-41d4-a716-446655440000"}),
    ("2026-07-28", "result", "server/discover", {
        "resultType": "complete", "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {"listChanged": True}}, "ttlMs": 0, "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}),
    ("2026-07-28", "result", "tools/call", {
        "resultType": "input_required", "requestState": "opaque",
        "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Sure?", "requestedSchema": {
                "type": "object", "properties": {"ok": {"type": "boolean"}}}}}}}),
]


@pytest.mark.parametrize(("revision", "kind", "method", "payload"), SPEC_MESSAGES,
                         ids=[f"{r}-{m}-{k}" for r, k, m, _ in SPEC_MESSAGES])
def test_spec_examples(revision: str, kind: str, method: str, payload: dict[str, Any]) -> None:
    structure = {"request": types.structure_request, "result": types.structure_result,
                 "notification": types.structure_notification}[kind]
    value = structure(method, payload, revision)
    assert types.unstructure(value) == payload


# -- packaging -------------------------------------------------------------------------------


def test_hypothesis_is_not_imported_by_the_types_and_the_core_not_by_the_types() -> None:
    code = (
        "import sys, mcp_sansio\n"
        "assert 'mcp_sansio.types' not in sys.modules\n"
        "from mcp_sansio import types\n"
        "types.structure_request('ping', None, '2025-06-18')\n"
        "assert 'hypothesis' not in sys.modules, 'hypothesis imported'\n"
        "assert 'mcp_sansio.types.v2026_07_28' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_namespaces_are_attributes_of_the_package() -> None:
    assert types.v2025_11_25 is types.namespace("2025-11-25")
    with pytest.raises(AttributeError):
        types.v1999  # noqa: B018
