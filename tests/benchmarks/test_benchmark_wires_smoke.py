"""Smoke test for ``benchmarks/wires.py`` (the parse cost per request of each server wire):
it runs with ``--quick``, prints a row per era and figure with both wires' numbers, and
writes the same figures as JSON. No timing is asserted (the machine is shared)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

NUMBER = r"\d+(?:\.\d+)?"


def test_wires_benchmark_quick(tmp_path: Path) -> None:
    out_file = tmp_path / "wires.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "wires.py"), "--quick", "--json",
         str(out_file)], capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    for era in ("stateless", "handshake"):
        for figure in ("parse", "round"):
            assert re.search(rf"^{era}\s+{figure}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}x$",
                             proc.stdout, re.MULTILINE), proc.stdout
    report = json.loads(out_file.read_text(encoding="utf-8"))
    assert len(report) == 4 and all(r["h11_us"] > 0 and r["httptools_us"] > 0 for r in report)
