"""Smoke tests for ``benchmarks/``: each script runs with ``--quick`` and prints its table.

No timing is asserted (the machine is shared and noisy); only that the scripts exit 0 and
print the rows they promise, with numbers in them.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

BENCHMARKS = ROOT / "benchmarks"
HAS_ORJSON = importlib.util.find_spec("orjson") is not None
HAS_SDK = importlib.util.find_spec("mcp") is not None
NUMBER = r"-?\d+(?:\.\d+)?"


def run_script(name: str, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / name), "--quick", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=BENCHMARKS.parent,
        check=False,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def assert_row(output: str, label: str, numbers: int) -> None:
    pattern = rf"^{re.escape(label)}" + rf"\s+{NUMBER}" * numbers
    assert re.search(pattern, output, re.MULTILINE), f"no row {label!r} in:\n{output}"


def test_roundtrip_quick(tmp_path: Path) -> None:
    out_file = tmp_path / "roundtrip.json"
    output = run_script("roundtrip.py", "--json", str(out_file))
    rows = ["floor/stdlib", "core/stdlib", "core/stdlib+drain"]
    if HAS_ORJSON:
        rows += ["floor/orjson", "core/orjson", "core/orjson+drain"]
    if HAS_SDK and "official SDK could not be set up" not in output:
        # (Another SDK version may have another API; the script then says so and goes on.)
        rows += ["sdk/legacy", "sdk/2026-07-28"]
    # us/rt, min, max, batch, then one ratio per reference (stdlib floor at least).
    for row in rows:
        assert_row(output, row, 5)
    assert re.search(rf"^aim core/stdlib <= 2x floor/stdlib: {NUMBER}x", output, re.MULTILINE)
    report = json.loads(out_file.read_text(encoding="utf-8"))
    assert {r["name"] for r in report["results"]} == set(rows)
    for result in report["results"]:
        assert result["median_us"] > 0
        assert "floor/stdlib" in result["ratios"]


def test_roundtrip_without_sdk() -> None:
    output = run_script("roundtrip.py", "--no-sdk", "--reps", "1", "--clock", "process")
    assert_row(output, "core/stdlib", 5)
    assert "sdk/legacy" not in output.split("aim")[0]


def test_pending_quick(tmp_path: Path) -> None:
    out_file = tmp_path / "pending.json"
    output = run_script("pending.py", "--json", str(out_file))
    columns = 2 if HAS_ORJSON else 1
    for row in (
        "send_request + data_to_send",
        "send_request, outbox held",
        "next_deadline (1 pending)",
        "next_deadline (N pending)",
        "handle_timeout (expire all)",
        "handle_timeout per request",
        "next_deadline N/1 ratio",
        "heap bytes per pending request",
    ):
        assert_row(output, row, columns)
    assert re.search(r"^aim: <= 3072 heap bytes per pending request", output, re.MULTILINE)
    report = json.loads(out_file.read_text(encoding="utf-8"))
    for memory in report["memory"].values():
        assert memory["bytes_per_request"] > 0


def test_profile_quick() -> None:
    output = run_script("profile_roundtrip.py", "--backend", "stdlib", "--cprofile", "--top", "5")
    for step in ("client.send_request", "server.next_event", "client.next_event", "total"):
        assert_row(output, step, 1)
    assert "JSON seam (stdlib)" in output
    assert "cProfile, stdlib" in output


@pytest.mark.skipif(not HAS_ORJSON, reason="orjson is not installed")
def test_pending_quick_orjson_only() -> None:
    output = run_script("pending.py", "--backend", "orjson", "--clock", "process")
    assert_row(output, "heap bytes per pending request", 1)
