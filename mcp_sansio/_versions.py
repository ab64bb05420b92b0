"""Protocol revisions, version negotiation and the per-revision feature table.

Theory of operation
-------------------
A *revision* is a date string naming one published MCP specification. The handshake era
(2024-11-05 .. 2025-11-25) negotiates one revision per connection through ``initialize``; the
stateless era (2026-07-28) carries the revision on every request. Code never compares
revision strings to decide what is allowed: it asks :data:`FEATURES` (one row per revision,
each cell citing where the spec says so).
"""

from __future__ import annotations

import attrs

__all__ = [
    "FEATURES",
    "HANDSHAKE_REVISIONS",
    "KNOWN_REVISIONS",
    "LATEST_HANDSHAKE_REVISION",
    "Features",
    "negotiate_server_version",
]

#: Every published revision, oldest first.
KNOWN_REVISIONS: tuple[str, ...] = (
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
)

#: The revisions that use the ``initialize`` handshake (lifecycle.mdx of each).
HANDSHAKE_REVISIONS: tuple[str, ...] = KNOWN_REVISIONS[:4]

LATEST_HANDSHAKE_REVISION = HANDSHAKE_REVISIONS[-1]


@attrs.frozen(kw_only=True)
class Features:
    """What one revision has. Each field cites the spec section that defines it."""

    #: Handshake (``initialize``/``notifications/initialized``) -- ``basic/lifecycle.mdx``.
    #: False for 2026-07-28 (``basic/versioning.mdx``: per-request ``_meta``).
    handshake: bool
    #: JSON-RPC batches -- added in 2025-03-26 (``changelog.mdx``: "MUST accept, MAY send"),
    #: removed in 2025-06-18 (``changelog.mdx``).
    batching: bool
    #: ``ping`` -- ``basic/utilities/ping.mdx``; removed in 2026-07-28.
    ping: bool
    #: ``message`` in progress notifications -- added in 2025-03-26 (``changelog.mdx``).
    progress_message: bool
    #: An error response may omit ``id`` when it could not be read -- 2025-11-25 schema
    #: (``JSONRPCErrorResponse.id`` optional); earlier schemas require it.
    error_id_optional: bool


_ROW = Features
#: The per-revision feature table (spec-digest section a).
FEATURES: dict[str, Features] = {
    "2024-11-05": _ROW(handshake=True, batching=False, ping=True, progress_message=False,
                       error_id_optional=False),
    "2025-03-26": _ROW(handshake=True, batching=True, ping=True, progress_message=True,
                       error_id_optional=False),
    "2025-06-18": _ROW(handshake=True, batching=False, ping=True, progress_message=True,
                       error_id_optional=False),
    "2025-11-25": _ROW(handshake=True, batching=False, ping=True, progress_message=True,
                       error_id_optional=True),
    "2026-07-28": _ROW(handshake=False, batching=False, ping=False, progress_message=True,
                       error_id_optional=True),
}


def newest(revisions: tuple[str, ...] | frozenset[str] | list[str]) -> str:
    """The newest of ``revisions`` (known revisions sort by date; unknown strings last)."""
    return max(revisions, key=lambda r: (r in FEATURES, r))


def negotiate_server_version(requested: object, supported: tuple[str, ...]) -> str:
    """The version a server answers ``initialize`` with (``basic/lifecycle.mdx``,
    "Version Negotiation"): the client's if the server supports it, else the server's newest.

    An unknown or malformed request is not an error for the server: it offers its own.
    """
    if isinstance(requested, str) and requested in supported:
        return requested
    return newest(supported)
