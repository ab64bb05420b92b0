"""docs/authorization.rst: its example and its snippets run as written and print what the
page says they print."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.paths import ROOT

PAGE = ROOT / "docs" / "authorization.rst"


def test_the_by_hand_example_runs_and_prints_what_the_page_shows() -> None:
    page = PAGE.read_text()
    assert "literalinclude:: examples/auth_by_hand.py" in page
    result = subprocess.run([sys.executable, str(ROOT / "docs" / "examples" / "auth_by_hand.py")],
                            capture_output=True, text=True, check=True, cwd=ROOT, timeout=120)
    shown = page.split("``python docs/examples/auth_by_hand.py`` prints:\n\n.. code-block:: text\n",
                       1)[1]
    expected = [line.strip() for line in shown.strip("\n").split("\n\n", 1)[0].splitlines()]
    assert result.stdout.splitlines() == expected


def test_every_python_snippet_of_the_page_runs() -> None:
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:   .*\n|\n)+)", PAGE.read_text())
    assert blocks
    for block in blocks:
        code = "\n".join(line[3:] for line in block.splitlines())
        exec(compile(code, str(PAGE), "exec"), {})
