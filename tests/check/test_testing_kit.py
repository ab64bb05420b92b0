"""The testing kit, mcp_sansio.testing: strategies, invalid messages and the peer machine.

* The distilled schemas are what the generator makes from the official files, and validate
  exactly as the official files do.
* Every valid-message strategy yields messages that validate against the official schema
  (checked with tests/schemas.py, which reads ../shared directly).
* Every invalid message breaks its rule, and our own connections answer it as labelled.
* The peer machine finds nothing wrong with our own ServerConnection (in process, both eras),
  finds each deviation a tampered server commits, and lists the official Python SDK's
  deviations (tests/peers/sdk_kit_server.py over stdio) -- every one of them named below.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test
from mcp_sansio.adapters.testing_stdio import StdioTransport, load_schemas

from mcp_sansio import (
    HANDSHAKE_REVISIONS,
    KNOWN_REVISIONS,
    CancelRequested,
    ClientConnection,
    Connection,
    ErrorCode,
    Event,
    Request,
    ServerConnection,
)
from mcp_sansio import testing as kit
from tests import schemas as official
from tests.paths import ROOT

SDK_SERVER = ROOT / "tests" / "peers" / "sdk_kit_server.py"
STATELESS = "2026-07-28"
FAST = settings(max_examples=15, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))
BUNDLED = kit.Schemas()


# -- a well-behaved server: our ServerConnection and a small application ----------------------

TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {
        "text": {"type": "string"}}, "required": ["text"]}},
    {"name": "add", "inputSchema": {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
     "outputSchema": {"type": "object", "properties": {"sum": {"type": "integer"}},
                      "required": ["sum"]}},
    {"name": "slow", "inputSchema": {"type": "object", "properties": {}}},
]
PROMPTS = [{"name": "summarize", "arguments": [{"name": "topic", "required": True},
                                               {"name": "style"}]}]
RESOURCES = [{"uri": "memo://greeting", "name": "greeting"}]
GOOD_CAPS: dict[str, Any] = {"tools": {}, "prompts": {}, "resources": {}, "completions": {},
                             "logging": {}}


class KitApp:
    """Answers like a careful server: params checked against the schema (-32602), unknown
    names -32602 (-32002 for resources before 2026-07-28), ``slow`` answers two (virtual)
    seconds later with progress on the way, a cancelled call is dropped."""

    def __init__(self) -> None:
        self.transport: kit.ConnectionTransport | None = None
        self.later: list[list[Any]] = []  # [due, request id, progress token, progress sent]

    def __call__(self, conn: Connection, event: Event) -> None:
        if isinstance(event, CancelRequested):
            self.later = [item for item in self.later if item[1] != event.request_id]
            return
        if not isinstance(event, Request):
            return
        revision = conn.revision
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": event.request_id,
                                   "method": event.method}
        if event.params is not None:
            message["params"] = event.params
        name = BUNDLED.request_definition(revision, event.method)
        if name is None or BUNDLED.errors(revision, name, message):
            conn.send_error(event.request_id, ErrorCode.INVALID_PARAMS, "Invalid params")
            return
        self.answer(conn, event.request_id, event.method, event.params or {})

    def answer(self, conn: Connection, rid: Any, method: str, p: dict[str, Any]) -> None:
        if method == "tools/list":
            conn.send_response(rid, {"tools": TOOLS})
        elif method == "tools/call":
            args = p.get("arguments") or {}
            if p["name"] == "echo":
                conn.send_response(rid, {"content": [{"type": "text",
                                                      "text": str(args.get("text"))}]})
            elif p["name"] == "add":
                if not isinstance(args.get("a"), int) or not isinstance(args.get("b"), int):
                    conn.send_response(rid, {"content": [{"type": "text", "text": "a, b?"}],
                                             "isError": True})
                    return
                total = args["a"] + args["b"]
                conn.send_response(rid, {"content": [{"type": "text", "text": str(total)}],
                                         "structuredContent": {"sum": total}})
            elif p["name"] == "slow":
                assert self.transport is not None
                token = (p.get("_meta") or {}).get("progressToken")
                self.later.append([self.transport.now + 2.0, rid, token, False])
            else:
                conn.send_error(rid, ErrorCode.INVALID_PARAMS, "Unknown tool")
        elif method == "prompts/list":
            conn.send_response(rid, {"prompts": PROMPTS})
        elif method == "prompts/get":
            if p["name"] != "summarize" or "topic" not in (p.get("arguments") or {}):
                conn.send_error(rid, ErrorCode.INVALID_PARAMS, "Unknown prompt or argument")
                return
            conn.send_response(rid, {"messages": [
                {"role": "user", "content": {"type": "text", "text": "Summarize."}}]})
        elif method == "resources/list":
            conn.send_response(rid, {"resources": RESOURCES})
        elif method == "resources/templates/list":
            conn.send_response(rid, {"resourceTemplates": []})
        elif method == "resources/read":
            if p["uri"] != "memo://greeting":
                code = -32602 if conn.revision == STATELESS else ErrorCode.RESOURCE_NOT_FOUND
                conn.send_error(rid, code, "Resource not found")
                return
            conn.send_response(rid, {"contents": [{"uri": p["uri"], "text": "hello"}]})
        elif method == "completion/complete":
            conn.send_response(rid, {"completion": {"values": []}})
        elif method != "subscriptions/listen":  # a listen stays open until cancelled
            conn.send_response(rid, {})

    def tick(self, conn: Connection, now: float) -> None:
        for item in list(self.later):
            due, rid, token, reported = item
            if token is not None and not reported:
                conn.send_progress(rid, 1, 2)
                item[3] = True
            if now >= due:
                self.later.remove(item)
                conn.send_response(rid, {"content": [{"type": "text", "text": "done"}]})


def good_server(caps: dict[str, Any] | None = None) -> kit.ConnectionTransport:
    app = KitApp()
    conn = ServerConnection(info={"name": "kit-good", "version": "1"},
                            capabilities=GOOD_CAPS if caps is None else caps)
    transport = kit.ConnectionTransport(conn, app, tick=app.tick)
    app.transport = transport
    return transport


# -- the distilled schemas ------------------------------------------------------------------------


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_testing_schemas",
                                                  ROOT / ".ci" / "gen_testing_schemas.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_distilled_schemas_are_what_the_generator_makes() -> None:
    generated = _generator().render(official.schema_root())
    committed = (ROOT / "mcp_sansio" / "testing" / "_schema_data.py").read_text()
    assert generated == committed, "run .ci/gen_testing_schemas.py and commit the result"


def test_distilled_schemas_name_the_files_they_came_from() -> None:
    from mcp_sansio.testing import _schema_data

    for revision in KNOWN_REVISIONS:
        raw = (official.schema_root() / revision / "schema.json").read_bytes()
        assert _schema_data.DIGESTS[revision] == hashlib.sha256(raw).hexdigest()
        assert set(BUNDLED.definitions(revision)) == official.definition_names(revision)


@pytest.mark.parametrize("revision", KNOWN_REVISIONS)
def test_distilled_and_official_schemas_judge_alike(revision: str) -> None:
    files = load_schemas(official.schema_root())
    candidates = st.one_of(
        kit.messages(revision, sender="client"), kit.messages(revision, sender="server"),
        kit.invalid_messages(revision).map(lambda i: i.message),
        kit.invalid_messages(revision, sender="server").map(lambda i: i.message),
    )

    @FAST
    @given(candidates)
    def check(message: Any) -> None:
        names = ["JSONRPCMessage", "JSONRPCRequest", "JSONRPCNotification"]
        if isinstance(message, dict) and isinstance(message.get("method"), str):
            for kind in ("request", "notification"):
                name = (BUNDLED.request_definition(revision, message["method"])
                        if kind == "request"
                        else BUNDLED.notification_definition(revision, message["method"]))
                if name:
                    names.append(name)
        for name in names:
            assert BUNDLED.is_valid(revision, name, message) == files.is_valid(
                revision, name, message), name

    check()


# -- valid messages ------------------------------------------------------------------------------


def _every_method(kind: str) -> list[tuple[str, str, str]]:
    out = []
    for revision in KNOWN_REVISIONS:
        for sender in ("client", "server"):
            for method in kit.method_names(revision, sender=sender, kind=kind):
                out.append((revision, sender, method))
    return sorted(set(out))


@pytest.mark.parametrize(("revision", "sender", "method"), _every_method("request"))
def test_requests_and_their_results_validate(revision: str, sender: str, method: str) -> None:
    result_name = BUNDLED.result_definition(revision, method)
    assert result_name is not None
    if method in official.RESULT_TYPES:  # the name mapping, checked against the tests' own
        expected = official.RESULT_TYPES[method]
        assert result_name == expected or (expected == "EmptyResult" and result_name == "Result")

    @settings(FAST, max_examples=8)
    @given(kit.requests(revision, sender=sender, methods=[method]),
           kit.responses(revision, sender="server" if sender == "client" else "client",
                         methods=[method]))
    def check(request: dict[str, Any], response: dict[str, Any]) -> None:
        official.validate_message(revision, request, {})
        official.validate_message(revision, response, {response["id"]: method})
        official.validate(revision, result_name, response["result"])
        if method == "initialize":
            assert request["params"]["protocolVersion"] == revision
            assert response["result"]["protocolVersion"] == revision
        if revision == STATELESS:
            meta = request["params"]["_meta"]
            assert meta["io.modelcontextprotocol/protocolVersion"] == revision
            assert response["result"]["resultType"] == "complete"
        assert "task" not in (request.get("params") or {})

    check()


@pytest.mark.parametrize(("revision", "sender", "method"), _every_method("notification"))
def test_notifications_validate(revision: str, sender: str, method: str) -> None:
    @settings(FAST, max_examples=8)
    @given(kit.notifications(revision, sender=sender, methods=[method]))
    def check(message: dict[str, Any]) -> None:
        official.validate_message(revision, message, {})
        assert "id" not in message

    check()


@pytest.mark.parametrize("revision", KNOWN_REVISIONS)
@pytest.mark.parametrize("sender", ["client", "server"])
def test_whole_messages_and_errors_validate(revision: str, sender: str) -> None:
    @FAST
    @given(kit.messages(revision, sender=sender), kit.errors(revision))
    def check(message: dict[str, Any], error: dict[str, Any]) -> None:
        official.validate(revision, "JSONRPCMessage", message)
        official.validate(revision, "JSONRPCMessage", error)

    check()


def test_strategy_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="does not send"):
        kit.requests("2025-11-25", sender="client", methods=["roots/list"])
    with pytest.raises(ValueError, match="sends no request"):
        kit.requests(STATELESS, sender="server")
    with pytest.raises(KeyError):
        kit.results("server/discover", "2025-11-25")
    with pytest.raises(ValueError, match="unknown rules"):
        kit.invalid_messages("2025-11-25", rules=["no-such-rule"])
    assert kit.method_names("2024-11-05", sender="server") == ["ping", "roots/list",
                                                               "sampling/createMessage"]


def test_schema_strategies_cover_tool_input_schemas() -> None:
    schema = {
        "type": "object", "required": ["n", "tags", "mode"],
        "properties": {
            "n": {"type": "integer", "exclusiveMinimum": 0, "maximum": 10, "multipleOf": 2},
            "ratio": {"type": "number", "minimum": 0.5, "exclusiveMaximum": 1},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{2}$"},
                     "minItems": 1, "uniqueItems": True},
            "mode": {"oneOf": [{"const": "fast"}, {"$ref": "#/$defs/Slow"}]},
            "maybe": {"type": ["string", "null"], "format": "uri"},
        },
        "$defs": {"Slow": {"type": "object", "properties": {"delay": {"type": "number"}}}},
    }
    import jsonschema  # type: ignore[import-untyped]

    strategy = kit.SchemaStrategies(schema["$defs"]).build(
        {k: v for k, v in schema.items() if k != "$defs"})

    @FAST
    @given(strategy)
    def check(value: Any) -> None:
        jsonschema.Draft202012Validator(schema).validate(value)

    check()
    with pytest.raises(kit.UnsupportedSchema):
        kit.SchemaStrategies().build({"type": "object", "if": {"type": "object"}})


def test_typed_objects_delegate_to_the_typed_models() -> None:
    strategies_module = pytest.importorskip("mcp_sansio.types._strategies")
    from mcp_sansio.types import unstructure, v2025_11_25

    strategy = kit.typed(v2025_11_25.CallToolResult)
    assert strategy is strategies_module.strategy_for(v2025_11_25.CallToolResult)

    @FAST
    @given(strategy)
    def check(value: Any) -> None:
        official.validate("2025-11-25", "CallToolResult", unstructure(value))

    check()
    assert "CallToolResult" in kit.typed_strategies("2025-11-25")


# -- invalid messages ----------------------------------------------------------------------------

#: Rules whose message the official schema itself refuses. The others break rules the
#: schema cannot express: a method missing from the revision, a second initialize, an
#: unknown progress token -- and three envelope rules, because ``JSONRPCMessage`` is a union
#: of open objects: a request with a null id passes as a notification, a request with a
#: result or a response with an error too as an object with an extra member.
SCHEMA_BREAKING = {"jsonrpc-version", "method-type", "params-type", "params-array",
                   "not-an-object", "empty-batch", "batch-not-supported", "missing-param",
                   "wrong-param-type", "missing-protocol-version",
                   "missing-client-capabilities"}


def _server_for(revision: str) -> ServerConnection:
    server = ServerConnection(info={"name": "s", "version": "1"}, capabilities=GOOD_CAPS)
    if revision != STATELESS:
        server.receive_message({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                                "params": {"protocolVersion": revision, "capabilities": {},
                                           "clientInfo": {"name": "c", "version": "1"}}})
        server.receive_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
        server.events()
        server.data_to_send()
    return server


CLIENT_CAPS: dict[str, Any] = {"roots": {}, "sampling": {}}


def _client_for(revision: str) -> ClientConnection:
    client = ClientConnection(info={"name": "c", "version": "1"}, capabilities=CLIENT_CAPS,
                              versions=[revision])
    client.initialize()
    client.data_to_send()
    client.receive_message({"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": revision, "capabilities": GOOD_CAPS,
        "serverInfo": {"name": "s", "version": "1"}}})
    client.events()
    client.data_to_send()
    return client


def _answer_like_a_careful_application(conn: Connection, revision: str) -> None:
    for event in conn.events():
        if isinstance(event, Request):
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": event.request_id,
                                       "method": event.method}
            if event.params is not None:
                message["params"] = event.params
            name = BUNDLED.request_definition(revision, event.method)
            if name is None or BUNDLED.errors(revision, name, message):
                conn.send_error(event.request_id, ErrorCode.INVALID_PARAMS, "Invalid params")
            else:
                conn.send_response(event.request_id, {})


@pytest.mark.parametrize(("revision", "sender"), [
    *((r, "client") for r in KNOWN_REVISIONS), *((r, "server") for r in HANDSHAKE_REVISIONS),
])
def test_invalid_messages_are_answered_as_labelled(revision: str, sender: str) -> None:
    peer_caps = GOOD_CAPS if sender == "client" else CLIENT_CAPS
    seen: set[str] = set()

    @settings(FAST, max_examples=150)
    @given(kit.invalid_messages(revision, sender=sender, peer_capabilities=peer_caps))
    def check(invalid: kit.Invalid) -> None:
        seen.add(invalid.rule)
        assert invalid.rule in kit.RULES
        assert invalid.requirement == kit.RULES[invalid.rule].requirement
        assert invalid.revision == revision
        line = invalid.encode()
        assert b"\n" not in line
        if invalid.rule in SCHEMA_BREAKING and not isinstance(invalid.message, list):
            name = "JSONRPCMessage"
            method = invalid.message.get("method") if isinstance(invalid.message, dict) else None
            if invalid.rule in ("missing-param", "wrong-param-type", "missing-protocol-version",
                                "missing-client-capabilities"):
                name = BUNDLED.request_definition(revision, method) or name
            assert not official._validator(revision, name).is_valid(invalid.message)
        conn: Connection = _server_for(revision) if sender == "client" else _client_for(
            revision)
        conn.receive_data(line + b"\n")
        _answer_like_a_careful_application(conn, revision)
        out = [json.loads(x) for x in conn.data_to_send().splitlines()]
        # Our core acknowledges a listen stream before the application sees the request,
        # even one missing its params (see the report): the acknowledgement is not the answer.
        out = [m for m in out if m.get("method") != "notifications/subscriptions/acknowledged"]
        if not invalid.expects_reply:
            assert out == []
            return
        assert len(out) == 1, out
        assert "error" in out[0], out
        assert invalid.accepts(out[0]["error"]["code"]), out
        assert out[0].get("id") == invalid.reply_id

    check()
    assert len(seen) >= 12, seen


def test_every_rule_is_reachable_somewhere() -> None:
    reachable: set[str] = set()
    for revision in KNOWN_REVISIONS:
        for sender in ("client", "server"):
            for rule in kit.RULES:
                try:
                    kit.invalid_messages(revision, sender=sender, peer_capabilities={},
                                         rules=[rule])
                except ValueError:
                    continue
                reachable.add(rule)
    assert reachable == set(kit.RULES)
    assert set(kit.RULES) <= set(kit.CHECKS)


# -- the peer machine against our own server -----------------------------------------------------


def test_our_server_passes_the_sweep() -> None:
    report = kit.sweep(good_server)
    assert report.findings == [], report.summary()
    assert report.sessions == dict.fromkeys(KNOWN_REVISIONS, 1)


@pytest.mark.parametrize("revision", KNOWN_REVISIONS)
def test_our_server_passes_random_sessions(revision: str) -> None:
    report = kit.check_peer(good_server, revisions=[revision], sessions=6, steps=40)
    assert report.findings == [], report.summary()
    assert report.sessions[revision] >= 6


def test_random_sessions_exercise_the_whole_session() -> None:
    transports: list[Tampered] = []

    def factory() -> Tampered:
        transports.append(Tampered(good_server(), lambda m, t: [m]))
        return transports[-1]

    for revision in ("2025-06-18", STATELESS):
        kit.check_peer(factory, revisions=[revision], sessions=10, steps=40)
    sent = [m for t in transports for m in t.sent]
    methods = {m["method"] for m in sent if isinstance(m, dict)
               and isinstance(m.get("method"), str)}
    assert {"initialize", "notifications/initialized", "ping", "server/discover", "tools/list",
            "tools/call", "prompts/get", "resources/read", "notifications/cancelled",
            "subscriptions/listen", "completion/complete", "logging/setLevel"} <= methods
    assert any("progressToken" in ((m.get("params") or {}).get("_meta") or {})
               for m in sent if isinstance(m, dict) and isinstance(m.get("params"), dict))
    invalid = [m for m in sent if not isinstance(m, dict) or m.get("jsonrpc") != "2.0"
               or "result" in m or "error" in m]
    assert len(invalid) >= 5


def test_sweep_of_a_server_with_nothing_declared() -> None:
    report = kit.sweep(lambda: good_server({}))
    assert report.findings == [], report.summary()


def test_fail_mode_raises_at_the_first_finding() -> None:
    machine = kit.PeerMachine.configure(
        lambda: Tampered(good_server(), output=_unknown_tool_as_result),
        revisions=["2025-06-18"], invalid_rules=[])
    with pytest.raises(kit.PeerDeviation) as info:
        # Up to 100 sessions: it stops at the first that calls an unknown tool.
        run_state_machine_as_test(machine, settings=settings(
            max_examples=100, stateful_step_count=20, deadline=None, database=None,
            derandomize=True, suppress_health_check=list(HealthCheck),
            phases=(Phase.generate,)))
    assert info.value.finding.rule == "unknown-tool"
    assert "expected error -32602, got a result" in str(info.value)


# -- the peer machine against tampered servers: every check fires --------------------------------


class Tampered:
    """A transport to the good in-process server whose output a function rewrites.

    ``output(message, tampered)`` returns what goes out instead of ``message`` (a list of
    JSON values or raw lines); ``tampered.methods`` maps the ids of the machine's requests
    to their methods, ``tampered.sent`` lists every message the machine sent.
    """

    def __init__(self, inner: kit.ConnectionTransport,
                 output: Callable[[Any, Tampered], list[Any]]) -> None:
        self.inner = inner
        self.output = output
        self.methods: dict[Any, str] = {}
        self.sent: list[Any] = []
        self.cancelled: list[Any] = []
        self.pings_after_cancel: list[Any] = []
        self.state: dict[str, Any] = {}

    def send(self, data: bytes) -> None:
        for line in data.splitlines():
            try:
                message = json.loads(line)
            except ValueError:
                continue
            self.sent.append(message)
            if (isinstance(message, dict) and isinstance(message.get("method"), str)
                    and isinstance(message.get("id"), str | int)):
                self.methods[message["id"]] = message["method"]
                if message["method"] == "ping" and self.cancelled:
                    self.pings_after_cancel.append(message["id"])
            if (isinstance(message, dict) and message.get("method") == "notifications/cancelled"
                    and isinstance(message.get("params"), dict)):
                target = message["params"].get("requestId")
                if target in self.methods:
                    self.cancelled.append(target)
        self.inner.send(data)

    def receive(self, timeout: float) -> bytes:
        if self.state.get("hung up"):
            raise EOFError("the tampered server hung up")
        data = self.inner.receive(timeout)
        out: list[Any] = []
        for line in data.splitlines():
            out.extend(self.output(json.loads(line), self))
        return b"".join((item if isinstance(item, bytes) else json.dumps(item).encode())
                        + b"\n" for item in out)

    def close(self) -> None:
        self.inner.close()

    def method_of(self, message: Any) -> str | None:
        return self.methods.get(message.get("id")) if isinstance(message, dict) else None


def _after_initialize(*extra: Any) -> Callable[[Any, Tampered], list[Any]]:
    """Send ``extra`` right after the answer to initialize (or the first discover)."""
    def output(message: Any, t: Tampered) -> list[Any]:
        if t.method_of(message) in ("initialize", "server/discover") and not t.state.get("done"):
            t.state["done"] = True
            return [message, *extra]
        return [message]
    return output


def _on_method(method: str, change: Callable[[Any, Tampered], list[Any]]
               ) -> Callable[[Any, Tampered], list[Any]]:
    def output(message: Any, t: Tampered) -> list[Any]:
        if "method" not in message and t.method_of(message) == method:
            return change(message, t)
        return [message]
    return output


def _unknown_tool_as_result(message: Any, t: Tampered) -> list[Any]:
    sent = next((m for m in t.sent if isinstance(m, dict) and m.get("id") == message.get("id")
                 and m.get("method") == "tools/call"), None)
    if sent is not None and sent["params"]["name"] == "kit-no-such-tool":
        return [{"jsonrpc": "2.0", "id": message["id"], "result": {
            "content": [{"type": "text", "text": "no such tool"}], "isError": True}}]
    return [message]


def _result(message: Any, **changes: Any) -> list[Any]:
    return [{**message, "result": {**message["result"], **changes}}]


def _answer_cancelled_after_barrier(message: Any, t: Tampered) -> list[Any]:
    """Answer a cancelled request right after the answer to a ping sent after the cancel
    (the server has seen the cancellation by then)."""
    if message.get("id") in t.pings_after_cancel and t.cancelled:
        late = t.cancelled.pop(0)
        return [message, {"jsonrpc": "2.0", "id": late, "result": {"content": []}}]
    return [message]


def _progress_twice(message: Any, t: Tampered) -> list[Any]:
    return [message, message] if message.get("method") == "notifications/progress" else [
        message]


def _progress_without_value(message: Any, t: Tampered) -> list[Any]:
    if message.get("method") == "notifications/progress":
        return [{**message, "params": {"progressToken": message["params"]["progressToken"]}}]
    return [message]


def _hang_up_after_listing(message: Any, t: Tampered) -> list[Any]:
    if t.method_of(message) == "tools/list":
        t.state["hung up"] = True
    return [message]


def _drop_parse_errors(message: Any, t: Tampered) -> list[Any]:
    if message.get("error", {}).get("code") == -32700:
        return []
    return [message]


def _second_initialize_accepted(message: Any, t: Tampered) -> list[Any]:
    if t.method_of(message) == "initialize" and "error" in message:
        return [{"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "serverInfo": {"name": "again", "version": "1"}}}]
    return [message]


def _ack_mistagged(message: Any, t: Tampered) -> list[Any]:
    if message.get("method") == "notifications/subscriptions/acknowledged":
        return [{**message, "params": {**message["params"], "_meta": {
            "io.modelcontextprotocol/subscriptionId": "not-a-stream"}}}]
    return [message]


def _discover_fails_later(message: Any, t: Tampered) -> list[Any]:
    if t.method_of(message) == "server/discover":
        if t.state.get("discovered"):
            return [{"jsonrpc": "2.0", "id": message["id"],
                     "error": {"code": -32603, "message": "busy"}}]
        t.state["discovered"] = True
    return [message]


H, S = "2025-06-18", STATELESS
TAMPERINGS: list[tuple[str, str, Callable[[Any, Tampered], list[Any]], dict[str, Any] | None]] = [
    ("unknown-id", H, _on_method("ping", lambda m, t: [{**m, "id": 987654}]), None),
    ("duplicate-response", H, _on_method("tools/list", lambda m, t: [m, m]), None),
    ("output-not-json", H, _after_initialize(b"this is not json"), None),
    ("envelope", H, _on_method("tools/list", lambda m, t: [{"jsonrpc": "2.0", "id": m["id"]}]),
     None),
    ("result-schema", H, _on_method("tools/list", lambda m, t: _result(m, tools="none")), None),
    ("no-reply", H, _on_method("resources/read", lambda m, t: []), None),
    ("response-after-cancel", H, _answer_cancelled_after_barrier, None),
    ("progress-unknown-token", H, _after_initialize(
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": "nobody", "progress": 1}}), None),
    ("progress-not-increasing", H, _progress_twice, None),
    ("log-without-capability", H, _after_initialize(
        {"jsonrpc": "2.0", "method": "notifications/message",
         "params": {"level": "info", "data": "hi"}}), {"tools": {}}),
    ("unknown-notification", H, _after_initialize(
        {"jsonrpc": "2.0", "method": "notifications/kit/unheard-of"}), None),
    ("unexpected-request", H, _after_initialize(
        {"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"}), None),
    ("structured-content", H, _on_method("tools/call", lambda m, t: [
        {**m, "result": {k: v for k, v in m.get("result", {}).items()
                         if k != "structuredContent"}}] if "result" in m else [m]), None),
    ("unknown-tool", H, _unknown_tool_as_result, None),
    ("unexpected-error", H, _after_initialize(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "why"}}), None),
    ("version", H, _on_method("initialize", lambda m, t: _result(
        m, protocolVersion="1999-01-01")), None),
    ("ping", H, _on_method("ping", lambda m, t: [
        {"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}}]), None),
    ("notification-schema", H, _progress_without_value, None),
    ("unsolicited-change", H, _after_initialize(
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}), None),
    ("not-json", H, _drop_parse_errors, None),
    ("peer-closed", H, _hang_up_after_listing, None),
    ("second-initialize", H, _second_initialize_accepted, None),
    ("result-type", S, _on_method("tools/list", lambda m, t: _result(m, resultType="later")),
     None),
    ("listen-acknowledgement", S, _ack_mistagged, None),
    ("discover", S, _discover_fails_later, None),
    ("log-without-level", S, _after_initialize(
        {"jsonrpc": "2.0", "method": "notifications/message",
         "params": {"level": "info", "data": "hi"}}), None),
    ("unsolicited-change", S, _after_initialize(
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}), None),
    ("batch", "2025-03-26", lambda m, t: [] if isinstance(m, list) else [m], None),
    ("unsolicited-change", "2024-11-05", _after_initialize(
        {"jsonrpc": "2.0", "method": "notifications/resources/updated",
         "params": {"uri": "memo://greeting"}}), {"resources": {"subscribe": True}}),
]


@pytest.mark.parametrize(("rule", "revision", "output", "caps"), TAMPERINGS,
                         ids=[f"{r}-{v}" for r, v, _, _ in TAMPERINGS])
def test_each_check_catches_its_deviation(rule: str, revision: str,
                                          output: Callable[[Any, Tampered], list[Any]],
                                          caps: dict[str, Any] | None) -> None:
    # Invalid messages only where the tampering is about answering one.
    rules = [rule] if rule in kit.RULES else []
    report = kit.sweep(lambda: Tampered(good_server(caps), output), revisions=[revision],
                       reply_timeout=1.0, invalid_rules=rules)
    assert rule in report.rules(), report.summary()
    finding = report.by_rule()[rule][0]
    assert finding.requirement in ("must", "should")
    assert finding.revision == revision
    assert rule in report.summary()


def test_every_check_has_a_tampering() -> None:
    tampered = {rule for rule, *_ in TAMPERINGS}
    # The HTTP transport's checks are tripped by broken HTTP servers (test_check_http.py);
    # the client-* checks judge a client: each has a broken client in test_check_client.py.
    session_checks = {c for c in set(kit.CHECKS) - set(kit.RULES)
                      if not c.startswith(("http-", "client-"))}
    # Checks of answers to valid requests that only a prompt or resource server could fail
    # are shown against the SDK below instead.
    assert session_checks - tampered <= {"missing-prompt-argument", "unknown-prompt",
                                         "unknown-resource"}


# -- the official Python SDK over stdio -----------------------------------------------------------

#: What the official Python SDK (mcp 2.x, tests/peers/sdk_kit_server.py) does that the
#: specification does not allow, as the sweep finds it: (check, revisions).
SDK_DEVIATIONS: dict[str, set[str]] = {
    # Malformed input is dropped without an answer instead of -32700 / -32600 (JSON-RPC 2.0
    # s. 5): a line that is not JSON, a scalar or an empty array, a batch where batches do not
    # exist, an id that is null or not a string/integer, a wrong "jsonrpc", a method that is
    # not a string, params that are not an object.
    "not-json": set(KNOWN_REVISIONS),
    "not-an-object": set(KNOWN_REVISIONS),
    "empty-batch": set(KNOWN_REVISIONS),
    "batch-not-supported": set(KNOWN_REVISIONS) - {"2025-03-26"},
    "id-type": set(KNOWN_REVISIONS),
    "jsonrpc-version": set(KNOWN_REVISIONS),
    "method-type": set(KNOWN_REVISIONS),
    "params-type": set(KNOWN_REVISIONS),
    "params-array": set(KNOWN_REVISIONS),
    # A 2025-03-26 batch of requests (ping, tools/list) is dropped without an answer, where
    # that revision's basic/index.mdx says implementations MUST support receiving batches.
    "batch": {"2025-03-26"},
    # A request that also carries "result" is served as a request (or -32601/-32603),
    # instead of -32600.
    "request-with-result": set(KNOWN_REVISIONS),
    # A second initialize renegotiates instead of being refused.
    "second-initialize": set(HANDSHAKE_REVISIONS),
    # Handler exceptions: an unknown prompt or a missing prompt argument is answered with
    # code 0 and the exception's text (handshake era), or -32603 (stateless era), not -32602.
    "unknown-prompt": set(KNOWN_REVISIONS),
    "missing-prompt-argument": set(KNOWN_REVISIONS),
    # An unknown tool is a result with isError, not -32602 (server/tools.mdx lists unknown
    # tools among the protocol errors).
    "unknown-tool": set(KNOWN_REVISIONS),
}


def sdk_server() -> StdioTransport:
    return StdioTransport([sys.executable, str(SDK_SERVER)], cwd=ROOT)


@pytest.fixture(scope="module")
def sdk_sweep() -> kit.Report:
    return kit.sweep(sdk_server, schemas=load_schemas(official.schema_root()),
                     reply_timeout=5.0, settle_time=0.3)


def test_sdk_deviations_are_exactly_the_known_ones(sdk_sweep: kit.Report) -> None:
    found: dict[str, set[str]] = {}
    for finding in sdk_sweep:
        assert finding.revision is not None
        found.setdefault(finding.rule, set()).add(finding.revision)
    assert found == SDK_DEVIATIONS, sdk_sweep.summary()
    assert sdk_sweep.sessions == dict.fromkeys(KNOWN_REVISIONS, 1)


def test_sdk_code_zero_carries_the_exception_text(sdk_sweep: kit.Report) -> None:
    [unknown_prompt] = [f for f in sdk_sweep.by_rule()["unknown-prompt"]
                        if f.revision == "2025-11-25"]
    assert unknown_prompt.received["error"] == {
        "code": 0, "message": "Unknown prompt: kit-no-such-prompt"}
    [second] = [f for f in sdk_sweep.by_rule()["second-initialize"]
                if f.revision == "2025-11-25"]
    assert "result" in second.received


def test_sdk_random_sessions_find_only_known_deviations() -> None:
    report = kit.check_peer(sdk_server, sessions=5, steps=25, reply_timeout=5.0,
                            settle_time=0.3)
    assert report.sessions, report.summary()
    assert report.rules() <= set(SDK_DEVIATIONS), report.summary()


# -- the stdio transport -------------------------------------------------------------------------


def test_stdio_transport_reports_the_end_of_the_stream() -> None:
    transport = StdioTransport([sys.executable, "-c", "print('{}')"])
    data = b""
    with pytest.raises(EOFError):
        for _ in range(100):
            data += transport.receive(5.0)
    assert data == b"{}\n"
    transport.close()
    assert transport.returncode == 0


def test_stdio_transport_escalates_to_kill() -> None:
    stubborn = ("import signal, sys, time\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
                "time.sleep(60)\n")
    transport = StdioTransport([sys.executable, "-c", stubborn], grace=0.2)
    assert transport.receive(5.0) == b"ready\n"
    transport.close()
    assert transport.returncode is not None and transport.returncode < 0
    with pytest.raises(BrokenPipeError):
        transport.send(b"{}\n")


def test_schemas_load_from_a_directory(tmp_path: Path) -> None:
    schemas = load_schemas(official.schema_root())
    assert set(KNOWN_REVISIONS) <= set(schemas.revisions)
    assert schemas.result_definition("2025-11-25", "tools/call") == "CallToolResult"
    with pytest.raises(FileNotFoundError):
        load_schemas(tmp_path)


# -- the package and its documentation -----------------------------------------------------------


def test_importing_the_core_does_not_import_hypothesis() -> None:
    code = ("import sys, mcp_sansio\n"
            "assert 'hypothesis' not in sys.modules and 'mcp_sansio.testing' not in "
            "sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_documented_example_runs() -> None:
    example = ROOT / "docs" / "examples" / "testing_peer.py"
    page = (ROOT / "docs" / "testing.rst").read_text()
    assert "literalinclude:: examples/testing_peer.py" in page
    result = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                            check=True, cwd=ROOT)
    assert result.stdout.count("no findings") == 2, result.stdout
    assert "sessions: 2024-11-05: 1, 2025-03-26: 1, 2025-06-18: 1, 2025-11-25: 1, " \
        "2026-07-28: 1" in result.stdout
