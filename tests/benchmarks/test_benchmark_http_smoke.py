"""Smoke test for ``benchmarks/http_layer.py``: it runs with ``--quick`` and prints every row it
promises (the raw and h11 floors, our client and server on each runtime that has an HTTP
client, in both eras, and the official SDK in both eras), with numbers. No timing is asserted
(the machine is shared and noisy)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from mcp_sansio.adapters import asyncio as asyncio_adapter
from mcp_sansio.adapters import threading as threading_adapter
from mcp_sansio.adapters import trio as trio_adapter

from tests.paths import ROOT

NUMBER = r"-?\d+(?:\.\d+)?"
SHAPES = ("sequential", "10 in flight")


def test_http_benchmark_quick(tmp_path: Path) -> None:
    out_file = tmp_path / "http.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "http_layer.py"), "--quick", "--reps", "1",
         "--json", str(out_file)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    out = proc.stdout
    runtimes = [name for name, adapter in (("asyncio", asyncio_adapter),
                                           ("trio", trio_adapter),
                                           ("threading", threading_adapter))
                if "connect_http" in adapter.__all__]
    assert {"asyncio", "threading"} <= set(runtimes)
    names = ["floor", "floor/h11",
             *(f"ours/{r}/{e}" for r in runtimes for e in ("stateless", "handshake")),
             "sdk/stateless", "sdk/handshake"]
    for name in names:
        for shape in SHAPES:
            assert re.search(rf"^{re.escape(name)}\s+{shape}(\s+{NUMBER}){{4}}$",
                             out, re.MULTILINE), f"no row {name} {shape} in:\n{out}"
    assert re.search(rf"^aim ours/asyncio/stateless: <= 2x floor: sequential {NUMBER}x", out,
                     re.MULTILINE)
    report = json.loads(out_file.read_text(encoding="utf-8"))
    assert {(r["name"], r["shape"]) for r in report["results"]} == {
        (n, s) for n in names for s in SHAPES}
    assert all(r["median_us"] > 0 for r in report["results"])
    assert [r["x_floor"] for r in report["results"] if r["name"] == "floor"] == [1.0, 1.0]
    assert [r["x_h11_floor"] for r in report["results"] if r["name"] == "floor/h11"] == [
        1.0, 1.0]
