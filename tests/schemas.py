"""Validation of emitted messages against the official schemas in ../shared/mcp-schema.

The schemas are read from the shared folder (never copied into the repo). Each message is
checked twice: its JSON-RPC envelope against ``JSONRPCMessage`` (or the 2025-03-26 batch
types), and its params/result against the method's own definition.

One documented exception: an error answering a message whose id could not be read carries
``"id": null`` as JSON-RPC 2.0 section 5 requires, which no MCP schema admits (they model only
MCP's own messages; 2025-11-25 makes the id optional instead). Such errors are validated with
a placeholder id.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_ROOT = Path(__file__).resolve().parents[2] / "shared" / "mcp-schema"

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
    if not SCHEMA_ROOT.is_dir():  # pragma: no cover - the repo layout guarantees it
        raise RuntimeError(f"official schemas not found at {SCHEMA_ROOT}")
    return SCHEMA_ROOT


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
