"""A module imported the first time it is used, not when the importing module loads.

The threading adapter needs :mod:`asyncio` only once an ``async def`` handler runs (it steps
it on a private loop): importing asyncio costs ~15-30 ms of a cold start here (its ``ssl``,
``socket``, ``subprocess`` ...), which ``mcp-sansio serve-example --runtime threading``
would pay before its first answer. A module binds ``asyncio = LazyModule("asyncio",
globals())`` (under ``if not TYPE_CHECKING``, so that type checkers see the real module):
the first attribute read imports it and rebinds that global to the real module, so every
later use is a plain global lookup.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """Stands in for module ``name`` in ``namespace`` (a module's ``globals()``) until an
    attribute of it is first read."""

    def __init__(self, name: str, namespace: dict[str, Any]) -> None:
        self._name = name
        self._namespace = namespace

    def __getattr__(self, attribute: str) -> Any:
        module = importlib.import_module(self._name)
        for key, value in list(self._namespace.items()):
            if value is self:
                self._namespace[key] = module  # later reads skip this object
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, not imported yet>"
