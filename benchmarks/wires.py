"""The server wires alone: what one request costs in each HTTP/1.1 parser, side by side.

Theory of operation. No sockets and no MCP: one wire object per connection (the h11
:class:`~mcp_sansio.http._wire.ServerWire` and the llhttp
:class:`~mcp_sansio.http._wire_httptools.HttptoolsWire`), fed the bytes of a real request --
the 2026-07-28 ``tools/call`` the load benchmark sends (``benchmarks/load.py``: seven headers
and a 260-byte JSON body), or the 2025-11-25 one with its session id -- on one keep-alive
connection, ``--requests`` times in a row. Per request the wire is given the bytes, hands the
request over (``next_request``), is given a JSON answer (``respond``) and writes it
(``data_to_send``): everything the wire does for a request and nothing else. Two figures
per wire: **parse** (``receive_data`` + ``next_request``, timed around those two calls, so
it carries two clock reads) and **round** (parse + respond + write, timed around the whole
loop), in microseconds per request, the median of ``--repeat`` timed batches
(``time.perf_counter``, after a warm-up batch), with the two wires' batches interleaved so
that both see the same machine. The ratio column is h11 over httptools.

The machine is shared: compare the two wires of one run, not runs.

Run: ``python benchmarks/wires.py [--requests 20000] [--repeat 7] [--quick] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from mcp_sansio.http._wire import ServerWire
from mcp_sansio.http._wire_httptools import HttptoolsWire

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from load import call_bytes  # noqa: E402 - the load benchmark's request bytes

WIRES: dict[str, Any] = {"h11": ServerWire, "httptools": HttptoolsWire}
ANSWER = (b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}],'
          b'"isError":false}}')
HEADERS = (("content-type", "application/json"),)


def batch(make: Any, request: bytes, count: int) -> tuple[float, float]:
    """Microseconds per request for ``count`` requests on one keep-alive connection: parsing
    alone (``receive_data`` + ``next_request``, timed around those two calls) and the whole
    round (timed around the loop)."""
    wire = make(max_body_size=4 * 1024 * 1024)
    receive, take = wire.receive_data, wire.next_request
    respond, write = wire.respond, wire.data_to_send
    clock = time.perf_counter
    parsing = 0.0
    start = clock()
    for _ in range(count):
        before = clock()
        receive(request)
        got = take()
        parsing += clock() - before
        if got is None:
            raise AssertionError("the wire did not hand the request over")
        respond(200, HEADERS, ANSWER)
        write()
    total = clock() - start
    return parsing / count * 1e6, total / count * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a smoke run: not a measurement")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.quick:
        args.requests, args.repeat = 200, 1
    requests = {"stateless": call_bytes(8000, "stateless", None),
                "handshake": call_bytes(8000, "handshake", "x" * 43)}
    print(f"# {args.requests} requests per batch, median of {args.repeat} batches; "
          f"CPython {sys.version.split()[0]}")
    print(f"{'era':<11}{'figure':<8}{'h11 us':>9}{'httptools us':>14}{'h11/httptools':>15}")
    report: list[dict[str, Any]] = []
    for era, request in requests.items():
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in WIRES}
        for make in WIRES.values():  # warm-up
            batch(make, request, max(10, args.requests // 10))
        for _ in range(args.repeat):
            for name, make in WIRES.items():
                times[name].append(batch(make, request, args.requests))
        for index, figure in enumerate(("parse", "round")):
            h11_us = statistics.median(t[index] for t in times["h11"])
            fast_us = statistics.median(t[index] for t in times["httptools"])
            print(f"{era:<11}{figure:<8}{h11_us:>9.1f}{fast_us:>14.1f}"
                  f"{h11_us / fast_us:>14.1f}x", flush=True)
            report.append({"era": era, "figure": figure, "h11_us": h11_us,
                           "httptools_us": fast_us})
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
