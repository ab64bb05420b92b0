"""Both eras across processes: several server processes of our own share a request-state key,
and a client sends each request to the next process in turn, on a fresh connection each
time -- what a round-robin load balancer without sticky sessions does.

* 2026-07-28 is per request: discover, calls, a multi-round-trip call whose ``requestState``
  one process sealed and another opened, list pages whose cursors cross processes.
* The handshake era in the sessionless mode (``HTTPServer(sessionless=True)``): initialize
  on one process, calls on the others, and a handler that asks for elicitation learns at
  once that it cannot (``SessionlessError``), rather than waiting for an answer that could
  only ever reach another process.

How the servers are started is one function, :func:`start`, behind two fixtures:
:func:`servers` (sessionless servers, for the handshake era) and :func:`modern_servers` (with
and without the mode: 2026-07-28 must work across processes as it is), both parametrized by
the entries of :data:`LAUNCHERS` (name -> how to start N servers that share a key and return
their URLs); a launcher for another engine adds an entry there. A launcher may return the
same URL N times (N workers behind one port): the tests only ever round-robin over the list.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import os
import secrets
import sys
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from mcp_sansio.http import SSEParser
from tests.http_stories import serve_example, url_process
from tests.paths import PEERS

PEER = PEERS / "worker_server.py"
KEY_VARIABLE = "MCP_SANSIO_TEST_STATE_KEY"
N = 3
#: Seconds to wait for one answer: generous, the machine is shared.
TIMEOUT = 60.0
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
CLIENT_INFO = {"name": "round-robin-client", "version": "1.0"}
ACCEPT = "application/json, text/event-stream"


# -- launchers: how to start N servers ------------------------------------------------------------

#: A launcher: (count, environment with the shared key, sessionless?, exit stack) -> the
#: servers' URLs, serving :func:`tests.peers.worker_server.build`'s server.
Launcher = Callable[[int, dict[str, str], bool, contextlib.ExitStack], list[str]]


def _own(runtimes: list[str]) -> Launcher:
    """N processes of our own HTTP server, one per runtime in turn, each on its own port."""
    def launch(count: int, env: dict[str, str], sessionless: bool,
               stack: contextlib.ExitStack) -> list[str]:
        urls = []
        for runtime in itertools.islice(itertools.cycle(runtimes), count):
            argv = [sys.executable, str(PEER), runtime, *(["--sessionless"] * sessionless)]
            with _environment(env):
                urls.append(stack.enter_context(url_process(argv)))
        return urls
    return launch


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


LAUNCHERS: dict[str, Launcher] = {
    "asyncio": _own(["asyncio"]),
    # One process per runtime: a request sealed by asyncio's is opened by trio's, etc.
    "runtimes": _own(["asyncio", "trio", "threading"]),
}


@contextlib.contextmanager
def start(launcher: str, *, sessionless: bool) -> Iterator[list[str]]:
    """N servers started by ``launcher``, sharing one request-state key: their URLs."""
    env = {KEY_VARIABLE: secrets.token_hex(32)}
    with contextlib.ExitStack() as stack:
        yield LAUNCHERS[launcher](N, env, sessionless, stack)


@pytest.fixture(scope="module", params=sorted(LAUNCHERS))
def servers(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """The URLs of N sessionless server processes."""
    with start(request.param, sessionless=True) as urls:
        yield urls


@pytest.fixture(scope="module", params=[(name, sessionless) for name in sorted(LAUNCHERS)
                                        for sessionless in (False, True)],
                ids=lambda p: f"{p[0]}-{'sessionless' if p[1] else 'default'}")
def modern_servers(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """The URLs of N server processes, with default options and in the sessionless mode."""
    launcher, sessionless = request.param
    with start(launcher, sessionless=sessionless) as urls:
        yield urls


# -- a client that goes round the servers ---------------------------------------------------------


class Reply:
    def __init__(self, status: int, headers: dict[str, str], messages: list[Any]) -> None:
        self.status = status
        self.headers = headers
        self.messages = messages

    @property
    def result(self) -> dict[str, Any]:
        (message,) = [m for m in self.messages if "id" in m and "method" not in m]
        assert "result" in message, message
        return message["result"]  # type: ignore[no-any-return]

    @property
    def error(self) -> dict[str, Any]:
        (message,) = [m for m in self.messages if "id" in m and "method" not in m]
        assert "error" in message, message
        return message["error"]  # type: ignore[no-any-return]


class RoundRobin:
    """Each request to the next URL, on a new TCP connection."""

    def __init__(self, urls: list[str]) -> None:
        self._urls = itertools.cycle(urls)
        self._ids = itertools.count(1)

    def post(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
        url = urlsplit(next(self._urls))
        if not body["method"].startswith("notifications/"):  # a request: give it an id
            body = {**body, "id": next(self._ids)}
        conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=TIMEOUT)
        try:
            conn.request("POST", url.path, json.dumps(body).encode(), {
                "content-type": "application/json", "accept": ACCEPT, **(headers or {})})
            response = conn.getresponse()
            data = response.read()
            got = {k.lower(): v for k, v in response.getheaders()}
        finally:
            conn.close()
        messages: list[Any] = []
        if got.get("content-type", "").startswith("text/event-stream"):
            messages = [json.loads(e.data) for e in SSEParser().feed(data) if e.data]
        elif data:
            messages = [json.loads(data)]
        return Reply(response.status, got, messages)


def modern(client: RoundRobin, method: str, params: dict[str, Any] | None = None, *,
           name: str | None = None, capabilities: dict[str, Any] | None = None) -> Reply:
    params = dict(params or {})
    params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                       "io.modelcontextprotocol/clientCapabilities": capabilities or {},
                       "io.modelcontextprotocol/clientInfo": CLIENT_INFO}
    headers = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return client.post({"jsonrpc": "2.0", "method": method, "params": params}, headers)


def old(client: RoundRobin, method: str, params: dict[str, Any] | None = None,
        version: str = HANDSHAKE) -> Reply:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        body["params"] = params
    return client.post(body, {"mcp-protocol-version": version})


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def pids(client: RoundRobin, count: int, call: Callable[..., Reply]) -> list[str]:
    if call is modern:
        return [text(modern(client, "tools/call", {"name": "whoami", "arguments": {}},
                            name="whoami").result) for _ in range(count)]
    return [text(old(client, "tools/call", {"name": "whoami", "arguments": {}}).result)
            for _ in range(count)]


def all_pages(fetch: Callable[[str | None], Reply]) -> list[str]:
    names: list[str] = []
    cursor: str | None = None
    for _ in range(100):
        result = fetch(cursor).result
        names.extend(tool["name"] for tool in result["tools"])
        cursor = result.get("nextCursor")
        if cursor is None:
            return names
    raise AssertionError("the pages never ended")


# -- 2026-07-28 ------------------------------------------------------------------------------------


def test_2026_each_request_on_the_next_process(modern_servers: list[str]) -> None:
    client = RoundRobin(modern_servers)
    served = pids(client, len(modern_servers), modern)
    if len(set(modern_servers)) == len(modern_servers):  # one process per URL: each served one call
        assert len(set(served)) == len(modern_servers)
    discovered = modern(client, "server/discover").result
    assert MODERN in discovered["supportedVersions"]
    added = modern(client, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}},
                   name="add").result
    assert added["structuredContent"] == {"sum": 5}


def test_2026_request_state_sealed_by_one_process_is_opened_by_another(
        modern_servers: list[str], request: pytest.FixtureRequest) -> None:
    # The "runtimes" case (asyncio, trio and threads processes in turn) once failed: the
    # expiry was sealed on each runtime's own clock (trio's is not the system's monotonic
    # one). Sealed on the wall clock now (issue 18, docs/keys.rst).
    client = RoundRobin(modern_servers)
    caps = {"elicitation": {"form": {}}}
    call = {"name": "sealed_where", "arguments": {}}
    first = modern(client, "tools/call", call, name="sealed_where", capabilities=caps).result
    assert first["resultType"] == "input_required"
    state = first["requestState"]
    assert "confirm" in first["inputRequests"]
    retry = {**call, "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
             "requestState": state}
    done = modern(client, "tools/call", retry, name="sealed_where", capabilities=caps).result
    assert done["resultType"] == "complete"
    sealed, opened = text(done).split()
    assert sealed.startswith("sealed-by-") and opened.startswith("opened-by-")
    if len(set(modern_servers)) == len(modern_servers):
        assert sealed.removeprefix("sealed-by-") != opened.removeprefix("opened-by-")
    # Tampered with, it is refused wherever it lands: every process checks the seal.
    body, _, tag = state.partition(".")
    forged = {**retry, "requestState": f"{body}.{'A' * len(tag)}"}
    refused = modern(client, "tools/call", forged, name="sealed_where", capabilities=caps)
    assert refused.status == 400 and refused.error["code"] == -32602


def test_2026_list_cursors_cross_processes(modern_servers: list[str]) -> None:
    client = RoundRobin(modern_servers)
    names = all_pages(lambda cursor: modern(
        client, "tools/list", {"cursor": cursor} if cursor else None))
    assert len(names) == len(set(names)) > 4
    assert {"whoami", "sealed_where", "ask_name", "echo"} <= set(names)


# -- the handshake era, sessionless --------------------------------------------------------------


def test_handshake_initialize_on_one_process_calls_on_the_others(servers: list[str]) -> None:
    client = RoundRobin(servers)
    init = old(client, "initialize", {"protocolVersion": HANDSHAKE, "capabilities": {
        "elicitation": {}}, "clientInfo": CLIENT_INFO})
    assert init.status == 200 and "mcp-session-id" not in init.headers
    assert init.result["protocolVersion"] == HANDSHAKE
    assert "listChanged" not in init.result["capabilities"].get("tools", {})
    done = client.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                       {"mcp-protocol-version": HANDSHAKE})
    assert done.status == 202
    served = pids(client, len(servers), old)
    if len(set(servers)) == len(servers):
        assert len(set(served)) == len(servers)
    echoed = old(client, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}).result
    assert text(echoed) == "hi"
    names = all_pages(lambda cursor: old(client, "tools/list",
                                         {"cursor": cursor} if cursor else None))
    assert len(names) == len(set(names)) > 4


def test_handshake_2025_03_26_without_a_version_header(servers: list[str]) -> None:
    client = RoundRobin(servers)
    init = client.post({"jsonrpc": "2.0", "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": CLIENT_INFO}})
    assert init.result["protocolVersion"] == "2025-03-26"
    reply = client.post({"jsonrpc": "2.0", "method": "tools/call",
                         "params": {"name": "echo", "arguments": {"text": "old"}}})
    assert text(reply.result) == "old"


def test_handshake_elicitation_is_a_clear_error_not_a_hang(servers: list[str]) -> None:
    client = RoundRobin(servers)
    for _ in servers:  # on every process
        reply = old(client, "tools/call", {"name": "ask_name", "arguments": {}})
        said = text(reply.result)
        assert said.startswith("refused: elicitation/create cannot be sent")
        assert "sessionless mode" in said
    # A handler that does not catch it fails its call at once, instead of waiting for an
    # answer: a tool error result that says why (not a bare -32603).
    failed = old(client, "tools/call", {"name": "test_elicitation",
                                        "arguments": {"message": "Your name?"}})
    assert failed.result["isError"] is True
    assert text(failed.result).startswith("elicitation/create cannot be sent")
    assert "sessionless" in text(failed.result)


def test_handshake_get_and_delete_are_405(servers: list[str]) -> None:
    for url in dict.fromkeys(servers):
        assert_no_get_or_delete(url)


def assert_no_get_or_delete(where: str) -> None:
    for method in ("GET", "DELETE"):
        url = urlsplit(where)
        conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=TIMEOUT)
        try:
            conn.request(method, url.path, headers={"accept": "text/event-stream",
                                                    "mcp-protocol-version": HANDSHAKE})
            response = conn.getresponse()
            response.read()
        finally:
            conn.close()
        assert response.status == 405 and response.getheader("allow") == "POST"


def test_the_official_sdk_client_needs_no_session_id(servers: list[str]) -> None:
    """What a real handshake-era client does with a server that issues no session id: the
    official Python SDK's client (legacy mode) initializes, lists and calls, and sends no
    ``Mcp-Session-Id`` (it only echoes one it was given); a handler's elicitation fails its
    request at once."""
    pytest.importorskip("mcp", reason="the official SDK is a test dependency")
    import anyio
    from mcp.client.client import Client
    from mcp.shared.exceptions import MCPError

    async def story(url: str) -> dict[str, Any]:
        got: dict[str, Any] = {}
        async with Client(url, mode="legacy", read_timeout_seconds=TIMEOUT) as client:
            got["version"] = client.protocol_version
            got["tools"] = {t.name for t in (await client.list_tools()).tools}
            got["echo"] = (await client.call_tool("echo", {"text": "hi"})).content[0].text
            got["ask"] = (await client.call_tool("ask_name", {})).content[0].text
            try:
                result = await client.call_tool("test_elicitation", {"message": "Your name?"})
                got["elicit"] = (result.is_error, result.content[0].text)
            except MCPError as exc:
                got["elicit"] = exc.error.code
        return got

    for url in dict.fromkeys(servers):
        got = anyio.run(story, url)
        assert got["version"] == HANDSHAKE and len(got["tools"]) == 4  # the first page
        assert got["echo"] == "hi"
        assert got["ask"].startswith("refused: elicitation/create cannot be sent")
        # the handler's failure, as a tool error result that says why (not -32603)
        is_error, said = got["elicit"]
        assert is_error and said.startswith("elicitation/create cannot be sent")


@pytest.mark.parametrize("runtime", ["asyncio", "trio", "threading"])
def test_serve_example_sessionless(runtime: str) -> None:
    """``mcp-sansio serve-example --transport http --sessionless``: no session id, calls
    without one, the GET stream 405, elicitation refused at once."""
    with url_process(serve_example("--sessionless", runtime=runtime)) as url:
        client = RoundRobin([url])
        init = old(client, "initialize", {"protocolVersion": HANDSHAKE, "capabilities": {},
                                          "clientInfo": CLIENT_INFO})
        assert init.status == 200 and "mcp-session-id" not in init.headers
        echoed = old(client, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
        assert text(echoed.result) == "x"
        failed = old(client, "tools/call", {"name": "test_elicitation",
                                            "arguments": {"message": "Your name?"}})
        assert failed.result["isError"] is True
        assert text(failed.result).startswith("elicitation/create cannot be sent")
        assert_no_get_or_delete(url)
