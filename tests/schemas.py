"""Validation of emitted messages against the official MCP JSON schemas.

The schemas are read from a folder outside the repository (never copied into it): the
environment variable ``MCP_SCHEMA_DIR`` names it, and by default it is ``../shared/mcp-schema``
beside the repository root, with one ``<revision>/schema.json`` per revision. Each message is
checked twice: its JSON-RPC envelope against ``JSONRPCMessage`` (or the 2025-03-26 batch
types), and its params/result against the method's own definition.

A clone with nothing beside it has no schemas. Then the first use of them in a test skips that
test (``pytest.skip``, always from the one place below, with one reason), the conftest counts
those skips and prints one summary line saying how to enable them -- so every test that does
not validate still runs. CI sets ``MCP_REQUIRE_SCHEMAS=1`` (``.ci/run``): there a missing
schema fails the run instead (the conftest refuses to start, and a use here fails the test).
The skip happens at the first use, not at collection, because most tests of the modules that
import this one never touch a schema.

One documented exception: an error answering a message whose id could not be read carries
``"id": null`` as JSON-RPC 2.0 section 5 requires, which no MCP schema admits (they model only
MCP's own messages; 2025-11-25 makes the id optional instead). Such errors are validated with
a placeholder id.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mcp_sansio import KNOWN_REVISIONS

ROOT = Path(__file__).resolve().parents[1]
#: Where the schemas are when ``MCP_SCHEMA_DIR`` is unset: the layout of the project's CI
#: (the spec's ``schema/`` folder checked out beside the repository).
DEFAULT_SCHEMA_DIR = ROOT.parent / "shared" / "mcp-schema"
SCHEMA_DIR_ENV = "MCP_SCHEMA_DIR"
REQUIRE_ENV = "MCP_REQUIRE_SCHEMAS"
#: The revisions the tests validate against: the folder counts as present only when it has
#: every one of them (a partial folder would fail tests with FileNotFoundError instead).
REVISIONS = KNOWN_REVISIONS


def configured_root() -> Path:
    """The folder the schemas are read from: ``$MCP_SCHEMA_DIR``, or the default."""
    value = os.environ.get(SCHEMA_DIR_ENV, "").strip()
    return Path(value).expanduser().resolve() if value else DEFAULT_SCHEMA_DIR


def missing(root: Path | None = None) -> list[str]:
    """The revisions whose ``schema.json`` is not in ``root`` (empty: all present)."""
    root = configured_root() if root is None else root
    return [rev for rev in REVISIONS if not (root / rev / "schema.json").is_file()]


def required() -> bool:
    """True when the run must have the schemas (CI): a missing one is then a failure."""
    return os.environ.get(REQUIRE_ENV, "").strip() not in ("", "0")


def absent_reason(root: Path | None = None) -> str:
    """Why the schema tests cannot run, and how to let them run (one line)."""
    root = configured_root() if root is None else root
    return (f"official MCP schemas not found at {root} (missing: {', '.join(missing(root))}); "
            f"set {SCHEMA_DIR_ENV} to a folder with <revision>/schema.json from the spec "
            f"repository's schema/ folder, or put it at ../shared/mcp-schema beside the repo")


#: The skip reason every schema-less test carries: the conftest counts skips by it.
SKIP_PREFIX = "official MCP schemas not found"
#: Which result definition answers which request method (test-side knowledge).
RESULT_TYPES = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "logging/setLevel": "EmptyResult",
    "completion/complete": "CompleteResult",
    "sampling/createMessage": "CreateMessageResult",
    "roots/list": "ListRootsResult",
    "elicitation/create": "ElicitResult",
    "server/discover": "DiscoverResult",
    "subscriptions/listen": "SubscriptionsListenResult",
}


def schema_root() -> Path:
    """The schema folder; skips the calling test when it is absent (fails it in CI)."""
    root = configured_root()
    if missing(root):
        if required():
            pytest.fail(f"{REQUIRE_ENV} is set: {absent_reason(root)}", pytrace=False)
        # allow_module_level: a module that reads the schemas while it is collected (its
        # parameters come from them) is skipped whole; in a test, this skips the test.
        pytest.skip(absent_reason(root), allow_module_level=True)
    return root


@functools.cache
def load(revision: str) -> dict[str, Any]:
    return json.loads((schema_root() / revision / "schema.json").read_text())


def _defs_key(schema: dict[str, Any]) -> str:
    return "$defs" if "$defs" in schema else "definitions"


@functools.cache
def _validator(revision: str, name: str) -> Any:
    schema = load(revision)
    key = _defs_key(schema)
    wrapper = {"$schema": schema.get("$schema"), key: schema[key], "$ref": f"#/{key}/{name}"}
    cls = jsonschema.validators.validator_for(wrapper)
    return cls(wrapper)


@functools.cache
def _by_method(revision: str) -> dict[tuple[str, str], str]:
    """(kind, method) -> definition name, from the schema's own unions."""
    schema = load(revision)
    defs = schema[_defs_key(schema)]
    out: dict[tuple[str, str], str] = {}
    for union, kind in (
        ("ClientRequest", "request"), ("ServerRequest", "request"),
        ("ClientNotification", "notification"), ("ServerNotification", "notification"),
    ):
        for ref in defs.get(union, {}).get("anyOf", []):
            name = ref["$ref"].rsplit("/", 1)[-1]
            method = defs[name]["properties"]["method"].get("const")
            if method is not None:
                out[kind, method] = name
    return out


def definition_names(revision: str) -> set[str]:
    schema = load(revision)
    return set(schema[_defs_key(schema)])


def validate(revision: str, name: str, instance: Any) -> None:
    _validator(revision, name).validate(instance)


def validate_message(revision: str, message: Any, methods: dict[Any, str]) -> None:
    """Validate one emitted message (or batch). ``methods`` maps the ids of requests seen so
    far (in the other direction) to their method, to find the result type of a response."""
    if isinstance(message, list):
        assert revision == "2025-03-26", "batches exist only in 2025-03-26"
        validate(revision, "JSONRPCBatchResponse", [_envelope_view(m) for m in message])
        for item in message:
            validate_message(revision, item, methods)
        return
    validate(revision, "JSONRPCMessage", _envelope_view(message))
    if "method" in message:
        kind = "request" if "id" in message else "notification"
        name = _by_method(revision).get((kind, message["method"]))
        assert name is not None, f"{message['method']} is not a {kind} in {revision}"
        validate(revision, name, message)
    elif "result" in message:
        method = methods.get(message["id"])
        if message["result"].get("resultType") == "input_required":
            validate(revision, "InputRequiredResult", message["result"])
        elif method in RESULT_TYPES and RESULT_TYPES[method] in definition_names(revision):
            validate(revision, RESULT_TYPES[method], message["result"])


def _envelope_view(message: dict[str, Any]) -> dict[str, Any]:
    if "error" in message and message.get("id", 0) is None:
        # 2025-11-25+ make the id optional; older schemas require a RequestId, so the null
        # (which they cannot express) stands in as a placeholder for validation only.
        return {**message, "id": 0}
    return message
