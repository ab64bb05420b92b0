"""Sphinx configuration for the mcp-sansio documentation.

Build (warnings are errors)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

# The package (for autodoc, when it is not installed) and the local extension.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

import mcp_sansio  # noqa: E402

project = "mcp-sansio"
author = "mcp-sansio developers"
copyright = "mcp-sansio developers"
release = mcp_sansio.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    # Sequence diagrams (``.. mermaid::``): the build only embeds the diagram's text, which
    # mermaid.js draws in the reader's browser, so building needs no network and no binary.
    "sphinxcontrib.mermaid",
    "mcp_tables",
    "kit_tables",
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
html_static_path = ["_static"]
html_css_files = ["mcp-tables.css"]

html_theme = "furo"
html_title = "mcp-sansio"

default_role = "py:obj"
primary_domain = "py"
highlight_language = "python3"

# -- autodoc ---------------------------------------------------------------------------------

autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_preserve_defaults = True
# Short names in annotations that more than one documented class bears: the client's
# ``transport`` is the HTTP transport (``mcp_sansio.testing.Transport`` is the kit's).
autodoc_type_aliases = {"Transport": "mcp_sansio.http.Transport"}
# The docstrings cross-reference private modules (``mcp_sansio._state`` ...) that are not
# documented as such; an unresolved reference renders as plain code. Keep that lenient, but
# every other warning fails the build.
nitpicky = False
