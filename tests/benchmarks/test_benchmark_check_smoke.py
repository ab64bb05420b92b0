"""Smoke test for ``benchmarks/check.py``: it runs with ``--quick`` and prints a row per peer
with numbers in it. No timing is asserted (the machine is shared)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.benchmarks.test_benchmarks_smoke import assert_row, run_script


def test_check_benchmark_runs(tmp_path: Path) -> None:
    target = tmp_path / "check.json"
    output = run_script("check.py", "--json", str(target))
    assert_row(output, "in-process", 4)
    assert_row(output, "stdio", 4)
    results = json.loads(target.read_text())
    assert results["in-process"]["findings"] == 0
    assert results["stdio"]["findings"] == 0
    assert results["stdio"]["examples"] >= 1
