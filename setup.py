"""The optional compiled build (docs/compiled.rst); the metadata lives in pyproject.toml.

Without ``MCP_SANSIO_COMPILE=1`` this adds nothing: the package installs as pure Python,
anywhere. With it, the modules of ``mcp_sansio._compiled.COMPILED_MODULES`` are compiled with
mypyc into extension modules that sit beside their source; Python loads an extension before
a ``.py`` of the same name, and the source stays the reference.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent


def compiled_modules() -> list[str]:
    """The list, from ``mcp_sansio/_compiled.py`` alone (it imports nothing of the package)."""
    spec = importlib.util.spec_from_file_location(
        "_mcp_sansio_compiled", ROOT / "mcp_sansio" / "_compiled.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.COMPILED_MODULES)


def ext_modules() -> list[object]:
    if os.environ.get("MCP_SANSIO_COMPILE", "") in ("", "0"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as exc:
        raise SystemExit("MCP_SANSIO_COMPILE=1 needs mypy (which ships mypyc) where the "
                         f"package is built: {exc}") from exc

    # The compiler reads the source relative to the current directory.
    os.chdir(ROOT)
    # group_name: the compiler's shared runtime goes inside the package
    # (mcp_sansio/_native__mypyc.*), not beside it as a top-level module.
    return list(mypycify(compiled_modules(), opt_level="3", verbose=False,
                         group_name="mcp_sansio._native"))


setup(ext_modules=ext_modules())
