"""The client checks of the 2026-07-28 listen streams and tasks extension: the kit's
machine driven by scripted clients (no process, no clock), then real client processes --
ours on every runtime and transport (no finding, every step taken) and the broken ones (each
exactly its finding; the zoo's table is in tests/check/test_check_client.py)."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_sansio.adapters.testing_client import check_client

from mcp_sansio.testing import CHECKS, Report
from mcp_sansio.testing._client_machine import ClientMachine, Out
from mcp_sansio.testing._client_stateless import TASK_POLL_MS, TASKS_EXTENSION
from tests.paths import PEERS

CAPS: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}}
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"


def meta(caps: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": CAPS if caps is None else caps}


def req(request_id: Any, method: str, params: dict[str, Any] | None = None,
        caps: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {"_meta": meta(caps), **(params or {})}}


def cancel(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": request_id}}


def messages(outs: list[Out]) -> list[Any]:
    return [o.message for o in outs if o.message is not None]


def heads(message: dict[str, Any]) -> dict[str, str]:
    out = {"mcp-protocol-version": "2026-07-28"}
    if "method" in message and "id" in message:
        out["mcp-method"] = message["method"]
    return out


# -- listen streams ---------------------------------------------------------------------------


@pytest.mark.parametrize("asked", [{"toolsListChanged": True},
                                   {"promptsListChanged": True, "resourceSubscriptions": ["x"]},
                                   {}])
def test_a_listen_stream_is_acknowledged_with_the_honoured_subset(asked: dict[str, Any]
                                                                  ) -> None:
    machine = ClientMachine(era="stateless")
    machine.receive(req(7, "subscriptions/listen", {"notifications": asked}), 0.0)
    sent = messages(machine.take())
    # 2026-07-28 subscriptions: the acknowledgement first, every message tagged with the
    # listen's id, only what was asked and the kit honours (tools.listChanged); no answer.
    assert sent[0]["method"] == "notifications/subscriptions/acknowledged"
    honoured = {"toolsListChanged": True} if asked.get("toolsListChanged") else {}
    assert sent[0]["params"]["notifications"] == honoured
    assert [m["params"]["_meta"][SUBSCRIPTION] for m in sent] == [7] * len(sent)
    assert [m["method"] for m in sent[1:]] == (
        ["notifications/tools/list_changed"] if honoured else [])
    assert not any("id" in m for m in sent)
    machine.close(1.0, exit_code=0)
    assert not machine.report.findings


def test_the_kit_declares_what_its_listen_streams_and_tasks_need() -> None:
    machine = ClientMachine(era="stateless")
    machine.receive(req(1, "server/discover"), 0.0)
    [answer] = messages(machine.take())
    assert answer["result"]["capabilities"] == {"tools": {"listChanged": True},
                                                "extensions": {TASKS_EXTENSION: {}}}


def test_a_stdio_client_cancels_its_listen_stream() -> None:
    machine = ClientMachine(era="stateless")
    machine.receive(req(7, "subscriptions/listen", {"notifications": {}}), 0.0)
    machine.receive(cancel(7), 0.5)
    machine.receive(req(7, "tools/list"), 0.6)  # the id is free again once cancelled
    machine.close(1.0, exit_code=0)
    assert not machine.report.findings
    assert "listen cancelled" in machine.steps


def test_the_listen_id_is_outstanding_while_the_stream_is_open() -> None:
    machine = ClientMachine(era="stateless")
    machine.receive(req(7, "subscriptions/listen", {"notifications": {}}), 0.0)
    machine.receive(req(7, "tools/list"), 0.5)
    assert machine.report.rules() == {"client-id-reused"}


def test_an_http_client_ends_its_listen_stream_by_closing_it() -> None:
    machine = ClientMachine(era="stateless", transport="http")
    listen = req(7, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    machine.receive(listen, 0.0, headers=heads(listen))
    assert {o.stream for o in machine.take()} == {ClientMachine.stream_key(7)}
    machine.stream_closed(ClientMachine.stream_key(7), 0.5)
    machine.close(1.0, exit_code=0)
    assert not machine.report.findings
    assert "listen stream closed by the client" in machine.steps


def test_a_posted_cancellation_of_a_listen_stream_is_found() -> None:
    machine = ClientMachine(era="stateless", transport="http")
    listen = req(7, "subscriptions/listen", {"notifications": {}})
    machine.receive(listen, 0.0, headers=heads(listen))
    machine.receive(cancel(7), 0.5, headers=heads(cancel(7)))
    assert machine.report.rules() == {"client-listen"}
    assert machine.report.findings[0].requirement == CHECKS["client-listen"].requirement


def test_listen_is_no_request_of_the_handshake_era() -> None:
    machine = ClientMachine(era="handshake")
    machine.receive({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}, 0.0)
    machine.receive({"jsonrpc": "2.0", "method": "notifications/initialized"}, 0.1)
    machine.receive({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen",
                     "params": {"notifications": {}}}, 0.2)
    assert machine.report.rules() == {"client-unknown-request"}


# -- the tasks extension ----------------------------------------------------------------------


def created(machine: ClientMachine, caps: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tools/call through its input_required round; the answer to the retry."""
    call = {"name": "kit_echo", "arguments": {"text": "hi"}}
    machine.receive(req(1, "tools/call", call, caps), 0.0)
    first = messages(machine.take())[-1]["result"]
    machine.receive(req(2, "tools/call", {**call, "inputResponses": {},
                                          "requestState": first["requestState"]}, caps), 0.1)
    answer: dict[str, Any] = messages(machine.take())[-1]["result"]
    return answer


def get(machine: ClientMachine, request_id: int, now: float, task_id: str,
        caps: dict[str, Any] | None = None) -> dict[str, Any]:
    machine.receive(req(request_id, "tasks/get", {"taskId": task_id}, caps), now)
    [answer] = messages(machine.take())
    return answer  # type: ignore[no-any-return]


def test_a_client_without_the_extension_gets_the_plain_result() -> None:
    machine = ClientMachine(era="stateless")
    result = created(machine, caps={})
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": "hi"}]


def test_a_task_followed_to_its_end() -> None:
    machine = ClientMachine(era="stateless")
    task = created(machine)
    assert task["resultType"] == "task" and task["status"] == "working"
    assert task["pollIntervalMs"] == TASK_POLL_MS
    step = TASK_POLL_MS / 1000 * 1.5
    first = get(machine, 3, 0.1 + step, task["taskId"])["result"]
    assert (first["resultType"], first["status"]) == ("complete", "working")
    assert "result" not in first
    second = get(machine, 4, 0.1 + 2 * step, task["taskId"])["result"]
    assert second["status"] == "completed"
    assert second["result"]["content"] == [{"type": "text", "text": "hi"}]
    machine.close(1.0, exit_code=0)
    assert not machine.report.findings


def test_a_poll_before_the_interval_is_found() -> None:
    machine = ClientMachine(era="stateless")
    task = created(machine)
    get(machine, 3, 0.1 + TASK_POLL_MS / 1000 / 2, task["taskId"])
    assert machine.report.rules() == {"client-task-poll"}
    assert machine.report.findings[0].requirement == CHECKS["client-task-poll"].requirement


@pytest.mark.parametrize("polls", [0, 1])
def test_a_task_left_running_is_found(polls: int) -> None:
    machine = ClientMachine(era="stateless")
    task = created(machine)
    for n in range(polls):
        get(machine, 3 + n, 1.0 + n, task["taskId"])
    machine.close(5.0, exit_code=0)
    assert machine.report.rules() == {"client-task-poll"}


def test_a_cancelled_task_needs_no_more_polling() -> None:
    machine = ClientMachine(era="stateless")
    task = created(machine)
    machine.receive(req(3, "tasks/cancel", {"taskId": task["taskId"]}), 0.15)
    assert messages(machine.take())[0]["result"] == {"resultType": "complete"}
    # Read once right after the acknowledgement: no interval owed for a settled task.
    assert get(machine, 4, 0.16, task["taskId"])["result"]["status"] == "cancelled"
    machine.close(1.0, exit_code=0)
    assert not machine.report.findings


def test_task_requests_without_the_extension_or_for_an_unknown_task() -> None:
    machine = ClientMachine(era="stateless")
    task = created(machine)
    refused = get(machine, 3, 1.0, task["taskId"], caps={})
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"] == {"requiredCapabilities": {
        "extensions": {TASKS_EXTENSION: {}}}}
    assert get(machine, 4, 2.0, "no-such-task")["error"]["code"] == -32602
    machine.receive(req(5, "tasks/update", {"taskId": task["taskId"],
                                            "inputResponses": {}}), 3.0)
    assert messages(machine.take())[0]["result"] == {"resultType": "complete"}
    assert not machine.report.findings
    # tasks/result and tasks/list are not the extension's (2025-11-25 only).
    machine.receive(req(6, "tasks/result", {"taskId": task["taskId"]}), 4.0)
    assert machine.report.rules() == {"client-unknown-request"}


def test_a_tasks_update_answering_what_was_never_asked_is_found() -> None:
    machine = ClientMachine(era="stateless")
    task = created(machine)
    machine.receive(req(3, "tasks/update", {"taskId": task["taskId"], "inputResponses": {
        "confirm": {"action": "accept"}}}), 0.5)
    assert machine.report.rules() == {"client-task-update"}
    assert machine.report.findings[0].requirement == "must"


# -- real clients ---------------------------------------------------------------------------

#: One of our clients declaring the tasks extension, with the listen and task exercises on
#: (kit_clients.py).
CLIENT = ("import sys; sys.path.insert(0, sys.argv.pop(1)); import kit_clients; "
          "kit_clients.OPTIONS['capabilities'] = {'extensions': {'"
          + TASKS_EXTENSION + "': {}}}; kit_clients.EXERCISES.update({'listen', 'task'}); "
          "sys.exit(kit_clients.main(sys.argv[1:]))")
STEPS = ["listen acknowledged", "task created", "tasks/get answered (working)",
         "tasks/get answered (completed)"]


def steps(report: Report) -> str:
    return " ".join(n for n in report.notes if n.startswith("steps: "))


def run(cmd: list[str], http: bool) -> Report:
    return check_client(cmd, http=http, era="stateless", budget=120, call_timeout=10,
                        examples=3)


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
@pytest.mark.parametrize("runtime", ["asyncio", "trio", "threads"])
def test_our_clients_listen_and_follow_tasks(runtime: str, http: bool) -> None:
    cmd = [sys.executable, "-c", CLIENT, str(PEERS), runtime, "--era", "stateless",
           *(["--http"] if http else ["--", "{server}"])]
    report = run(cmd, http)
    assert not report.findings, report.summary()
    for step in [*STEPS, *([] if http else ["listen cancelled"])]:
        assert step in steps(report), report.summary()


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
def test_the_plain_client_listens_and_polls_correctly(http: bool) -> None:
    cmd = [sys.executable, str(PEERS / "broken_clients.py"), "none", "--era", "stateless",
           *(["--http"] if http else ["--", "{server}"])]
    report = run(cmd, http)
    assert not report.findings, report.summary()
    for step in STEPS:
        assert step in steps(report), report.summary()


# -- never an exception: whatever a client sends in this era ----------------------------------

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)
_IDS = st.integers(0, 4) | st.sampled_from(["a", None, [1], {"x": 1}, True])
_METHODS = st.sampled_from(["subscriptions/listen", "tasks/get", "tasks/update",
                            "tasks/cancel", "tasks/result", "tools/call", "tools/list",
                            "server/discover"])


@st.composite
def _messages(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        return {"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": draw(_IDS)}}
    params: dict[str, Any] = {}
    if draw(st.booleans()):
        caps = draw(st.sampled_from([CAPS, {}, {"extensions": None},
                                     {"extensions": {TASKS_EXTENSION: 1}}]))
        params["_meta"] = meta(caps)
    for key in draw(st.lists(st.sampled_from(["notifications", "taskId", "name",
                                              "arguments", "inputResponses",
                                              "requestState"]), max_size=3)):
        params[key] = draw(st.sampled_from(["kit-task-1", "kit_echo"]) | _JSON)
    return {"jsonrpc": "2.0", "id": draw(_IDS), "method": draw(_METHODS),
            "params": params}


@settings(max_examples=150, deadline=None)
@given(transport=st.sampled_from(["stdio", "http"]),
       script=st.lists(st.tuples(_messages(), st.booleans()), max_size=12))
def test_the_stateless_half_never_raises(transport: str,
                                         script: list[tuple[dict[str, Any], bool]]) -> None:
    machine = ClientMachine(era="stateless", transport=transport, call_timeout=1.0)
    now = 0.0
    for message, close_stream in script:
        now += 0.07
        machine.receive(message, now, headers=heads(message) if transport == "http" else None)
        if close_stream and "id" in message:
            machine.stream_closed(ClientMachine.stream_key(message["id"]), now)
        machine.tick(now)
        machine.take()
    machine.close(now + 5, exit_code=0)
    assert all(f.rule in CHECKS for f in machine.report.findings)


# -- the command line: a report and an exit status, never a traceback ---------------------------


@pytest.mark.parametrize(("form", "fault", "rule"), [
    ("--client", "task-ignored", "client-task-poll"),
    ("--client-url", "listen-cancel-post", "client-listen"),
    ("--client-url", "none", ""),
])
def test_the_command_line_reports_listen_and_task_findings(
        form: str, fault: str, rule: str, capfd: pytest.CaptureFixture[str]) -> None:
    from mcp_sansio.adapters.tools import _check_cli

    tail = ["--", "{server}"] if form == "--client" else ["--http"]
    command = [sys.executable, str(PEERS / "broken_clients.py"), fault, "--era", "stateless",
               *tail]
    code = _check_cli.main([form, "--era", "stateless", "--seed", "3", "--budget", "90",
                            "--examples", "3", "--", *command])
    text = "".join(capfd.readouterr())
    # Both are SHOULDs: a report, exit 0 (only a MUST fails a run), no traceback.
    assert code == 0, text
    assert "Traceback" not in text
    assert (f"{rule} (SHOULD)" in text) if rule else ("no findings" in text), text
