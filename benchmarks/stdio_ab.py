"""stdio A/B: two revisions of mcp-sansio side by side, CPU time per call on both sides.

Each trial is a fresh process that imports mcp-sansio from one tree (``PYTHONPATH``), opens
our client on one runtime against ``serve-example`` on the same runtime (which inherits the
tree), warms up, then times ``call_tool("echo")`` sequentially and 100 in flight. Per shape
it reports the wall time per call, this process's CPU time per call (``time.process_time``)
and the server's (``/proc/<pid>/task/*/schedstat``, Linux). Trials of tree A and tree B
alternate (A B, B A, ...); the table gives the medians and the **median of per-pair ratios**
B/A. CPU time is far steadier than wall time on a shared machine: a sequential call is a
ping-pong whose wall time is about the sum of both sides' CPU, and other jobs stretch the
wall time of a trial without changing the CPU it spends.

Make a tree from a revision (the core and the adapters, laid out as installed)::

    mkdir -p /tmp/rev_a/mcp_sansio
    git archive <rev> mcp_sansio | tar -x -C /tmp/rev_a
    git archive <rev> adapters | tar -x -C /tmp/rev_a/mcp_sansio

Run (from outside the repository, so that the checkout is not first on ``sys.path``)::

    cd /tmp && python /path/to/benchmarks/stdio_ab.py /tmp/rev_a /tmp/rev_b

``installed`` as a tree means the package as installed (no ``PYTHONPATH``).

``--cold`` compares cold starts instead: ``serve-example`` spawned from each tree in turn
(with bytecode caches written), wall milliseconds from spawn to its answer to ``initialize``
and the child's CPU milliseconds to its exit right after (``os.wait4``: user + system; the
steadier measure on a shared machine).
"""

from __future__ import annotations

import argparse
import gc
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

IN_FLIGHT = 100
RUNTIMES = ("asyncio", "trio", "threading")


# -- one trial (child mode) ----------------------------------------------------------------------


def _server_ns(pid: int) -> int:
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path, encoding="ascii") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def trial(runtime: str, seq_n: int, rounds: int) -> dict[str, Any]:
    """Time both shapes on one fresh connection; microseconds per call."""
    command = [sys.executable, "-m", "mcp_sansio", "serve-example", "--runtime", runtime]
    args = {"text": "hello"}
    out: dict[str, Any] = {}

    def start(pid: int) -> tuple[float, float, int, int]:
        gc.collect()
        return time.perf_counter(), time.process_time(), _server_ns(pid), pid

    def record(name: str, calls: int, mark: tuple[float, float, int, int]) -> None:
        wall, cpu, server, pid = mark
        out[name] = {"wall": (time.perf_counter() - wall) / calls * 1e6,
                     "client": (time.process_time() - cpu) / calls * 1e6,
                     "server": (_server_ns(pid) - server) / calls / 1e3}

    if runtime == "asyncio":
        import asyncio

        from mcp_sansio.adapters.asyncio import connect_stdio

        async def main() -> None:
            async with connect_stdio(command) as client:
                assert client._process is not None
                pid = client._process.get_pid()
                for _ in range(200):
                    await client.call_tool("echo", args)
                mark = start(pid)
                for _ in range(seq_n):
                    await client.call_tool("echo", args)
                record("seq", seq_n, mark)
                mark = start(pid)
                for _ in range(rounds):
                    await asyncio.gather(*(client.call_tool("echo", args)
                                           for _ in range(IN_FLIGHT)))
                record("par", rounds * IN_FLIGHT, mark)

        asyncio.run(main())
    elif runtime == "trio":
        import trio
        from mcp_sansio.adapters.trio import connect_stdio as trio_connect

        async def trio_main() -> None:
            async with trio_connect(command) as client:
                assert client._process is not None
                pid = client._process.pid
                for _ in range(200):
                    await client.call_tool("echo", args)
                mark = start(pid)
                for _ in range(seq_n):
                    await client.call_tool("echo", args)
                record("seq", seq_n, mark)
                mark = start(pid)
                for _ in range(rounds):
                    async with trio.open_nursery() as nursery:
                        for _ in range(IN_FLIGHT):
                            nursery.start_soon(client.call_tool, "echo", args)
                record("par", rounds * IN_FLIGHT, mark)

        trio.run(trio_main)
    else:
        from mcp_sansio.adapters.threading import connect_stdio as thread_connect

        from mcp_sansio.app.errors import outcome

        params = {"name": "echo", "arguments": args}
        with thread_connect(command) as client:
            assert client._process is not None
            pid = client._process.pid
            for _ in range(200):
                client.call_tool("echo", args)
            mark = start(pid)
            for _ in range(seq_n):
                client.call_tool("echo", args)
            record("seq", seq_n, mark)
            mark = start(pid)
            for _ in range(rounds):
                calls = [client._start_call("tools/call", params) for _ in range(IN_FLIGHT)]
                for call in calls:
                    client._wait_call(call, None)
                    outcome(call, "")
            record("par", rounds * IN_FLIGHT, mark)
    return out


# -- the comparison (parent mode) ----------------------------------------------------------------


INITIALIZE = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"}}}) + "\n").encode()


BUILD_PROBE = """
try:
    from mcp_sansio._compiled import compiled_modules
except ImportError:
    print("pure")
else:
    loaded = compiled_modules().values()
    print("compiled" if all(loaded) else "partly compiled" if any(loaded) else "pure")
"""


def build_of(tree: str) -> str:
    """Which build of the core ``tree`` holds: compiled (docs/compiled.rst) or pure."""
    env = dict(os.environ)
    if tree != "installed":
        env["PYTHONPATH"] = tree
    proc = subprocess.run([sys.executable, "-c", BUILD_PROBE], env=env, capture_output=True,
                          text=True, check=False)
    return proc.stdout.strip() or "unknown"


def cold_trial(tree: str, runtime: str) -> dict[str, float]:
    """One cold start from ``tree``: wall ms to the answer, the child's CPU ms in all."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if tree != "installed":
        env["PYTHONPATH"] = tree
    command = [sys.executable, "-m", "mcp_sansio", "serve-example", "--runtime", runtime]
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin and proc.stdout
    proc.stdin.write(INITIALIZE)
    proc.stdin.flush()
    line = proc.stdout.readline()
    wall = (time.perf_counter() - start) * 1000
    assert b'"result"' in line, line
    proc.stdin.close()
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped above
    proc.stdout.close()
    return {"wall": wall, "cpu": (usage.ru_utime + usage.ru_stime) * 1000}


def run_cold(a: str, b: str, runtimes: list[str], reps: int) -> None:
    print(f"# A = {a} ({build_of(a)} build)\n# B = {b} ({build_of(b)} build)\n"
          f"# cold start of serve-example, {reps} each, alternating; "
          "ms, median A -> median B (median of paired ratios B/A)")
    for runtime in runtimes:
        cold_trial(a, runtime)  # untimed: bytecode caches, page cache
        cold_trial(b, runtime)
        results: dict[str, list[dict[str, float]]] = {"a": [], "b": []}
        for i in range(reps):
            for side in ("a", "b") if i % 2 == 0 else ("b", "a"):
                results[side].append(cold_trial(a if side == "a" else b, runtime))
        line = f"{runtime:<10}{'cold start':<14}"
        for measure in ("wall", "cpu"):
            xs = [r[measure] for r in results["a"]]
            ys = [r[measure] for r in results["b"]]
            ratio = statistics.median(y / x for x, y in zip(xs, ys, strict=True))
            line += (f"  {measure} {statistics.median(xs):7.1f} -> "
                     f"{statistics.median(ys):7.1f} ({ratio:.2f})")
        print(line, flush=True)


def run_trial(tree: str, runtime: str, seq_n: int, rounds: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if tree != "installed":
        env["PYTHONPATH"] = tree
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--trial", runtime, str(seq_n), str(rounds)],
        env=env, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError(f"trial failed ({tree}, {runtime}):\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    if sys.argv[1:2] == ["--trial"]:
        runtime, seq_n, rounds = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        print(json.dumps(trial(runtime, seq_n, rounds)))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", help="tree A (a directory holding mcp_sansio/, or 'installed')")
    parser.add_argument("b", help="tree B")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES))
    parser.add_argument("--reps", type=int, default=6, help="trials of each tree per runtime")
    parser.add_argument("--seq", type=int, default=1000, help="sequential calls per trial")
    parser.add_argument("--rounds", type=int, default=30, help="rounds of 100 in flight")
    parser.add_argument("--quick", action="store_true", help="a smoke run (tiny counts)")
    parser.add_argument("--cold", action="store_true",
                        help="compare cold starts (spawn -> answer to initialize) instead")
    args = parser.parse_args()
    if args.cold:
        run_cold(args.a, args.b, [r for r in args.runtimes.split(",") if r],
                 2 if args.quick else args.reps)
        return 0
    reps, seq_n, rounds = (1, 20, 1) if args.quick else (args.reps, args.seq, args.rounds)
    print(f"# A = {args.a} ({build_of(args.a)} build)\n# B = {args.b} "
          f"({build_of(args.b)} build)\n# {reps} trials each, alternating; sequential "
          f"{seq_n} calls, in flight {rounds} x {IN_FLIGHT}; us per call, median A -> "
          "median B (median of paired ratios B/A)")
    for runtime in [r for r in args.runtimes.split(",") if r]:
        if not args.quick:  # one untimed trial each: bytecode caches, page cache
            run_trial(args.a, runtime, 50, 1)
            run_trial(args.b, runtime, 50, 1)
        results: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
        for i in range(reps):
            for side in ("a", "b") if i % 2 == 0 else ("b", "a"):
                tree = args.a if side == "a" else args.b
                results[side].append(run_trial(tree, runtime, seq_n, rounds))
        for shape, label in (("seq", "sequential"), ("par", "100 in flight")):
            line = f"{runtime:<10}{label:<14}"
            for measure in ("wall", "client", "server"):
                a = [r[shape][measure] for r in results["a"]]
                b = [r[shape][measure] for r in results["b"]]
                ratio = statistics.median(y / x for x, y in zip(a, b, strict=True))
                line += (f"  {measure} {statistics.median(a):7.1f} -> "
                         f"{statistics.median(b):7.1f} ({ratio:.2f})")
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
