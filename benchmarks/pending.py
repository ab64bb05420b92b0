"""100,000 requests pending in one ``ClientConnection``: time and memory.

After a handshake with a ``ServerConnection``, the client sends ``--count`` ``tools/call``
requests that are never answered (each with a 60 s idle timeout, sent at a slowly increasing
``now`` so that every request has its own deadline), and we measure, per JSON backend:

* **send_request**: microseconds per call while the count grows from 0 to N, with the outbox
  drained after every call (as an adapter does), and with all N encoded requests left queued
  (then drained in one ``data_to_send()``, timed separately);
* **next_deadline()**: nanoseconds per call with 1 request pending and with N pending, side by
  side in alternating order -- the deadline heap makes it O(1), so the two should match;
* **handle_timeout(now)** with ``now`` past every deadline: the one call that expires all N
  (it queues N ``notifications/cancelled`` and N ``RequestTimedOut`` events), the cost of
  draining those events and that outbox, then of calls with nothing left to do;
* **heap bytes per pending request**: ``tracemalloc`` (in a separate pass, so it does not slow
  the timed ones): Python heap growth from before the first ``send_request`` to after the
  last (outbox drained, garbage collected), divided by N; also the peak while sending, the
  peak inside ``handle_timeout``, the growth with the N requests left queued, and the
  allocation sites that hold the bytes.

Every timed figure is the median over ``--reps`` fresh connections (backends side by side).
No figure is asserted; the aims (``next_deadline`` flat, <= 3 KiB per pending request) are
reported, not enforced.

Run: ``python benchmarks/pending.py`` (``--quick`` for a smoke run, ``--json FILE`` to save,
``--clock process`` to count CPU time only).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import platform
import statistics
import sys
import time
import tracemalloc
import types
from typing import Any

from mcp_sansio import (
    NEED_DATA,
    ClientConnection,
    Initialized,
    RequestTimedOut,
    ServerConnection,
    _json,
)

PARAMS = {"name": "echo", "arguments": {"text": "hello"}}
TIMEOUT = 60.0
STEP = 1e-6  # seconds of virtual time between two sends
AIM_BYTES = 3 * 1024

#: Wall time by default; ``--clock process`` counts only this process's CPU time, which a
#: machine shared with other busy processes disturbs less.
CLOCKS = {
    "perf_counter": (time.perf_counter, time.perf_counter_ns),
    "process": (time.process_time, time.process_time_ns),
}
CLOCK, CLOCK_NS = CLOCKS["perf_counter"]


def handshake(now: float = 0.0) -> tuple[ClientConnection, ServerConnection]:
    """A client and a server connection after initialize / initialized."""
    client = ClientConnection(info={"name": "bench-client", "version": "1.0"},
                              request_timeout=TIMEOUT)
    server = ServerConnection(
        info={"name": "bench-server", "version": "1.0"}, capabilities={"tools": {}}
    )
    client.initialize(now=now)
    server.receive_data(client.data_to_send(), now=now)
    server_events = server.events()
    client.receive_data(server.data_to_send(), now=now)
    client_events = client.events()
    server.receive_data(client.data_to_send(), now=now)
    server_events += server.events()
    if not (
        client_events
        and isinstance(client_events[-1], Initialized)
        and server_events
        and isinstance(server_events[-1], Initialized)
    ):
        raise RuntimeError(f"handshake failed: {client_events!r} / {server_events!r}")
    return client, server


def send_all(client: ClientConnection, count: int, *, drain: bool) -> None:
    send_request, data_to_send, params = client.send_request, client.data_to_send, PARAMS
    if drain:
        for i in range(count):
            send_request("tools/call", params, now=i * STEP)
            data_to_send()
    else:
        for i in range(count):
            send_request("tools/call", params, now=i * STEP)


def time_next_deadline(client: ClientConnection, calls: int) -> float:
    """Nanoseconds per ``next_deadline()`` call."""
    next_deadline = client.next_deadline
    gc.collect()
    start = CLOCK_NS()
    for _ in range(calls):
        next_deadline()
    return (CLOCK_NS() - start) / calls


def timed_pass(count: int, deadline_calls: int) -> dict[str, float]:
    """Fresh connections: every timed figure once."""
    # Held outbox: N encoded requests stay queued until one data_to_send().
    held, _ = handshake()
    gc.collect()
    start = CLOCK()
    send_all(held, count, drain=False)
    send_held_s = CLOCK() - start
    start = CLOCK()
    outbox = held.data_to_send()
    drain_requests_s = CLOCK() - start
    assert outbox.count(b"\n") == count
    outbox_bytes = len(outbox)
    del held, outbox

    # The adapter's way: drain the outbox after every send.
    client, _server = handshake()
    gc.collect()
    start = CLOCK()
    send_all(client, count, drain=True)
    send_s = CLOCK() - start
    assert client.pending_requests == count, client.pending_requests

    one, _ = handshake()
    send_all(one, 1, drain=True)
    # Side by side, in alternating order, so that drift hits both alike.
    nd_one, nd_many = [], []
    for turn in range(4):
        if turn % 2:
            nd_many.append(time_next_deadline(client, deadline_calls))
            nd_one.append(time_next_deadline(one, deadline_calls))
        else:
            nd_one.append(time_next_deadline(one, deadline_calls))
            nd_many.append(time_next_deadline(client, deadline_calls))
    first = client.next_deadline()
    assert first == TIMEOUT, first

    expire_at = (count + 1) * STEP + TIMEOUT
    gc.collect()
    start = CLOCK()
    client.handle_timeout(expire_at)
    expire_s = CLOCK() - start

    start = CLOCK()
    timed_out = 0
    while (event := client.next_event()) is not NEED_DATA:
        timed_out += type(event) is RequestTimedOut
    events_s = CLOCK() - start
    start = CLOCK()
    cancels = client.data_to_send()
    drain_cancels_s = CLOCK() - start
    assert timed_out == count, timed_out
    assert cancels.count(b"\n") == count
    assert client.pending_requests == 0 and client.next_deadline() is None

    # Nothing left: extra calls must be cheap.
    handle_timeout, later = client.handle_timeout, expire_at + 1
    start = CLOCK_NS()
    for _ in range(deadline_calls):
        handle_timeout(later)
    again_ns = (CLOCK_NS() - start) / deadline_calls

    return {
        "send_request_us": send_s / count * 1e6,
        "send_request_held_us": send_held_s / count * 1e6,
        "drain_requests_us": drain_requests_s / count * 1e6,
        "outbox_bytes_per_request": outbox_bytes / count,
        "next_deadline_1_ns": statistics.median(nd_one),
        "next_deadline_n_ns": statistics.median(nd_many),
        "handle_timeout_total_ms": expire_s * 1e3,
        "handle_timeout_us": expire_s / count * 1e6,
        "drain_events_us": events_s / count * 1e6,
        "drain_cancels_us": drain_cancels_s / count * 1e6,
        "handle_timeout_idle_ns": again_ns,
    }


def _functions_by_line() -> dict[str, list[tuple[int, int, str]]]:
    """filename -> (first line, last line, qualified name) of every function of the loaded
    ``mcp_sansio`` modules, from their code objects: names stay right even if a source file
    is edited while the benchmark runs."""
    table: dict[str, list[tuple[int, int, str]]] = {}
    stack: list[types.CodeType] = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("mcp_sansio"):
            continue
        objects = list(vars(module).values())
        for obj in list(objects):
            if isinstance(obj, type) and obj.__module__ == name:
                objects.extend(vars(obj).values())
        for obj in objects:
            func = getattr(obj, "__func__", None) or getattr(obj, "fget", None) or obj
            code = getattr(func, "__code__", None)
            if isinstance(code, types.CodeType) and func.__module__ == name:
                stack.append(code)
    seen: set[types.CodeType] = set()
    while stack:
        code = stack.pop()
        if code in seen:
            continue
        seen.add(code)
        lines = [line for _, _, line in code.co_lines() if line is not None]
        if lines and code.co_name != "<module>":
            table.setdefault(code.co_filename, []).append(
                (min(lines), max(lines), code.co_qualname)
            )
        stack.extend(const for const in code.co_consts if isinstance(const, types.CodeType))
    return table


def _function_at(table: dict[str, list[tuple[int, int, str]]], filename: str, line: int) -> str:
    spans = [(last - first, name) for first, last, name in table.get(filename, ())
             if first <= line <= last]
    return min(spans)[1] if spans else "?"


def _site(
    stat: tracemalloc.StatisticDiff, count: int, table: dict[str, list[tuple[int, int, str]]]
) -> dict[str, Any]:
    frame = stat.traceback[0]
    filename = frame.filename
    for marker in ("mcp_sansio/", "benchmarks/", "python3.11/"):
        if marker in filename:
            filename = filename[filename.index(marker):]
            break
    return {
        "site": f"{filename}:{frame.lineno}",
        "function": _function_at(table, frame.filename, frame.lineno),
        "bytes_per_request": stat.size_diff / count,
        "blocks_per_request": stat.count_diff / count,
    }


def memory_pass(count: int, top: int) -> dict[str, Any]:
    """Python heap growth per pending request (tracemalloc)."""
    table = _functions_by_line()
    gc.collect()
    tracemalloc.start()
    try:
        # Steady state: the outbox drained after every send.
        client, _server = handshake()
        gc.collect()
        base = tracemalloc.take_snapshot()
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        send_all(client, count, drain=True)
        gc.collect()
        after, send_peak = tracemalloc.get_traced_memory()
        snapshot = tracemalloc.take_snapshot()
        assert client.pending_requests == count
        # Expiring them all queues N cancellations and N events at once.
        tracemalloc.reset_peak()
        client.handle_timeout((count + 1) * STEP + TIMEOUT)
        _, expire_peak = tracemalloc.get_traced_memory()
        client.events()
        client.data_to_send()
        del client, _server

        # Held outbox: N encoded requests queued, not drained.
        gc.collect()
        held, _ = handshake()
        gc.collect()
        held_before, _ = tracemalloc.get_traced_memory()
        send_all(held, count, drain=False)
        held_after, _ = tracemalloc.get_traced_memory()
        held.data_to_send()
        del held
    finally:
        tracemalloc.stop()
    return {
        "bytes_per_request": (after - before) / count,
        "peak_bytes_per_request": (send_peak - before) / count,
        "handle_timeout_peak_bytes_per_request": (expire_peak - after) / count,
        "held_outbox_bytes_per_request": (held_after - held_before) / count,
        "top_sites": [
            _site(stat, count, table) for stat in snapshot.compare_to(base, "lineno")[:top]
        ],
    }


ROWS = (
    ("send_request + data_to_send", "send_request_us", "us/call", "0 -> N pending"),
    ("send_request, outbox held", "send_request_held_us", "us/call", "N queued"),
    ("data_to_send (N queued)", "drain_requests_us", "us/request", "one call"),
    ("next_deadline (1 pending)", "next_deadline_1_ns", "ns/call", ""),
    ("next_deadline (N pending)", "next_deadline_n_ns", "ns/call", "O(1): same as 1"),
    ("handle_timeout (expire all)", "handle_timeout_total_ms", "ms total", "one call"),
    ("handle_timeout per request", "handle_timeout_us", "us/request", ""),
    ("next_event (N timeouts)", "drain_events_us", "us/event", "RequestTimedOut"),
    ("data_to_send (N cancels)", "drain_cancels_us", "us/request", "notifications/cancelled"),
    ("handle_timeout (nothing due)", "handle_timeout_idle_ns", "ns/call", "after expiry"),
)
MEMORY_ROWS = (
    ("heap bytes per pending request", "bytes_per_request", "steady state"),
    ("  peak while sending", "peak_bytes_per_request", ""),
    ("  peak in handle_timeout", "handle_timeout_peak_bytes_per_request", "N cancels queued"),
    ("  with N requests queued", "held_outbox_bytes_per_request", "outbox not drained"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny counts: a smoke test, not a measurement")
    parser.add_argument("--count", type=int, default=None,
                        help="pending requests (default 100000; 2000 with --quick)")
    parser.add_argument("--reps", type=int, default=None,
                        help="timed passes per backend (default 5; 1 with --quick)")
    parser.add_argument("--backend", choices=[*_json.available_backends(), "all"],
                        default="all", help="JSON backend(s) (default: all available)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="perf_counter",
                        help="time.perf_counter (default) or time.process_time")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    args = parser.parse_args(argv)
    global CLOCK, CLOCK_NS
    CLOCK, CLOCK_NS = CLOCKS[args.clock]
    count = args.count or (2_000 if args.quick else 100_000)
    reps = args.reps or (1 if args.quick else 5)
    deadline_calls = 2_000 if args.quick else 200_000
    backends = _json.available_backends() if args.backend == "all" else [args.backend]
    previous = _json.backend
    passes: dict[str, list[dict[str, float]]] = {b: [] for b in backends}
    memory: dict[str, dict[str, Any]] = {}
    try:
        for rep in range(reps):  # backends side by side, order alternating
            for backend in backends[rep % 2:] + backends[:rep % 2]:
                _json.use_backend(backend)
                passes[backend].append(timed_pass(count, deadline_calls))
        for backend in backends:
            _json.use_backend(backend)
            memory[backend] = memory_pass(count, top=6)
    finally:
        _json.use_backend(previous)
    timings = {
        b: {key: statistics.median(p[key] for p in passes[b]) for key in passes[b][0]}
        for b in backends
    }

    date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    print(f"{count} pending requests in one ClientConnection -- {date}, "
          f"{platform.python_implementation()} {platform.python_version()}; "
          f"clock {args.clock}; median of {reps} fresh connection(s) per backend")
    head = f"{'measure':<31}" + "".join(f" {b:>10}" for b in backends)
    print(f"{head}  {'unit':<11} note")
    print("-" * (len(head) + 36))
    for label, key, unit, note in ROWS:
        values = "".join(f" {timings[b][key]:>10.3f}" for b in backends)
        print(f"{label:<31}{values}  {unit:<11} {note}")
    flats = {b: timings[b]["next_deadline_n_ns"] / timings[b]["next_deadline_1_ns"]
             for b in backends}
    values = "".join(f" {flats[b]:>10.2f}" for b in backends)
    verdict = "flat (O(1))" if max(flats.values()) < 1.5 else "NOT flat"
    print(f"{'next_deadline N/1 ratio':<31}{values}  {'x':<11} {verdict}")
    for label, key, note in MEMORY_ROWS:
        values = "".join(f" {memory[b][key]:>10.0f}" for b in backends)
        print(f"{label:<31}{values}  {'bytes':<11} {note}")
    worst = max(memory[b]["bytes_per_request"] for b in backends)
    verdict = "meets" if worst <= AIM_BYTES else "misses"
    print(f"\naim: <= {AIM_BYTES} heap bytes per pending request: {worst:.0f} ({verdict} the aim)")
    for backend in backends:
        print(f"\nwhere the pending-request heap lives ({backend}, tracemalloc, steady state):")
        for site in memory[backend]["top_sites"]:
            print(f"  {site['bytes_per_request']:>8.1f} B  {site['blocks_per_request']:>5.2f}"
                  f" blocks  {site['site']} ({site['function']})")
    if args.json:
        report = {
            "benchmark": "pending",
            "date": date,
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "count": count,
            "reps": reps,
            "clock": args.clock,
            "timings": timings,
            "passes": passes,
            "memory": memory,
        }
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2)
            out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
