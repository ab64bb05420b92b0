"""Stateless admission: whether a message may be served at all, before any method rule.

Theory of operation
-------------------
A 2026-07-28 request stands alone (``basic/versioning.mdx``): it carries the client's
protocol version and capabilities in ``params._meta``, and the server judges it on that alone.
Before the method table is consulted, the request must pass the *admission* rows below, in
order; the first that fails gives the JSON-RPC error the server answers with. Both the
connection (stdio, or any message handed to it) and the HTTP server (which answers before a
connection exists, and maps the code to an HTTP status) call :func:`admit_stateless`, so each
rule and its wording exist once; the HTTP server checks the envelope row before its header
rules and hands the result on, and the connection then runs the rest
(:func:`admit_after_envelope`), so no row runs twice on one request.

Batches are a separate, per-revision rule (:func:`batch_refusal`, from the ``batching``
column of the feature table): only 2025-03-26 has them.

Every function here is pure: it reads its arguments and returns a :class:`Refusal` or the
admitted facts, and never raises for bad input (bad input is answered, never fatal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._errors import ErrorCode
from ._stateless import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION
from ._versions import FEATURES

__all__ = [
    "ADMISSION",
    "ENVELOPE_ONLY",
    "Admitted",
    "Refusal",
    "admit_after_envelope",
    "admit_stateless",
    "batch_refusal",
    "unsupported_version",
]


class Refusal:
    """Why a message is not admitted: the JSON-RPC error to answer with."""

    __slots__ = ("code", "data", "message")

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = int(code)
        self.message = message
        self.data = data

    def __eq__(self, other: object) -> bool:
        return type(other) is Refusal and (self.code, self.message, self.data) == (
            other.code, other.message, other.data)

    __hash__ = None  # type: ignore[assignment]  # (mutable, compared by value)

    def __repr__(self) -> str:
        return f"Refusal({self.code}, {self.message!r}, {self.data!r})"


#: A stateless request that passed admission: (protocol version, declared client
#: capabilities, the request's ``_meta``). A plain tuple: the HTTP server builds a connection
#: for every stateless request and admission runs on each, so the common outcome is the
#: cheapest object to build (a class instance cost ~250 ns more, measured).
Admitted = tuple[str, dict[str, Any], dict[str, Any]]


def batch_refusal(negotiated: str | None, shown: str) -> Refusal | None:
    """A JSON-RPC batch is refused unless the negotiated revision has batching (only
    2025-03-26: ``changelog.mdx`` of 2025-03-26 added it, 2025-06-18 removed it; the stateless
    era has none). ``shown`` is the revision named in the message."""
    if negotiated is not None and FEATURES[negotiated].batching:
        return None
    return Refusal(ErrorCode.INVALID_REQUEST,
                   f"Invalid Request: batches are not supported in revision {shown}")


def unsupported_version(requested: object, supported: list[str]) -> Refusal:
    """-32022 naming the versions the server speaks (``basic/versioning.mdx``: the error's
    ``data`` carries ``supported`` and ``requested``)."""
    return Refusal(ErrorCode.UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                   {"supported": supported, "requested": requested})


# -- the admission rows: each takes (the _meta's protocol version, its client capabilities,
# -- the versions we support) and returns a refusal or None ----------------------------------


def _envelope(version: Any, capabilities: Any, supported: tuple[str, ...]) -> Refusal | None:
    """``basic/versioning.mdx``: a request without its protocol version (a string) and
    client capabilities (an object) in ``_meta`` is -32602 (HTTP 400)."""
    if isinstance(version, str) and type(capabilities) is dict:
        return None
    return Refusal(ErrorCode.INVALID_PARAMS,
                   f"Invalid params: _meta must carry {META_PROTOCOL_VERSION} and "
                   f"{META_CLIENT_CAPABILITIES}")


def _version(version: Any, capabilities: Any, supported: tuple[str, ...]) -> Refusal | None:
    """``basic/versioning.mdx``: a version the server does not speak is -32022."""
    return None if version in supported else unsupported_version(version, list(supported))


_Row = tuple[str, Callable[[Any, Any, tuple[str, ...]], "Refusal | None"]]

#: The admission rows, in the order they are checked (name, check).
ADMISSION: tuple[_Row, ...] = (
    ("envelope", _envelope),
    ("version", _version),
)

#: The rows a transport checks before its own header rules, leaving the version to the
#: connection (HTTP: ``transports.mdx`` of 2026-07-28 compares the mirrored headers with the
#: body first, so a mismatched version is a header mismatch, -32020).
ENVELOPE_ONLY = ("envelope",)


def admit_stateless(
    params: Mapping[str, Any] | None,
    supported: tuple[str, ...],
    *,
    only: tuple[str, ...] | None = None,
) -> Admitted | Refusal:
    """Admit a stateless-era request, or say why not (the first failing row of
    :data:`ADMISSION`; ``only`` restricts the rows checked, by name)."""
    meta = params.get("_meta") if params else None
    if type(meta) is not dict:
        meta = {}
    version: Any = meta.get(META_PROTOCOL_VERSION)
    capabilities: Any = meta.get(META_CLIENT_CAPABILITIES)
    rows = ADMISSION if only is None else (_SELECTED.get(only) or _rows(only))
    for _name, check in rows:
        refusal = check(version, capabilities, supported)
        if refusal is not None:
            return refusal
    return version, capabilities, meta


def admit_after_envelope(admitted: Admitted, supported: tuple[str, ...]) -> Admitted | Refusal:
    """The rest of :data:`ADMISSION` for a request whose :data:`ENVELOPE_ONLY` rows a
    transport checked already (``admitted``: what :func:`admit_stateless` returned then): the
    rows are not run twice on one request."""
    version, capabilities, _meta = admitted
    for _name, check in _AFTER_ENVELOPE:
        refusal = check(version, capabilities, supported)
        if refusal is not None:
            return refusal
    return admitted


#: The rows selected by each ``only`` a caller passed (callers pass constants: a handful).
_SELECTED: dict[tuple[str, ...], tuple[_Row, ...]] = {}


def _rows(only: tuple[str, ...]) -> tuple[_Row, ...]:
    rows = _SELECTED.get(only)
    if rows is None:
        rows = _SELECTED[only] = tuple(row for row in ADMISSION if row[0] in only)
    return rows


#: The rows :func:`admit_after_envelope` runs, in their order.
_AFTER_ENVELOPE: tuple[_Row, ...] = tuple(row for row in ADMISSION if row[0] not in ENVELOPE_ONLY)
