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

import enum
from collections.abc import Mapping
from typing import Any

from ._frozen import field_values, frozen_repr, refuse_change

__all__ = [
    "FEATURES",
    "HANDSHAKE_REVISIONS",
    "KNOWN_REVISIONS",
    "LATEST_HANDSHAKE_REVISION",
    "STATELESS_ERROR_CODES",
    "STATELESS_REVISIONS",
    "Era",
    "Features",
    "judge_probe",
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

#: The revisions without a handshake (``2026-07-28/basic/versioning.mdx``).
STATELESS_REVISIONS: tuple[str, ...] = KNOWN_REVISIONS[4:]


class Era(enum.Enum):
    """Which family of revisions a connection speaks."""

    #: initialize -> operation -> shutdown (2024-11-05 .. 2025-11-25).
    HANDSHAKE = "handshake"
    #: per-request ``_meta``, no session (2026-07-28).
    STATELESS = "stateless"


_FEATURES_FIELDS = (
    "handshake", "batching", "progress_message", "version_header", "sse_priming", "origin_403",
    "core_tasks", "audio_content", "elicitation_modes", "url_elicitation_error"
)


class Features:
    """What one revision has. Each field cites the spec section that defines it."""

    __slots__ = (
        "audio_content",
        "batching",
        "core_tasks",
        "elicitation_modes",
        "handshake",
        "origin_403",
        "progress_message",
        "sse_priming",
        "url_elicitation_error",
        "version_header"
    )

    #: Handshake (``initialize``/``notifications/initialized``) -- ``basic/lifecycle.mdx``.
    #: False for 2026-07-28 (``basic/versioning.mdx``: per-request ``_meta``).
    handshake: bool
    #: JSON-RPC batches -- added in 2025-03-26 (``changelog.mdx``: "MUST accept, MAY send"),
    #: removed in 2025-06-18 (``changelog.mdx``).
    batching: bool
    #: ``message`` in progress notifications -- added in 2025-03-26 (``changelog.mdx``).
    progress_message: bool
    #: HTTP: the client sends ``MCP-Protocol-Version`` on every request after initialize --
    #: from 2025-06-18 (``basic/transports.mdx``, "Protocol Version Header").
    version_header: bool
    #: HTTP: a resumable SSE stream opens with an event carrying an id and empty data (the
    #: "priming" event) -- from 2025-11-25 (``basic/transports.mdx``, "Resumability").
    sse_priming: bool
    #: HTTP: a request with an Origin the server does not accept is answered 403 -- from
    #: 2025-11-25 (``basic/transports.mdx``, "Security Warning"); before, only "MUST validate".
    origin_403: bool
    #: Tasks in the core protocol (``params.task``, ``tasks/get|result|list|cancel``,
    #: ``notifications/tasks/status``) -- 2025-11-25 only (``basic/utilities/tasks.mdx``,
    #: experimental); 2026-07-28 moved them into the ``io.modelcontextprotocol/tasks``
    #: extension (SEP-2663).
    core_tasks: bool
    #: Audio content blocks (``AudioContent``) -- added in 2025-03-26 (``changelog.mdx``).
    audio_content: bool
    #: Elicitation modes: ``mode: "form"`` / ``"url"`` on ``elicitation/create``, the client
    #: capability's ``form``/``url`` members, -32042 -- added in 2025-11-25
    #: (``client/elicitation.mdx``, URL mode).
    elicitation_modes: bool
    #: Error -32042 "URL elicitation required" (``data.elicitations``) -- 2025-11-25 only:
    #: added with URL-mode elicitation (``client/elicitation.mdx``), removed in 2026-07-28
    #: (``changelog.mdx``; the 2026-07-28 schema no longer defines the code).
    url_elicitation_error: bool

    def __init__(
        self, *, handshake: bool, batching: bool, progress_message: bool, version_header: bool,
        sse_priming: bool, origin_403: bool, core_tasks: bool = False, audio_content: bool = True,
        elicitation_modes: bool = True, url_elicitation_error: bool = False
    ) -> None:
        object.__setattr__(self, "handshake", handshake)
        object.__setattr__(self, "batching", batching)
        object.__setattr__(self, "progress_message", progress_message)
        object.__setattr__(self, "version_header", version_header)
        object.__setattr__(self, "sse_priming", sse_priming)
        object.__setattr__(self, "origin_403", origin_403)
        object.__setattr__(self, "core_tasks", core_tasks)
        object.__setattr__(self, "audio_content", audio_content)
        object.__setattr__(self, "elicitation_modes", elicitation_modes)
        object.__setattr__(self, "url_elicitation_error", url_elicitation_error)

    def __repr__(self) -> str:
        return frozen_repr(self, _FEATURES_FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return field_values(self, _FEATURES_FIELDS) == field_values(other, _FEATURES_FIELDS)

    def __hash__(self) -> int:
        return hash(field_values(self, _FEATURES_FIELDS))

    def __setattr__(self, name: str, value: Any) -> None:
        refuse_change()

    def __delattr__(self, name: str) -> None:
        refuse_change()


_ROW = Features
#: The per-revision feature table (spec-digest section a).
FEATURES: dict[str, Features] = {
    "2024-11-05": _ROW(handshake=True, batching=False, progress_message=False,
                       version_header=False, sse_priming=False, origin_403=False,
                       audio_content=False, elicitation_modes=False),
    "2025-03-26": _ROW(handshake=True, batching=True, progress_message=True,
                       version_header=False, sse_priming=False, origin_403=False,
                       elicitation_modes=False),
    "2025-06-18": _ROW(handshake=True, batching=False, progress_message=True,
                       version_header=True, sse_priming=False, origin_403=False,
                       elicitation_modes=False),
    "2025-11-25": _ROW(handshake=True, batching=False, progress_message=True,
                       version_header=True, sse_priming=True, origin_403=True,
                       core_tasks=True, url_elicitation_error=True),
    "2026-07-28": _ROW(handshake=False, batching=False, progress_message=True,
                       version_header=True, sse_priming=True, origin_403=True),
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
        # Ours, not the request's copy: a session keeps the one string every session shares.
        return supported[supported.index(requested)]
    return newest(supported)


#: Error codes only a stateless-era server sends (2026-07-28 ``basic/index.mdx``: the range
#: -32020..-32099 is reserved for the spec; these three are defined): header mismatch,
#: missing required client capability, unsupported protocol version.
STATELESS_ERROR_CODES = frozenset({-32020, -32021, -32022})


def judge_probe(response: Mapping[str, Any]) -> Era:
    """Which era a server speaks, judged from its answer to a stateless-era probe.

    ``response`` is the JSON-RPC response object (with ``result`` or ``error``) to a
    ``server/discover`` sent with the stateless ``_meta`` (stdio), or the JSON body of an HTTP
    400 answering a stateless request. ``2026-07-28/basic/versioning.mdx``: a discover result
    or a recognised stateless-era error means the stateless era; *anything else* means fall
    back to ``initialize`` -- the fallback never depends on one specific error code, so an
    old server's -32601, -32600, -32602 or a timeout (judged by the caller) all fall back.
    """
    result = response.get("result")
    if isinstance(result, Mapping):
        versions = result.get("supportedVersions")
        if isinstance(versions, list) and "capabilities" in result:
            return Era.STATELESS
        return Era.HANDSHAKE
    error = response.get("error")
    if isinstance(error, Mapping):
        code = error.get("code")
        if type(code) is int and code in STATELESS_ERROR_CODES:
            return Era.STATELESS
    return Era.HANDSHAKE
