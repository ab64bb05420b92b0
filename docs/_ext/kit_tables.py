"""Render the testing kit's checks into the documentation at build time.

``.. testing-checks::`` with ``:kind: session`` (default), ``:kind: messages`` or
    ``:kind: client``: :data:`mcp_sansio.testing.CHECKS` (the peer machine's own checks),
    :data:`mcp_sansio.testing.RULES` (the rules invalid messages break) or the ``client-*``
    checks of CHECKS (the client checker's): name, MUST or SHOULD, what a correct peer
    does, where the specification says so.

The page is rebuilt when the modules holding the tables change.
"""

from __future__ import annotations

import importlib

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


class TestingChecks(SphinxDirective):
    """``.. testing-checks::`` -- one row per check of the testing kit."""

    has_content = False
    option_spec = {"kind": lambda value: directives.choice(value, ("session", "messages",
                                                                   "client"))}

    def run(self) -> list[nodes.Node]:
        for name in ("mcp_sansio.testing._findings", "mcp_sansio.testing._invalid"):
            path = importlib.import_module(name).__file__
            if path:
                self.env.note_dependency(path)
        from mcp_sansio.testing import CHECKS, RULES

        kind = self.options.get("kind", "session")
        # The checks of a client (the kit playing the server) are the ``client-*`` ones.
        rows = RULES if kind == "messages" else {
            name: rule for name, rule in CHECKS.items() if name not in RULES
            and name.startswith("client-") == (kind == "client")}
        lines = [
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: 22 8 40 30",
            "",
            "   * - check",
            "     - level",
            "     - a correct peer",
            "     - source",
        ]
        for name, rule in rows.items():
            lines += [
                f"   * - ``{name}``",
                f"     - {rule.requirement.upper()}",
                f"     - {rule.answer}",
                f"     - {rule.source}",
            ]
        container = nodes.container()
        content = StringList()
        for number, line in enumerate(lines):
            content.append(line, f"<{self.name} directive>", number)
        nested_parse_with_titles(self.state, content, container)
        return list(container.children)


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("testing-checks", TestingChecks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
