"""Where the core's ``tools/call`` round trip spends its time (see ``roundtrip.py``).

Three views, per JSON backend:

1. **Steps**: each of the eight calls of one round trip timed on its own with
   ``time.perf_counter_ns`` (the cost of an empty timing pair is subtracted), median over
   repetitions. Cheap to measure, so the shares are close to the truth.
2. **JSON seam**: ``mcp_sansio._json.dumps``/``loads`` on the two messages against the bare
   library calls (the floor), to separate the seam's own overhead from the library's (timed
   in batches with ``time.process_time_ns``, median of repetitions, seam and bare alternating).
3. **cProfile** (``--cprofile``): own time per function. A deterministic profiler charges a
   fixed cost to every call, so it inflates small, often-called functions; read it for *which*
   functions, and the step view for *how much*. ``--pyinstrument`` prints a sampled call tree
   instead, when pyinstrument is installed.

Run: ``python benchmarks/profile_roundtrip.py [--backend stdlib|orjson] [--cprofile]
[--pyinstrument] [--quick]``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from roundtrip import (  # a sibling script, not a package
    REQUEST_MESSAGE,
    RESPONSE_MESSAGE,
    TOOL_PARAMS,
    TOOL_RESULT,
    handshake,
    make_core,
)

from mcp_sansio import _json

STEPS = (
    "client.send_request",
    "client.data_to_send",
    "server.receive_data",
    "server.next_event",
    "server.send_response",
    "server.data_to_send",
    "client.receive_data",
    "client.next_event",
)


def step_breakdown(n: int, reps: int) -> dict[str, float]:
    """Median nanoseconds per step of one round trip."""
    client, server = handshake()
    clock = time.perf_counter_ns
    params, result = TOOL_PARAMS, TOOL_RESULT
    samples: dict[str, list[float]] = {name: [] for name in (*STEPS, "total")}
    for _ in range(reps):
        totals = [0] * len(STEPS)
        empty = 0
        gc.collect()
        for _ in range(n):
            t0 = clock()
            t1 = clock()
            client.send_request("tools/call", params)
            t2 = clock()
            data = client.data_to_send()
            t3 = clock()
            server.receive_data(data)
            t4 = clock()
            request = server.next_event()
            t5 = clock()
            server.send_response(request.request_id, result)  # type: ignore[union-attr]
            t6 = clock()
            data = server.data_to_send()
            t7 = clock()
            client.receive_data(data)
            t8 = clock()
            client.next_event()
            t9 = clock()
            empty += t1 - t0
            totals[0] += t2 - t1
            totals[1] += t3 - t2
            totals[2] += t4 - t3
            totals[3] += t5 - t4
            totals[4] += t6 - t5
            totals[5] += t7 - t6
            totals[6] += t8 - t7
            totals[7] += t9 - t8
        overhead = empty / n
        per_step = [max(0.0, total / n - overhead) for total in totals]
        for name, value in zip(STEPS, per_step, strict=True):
            samples[name].append(value)
        samples["total"].append(sum(per_step))
    return {name: statistics.median(values) for name, values in samples.items()}


def _pair_ns(
    seam: Callable[[], Any], bare: Callable[[], Any], n: int, reps: int
) -> tuple[float, float]:
    """Median CPU nanoseconds per call of ``seam`` and of ``bare``, timed alternately in
    batches of ``n`` (process time: steadier on a shared machine)."""
    clock = time.process_time_ns
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(reps):
        for fn, out in ((seam, samples[0]), (bare, samples[1])):
            gc.collect()
            start = clock()
            for _ in range(n):
                fn()
            out.append((clock() - start) / n)
    return statistics.median(samples[0]), statistics.median(samples[1])


def seam_breakdown(backend: str, n: int, reps: int) -> list[tuple[str, float, float]]:
    """(operation, ns through the seam, ns with the bare library) for both messages."""
    if backend == "orjson":
        import orjson

        bare_dumps: Callable[[Any], Any] = orjson.dumps
        bare_loads: Callable[[Any], Any] = orjson.loads
    else:
        bare_dumps, bare_loads = json.dumps, json.loads
    rows = []
    for label, message in (("request", REQUEST_MESSAGE), ("response", RESPONSE_MESSAGE)):
        encoded = _json.dumps(message)
        text = bare_dumps(message)
        rows.append((
            f"dumps {label}",
            *_pair_ns(lambda m=message: _json.dumps(m), lambda m=message: bare_dumps(m),
                      n, reps),
        ))
        rows.append((
            f"loads {label}",
            *_pair_ns(lambda e=encoded: _json.loads(e, 128), lambda t=text: bare_loads(t),
                      n, reps),
        ))
    return rows


def run_cprofile(backend: str, n: int, top: int) -> None:
    contestant = make_core(backend)
    contestant.prepare()
    contestant.run(min(n, 2000))
    profiler = cProfile.Profile()
    profiler.enable()
    contestant.run(n)
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = sum(entry[2] for entry in stats.stats.values())  # type: ignore[attr-defined]
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
    print(f"\ncProfile, {backend}: own time per function, {n} round trips "
          "(inflated by per-call profiling cost)")
    print(f"{'own %':>6} {'cum %':>6} {'calls/rt':>8}  function")
    for (filename, line, func), (_cc, ncalls, tottime, cumtime, _callers) in rows[:top]:
        where = f"{_short(filename)}:{line}({func})"
        print(f"{100 * tottime / total:>6.1f} {100 * cumtime / total:>6.1f} "
              f"{ncalls / n:>8.1f}  {where}")


def _short(filename: str) -> str:
    for marker in ("mcp_sansio/", "benchmarks/", "python3.11/"):
        if marker in filename:
            return filename[filename.index(marker):]
    return filename


def run_pyinstrument(backend: str, n: int) -> None:
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("\npyinstrument is not installed (pip install pyinstrument)")
        return
    contestant = make_core(backend)
    contestant.prepare()
    contestant.run(min(n, 2000))
    profiler = Profiler(interval=0.0001)
    profiler.start()
    contestant.run(n)
    profiler.stop()
    print(f"\npyinstrument, {backend}, {n} round trips")
    print(profiler.output_text(unicode=False, color=False, short_mode=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["stdlib", "orjson", "all"], default="all")
    parser.add_argument("--quick", action="store_true", help="tiny counts (smoke test)")
    parser.add_argument("--cprofile", action="store_true", help="also print a cProfile table")
    parser.add_argument("--pyinstrument", action="store_true",
                        help="also print a pyinstrument call tree")
    parser.add_argument("--top", type=int, default=25, help="rows of the cProfile table")
    args = parser.parse_args(argv)
    n, reps = (200, 3) if args.quick else (20_000, 7)
    backends = _json.available_backends() if args.backend == "all" else [args.backend]
    previous = _json.backend
    for backend in backends:
        _json.use_backend(backend)
        steps = step_breakdown(n, reps)
        total = steps["total"]
        print(f"core round trip by step, JSON backend {backend}: median of {reps} x {n}")
        print(f"{'step':<22} {'us':>8} {'share':>7}")
        for name in STEPS:
            print(f"{name:<22} {steps[name] / 1000:>8.2f} {100 * steps[name] / total:>6.1f}%")
        print(f"{'total':<22} {total / 1000:>8.2f}")
        print(f"\nJSON seam ({backend}): mcp_sansio._json vs the bare library, ns per call")
        print(f"{'operation':<16} {'seam':>8} {'bare':>8} {'overhead':>9}")
        seam_total = bare_total = 0.0
        for name, seam, bare in seam_breakdown(backend, n * 5, reps):
            seam_total += seam
            bare_total += bare
            print(f"{name:<16} {seam:>8.0f} {bare:>8.0f} {seam - bare:>+9.0f}")
        print(f"{'all four':<16} {seam_total:>8.0f} {bare_total:>8.0f} "
              f"{seam_total - bare_total:>+9.0f}  ({100 * seam_total / total:.0f}% of the "
              "round trip is the JSON seam)")
        if args.cprofile:
            run_cprofile(backend, n, args.top)
        if args.pyinstrument:
            run_pyinstrument(backend, n)
        print()
    _json.use_backend(previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())
