"""Smoke test for ``benchmarks/per_request.py``: it runs with ``--quick`` and prints its four
rows with numbers, and the connection's share for the two rows that build one per request.
No timing is asserted (the machine is shared and noisy)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

NUMBER = r"\d+(?:\.\d+)?"


def test_per_request_benchmark_quick(tmp_path: Path) -> None:
    out_file = tmp_path / "per_request.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "per_request.py"), "--quick",
         "--json", str(out_file)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    for row in ("connection", "http/session"):
        assert re.search(rf"^{re.escape(row)}\s+{NUMBER}\s+{NUMBER}\s*$", proc.stdout,
                         re.MULTILINE), proc.stdout
    for row in ("http/2026-07-28", "http/sessionless"):
        assert re.search(rf"^{re.escape(row)}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}%$",
                         proc.stdout, re.MULTILINE), proc.stdout
    report = json.loads(out_file.read_text(encoding="utf-8"))
    assert [r["name"] for r in report["results"]] == [
        "connection", "http/2026-07-28", "http/sessionless", "http/session"]
    assert all(r["median_us"] > 0 for r in report["results"])
