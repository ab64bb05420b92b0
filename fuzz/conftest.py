"""The fuzzers are ``harness`` tests (markers: pyproject.toml): many hypothesis examples
against whole connections, so they stay out of the contributor's quick run (``pytest -m
quick``, see docs/contributing.rst); tests/conftest.py marks every unmarked test ``quick``."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis's timing checks judge the machine, not the code: on a loaded 2-core machine (CI,
# or a contributor's laptop running other work) a slow first draw or a slow example is noise.
# Tests never assert wall-clock time (see docs/contributing.rst), so the default profile drops
# the too_slow health check and the per-example deadline; every other setting is hypothesis's.
settings.register_profile("mcp-sansio", suppress_health_check=[HealthCheck.too_slow],
                          deadline=None)
settings.load_profile("mcp-sansio")


def pytest_itemcollected(item: pytest.Item) -> None:
    # At collection, before `-m` selects; this directory's items only (the hook is global).
    if item.path.parent == Path(__file__).parent:
        item.add_marker("harness")
