"""docs/authorization-machines.rst: its complete example prints what the page says."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import ROOT

PAGE = ROOT / "docs" / "authorization-machines.rst"


def test_the_pages_copy_of_the_example_output_is_what_it_prints() -> None:
    page = PAGE.read_text()
    start = page.index("``python docs/examples/machine_client.py`` prints:")
    block = page[start:].split(".. code-block:: text", 1)[1].split("\n\n")[1]
    expected = [line.strip() for line in block.splitlines() if line.strip()]
    run = subprocess.run([sys.executable, str(ROOT / "docs" / "examples" / "machine_client.py")],
                         capture_output=True, text=True, timeout=180, check=True)
    assert run.stdout.splitlines() == expected
