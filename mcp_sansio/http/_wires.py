"""The server wires to choose from: which HTTP/1.1 parser cuts a connection into requests.

Theory of operation
-------------------
:class:`~mcp_sansio.http.HTTPServer` takes ``wire=`` by name, a key of :data:`WIRES`, and
builds each connection's wire through :func:`wire_factory`. ``"h11"`` is the default and the
reference (the core's own dependency); ``"httptools"`` (llhttp) is an optional fast path
behind the same exchange seam, with the same limits and answers (docs/wires.rst). A name the
table does not know is a ``ValueError``; a known wire whose parser is not installed is a
:class:`~mcp_sansio.http._wire_httptools.MissingParser` (an ``ImportError``) saying what to
install -- both when the server is built, not at the first connection. The httptools module
is imported only then, so a server on h11 never pays for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["WIRES", "wire_factory"]

#: Wire name -> (the module and class that implement it, the extra that installs its
#: parser: None when the core's dependencies suffice).
WIRES: dict[str, tuple[str, str | None]] = {
    "h11": ("mcp_sansio.http._wire:ServerWire", None),
    "httptools": ("mcp_sansio.http._wire_httptools:HttptoolsWire", "fast"),
}


def wire_factory(name: str) -> Callable[..., Any] | None:
    """The class that makes the server wire called ``name``, None for the h11 default
    (:class:`~mcp_sansio.http.ServerChannel` builds that one itself). Checks here that the
    parser can be imported, so that a missing extra is said when the server is built."""
    if name not in WIRES:
        raise ValueError(f"unknown wire {name!r}: one of {', '.join(sorted(WIRES))}")
    if name == "h11":
        return None
    if name == "httptools":
        from ._wire_httptools import HttptoolsWire, load_httptools

        load_httptools()
        return HttptoolsWire
    raise AssertionError(f"WIRES lists {name!r} and wire_factory does not build it")
