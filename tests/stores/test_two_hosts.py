"""Two hosts, one service (issue 18's proof): two server processes on separate loopback
ports share one real Redis (tests/_redis.py), and host A runs under a monotonic clock moved
by :data:`SHIFT` seconds (a Linux time namespace: ``unshare --time --monotonic``), as if it
had booted eleven days before B. The client sends each request to the other host in turn,
each on a fresh connection -- a round-robin load balancer without sticky sessions.

The scenarios, one test function each (both eras where the era has the feature):

* sessions: ``initialize`` on A, the calls alternating between B and A (handshake era);
  2026-07-28 calls, which need nothing shared, alternate too;
* server requests -- elicitation, sampling, roots -- sent by the tool on A and answered by
  the client on a connection to B (handshake era; the 2026-07-28 equivalent is a retry
  carrying ``inputResponses`` and the ``requestState``, below);
* resumption: a stream A writes, broken, resumed on B with ``Last-Event-ID``: B replays what
  the store holds and carries on live to the tool's answer (handshake era: 2026-07-28 has no
  resumable stream to go back to);
* DELETE on B ends the session on A (handshake era: 2026-07-28 has no session);
* ``requestState`` sealed on one host and opened on the other, both ways, across the shifted
  monotonic clock (2026-07-28);
* listen fan-out: a list change made on A reaches a GET stream (handshake era) and a
  ``subscriptions/listen`` stream (2026-07-28) held by B;
* key rotation in the store while the client alternates: nothing sealed before, during or
  after it is refused, and both hosts end up sealing with the new key;
* one host killed: every session it opened, and a state it sealed, carry on at the other;
  and a stream it was writing, resumed on the other, ends there (the survivor hears the
  writer's heartbeats stop -- ``own`` -- or its shutdown notice -- ``memory``), and the
  client resumes and gets everything stored.

* tasks: a task created on A is polled (``tasks/get``), listed, and fetched with a blocking
  ``tasks/result`` on B (handshake era), and polled on B until its result is inlined
  (2026-07-28); its handler runs on A all along.

The hosts are started by one fixture, :func:`hosts` (and :func:`own_hosts` for the test
that kills one), parametrized by :data:`LAUNCHERS` (name -> how to start the two hosts
sharing their stores): ``own``, the two processes above, and ``memory``, two asyncio
servers in this process on one :class:`~mcp_sansio.stores.MemoryStores` (the reference the
Redis stores follow; one clock). An engine's launcher (uvicorn or granian workers on the
shared stores) is one more entry there. Where the time namespace is not available (not
Linux, not root, no ``unshare``) the ``own`` variant is skipped with one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import h11
import pytest

from mcp_sansio._keyring import key_id
from mcp_sansio.http import SSEParser
from tests._redis import RedisServer, redis_server  # noqa: F401  (the fixture, by name)
from tests.http_stories import SyncConn, serve_example, stateless, tool_call, url_process
from tests.http_util import CLIENT_INFO

#: How far host A's monotonic clock is moved: a million seconds (eleven and a half days),
#: far beyond any lifetime a server keeps (a ``requestState``'s ten minutes, a session's
#: idle hour), so anything judged on one host's monotonic clock by the other shows.
SHIFT = 1_000_000
#: Seconds to wait for anything: generous, the machine is shared.
TIMEOUT = 60.0
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
#: What the handshake-era client declares: it answers every server request.
CAPABILITIES = {"elicitation": {}, "sampling": {}, "roots": {"listChanged": True}}
#: The 2026-07-28 client's capabilities, in ``_meta``.
MODERN_CAPS = {"io.modelcontextprotocol/clientCapabilities": CAPABILITIES}


# -- the hosts ------------------------------------------------------------------------------------


def _shifted_monotonic() -> list[str] | None:
    """The command prefix that runs a child under a monotonic clock moved by SHIFT seconds,
    or None where this system cannot (no unshare, not root, no time namespaces)."""
    unshare = shutil.which("unshare")
    if unshare is None or sys.platform != "linux":
        return None
    # --kill-child: killing unshare (the host dies) kills the server it forked too.
    prefix = [unshare, "--time", "--fork", "--kill-child", f"--monotonic={SHIFT}"]
    try:
        probe = subprocess.run([*prefix, sys.executable, "-c",
                                "import time; print(time.monotonic())"],
                               capture_output=True, text=True, timeout=TIMEOUT, check=False)
        shifted = float(probe.stdout.strip()) if probe.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        shifted = None
    if shifted is None or shifted < time.monotonic() + SHIFT / 2:
        return None
    return prefix


class Host:
    """One host of the service: its port, and how to kill it (``kill()``)."""

    def __init__(self, url: str, kill: Callable[[], None]) -> None:
        self.url = url
        self.port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
        self.kill = kill


class Pair(tuple[Host, Host]):
    """Hosts A and B, and ``rotate()``: a new sealing key in their store (what an operator
    runs), returning it."""

    rotate: Callable[[], bytes]


#: A launcher: (exit stack, the request, to get the fixtures it needs) -> the two hosts,
#: sharing their stores, with host A under a shifted monotonic clock where the hosts are
#: processes.
Launcher = Callable[[contextlib.ExitStack, pytest.FixtureRequest], Pair]


def _own(stack: contextlib.ExitStack, request: pytest.FixtureRequest) -> Pair:
    """Two ``mcp-sansio serve-example --store`` processes (our own asyncio HTTP server) on
    one real Redis, A under a monotonic clock moved by SHIFT."""
    shifted = _shifted_monotonic()
    if shifted is None:
        pytest.skip("needs a Linux time namespace (unshare --time, as root) for host A's clock")
    redis: RedisServer = request.getfixturevalue("redis_server")
    argv = serve_example("--store", redis.url)
    hosts = []
    for prefix in (shifted, []):
        inner = contextlib.ExitStack()
        url = inner.enter_context(url_process([*prefix, *argv], kill=True))
        stack.callback(inner.close)
        hosts.append(Host(url, inner.close))
    pair = Pair(hosts)
    pair.rotate = lambda: _rotate(redis.url)
    return pair


def _memory(stack: contextlib.ExitStack, request: pytest.FixtureRequest) -> Pair:
    """Two asyncio HTTP servers in this process, on one loop in a thread, sharing one
    :class:`~mcp_sansio.stores.MemoryStores` (the reference the Redis stores follow); "killing"
    one stops it. One clock: only the sharing is under test here."""
    import threading

    from mcp_sansio.adapters.asyncio import start_http
    from mcp_sansio.adapters.keys import rotate_key
    from mcp_sansio.adapters.tools import _example_server

    from mcp_sansio.stores import MemoryStores

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stores = MemoryStores()
    urls: list[str] = []
    stops: list[asyncio.Event] = []

    async def serve(started: asyncio.Event) -> None:
        stop = asyncio.Event()
        stops.append(stop)
        server = _example_server.build(_example_server._sleep_for("asyncio"))
        async with start_http(server, stores=stores) as service:
            urls.append(service.url)
            started.set()
            await stop.wait()

    async def main() -> None:
        tasks = []
        for _ in range(2):
            started = asyncio.Event()
            tasks.append(asyncio.create_task(serve(started)))
            await started.wait()
        ready.set()
        await asyncio.gather(*tasks)

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()

    def stop(n: int) -> None:
        loop.call_soon_threadsafe(stops[n].set)

    def close() -> None:
        for n in range(len(stops)):
            stop(n)
        thread.join(TIMEOUT)
        loop.close()
    stack.callback(close)
    assert ready.wait(TIMEOUT)
    pair = Pair(Host(url, lambda n=n: stop(n)) for n, url in enumerate(urls))
    pair.rotate = lambda: asyncio.run_coroutine_threadsafe(rotate_key(stores), loop).result(
        TIMEOUT)
    return pair


LAUNCHERS: dict[str, Launcher] = {"own": _own, "memory": _memory}


@pytest.fixture(scope="module", params=sorted(LAUNCHERS))
def hosts(request: pytest.FixtureRequest) -> Iterator[Pair]:
    """Hosts A and B, sharing their stores, for the module."""
    with contextlib.ExitStack() as stack:
        yield LAUNCHERS[request.param](stack, request)


@pytest.fixture(params=sorted(LAUNCHERS))
def own_hosts(request: pytest.FixtureRequest) -> Iterator[Pair]:
    """A pair of hosts for one test alone (one that kills a host)."""
    with contextlib.ExitStack() as stack:
        yield LAUNCHERS[request.param](stack, request)


# -- a client that goes to the other host each time ----------------------------------------------


class Client:
    """Each request to the next host in turn, on a fresh connection."""

    def __init__(self, *hosts: Host) -> None:
        self._hosts = itertools.cycle(hosts)
        self._ids = itertools.count(1)
        self.sid: str | None = None
        #: The host the last request went to.
        self.last: Host | None = None

    def next_host(self) -> Host:
        return next(self._hosts)

    def headers(self) -> dict[str, str]:
        assert self.sid is not None
        return {"mcp-session-id": self.sid, "mcp-protocol-version": HANDSHAKE}

    def post(self, body: dict[str, Any], headers: dict[str, str] | None = None,
             host: Host | None = None) -> tuple[int, dict[str, str], list[Any]]:
        self.last = host or self.next_host()
        conn = SyncConn(self.last.port)
        try:
            return conn.request("POST", body, headers)
        finally:
            conn.close()

    def call(self, method: str, params: dict[str, Any] | None = None,
             host: Host | None = None) -> dict[str, Any]:
        """A handshake-era request in the session; its answer."""
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        if params is not None:
            body["params"] = params
        status, _, messages = self.post(body, self.headers(), host)
        assert status == 200, (status, messages)
        answer: dict[str, Any] = messages[-1]
        assert answer.get("id") == body["id"], messages
        return answer

    def initialize(self, host: Host | None = None) -> str:
        body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": HANDSHAKE, "capabilities": CAPABILITIES,
            "clientInfo": CLIENT_INFO}}
        status, got, messages = self.post(body, None, host)
        assert status == 200 and messages[-1]["result"]["protocolVersion"] == HANDSHAKE
        self.sid = got["mcp-session-id"]
        status, _, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                 self.headers())
        assert status == 202
        return self.sid

    def modern(self, name: str, arguments: dict[str, Any] | None = None,
               host: Host | None = None, **params: Any) -> dict[str, Any]:
        """A 2026-07-28 ``tools/call``; its answer."""
        body, headers = tool_call(name, arguments or {}, next(self._ids), **MODERN_CAPS)
        body["params"].update(params)
        status, _, messages = self.post(body, headers, host)
        assert status in (200, 400), (status, messages)
        answer: dict[str, Any] = messages[-1]
        return answer


def text(answer: dict[str, Any]) -> str:
    assert "result" in answer, answer
    return str(answer["result"]["content"][0]["text"])


def tool(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "arguments": arguments or {}}


def events(conn: SyncConn, parser: SSEParser, count: int) -> list[tuple[str, Any]]:
    """The next ``count`` SSE events with data on ``conn``'s open response: (id, message)."""
    got: list[tuple[str, Any]] = []
    while len(got) < count:
        event = conn.next()
        assert isinstance(event, h11.Data), event
        got += [(e.id or "", json.loads(e.data)) for e in parser.feed(event.data) if e.data]
    return got


def open_stream(host: Host, method: str, body: Any, headers: dict[str, str]) -> SyncConn:
    """A request whose answer is an SSE stream, read up to its head."""
    conn = SyncConn(host.port)
    conn.send(method, body, headers)
    status, got = conn.head()
    assert status == 200 and got["content-type"].startswith("text/event-stream"), status
    return conn


# -- sessions --------------------------------------------------------------------------------------


def test_a_session_opened_on_a_is_served_by_both(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    client = Client(a, b)
    client.initialize()  # initialize on A, notifications/initialized on B
    for n in range(6):  # B, A, B...
        assert text(client.call("tools/call", tool("echo", {"text": f"hop {n}"}))) == (
            f"hop {n}")
    names = {t["name"] for t in client.call("tools/list")["result"]["tools"]}
    assert {"echo", "test_sampling", "test_elicitation"} <= names


def test_2026_calls_alternate_between_the_hosts(hosts: tuple[Host, Host]) -> None:
    client = Client(*hosts)
    for n in range(4):
        answer = client.modern("add", {"a": n, "b": 1})
        assert answer["result"]["structuredContent"] == {"sum": n + 1}


# -- server requests answered on the other host ---------------------------------------------------


@pytest.mark.parametrize(("name", "arguments", "method", "reply", "said"), [
    ("test_input_required_result_elicitation", {}, "elicitation/create",
     {"action": "accept", "content": {"name": "Ada"}}, "Hello, Ada!"),
    ("test_sampling", {"prompt": "Say hi"}, "sampling/createMessage",
     {"role": "assistant", "model": "test", "content": {"type": "text", "text": "hi"}},
     "LLM response: hi"),
    ("test_input_required_result_list_roots", {}, "roots/list",
     {"roots": [{"uri": "file:///work", "name": "work"}]}, "Received 1 roots: file:///work"),
], ids=["elicitation", "sampling", "roots"])
def test_a_server_request_from_a_is_answered_on_b(
        hosts: tuple[Host, Host], name: str, arguments: dict[str, Any], method: str,
        reply: dict[str, Any], said: str) -> None:
    a, b = hosts
    client = Client(a, b)
    client.initialize()
    caller = open_stream(a, "POST", {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                     "params": tool(name, arguments)}, client.headers())
    try:
        parser = SSEParser()
        (_, ask), = events(caller, parser, 1)
        assert ask["method"] == method
        status, _, _ = client.post({"jsonrpc": "2.0", "id": ask["id"], "result": reply},
                                   client.headers(), b)
        assert status == 202
        (_, done), = events(caller, parser, 1)
        assert done["id"] == 5 and text(done) == said
    finally:
        caller.close()


# -- resumption on the other host -----------------------------------------------------------------


def test_a_stream_a_writes_is_resumed_on_b_and_carries_on_live(hosts: tuple[Host, Host]
                                                                ) -> None:
    a, b = hosts
    client = Client(a, b)
    client.initialize()
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        **tool("sleep", {"seconds": 3}), "_meta": {"progressToken": "p"}}}
    first = open_stream(a, "POST", body, client.headers())
    (first_id, progress), = events(first, SSEParser(), 1)
    assert progress["params"]["progress"] == 1
    first.close()  # the stream broke after one progress event
    resumed: SyncConn | None = None
    deadline = time.monotonic() + TIMEOUT
    while resumed is None:  # A stores each event just after it writes it
        conn = SyncConn(b.port)
        conn.send("GET", None, {**client.headers(), "last-event-id": first_id})
        status, _ = conn.head()
        if status == 200:
            resumed = conn
        else:
            conn.close()
            assert time.monotonic() < deadline, status
            time.sleep(0.1)
    try:
        got, parser = [], SSEParser()
        while not got or "id" not in got[-1][1]:
            got += events(resumed, parser, 1)
        assert got[-1][1]["id"] == 7 and text(got[-1][1]) == "slept 3 s"
        steps = [m["params"]["progress"] for _, m in got[:-1]]
        # Every progress event after the first, each once and in order: what the store held
        # when B read it, then what A wrote after (relayed live through the bus).
        assert steps == list(range(2, 31)), steps
        seqs = [int(event_id.rpartition(":")[2]) for event_id, _ in got]
        assert seqs == sorted(set(seqs))
        while not isinstance(resumed.next(), h11.EndOfMessage):  # the stream ended on A
            pass
    finally:
        resumed.close()


# -- DELETE ----------------------------------------------------------------------------------------


def test_delete_on_b_ends_the_session_on_a(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    client = Client(a, b)
    client.initialize()
    assert text(client.call("tools/call", tool("echo", {"text": "x"}), a)) == "x"
    conn = SyncConn(b.port)
    assert conn.request("DELETE", None, client.headers())[0] == 200
    conn.close()
    # B answers the DELETE once the store dropped the record and the bus carried the news
    # to A; A ends its copy when the message arrives (the bus delivers asynchronously).
    for host in (a, b):
        status, _, _ = client.post({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                    "params": tool("echo", {"text": "y"})},
                                   client.headers(), host)
        assert status == 404, host.port


# -- requestState ----------------------------------------------------------------------------------


def test_request_state_sealed_on_one_host_opens_on_the_other(hosts: tuple[Host, Host]
                                                             ) -> None:
    """A's monotonic clock is a million seconds ahead of B's: a state sealed on either opens
    on the other (its expiry is on the wall clock), with every kind of input."""
    client = Client(*hosts)
    for _ in hosts:  # sealed on A, opened on B; then sealed on B, opened on A
        first = client.modern("test_input_required_result_multiple_inputs")
        result = first["result"]
        assert result["resultType"] == "input_required"
        assert set(result["inputRequests"]) == {"user_name", "greeting", "client_roots"}
        responses = {
            "user_name": {"action": "accept", "content": {"name": "Ada"}},
            "greeting": {"role": "assistant", "model": "m",
                         "content": {"type": "text", "text": "hello"}},
            "client_roots": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}}
        done = client.modern("test_input_required_result_multiple_inputs",
                             requestState=result["requestState"], inputResponses=responses)
        assert text(done) == "Hello, Ada! Greeting: hello; 2 roots", done
    # Tampered with, it is refused on both hosts.
    sealed = client.modern("test_input_required_result_request_state")["result"]["requestState"]
    kid, body, tag = sealed.split(".")
    for _ in hosts:
        refused = client.modern("test_input_required_result_request_state",
                                requestState=f"{kid}.{body}.{'A' * len(tag)}",
                                inputResponses={"confirm": {"action": "accept",
                                                            "content": {"ok": True}}})
        assert refused["error"]["code"] == -32602


# -- listen fan-out --------------------------------------------------------------------------------


def test_a_list_change_on_a_reaches_a_get_stream_on_b(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    client = Client(a, b)
    client.initialize()
    listener = open_stream(b, "GET", None, client.headers())
    try:
        assert text(client.call("tools/call", tool("test_trigger_tool_change"), a)) == (
            "tools list changed")
        messages = [m for _, m in events(listener, SSEParser(), 1)]
        assert messages[0]["method"] == "notifications/tools/list_changed"
    finally:
        listener.close()


def test_a_list_change_on_a_reaches_a_listen_stream_on_b(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    client = Client(a, b)
    listener = open_stream(b, "POST", *stateless(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, 1))
    try:
        parser = SSEParser()
        (_, ack), = events(listener, parser, 1)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert text(client.modern("test_trigger_tool_change", host=a)) == "tools list changed"
        (_, change), = events(listener, parser, 1)
        assert change["method"] == "notifications/tools/list_changed"
    finally:
        listener.close()


# -- key rotation during traffic -------------------------------------------------------------------


def _rotate(redis_url: str) -> bytes:
    """What an operator runs: a new key in the store, announced on the bus."""
    from mcp_sansio.adapters.keys import rotate_key
    from mcp_sansio.adapters.redis import RedisStores

    async def main() -> bytes:
        stores = RedisStores.from_url(redis_url)  # serve-example's stores: the default prefix
        try:
            return await rotate_key(stores)
        finally:
            await stores.aclose()
    return asyncio.run(main())


def test_key_rotation_while_the_client_alternates_loses_nothing(hosts: Pair) -> None:
    client = Client(*hosts)
    confirm = {"confirm": {"action": "accept", "content": {"ok": True}}}

    def seal() -> str:
        answer = client.modern("test_input_required_result_request_state")
        state: str = answer["result"]["requestState"]
        return state

    def opens(state: str) -> None:
        done = client.modern("test_input_required_result_request_state",
                             requestState=state, inputResponses=confirm)
        assert text(done).startswith("state-ok"), done

    before = [seal() for _ in hosts]
    old = {state.split(".")[0] for state in before}
    started = time.monotonic()
    new = key_id(hosts.rotate())
    sealed_with: dict[int, set[str]] = {hosts[0].port: set(), hosts[1].port: set()}
    # Each host seals with the new key once it has held it two refresh intervals (10 s by
    # default); before, during and after the switch every state opens on the other host.
    # A round is seal on X, seal on Y, open Y's on X, open X's on Y.
    while not all(new in kids for kids in sealed_with.values()):
        assert time.monotonic() < started + TIMEOUT, f"not every host sealed: {sealed_with}"
        states = []
        for _ in hosts:
            states.append(seal())
            assert client.last is not None
            sealed_with[client.last.port].add(states[-1].split(".")[0])
        for state in reversed(states):
            opens(state)
    assert all(kids <= old | {new} for kids in sealed_with.values()), sealed_with
    for state in before:  # sealed with the old key before the rotation: still opens
        opens(state)
    for state in before:  # sealed with the old key before the rotation: still opens
        opens(state)


# -- tasks created on one host, seen on the other -------------------------------------------------


def test_a_handshake_era_task_on_a_is_polled_listed_and_fetched_on_b(
        hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    client = Client(a, b)
    client.initialize(a)
    created = client.call("tools/call", {**tool("slow_compute", {"seconds": 1}), "task": {}},
                          a)
    task_id = created["result"]["task"]["taskId"]
    got = client.call("tasks/get", {"taskId": task_id}, b)
    assert got["result"]["taskId"] == task_id
    assert got["result"]["createdAt"] == created["result"]["task"]["createdAt"]
    listed = client.call("tasks/list", {}, b)["result"]["tasks"]
    assert [t["taskId"] for t in listed] == [task_id]
    result = client.call("tasks/result", {"taskId": task_id}, b)["result"]
    assert result["content"][0]["text"] == "computed result after 1 s"
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    other = Client(b, a)  # another session sees none of it
    other.initialize(b)
    assert other.call("tasks/list", {}, a)["result"] == {"tasks": []}
    assert other.call("tasks/get", {"taskId": task_id}, a)["error"]["code"] == -32602


def test_a_2026_task_on_a_is_polled_on_b_until_done(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    caps = {"io.modelcontextprotocol/clientCapabilities": {
        **CAPABILITIES, "extensions": {"io.modelcontextprotocol/tasks": {}}}}
    client = Client(a, b)
    body, headers = tool_call("slow_compute", {"seconds": 0.5}, 1, **caps)
    _, _, messages = client.post(body, headers, a)
    created = messages[-1]["result"]
    assert created["resultType"] == "task", created
    deadline = time.monotonic() + TIMEOUT
    while True:
        body, headers = stateless("tasks/get", {"taskId": created["taskId"]}, 2,
                                  created["taskId"], **caps)
        status, _, messages = client.post(body, headers, b)
        assert status == 200, messages
        task = messages[-1]["result"]
        if task["status"] == "completed":
            break
        assert task["status"] == "working", task
        assert time.monotonic() < deadline, "the task never completed"
        time.sleep(0.1)
    assert task["result"]["content"][0]["text"] == "computed result after 0.5 s"


# -- one host killed -------------------------------------------------------------------------------


def test_when_a_host_dies_its_sessions_carry_on_at_the_other(own_hosts: tuple[Host, Host]
                                                              ) -> None:
    a, b = own_hosts
    opened_on_a, opened_on_b = Client(a, b), Client(b, a)
    opened_on_a.initialize()
    opened_on_b.initialize()
    for client in (opened_on_a, opened_on_b):  # each served by both hosts first
        for n in range(2):
            assert text(client.call("tools/call", tool("echo", {"text": str(n)}))) == str(n)
    state = Client(a).modern("test_input_required_result_request_state")["result"][
        "requestState"]  # sealed on A
    a.kill()
    _assert_gone(a)
    for client in (opened_on_a, opened_on_b):
        for n in range(2):
            answer = client.call("tools/call", tool("echo", {"text": f"after {n}"}), b)
            assert text(answer) == f"after {n}"
    done = Client(b).modern("test_input_required_result_request_state", requestState=state,
                            inputResponses={"confirm": {"action": "accept",
                                                        "content": {"ok": True}}})
    assert text(done).startswith("state-ok"), done
    # A new session starts on the survivor, and ends there.
    fresh = Client(b)
    fresh.initialize()
    assert text(fresh.call("tools/call", tool("echo", {"text": "new"}))) == "new"


def _assert_gone(host: Host) -> None:
    """The host's server no longer accepts connections (the kernel may take a moment to
    close the listening socket of a killed process)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            SyncConn(host.port).close()
        except OSError:
            return
        assert time.monotonic() < deadline, "the killed host still accepts connections"
        time.sleep(0.1)


def _until_end(conn: SyncConn, parser: SSEParser) -> list[tuple[str, Any]]:
    """The SSE events with data on ``conn``'s open response until it ends: (id, message)."""
    got: list[tuple[str, Any]] = []
    while not isinstance(event := conn.next(), h11.EndOfMessage):
        assert isinstance(event, h11.Data), event
        got += [(e.id or "", json.loads(e.data)) for e in parser.feed(event.data) if e.data]
    return got


def _resume(host: Host, client: Client, last_event_id: str) -> SyncConn:
    """A GET with ``Last-Event-ID`` on ``host``, read up to its 200 (retried while the
    writer's store write is on its way)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        conn = SyncConn(host.port)
        conn.sock.settimeout(TIMEOUT)  # a dead writer is noticed within its timeout: 20 s
        conn.send("GET", None, {**client.headers(), "last-event-id": last_event_id})
        status, _ = conn.head()
        if status == 200:
            return conn
        conn.close()
        assert time.monotonic() < deadline, status
        time.sleep(0.1)


def test_host_killed_while_writing_a_stream_the_resumed_stream_on_the_other_ends(
        own_hosts: tuple[Host, Host]) -> None:
    """issue 18: only the writer ends a stream, so a relay of a dead writer's stream hung
    with keep-alives for ever. Now the survivor notices the writer is gone and ends the
    relay; the client resumes and gets everything the store holds, then an end."""
    a, b = own_hosts
    client = Client(a, b)
    client.initialize()
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        **tool("sleep", {"seconds": 60}), "_meta": {"progressToken": "p"}}}
    first = open_stream(a, "POST", body, client.headers())
    (first_id, _), = events(first, SSEParser(), 1)
    first.close()  # the stream broke after one progress event
    relayed = _resume(b, client, first_id)
    parser = SSEParser()
    got = events(relayed, parser, 3)  # relayed live from A through the bus
    a.kill()
    got += _until_end(relayed, parser)  # B ends the relay: its writer is gone
    relayed.close()
    # The client resumes from the last event it has: whatever A stored that the bus had
    # not brought yet, then the end (nothing more can come: no live wait).
    again = _resume(b, client, got[-1][0])
    got += _until_end(again, SSEParser())
    again.close()
    whole = _resume(b, client, first_id)  # everything stored after the first event
    stored = _until_end(whole, SSEParser())
    whole.close()
    assert [event_id for event_id, _ in got] == [event_id for event_id, _ in stored]
    # The request the dead writer ran ends with an error event of the survivor's, numbered
    # past the writer's (its outcome is unknown: docs/stores.rst); before it, the writer's
    # own events without a gap or a repeat.
    *written, (_, ended) = got
    assert ended.get("id") == 7 and ended["error"]["code"] == -32603, ended
    seqs = [int(event_id.rpartition(":")[2]) for event_id, _ in written]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs  # no gap, no repeat
    steps = [m["params"]["progress"] for _, m in written if m.get("method") == (
        "notifications/progress")]
    assert steps == list(range(2, 2 + len(steps))) and len(steps) >= 3, steps
    # and the session carries on at the survivor
    assert text(client.call("tools/call", tool("echo", {"text": "on"}), b)) == "on"
