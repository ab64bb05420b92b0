"""The fuzzers are ``harness`` tests (markers: pyproject.toml): many hypothesis examples
against whole connections, so they stay out of the contributor's quick run (``pytest -m
quick``, see docs/contributing.rst); tests/conftest.py marks every unmarked test ``quick``."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    # At collection, before `-m` selects; this directory's items only (the hook is global).
    if item.path.parent == Path(__file__).parent:
        item.add_marker("harness")
