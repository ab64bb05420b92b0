"""Load A/B: one server row of ``load.py`` from two trees, paired and interleaved, with floors.

Each trial starts the row's server (``--row``, default ``ours-asyncio-httptools``) from tree A
or tree B (``PYTHONPATH``, and ``-P`` so that the checkout is not first on ``sys.path``), pinned
to the server core as ``load.py`` does, runs one timed window per era with the same load
generator, and stops it; trials alternate A B, B A, ... The floors named by ``--floors``
(``load.py``'s ``raw``, ``h11``, ``httptools``, ``httptools-json``) run once per pair, in the
same rotation, so that they see the same machine. Reported per era: the medians of requests/s,
p50/p99 and server CPU microseconds per request (the steady measure on a shared machine), and
the median of the per-pair ratios B/A of CPU per request.

Make a tree from a revision as ``stdio_ab.py`` describes (the core and the adapters, laid out
as installed); ``installed`` means the package as installed here.

Run: ``python benchmarks/load_ab.py /tmp/rev_a /tmp/rev_b [--pairs 5] [--seconds 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load  # (this directory's load.py)


def run_row(row: load.Row, tree: str | None, args: argparse.Namespace) -> dict[str, Any]:
    """One server from ``tree`` (None: as installed), one window per era."""
    command = row.command()
    env = None
    if tree is not None:
        command = [command[0], "-P", *command[1:]]
        env = dict(os.environ, PYTHONPATH=tree)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, text=True, cwd=load.ROOT, env=env)
    try:
        os.sched_setaffinity(proc.pid, load.cores()[0])
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line:
            raise RuntimeError(f"{command} did not start")
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        return {era: load.one_load(proc.pid, port, era, args, row) for era in args.era_list}
    finally:
        load.stop(proc)  # type: ignore[arg-type]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--row", default="ours-asyncio-httptools")
    parser.add_argument("--floors", default="raw,h11,httptools,httptools-json")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=load.CLIENTS)
    parser.add_argument("--eras", default=",".join(load.ERAS))
    parser.add_argument("--quick", action="store_true", help="a smoke run (not a measurement)")
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.seconds, args.clients = 1, 0.3, 2
    args.procs = 1
    args.era_list = [e for e in args.eras.split(",") if e]
    known = {r.name: r for r in load.ROWS}
    row = known[args.row]
    floors = [known[name] for name in args.floors.split(",") if name]
    os.sched_setaffinity(0, load.cores()[1])
    trees = {"A": None if args.a == "installed" else args.a,
             "B": None if args.b == "installed" else args.b}
    samples: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    floor_samples: dict[str, list[dict[str, Any]]] = {f.name: [] for f in floors}
    for pair in range(args.pairs):
        order = ("A", "B") if pair % 2 == 0 else ("B", "A")
        for side in order:
            samples[side].append(run_row(row, trees[side], args))
        # One floor per pair, in turn (every one in a smoke run).
        for floor in floors if args.quick else floors[pair % len(floors):][:1]:
            floor_samples[floor.name].append(run_row(floor, None, args))
    print(f"# load A/B: {row.name}, {args.clients} clients, {args.seconds:g} s windows, "
          f"{args.pairs} pairs (A={args.a}, B={args.b}); server cpu "
          f"{sorted(load.cores()[0])}")
    print(f"{'row':<28}{'era':<11}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'cpu us/req':>12}"
          f"{'n':>4}")

    def show(name: str, runs: list[dict[str, Any]]) -> None:
        for era in args.era_list:
            if not runs:
                continue
            med = {k: statistics.median(r[era][k] for r in runs)
                   for k in ("rps", "p50_ms", "p99_ms", "cpu_us")}
            print(f"{name:<28}{era:<11}{med['rps']:>9.0f}{med['p50_ms']:>9.2f}"
                  f"{med['p99_ms']:>9.2f}{med['cpu_us']:>12.1f}{len(runs):>4}")

    show(f"A {row.name}", samples["A"])
    show(f"B {row.name}", samples["B"])
    for name, runs in floor_samples.items():
        show(f"floor {name}", runs)
    pairs = list(zip(samples["A"], samples["B"], strict=True))
    for era in args.era_list:
        ratios = [b[era]["cpu_us"] / a[era]["cpu_us"] for a, b in pairs]
        rps = [b[era]["rps"] / a[era]["rps"] for a, b in pairs]
        print(f"B/A {era}: cpu us/req {statistics.median(ratios):.3f} "
              f"(pairs {', '.join(f'{r:.2f}' for r in ratios)}); req/s "
              f"{statistics.median(rps):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
