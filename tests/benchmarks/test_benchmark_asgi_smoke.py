"""Smoke test for ``benchmarks/asgi.py``: with ``--quick`` it prints its six rows (seam, bare
ASGI app, ASGI app over the example server; both eras) with numbers and writes them as JSON,
and ``--profile ROW`` prints a profile of that row. The script itself checks each row's first
answer (status 200, the echoed text). No timing is asserted (the machine is shared)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

NUMBER = r"\d+(?:\.\d+)?"
ROWS = [f"{kind}/{era}" for era in ("2026-07-28", "2025-11-25")
        for kind in ("seam", "asgi-bare", "asgi-app")]


def run(*args: str) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "asgi.py"), *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_asgi_benchmark_quick(tmp_path: Path) -> None:
    out_file = tmp_path / "asgi.json"
    stdout = run("--quick", "--json", str(out_file))
    for row in ROWS:
        assert re.search(rf"^{re.escape(row)}\s+{NUMBER}\s+{NUMBER}$", stdout,
                         re.MULTILINE), stdout
    report = json.loads(out_file.read_text(encoding="utf-8"))
    assert [r["name"] for r in report["results"]] == ROWS
    assert all(r["median_us"] > 0 for r in report["results"])


def test_asgi_benchmark_profile() -> None:
    stdout = run("--quick", "--profile", "asgi-app/2026-07-28", "--top", "5")
    assert "function calls" in stdout and "Ordered by: internal time" in stdout, stdout
