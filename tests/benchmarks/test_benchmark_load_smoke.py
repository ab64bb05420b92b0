"""Smoke test for ``benchmarks/load.py``: a tiny run (2 clients, a fraction of a second, one
repetition) exits 0 and prints every requested row in both eras with numbers and no errors,
the idle-session memory figure for each MCP row, and writes the same rows to its JSON file.
No timing is asserted (the machine is shared and noisy)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

NUMBER = r"-?\d+(?:\.\d+)?"
ERAS = ("handshake", "stateless")


def test_load_benchmark_tiny(tmp_path: Path) -> None:
    rows = ["raw", "h11", "ours-asyncio", "ours-threading", "ours-asyncio-httptools"]
    if importlib.util.find_spec("trio") is not None:
        rows.append("ours-trio")
    # mcp, uvicorn, httptools, anyio and sniffio are test dependencies
    rows += ["ours-uvicorn-defaults", "sdk", "sdk-mcpserver"]
    out_file = tmp_path / "load.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "load.py"), "--seconds", "0.3",
         "--repeat", "1", "--clients", "2", "--sessions", "20", "--rows", ",".join(rows),
         "--json", str(out_file)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    out = proc.stdout
    for row in rows:
        for era in ERAS:
            # req/s, p50, p99, cpu/req, server cpu, generator cpu, rss, then 0 errors
            assert re.search(rf"^{re.escape(row)}\s+{era}(\s+{NUMBER}){{7}}\s+0$", out,
                             re.MULTILINE), f"no row {row} {era} in:\n{out}"
    for row in rows[2:]:
        assert re.search(rf"^{re.escape(row)}\s+{NUMBER}$", out, re.MULTILINE), (
            f"no memory figure for {row} in:\n{out}")
    for era in ERAS:  # the aims, stated: against the SDK, and on the same engine
        assert re.search(rf"^aim {era}: best ours \S+ {NUMBER} req/s; least cpu \S+ {NUMBER} "
                         rf"us/req \(aim <= 40\); x sdk {NUMBER} by cpu {NUMBER} "
                         rf"\(aim >= 10\)", out, re.MULTILINE), out
        assert re.search(rf"^aim {era} same engine: ours-uvicorn-defaults x sdk {NUMBER} by "
                         rf"cpu {NUMBER} \(aim >= 5\)$", out, re.MULTILINE), out
    for era in ERAS:  # the wires side by side
        assert re.search(rf"^wire {era} ours-asyncio: httptools/h11 req/s {NUMBER}x, cpu "
                         rf"us/req {NUMBER} -> {NUMBER}$", out, re.MULTILINE), out
    report = json.loads(out_file.read_text(encoding="utf-8"))
    assert {(r["row"], r["era"]) for r in report["rows"]} == {
        (row, era) for row in rows for era in ERAS}
    assert all(r["rps"] > 0 and r["p99_ms"] >= r["p50_ms"] > 0 and r["errors"] == 0
               for r in report["rows"])
    assert {m["row"] for m in report["memory"]} == set(rows[2:])


def test_load_benchmark_quick_is_tiny() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "load.py"), "--quick", "--rows", "h11",
         "--eras", "stateless"],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    assert "# load: 2 keep-alive clients, tools/call echo, 0.3 s x 1" in proc.stdout
    assert re.search(rf"^h11\s+stateless(\s+{NUMBER}){{7}}\s+0$", proc.stdout, re.MULTILINE)
    assert "handshake" not in proc.stdout


def test_load_benchmark_refuses_unknown_row() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "load.py"), "--rows", "raw,nosuch"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert proc.returncode == 2
    assert "unknown rows: nosuch" in proc.stderr


def test_load_benchmark_asgi_row_with_two_workers(tmp_path: Path) -> None:
    """One ASGI row, the one with most moving parts: uvicorn with 2 workers (a process tree
    pinned and summed, httptools checked in every worker, the handshake era sessionless)."""
    out_file = tmp_path / "load.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "load.py"), "--seconds", "0.3",
         "--repeat", "1", "--clients", "2", "--sessions", "20", "--rows", "ours-uvicorn-2w",
         "--json", str(out_file)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    out = proc.stdout
    # The handshake era is labelled sessionless (several workers, no store), and explained.
    assert re.search(rf"^ours-uvicorn-2w\s+handshake\*(\s+{NUMBER}){{7}}\s+0$", out,
                     re.MULTILINE), out
    assert re.search(rf"^ours-uvicorn-2w\s+stateless(\s+{NUMBER}){{7}}\s+0$", out,
                     re.MULTILINE), out
    assert "* handshake era served sessionless" in out
    assert re.search(r"^# ours-uvicorn-2w: \d+ processes; connections held per process",
                     out, re.MULTILINE), out
    report = json.loads(out_file.read_text(encoding="utf-8"))
    rows = {r["era"]: r for r in report["rows"]}
    assert rows["handshake"]["sessionless"] and not rows["stateless"]["sessionless"]
    for r in rows.values():
        # the supervisor and both workers (at least) make up the server
        assert r["processes"] >= 3
        # every client's connection is found in some process of the tree, once
        assert [sum(spread) for spread in r["connections"]] == [2]
        assert r["rps"] > 0 and r["errors"] == 0
    # a sessionless server keeps no session: no idle-session figure
    assert report["memory"] == []
    assert "aim memory" not in out
