"""The testing kit's speed: examples (random sessions) per second, and sweeps per second.

What is measured:

* ``in-process``: the peer machine against the careful in-process server of
  ``tests/check/test_testing_kit.py`` (a :class:`~mcp_sansio.ServerConnection` on a virtual clock,
  no I/O): what the kit itself costs -- strategies, schema validation, the machine.
* ``stdio``: against ``mcp-sansio serve-example`` over stdio, one process per session (the
  kit gives every session a fresh server): what a real run costs, process start included.

For each: ``check_peer`` with ``--sessions`` examples of up to ``--steps`` steps in one
revision (2025-11-25), timed with ``time.perf_counter``; reported as examples per second
and milliseconds per example, and one ``sweep`` (every rule once, every revision) in
seconds. Numbers of a shared machine move from run to run; compare within one run.

Run: ``python benchmarks/check.py`` (``--quick`` for a smoke run, ``--json FILE`` to save).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.check.test_testing_kit's in-process server

from mcp_sansio.adapters.testing_stdio import StdioTransport  # noqa: E402

from mcp_sansio import testing as kit  # noqa: E402
from tests.check.test_testing_kit import good_server  # noqa: E402

EXAMPLE = [sys.executable, "-P", "-m", "mcp_sansio", "serve-example"]


def _stdio() -> StdioTransport:
    return StdioTransport(EXAMPLE)


def measure(factory: Callable[[], Any], sessions: int, steps: int) -> dict[str, float]:
    started = time.perf_counter()
    report = kit.check_peer(factory, revisions=["2025-11-25"], sessions=sessions, steps=steps,
                            reply_timeout=5.0, settle_time=0.05)
    elapsed = time.perf_counter() - started
    ran = sum(report.sessions.values())
    started = time.perf_counter()
    kit.sweep(factory, reply_timeout=5.0, settle_time=0.05)
    sweep = time.perf_counter() - started
    return {"examples": ran, "seconds": elapsed, "per_second": ran / elapsed,
            "ms_per_example": 1000 * elapsed / max(ran, 1), "sweep_s": sweep,
            "findings": len(report.findings)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--json", default=None, metavar="FILE")
    args = parser.parse_args()
    sessions, steps = (3, 10) if args.quick else (args.sessions, args.steps)
    results = {"in-process": measure(good_server, sessions, steps),
               "stdio": measure(_stdio, sessions, steps)}
    print(f"{'peer':12} {'examples':>9} {'ex/s':>9} {'ms/ex':>9} {'sweep s':>9}")
    for name, row in results.items():
        print(f"{name:12} {row['examples']:9.0f} {row['per_second']:9.2f} "
              f"{row['ms_per_example']:9.1f} {row['sweep_s']:9.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
