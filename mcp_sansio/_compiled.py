"""What the optional compiled build needs from the source, and how to tell which build runs.

Theory of operation
-------------------
The modules listed in :data:`COMPILED_MODULES` can be compiled with mypyc
(``MCP_SANSIO_COMPILE=1 pip install .``, see docs/compiled.rst); the Python source stays the
reference and is what a default install runs. The compiler reads the same source, so the few
things it needs are written here once:

* :func:`mypyc_attr`: the compiler's class options (``allow_interpreted_subclasses`` lets a
  Python class subclass a compiled connection). The type checker and the compiler see
  ``mypy_extensions.mypyc_attr``; at run time it is a no-op, so the pure build does not need
  ``mypy_extensions`` installed.
* :func:`compiled_modules`: which of those modules were loaded from a compiled extension.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

__all__ = ["COMPILED_MODULES", "compiled_modules", "mypyc_attr"]

#: The modules of the compiled build (paths relative to the source root, as the build takes
#: them): the codec, the connection and its sub-states, the pending table, the capability and
#: lifecycle tables, the JSON seam and the framing; in the HTTP layer, the server's request
#: path (both wires, the exchange seam, the hub, the server and its parts). ``_events`` stays
#: Python (its field lists are set per subclass by ``__init_subclass__`` and attrs' field view
#: comes from a descriptor: Python machinery, left as it is), so does ``http._shared`` (attrs
#: fields with defaults) and everything a request does not reach.
COMPILED_MODULES: tuple[str, ...] = (
    "mcp_sansio/_admission.py",
    "mcp_sansio/_batches.py",
    "mcp_sansio/_capabilities.py",
    "mcp_sansio/_checks.py",
    "mcp_sansio/_codec.py",
    "mcp_sansio/_connection.py",
    "mcp_sansio/_engine.py",
    "mcp_sansio/_errors.py",
    "mcp_sansio/_handshake.py",
    "mcp_sansio/_inflight.py",
    "mcp_sansio/_json.py",
    "mcp_sansio/_lifecycle.py",
    "mcp_sansio/_listen.py",
    "mcp_sansio/_mrtr.py",
    "mcp_sansio/_notifications.py",
    "mcp_sansio/_pending.py",
    "mcp_sansio/_sessionless.py",
    "mcp_sansio/_state.py",
    "mcp_sansio/_stateless.py",
    "mcp_sansio/_stateless_era.py",
    "mcp_sansio/_timers.py",
    "mcp_sansio/_versions.py",
    "mcp_sansio/_framing/ndjson.py",
    "mcp_sansio/http/_checks.py",
    "mcp_sansio/http/_exchange.py",
    "mcp_sansio/http/_exchange_wire.py",
    "mcp_sansio/http/_gate.py",
    "mcp_sansio/http/_head_rules.py",
    "mcp_sansio/http/_headers.py",
    "mcp_sansio/http/_hub.py",
    "mcp_sansio/http/_oneshot.py",
    "mcp_sansio/http/_park.py",
    "mcp_sansio/http/_parking.py",
    "mcp_sansio/http/_server.py",
    "mcp_sansio/http/_sessions.py",
    "mcp_sansio/http/_stranded.py",
    "mcp_sansio/http/_streams.py",
    "mcp_sansio/http/_wire.py",
    "mcp_sansio/http/_wire_httptools.py",
)

if TYPE_CHECKING:
    from mypy_extensions import mypyc_attr
else:

    def mypyc_attr(*_args: Any, **_options: Any) -> Any:
        """The compiler's class options; nothing to do at run time."""
        return lambda cls: cls


def compiled_modules() -> dict[str, bool]:
    """For each module of :data:`COMPILED_MODULES`: was it loaded from a compiled extension?

    A module not imported yet is imported first.
    """
    import importlib

    loaded: dict[str, bool] = {}
    for path in COMPILED_MODULES:
        name = path.removesuffix(".py").replace("/", ".")
        module = sys.modules.get(name) or importlib.import_module(name)
        loaded[name] = not (module.__file__ or "").endswith(".py")
    return loaded
