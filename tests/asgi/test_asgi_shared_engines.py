"""Several engine workers sharing a real Redis (tests/_redis.py): ``mcp-sansio serve-example
--engine uvicorn --workers 4 --store URL``, granian and hypercorn (asyncio and, with
``--runtime trio``, its trio worker: adapters/stores/home.py) with two workers each, each
request on a fresh connection, as a round-robin balancer without sticky sessions would
send them.

Which worker served a request is read from the operating system, not guessed: while the
connection is open, the server side of it (``/proc/net/tcp``) is a socket held by exactly
one process of the engine's process group (``/proc/PID/fd``). Fresh connections to one port
shared by several workers spread over them here, but nothing promises that of one
connection; so each scenario sends requests until one lands on a worker other than the one
it wants to differ from (and fails if none does within :data:`TRIES`).

One engine (a module-scoped fixture) serves every scenario in turn, one test each, in the
order below -- the kill last (hypercorn stops all its workers when one dies: there the client
resumes on the engine started again on the same store, as a supervisor would). Each test's id
is ``test_<scenario>[<engine>-<workers>]``; what each proves, and the result per engine when
this table was last brought up to date (``pytest -rA`` prints the current one):

=============================  =====  =========  =========  ===========  ================
scenario: ``test_<scenario>``  era    uvicorn-4  granian-2  hypercorn-2  hypercorn-trio-2
=============================  =====  =========  =========  ===========  ================
``sessions``                   2025   passes     passes     passes       passes
``list_change_fan_out``        both   passes     passes     passes       passes
``request_state_rotation``     2026   passes     passes     passes       passes
``server_requests``            2025   passes     passes     passes       passes
``delete``                     2025   passes     passes     passes       passes
``live_resumption``            2025   passes     passes     passes       passes
``tasks_2025``                 2025   passes     passes     passes       passes
``tasks_2026``                 2026   passes     passes     passes       passes
``killed_writer_resumed``      2025   passes     passes     passes (*)   passes (*)
=============================  =====  =========  =========  ===========  ================

(*) on the hypercorn engine started again, its workers having all stopped with the one killed.

What they do: a handshake-era session initialized on one worker and served by the others
(no sessionless fallback: the key ring is the store's); a list change made on one worker
reaching the GET stream and the 2026-07-28 listen stream held by another (the event bus); a
client's answers to an elicitation, a sampling request and a roots request posted on a
connection another worker accepted, reaching the tool that waits (the bus's answers topic);
a ``requestState`` sealed on one worker opened on another, before and after a key rotation
made during the traffic, until the workers seal with the new key; a DELETE on one worker
seen by the others; a stream broken after its first event, resumed with ``Last-Event-ID``
on another worker, which replays what is stored and relays the rest live to the tool's
answer; a 2025-11-25 task created on one worker polled (``tasks/get``), listed,
fetched with a blocking ``tasks/result`` sent while it works, and another one cancelled,
each on a connection another worker accepted, while another session sees none of them; a
2026-07-28 task (the tasks extension) polled on other workers until its result is inlined;
and a worker killed (SIGKILL) in the middle of a streamed answer: the client resumes with
``Last-Event-ID`` on another worker, which replays what the killed one stored and then ends
the stream (it hears the writer's heartbeats stop: docs/stores.rst, "Workers that die"), so
the client has every stored event, in order, none twice; and the session, and a
``requestState`` the killed worker sealed, carry on at the others.
The in-process twin (two applications,
memory and Redis stores, and one application alone): tests/asgi/test_asgi_shared.py."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._redis import RedisServer, redis_server  # noqa: F401  (the fixture)
from tests.http_util import init_body
from tests.paths import ROOT

if not Path("/proc/net/tcp").exists():  # pragma: no cover - Linux has it
    pytest.skip("finding the worker of a connection needs Linux's /proc", allow_module_level=True)

START = 120.0  # seconds for an engine and its workers to come up: generous, the machine is shared
TIMEOUT = 60.0  # seconds for one answer or stream event: generous, nothing waits on purpose
#: Fresh connections tried before concluding that requests do not spread over the workers.
TRIES = 60
ENGINES = [("uvicorn", 4), ("granian", 2), ("hypercorn", 2), ("hypercorn-trio", 2)]
STATE_TOOL = "test_input_required_result_request_state"


# -- the engine and its workers --------------------------------------------------------------


class Engine:
    """``serve-example --engine E --workers N --store URL`` in a process group of its own
    (``E-trio``: ``--engine E --runtime trio``)."""

    def __init__(self, engine: str, workers: int, store: str) -> None:
        engine, _, runtime = engine.partition("-")
        argv = [sys.executable, "-m", "mcp_sansio", "serve-example", "--transport", "http",
                "--engine", engine, "--runtime", runtime or "asyncio",
                "--workers", str(workers), "--store", store]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True, cwd=ROOT)
        self.err: list[str] = []
        threading.Thread(target=lambda: self.err.extend(self.proc.stderr or ()),
                         daemon=True).start()
        got: list[str] = []
        reader = threading.Thread(target=lambda: got.append(self.proc.stdout.readline()),  # type: ignore[union-attr]
                                  daemon=True)
        reader.start()
        reader.join(START)
        assert got and got[0].startswith("http://127.0.0.1:"), (got, "".join(self.err))
        self.port = int(got[0].strip().rsplit(":", 1)[1].split("/", 1)[0])

    def group(self) -> list[int]:
        """The processes of the engine (its parent and workers)."""
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[2]) == self.proc.pid:  # the pgrp
                    pids.append(int(entry.name))
        return pids

    def worker_of(self, client_port: int) -> int:
        """The process holding the server side of our connection from ``client_port``."""
        inode = None
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(OSError):
                for line in Path(table).read_text().splitlines()[1:]:
                    fields = line.split()
                    local, remote = fields[1], fields[2]
                    if (int(local.rsplit(":", 1)[1], 16) == self.port
                            and int(remote.rsplit(":", 1)[1], 16) == client_port):
                        inode = fields[9]
        assert inode is not None, "our connection is not in the socket table"
        target = f"socket:[{inode}]"
        for pid in self.group():
            with contextlib.suppress(OSError):
                for fd in Path(f"/proc/{pid}/fd").iterdir():
                    with contextlib.suppress(OSError):
                        if os.readlink(fd) == target:
                            return pid
        raise AssertionError("no process of the engine holds our connection")

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextlib.contextmanager
def engine(name: str, workers: int, store: str) -> Iterator[Engine]:
    running = Engine(name, workers, store)
    try:
        yield running
    finally:
        running.stop()


# -- requests, each on a fresh connection ----------------------------------------------------


class Stream:
    """A request whose answer is read as it comes (an SSE stream), on its own connection."""

    def __init__(self, eng: Engine, method: str, body: Any, headers: dict[str, str], *,
                 conn: http.client.HTTPConnection | None = None) -> None:
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", eng.port, timeout=TIMEOUT)
            conn.connect()
        self.conn = conn
        assert self.conn.sock is not None
        client_port = self.conn.sock.getsockname()[1]
        data = json.dumps(body).encode() if body is not None else None
        self.conn.request(method, "/mcp", body=data, headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream", **headers})
        self.response = self.conn.getresponse()
        self.status = self.response.status
        self.headers = {k.lower(): v for k, v in self.response.getheaders()}
        #: The worker process that serves it (None: it answered and closed the connection).
        self.pid = eng.worker_of(client_port) if self.conn.sock is not None else None

    def events(self, count: int) -> list[tuple[str | None, Any]]:
        """The next ``count`` SSE events with data: (id, message)."""
        got: list[tuple[str | None, Any]] = []
        event_id, data = None, []
        while len(got) < count:
            line = self.response.readline().decode()
            assert line, f"the stream ended after {got}"
            line = line.rstrip("\r\n")
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line:
                if data and "".join(data):
                    got.append((event_id, json.loads("\n".join(data))))
                event_id, data = None, []
        return got

    def until_end(self) -> list[tuple[str | None, Any]]:
        """The SSE events with data until the server ends the stream: (id, message)."""
        got: list[tuple[str | None, Any]] = []
        event_id, data = None, []
        for raw in iter(self.response.readline, b""):
            line = raw.decode().rstrip("\r\n")
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line:
                if data and "".join(data):
                    got.append((event_id, json.loads("\n".join(data))))
                event_id, data = None, []
        return got

    def rest(self) -> list[Any]:
        """The whole answer's messages (JSON, or every SSE event's)."""
        raw = self.response.read().decode()
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            return [json.loads(line[5:]) for line in raw.splitlines()
                    if line.startswith("data:") and line[5:].strip()]
        return [json.loads(raw)] if raw.strip() else []

    def close(self) -> None:
        self.conn.close()


def request(eng: Engine, method: str, body: Any, headers: dict[str, str] | None = None
            ) -> tuple[int, dict[str, str], list[Any], int]:
    """One request on a fresh connection: status, headers, messages, the worker's pid."""
    stream = Stream(eng, method, body, headers or {})
    try:
        assert stream.pid is not None, (stream.status, stream.rest())
        return stream.status, stream.headers, stream.rest(), stream.pid
    finally:
        stream.close()


def connected_elsewhere(eng: Engine, avoid: int) -> http.client.HTTPConnection:
    """A fresh connection accepted by a worker other than ``avoid``, before anything is sent
    on it (for a request that must reach another worker the first time)."""
    for _ in range(TRIES):
        conn = http.client.HTTPConnection("127.0.0.1", eng.port, timeout=TIMEOUT)
        conn.connect()
        assert conn.sock is not None
        client_port = conn.sock.getsockname()[1]
        pid = None
        deadline = time.monotonic() + TIMEOUT
        while pid is None:  # until a worker has accepted it from the queue
            try:
                pid = eng.worker_of(client_port)
            except AssertionError:
                assert time.monotonic() < deadline, "no worker accepted the connection"
                time.sleep(0.02)
        if pid != avoid:
            return conn
        conn.close()
    raise AssertionError(f"{TRIES} fresh connections all reached {avoid}")


def until_other(pids: set[int], send: Callable[[], int]) -> int:
    """Send (``send`` returns the worker's pid) until a worker not in ``pids`` served one."""
    for _ in range(TRIES):
        pid = send()
        if pid not in pids:
            return pid
    raise AssertionError(f"{TRIES} fresh connections all reached {pids}")


def session_headers(sid: str, **extra: str) -> dict[str, str]:
    return {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25", **extra}


def tool(n: int, name: str, arguments: dict[str, Any] | None = None,
         **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}


def stateless(n: int, method: str, params: dict[str, Any]) -> tuple[dict[str, Any],
                                                                     dict[str, str]]:
    """A 2026-07-28 request (the client may elicit) and its headers."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if "name" in params:
        headers["mcp-name"] = params["name"]
    return ({"jsonrpc": "2.0", "id": n, "method": method, "params": {**params, "_meta": meta}},
            headers)


def open_session(eng: Engine) -> tuple[str, int]:
    status, headers, _, pid = request(eng, "POST", init_body())
    assert status == 200
    sid = headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert request(eng, "POST", initialized, session_headers(sid))[0] == 202
    return sid, pid


def echo_on(eng: Engine, sid: str, n: int) -> int:
    status, _, messages, pid = request(eng, "POST", tool(n, "echo", {"text": f"hop {n}"}),
                                       session_headers(sid))
    assert status == 200, messages
    assert messages[-1]["result"]["content"][0]["text"] == f"hop {n}"
    return pid


# -- the scenarios ---------------------------------------------------------------------------


def sessions_cross_workers(eng: Engine) -> str:
    sid, opened_on = open_session(eng)
    counter = iter(range(1, 10_000))
    until_other({opened_on}, lambda: echo_on(eng, sid, next(counter)))
    return sid


def list_changes_fan_out(eng: Engine, sid: str) -> None:
    """A GET stream (handshake era) and a listen stream (2026-07-28), each held by some
    worker, hear a list change made on another worker."""
    get = Stream(eng, "GET", None, session_headers(sid))
    body, headers = stateless(1, "subscriptions/listen",
                              {"notifications": {"toolsListChanged": True}})
    listen = Stream(eng, "POST", body, headers)
    try:
        assert get.status == 200 and listen.status == 200
        assert get.pid is not None and listen.pid is not None
        (_, ack), = listen.events(1)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        triggers = [0]

        def trigger() -> int:
            triggers[0] += 1
            status, _, messages, pid = request(
                eng, "POST", tool(100 + triggers[0], "test_trigger_tool_change"),
                session_headers(sid))
            assert status == 200, messages
            return pid

        # made on a worker other than the GET stream's, and on one other than the listen
        # stream's (with two workers they may hold one each)
        until_other({get.pid}, trigger)
        until_other({listen.pid}, trigger)
        # every change, wherever it was made, reached both streams
        for stream in (get, listen):
            changes = stream.events(triggers[0])
            assert {m["method"] for _, m in changes} == {"notifications/tools/list_changed"}
    finally:
        get.close()
        listen.close()


def seal(eng: Engine, n: int) -> tuple[dict[str, Any], int]:
    body, headers = stateless(n, "tools/call", {"name": STATE_TOOL, "arguments": {}})
    status, _, messages, pid = request(eng, "POST", body, headers)
    assert status == 200, messages
    result = messages[-1]["result"]
    assert result["resultType"] == "input_required"
    return result, pid


def open_sealed(eng: Engine, n: int, sealed: dict[str, Any]) -> int:
    (input_key,) = sealed["inputRequests"]
    body, headers = stateless(n, "tools/call", {
        "name": STATE_TOOL, "arguments": {}, "requestState": sealed["requestState"],
        "inputResponses": {input_key: {"action": "accept", "content": {"ok": True}}}})
    status, _, messages, pid = request(eng, "POST", body, headers)
    assert status == 200 and "error" not in messages[-1], messages
    assert messages[-1]["result"]["content"][0]["text"] == "state-ok: confirmation received"
    return pid


def request_state_crosses_workers(eng: Engine, store_url: str) -> None:
    """Sealed on one worker, opened on another; again while a new key is added to the
    store's ring (rotation during traffic), until workers seal with the new key; a state
    sealed before the rotation still opens."""
    from mcp_sansio.adapters.redis import RedisStores
    from mcp_sansio.adapters.stores.keys import rotate_key

    from mcp_sansio._keyring import key_id

    before, sealed_on = seal(eng, 1)
    counter = iter(range(2, 10_000))
    until_other({sealed_on}, lambda: open_sealed(eng, next(counter), before))

    async def rotate() -> bytes:
        stores = RedisStores.from_url(store_url)
        try:
            return await rotate_key(stores)
        finally:
            await stores.aclose()

    pids: set[int] = set()
    new_key = b""
    for n in range(12):
        if n == 4:
            new_key = asyncio.run(rotate())
        sealed, pid = seal(eng, 100 + 2 * n)
        pids.add(pid)
        pids.add(open_sealed(eng, 101 + 2 * n, sealed))
    assert len(pids) > 1
    # Each worker seals with the new key once it has held it for two refresh intervals
    # (5 s each by default: docs/stores.rst); every state keeps opening meanwhile.
    new_kid = key_id(new_key)
    sealing_new: set[int] = set()
    deadline = time.monotonic() + START
    while len(sealing_new) < 2:
        assert time.monotonic() < deadline, f"only {sealing_new} seal with the new key"
        sealed, pid = seal(eng, next(counter))
        if sealed["requestState"].split(".")[0] == new_kid:
            sealing_new.add(pid)
        open_sealed(eng, next(counter), sealed)
        time.sleep(0.1)
    until_other(set(), lambda: open_sealed(eng, next(counter), before))  # the old key opens


#: Server requests a tool sends (handshake era), the client's answer, what the tool then
#: says: (tool, arguments, method asked, answer, the answer's text starts with).
SERVER_REQUESTS = [
    ("test_elicitation", {"message": "who?"}, "elicitation/create",
     {"action": "accept", "content": {"username": "ada", "email": "a@example.com"}},
     "User response: action=accept"),
    ("test_sampling", {"prompt": "Say hi"}, "sampling/createMessage",
     {"role": "assistant", "model": "test", "content": {"type": "text", "text": "hi"}},
     "LLM response: hi"),
    ("test_input_required_result_list_roots", {}, "roots/list",
     {"roots": [{"uri": "file:///work", "name": "work"}]}, "Received 1 roots: file:///work"),
]


def answers_reach_the_waiting_worker(eng: Engine) -> None:
    """A tool elicits, samples, or asks for roots (handshake era); the client's answer is
    posted on a connection another worker accepted, and reaches the tool on the first (the
    bus's answers topic)."""
    body = init_body()
    body["params"]["capabilities"] = {"elicitation": {}, "sampling": {},
                                      "roots": {"listChanged": True}}
    status, headers, _, _ = request(eng, "POST", body)
    assert status == 200
    sid = headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert request(eng, "POST", initialized, session_headers(sid))[0] == 202
    for n, (name, arguments, method, reply, said) in enumerate(SERVER_REQUESTS, 3):
        stream = Stream(eng, "POST", tool(n, name, arguments), session_headers(sid))
        try:
            assert stream.status == 200 and stream.pid is not None
            (_, ask), = stream.events(1)
            assert ask["method"] == method
            answer = {"jsonrpc": "2.0", "id": ask["id"], "result": reply}
            elsewhere = Stream(eng, "POST", answer, session_headers(sid),
                               conn=connected_elsewhere(eng, stream.pid))
            try:
                assert elsewhere.status == 202 and elsewhere.pid != stream.pid
            finally:
                elsewhere.close()
            (_, result), = stream.events(1)
            assert result["id"] == n
            assert result["result"]["content"][0]["text"].startswith(said), result
        finally:
            stream.close()


def handshake_tasks_cross_workers(eng: Engine) -> None:
    """A 2025-11-25 task created on one worker is polled (``tasks/get``), listed, fetched
    with a blocking ``tasks/result`` and another one cancelled on other workers; another
    session sees none of them (the task table in the store, cancels over the bus)."""
    sid, _ = open_session(eng)
    other, _ = open_session(eng)
    counter = iter(range(1, 10_000))

    def call(method: str, params: dict[str, Any], session: str = sid
             ) -> tuple[dict[str, Any], int]:
        status, _, messages, pid = request(
            eng, "POST", {"jsonrpc": "2.0", "id": next(counter), "method": method,
                          "params": params}, session_headers(session))
        assert status == 200, messages
        return messages[-1], pid

    def call_elsewhere(method: str, params: dict[str, Any], avoid: int
                       ) -> tuple[dict[str, Any], int | None]:
        stream = Stream(eng, "POST", {"jsonrpc": "2.0", "id": next(counter), "method": method,
                                      "params": params}, session_headers(sid),
                        conn=connected_elsewhere(eng, avoid))
        try:
            assert stream.status == 200
            return stream.rest()[-1], stream.pid
        finally:
            stream.close()

    created, made_on = call("tools/call", {"name": "slow_compute",
                                           "arguments": {"seconds": 2}, "task": {}})
    task = created["result"]["task"]
    task_id = task["taskId"]

    def get() -> int:
        got, pid = call("tasks/get", {"taskId": task_id})
        assert got["result"]["taskId"] == task_id
        assert got["result"]["createdAt"] == task["createdAt"]
        return pid

    def listed() -> int:
        found, pid = call("tasks/list", {})
        assert [t["taskId"] for t in found["result"]["tasks"]] == [task_id]
        return pid

    until_other({made_on}, get)
    until_other({made_on}, listed)
    # blocking: sent while the task works, on a connection another worker accepted, it
    # waits there until the result is stored
    result, pid = call_elsewhere("tasks/result", {"taskId": task_id}, made_on)
    assert pid != made_on
    assert result["result"]["content"][0]["text"] == "computed result after 2 s"
    assert result["result"]["_meta"]["io.modelcontextprotocol/related-task"] == {
        "taskId": task_id}
    # a cancel on another worker stops the work where it runs
    created, made_on = call("tools/call", {"name": "slow_compute",
                                           "arguments": {"seconds": 600}, "task": {}})
    long_id = created["result"]["task"]["taskId"]
    cancelled, pid = call_elsewhere("tasks/cancel", {"taskId": long_id}, made_on)
    assert pid != made_on and cancelled["result"]["status"] == "cancelled", cancelled
    found, _ = call("tasks/list", {})
    assert [(t["taskId"], t["status"]) for t in found["result"]["tasks"]] == [
        (task_id, "completed"), (long_id, "cancelled")]
    # another session, on whichever worker: nothing
    for _ in range(4):
        assert call("tasks/list", {}, other)[0]["result"] == {"tasks": []}
        assert call("tasks/get", {"taskId": task_id}, other)[0]["error"]["code"] == -32602


def modern_task_polled_elsewhere(eng: Engine) -> None:
    """A 2026-07-28 task (the tasks extension) created on one worker is polled on the
    others until its result is inlined; the task id is the only thing the polls carry."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": {"io.modelcontextprotocol/tasks": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}

    def post(n: int, method: str, params: dict[str, Any], name: str
             ) -> tuple[dict[str, Any], int]:
        headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method,
                   "mcp-name": name}
        status, _, messages, pid = request(eng, "POST", {
            "jsonrpc": "2.0", "id": n, "method": method,
            "params": {**params, "_meta": meta}}, headers)
        assert status == 200, messages
        return messages[-1]["result"], pid

    created, made_on = post(1, "tools/call", {"name": "slow_compute",
                                              "arguments": {"seconds": 2}}, "slow_compute")
    assert created["resultType"] == "task", created
    task_id = created["taskId"]
    polled_on: set[int] = set()
    deadline = time.monotonic() + TIMEOUT
    counter = iter(range(2, 10_000))
    while True:
        task, pid = post(next(counter), "tasks/get", {"taskId": task_id}, task_id)
        polled_on.add(pid)
        if task["status"] == "completed" and polled_on - {made_on}:
            break
        assert task["status"] in ("working", "completed"), task
        assert time.monotonic() < deadline, "the task never completed on another worker"
        time.sleep(0.1)
    assert task["result"]["content"][0]["text"] == "computed result after 2 s"


def delete_seen_everywhere(eng: Engine) -> None:
    sid, _ = open_session(eng)
    status, _, _, deleted_on = request(eng, "DELETE", None, session_headers(sid))
    assert status == 200
    statuses = []

    def call() -> int:
        status, _, _, pid = request(eng, "POST", tool(len(statuses), "echo", {"text": "x"}),
                                    session_headers(sid))
        statuses.append(status)
        return pid

    until_other({deleted_on}, call)
    assert set(statuses) == {404}, statuses


def live_resumption_elsewhere(eng: Engine) -> None:
    """A streamed answer breaks after its first event; the client resumes with
    ``Last-Event-ID`` on a connection another worker accepted, which replays what the store
    holds and then relays live what the writer produces (the bus), to the tool's answer:
    every event after the first, once each, in order."""
    sid, _ = open_session(eng)
    stream = Stream(eng, "POST", tool(7, "sleep", {"seconds": 3}, progressToken="p"),
                    session_headers(sid))
    try:
        assert stream.status == 200 and stream.pid is not None
        (first, progress), = stream.events(1)
        assert first is not None and progress["params"]["progress"] == 1
        writer = stream.pid
    finally:
        stream.close()  # the stream broke after one progress event
    deadline = time.monotonic() + TIMEOUT
    while True:  # the writer stores each event just after writing it
        resumed = Stream(eng, "GET", None, session_headers(sid, **{"last-event-id": first}),
                         conn=connected_elsewhere(eng, writer))
        if resumed.status == 200:
            break
        resumed.close()
        assert time.monotonic() < deadline, resumed.status
        time.sleep(0.1)
    try:
        assert resumed.pid != writer
        got = resumed.until_end()  # the writer ends the stream with the answer
    finally:
        resumed.close()
    assert got[-1][1]["id"] == 7, got[-1]
    assert got[-1][1]["result"]["content"][0]["text"] == "slept 3 s"
    steps = [m["params"]["progress"] for _, m in got[:-1]]
    assert steps == list(range(2, 2 + len(steps))) and len(steps) >= 2, steps
    seqs = [int(str(event_id).rpartition(":")[2]) for event_id, _ in got]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs


def resumption_after_a_kill(eng: Engine, store_url: str,
                            after_kill: Callable[[], Engine] | None = None) -> None:
    """A streamed answer's worker is killed; the client resumes on another worker with
    Last-Event-ID and gets what the killed worker stored; the session carries on. With
    ``after_kill``, the engine stops when a worker dies: the client resumes on the engine
    that callable starts (the restart a supervisor would do) on the same store."""
    from mcp_sansio.adapters.redis import RedisStores

    sid, _ = open_session(eng)
    stream = Stream(eng, "POST", tool(7, "sleep", {"seconds": 60}, progressToken="p"),
                    session_headers(sid))
    try:
        assert stream.status == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        (first, _), (second, _) = stream.events(2)
        assert first is not None and second is not None and stream.pid is not None
        doomed = stream.pid

        async def stored_after(event_id: str) -> list[str]:
            stores = RedisStores.from_url(store_url)
            try:
                found = await stores.events.replay(event_id, wall_time=time.time())
                return [event_id for event_id, _ in found[1]] if found is not None else []
            finally:
                await stores.aclose()

        # The worker stores each event just after writing it: wait until the second is in
        # the store, so what the kill loses is only what no client could have seen.
        deadline = time.monotonic() + TIMEOUT
        while second not in asyncio.run(stored_after(first)):
            assert time.monotonic() < deadline, "the second event was never stored"
            time.sleep(0.05)
        # and a requestState the doomed worker seals, to open once it is dead
        sealed_by_doomed = None
        for n in range(TRIES):
            sealed, pid = seal(eng, 200 + n)
            if pid == doomed:
                sealed_by_doomed = sealed
                break
        assert sealed_by_doomed is not None, f"{TRIES} fresh connections all missed {doomed}"
        os.kill(doomed, signal.SIGKILL)
    finally:
        stream.close()
    if after_kill is not None:
        eng = after_kill()
    refused: list[Any] = []
    for _ in range(TRIES):
        try:
            resumed = Stream(eng, "GET", None, session_headers(sid, **{"last-event-id": first}))
        except ConnectionError as exc:  # queued for the killed worker (see reconnecting)
            refused.append(exc)
            time.sleep(0.1)
            continue
        try:
            if resumed.status != 200:  # a worker that has not heard yet: try again
                refused.append((resumed.status, resumed.rest()))
                continue
            assert resumed.pid != doomed
            replayed = [event_id for event_id, _ in resumed.events(1)]
            assert replayed == [second]
            # Then the stream ends: the worker relaying it hears the writer's heartbeats
            # stop (docs/stores.rst, "Workers that die"), and the client has had every
            # event the killed worker stored, in order, none twice.
            rest = resumed.until_end()
            replayed += [event_id for event_id, _ in rest]
            # ... the last of them the call's end in the killed worker's place: an error
            # (its outcome is unknown: mcp_sansio/http/_stranded.py), numbered past the
            # killed worker's events, followed in the store by the stream's end marker
            assert rest and rest[-1][1]["id"] == 7 and rest[-1][1]["error"]["code"] == -32603
            stored = asyncio.run(stored_after(first))
            assert replayed == stored[:-1], (replayed, stored)
            seqs = [int(event_id.rpartition(":")[2]) for event_id in replayed[:-1]]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
            break
        finally:
            resumed.close()
    else:
        raise AssertionError(f"no worker resumed the stream: {refused[:3]}")
    counter = iter(range(50, 10_000))
    for _ in range(8):  # the session carries on, wherever the requests land
        assert reconnecting(lambda: echo_on(eng, sid, next(counter))) != doomed
    # what it sealed opens on the others (the key ring is the store's, not the worker's)
    assert reconnecting(lambda: open_sealed(eng, next(counter), sealed_by_doomed)) != doomed


def reconnecting(send: Callable[[], int]) -> int:
    """``send`` again while the connection is refused or reset: right after a worker is
    killed, a connection the kernel queued for it is reset (granian's workers each listen
    on a socket of their own) until the engine starts another; a client connects again."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            return send()
        except ConnectionError:
            assert time.monotonic() < deadline, "the engine kept refusing connections"
            time.sleep(0.1)


# -- the tests: one engine (a module-scoped fixture) serves every scenario in turn ----------


class Workers:
    """An engine's workers on the shared store: the engine now running (hypercorn's is
    started again after the kill), the store's URL, and the engine's name."""

    def __init__(self, name: str, count: int, store: str, stack: contextlib.ExitStack) -> None:
        self.name, self.count, self.store, self._stack = name, count, store, stack
        self.eng = stack.enter_context(engine(name, count, store))

    def restarted(self) -> Engine:
        """hypercorn stops every worker when one exits with an error (its run loop): once it
        is gone, a supervisor would start it again -- here on another port, with the same
        store, where the sessions and stored events wait."""
        self.eng.proc.wait(TIMEOUT)
        self.eng = self._stack.enter_context(engine(self.name, self.count, self.store))
        return self.eng


@pytest.fixture(scope="module", params=ENGINES, ids=[f"{e}-{n}" for e, n in ENGINES])
def workers(request: pytest.FixtureRequest,
            redis_server: RedisServer  # noqa: F811
            ) -> Iterator[Workers]:
    name, count = request.param
    with contextlib.ExitStack() as stack:
        yield Workers(name, count, redis_server.url, stack)


@pytest.fixture
def eng(workers: Workers) -> Iterator[Engine]:
    """The running engine; what its workers logged during a test is shown if it fails."""
    running = workers.eng
    logged = len(running.err)
    yield running
    sys.stderr.write("".join(running.err[logged:]))


# The kill comes last in this file: pytest runs a module-scoped parameter's tests in the
# order they are defined.


def test_sessions(eng: Engine) -> None:
    sessions_cross_workers(eng)
    # sessions are kept (no sessionless fallback) and the key ring is the store's
    assert "sessionless" not in "".join(eng.err)


def test_list_change_fan_out(eng: Engine) -> None:
    sid, _ = open_session(eng)
    list_changes_fan_out(eng, sid)


def test_request_state_rotation(
        eng: Engine, workers: Workers) -> None:
    request_state_crosses_workers(eng, workers.store)


def test_server_requests(eng: Engine) -> None:
    answers_reach_the_waiting_worker(eng)


def test_delete(eng: Engine) -> None:
    delete_seen_everywhere(eng)


def test_live_resumption(eng: Engine) -> None:
    live_resumption_elsewhere(eng)


def test_tasks_2025(
        eng: Engine) -> None:
    handshake_tasks_cross_workers(eng)


def test_tasks_2026(eng: Engine) -> None:
    modern_task_polled_elsewhere(eng)


def test_killed_writer_resumed(
        eng: Engine, workers: Workers) -> None:
    resumption_after_a_kill(eng, workers.store,
                            workers.restarted if workers.name.startswith("hypercorn") else None)
