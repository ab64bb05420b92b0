"""The client checker's sans-IO machine, driven by scripted clients (no process, no clock)."""

from __future__ import annotations

import itertools
import shlex
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_sansio.adapters.testing_client import PLACEHOLDER, relay_command, substitute

from mcp_sansio._versions import HANDSHAKE_REVISIONS
from mcp_sansio.testing import CHECKS
from mcp_sansio.testing._client_machine import (
    _GATES,
    HUGE_SIZE,
    IDLE_BEFORE_PROBES,
    ClientMachine,
    Out,
)
from mcp_sansio.testing._schemas import bundled

CAPS = {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": CAPS}


def req(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def note(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def messages(outs: list[Out]) -> list[Any]:
    return [o.message for o in outs if o.message is not None]


def initialize(machine: ClientMachine, caps: dict[str, Any] | None = None,
               headers: dict[str, str] | None = None) -> dict[str, Any]:
    machine.receive(req(1, "initialize", {
        "protocolVersion": "2025-11-25", "capabilities": CAPS if caps is None else caps,
        "clientInfo": {"name": "t", "version": "1"}}), 0.0, headers=headers)
    [answer] = messages(machine.take())
    machine.receive(note("notifications/initialized"), 0.1, headers=None if headers is None
                    else {**headers, "mcp-session-id": machine.session_id or "",
                          "mcp-protocol-version": "2025-11-25"})
    return answer  # type: ignore[no-any-return]


def answer_probes(machine: ClientMachine, now: float = 1.0,
                  results: dict[str, Any] | None = None,
                  outs: list[Out] | None = None) -> list[str]:
    """Answer each request of the kit's as a good client would; the methods seen (and what
    the kit sent, into ``outs``)."""
    seen = []
    results = results or {}
    for _ in range(10):
        batch = machine.take()
        if outs is not None:
            outs += batch
        pending = [m for m in messages(batch) if "method" in m and "id" in m]
        if not pending:
            break
        for message in pending:
            seen.append(message["method"])
            result = results[message["method"]] if message["method"] in results else {
                "ping": {}, "roots/list": {"roots": []},
                "sampling/createMessage": {"role": "assistant", "model": "m",
                                           "content": {"type": "text", "text": "hi"}},
                "elicitation/create": {"action": "decline"}}[message["method"]]
            machine.receive({"jsonrpc": "2.0", "id": message["id"], "result": result}, now)
    return seen


def test_a_good_client_gets_every_probe_and_no_finding() -> None:
    machine = ClientMachine()
    answer = initialize(machine)
    assert answer["result"]["protocolVersion"] == "2025-11-25"
    machine.receive(req(2, "tools/list"), 0.5)
    seen = answer_probes(machine)
    assert seen == ["ping", "roots/list", "sampling/createMessage", "elicitation/create",
                    "ping"]
    assert "hostile output sent" in machine.steps
    assert "liveness ping answered" in machine.steps
    machine.close(2.0, exit_code=0)
    assert not machine.report.findings


def test_the_held_request_is_answered_after_the_probes() -> None:
    machine = ClientMachine()
    initialize(machine)
    machine.receive(req(2, "tools/list"), 0.5)
    outs: list[Out] = []
    for _ in range(10):
        batch = machine.take()
        outs += batch
        for message in messages(batch):
            if "method" in message and "id" in message:
                machine.receive({"jsonrpc": "2.0", "id": message["id"], "result": (
                    {"roots": []} if message["method"] == "roots/list" else {})}, 1.0)
    answers = [m for m in messages(outs) if m.get("id") == 2]
    assert answers and answers[0]["result"]["tools"][0]["name"] == "kit_echo"
    raw = [o.raw for o in outs if o.raw is not None]
    assert raw and b"not JSON" in raw[0]
    huge = [m for m in messages(outs) if len(str(m)) > HUGE_SIZE]
    assert huge


def test_a_counter_offer_when_the_kit_is_pinned() -> None:
    machine = ClientMachine(revision="2025-03-26")
    answer = initialize(machine)
    assert answer["result"]["protocolVersion"] == "2025-03-26"
    machine.receive(req(2, "tools/list"), 0.5)
    assert "elicitation/create" not in answer_probes(machine)  # not in 2025-03-26


@pytest.mark.parametrize(("caps", "method", "result", "rule"), [
    ({}, "roots/list", {"roots": []}, "client-undeclared-answer"),
    (CAPS, "roots/list", {"rootz": []}, "client-result-schema"),
    (CAPS, "ping", {"x": 1}, "client-ping"),
    (CAPS, "elicitation/create", {"action": "maybe"}, "client-result-schema"),
])
def test_answers_are_judged_by_declared_capabilities(caps: dict[str, Any], method: str,
                                                     result: Any, rule: str) -> None:
    machine = ClientMachine()
    initialize(machine, caps)
    machine.receive(req(2, "tools/list"), 0.5)
    answer_probes(machine, results={method: result})
    machine.close(2.0, exit_code=0)
    assert machine.report.rules() == {rule}


def test_an_error_is_always_an_acceptable_answer() -> None:
    machine = ClientMachine()
    initialize(machine, {})
    machine.receive(req(2, "tools/list"), 0.5)
    for _ in range(10):
        for message in messages(machine.take()):
            if "method" in message and "id" in message:
                reply = ({"result": {}} if message["method"] == "ping" else
                         {"error": {"code": -32601, "message": "no"}})
                machine.receive({"jsonrpc": "2.0", "id": message["id"], **reply}, 1.0)
    machine.close(2.0, exit_code=0)
    assert not machine.report.findings


def test_an_unanswered_probe_is_found_after_the_call_timeout_and_not_before() -> None:
    machine = ClientMachine(call_timeout=5.0)
    initialize(machine)
    machine.receive(req(2, "tools/list"), 0.5)
    machine.take()
    machine.tick(5.0)
    assert not machine.report.findings
    assert machine.deadline() == pytest.approx(5.5)
    machine.tick(5.6)
    assert machine.report.rules() == {"client-ping"}


def test_a_late_answer_is_the_timeout_finding_only() -> None:
    machine = ClientMachine(call_timeout=5.0)
    initialize(machine)
    machine.receive(req(2, "tools/list"), 0.5)
    [ping] = messages(machine.take())
    machine.tick(6.0)
    machine.receive({"jsonrpc": "2.0", "id": ping["id"], "result": {}}, 6.1)
    assert machine.report.rules() == {"client-ping"}


def test_progress_after_the_request_ended_names_no_active_request() -> None:
    machine = ClientMachine()
    initialize(machine)
    machine.receive(req(2, "tools/list"), 0.5)
    [ping] = messages(machine.take())
    machine.receive({"jsonrpc": "2.0", "id": ping["id"], "result": {}}, 0.6)
    [roots] = messages(machine.take())
    token = roots["params"]["_meta"]["progressToken"]
    progress = note("notifications/progress", {"progressToken": token, "progress": 1})
    machine.receive(progress, 0.7)
    assert not machine.report.findings
    machine.receive({"jsonrpc": "2.0", "id": roots["id"], "result": {"roots": []}}, 0.8)
    machine.receive(note("notifications/progress", {"progressToken": token, "progress": 2}),
                    0.9)
    assert machine.report.rules() == {"client-progress-unknown-token"}


def test_a_listening_client_is_probed_after_the_idle_time() -> None:
    machine = ClientMachine()
    initialize(machine)
    machine.tick(0.1 + IDLE_BEFORE_PROBES - 0.05)
    assert not machine.take()
    machine.tick(0.1 + IDLE_BEFORE_PROBES + 0.05)
    assert [m["method"] for m in messages(machine.take())] == ["ping"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), min_size=1,
                max_size=6))
def test_progress_must_increase(values: list[float]) -> None:
    machine = ClientMachine()
    initialize(machine)
    machine.receive(req(2, "tools/list"), 0.5)
    ping = messages(machine.take())[0]
    machine.receive({"jsonrpc": "2.0", "id": ping["id"], "result": {}}, 0.6)
    [roots] = messages(machine.take())
    token = roots["params"]["_meta"]["progressToken"]
    for value in values:
        machine.receive(note("notifications/progress", {"progressToken": token,
                                                        "progress": value}), 0.7)
    increasing = all(b > a for a, b in itertools.pairwise(values))
    assert (machine.report.rules() == set()) == increasing
    assert machine.report.rules() <= {"client-progress-not-increasing"}


@pytest.mark.parametrize(("message", "rule"), [
    (note("notifications/cancelled", {"requestId": 1}), "client-cancel-initialize"),
    (note("notifications/cancelled", {"requestId": 77}), "client-cancel-unknown"),
    (note("notifications/cancelled", {"requestId": "kit-1"}), "client-cancel-unknown"),
    (note("notifications/progress", {"progressToken": "x", "progress": 1}),
     "client-progress-unknown-token"),
    (note("notifications/kit/nope"), "client-unknown-notification"),
    (req(5, "resources/list"), "client-capability-gating"),
    (req(5, "logging/setLevel", {"level": "info"}), "client-capability-gating"),
    (req(5, "kit/nope"), "client-unknown-request"),
    (req(5, "tools/call", {}), "client-request-schema"),
    (req(1, "tools/list"), "client-id-reused"),
    (req(None, "tools/list"), "client-envelope"),
    ({"jsonrpc": "1.0", "method": "x"}, "client-envelope"),
    ({"jsonrpc": "2.0", "id": "kit-99", "result": {}}, "client-unknown-id"),
])
def test_one_bad_message_one_finding(message: Any, rule: str) -> None:
    machine = ClientMachine()
    initialize(machine)
    machine.receive(message, 0.5)
    assert machine.report.rules() == {rule}
    assert CHECKS[rule].source


def test_requests_before_initialize_and_before_initialized() -> None:
    machine = ClientMachine()
    machine.receive(req(0, "ping"), 0.0)
    assert messages(machine.take()) == [{"jsonrpc": "2.0", "id": 0, "result": {}}]
    machine.receive(req(1, "tools/list"), 0.0)
    assert machine.report.rules() == {"client-request-before-initialize"}
    machine = ClientMachine()
    machine.receive(req(1, "initialize", {"protocolVersion": "2025-11-25",
                                          "capabilities": {},
                                          "clientInfo": {"name": "t", "version": "1"}}), 0.0)
    machine.receive(req(2, "tools/list"), 0.1)
    assert machine.report.rules() == {"client-initialized"}


def test_a_handshake_kit_answers_a_stateless_probe_like_an_old_server() -> None:
    machine = ClientMachine(era="handshake")
    machine.receive(req(0, "server/discover", {"_meta": META}), 0.0)
    [answer] = messages(machine.take())
    assert answer["error"]["code"] == -32601
    initialize(machine)
    assert not machine.report.findings


def stateless(machine: ClientMachine) -> dict[str, Any]:
    machine.receive(req(1, "tools/call", {"_meta": META, "name": "kit_echo",
                                          "arguments": {"text": "hi"}}), 0.0)
    [answer] = messages(machine.take())
    result: dict[str, Any] = answer["result"]
    assert result["resultType"] == "input_required"
    return result


@settings(max_examples=40, deadline=None)
@given(same_id=st.booleans(), echo_state=st.booleans(), drop_key=st.booleans())
def test_input_required_retries(same_id: bool, echo_state: bool, drop_key: bool) -> None:
    machine = ClientMachine(era="stateless")
    result = stateless(machine)
    assert set(result["inputRequests"]) == {"roots", "elicit", "sample"}
    responses = {"roots": {"roots": []}, "elicit": {"action": "decline"},
                 "sample": {"role": "assistant", "model": "m",
                            "content": {"type": "text", "text": "hi"}}}
    if drop_key:
        del responses["sample"]
    params: dict[str, Any] = {"_meta": META, "name": "kit_echo", "arguments": {},
                              "inputResponses": responses}
    if echo_state:
        params["requestState"] = result["requestState"]
    machine.receive(req(1 if same_id else 2, "tools/call", params), 0.5)
    wrong = same_id or not echo_state or drop_key
    assert machine.report.rules() == ({"client-input-retry"} if wrong else set())


def test_a_stateless_request_without_meta() -> None:
    machine = ClientMachine(era="stateless")
    machine.receive(req(1, "tools/list", {}), 0.0)
    assert machine.report.rules() == {"client-meta-envelope"}
    [answer] = messages(machine.take())
    assert answer["error"]["code"] == -32602


def test_no_retry_is_found_when_due() -> None:
    machine = ClientMachine(era="stateless", call_timeout=3.0)
    stateless(machine)
    machine.tick(2.0)
    assert not machine.report.findings
    machine.tick(3.5)
    assert machine.report.rules() == {"client-input-retry"}


def test_stateless_http_heads() -> None:
    machine = ClientMachine(era="stateless", transport="http")
    listing = req(1, "tools/list", {"_meta": META})
    heads = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    machine.receive(listing, 0.0, headers=heads)
    call = req(2, "tools/call", {"_meta": META, "name": "kit_echo"})
    good = {**heads, "mcp-method": "tools/call", "mcp-name": "=?base64?a2l0X2VjaG8=?="}
    machine.receive(call, 0.0, headers=good)  # the base64 form decodes to the name
    assert not machine.report.findings
    machine.receive(dict(listing, id=3), 0.1, headers={**heads, "mcp-method": "tools/call"})
    assert machine.report.rules() == {"client-method-headers"}
    machine.receive(dict(listing, id=4), 0.2, headers={**heads, "mcp-protocol-version": "x"})
    assert machine.report.rules() == {"client-method-headers",
                                      "client-protocol-version-header"}


def test_stateless_http_param_headers() -> None:
    from mcp_sansio.http import encode_header_value

    machine = ClientMachine(era="stateless", transport="http")
    listing = req(1, "tools/list", {"_meta": META})
    machine.receive(listing, 0.0, headers={"mcp-protocol-version": "2026-07-28",
                                           "mcp-method": "tools/list"})
    [answer] = messages(machine.take())
    [tool] = answer["result"]["tools"]
    assert tool["inputSchema"]["properties"]["text"]["x-mcp-header"] == "Text"
    heads = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
             "mcp-name": "kit_echo"}
    for request_id, text, header in [(2, "héllo", encode_header_value("héllo")),
                                     (3, None, None), (4, "a", "b"), (5, "a", None)]:
        arguments = {} if text is None else {"text": text}
        extra = {} if header is None else {"mcp-param-text": header}
        machine.receive(req(request_id, "tools/call", {
            "_meta": META, "name": "kit_echo", "arguments": arguments}), 0.1,
            headers={**heads, **extra})
        wrong = request_id >= 4  # (call 3 is judged as an input_required retry, too)
        assert ("client-method-headers" in machine.report.rules()) == wrong, request_id


def http_session(machine: ClientMachine) -> dict[str, str]:
    initialize(machine, headers={})
    return {"mcp-session-id": machine.session_id or "", "mcp-protocol-version": "2025-11-25"}


def test_http_drop_resume_and_404() -> None:
    machine = ClientMachine(transport="http")
    heads = http_session(machine)
    machine.receive(req(2, "tools/list"), 0.5, headers=heads)
    stream = ClientMachine.stream_key(2)
    outs: list[Out] = []
    for _ in range(10):
        batch = machine.take()
        outs += batch
        for message in messages(batch):
            if "method" in message and "id" in message:
                machine.receive({"jsonrpc": "2.0", "id": message["id"], "result": (
                    {"roots": []} if message["method"] == "roots/list" else {
                        "role": "assistant", "model": "m",
                        "content": {"type": "text", "text": "hi"}}
                    if message["method"] == "sampling/createMessage" else
                    {"action": "decline"} if message["method"] == "elicitation/create"
                    else {})}, 1.0, headers=heads)
    assert all(o.stream == stream for o in outs)
    assert outs[-1].drop
    primed = outs[-2]
    assert primed.event_id and primed.retry
    assert machine.http_get({**heads, "last-event-id": primed.event_id}, 1.5) == stream
    assert not machine.report.findings  # 0.5 s after the drop: past the retry
    [answer] = messages(machine.take())
    assert answer["id"] == 2
    assert machine.receive(req(3, "tools/call", {"name": "kit_echo"}), 2.0,
                           headers=heads) == 404
    assert machine.receive(req(4, "initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}), 2.1, headers={}) is None
    # The client ends its new session with DELETE (2025-03-26+ transports, Session
    # Management); a DELETE naming another session is 404.
    assert machine.http_delete({"mcp-session-id": "kit-session-1"}, 2.9) == 404
    assert machine.http_delete({"mcp-session-id": "kit-session-2"}, 2.9) == 200
    machine.close(3.0, exit_code=0)
    assert not machine.report.findings
    assert "initialized again after 404" in machine.steps
    assert "session deleted" in machine.steps


def test_http_session_left_open_is_found() -> None:
    machine = ClientMachine(transport="http", era="handshake")
    assert machine.receive(req(1, "initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}), 0.0, headers={}) is None
    machine.close(1.0, exit_code=0)
    assert machine.report.rules() == {"client-session-end"}
    stateless = ClientMachine(transport="http", era="stateless")
    assert stateless.http_delete({}, 0.0) == 405


def test_http_missing_session_and_version_headers() -> None:
    machine = ClientMachine(transport="http")
    heads = http_session(machine)
    machine.receive(req(2, "tools/list"), 0.5, headers={
        "mcp-protocol-version": heads["mcp-protocol-version"]})
    machine.receive(req(3, "ping"), 0.5, headers={"mcp-session-id": heads["mcp-session-id"]})
    assert machine.report.rules() == {"client-session-id", "client-protocol-version-header"}


def test_http_resume_with_a_wrong_event_id_and_no_resume() -> None:
    for resume in ("wrong", None):
        machine = ClientMachine(transport="http", call_timeout=4.0)
        heads = http_session(machine)
        machine.receive(req(2, "tools/list"), 0.5, headers=heads)
        answer_probes(machine)
        if resume:
            machine.http_get({**heads, "last-event-id": resume}, 1.5)
        machine.tick(10.0)
        assert machine.report.rules() == {"client-sse-resume"}


def test_substitute() -> None:
    server = relay_command("127.0.0.1:1")
    assert substitute(["c", PLACEHOLDER, "x"], server) == ["c", *server, "x"]
    assert substitute(["c", f"--server={PLACEHOLDER}"], server) == [
        "c", f"--server={shlex.join(server)}"]
    with pytest.raises(ValueError, match="placeholder"):
        substitute(["c"], server)


def test_every_client_rule_cites_where_it_is_written() -> None:
    client_rules = [name for name in CHECKS if name.startswith("client-")]
    assert len(client_rules) >= 25
    for name in client_rules:
        rule = CHECKS[name]
        assert rule.requirement in ("must", "should")
        assert ".md" in rule.source or "JSON-RPC" in rule.source or "schema" in rule.source


def test_a_resumption_before_the_retry_is_found() -> None:
    machine = ClientMachine(transport="http")
    heads = http_session(machine)
    machine.receive(req(2, "tools/list"), 0.5, headers=heads)
    outs: list[Out] = []
    answer_probes(machine, now=1.0, outs=outs)
    primed = next(o for o in outs if o.retry is not None)
    assert primed.event_id and primed.retry and primed.retry >= 100
    machine.http_get({**heads, "last-event-id": primed.event_id},
                     1.0 + (primed.retry / 1000) / 2)
    assert machine.report.rules() == {"client-sse-retry"}


# -- a correct client, any interleaving: never a finding, every request answered once ------------

from hypothesis.stateful import (  # noqa: E402 (the stateful test's own imports)
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

GOOD_RESULTS: dict[str, Any] = {
    "ping": {}, "roots/list": {"roots": []}, "elicitation/create": {"action": "decline"},
    "sampling/createMessage": {"role": "assistant", "model": "m",
                               "content": {"type": "text", "text": "hi"}}}


class CorrectClient(RuleBasedStateMachine):
    """A client that keeps every rule, doing things in any order and at any pace (within
    the call timeout); the machine must find nothing and answer each request once."""

    def __init__(self) -> None:
        super().__init__()
        self.machine = ClientMachine(call_timeout=5.0)
        self.now = 0.0
        self.next_id = 100
        self.sent: set[Any] = set()
        self.answers: dict[Any, int] = {}
        self.kit_requests: list[dict[str, Any]] = []
        self.progress: dict[str, float] = {}
        self.ready = False
        self.asked_at: dict[Any, float] = {}

    def collect(self) -> None:
        for message in messages(self.machine.take()):
            if "method" in message and "id" in message:
                self.kit_requests.append(message)
                self.asked_at[message["id"]] = self.now
            elif "id" in message and message["id"] in self.sent:
                self.answers[message["id"]] = self.answers.get(message["id"], 0) + 1

    def request(self, method: str, params: Any = None) -> None:
        self.next_id += 1
        self.sent.add(self.next_id)
        self.machine.receive(req(self.next_id, method, params), self.now)
        self.collect()

    @precondition(lambda self: not self.ready)
    @rule()
    def initialize(self) -> None:
        self.sent.add(1)
        self.machine.receive(req(1, "initialize", {
            "protocolVersion": "2025-11-25", "capabilities": CAPS,
            "clientInfo": {"name": "t", "version": "1"}}), self.now)
        self.collect()
        self.machine.receive(note("notifications/initialized"), self.now)
        self.ready = True
        self.collect()

    @rule()
    def ping(self) -> None:
        self.request("ping")

    @precondition(lambda self: self.ready)
    @rule(call=st.booleans())
    def use_a_tool(self, call: bool) -> None:
        if call:
            self.request("tools/call", {"name": "kit_echo", "arguments": {"text": "x"}})
        else:
            self.request("tools/list")

    @precondition(lambda self: bool(self.kit_requests))
    @rule(data=st.data())
    def answer_a_kit_request(self, data: st.DataObject) -> None:
        message = self.kit_requests.pop(data.draw(st.integers(0, len(self.kit_requests) - 1)))
        self.machine.receive({"jsonrpc": "2.0", "id": message["id"],
                              "result": GOOD_RESULTS[message["method"]]}, self.now)
        self.collect()

    @precondition(lambda self: any(m["method"] == "roots/list" for m in self.kit_requests))
    @rule(step=st.floats(min_value=0.01, max_value=10))
    def report_progress(self, step: float) -> None:
        message = next(m for m in self.kit_requests if m["method"] == "roots/list")
        token = message["params"]["_meta"]["progressToken"]
        value = self.progress.get(token, 0.0) + step
        self.progress[token] = value
        self.machine.receive(note("notifications/progress", {"progressToken": token,
                                                             "progress": value}), self.now)

    @rule(dt=st.floats(min_value=0, max_value=1.5))
    def time_passes(self, dt: float) -> None:
        # A correct client answers within the call timeout: time only passes while nothing
        # of the kit's has waited close to it.
        waiting = [self.asked_at[m["id"]] for m in self.kit_requests]
        if waiting:
            dt = min(dt, max(0.0, min(waiting) + 4.0 - self.now))
        self.now += dt
        self.machine.tick(self.now)
        self.collect()

    @invariant()
    def no_finding_and_no_double_answer(self) -> None:
        assert not self.machine.report.findings, self.machine.report.summary()
        assert all(n == 1 for n in self.answers.values())

    def teardown(self) -> None:
        for _ in range(20):
            while self.kit_requests:
                message = self.kit_requests.pop(0)
                self.machine.receive({"jsonrpc": "2.0", "id": message["id"],
                                      "result": GOOD_RESULTS[message["method"]]}, self.now)
                self.collect()
            self.now += 0.5
            self.machine.tick(self.now)
            self.collect()
        self.machine.close(self.now, exit_code=0)
        assert not self.machine.report.findings, self.machine.report.summary()
        assert set(self.answers) == self.sent, (self.sent - set(self.answers))
        assert all(n == 1 for n in self.answers.values())


TestCorrectClient = CorrectClient.TestCase
TestCorrectClient.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)


GATED = [(revision, method) for revision in HANDSHAKE_REVISIONS
         for method, gate in _GATES.items()
         if gate is not None and gate[0] != "tools"
         and bundled().request_definition(revision, method) is not None
         and not (method == "completion/complete" and revision == "2024-11-05")]


@pytest.mark.parametrize(("revision", "method"), GATED)
def test_the_gate_table_per_revision(revision: str, method: str) -> None:
    machine = ClientMachine(revision=revision)
    initialize(machine)
    machine.receive(req(7, method, {}), 0.5)
    [finding] = machine.report.findings
    assert finding.rule == "client-capability-gating"
    # "Only use capabilities that were successfully negotiated": a MUST from 2025-06-18.
    assert finding.requirement == ("must" if revision >= "2025-06-18" else "should")
    [answer] = messages(machine.take())
    assert answer["error"]["code"] == -32601


def test_completion_is_ungated_in_2024_11_05() -> None:
    machine = ClientMachine(revision="2024-11-05")
    initialize(machine)
    machine.receive(req(7, "completion/complete", {
        "ref": {"type": "ref/prompt", "name": "p"},
        "argument": {"name": "a", "value": "b"}}), 0.5)
    assert "client-capability-gating" not in machine.report.rules()


def test_findings_are_json_serializable() -> None:
    import json

    machine = ClientMachine()
    machine.receive_garbage(b"\xff not json", 0.0)
    initialize(machine)
    machine.receive(req(5, "resources/list"), 0.5)
    for finding in machine.report:
        json.dumps({"sent": finding.sent, "received": finding.received})


def test_findings_cite_their_rule_and_say_when_the_run_was_cut_short() -> None:
    machine = ClientMachine()
    initialize(machine)
    machine.receive(req(5, "resources/list"), 0.5)
    machine.mark_cut_short()
    machine.receive(req(6, "prompts/list"), 0.6)
    first, second = machine.report.findings
    # Where the Finding class carries a citation and a cut-short mark, they are filled.
    assert getattr(first, "source", CHECKS[first.rule].source) == CHECKS[first.rule].source
    assert getattr(first, "cut_short", False) is False
    assert getattr(second, "cut_short", True) is True
    assert getattr(machine.report, "cut_short", True) is True


@pytest.mark.parametrize(("exit_code", "found"), [(3, True), (0, False), (None, False)])
def test_leaving_with_the_liveness_ping_due(exit_code: int | None, found: bool) -> None:
    machine = ClientMachine()
    initialize(machine)
    machine.receive(req(2, "tools/list"), 0.5)
    for _ in range(4):  # ping, roots/list, sampling, elicitation; then the hostile output
        [probe] = [m for m in messages(machine.take()) if "method" in m and "id" in m]
        machine.receive({"jsonrpc": "2.0", "id": probe["id"],
                         "result": GOOD_RESULTS[probe["method"]]}, 1.0)
    assert "hostile output sent" in machine.steps
    machine.close(2.0, exit_code=exit_code)
    assert (machine.report.rules() == {"client-robustness"}) == found
    assert machine.report.rules() <= {"client-robustness"}


def test_legacy_sse_endpoint_and_posts() -> None:
    machine = ClientMachine(transport="sse")
    assert machine.era_now == "handshake"
    # Before the stream is open, a POST is the back-compatibility probe: 405, no finding.
    assert machine.sse_post("/sse", req(1, "initialize"), 0.0) == 405
    endpoint = machine.sse_endpoint(0.0)
    assert endpoint is not None and "?" in endpoint
    assert machine.sse_endpoint(0.1) is None  # one stream per run
    assert machine.sse_post(endpoint, req(1, "initialize"), 0.2) is None
    assert not machine.report.findings
    # Everything the kit sends goes on the one stream, without SSE ids.
    initialize(machine)
    assert machine.session_id is None
    machine.receive(req(2, "tools/list"), 0.3)
    machine.tick(0.3)
    outs = machine.take()
    assert outs and all(o.stream == "main" and o.event_id is None for o in outs)
    # A message POSTed anywhere but the endpoint, query included, is found (and still taken).
    path = endpoint.split("?")[0]
    assert machine.sse_post(path, note("notifications/roots/list_changed"), 0.4) is None
    assert machine.report.rules() == {"client-sse-endpoint"}


def test_the_legacy_transport_has_no_stateless_era() -> None:
    with pytest.raises(ValueError, match="stateless"):
        ClientMachine(transport="sse", era="stateless")
    with pytest.raises(ValueError, match="stateless"):
        ClientMachine(transport="sse", revision="2026-07-28")


URL_CAPS = {**CAPS, "elicitation": {"form": {}, "url": {}}}


@pytest.mark.parametrize(("answer", "rules"), [
    ({"action": "accept"}, set()),
    ({"action": "decline"}, set()),
    ({"action": "accept", "content": {"answer": "yes"}}, {"client-elicitation-url-result"}),
    ({"content": {}}, {"client-result-schema"}),
])
def test_a_url_mode_elicitation_and_its_answer(answer: dict[str, Any],
                                               rules: set[str]) -> None:
    machine = ClientMachine()
    initialize(machine, URL_CAPS)
    machine.receive(req(2, "tools/list"), 0.5)
    outs: list[Out] = []
    url_ids: list[Any] = []

    def elicit(message: dict[str, Any]) -> None:
        if (message.get("params") or {}).get("mode") == "url":
            url_ids.append(message["id"])

    for _ in range(10):
        batch = machine.take()
        outs += batch
        pending = [m for m in messages(batch) if "method" in m and "id" in m]
        if not pending:
            break
        for message in pending:
            elicit(message)
            result = {"ping": {}, "roots/list": {"roots": []},
                      "sampling/createMessage": {"role": "assistant", "model": "m",
                                                 "content": {"type": "text", "text": "hi"}},
                      }.get(message["method"], {"action": "decline"})
            if message["id"] in url_ids:
                result = answer
            machine.receive({"jsonrpc": "2.0", "id": message["id"], "result": result}, 1.0)
    assert len(url_ids) == 1
    assert machine.report.rules() == rules, machine.report.summary()
    completes = [m for m in messages(outs)
                 if m.get("method") == "notifications/elicitation/complete"]
    assert len(completes) == (1 if answer.get("action") == "accept" else 0)


@pytest.mark.parametrize("caps", [CAPS, {**CAPS, "elicitation": {"form": {}}}])
def test_no_url_mode_elicitation_without_the_capability(caps: dict[str, Any]) -> None:
    machine = ClientMachine()
    initialize(machine, caps)
    machine.receive(req(2, "tools/list"), 0.5)
    outs: list[Out] = []
    answer_probes(machine, outs=outs)
    modes = [(m.get("params") or {}).get("mode") for m in messages(outs)
             if m.get("method") == "elicitation/create"]
    assert modes == ["form"]


TASK_CAPS = {**CAPS, "tasks": {"requests": {"sampling": {"createMessage": {}}}}}
TASK = {"taskId": "t-1", "status": "completed", "ttl": 60000,
        "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z"}
SAMPLED = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "hi"}}


@pytest.mark.parametrize(("answers", "rules", "seen"), [
    ({}, set(), ["tasks/get", "tasks/result"]),
    ({"create": SAMPLED}, {"client-task-result"}, []),
    ({"get": {k: v for k, v in TASK.items() if k != "status"}}, {"client-task-result"},
     ["tasks/get", "tasks/result"]),
    ({"get": {**TASK, "taskId": "other"}}, {"client-task-result"},
     ["tasks/get", "tasks/result"]),
    ({"result": {"rezult": 1}}, {"client-task-result"}, ["tasks/get", "tasks/result"]),
])
def test_a_task_augmented_sampling_and_the_task_requests(
        answers: dict[str, Any], rules: set[str], seen: list[str]) -> None:
    machine = ClientMachine()
    initialize(machine, TASK_CAPS)
    machine.receive(req(2, "tools/list"), 0.5)
    methods = answer_probes(machine, results={
        "sampling/createMessage": answers.get("create", {"task": TASK}),
        "tasks/get": answers.get("get", TASK),
        "tasks/result": answers.get("result", SAMPLED)})
    assert [m for m in methods if m.startswith("tasks/")] == seen
    assert machine.report.rules() == rules, machine.report.summary()


def test_no_task_augmentation_without_the_capability() -> None:
    machine = ClientMachine()
    initialize(machine, {**CAPS, "tasks": {"list": {}}})
    machine.receive(req(2, "tools/list"), 0.5)
    outs: list[Out] = []
    answer_probes(machine, outs=outs)
    [sampling] = [m for m in messages(outs) if m.get("method") == "sampling/createMessage"]
    assert "task" not in sampling["params"]
    assert not machine.report.findings
