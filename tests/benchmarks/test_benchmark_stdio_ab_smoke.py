"""Smoke test for ``benchmarks/stdio_ab.py``: with ``--quick`` it compares the installed
package with itself on one runtime and prints both shapes with numbers. No timing is
asserted (the machine is shared and noisy)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

NUMBER = r"\d+(?:\.\d+)?"


def test_stdio_ab_quick(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "stdio_ab.py"), "installed", "installed",
         "--quick", "--runtimes", "asyncio"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    for shape in ("sequential", "100 in flight"):
        measures = r"".join(rf"\s+{m}\s+{NUMBER}\s+->\s+{NUMBER}\s+\({NUMBER}\)"
                            for m in ("wall", "client", "server"))
        assert re.search(rf"^asyncio\s+{shape}{measures}$", proc.stdout, re.MULTILINE), \
            proc.stdout


def test_stdio_ab_cold_quick(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "stdio_ab.py"), "installed", "installed",
         "--quick", "--cold", "--runtimes", "threading"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    measures = r"".join(rf"\s+{m}\s+{NUMBER}\s+->\s+{NUMBER}\s+\({NUMBER}\)"
                        for m in ("wall", "cpu"))
    assert re.search(rf"^threading\s+cold start{measures}$", proc.stdout, re.MULTILINE), \
        proc.stdout
