"""The example server (``mcp-sansio serve-example``) over Streamable HTTP on each runtime, as
the conformance harness sees it: the tasks-extension fixtures (greet, slow_compute,
failing_job, protocol_error_job, confirm_delete, multi_input, test_tool_with_task), the
``x-mcp-header`` fixture, and ``run_http``'s runtime and ``allowed_hosts`` options.

The server runs as a real subprocess (``run_http(runtime=...)``); the client is a blocking
``http.client`` speaking 2026-07-28 by hand, so what is checked is the wire."""

from __future__ import annotations

import http.client
import itertools
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from mcp_sansio.adapters.common.tasks import TASKS_EXTENSION

from tests.http_util import CLIENT_INFO

RUNTIMES = ["asyncio", "trio", "threading"]
TASKS_CAPS = {"extensions": {TASKS_EXTENSION: {}}}
#: What a request declares unless a test says otherwise: the extension, and elicitation.
CAPS = {"elicitation": {}, **TASKS_CAPS}
_ids = itertools.count(1)


class Example:
    """A running example server and a keep-alive connection to it."""

    def __init__(self, runtime: str, **options: Any) -> None:
        code = ("import sys, json; from mcp_sansio.adapters.tools._example_server import run_http; "
                "run_http(runtime=sys.argv[1], **json.loads(sys.argv[2]))")
        self.proc = subprocess.Popen([sys.executable, "-c", code, runtime, json.dumps(options)],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), self.url
        parts = urlsplit(self.url)
        self.port = parts.port
        self.path = parts.path
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def close(self) -> None:
        self.conn.close()
        self.proc.terminate()
        self.proc.wait(10)

    def post(self, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        """POST one message; the JSON-RPC response (from JSON or the SSE stream)."""
        data = json.dumps(body).encode()
        self.conn.request("POST", self.path, data, {
            "content-type": "application/json", "accept": "application/json, text/event-stream",
            **headers})
        response = self.conn.getresponse()
        raw = response.read().decode()
        self.last_headers = {k.lower(): v for k, v in response.getheaders()}
        if response.getheader("content-type", "").startswith("text/event-stream"):
            messages = [json.loads(line[5:]) for line in raw.splitlines()
                        if line.startswith("data:") and line[5:].strip()]
            answers = [m for m in messages if "id" in m and ("result" in m or "error" in m)]
            return response.status, answers[-1]
        return response.status, json.loads(raw) if raw else None

    def call(self, method: str, params: dict[str, Any], *, caps: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
        """A 2026-07-28 request with its mirrored headers (Mcp-Name from the body)."""
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps if caps is not None
                else CAPS,
                "io.modelcontextprotocol/clientInfo": CLIENT_INFO}
        body = {"jsonrpc": "2.0", "id": next(_ids), "method": method,
                "params": {**params, "_meta": {**meta, **params.get("_meta", {})}}}
        hdrs = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
        name = params.get("name", params.get("taskId"))
        if isinstance(name, str):
            hdrs["mcp-name"] = name
        hdrs.update(headers or {})
        return self.post(body, hdrs)

    def result(self, method: str, params: dict[str, Any], **options: Any) -> dict[str, Any]:
        status, message = self.call(method, params, **options)
        assert status == 200 and "result" in message, (status, message)
        return message["result"]  # type: ignore[no-any-return]

    def error(self, method: str, params: dict[str, Any], **options: Any
              ) -> tuple[int, dict[str, Any]]:
        status, message = self.call(method, params, **options)
        assert "error" in message, message
        return status, message["error"]

    def tool(self, name: str, arguments: dict[str, Any] | None = None,
             **options: Any) -> dict[str, Any]:
        return self.result("tools/call", {"name": name, "arguments": arguments or {}},
                           **options)

    def until(self, task_id: str, *statuses: str, timeout: float = 10.0) -> dict[str, Any]:
        """Poll tasks/get until the task reaches one of ``statuses`` (or any terminal one)."""
        end = time.monotonic() + timeout
        while True:
            task = self.result("tasks/get", {"taskId": task_id})
            if task["status"] in (*statuses, "completed", "failed", "cancelled"):
                return task
            assert time.monotonic() < end, f"task {task_id} stuck in {task['status']}"
            time.sleep(0.05)


@pytest.fixture(params=RUNTIMES)
def example(request: pytest.FixtureRequest) -> Iterator[Example]:
    if request.param == "trio":
        pytest.importorskip("trio")
    server = Example(request.param)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def on_asyncio() -> Iterator[Example]:
    server = Example("asyncio")
    try:
        yield server
    finally:
        server.close()


def _text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


# -- on every runtime -------------------------------------------------------------------------


def test_task_lifecycle_on_each_runtime(example: Example) -> None:
    assert example.tool("greet", {"name": "World"}) == {
        "resultType": "complete", "content": [{"type": "text", "text": "Hello, World!"}],
        "_meta": example.tool("greet", {"name": "World"})["_meta"]}

    created = example.tool("slow_compute", {"seconds": 0.3, "label": "x"})
    assert created["resultType"] == "task"
    assert {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs",
            "pollIntervalMs"} <= created.keys()
    assert not {"task", "result", "error", "inputRequests", "requestState", "ttl",
                "pollInterval"} & created.keys()
    assert isinstance(created["ttlMs"], int) and created["ttlMs"] > 0
    working = example.result("tasks/get", {"taskId": created["taskId"]})
    assert working["status"] == "working" and "result" not in working
    done = example.until(created["taskId"])
    assert done["status"] == "completed" and done["resultType"] == "complete"
    assert _text(done["result"]) == "computed x after 0.3 s"

    # Cancelling a running task: an empty ack, then the status is cancelled for good.
    running = example.tool("slow_compute", {"seconds": 60})
    ack = example.result("tasks/cancel", {"taskId": running["taskId"]})
    assert {k: v for k, v in ack.items() if k != "_meta"} == {"resultType": "complete"}
    assert example.result("tasks/get", {"taskId": running["taskId"]})["status"] == "cancelled"
    # ... and again (idempotent), on a terminal task.
    ack = example.result("tasks/cancel", {"taskId": running["taskId"]})
    assert {k: v for k, v in ack.items() if k != "_meta"} == {"resultType": "complete"}


def test_a_task_asks_and_is_answered_with_tasks_update(example: Example) -> None:
    created = example.tool("confirm_delete", {"filename": "a.txt"})
    parked = example.until(created["taskId"], "input_required")
    assert parked["status"] == "input_required"
    [(key, question)] = parked["inputRequests"].items()
    assert question["method"] == "elicitation/create"
    ack = example.result("tasks/update", {"taskId": created["taskId"], "inputResponses": {
        key: {"action": "accept", "content": {"confirm": True}}}})
    assert {k: v for k, v in ack.items() if k != "_meta"} == {"resultType": "complete"}
    done = example.until(created["taskId"])
    assert done["status"] == "completed" and _text(done["result"]) == "deleted a.txt"

    # A client that cannot elicit: the task fails with -32021 naming what it lacks.
    created = example.tool("confirm_delete", {"filename": "b.txt"}, caps=TASKS_CAPS)
    failed = example.until(created["taskId"])
    assert failed["status"] == "failed" and failed["error"]["code"] == -32021
    assert failed["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}


# -- the rest of the fixtures, on asyncio ---------------------------------------------------------


def test_partial_answers_keep_a_task_waiting(on_asyncio: Example) -> None:
    ex = on_asyncio
    created = ex.tool("multi_input")
    parked = ex.until(created["taskId"], "input_required")
    first, second = sorted(parked["inputRequests"])
    ex.result("tasks/update", {"taskId": created["taskId"], "inputResponses": {
        first: {"action": "accept", "content": {"name": "Ada", "confirm": True}},
        "no-such-key": {"action": "accept"}}})
    still = ex.result("tasks/get", {"taskId": created["taskId"]})
    assert still["status"] == "input_required" and list(still["inputRequests"]) == [second]
    ex.result("tasks/update", {"taskId": created["taskId"], "inputResponses": {
        second: {"action": "accept", "content": {"name": "Ada", "confirm": True}}}})
    done = ex.until(created["taskId"])
    assert done["status"] == "completed"
    assert _text(done["result"]) == "Hello, Ada! (confirmed: accept)"


def test_tool_errors_complete_and_protocol_errors_fail(on_asyncio: Example) -> None:
    ex = on_asyncio
    failing = ex.until(ex.tool("failing_job")["taskId"])
    assert failing["status"] == "completed" and failing["result"]["isError"] is True
    broken = ex.until(ex.tool("protocol_error_job")["taskId"])
    assert broken["status"] == "failed" and "result" not in broken
    # A generic message: the exception's text stays in the server's log.
    assert broken["error"] == {"code": -32603, "message": "Internal error"}


def test_without_the_extension_tools_run_plainly_and_tasks_are_refused(
        on_asyncio: Example) -> None:
    ex = on_asyncio
    plain = ex.tool("slow_compute", {"seconds": 0}, caps={})
    assert plain["resultType"] == "complete" and "taskId" not in plain
    status, error = ex.error("tools/call", {"name": "failing_job", "arguments": {}}, caps={})
    assert status == 400 and error["code"] == -32021
    assert error["data"]["requiredCapabilities"] == TASKS_CAPS
    for method, params in [("tasks/get", {"taskId": "t"}), ("tasks/cancel", {"taskId": "t"}),
                           ("tasks/update", {"taskId": "t", "inputResponses": {}})]:
        status, error = ex.error(method, params, caps={})
        assert (status, error["code"]) == (400, -32021), method
    # A request may opt in on its own (its _meta), whatever the others declared.
    created = ex.tool("slow_compute", {"seconds": 60}, caps={"extensions": {
        TASKS_EXTENSION: {}}})
    assert created["resultType"] == "task"
    ex.result("tasks/cancel", {"taskId": created["taskId"]})


def test_removed_methods_unknown_ids_and_a_legacy_task_param(on_asyncio: Example) -> None:
    ex = on_asyncio
    for method in ("tasks/result", "tasks/list"):
        _, error = ex.error(method, {"taskId": "t"} if method == "tasks/result" else {})
        assert error["code"] == -32601, method
    _, error = ex.error("tasks/get", {"taskId": "no-such-task"})
    assert error["code"] == -32602
    legacy = ex.result("tools/call", {"name": "greet", "arguments": {"name": "v1"},
                                      "task": {"ttl": 60000}})
    assert legacy["resultType"] == "complete" and "taskId" not in legacy


def test_input_gathered_before_the_task_reaches_its_result(on_asyncio: Example) -> None:
    ex = on_asyncio
    round1 = ex.tool("test_tool_with_task")
    assert round1["resultType"] == "input_required" and "taskId" not in round1
    [key] = round1["inputRequests"]
    retry: dict[str, Any] = {"name": "test_tool_with_task", "arguments": {},
                             "inputResponses": {key: {"action": "accept",
                                                      "content": {"name": "Alice"}}}}
    if "requestState" in round1:
        retry["requestState"] = round1["requestState"]
    created = ex.result("tools/call", retry)
    assert created["resultType"] == "task" and "requestState" not in created
    done = ex.until(created["taskId"])
    assert done["status"] == "completed" and "Alice" in _text(done["result"])


def test_routing_and_param_headers_are_checked(on_asyncio: Example) -> None:
    ex = on_asyncio
    created = ex.tool("slow_compute", {"seconds": 60})
    status, error = ex.error("tasks/get", {"taskId": created["taskId"]},
                             headers={"mcp-name": "another-task"})
    assert (status, error["code"]) == (400, -32020)
    ex.result("tasks/cancel", {"taskId": created["taskId"]})

    tools = ex.result("tools/list", {})["tools"]
    [annotated] = [t for t in tools if t["name"] == "test_param_headers"]
    assert annotated["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"
    ok = ex.tool("test_param_headers", {"region": "eu"}, headers={"mcp-param-region": "eu"})
    assert _text(ok) == "region=eu, query="
    status, error = ex.error("tools/call", {"name": "test_param_headers",
                                            "arguments": {"region": "eu"}})
    assert (status, error["code"]) == (400, -32020)  # the header is missing
    status, error = ex.error("tools/call", {"name": "test_param_headers",
                                            "arguments": {"region": "eu"}},
                             headers={"mcp-param-region": "us"})
    assert (status, error["code"]) == (400, -32020)  # it does not match


def test_task_tools_declare_their_support(on_asyncio: Example) -> None:
    tools = {t["name"]: t for t in on_asyncio.result("tools/list", {})["tools"]}
    assert "execution" not in tools["greet"]
    assert tools["slow_compute"]["execution"] == {"taskSupport": "optional"}
    assert tools["failing_job"]["execution"] == {"taskSupport": "required"}
    discover = on_asyncio.result("server/discover", {})
    assert discover["capabilities"]["extensions"] == {TASKS_EXTENSION: {}}
    assert "tasks" not in discover["capabilities"]


def test_handshake_era_runs_task_tools_synchronously(on_asyncio: Example) -> None:
    ex = on_asyncio
    status, message = ex.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": TASKS_CAPS,
        "clientInfo": CLIENT_INFO}}, {})
    assert status == 200
    assert message["result"]["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    hdrs = {"mcp-session-id": ex.last_headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25"}
    ex.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, hdrs)
    _, message = ex.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "slow_compute", "arguments": {"seconds": 0}}}, hdrs)
    assert "taskId" not in message["result"]
    assert message["result"]["content"][0]["text"] == "computed result after 0 s"
    # 2025-11-25 tasks.mdx: a task-only tool called plainly is -32601.
    _, message = ex.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "failing_job", "arguments": {}}}, hdrs)
    assert message["error"]["code"] == -32601
    # Asked for a task (params.task): 2025-11-25 tasks; tasks/result waits for the end.
    _, message = ex.post({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "slow_compute", "arguments": {"seconds": 0.2}, "task": {"ttl": 1000}}}, hdrs)
    task = message["result"]["task"]
    assert task["status"] == "working" and task["ttl"] == 1000
    _, message = ex.post({"jsonrpc": "2.0", "id": 4, "method": "tasks/result", "params": {
        "taskId": task["taskId"]}}, hdrs)
    assert message["result"]["content"][0]["text"] == "computed result after 0.2 s"


def test_run_http_passes_allowed_hosts_on() -> None:
    ex = Example("asyncio", allowed_hosts=["mcp.example.test"])
    try:
        status, message = ex.call("tools/list", {}, headers={"host": "mcp.example.test"})
        assert status == 200 and message["result"]["tools"]
        status, _ = ex.call("tools/list", {}, headers={"host": f"127.0.0.1:{ex.port}"})
        assert status == 403  # the list replaces the loopback default
    finally:
        ex.close()
