"""stdio end to end: the adapters against a raw-pipe floor and the official SDK.

What is measured, each between this process and a child process over a pair of pipes:

* ``floor``: a child that reads a line, decodes it (``json.loads``), builds the
  ``tools/call`` result, encodes it (``json.dumps``) and writes it; this side encodes each
  request and decodes each answer the same way. Nothing else: the cost of the pipes, two
  processes and the JSON, which no MCP implementation can avoid.
* ``ours/<runtime>``: our client on asyncio, trio or threads, against ``mcp-sansio
  serve-example --runtime <runtime>``: ``call_tool("echo", {"text": "hello"})`` (with its
  default 60 s idle timeout, so a timer per request, as in real use).
* ``sdk/legacy``: the official Python SDK's ``Client`` over stdio against its own server
  (``tests/peers/sdk_stdio_server.py``, the same ``echo``), in the handshake era.

Two shapes: **sequential** (one call at a time: the round-trip latency) and **100 in flight**
(100 calls started together, then all awaited: per-call cost under load; on threads the
calls are started with ``start_call`` and awaited one by one, so no thread per call).

Also measured: **cold start** (spawn the server, send ``initialize``, read the answer), and
the **Python heap per pending request** (``tracemalloc``) in the asyncio client: with the
call bookkeeping only, and with an awaiting task per call.

Method: each contestant runs its repetitions in one block (its connection stays open); a
repetition times a batch with ``time.perf_counter`` after a warm-up. Reported: the median over
repetitions of microseconds per call, the minimum, and the ratio of medians to the floor of
the same shape. The machine is shared and noisy: compare ratios, not absolute numbers.

Run: ``python benchmarks/stdio.py`` (``--quick`` for a smoke run, ``--json FILE`` to save).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "tests" / "peers"
RUNTIMES = ("asyncio", "trio", "threading")
IN_FLIGHT = 100

FLOOR_CHILD = r"""
import json, sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    request = json.loads(line)
    text = request["params"]["arguments"]["text"]
    response = {"jsonrpc": "2.0", "id": request["id"],
                "result": {"content": [{"type": "text", "text": text}]}}
    out.write(json.dumps(response).encode() + b"\n")
    out.flush()
"""

INITIALIZE = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"}}}) + "\n").encode()


def example(runtime: str) -> list[str]:
    return [sys.executable, "-m", "mcp_sansio", "serve-example", "--runtime", runtime]


class Result:
    def __init__(self, name: str, shape: str) -> None:
        self.name = name
        self.shape = shape
        self.samples: list[float] = []  # microseconds per call

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


def timed(batch: Callable[[], int]) -> float:
    gc.collect()
    start = time.perf_counter()
    calls = batch()
    return (time.perf_counter() - start) / calls * 1e6


# -- the floor ---------------------------------------------------------------------------------


def bench_floor(reps: int, seq_n: int, rounds: int) -> tuple[Result, Result]:
    proc = subprocess.Popen([sys.executable, "-c", FLOOR_CHILD], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin and proc.stdout
    fd = proc.stdin.fileno()
    reader = proc.stdout
    next_id = [0]

    def request() -> bytes:
        next_id[0] += 1
        return (json.dumps({"jsonrpc": "2.0", "id": next_id[0], "method": "tools/call",
                            "params": {"name": "echo", "arguments": {"text": "hello"}}})
                + "\n").encode()

    def sequential() -> int:
        for _ in range(seq_n):
            os.write(fd, request())
            json.loads(reader.readline())
        return seq_n

    def in_flight() -> int:
        for _ in range(rounds):
            os.write(fd, b"".join(request() for _ in range(IN_FLIGHT)))
            for _ in range(IN_FLIGHT):
                json.loads(reader.readline())
        return rounds * IN_FLIGHT

    seq, par = Result("floor", "sequential"), Result("floor", "100 in flight")
    sequential()
    for _ in range(reps):
        seq.samples.append(timed(sequential))
        par.samples.append(timed(in_flight))
    proc.stdin.close()
    proc.wait()
    return seq, par


# -- ours --------------------------------------------------------------------------------------


def bench_ours(runtime: str, reps: int, seq_n: int, rounds: int) -> tuple[Result, Result]:
    seq, par = Result(f"ours/{runtime}", "sequential"), Result(f"ours/{runtime}",
                                                               "100 in flight")
    args = {"text": "hello"}
    if runtime == "asyncio":
        from mcp_sansio.adapters.asyncio import connect_stdio

        async def main() -> None:
            async with connect_stdio(example("asyncio")) as client:
                async def sequential() -> int:
                    for _ in range(seq_n):
                        await client.call_tool("echo", args)
                    return seq_n

                async def in_flight() -> int:
                    for _ in range(rounds):
                        await asyncio.gather(*(client.call_tool("echo", args)
                                               for _ in range(IN_FLIGHT)))
                    return rounds * IN_FLIGHT

                await sequential()
                for _ in range(reps):
                    for result, batch in ((seq, sequential), (par, in_flight)):
                        gc.collect()
                        start = time.perf_counter()
                        calls = await batch()
                        result.samples.append((time.perf_counter() - start) / calls * 1e6)

        asyncio.run(main())
    elif runtime == "trio":
        import trio
        from mcp_sansio.adapters.trio import connect_stdio as trio_connect

        async def trio_main() -> None:
            async with trio_connect(example("trio")) as client:
                async def sequential() -> int:
                    for _ in range(seq_n):
                        await client.call_tool("echo", args)
                    return seq_n

                async def in_flight() -> int:
                    for _ in range(rounds):
                        async with trio.open_nursery() as nursery:
                            for _ in range(IN_FLIGHT):
                                nursery.start_soon(client.call_tool, "echo", args)
                    return rounds * IN_FLIGHT

                await sequential()
                for _ in range(reps):
                    for result, batch in ((seq, sequential), (par, in_flight)):
                        gc.collect()
                        start = time.perf_counter()
                        calls = await batch()
                        result.samples.append((time.perf_counter() - start) / calls * 1e6)

        trio.run(trio_main)
    else:
        from mcp_sansio.adapters._session import outcome
        from mcp_sansio.adapters.threading import connect_stdio as thread_connect

        params = {"name": "echo", "arguments": args}
        with thread_connect(example("threading")) as client:
            def sequential() -> int:
                for _ in range(seq_n):
                    client.call_tool("echo", args)
                return seq_n

            def in_flight() -> int:
                for _ in range(rounds):
                    calls = [client.start_call("tools/call", params) for _ in range(IN_FLIGHT)]
                    for call in calls:
                        client._wait_call(call, None)
                        outcome(call, "")
                return rounds * IN_FLIGHT

            sequential()
            for _ in range(reps):
                seq.samples.append(timed(sequential))
                par.samples.append(timed(in_flight))
    return seq, par


# -- the official SDK --------------------------------------------------------------------------


def bench_sdk(reps: int, seq_n: int, rounds: int) -> tuple[Result, Result] | None:
    try:
        import anyio
        from mcp.client.client import Client
        from mcp.client.stdio import StdioServerParameters
    except ImportError:
        return None
    seq, par = Result("sdk/legacy", "sequential"), Result("sdk/legacy", "100 in flight")
    params = StdioServerParameters(command=sys.executable,
                                   args=[str(PEERS / "sdk_stdio_server.py")])
    args = {"text": "hello"}

    async def main() -> None:
        async with Client(params, mode="legacy") as client:
            async def sequential() -> int:
                for _ in range(seq_n):
                    await client.call_tool("echo", args)
                return seq_n

            async def in_flight() -> int:
                for _ in range(rounds):
                    async with anyio.create_task_group() as group:
                        for _ in range(IN_FLIGHT):
                            group.start_soon(client.call_tool, "echo", args)
                return rounds * IN_FLIGHT

            await sequential()
            for _ in range(reps):
                for result, batch in ((seq, sequential), (par, in_flight)):
                    gc.collect()
                    start = time.perf_counter()
                    calls = await batch()
                    result.samples.append((time.perf_counter() - start) / calls * 1e6)

    anyio.run(main)
    return seq, par


# -- cold start and heap -----------------------------------------------------------------------


def cold_start(command: list[str], runs: int) -> float:
    """Median milliseconds from spawn to the answer to ``initialize``."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        assert proc.stdin and proc.stdout
        proc.stdin.write(INITIALIZE)
        proc.stdin.flush()
        line = proc.stdout.readline()
        samples.append((time.perf_counter() - start) * 1000)
        assert b'"result"' in line, line
        proc.stdin.close()
        proc.wait()
    return statistics.median(samples)


def floor_answer_child() -> list[str]:
    """The floor for cold start: a Python child that answers one initialize line."""
    code = ("import sys, json\nline = sys.stdin.buffer.readline()\n"
            "req = json.loads(line)\nsys.stdout.write(json.dumps({'jsonrpc': '2.0', "
            "'id': req['id'], 'result': {}}) + '\\n')\nsys.stdout.flush()\nsys.stdin.read()\n")
    return [sys.executable, "-c", code]


def heap_per_pending(n: int) -> dict[str, float]:
    """Bytes of Python heap per pending request in the asyncio client, against a server that
    never answers: bookkeeping only (``start_call``), and with an awaiting task per call."""
    from mcp_sansio.adapters.asyncio import connect_stdio

    out: dict[str, float] = {}

    async def main() -> None:
        async with connect_stdio([sys.executable, str(PEERS / "silent_server.py")],
                                 shutdown_timeout=0.5) as client:
            params = {"name": "echo", "arguments": {"text": "hello"}}
            for label, with_task in (("call + core bookkeeping", False),
                                     ("call + core + awaiting task", True)):
                await asyncio.sleep(0.05)
                gc.collect()
                tracemalloc.start()
                before = tracemalloc.take_snapshot()
                keep: list[Any] = []
                for _ in range(n):
                    if with_task:
                        keep.append(asyncio.ensure_future(client.call_tool("echo",
                                                                           params["arguments"])))
                    else:
                        keep.append(client.start_call("tools/call", params))
                for _ in range(20):
                    await asyncio.sleep(0.01)  # let the requests reach the pipe
                gc.collect()
                after = tracemalloc.take_snapshot()
                tracemalloc.stop()
                grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
                out[label] = grown / n
                if with_task:
                    for task in keep:
                        task.cancel()
                    await asyncio.gather(*keep, return_exceptions=True)
                else:
                    for call in keep:
                        client.cancel_call(call)
                await asyncio.sleep(0.05)

    asyncio.run(main())
    return out


# -- report ------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per contestant")
    parser.add_argument("--no-sdk", action="store_true", help="leave the official SDK out")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES),
                        help="comma-separated runtimes (default: all available)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    reps = args.reps or (2 if args.quick else 7)
    seq_n = 50 if args.quick else 1000
    rounds = 2 if args.quick else 20
    runtimes = [r for r in args.runtimes.split(",") if r]
    if "trio" in runtimes and importlib.util.find_spec("trio") is None:
        runtimes.remove("trio")

    results: list[tuple[Result, Result]] = [bench_floor(reps, seq_n, rounds)]
    for runtime in runtimes:
        results.append(bench_ours(runtime, reps, seq_n, rounds))
    sdk = None if args.no_sdk else bench_sdk(reps, seq_n, rounds)
    if sdk is not None:
        results.append(sdk)
    floor_seq, floor_par = results[0]

    print(f"# stdio round trip ({platform.python_implementation()} "
          f"{platform.python_version()}, {os.cpu_count()} cpus; {reps} reps; sequential "
          f"{seq_n} calls, in flight {rounds} x {IN_FLIGHT})")
    print(f"{'contestant':<18}{'shape':<15}{'us/call':>10}{'min':>10}{'x floor':>10}")
    report: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).isoformat(),
                              "python": platform.python_version(), "results": []}
    for seq, par in results:
        for result, floor in ((seq, floor_seq), (par, floor_par)):
            ratio = result.median / floor.median
            print(f"{result.name:<18}{result.shape:<15}{result.median:>10.1f}"
                  f"{min(result.samples):>10.1f}{ratio:>10.2f}")
            report["results"].append({"name": result.name, "shape": result.shape,
                                      "median_us": result.median,
                                      "min_us": min(result.samples), "x_floor": ratio})

    runs = 3 if args.quick else 9
    print(f"\n# cold start: spawn -> answer to initialize (median of {runs}, ms)")
    starts = {"floor (python answers one line)": cold_start(floor_answer_child(), runs)}
    for runtime in runtimes:
        starts[f"serve-example/{runtime}"] = cold_start(example(runtime), runs)
    if sdk is not None:
        starts["sdk server"] = cold_start([sys.executable, str(PEERS / "sdk_stdio_server.py")],
                                          runs)
    for name, ms in starts.items():
        print(f"{name:<34}{ms:>8.1f}")
    report["cold_start_ms"] = starts

    n = 1000 if args.quick else 10_000
    heap = heap_per_pending(n)
    print(f"\n# Python heap per pending request (asyncio client, {n} pending, bytes)")
    for label, size in heap.items():
        print(f"{label:<34}{size:>8.0f}")
    report["heap_bytes_per_pending"] = heap

    by = {(r.name, r.shape): r for pair in results for r in pair}
    print()
    for runtime in runtimes:
        s = by[(f"ours/{runtime}", "sequential")].median / floor_seq.median
        p = by[(f"ours/{runtime}", "100 in flight")].median / floor_par.median
        print(f"aim ours/{runtime}: sequential <= 1.3x floor: {s:.2f}x; "
              f"100 in flight <= 3x floor: {p:.2f}x")
    if "asyncio" in runtimes:
        print(f"aim cold start <= 100 ms: {starts['serve-example/asyncio']:.1f} ms (asyncio)")
    print(f"aim heap <= 3072 bytes per pending request: "
          f"{heap['call + core bookkeeping']:.0f} (bookkeeping), "
          f"{heap['call + core + awaiting task']:.0f} (with its task)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
