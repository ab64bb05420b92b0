"""The build backend: setuptools', plus the compiler when the compiled build is asked for.

``pip install .`` builds the pure-Python package, as setuptools alone would. With
``MCP_SANSIO_COMPILE=1`` in the environment, ``setup.py`` compiles the hot-path modules with
mypyc (docs/compiled.rst); this wrapper only adds ``mypy`` (which ships mypyc) to what the
isolated build environment installs, so that the one switch is all a user sets.
"""

from __future__ import annotations

import os
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the whole PEP 517 interface)

#: The compiler of the compiled build (mypyc ships with mypy).
COMPILER = "mypy>=1.11"


def _compile() -> bool:
    return os.environ.get("MCP_SANSIO_COMPILE", "") not in ("", "0")


def _requires(hook: Any, config_settings: dict[str, Any] | None) -> list[str]:
    # setuptools' own hook runs setup.py to collect its requirements, and setup.py needs the
    # compiler when asked to compile: so the compiled build does not ask it (setup.py declares
    # none; "wheel" is what setuptools before 70.1 needs to build one).
    if _compile():
        return ["wheel", COMPILER]
    return list(hook(config_settings))


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _requires(_setuptools.get_requires_for_build_wheel, config_settings)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _requires(_setuptools.get_requires_for_build_editable, config_settings)
