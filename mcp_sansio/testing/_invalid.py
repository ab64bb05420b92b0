"""Invalid messages, each breaking exactly one rule, labelled with the answer they deserve.

Theory of operation
-------------------
:func:`invalid_messages` starts from a valid message (drawn by :mod:`._strategies`) and
breaks one rule of JSON-RPC 2.0 or MCP. The result is an :class:`Invalid`: the message, the
rule it breaks (a key of :data:`RULES`), and what a correct receiver does about it -- the
error code of its reply and the id that reply carries, or no reply at all (JSON-RPC never
answers a notification or a response).

The labels assume the receiver is *operating*: past the handshake in the handshake era
(2024-11-05 .. 2025-11-25), or serving requests in the stateless era (2026-07-28), and that
it declared the capabilities passed as ``peer_capabilities`` (``None``: every method of the
revision is assumed supported, and rules that need to know what is missing are skipped).

Where the specifications leave room, :attr:`Invalid.accepted_codes` lists every answer that
is still correct (``params`` given as an array is "Invalid Request" to JSON-RPC 2.0 and
"Invalid params" to MCP's view of params as an object), and :attr:`Invalid.requirement`
says whether the rule is a MUST of JSON-RPC 2.0/MCP or a SHOULD / documented convention.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
from hypothesis import strategies as st

from .._capabilities import ALL_METHODS, METHODS, Kind, declared, lookup, rules_for
from .._events import RequestId
from .._state import Role
from .._versions import FEATURES
from ._schemas import Schemas, bundled
from ._strategies import method_names, params, request_ids

__all__ = ["RULES", "Invalid", "Rule", "invalid_messages"]

MUST, SHOULD = "must", "should"


@attrs.frozen(kw_only=True)
class Rule:
    """One rule an invalid message can break."""

    name: str
    #: "must": JSON-RPC 2.0 or MCP require the answer; "should": a SHOULD or a convention
    #: the specification documents (its examples, its error-handling sections).
    requirement: str
    #: What the receiver does, in words.
    answer: str
    #: Where it is written.
    source: str


def _rule(name: str, requirement: str, answer: str, source: str) -> Rule:
    return Rule(name=name, requirement=requirement, answer=answer, source=source)


#: Every rule :func:`invalid_messages` breaks, by name.
RULES: dict[str, Rule] = {r.name: r for r in (
    _rule("not-json", MUST, "-32700, id null", "JSON-RPC 2.0 s. 5.1"),
    _rule("not-an-object", MUST, "-32600, id null", "JSON-RPC 2.0 s. 4, 5.1"),
    _rule("empty-batch", MUST, "-32600, id null", "JSON-RPC 2.0 s. 6"),
    _rule("batch-not-supported", SHOULD, "-32600, id null",
          "MCP: batches exist only in 2025-03-26 (changelogs)"),
    _rule("jsonrpc-version", MUST, "request: -32600 with its id; notification: nothing",
          "JSON-RPC 2.0 s. 4"),
    _rule("id-type", MUST, "-32600, id null", "JSON-RPC 2.0 s. 4; MCP: ids are strings or "
          "integers, never null"),
    _rule("method-type", MUST, "-32600 with its id", "JSON-RPC 2.0 s. 4"),
    _rule("params-type", MUST, "request: -32600 with its id; notification: nothing",
          "JSON-RPC 2.0 s. 4 (params is structured)"),
    _rule("params-array", SHOULD, "request: -32600 or -32602 with its id; notification: "
          "nothing", "MCP: params is an object (schema)"),
    _rule("request-with-result", MUST, "-32600 with its id", "JSON-RPC 2.0 s. 4, 5"),
    _rule("result-and-error", MUST, "nothing (a response is never answered)",
          "JSON-RPC 2.0 s. 5"),
    _rule("unsolicited-response", MUST, "nothing (a response is never answered)",
          "JSON-RPC 2.0 s. 5"),
    _rule("unknown-method", MUST, "request: -32601; notification: nothing",
          "JSON-RPC 2.0 s. 5.1"),
    _rule("wrong-revision-method", MUST, "-32601", "MCP: the negotiated revision's methods "
          "only (lifecycle.mdx, Operation)"),
    _rule("wrong-direction-method", MUST, "-32601", "MCP schema: ClientRequest / "
          "ServerRequest"),
    _rule("undeclared-capability", SHOULD, "-32601", "MCP: capability negotiation; the "
          "completion and roots pages answer -32601"),
    _rule("missing-param", SHOULD, "-32602", "JSON-RPC 2.0 s. 5.1; MCP schema"),
    _rule("wrong-param-type", SHOULD, "-32602", "JSON-RPC 2.0 s. 5.1; MCP schema"),
    _rule("bad-log-level", SHOULD, "-32602", "server/utilities/logging.mdx"),
    _rule("second-initialize", SHOULD, "an error (-32600)", "lifecycle.mdx: initialize MUST "
          "be the first interaction, once"),
    _rule("missing-protocol-version", MUST, "-32602", "2026-07-28 basic/versioning.mdx"),
    _rule("missing-client-capabilities", MUST, "-32602", "2026-07-28 basic/versioning.mdx"),
    _rule("unsupported-protocol-version", MUST, "-32022 with data.supported",
          "2026-07-28 basic/versioning.mdx"),
    _rule("bad-progress", MUST, "nothing (a notification is never answered)",
          "JSON-RPC 2.0 s. 4.1; utilities/progress.mdx"),
    _rule("bad-cancel", MUST, "nothing; SHOULD be ignored", "utilities/cancellation.mdx"),
)}


@attrs.frozen(kw_only=True)
class Invalid:
    """A message that breaks one rule, and what a correct receiver answers."""

    #: The message: a JSON value, or ``bytes`` for a line that is not JSON at all.
    message: Any
    #: The rule broken (a key of :data:`RULES`).
    rule: str
    #: What was broken, in words.
    description: str
    #: The code of the error the receiver should answer with; ``None``: no answer at all.
    expected_code: int | None
    #: Every code that is still a correct answer (contains ``expected_code``).
    accepted_codes: frozenset[int] = attrs.field()
    #: The id the error reply carries; ``None`` when the message's id cannot be read (the
    #: reply then has ``"id": null``, or from 2025-11-25 may leave the id out).
    reply_id: RequestId | None = None
    #: Any error code is a correct answer (only a result is wrong).
    any_code: bool = False
    #: "must" or "should" (see :class:`Rule`).
    requirement: str = MUST
    #: The revision the label is for.
    revision: str = ""

    @accepted_codes.default
    def _accepted_default(self) -> frozenset[int]:
        return frozenset() if self.expected_code is None else frozenset({self.expected_code})

    @property
    def expects_reply(self) -> bool:
        return self.expected_code is not None

    def encode(self) -> bytes:
        """The message as one line of bytes (no newline)."""
        if isinstance(self.message, bytes):
            return self.message
        return json.dumps(self.message, separators=(",", ":"), ensure_ascii=False).encode()

    def accepts(self, code: int) -> bool:
        """Whether an error reply with ``code`` is a correct answer."""
        return self.expects_reply and (self.any_code or code in self.accepted_codes)


_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_CAPS = "io.modelcontextprotocol/clientCapabilities"
_META_LEVEL = "io.modelcontextprotocol/logLevel"
_NOT_JSON = (b"{", b"{bad json", b'{"jsonrpc": "2.0", "id": 1,', b"nul", b"[1, 2",
             b'{"jsonrpc": "2.0", "method": "ping"]', b"\xff\xfe{}", b"'single quotes'")
_SCALARS = (1, -7, 2.5, "ping", True, None)
_BAD_IDS: tuple[Any, ...] = (None, True, False, 1.5, -0.5, [1], {"id": 1})
_BAD_METHODS: tuple[Any, ...] = (5, None, True, ["ping"], {"name": "ping"})
_BAD_STRUCTURE: tuple[Any, ...] = ("x", 3, True, None, 2.5)
_CONFUSERS: tuple[Any, ...] = (12345, "text", True, None, [1], {"x": 1}, 1.5)


def _stateless(revision: str) -> bool:
    feature = FEATURES.get(revision)
    return feature is not None and not feature.handshake


def _role(value: Role | str) -> Role:
    return value if isinstance(value, Role) else Role(value)


class _Context:
    """What the rules need to know about the revision, sender and receiver."""

    def __init__(self, revision: str, sender: Role, peer_capabilities: Mapping[str, Any] | None,
                 ids: st.SearchStrategy[RequestId], schemas: Schemas) -> None:
        self.revision = revision
        self.sender = sender
        self.caps = peer_capabilities
        self.ids = ids
        self.schemas = schemas
        self.stateless = _stateless(revision) and sender is Role.CLIENT
        self.supported = [m for m in method_names(revision, sender=sender)
                          if m != "initialize" and self.receiver_supports(m)]
        self.notifications = method_names(revision, sender=sender, kind="notification")

    def receiver_supports(self, method: str) -> bool:
        rule = lookup(method, self.revision)
        if method.startswith("tasks/") and self.caps is not None:
            # 2025-11-25 tasks are experimental: only a receiver that declared ``tasks``
            # implements them (basic/utilities/tasks.mdx).
            return declared(self.caps, "tasks")
        if rule is None or rule.capability is None:
            return True
        if self.revision in rule.ungated_in:
            # No capability says whether it is supported (completion/complete in
            # 2024-11-05): only assume so when nothing is known.
            return self.caps is None
        return self.caps is None or declared(self.caps, rule.capability)

    def invalid(self, message: Any, rule: str, description: str, code: int | None,
                reply_id: RequestId | None = None, **kw: Any) -> Invalid:
        return Invalid(message=message, rule=rule, description=description,
                       expected_code=code, reply_id=reply_id,
                       requirement=RULES[rule].requirement, revision=self.revision, **kw)

    def meta(self) -> dict[str, Any]:
        """A valid stateless ``_meta`` (2026-07-28), or nothing in the handshake era."""
        if not self.stateless:
            return {}
        return {_META_VERSION: self.revision, _META_CAPS: {}}

    def with_meta(self, body: dict[str, Any] | None) -> dict[str, Any] | None:
        if not self.stateless:
            return body
        body = dict(body or {})
        body["_meta"] = {**(body.get("_meta") or {}), **self.meta()}
        return body


@st.composite
def _request(draw: st.DrawFn, ctx: _Context, methods: list[str] | None = None
             ) -> dict[str, Any]:
    """A valid request the receiver supports."""
    method = draw(st.sampled_from(methods or ctx.supported))
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(ctx.ids), "method": method}
    body = draw(params(method, ctx.revision, schemas=ctx.schemas))
    if body is not None:
        message["params"] = body
    return message


@st.composite
def _notification(draw: st.DrawFn, ctx: _Context) -> dict[str, Any]:
    method = draw(st.sampled_from(ctx.notifications))
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    body = draw(params(method, ctx.revision, schemas=ctx.schemas))
    if body is not None:
        message["params"] = body
    return message


# -- the rules ----------------------------------------------------------------------------------


@st.composite
def _not_json(draw: st.DrawFn, ctx: _Context) -> Invalid:
    line = draw(st.sampled_from(_NOT_JSON))
    return ctx.invalid(line, "not-json", "a line that is not JSON", -32700)


@st.composite
def _not_an_object(draw: st.DrawFn, ctx: _Context) -> Invalid:
    value = draw(st.sampled_from(_SCALARS))
    return ctx.invalid(value, "not-an-object", f"{_json(value)} instead of an object", -32600)


def _empty_batch(ctx: _Context) -> st.SearchStrategy[Invalid]:
    return st.just(ctx.invalid([], "empty-batch", "an empty array", -32600))


@st.composite
def _batch(draw: st.DrawFn, ctx: _Context) -> Invalid:
    items = draw(st.lists(_request(ctx), min_size=1, max_size=2))
    return ctx.invalid(items, "batch-not-supported",
                       f"a batch, which {ctx.revision} does not have", -32600)


@st.composite
def _jsonrpc_version(draw: st.DrawFn, ctx: _Context) -> Invalid:
    notify = bool(ctx.notifications) and draw(st.booleans())
    message = draw(_notification(ctx)) if notify else draw(_request(ctx))
    wrong = draw(st.sampled_from(["1.0", "2", 2.0, None, "missing"]))
    if wrong == "missing":
        del message["jsonrpc"]
    else:
        message["jsonrpc"] = wrong
    what = f"'jsonrpc' {'left out' if wrong == 'missing' else f'set to {_json(wrong)}'}"
    if notify:
        return ctx.invalid(message, "jsonrpc-version", f"a notification with {what}", None)
    return ctx.invalid(message, "jsonrpc-version", f"a request with {what}", -32600,
                       message["id"])


@st.composite
def _id_type(draw: st.DrawFn, ctx: _Context) -> Invalid:
    message = draw(_request(ctx))
    message["id"] = draw(st.sampled_from(_BAD_IDS))
    return ctx.invalid(message, "id-type", f"a request whose id is {_json(message['id'])}",
                       -32600)


@st.composite
def _method_type(draw: st.DrawFn, ctx: _Context) -> Invalid:
    message = draw(_request(ctx))
    message["method"] = draw(st.sampled_from(_BAD_METHODS))
    return ctx.invalid(message, "method-type", f"a request whose method is "
                       f"{_json(message['method'])}", -32600, message["id"])


@st.composite
def _params_type(draw: st.DrawFn, ctx: _Context, array: bool) -> Invalid:
    notify = bool(ctx.notifications) and draw(st.booleans())
    message = draw(_notification(ctx)) if notify else draw(_request(ctx))
    value: Any = [message.get("params") or 1] if array else draw(st.sampled_from(
        _BAD_STRUCTURE))
    message["params"] = value
    rule = "params-array" if array else "params-type"
    what = "params given as an array" if array else f"params {_json(value)}"
    if notify:
        return ctx.invalid(message, rule, f"a notification with {what}", None)
    if array:
        return ctx.invalid(message, rule, f"a request with {what}", -32600, message["id"],
                           accepted_codes=frozenset({-32600, -32602}))
    return ctx.invalid(message, rule, f"a request with {what}", -32600, message["id"])


@st.composite
def _request_with_result(draw: st.DrawFn, ctx: _Context) -> Invalid:
    message = draw(_request(ctx))
    key = draw(st.sampled_from(["result", "error"]))
    message[key] = {} if key == "result" else {"code": -32603, "message": "x"}
    return ctx.invalid(message, "request-with-result", f"a request that also carries {key!r}",
                       -32600, message["id"])


@st.composite
def _result_and_error(draw: st.DrawFn, ctx: _Context) -> Invalid:
    message = {"jsonrpc": "2.0", "id": draw(ctx.ids), "result": {},
               "error": {"code": -32603, "message": "both"}}
    return ctx.invalid(message, "result-and-error", "a response with both result and error",
                       None)


@st.composite
def _unsolicited_response(draw: st.DrawFn, ctx: _Context) -> Invalid:
    error = draw(st.booleans())
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(ctx.ids)}
    if error:
        message["error"] = {"code": -32603, "message": "nobody asked"}
    else:
        message["result"] = {}
    return ctx.invalid(message, "unsolicited-response", "a response to a request never sent",
                       None)


@st.composite
def _unknown_method(draw: st.DrawFn, ctx: _Context) -> Invalid:
    name = draw(st.sampled_from(["kit/no-such-method", "tools/frobnicate", "Ping", "x"]))
    notify = draw(st.booleans())
    if notify:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/" + name}
        if ctx.stateless:
            message["params"] = {"_meta": ctx.meta()}
        return ctx.invalid(message, "unknown-method", "an unknown notification", None)
    message = {"jsonrpc": "2.0", "id": draw(ctx.ids), "method": name}
    if ctx.stateless:
        message["params"] = {"_meta": ctx.meta()}
    return ctx.invalid(message, "unknown-method", f"a request for unknown method {name!r}",
                       -32601, message["id"])


def _other_revision_methods(ctx: _Context) -> list[str]:
    exists = {rule.method for rule in rules_for(ctx.revision)}
    out = {rule.method for rule in METHODS if rule.kind is Kind.REQUEST
           and rule.method not in exists}
    if _stateless(ctx.revision):
        # A dual-era server answers initialize; tasks/* live on as an extension
        # (io.modelcontextprotocol/tasks) that a server may implement.
        out = {m for m in out if m != "initialize" and not m.startswith("tasks/")}
    return sorted(out)


def _wrong_direction_methods(ctx: _Context) -> list[str]:
    own = set(method_names(ctx.revision, sender=ctx.sender))
    return sorted({rule.method for rule in rules_for(ctx.revision)
                   if rule.kind is not Kind.NOTIFICATION and rule.method not in own
                   and rule.extension is None})  # an extension's rows: see method_names


@st.composite
def _method_elsewhere(draw: st.DrawFn, ctx: _Context, rule: str, methods: list[str]) -> Invalid:
    method = draw(st.sampled_from(methods))
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(ctx.ids), "method": method}
    body = ctx.with_meta(None)
    if body is not None:
        message["params"] = body
    what = (f"{method}, which {ctx.revision} does not have" if rule == "wrong-revision-method"
            else f"{method}, which a {ctx.sender.value} does not send")
    return ctx.invalid(message, rule, f"a request for {what}", -32601, message["id"])


def _undeclared_methods(ctx: _Context) -> list[str]:
    """Methods gated by a capability the receiver did not declare (not those no capability
    gates in this revision: completion/complete in 2024-11-05)."""
    if ctx.caps is None:
        return []
    out = []
    for method in method_names(ctx.revision, sender=ctx.sender):
        rule = lookup(method, ctx.revision)
        if (rule is not None and rule.capability is not None
                and ctx.revision not in rule.ungated_in
                and not declared(ctx.caps, rule.capability)):
            out.append(method)
    return out


@st.composite
def _undeclared(draw: st.DrawFn, ctx: _Context, methods: list[str]) -> Invalid:
    message = draw(_request(ctx, methods))
    rule = lookup(message["method"], ctx.revision)
    capability = rule.capability if rule is not None else "?"
    return ctx.invalid(message, "undeclared-capability",
                       f"{message['method']} to a peer that did not declare {capability!r}",
                       -32601, message["id"])


def _required_fields(ctx: _Context, method: str) -> dict[str, Any]:
    """The required members of ``method``'s params (other than ``_meta``) and their
    schemas."""
    schema = ctx.schemas.resolve(ctx.revision, ctx.schemas.params_definition(
        ctx.revision, "request", method))
    if not isinstance(schema, Mapping):
        return {}
    props = schema.get("properties", {})
    return {name: props.get(name, True) for name in schema.get("required", [])
            if name != "_meta"}


def _with_required(ctx: _Context) -> list[str]:
    return [m for m in ctx.supported if _required_fields(ctx, m)]


def _typed_required(ctx: _Context, method: str) -> dict[str, set[str]]:
    """The required members of ``method``'s params whose JSON types are known."""
    out: dict[str, set[str]] = {}
    for name, schema in _required_fields(ctx, method).items():
        types = _json_types(ctx, schema)
        if types:
            out[name] = types
    return out


def _with_typed_required(ctx: _Context) -> list[str]:
    return [m for m in ctx.supported if _typed_required(ctx, m)]


def _json_types(ctx: _Context, node: Any, depth: int = 0) -> set[str] | None:
    """The JSON types ``node`` admits (None: any)."""
    node = ctx.schemas.resolve(ctx.revision, node)
    if not isinstance(node, Mapping) or depth > 8:
        return None
    if "const" in node:
        return {_type_of(node["const"])}
    if "enum" in node:
        return {_type_of(v) for v in node["enum"]}
    for key in ("anyOf", "oneOf"):
        if key in node:
            out: set[str] = set()
            for option in node[key]:
                found = _json_types(ctx, option, depth + 1)
                if found is None:
                    return None
                out |= found
            return out
    types = node.get("type")
    if types is None:
        return None
    found = set(types) if isinstance(types, list) else {types}
    if "number" in found:
        found.add("integer")
    return found


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


@st.composite
def _missing_param(draw: st.DrawFn, ctx: _Context, methods: list[str]) -> Invalid:
    message = draw(_request(ctx, methods))
    fields = sorted(_required_fields(ctx, message["method"]))
    name = draw(st.sampled_from(fields))
    body = dict(message.get("params") or {})
    body.pop(name, None)
    message["params"] = body
    return ctx.invalid(message, "missing-param",
                       f"{message['method']} without its required {name!r}", -32602,
                       message["id"])


@st.composite
def _wrong_param_type(draw: st.DrawFn, ctx: _Context, methods: list[str]) -> Invalid:
    message = draw(_request(ctx, methods))
    fields = _typed_required(ctx, message["method"])
    name = draw(st.sampled_from(sorted(fields)))
    choices = [v for v in _CONFUSERS if _type_of(v) not in fields[name]]
    value = draw(st.sampled_from(choices))
    message["params"] = {**(message.get("params") or {}), name: value}
    return ctx.invalid(message, "wrong-param-type",
                       f"{message['method']} with {name!r} set to {_json(value)}", -32602,
                       message["id"])


@st.composite
def _bad_log_level(draw: st.DrawFn, ctx: _Context) -> Invalid:
    level = draw(st.sampled_from(["verbose", "INFO", "", "trace"]))
    if ctx.stateless:
        message = draw(_request(ctx))
        body = dict(message.get("params") or {})
        body["_meta"] = {**body.get("_meta", {}), _META_LEVEL: level}
        message["params"] = body
        what = f"{message['method']} asking for log level {level!r}"
    else:
        message = {"jsonrpc": "2.0", "id": draw(ctx.ids), "method": "logging/setLevel",
                   "params": {"level": level}}
        what = f"logging/setLevel to {level!r}"
    return ctx.invalid(message, "bad-log-level", what, -32602, message["id"])


@st.composite
def _second_initialize(draw: st.DrawFn, ctx: _Context) -> Invalid:
    message = {"jsonrpc": "2.0", "id": draw(ctx.ids), "method": "initialize",
               "params": draw(params("initialize", ctx.revision, schemas=ctx.schemas))}
    return ctx.invalid(message, "second-initialize", "initialize again, after the handshake",
                       -32600, message["id"], any_code=True)


@st.composite
def _stateless_meta(draw: st.DrawFn, ctx: _Context, rule: str) -> Invalid:
    message = draw(_request(ctx))
    meta = dict(message["params"]["_meta"])
    if rule == "missing-protocol-version":
        del meta[_META_VERSION]
        what, code = "without _meta protocolVersion", -32602
    elif rule == "missing-client-capabilities":
        del meta[_META_CAPS]
        what, code = "without _meta clientCapabilities", -32602
    else:
        meta[_META_VERSION] = draw(st.sampled_from(["1999-01-01", "2024-11-05", "latest"]))
        what, code = f"for protocol version {meta[_META_VERSION]!r}", -32022
    message["params"] = {**message["params"], "_meta": meta}
    return ctx.invalid(message, rule, f"{message['method']} {what}", code, message["id"])


@st.composite
def _bad_progress(draw: st.DrawFn, ctx: _Context) -> Invalid:
    token = draw(st.sampled_from(["kit-unknown-token", 987654321]))
    progress = draw(st.sampled_from([1, 0.5, "half", None]))
    body: dict[str, Any] = {"progressToken": token, "progress": progress}
    message = {"jsonrpc": "2.0", "method": "notifications/progress", "params": body}
    return ctx.invalid(message, "bad-progress",
                       f"progress {_json(progress)} for an unknown token", None)


@st.composite
def _bad_cancel(draw: st.DrawFn, ctx: _Context) -> Invalid:
    target = draw(st.sampled_from(["kit-never-sent", 987654321, None]))
    body: dict[str, Any] = {"reason": "kit"}
    if target is not None:
        body["requestId"] = target
    message = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": body}
    what = "no request id" if target is None else f"request {target!r}, never sent"
    return ctx.invalid(message, "bad-cancel", f"a cancellation of {what}", None)


def invalid_messages(
    revision: str,
    *,
    sender: Role | str = Role.CLIENT,
    peer_capabilities: Mapping[str, Any] | None = None,
    ids: st.SearchStrategy[RequestId] | None = None,
    rules: Iterable[str] | None = None,
    schemas: Schemas | None = None,
) -> st.SearchStrategy[Invalid]:
    """Messages that break one rule each, as ``sender`` would send them to an operating
    receiver in ``revision``, labelled with the answer they deserve (:class:`Invalid`).

    :param peer_capabilities: what the receiver declared. Known, it limits the valid
        messages the breakage starts from to methods the receiver supports, and enables the
        ``undeclared-capability`` rule.
    :param ids: the ids to give messages whose id stays readable (default: any valid id).
    :param rules: only these rules (names from :data:`RULES`).
    """
    role = _role(sender)
    ctx = _Context(revision, role, peer_capabilities, request_ids() if ids is None else ids,
                   bundled() if schemas is None else schemas)
    options: dict[str, st.SearchStrategy[Invalid]] = {
        "not-json": _not_json(ctx),
        "not-an-object": _not_an_object(ctx),
        "empty-batch": _empty_batch(ctx),
        "unsolicited-response": _unsolicited_response(ctx),
        "result-and-error": _result_and_error(ctx),
        "unknown-method": _unknown_method(ctx),
    }
    if ctx.supported:
        options.update({
            "jsonrpc-version": _jsonrpc_version(ctx),
            "id-type": _id_type(ctx),
            "method-type": _method_type(ctx),
            "params-type": _params_type(ctx, array=False),
            "params-array": _params_type(ctx, array=True),
            "request-with-result": _request_with_result(ctx),
        })
        if not FEATURES[revision].batching:
            options["batch-not-supported"] = _batch(ctx)
    elsewhere = [m for m in _other_revision_methods(ctx) if m in ALL_METHODS]
    if elsewhere:
        options["wrong-revision-method"] = _method_elsewhere(ctx, "wrong-revision-method",
                                                             elsewhere)
    wrong_way = _wrong_direction_methods(ctx)
    if wrong_way:
        options["wrong-direction-method"] = _method_elsewhere(ctx, "wrong-direction-method",
                                                              wrong_way)
    undeclared = _undeclared_methods(ctx)
    if undeclared:
        options["undeclared-capability"] = _undeclared(ctx, undeclared)
    required = _with_required(ctx)
    if required:
        options["missing-param"] = _missing_param(ctx, required)
    typed = _with_typed_required(ctx)
    if typed:
        options["wrong-param-type"] = _wrong_param_type(ctx, typed)
    if role is Role.CLIENT:
        if ctx.stateless:
            if ctx.supported:
                options["bad-log-level"] = _bad_log_level(ctx)
                for name in ("missing-protocol-version", "missing-client-capabilities",
                             "unsupported-protocol-version"):
                    options[name] = _stateless_meta(ctx, name)
        else:
            if ctx.receiver_supports("logging/setLevel"):
                options["bad-log-level"] = _bad_log_level(ctx)
            options["second-initialize"] = _second_initialize(ctx)
    if "notifications/progress" in ctx.notifications or ctx.stateless:
        options["bad-progress"] = _bad_progress(ctx)
    if "notifications/cancelled" in ctx.notifications:
        options["bad-cancel"] = _bad_cancel(ctx)
    if rules is not None:
        wanted = set(rules)
        unknown = wanted - set(RULES)
        if unknown:
            raise ValueError(f"unknown rules {sorted(unknown)}")
        options = {name: s for name, s in options.items() if name in wanted}
        if not options:
            raise ValueError(f"none of {sorted(wanted)} applies to a {role.value} in "
                             f"{revision}")
    return st.one_of(*options.values())
