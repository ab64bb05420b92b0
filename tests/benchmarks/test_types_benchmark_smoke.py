"""Smoke test for ``benchmarks/typed_models.py``: it runs with ``--quick`` and prints its table.

No timing is asserted (the machine is shared and noisy); only that the script exits 0 and
prints the rows it promises, with numbers in them, and writes its JSON report.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

BENCHMARKS = ROOT / "benchmarks"
NUMBER = r"-?\d+(?:\.\d+)?"
ROWS = ["floor/json", "dict", "typed", "typed+json", "structure_request",
        "unstructure(params)", "structure_result", "unstructure(result)"]


def test_types_benchmark_quick(tmp_path: Path) -> None:
    out_file = tmp_path / "types.json"
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / "typed_models.py"), "--quick", "--json", str(out_file)],
        capture_output=True, text=True, timeout=300, cwd=BENCHMARKS.parent, check=False,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    # us/op, min, max, batch, then the ratios to the JSON floor and to the dict path.
    for row in ROWS:
        pattern = rf"^{re.escape(row)}" + rf"\s+{NUMBER}" * 6 + r"\s*$"
        assert re.search(pattern, proc.stdout, re.MULTILINE), f"no row {row!r}:\n{proc.stdout}"
    assert re.search(rf"^typed pair = {NUMBER}x the JSON floor", proc.stdout, re.MULTILINE)
    report = json.loads(out_file.read_text(encoding="utf-8"))
    assert [r["name"] for r in report["results"]] == ROWS
    for result in report["results"]:
        assert result["median_us"] > 0
        assert set(result["ratios"]) == {"floor/json", "dict"}
