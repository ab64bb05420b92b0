"""Smoke tests for ``benchmarks/load_ab.py`` (one server row from two trees, paired, with the
floors, the httptools ones included) and ``benchmarks/profile_load.py --calls`` (Python calls
per request by component, under cProfile): tiny runs exit 0 and print their tables. No
timing is asserted (the machine is shared and noisy)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.paths import ROOT

NUMBER = r"(?:-?\d+(?:\.\d+)?|nan)"  # (nan: a window that saw no answer on a busy machine)

pytest.importorskip("httptools")  # the best row's wire and the httptools floors


def test_load_ab_tiny() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "load_ab.py"), "installed", "installed",
         "--quick", "--floors", "httptools,httptools-json"],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    out = proc.stdout
    for era in ("handshake", "stateless"):
        for row in ("A ours-asyncio-httptools", "B ours-asyncio-httptools",
                    "floor httptools", "floor httptools-json"):
            assert re.search(rf"^{re.escape(row)}\s+{era}(\s+{NUMBER}){{5}}$", out,
                             re.MULTILINE), f"no row {row} {era} in:\n{out}"
        assert re.search(rf"^B/A {era}: cpu us/req {NUMBER} ", out, re.MULTILINE), out


def test_profile_load_calls_tiny() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "profile_load.py"), "--calls",
         "--seconds", "0.3", "--clients", "2", "--eras", "stateless"],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    assert re.search(rf"^## stateless: \d+ requests .* {NUMBER} calls per request", proc.stdout,
                     re.MULTILINE), proc.stdout
    assert re.search(rf"^wire: llhttp callbacks \+ parse\s+{NUMBER}\s+{NUMBER}$", proc.stdout,
                     re.MULTILINE), proc.stdout
