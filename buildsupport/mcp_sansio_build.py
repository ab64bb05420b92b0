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


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    requires = list(_setuptools.get_requires_for_build_wheel(config_settings))
    return [*requires, COMPILER] if _compile() else requires


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    requires = list(_setuptools.get_requires_for_build_editable(config_settings))
    return [*requires, COMPILER] if _compile() else requires
