"""Load: many concurrent keep-alive clients calling a tool in a loop for a fixed time, against
each server under test, side by side in one run (issue 14, "Benchmark").

Theory of operation. The server under test runs in its own process pinned to one core (the
first this process may use); the load generator runs in one or more other processes pinned to
the remaining core(s), so "one core" figures mean one core of server. The generator is a
``selectors`` loop over raw non-blocking sockets with the request bytes built once per client
before the clock starts and a minimal ``Content-Length`` response reader (no HTTP library), so
that it is not the bottleneck; its own CPU use is reported (``gen cpu``) to show whether it
was. Each client keeps one request in flight on its own keep-alive connection: it sends, waits
for the whole response, records the latency, sends again, until the time is up.

Two eras, each a row per server:

* ``handshake`` (2025-11-25): before the clock starts every client sends ``initialize`` and
  ``notifications/initialized`` and keeps the ``Mcp-Session-Id``; then it calls ``tools/call``
  ``echo`` on that session.
* ``stateless`` (2026-07-28): every ``tools/call`` carries its ``_meta`` (protocol version,
  client capabilities and info) and the ``Mcp-Protocol-Version``, ``Mcp-Method`` and
  ``Mcp-Name`` headers; no session.

Per row and repetition: requests/s (completed responses over the timed window), p50 and p99
of the per-request latency, server CPU per request (utime + stime from ``/proc/PID/stat``
across the window, over the requests), server and generator CPU as a share of the window, and
errors (a status other than 2xx, a JSON-RPC error, a closed connection). Reported: the medians
over ``--repeat`` repetitions, and the server's peak RSS (``VmHWM``) over the whole row.

A server of several processes (an engine's supervisor and its workers) is measured as a
whole: its process tree (found through ``/proc/*/stat`` parents) is pinned to the server's
core(s) -- every thread of every process, and workers spawned later inherit it -- its CPU is
summed over the tree for CPU per request, and its RSS is the sum over the tree (shared
library pages counted once per process: an upper bound). Before the first window the row
waits until every worker is up and idle, and each window records how many of the clients'
connections each process holds (the kernel gives an accepted connection to whichever worker
accepts first, so two workers need not share the load evenly).

Memory per idle handshake-era session: on a fresh server process, open ``--sessions`` K
sessions (``initialize`` and ``notifications/initialized``, over a few keep-alive
connections, then no more traffic) and report the growth of the server's ``VmRSS`` over K
(after a warm-up of a few sessions so that imports and first-use allocations are not counted).

Rows (``--rows``, comma-separated; a row whose packages are missing is left out with a note).
Adding a server under test is one entry in ``ROWS``:

* ``raw``: floor, a tiny asyncio server answering every request with a canned response.
* ``h11``: floor, h11 parsing every request and writing a canned JSON answer (no MCP): what any
  h11-based stack pays before MCP starts.
* ``httptools``: floor, the same with llhttp (``httptools``: its header and body callbacks into
  Python, a canned answer): what any Python request path on llhttp pays before MCP starts.
* ``httptools-json``: that floor plus the least JSON-RPC work (the body decoded, the answer
  built for its id and encoded): the least a Python MCP server on llhttp could spend.
* ``ours-asyncio``, ``ours-trio``, ``ours-threading``: ``mcp-sansio serve-example --transport
  http --runtime R`` (on the h11 wire, the default).
* ``ours-asyncio-httptools``, ``ours-trio-httptools``, ``ours-threading-httptools``: the same
  with ``--wire httptools`` (llhttp; the ``fast`` extra; docs/wires.rst).
* ``ours-uvicorn``, ``ours-uvicorn-2w``, ``ours-granian``, ``ours-granian-2w``: our ASGI app
  (adapters/asgi.py) as ``serve-example --transport http --engine E --workers N`` runs it
  (docs/deploying.rst), 1 and 2 workers. uvicorn on its h11 protocol (what the hardening
  table has serve-example choose), granian on its own Rust HTTP stack. With 2
  workers and no store the handshake era is served sessionless (by design): labelled
  ``handshake*``, and left out of the idle-session memory figure (no session is kept).
* ``ours-asyncio-compiled``, ``ours-threading-compiled``, ``ours-asyncio-httptools-compiled``,
  ``ours-threading-httptools-compiled``: the same servers on the compiled build
  (docs/compiled.rst), from the tree ``--compiled-tree DIR`` names (made by
  ``python .ci/compiled.py --tree DIR``; left out without it); the report prints each one's
  ratio to its pure row.
* ``ours-uvicorn-defaults``: our ASGI app under uvicorn started with uvicorn's defaults, as
  the ``sdk`` and ``fastmcp`` rows start theirs (so on uvicorn's httptools protocol): the
  same-engine comparison with the SDK.
* ``sdk``: the official Python SDK (``mcp``): its low-level ``Server`` with one ``echo`` tool,
  as its Streamable HTTP Starlette app under uvicorn, in JSON response mode.
* ``sdk-mcpserver``: the SDK's high-level ``MCPServer`` (mcp 2.x's name for FastMCP; the
  separate ``fastmcp`` package is not a dependency), the same app shape
  (``tests/peers/sdk_http_server.py --json``, whose ``echo`` is a decorated function).
* ``fastmcp``: the ``fastmcp`` package's server with the same tool under uvicorn (the
  ``bench`` extra).

The machine is shared: compare rows of one run, not runs. Linux only (``/proc``, affinity).

Run: ``python benchmarks/load.py [--seconds 5] [--repeat 3] [--clients 50] [--rows ...]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import selectors
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "tests" / "peers"
ERAS = ("handshake", "stateless")
#: Defaults. 50 clients: issue 14's load. 5 s x 3: long enough that a window holds thousands
#: of calls even for the slowest row (p99 is then a real tail, not one sample), short enough
#: for a whole run in a few minutes. 2000 idle sessions: at the 4 KiB aim that is 8 MiB of
#: growth, far above the page- and arena-sized steps of RSS, and well under both servers'
#: session limits (ours 10,000).
CLIENTS = 50
SECONDS = 5.0
REPEAT = 3
SESSIONS = 2000
#: Sessions opened before the memory baseline, so that imports, caches and free lists filled
#: by the first sessions are not charged to the measured ones; and the keep-alive connections
#: the sessions are opened over (few, so the figure is per session, not per connection).
WARM_UP_SESSIONS = 50
MEMORY_CONNECTIONS = 10
CLIENT_INFO = {"name": "load", "version": "1.0"}
#: A canned tools/call answer for the floors, the size of ours.
CANNED = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}'

RAW_FLOOR = r"""
import asyncio, sys
CANNED = __CANNED__
RESPONSE = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
            % len(CANNED) + CANNED)

class Floor(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""

    def data_received(self, data):
        buf = self.buf + data
        out = 0
        while (end := buf.find(b"\r\n\r\n")) >= 0:
            head = buf[:end].lower()
            at = head.find(b"content-length:")
            length = int(head[at + 15:].split(b"\r\n", 1)[0]) if at >= 0 else 0
            if len(buf) < end + 4 + length:
                break
            buf = buf[end + 4 + length:]
            out += 1
        self.buf = buf
        if out:
            self.transport.write(RESPONSE * out)

async def main():
    server = await asyncio.get_running_loop().create_server(Floor, "127.0.0.1", 0)
    print("http://127.0.0.1:%d/mcp" % server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()

asyncio.run(main())
""".replace("__CANNED__", repr(CANNED))

H11_FLOOR = r"""
import asyncio, json, sys
import h11
CANNED = __CANNED__

class Floor(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.http = h11.Connection(h11.SERVER)
        self.body = []

    def data_received(self, data):
        http = self.http
        http.receive_data(data)
        out = []
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA or event is h11.PAUSED:
                break
            if isinstance(event, h11.Data):
                self.body.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self.body.clear()
                out.append(http.send(h11.Response(status_code=200, headers=[
                    ("content-type", "application/json"),
                    ("content-length", str(len(CANNED)))])))
                out.append(http.send(h11.Data(data=CANNED)))
                out.append(http.send(h11.EndOfMessage()))
                http.start_next_cycle()
        if out:
            self.transport.write(b"".join(out))

async def main():
    server = await asyncio.get_running_loop().create_server(Floor, "127.0.0.1", 0)
    print("http://127.0.0.1:%d/mcp" % server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()

asyncio.run(main())
""".replace("__CANNED__", repr(CANNED))


HTTPTOOLS_FLOOR = r"""
import asyncio, json, sys
import httptools
CANNED = __CANNED__
HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
        % len(CANNED))

class Floor(asyncio.Protocol):
    # llhttp parsing every request (its head and body callbacks, as a Python request path on
    # llhttp has them) and a canned JSON answer built per request: no MCP.
    def connection_made(self, transport):
        self.transport = transport
        self.parser = httptools.HttpRequestParser(self)
        self.headers = []
        self.body = []
        self.out = []

    def on_header(self, name, value):
        self.headers.append((name, value))

    def on_body(self, body):
        self.body.append(body)

    def on_message_complete(self):
        self.out.append(HEAD + CANNED)
        self.headers = []
        self.body = []

    def data_received(self, data):
        self.parser.feed_data(data)
        if self.out:
            self.transport.write(b"".join(self.out))
            self.out.clear()

async def main():
    server = await asyncio.get_running_loop().create_server(Floor, "127.0.0.1", 0)
    print("http://127.0.0.1:%d/mcp" % server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()

asyncio.run(main())
""".replace("__CANNED__", repr(CANNED))

#: The httptools floor that also does the least JSON-RPC work: the body decoded
#: (``json.loads``), the answer built for its ``id`` and arguments and encoded (``json.dumps``).
HTTPTOOLS_JSON_FLOOR = HTTPTOOLS_FLOOR.replace(
    "        self.out.append(HEAD + CANNED)\n",
    "        call = json.loads(b''.join(self.body))\n"
    "        text = call['params']['arguments']['text']\n"
    "        answer = json.dumps({'jsonrpc': '2.0', 'id': call['id'], 'result': {'content': [\n"
    "            {'type': 'text', 'text': text}]}}, separators=(',', ':')).encode()\n"
    "        self.out.append(b'HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\n'\n"
    "                        b'content-length: %d\\r\\n\\r\\n' % len(answer) + answer)\n")


#: The end of every uvicorn row's script below: ``make_app()`` (defined by the script) served
#: by uvicorn with its defaults on a port of its own, the URL printed once it listens.
UVICORN_SERVE = r"""
import asyncio, socket
import uvicorn

async def main():
    app = make_app()
    # IPPROTO_TCP so that asyncio sets TCP_NODELAY (see tests/peers/sdk_http_server.py).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    userver = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on",
                                            access_log=False))
    task = asyncio.ensure_future(userver.serve(sockets=[sock]))
    while not userver.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.01)
    print("http://127.0.0.1:%d/mcp" % sock.getsockname()[1], flush=True)
    await task

asyncio.run(main())
"""


#: The official SDK's low-level ``Server`` (no decorators, no schema from type hints) with one
#: tool, ``echo``, as its Streamable HTTP Starlette app under uvicorn (JSON responses), started
#: the way tests/peers/sdk_http_server.py starts its high-level one.
SDK_LOWLEVEL = r"""
import logging
from mcp import types
from mcp.server.lowlevel import Server

logging.getLogger("mcp").setLevel(logging.WARNING)
ECHO = types.Tool(name="echo", description="Return the text unchanged.", input_schema={
    "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[ECHO])

async def call_tool(ctx, params):
    text = (params.arguments or {}).get("text", "")
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

def make_app():
    server = Server("sdk-lowlevel", version="2.0", on_list_tools=list_tools,
                    on_call_tool=call_tool)
    return server.streamable_http_app(json_response=True, host="127.0.0.1")
""" + UVICORN_SERVE

#: FastMCP (the framework many Python MCP servers are written in): the same echo tool under
#: uvicorn, JSON responses like the other rows.
FASTMCP = r"""
import logging
from fastmcp import FastMCP

logging.getLogger("fastmcp").setLevel(logging.WARNING)
logging.getLogger("mcp").setLevel(logging.WARNING)
mcp = FastMCP("fastmcp-bench")

@mcp.tool
def echo(text: str) -> str:
    "Return the text unchanged."
    return text

def make_app():
    return mcp.http_app(path="/mcp", json_response=True)
""" + UVICORN_SERVE

#: Our ASGI app (the example server, as ``serve-example --engine uvicorn`` builds it) under
#: uvicorn configured as the ``sdk`` and ``fastmcp`` rows configure it: uvicorn's defaults, so
#: its httptools protocol (``http="auto"`` picks it when httptools is installed). The
#: ``ours-uvicorn`` row runs h11 instead, the protocol the hardening table has serve-example
#: choose; this one is the same-engine comparison with the SDK.
OURS_UVICORN_DEFAULTS = r"""
from mcp_sansio.adapters.tools._asgi_serve import example_app

make_app = example_app
""" + UVICORN_SERVE


@dataclass(frozen=True)
class Row:
    """A server under test: how to start it (it prints its URL on stdout), whether it speaks
    MCP (the floors answer anything: no handshake, no memory figure), what it needs.

    ``workers``: the engine's worker processes (the whole process tree is pinned and measured,
    see :func:`tree`); ``processes``: how many make up the tree once it has started (waited
    for before the first window); ``sessionless``: the handshake era is served with no
    session kept (no ``Mcp-Session-Id``; several workers and no shared store, by design:
    docs/http.rst), so it is labelled in the table and has no idle-session figure;
    ``maps``: a shared object every worker must have loaded, checked once the server is up
    (for a row whose engine would silently fall back to another parser without it)."""

    name: str
    command: Callable[[], list[str]]
    mcp: bool = True
    needs: tuple[str, ...] = ()
    workers: int = 1
    processes: int = 1
    sessionless: bool = False
    maps: str | None = None
    compiled: bool = False


#: The compiled build's tree (``--compiled-tree``): the ``-compiled`` rows import mcp_sansio
#: from it (``PYTHONPATH``, and ``-P`` so that the checkout is not first on ``sys.path``).
COMPILED_TREE: Path | None = None


def _ours(runtime: str, wire: str = "h11", compiled: bool = False) -> Row:
    """Our own server on ``runtime``; ``wire``: its HTTP parser (``--wire``, docs/wires.rst):
    the h11 rows keep their names, the httptools ones are ``ours-RUNTIME-httptools``;
    ``compiled``: on the compiled build (``-compiled``, from :data:`COMPILED_TREE`)."""
    name = f"ours-{runtime}" if wire == "h11" else f"ours-{runtime}-{wire}"
    needs = (("trio",) if runtime == "trio" else ()) + ((wire,) if wire != "h11" else ())
    flags = ["-P"] if compiled else []
    return Row(name + ("-compiled" if compiled else ""),
               lambda: [sys.executable, *flags, "-m", "mcp_sansio", "serve-example",
                        "--transport", "http", "--runtime", runtime, "--wire", wire],
               needs=needs, compiled=compiled)


def _engine(engine: str, workers: int) -> Row:
    """Our ASGI app (adapters/asgi.py) on ``engine`` with ``workers`` processes, started as
    deployed: ``serve-example --transport http --engine E --workers N`` (docs/deploying.rst).
    uvicorn runs its h11 protocol (serve-example passes ``http="h11"``, the choice of the
    hardening table in docs/deploying.rst) on the asyncio loop (no uvloop here); granian
    parses HTTP in Rust (hyper) and runs the app on asyncio. With 2 workers and no store the
    handshake era is served sessionless (serve-example says so on stderr)."""
    name = f"ours-{engine}" + (f"-{workers}w" if workers > 1 else "")
    needs = (engine, "anyio", "sniffio")
    return Row(name, lambda: [sys.executable, "-m", "mcp_sansio", "serve-example",
                              "--transport", "http", "--engine", engine,
                              "--workers", str(workers)],
               needs=needs, workers=workers, sessionless=workers > 1,
               # uvicorn serves one worker in its own process and adds a supervisor for
               # more; granian always runs a main process and its workers.
               processes=1 + workers if engine == "granian" or workers > 1 else 1)


#: Every row, in report order. A new server under test is one entry.
ROWS: tuple[Row, ...] = (
    Row("raw", lambda: [sys.executable, "-c", RAW_FLOOR], mcp=False),
    Row("h11", lambda: [sys.executable, "-c", H11_FLOOR], mcp=False, needs=("h11",)),
    Row("httptools", lambda: [sys.executable, "-c", HTTPTOOLS_FLOOR], mcp=False,
        needs=("httptools",)),
    Row("httptools-json", lambda: [sys.executable, "-c", HTTPTOOLS_JSON_FLOOR], mcp=False,
        needs=("httptools",)),
    _ours("asyncio"),
    _ours("trio"),
    _ours("threading"),
    _ours("asyncio", "httptools"),
    _ours("trio", "httptools"),
    _ours("threading", "httptools"),
    _ours("asyncio", compiled=True),
    _ours("threading", compiled=True),
    _ours("asyncio", "httptools", compiled=True),
    _ours("threading", "httptools", compiled=True),
    _engine("uvicorn", 1),
    _engine("uvicorn", 2),
    Row("ours-uvicorn-defaults", lambda: [sys.executable, "-c", OURS_UVICORN_DEFAULTS],
        needs=("uvicorn", "httptools", "anyio", "sniffio")),
    _engine("granian", 1),
    _engine("granian", 2),
    Row("sdk", lambda: [sys.executable, "-c", SDK_LOWLEVEL], needs=("mcp", "uvicorn")),
    Row("sdk-mcpserver", lambda: [sys.executable, str(PEERS / "sdk_http_server.py"), "--json"],
        needs=("mcp", "uvicorn")),
    Row("fastmcp", lambda: [sys.executable, "-c", FASTMCP], needs=("fastmcp", "uvicorn")),
)


# -- /proc ------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (proc(5): fields 14 and 15, in clock ticks)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_kib(pid: int, key: str) -> int:
    """A ``/proc/PID/status`` memory line (``VmRSS``, ``VmHWM``), in KiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def tree(pid: int) -> list[int]:
    """``pid`` and every live descendant (an engine's supervisor and its workers): the server
    under test is the whole tree. Found from each process's parent in ``/proc/*/stat``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):  # gone meanwhile
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, ()))
    return found


def tree_sum(pid: int, measure: Callable[[int], float]) -> float:
    """``measure`` summed over the tree of ``pid``, skipping a process that ends meanwhile."""
    total = 0.0
    for member in tree(pid):
        try:
            total += measure(member)
        except (OSError, KeyError):
            continue
    return total


def pin_tree(pid: int, cpus: set[int]) -> None:
    """Pin every thread of every process in the tree to ``cpus``. Children inherit the
    affinity of their creator, so pinning the root at start covers workers spawned later;
    this catches anything started before that (and engine threads made in native code)."""
    for member in tree(pid):
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{member}/task")]
        except OSError:
            continue
        for tid in tids:
            try:
                os.sched_setaffinity(tid, cpus)
            except OSError:  # the thread ended meanwhile
                continue


def loaded(pid: int, needle: str) -> bool:
    """Whether a shared object whose path contains ``needle`` is mapped in ``pid``."""
    with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as f:
        return any(needle in line for line in f)


def connections(pid: int, port: int) -> list[int]:
    """Established connections to ``port`` held by each process of the tree (the kernel hands
    accepted connections to whichever worker accepts first: this shows how the load was
    spread). Sockets are matched by inode between ``/proc/PID/fd`` and ``/proc/net/tcp``."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                next(f)
                for line in f:
                    fields = line.split()
                    # local address HEX:PORT, state 01 = ESTABLISHED (proc(5))
                    if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                        inodes.add(fields[9])
        except OSError:
            continue
    counts = []
    for member in tree(pid):
        held = 0
        try:
            for fd in os.listdir(f"/proc/{member}/fd"):
                try:
                    target = os.readlink(f"/proc/{member}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    held += 1
        except OSError:
            continue
        if held:
            counts.append(held)
    return sorted(counts, reverse=True)


def settle(pid: int, processes: int, timeout: float = 60.0) -> None:
    """Wait until the tree has ``processes`` members and is idle (its CPU grows by less than
    20 ms over 0.5 s): an engine's port accepts connections as soon as its parent binds it,
    before every worker has imported the app, and a worker still starting would leave all
    the connections to the first one ready. The timeout (60 s, as serve-example's own wait
    for the port) only bounds a start that is going wrong; the row goes on regardless."""
    deadline = time.monotonic() + timeout
    last = tree_sum(pid, cpu_seconds)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = tree_sum(pid, cpu_seconds)
        if len(tree(pid)) >= processes and now - last < 0.02:
            return
        last = now


@functools.cache
def cores() -> tuple[set[int], set[int]]:
    """The server's core and the generator's cores (the same one on a one-core machine).
    Worked out once, from the affinity this process started with: the main process then
    moves itself to the generator's cores (a generator, started from there, gets those)."""
    allowed = sorted(os.sched_getaffinity(0))
    return {allowed[0]}, set(allowed[1:]) or {allowed[0]}


# -- requests ---------------------------------------------------------------------------------


def post(port: int, body: dict[str, Any], headers: dict[str, str]) -> bytes:
    """One POST to /mcp as bytes (built once; the generator replays them)."""
    data = json.dumps(body, separators=(",", ":")).encode()
    head = ["POST /mcp HTTP/1.1", f"host: 127.0.0.1:{port}",
            "accept: application/json, text/event-stream", "content-type: application/json",
            *(f"{k}: {v}" for k, v in headers.items()), f"content-length: {len(data)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


def call_bytes(port: int, era: str, session: str | None) -> bytes:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": "hello"}}
    if era == "stateless":
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                           "io.modelcontextprotocol/clientCapabilities": {},
                           "io.modelcontextprotocol/clientInfo": CLIENT_INFO}
        headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
                   "mcp-name": "echo"}
    else:
        headers = {"mcp-protocol-version": "2025-11-25"}
        if session is not None:
            headers["mcp-session-id"] = session
    return post(port, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
                headers)


def parse(buf: bytes) -> tuple[int, dict[bytes, bytes], bytes, bytes] | None:
    """One ``Content-Length`` response from the front of ``buf``: status, headers, body, rest;
    None if incomplete. A response without ``Content-Length`` is not expected from any row
    (all answer JSON) and raises."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = buf[:end].split(b"\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if b"content-length" not in headers:
        raise ValueError("a response without Content-Length (this generator reads no chunked "
                         "or SSE bodies): run the server in JSON response mode")
    length = int(headers[b"content-length"])
    if len(buf) < end + 4 + length:
        return None
    return (int(lines[0][9:12]), headers, buf[end + 4:end + 4 + length],
            buf[end + 4 + length:])


def exchange(sock: socket.socket, data: bytes, buf: bytes = b"") -> tuple[
        int, dict[bytes, bytes], bytes, bytes]:
    """Blocking: send a request, read its whole response."""
    sock.sendall(data)
    while (got := parse(buf)) is None:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return got


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def handshake(sock: socket.socket, port: int, sessionless: bool = False) -> str | None:
    """initialize + notifications/initialized on ``sock``: the session id, or None from a
    sessionless server (which assigns none: the client then sends none, docs/http.rst)."""
    status, headers, _, rest = exchange(sock, post(port, {
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": CLIENT_INFO}}, {}))
    if status != 200 or (b"mcp-session-id" in headers) == sessionless:
        raise RuntimeError(f"initialize answered {status}, "
                           f"{'with' if sessionless else 'without'} a session id")
    session = None if sessionless else headers[b"mcp-session-id"].decode()
    follow = {"mcp-protocol-version": "2025-11-25"}
    if session is not None:
        follow["mcp-session-id"] = session
    status, _, _, _ = exchange(sock, post(port, {
        "jsonrpc": "2.0", "method": "notifications/initialized"}, follow), rest)
    if status != 202:
        raise RuntimeError(f"notifications/initialized answered {status}")
    return session


# -- the generator (a child process) -----------------------------------------------------------


def worker(port: int, era: str, clients: int, seconds: float, mcp: bool,
           sessionless: bool = False) -> int:
    """Run ``clients`` clients for ``seconds`` after "go" on stdin; print a JSON summary."""
    os.sched_setaffinity(0, cores()[1])
    socks: list[socket.socket] = []
    requests: list[bytes] = []
    for _ in range(clients):
        sock = connect(port)
        session = (handshake(sock, port, sessionless) if mcp and era == "handshake"
                   else None)
        socks.append(sock)
        requests.append(call_bytes(port, era, session))
    print("ready", flush=True)
    sys.stdin.readline()
    select = selectors.DefaultSelector()
    bufs = [b""] * clients
    started = [0.0] * clients
    latencies: list[float] = []
    errors = 0
    cpu0 = time.process_time()
    start = time.perf_counter()
    deadline = start + seconds
    for i, sock in enumerate(socks):
        sock.setblocking(False)
        select.register(sock, selectors.EVENT_READ, i)
        started[i] = time.perf_counter()
        sock.send(requests[i])
    now = start
    while now < deadline:
        for key, _ in select.select(deadline - now):
            i = key.data
            sock = socks[i]
            try:
                chunk = sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:  # the server closed: an error, then a fresh connection
                errors += 1
                select.unregister(sock)
                sock.close()
                sock = socks[i] = connect(port)
                sock.setblocking(False)
                select.register(sock, selectors.EVENT_READ, i)
                bufs[i] = b""
                started[i] = time.perf_counter()
                sock.send(requests[i])
                continue
            buf = bufs[i] + chunk
            got = parse(buf)
            if got is None:
                bufs[i] = buf
                continue
            status, _, body, bufs[i] = got
            done = time.perf_counter()
            if 200 <= status < 300 and b'"result"' in body:
                latencies.append(done - started[i])
            else:
                errors += 1
            started[i] = done
            sock.send(requests[i])  # small enough for the socket buffer: never partial
        now = time.perf_counter()
    elapsed = time.perf_counter() - start
    print(json.dumps({"latencies": latencies, "errors": errors, "elapsed": elapsed,
                      "cpu": time.process_time() - cpu0}), flush=True)
    for sock in socks:
        sock.close()
    return 0


# -- the run -----------------------------------------------------------------------------------


def spawn(command: list[str], processes: int = 1,
          compiled: bool = False) -> tuple[subprocess.Popen[str], int]:
    """Start a server pinned to the server core; its port (from the URL it prints). For a
    tree of ``processes`` (an engine's supervisor and workers), wait until all are up and
    idle. ``compiled``: mcp_sansio comes from :data:`COMPILED_TREE`."""
    env = None
    if compiled:
        assert COMPILED_TREE is not None
        env = dict(os.environ, PYTHONPATH=str(COMPILED_TREE))
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, text=True, cwd=ROOT, env=env)
    # Pinned from here, not in a preexec_fn (unsafe with threads): the interpreter starts no
    # thread before it runs the server's code, and threads inherit their creator's affinity.
    os.sched_setaffinity(proc.pid, cores()[0])
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line:
        proc.kill()
        raise RuntimeError(f"{command} did not start")
    if processes > 1:
        settle(proc.pid, processes)
    pin_tree(proc.pid, cores()[0])
    return proc, int(line.rsplit(":", 1)[1].split("/")[0])


def stop(proc: subprocess.Popen[str]) -> None:
    """Stop the server and whatever of its tree outlives it (an engine's supervisor stops its
    workers on SIGTERM; a worker left behind would hold the core for the next row)."""
    members = tree(proc.pid)[1:]
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for member in members:
        try:
            os.kill(member, 9)
        except OSError:  # already gone, as it should be
            continue


def percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def one_load(pid: int, port: int, era: str, args: argparse.Namespace,
             row: Row) -> dict[str, Any]:
    """One timed window of ``args.clients`` clients over ``args.procs`` generator processes."""
    shares = [args.clients // args.procs + (i < args.clients % args.procs)
              for i in range(args.procs)]
    gens = [subprocess.Popen([sys.executable, __file__, "--worker", str(port), era, str(n),
                              str(args.seconds), "1" if row.mcp else "0",
                              "1" if row.sessionless else "0"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
            for n in shares if n]
    try:
        for gen in gens:
            assert gen.stdout is not None
            if gen.stdout.readline().strip() != "ready":
                raise RuntimeError("a load generator did not get ready")
        cpu0 = tree_sum(pid, cpu_seconds)
        wall0 = time.perf_counter()
        for gen in gens:
            assert gen.stdin is not None
            gen.stdin.write("go\n")
            gen.stdin.flush()
        # Who holds the connections, counted inside the window: before it, a connection no
        # request has used yet may still wait in the listening socket's queue, accepted by
        # no worker (granian accepts lazily), and would be counted nowhere.
        time.sleep(args.seconds / 2)
        spread = connections(pid, port)
        outs = []
        for gen in gens:
            text = gen.communicate(timeout=args.seconds + 120)[0]
            if gen.returncode != 0:
                raise RuntimeError(f"a load generator failed (exit {gen.returncode})")
            outs.append(json.loads(text))
        cpu = tree_sum(pid, cpu_seconds) - cpu0
        wall = time.perf_counter() - wall0
    finally:
        for gen in gens:
            if gen.poll() is None:
                gen.kill()
                gen.wait()
    latencies = sorted(x for out in outs for x in out["latencies"])
    elapsed = max(out["elapsed"] for out in outs)
    n = len(latencies)
    return {"rps": n / elapsed, "p50_ms": percentile(latencies, 0.5) * 1e3,
            "p99_ms": percentile(latencies, 0.99) * 1e3,
            "cpu_us": cpu / n * 1e6 if n else float("nan"),
            "server_cpu": cpu / wall, "gen_cpu": sum(out["cpu"] for out in outs) / elapsed,
            "errors": sum(out["errors"] for out in outs), "connections": spread}


def idle_session_memory(row: Row, sessions: int) -> float:
    """KiB of server RSS per idle handshake-era session, on a fresh server process."""
    proc, port = spawn(row.command(), row.processes, row.compiled)
    try:
        socks = [connect(port) for _ in range(MEMORY_CONNECTIONS)]
        for i in range(WARM_UP_SESSIONS):
            handshake(socks[i % len(socks)], port)
        time.sleep(0.5)
        before = tree_sum(proc.pid, lambda p: memory_kib(p, "VmRSS"))
        for i in range(sessions):
            handshake(socks[i % len(socks)], port)
        time.sleep(0.5)
        after = tree_sum(proc.pid, lambda p: memory_kib(p, "VmRSS"))
        for sock in socks:
            sock.close()
        return (after - before) / sessions
    finally:
        stop(proc)


def compiled_tree_ok(tree: Path) -> bool:
    """Whether ``tree`` holds the compiled build: its connection module is an extension."""
    return any((tree / "mcp_sansio").glob("_connection.*.so"))


def available(row: Row) -> bool:
    import importlib.util

    if row.compiled and (COMPILED_TREE is None or not compiled_tree_ok(COMPILED_TREE)):
        return False
    return all(importlib.util.find_spec(name) is not None for name in row.needs)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        w_port, w_era, w_clients, w_seconds, w_mcp, w_sessionless = sys.argv[2:8]
        return worker(int(w_port), w_era, int(w_clients), float(w_seconds), w_mcp == "1",
                      w_sessionless == "1")
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--seconds", type=float, default=SECONDS, help="timed window per row")
    parser.add_argument("--repeat", type=int, default=REPEAT, help="repetitions (medians)")
    parser.add_argument("--clients", type=int, default=CLIENTS, help="concurrent clients")
    # One generator process by default: on a 2-core machine the generator has one core, and
    # more processes on it add no CPU; more help where there are more cores to give them.
    parser.add_argument("--procs", type=int, default=1, help="load generator processes")
    parser.add_argument("--rows", default=",".join(r.name for r in ROWS),
                        help="comma-separated rows (default: all): "
                             + ", ".join(r.name for r in ROWS))
    parser.add_argument("--eras", default=",".join(ERAS), help="handshake, stateless")
    parser.add_argument("--sessions", type=int, default=SESSIONS,
                        help="idle sessions for the memory figure (0: skip it)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--compiled-tree", type=Path, default=None,
                        help="the compiled build's tree for the -compiled rows (make it with "
                             "python .ci/compiled.py --tree DIR)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run, as every benchmark script has: 2 clients, 0.3 s, "
                             "1 repetition, 20 sessions (not a measurement)")
    args = parser.parse_args()
    if args.quick:
        args.clients, args.seconds, args.repeat, args.sessions = 2, 0.3, 1, 20
    if min(args.procs, args.clients, args.repeat) < 1 or args.seconds <= 0:
        parser.error("--procs, --clients, --repeat and --seconds must be positive")
    global COMPILED_TREE
    COMPILED_TREE = args.compiled_tree.resolve() if args.compiled_tree else None
    known = {r.name: r for r in ROWS}
    wanted = [name for name in args.rows.split(",") if name]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        parser.error(f"unknown rows: {', '.join(unknown)}")
    eras = [era for era in args.eras.split(",") if era]
    if not set(eras) <= set(ERAS):
        parser.error(f"eras are {', '.join(ERAS)}")
    rows = []
    for name in wanted:
        if available(known[name]):
            rows.append(known[name])
        elif known[name].compiled and (COMPILED_TREE is None
                                       or not compiled_tree_ok(COMPILED_TREE)):
            print(f"# {name}: left out (no compiled build: --compiled-tree DIR, made by "
                  f"python .ci/compiled.py --tree DIR)")
        else:
            print(f"# {name}: left out ({', '.join(known[name].needs)} not installed)")
    server_core, gen_cores = cores()
    # This process only waits and reads /proc (the connection count inside each window):
    # off the server's core, so that none of that is charged to the server.
    os.sched_setaffinity(0, gen_cores)
    print(f"# load: {args.clients} keep-alive clients, tools/call echo, {args.seconds:g} s x "
          f"{args.repeat} (medians); {platform.python_implementation()} "
          f"{platform.python_version()}; server on cpu {sorted(server_core)}, "
          f"{args.procs} generator process(es) on cpu {sorted(gen_cores)}")
    print(f"{'row':<34}{'era':<11}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'cpu us/req':>12}"
          f"{'srv cpu':>9}{'gen cpu':>9}{'rss MiB':>9}{'errors':>8}")
    report: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()},
                              "rows": [], "memory": []}
    notes: list[str] = []
    for row in rows:
        proc, port = spawn(row.command(), row.processes, row.compiled)
        try:
            members = tree(proc.pid)
            # Workers only: a supervisor (uvicorn's parent with --workers, and its
            # multiprocessing resource tracker) does not serve and does not load it.
            if row.maps is not None and sum(
                    loaded(pid, row.maps) for pid in members) < row.workers:
                raise RuntimeError(f"{row.name}: not every worker loaded {row.maps}")
            samples: dict[str, list[dict[str, Any]]] = {era: [] for era in eras}
            for _ in range(args.repeat):
                for era in eras:
                    samples[era].append(one_load(proc.pid, port, era, args, row))
            # The whole tree's peaks, summed: shared library pages count once per process.
            hwm = tree_sum(proc.pid, lambda p: memory_kib(p, "VmHWM")) / 1024
        finally:
            stop(proc)
        if row.workers > 1 or len(members) > 1:
            spread = "; ".join(f"{era} " + ", ".join("/".join(map(str, s["connections"]))
                                                     for s in samples[era]) for era in eras)
            notes.append(f"# {row.name}: {len(members)} processes; connections held per "
                         f"process, per repetition: {spread}")
        for era in eras:
            med = {k: statistics.median(s[k] for s in samples[era])
                   for k in samples[era][0] if k != "connections"}
            errors = sum(int(s["errors"]) for s in samples[era])
            sessionless = row.sessionless and era == "handshake" and row.mcp
            label = era + ("*" if sessionless else "")
            print(f"{row.name:<34}{label:<11}{med['rps']:>9.0f}{med['p50_ms']:>9.2f}"
                  f"{med['p99_ms']:>9.2f}{med['cpu_us']:>12.1f}{med['server_cpu']:>9.2f}"
                  f"{med['gen_cpu']:>9.2f}{hwm:>9.1f}{errors:>8d}", flush=True)
            report["rows"].append({"row": row.name, "era": era, **med, "errors": errors,
                                   "rss_peak_mib": hwm, "sessionless": sessionless,
                                   "processes": len(members), "connections": [
                                       s["connections"] for s in samples[era]]})
    if any(r["sessionless"] for r in report["rows"]):
        print("* handshake era served sessionless: several workers and no shared store keep no "
              "session (by design, docs/http.rst); every call builds a fresh connection")
    for note in notes:
        print(note)
    # Sessionless rows keep no session: nothing to measure per idle session.
    memory_rows = ([row for row in rows if row.mcp and not row.sessionless]
                   if args.sessions > 0 else [])
    if memory_rows:
        print()
        print(f"# idle handshake-era sessions: server RSS growth over {args.sessions} sessions")
        print(f"{'row':<34}{'KiB/session':>12}")
        for row in memory_rows:
            kib = idle_session_memory(row, args.sessions)
            print(f"{row.name:<34}{kib:>12.1f}", flush=True)
            report["memory"].append({"row": row.name, "kib_per_session": kib})
    aims(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


def aims(report: dict[str, Any]) -> None:
    """The speed aims (docs/performance.rst) against this run's numbers: stated, never asserted.

    Each ratio is given twice: by requests/s, and by server CPU per request, which a core
    shared with other work (a busy machine) skews less."""
    by = {(r["row"], r["era"]): r for r in report["rows"]}
    print()
    for era in ERAS:
        ours = {name: r for (name, e), r in by.items() if e == era and name.startswith("ours-")}
        if not ours:
            continue
        best = max(ours.values(), key=lambda r: r["rps"])
        lean = min(ours.values(), key=lambda r: r["cpu_us"])
        line = (f"aim {era}: best ours {best['row']} {best['rps']:.0f} req/s; least cpu "
                f"{lean['row']} {lean['cpu_us']:.1f} us/req (aim <= 40)")
        for peer, aim in (("sdk", 10), ("fastmcp", 25)):
            other = by.get((peer, era))
            if other and other["rps"] > 0 and lean["cpu_us"] > 0:
                line += (f"; x {peer} {best['rps'] / other['rps']:.2f} by cpu "
                         f"{other['cpu_us'] / lean['cpu_us']:.2f} (aim >= {aim})")
        print(line + (" [sessionless]" if best.get("sessionless") else ""))
        # The same engine: our ASGI app against the SDK's Starlette app, both on uvicorn with
        # one worker, started alike (uvicorn's defaults) and, for information, on h11.
        sdk = by.get(("sdk", era))
        for name in ("ours-uvicorn-defaults", "ours-uvicorn"):
            mine = by.get((name, era))
            if sdk and mine and sdk["rps"] > 0 and mine["cpu_us"] > 0:
                print(f"aim {era} same engine: {name} x sdk {mine['rps'] / sdk['rps']:.2f} "
                      f"by cpu {sdk['cpu_us'] / mine['cpu_us']:.2f} (aim >= 5)")
        for r in ours.values():
            line = f"aim {era} {r['row']}: p99/p50 {r['p99_ms'] / r['p50_ms']:.1f} (aim <= 3)"
            if sdk:
                line += (f"; p99 {r['p99_ms']:.2f} ms vs sdk p50 {sdk['p50_ms']:.2f} ms "
                         f"({'under' if r['p99_ms'] < sdk['p50_ms'] else 'over'})")
            print(line)
        # The two wires side by side, per runtime (docs/wires.rst).
        for name, fast in sorted(ours.items()):
            h11_row = by.get((name.removesuffix("-httptools"), era))
            if name.endswith("-httptools") and h11_row:
                print(f"wire {era} {name.removesuffix('-httptools')}: httptools/h11 req/s "
                      f"{fast['rps'] / h11_row['rps']:.2f}x, cpu us/req "
                      f"{h11_row['cpu_us']:.1f} -> {fast['cpu_us']:.1f}")
        # The compiled build against the pure one, row by row (docs/compiled.rst).
        for name, built in sorted(ours.items()):
            pure = by.get((name.removesuffix("-compiled"), era))
            if name.endswith("-compiled") and pure:
                print(f"compiled {era} {pure['row']}: compiled/pure req/s "
                      f"{built['rps'] / pure['rps']:.2f}x, cpu us/req {pure['cpu_us']:.1f} -> "
                      f"{built['cpu_us']:.1f} (pure/compiled "
                      f"{pure['cpu_us'] / built['cpu_us']:.2f})")
    for m in (m for m in report["memory"] if m["row"].startswith("ours-")):
        print(f"aim memory {m['row']}: {m['kib_per_session']:.1f} KiB per idle session "
              f"(aim <= 4)")


if __name__ == "__main__":
    sys.exit(main())
