"""Smoke test for ``benchmarks/stdio.py``: it runs with ``--quick`` and prints every row it
promises, with numbers. No timing is asserted (the machine is shared and noisy)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

NUMBER = r"-?\d+(?:\.\d+)?"


def test_stdio_benchmark_quick(tmp_path: Path) -> None:
    out_file = tmp_path / "stdio.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "stdio.py"), "--quick", "--reps", "1",
         "--json", str(out_file)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    out = proc.stdout
    names = ["floor", "rt/asyncio", "rt/trio", "rt/threading", "srv/asyncio", "srv/trio",
             "srv/threading", "ours/asyncio", "ours/trio", "ours/threading", "sdk/legacy"]
    for name in names:
        for shape in ("sequential", "100 in flight"):
            assert re.search(rf"^{re.escape(name)}\s+{shape}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$",
                             out, re.MULTILINE), f"no row {name} {shape} in:\n{out}"
    for row in ("rt/asyncio (bare child)", "rt/trio (bare child)", "rt/threading (bare child)",
                "serve-example/asyncio", "serve-example/trio", "serve-example/threading",
                "sdk server", "call + core bookkeeping", "call + core + awaiting task"):
        assert re.search(rf"^{re.escape(row)}\s+{NUMBER}$", out, re.MULTILINE), row
    assert re.search(rf"^aim ours/asyncio: sequential <= 1.3x floor: {NUMBER}x", out,
                     re.MULTILINE)
    assert re.search(rf"^  rt/trio \(the runtime alone\): sequential {NUMBER}x floor, 100 in "
                     rf"flight {NUMBER}x; ours x rt/trio: {NUMBER}x, {NUMBER}x$", out,
                     re.MULTILINE)
    report = json.loads(out_file.read_text(encoding="utf-8"))
    assert {(r["name"], r["shape"]) for r in report["results"]} == {
        (n, s) for n in names for s in ("sequential", "100 in flight")}
    assert all(r["median_us"] > 0 for r in report["results"])
    assert report["heap_bytes_per_pending"]["call + core bookkeeping"] > 0
    assert set(report["ours_x_runtime_floor"]) == {"asyncio", "trio", "threading"}
