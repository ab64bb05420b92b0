"""The whole test suite: lint, types, docs, tests. Run by the README's test command.

Each step runs in its own subprocess with this interpreter; every step runs even if an
earlier one failed (so one CI run shows every problem), and the exit status is non-zero if
any failed.

The tests read the official MCP schemas from ``$MCP_SCHEMA_DIR`` or ``../shared/mcp-schema``
(``tests/schemas.py``): on a bare clone the tests that need them are skipped, with one line
saying so; ``.ci/run`` exports ``MCP_REQUIRE_SCHEMAS=1``, which makes their absence a failure.
The contributor's fast run is ``pytest -m quick`` (docs/contributing.rst).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

STEPS: list[tuple[str, list[str]]] = [
    ("ruff", [PY, "-m", "ruff", "check", "."]),
    ("mypy --strict", [PY, "-m", "mypy", "--strict", "mcp_sansio", "adapters"]),
    ("docs (warnings are errors)",
     [PY, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs", "docs/_build/html"]),
    # The harness before pytest, so that pytest's summary is the run's last test report.
    ("conformance harness (loopback-only namespace)", [PY, ".ci/conformance.py"]),
    ("pytest", [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"]),
    # The same tests on the optional compiled build (docs/compiled.rst): `-m quick` on the
    # mypyc extensions, built here with the machine's compiler and removed afterwards.
    ("pytest, compiled build (-m quick)", [PY, ".ci/compiled.py"]),
    # The sdist and wheel as a user gets them: built, twine-checked, the wheel installed in a
    # fresh venv and run there (.ci/wheel.py).
    ("wheel (build, twine check, fresh venv, smoke)", [PY, ".ci/wheel.py"]),
]


def main() -> int:
    failed: list[str] = []
    env = dict(os.environ)
    for name, cmd in STEPS:
        print(f"\n=== {name}: {' '.join(cmd[1:])}", flush=True)
        start = time.monotonic()
        code = subprocess.call(cmd, cwd=ROOT, env=env)
        took = time.monotonic() - start
        # pytest exits 5 when it collected no test: that is a failure here, not a pass.
        status = "ok" if code == 0 else f"FAILED (exit {code})"
        print(f"=== {name}: {status} in {took:.1f} s", flush=True)
        if code != 0:
            failed.append(name)
    if failed:
        print(f"\nFAILED steps: {', '.join(failed)}")
        return 1
    print("\nall steps passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
