"""What one request costs the sans-IO HTTP server, and how much of it is building the
request's ``ServerConnection`` -- in memory, no sockets, no adapter.

Rows, each timed per request:

* ``connection``: ``Server.connection(request_state_key=...)`` of the example server -- what
  every stateless request (and every sessionless handshake-era POST) builds;
* ``http/2026-07-28``: one ``tools/call`` (``echo``) POST of the stateless era through
  :class:`~mcp_sansio.http.HTTPServer` on a channel of its default wire (``--wire``): the
  bytes in, the connection built, the request handed out, answered at once, the response
  bytes out;
* ``http/sessionless``: the same call in the handshake era (2025-11-25) on a server with
  ``sessionless=True``: a fresh connection per POST, assumed initialized;
* ``http/session``: the same call on an existing handshake-era session (no connection built:
  the reference the other two pay for their fresh connection against).

Method: the rows are timed side by side in every repetition (the order rotates), each a
batch of ``--count`` requests after a warm-up; reported are the median and minimum of
microseconds per request over ``--reps`` repetitions, and for the two rows that build a
connection per request the share of their median that the ``connection`` row's median is.
The machine is shared: compare shares and ratios, not absolute numbers.

Run: ``python benchmarks/per_request.py`` (``--quick`` for a smoke run, ``--json FILE`` to
save, ``--wire h11|httptools``, ``--clock process`` for CPU time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from mcp_sansio.adapters.tools import _example_server

from mcp_sansio import NEED_DATA, Request
from mcp_sansio.http import HTTPServer

KEY = bytes(range(32))
RESULT = {"content": [{"type": "text", "text": "hi"}]}
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}


def post(body: dict[str, Any], headers: dict[str, str]) -> bytes:
    data = json.dumps(body).encode()
    head = ["POST /mcp HTTP/1.1", "host: localhost",
            "accept: application/json, text/event-stream", "content-type: application/json",
            *(f"{k}: {v}" for k, v in headers.items()), f"content-length: {len(data)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


WIRE: str | None = None  # --wire: the server's wire (None: the default, httptools if installed)


def http_row(kind: str) -> Callable[[], None]:
    """One request of ``kind`` through a server built once: a closure doing it again."""
    example = _example_server.build(asyncio.sleep)

    def factory() -> Any:
        return example.connection(request_state_key=KEY)

    counter = iter(range(1, 1 << 30))
    options: dict[str, Any] = {} if WIRE is None else {"wire": WIRE}
    server = HTTPServer(factory, new_session_id=lambda: f"session-{next(counter)}",
                        sessionless=kind == "sessionless", **options)
    channel = server.new_channel(now=0.0)

    def exchange(data: bytes) -> bytes:
        channel.receive_data(data, now=1.0)
        while (item := server.next_event()) is not NEED_DATA:
            session, event = item
            if type(event) is Request:
                session.connection.send_response(event.request_id, RESULT)
        out = b"".join(chunk for _, chunk in server.data_to_send())
        assert out.startswith((b"HTTP/1.1 200", b"HTTP/1.1 202")), out[:200]
        return out

    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}}}
    if kind == "2026-07-28":
        call["params"]["_meta"] = MODERN_META  # type: ignore[index]
        request = post(call, {"mcp-protocol-version": "2026-07-28",
                              "mcp-method": "tools/call", "mcp-name": "echo"})
    else:
        headers = {"mcp-protocol-version": "2025-11-25"}
        if kind == "session":
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"}}}
            reply = exchange(post(init, {}))
            session_id = next(line.split(b": ", 1)[1].decode() for line in reply.split(b"\r\n")
                              if line.lower().startswith(b"mcp-session-id"))
            headers["mcp-session-id"] = session_id
            exchange(post({"jsonrpc": "2.0", "method": "notifications/initialized"}, headers))
        request = post(call, headers)
    assert b'"text":"hi"' in exchange(request)
    return lambda: exchange(request) and None


def connection_row() -> Callable[[], None]:
    example = _example_server.build(asyncio.sleep)
    return lambda: example.connection(request_state_key=KEY) and None


ROWS: dict[str, Callable[[], Callable[[], None]]] = {
    "connection": connection_row,
    "http/2026-07-28": lambda: http_row("2026-07-28"),
    "http/sessionless": lambda: http_row("sessionless"),
    "http/session": lambda: http_row("session"),
}


CLOCK = time.perf_counter


def time_batch(step: Callable[[], None], count: int) -> float:
    for _ in range(min(count, 200)):
        step()
    start = CLOCK()
    for _ in range(count):
        step()
    return (CLOCK() - start) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny counts: a smoke run")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 9)")
    parser.add_argument("--count", type=int, default=None,
                        help="requests per batch (default 3000)")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    parser.add_argument("--wire", choices=("h11", "httptools"), default=None,
                        help="the server's wire (default: the server's default)")
    parser.add_argument("--clock", choices=("perf", "process"), default="perf",
                        help="wall time (perf_counter) or this process's CPU time")
    args = parser.parse_args()
    global WIRE, CLOCK
    WIRE = args.wire
    CLOCK = time.process_time if args.clock == "process" else time.perf_counter
    reps = args.reps or (2 if args.quick else 9)
    count = args.count or (50 if args.quick else 3000)
    steps = {name: make() for name, make in ROWS.items()}
    names = list(steps)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            samples[name].append(time_batch(steps[name], count))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    print(f"{'row':20s} {'median us':>10s} {'min us':>8s} {'connection share':>17s}")
    results = []
    for name in names:
        builds = name in ("http/2026-07-28", "http/sessionless")  # a connection per request
        share = medians["connection"] / medians[name] if builds else None
        shown = f"{share * 100:16.1f}%" if share is not None else f"{'':>17s}"
        print(f"{name:20s} {medians[name]:10.1f} {min(samples[name]):8.1f} {shown}")
        results.append({"name": name, "median_us": medians[name],
                        "min_us": min(samples[name]), "connection_share": share})
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"reps": reps, "count": count, "results": results}, out, indent=2)


if __name__ == "__main__":
    main()
