"""The runtime-free modules still in ``adapters/`` import no I/O, clock, thread or randomness
-- nor does anything they import from the adapters at run time (imports for type checkers
only are not followed). What has moved into ``mcp_sansio/app`` (the client tasks plans, the
keepalive schedule, the client capability table, the session logic) is under the core's
purity test instead (``tests/project/test_project.py``)."""

from __future__ import annotations

import ast
import posixpath

import pytest

from tests.paths import ROOT
from tests.project.test_project import FORBIDDEN

ADAPTERS = ROOT / "adapters"
RUNTIME_FREE = ["pump", "common/plans"]
#: Reached but not followed, each with the reason. Only these: anything else impure that
#: the modules above come to import fails the test.
KNOWN_IMPURE: dict[str, str] = {}


def _run_time_imports(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(top-level modules, sibling adapter modules) imported outside ``if TYPE_CHECKING``."""
    absolute: set[str] = set()
    siblings: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                continue
            for child in ast.walk(node):
                if isinstance(child, ast.Import):
                    absolute.update(alias.name.split(".")[0] for alias in child.names)
                elif isinstance(child, ast.ImportFrom):
                    if child.level == 0 and child.module:
                        absolute.add(child.module.split(".")[0])
                    elif child.level == 1 and child.module:
                        siblings.add(child.module)
    visit(tree.body)
    return absolute, siblings


@pytest.mark.parametrize("name", RUNTIME_FREE)
def test_no_runtime_in_the_import_closure(name: str) -> None:
    seen: set[str] = set()
    todo = [name]
    while todo:
        module = todo.pop()
        if module in seen or module in KNOWN_IMPURE:
            continue
        seen.add(module)
        tree = ast.parse((ADAPTERS / f"{module}.py").read_text())
        absolute, siblings = _run_time_imports(tree)
        bad = absolute & FORBIDDEN
        assert not bad, f"{module} (reached from {name}) imports {sorted(bad)}"
        todo.extend(posixpath.join(posixpath.dirname(module), s) for s in siblings)
    assert name in seen


def test_the_check_follows_siblings_and_skips_type_checking() -> None:
    tree = ast.parse("from typing import TYPE_CHECKING\nfrom ._a import x\n"
                     "if TYPE_CHECKING:\n    from ._b import y\n    import socket\n")
    assert _run_time_imports(tree) == ({"typing"}, {"_a"})
