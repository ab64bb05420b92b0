"""Smoke test for ``benchmarks/http_client_ab.py``: with ``--quick`` it compares the installed
package with itself and prints every shape with numbers. No timing is asserted (the machine
is shared and noisy)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

NUMBER = r"\d+(?:\.\d+)?"


def test_http_client_ab_quick(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "http_client_ab.py"), "installed",
         "installed", "--quick"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    for shape in ("2026/json", "2026/sse", "2025/json"):
        assert re.search(rf"^{re.escape(shape)}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$",
                         proc.stdout, re.MULTILINE), proc.stdout
