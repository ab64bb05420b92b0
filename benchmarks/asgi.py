"""What one request costs the ASGI application over what it costs the sans-IO HTTP server
on the exchange seam alone -- in process, no sockets, no ASGI server.

Rows, each one ``tools/call`` (``echo``) answered as JSON, in both eras (2026-07-28
stateless; 2025-11-25 on an initialized session):

* ``seam``: :meth:`HTTPServer.new_exchange <mcp_sansio.http.HTTPServer.new_exchange>`
  channels fed the request as exchange events, the request answered synchronously from
  ``next_event`` (no runtime at all): the floor the adapter adds to;
* ``asgi-bare``: the same server behind :func:`mcp_sansio.adapters.asgi.http_app` (the same
  synchronous answer, given by the ``on_event`` handler), called by a minimal ASGI driver on
  asyncio: the seam plus the adapter's own cost (the head checks, the exchange queue, the
  receive/send hand-offs, header conversion, the service's pump);
* ``asgi-app``: :func:`mcp_sansio.adapters.asgi.app` over the example server (the echo tool
  run as a handler task, as under uvicorn or granian);
* with ``--uvicorn``, two more: ``uvicorn-floor``, uvicorn's own httptools protocol (as
  ``load.py``'s ``ours-uvicorn-defaults`` and ``sdk`` rows run it) over a fake transport,
  calling an ASGI app that reads the body and sends a canned answer -- the engine's own cost
  per request, no MCP; ``uvicorn-app``: the same protocol calling ``asgi-app``'s app (the
  request as ``load.py`` sends it): what the ASGI path costs under that engine, sockets aside.

The driver plays what an engine does per request: a scope, one ``http.request`` message
with the whole body, then ``receive`` waiting until the application returns; ``send``
keeps the messages. Each row is a batch of ``--count`` requests after a warm-up, over
``--reps`` repetitions (rotated order); reported are the median and minimum microseconds
per request (process CPU time: the machine is shared, so compare rows, not absolutes).

Run: ``python benchmarks/asgi.py`` (``--quick`` for a smoke run; ``--profile ROW`` prints
the top of a cProfile of one row, e.g. ``--profile asgi-app/2026-07-28``; ``--calls``
prints each row's Python and built-in calls per request under cProfile instead of times --
deterministic, so comparable across runs on a busy machine).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mcp_sansio.adapters import asgi
from mcp_sansio.adapters.tools import _example_server

from mcp_sansio import NEED_DATA, Request
from mcp_sansio.http import HTTPServer, Session
from mcp_sansio.http._exchange import RequestData, RequestEnded, RequestStarted, ResponseData
from mcp_sansio.http._headers import Headers

KEY = bytes(range(32))
RESULT = {"content": [{"type": "text", "text": "hi"}]}
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}
ERAS = ("2026-07-28", "2025-11-25")
BASE = [("host", "localhost"), ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json")]

Step = Callable[[], Awaitable[None]]


def call_body(era: str) -> bytes:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": "hi"}}
    if era == "2026-07-28":
        params["_meta"] = MODERN_META
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": params}).encode()


def call_headers(era: str) -> list[tuple[str, str]]:
    if era == "2026-07-28":
        return [*BASE, ("mcp-protocol-version", era), ("mcp-method", "tools/call"),
                ("mcp-name", "echo")]
    return [*BASE, ("mcp-protocol-version", era)]


def answer_at_once(session: Session, event: object) -> None:
    if type(event) is Request:
        session.connection.send_response(event.request_id, RESULT)


def bare_server() -> HTTPServer:
    example = _example_server.build(asyncio.sleep)
    counter = iter(range(1, 1 << 30))
    return HTTPServer(lambda: example.connection(request_state_key=KEY),
                      new_session_id=lambda: f"session-{next(counter)}")


INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"}}}).encode()
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()


# -- the seam alone ---------------------------------------------------------------------------

def seam_row(era: str) -> Step:
    server = bare_server()
    clock = [1.0]

    def exchange(headers: list[tuple[str, str]], body: bytes) -> tuple[int, dict[str, str],
                                                                       bytes]:
        clock[0] += 0.001
        now = clock[0]
        channel = server.new_exchange(now=now)
        channel.receive_event(RequestStarted(
            method="POST", target="/mcp",
            headers=Headers(encode(headers, body)),
            http_version="1.1"), now=now)
        channel.receive_event(RequestData(body), now=now)
        channel.receive_event(RequestEnded(), now=now)
        while (item := server.next_event()) is not NEED_DATA:
            answer_at_once(*item)
        server.data_to_send()
        events = channel.events_to_send()
        start = events[0]
        data = b"".join(e.data for e in events if isinstance(e, ResponseData))
        channel.connection_lost(now=now)
        return start.status, dict(start.headers), data  # type: ignore[attr-defined]

    headers = call_headers(era)
    if era != "2026-07-28":
        _, got, _ = exchange(headers, INIT)
        sid = next(v for k, v in got.items() if k.lower() == "mcp-session-id")
        headers = [*headers, ("mcp-session-id", sid)]
        exchange(headers, INITIALIZED)
    body = call_body(era)
    status, _, data = exchange(headers, body)
    assert status == 200 and b'"text":"hi"' in data, (status, data[:200])

    async def step() -> None:
        exchange(headers, body)

    return step


# -- the ASGI application, driven in process ---------------------------------------------------

async def drive(app: Any, headers: list[tuple[bytes, bytes]], body: bytes
                ) -> list[dict[str, Any]]:
    """One request as an engine plays it: the body in one message, then the connection
    staying open until the application returns."""
    sent: list[dict[str, Any]] = []
    given = False
    never: asyncio.Future[None] | None = None

    async def receive() -> dict[str, Any]:
        nonlocal given, never
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        never = asyncio.get_running_loop().create_future()
        await never
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
             "root_path": "", "query_string": b"", "headers": headers,
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}
    await app(scope, receive, send)
    return sent


def encode(headers: list[tuple[str, str]], body: bytes) -> list[tuple[bytes, bytes]]:
    return [(k.encode(), v.encode()) for k, v in
            [*headers, ("content-length", str(len(body)))]]


async def asgi_row(era: str, kind: str) -> Step:
    if kind == "bare":
        app = asgi.http_app(bare_server(), answer_at_once)
    else:
        app = asgi.app(_example_server.build(asyncio.sleep), request_state_key=KEY)
    headers = call_headers(era)
    if era != "2026-07-28":
        sent = await drive(app, encode(headers, INIT), INIT)
        sid = next(v.decode() for k, v in sent[0]["headers"] if k == b"mcp-session-id")
        headers = [*headers, ("mcp-session-id", sid)]
        await drive(app, encode(headers, INITIALIZED), INITIALIZED)
    body = call_body(era)
    wire = encode(headers, body)
    sent = await drive(app, wire, body)
    data = b"".join(m.get("body", b"") for m in sent[1:])
    assert sent[0]["status"] == 200 and b'"text":"hi"' in data, sent

    async def step() -> None:
        await drive(app, wire, body)

    return step


# -- under uvicorn's protocol, in process ------------------------------------------------------

CANNED = json.dumps({"jsonrpc": "2.0", "id": 1,
                     "result": RESULT}, separators=(",", ":")).encode()


async def canned_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The engine's floor: the body read, a canned JSON answer sent."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(CANNED)).encode())]})
    await send({"type": "http.response.body", "body": CANNED})


async def uvicorn_row(era: str, kind: str) -> Step:
    """uvicorn's ``HttpToolsProtocol`` on one keep-alive connection with a transport that
    keeps what is written; one step writes the request's bytes and runs the loop until the
    answer is complete."""
    from uvicorn.config import Config
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    from uvicorn.server import ServerState

    app: Any = canned_app if kind == "floor" else asgi.app(
        _example_server.build(asyncio.sleep), request_state_key=KEY)
    config = Config(app, http="httptools", lifespan="off", access_log=False,
                    log_level="warning")
    config.load()
    transport = _Transport()
    protocol = HttpToolsProtocol(config, ServerState(), app_state={})
    protocol.connection_made(transport)

    async def exchange(headers: list[tuple[str, str]], body: bytes) -> bytes:
        transport.written.clear()
        head = "".join(f"{k}: {v}\r\n" for k, v in
                       [*headers, ("content-length", str(len(body)))])
        protocol.data_received(f"POST /mcp HTTP/1.1\r\n{head}\r\n".encode() + body)
        while True:  # until the answer's head and its Content-Length body are written
            await asyncio.sleep(0)
            data = bytes(transport.written)
            end = data.find(b"\r\n\r\n")
            if end < 0:
                continue
            length = next(int(line.split(b":", 1)[1]) for line in data[:end].split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            if len(data) >= end + 4 + length:
                return data

    headers = call_headers(era)
    if era != "2026-07-28" and kind != "floor":
        answer = await exchange(headers, INIT)
        sid = next(line.split(b":", 1)[1].strip().decode()
                   for line in answer.split(b"\r\n") if line.lower().startswith(b"mcp-session-id:"))
        headers = [*headers, ("mcp-session-id", sid)]
        await exchange(headers, INITIALIZED)
    body = call_body(era)
    answer = await exchange(headers, body)
    assert answer.startswith(b"HTTP/1.1 200") and b'"text":"hi"' in answer, answer[:300]

    async def step() -> None:
        await exchange(headers, body)

    return step


class _Transport(asyncio.Transport):
    """What uvicorn's protocol writes to, kept in memory."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000),
                "peername": ("127.0.0.1", 5000)}.get(name, default)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


async def build_rows(with_uvicorn: bool = False) -> dict[str, Step]:
    rows: dict[str, Step] = {}
    for era in ERAS:
        rows[f"seam/{era}"] = seam_row(era)
        rows[f"asgi-bare/{era}"] = await asgi_row(era, "bare")
        rows[f"asgi-app/{era}"] = await asgi_row(era, "app")
        if with_uvicorn:
            rows[f"uvicorn-floor/{era}"] = await uvicorn_row(era, "floor")
            rows[f"uvicorn-app/{era}"] = await uvicorn_row(era, "app")
    return rows


async def count_calls(steps: dict[str, Step], count: int) -> None:
    """``--calls``: each row's calls per request under cProfile (Python functions, and
    built-ins: C functions and methods), after a warm-up."""
    print(f"{'row':24s} {'calls':>7s} {'python':>7s} {'built-in':>9s}")
    for name, step in steps.items():
        for _ in range(min(count, 100)):
            await step()
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(count):
            await step()
        profile.disable()
        stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        python = sum(v[1] for k, v in stats.items() if k[0] != "~") / count
        builtin = sum(v[1] for k, v in stats.items() if k[0] == "~") / count
        print(f"{name:24s} {python + builtin:7.0f} {python:7.0f} {builtin:9.0f}")


async def time_batch(step: Step, count: int) -> float:
    for _ in range(min(count, 100)):
        await step()
    start = time.process_time()
    for _ in range(count):
        await step()
    return (time.process_time() - start) / count * 1e6


async def run(args: argparse.Namespace) -> None:
    reps = args.reps or (2 if args.quick else 7)
    count = args.count or (30 if args.quick else 2000)
    steps = await build_rows(args.uvicorn)
    if args.calls:
        await count_calls(steps, args.count or (30 if args.quick else 500))
        return
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(count):
            await steps[args.profile]()
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
        return
    names = list(steps)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            samples[name].append(await time_batch(steps[name], count))
    print(f"{'row':24s} {'median us':>10s} {'min us':>8s}")
    results = []
    for name in names:
        median = statistics.median(samples[name])
        print(f"{name:24s} {median:10.1f} {min(samples[name]):8.1f}")
        results.append({"name": name, "median_us": median, "min_us": min(samples[name])})
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"reps": reps, "count": count, "results": results}, out, indent=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts: a smoke run")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 7)")
    parser.add_argument("--count", type=int, default=None,
                        help="requests per batch (default 2000)")
    parser.add_argument("--profile", metavar="ROW", help="cProfile one row instead")
    parser.add_argument("--top", type=int, default=30, help="functions shown by --profile")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    parser.add_argument("--calls", action="store_true",
                        help="calls per request under cProfile instead of times")
    parser.add_argument("--uvicorn", action="store_true",
                        help="also the rows under uvicorn's httptools protocol")
    args = parser.parse_args()
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
