"""What the client checker's parts share: its output items, its one tool, and
:class:`KitView`, what the parts see of the :class:`~._client_machine.ClientMachine`.

Theory of operation
-------------------
The machine that plays a server to a client under test holds its parts rather than
inheriting them: the kit's own requests to the client and the verdicts on their answers
(:mod:`._client_probes`), the HTTP side -- request heads, resumption, session expiry, the
legacy HTTP+SSE endpoint (:mod:`._client_http`) -- and the stateless era's MRTR, listen
streams and tasks (:mod:`._client_stateless`). Each part reaches the machine through
:class:`KitView`, a protocol, so that no part imports the machine; the machine owns the
session's state (revision, phase, capabilities), its output (:class:`Out` items queued in
its outbox) and its findings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from .._versions import STATELESS_REVISIONS
from ..http._headers import param_headers
from ._findings import Report
from ._schemas import Schemas

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"

#: The kit's one tool: what a client can list and call.
TOOL: dict[str, Any] = {"name": "kit_echo", "description": "Echoes its text argument.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}

#: The tool as listed in the stateless era: its argument is mirrored into a header
#: (``x-mcp-header``, 2026-07-28 basic/transports/streamable-http.mdx, Schema Extension).
STATELESS_TOOL: dict[str, Any] = {**TOOL, "inputSchema": {"type": "object", "properties": {
    "text": {"type": "string", "x-mcp-header": "Text"}}}}
PARAM_HEADERS = param_headers(STATELESS_TOOL["inputSchema"])


@attrs.define
class Out:
    """One thing for the adapter to do: send a message (or raw bytes) on a stream, or drop
    the stream's connection (HTTP)."""

    #: The stream: the key of the client request it answers or relates to (see
    #: :meth:`ClientMachine.stream_key`), or ``"main"`` (stdio; HTTP: the GET stream).
    stream: str
    message: Any = None
    #: Bytes to send instead of a message (hostile output).
    raw: bytes | None = None
    #: The SSE event id (HTTP).
    event_id: str | None = None
    #: The SSE ``retry`` field, milliseconds (HTTP).
    retry: int | None = None
    #: Close the stream after this item (the request is answered).
    end: bool = False
    #: Drop the connection without ending the stream (HTTP resumption check).
    drop: bool = False


def request_key(request_id: Any) -> str:
    """A request id as a stream name and a key of the kit's tables."""
    return json.dumps(request_id)


def stateless_meta(message: Mapping[str, Any]) -> bool:
    """Whether a request carries the 2026-07-28 ``_meta`` envelope of a stateless revision."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and meta.get(META_VERSION) in STATELESS_REVISIONS


class KitView(Protocol):
    """What of the :class:`~._client_machine.ClientMachine` its parts use."""

    steps: list[str]
    client_caps: dict[str, Any]
    sessions: int
    transport: str
    revision: str | None
    schemas: Schemas
    report: Report
    outbox: list[Out]
    extra: list[Any]
    call_timeout: float
    phase: str
    session_id: str | None
    _in_flight: dict[str, str]
    _initialize_key: str | None
    _now: float

    @property
    def era_now(self) -> str: ...

    def finding(self, rule: str, detail: str, *, requirement: str | None = None,
                sent: Any = None, received: Any = None) -> None: ...

    def _emit(self, stream: str, message: Any = None, *, raw: bytes | None = None,
              end: bool = False, retry: int | None = None) -> Out: ...

    def _answer(self, key: str, request_id: Any, result: Any = None,
                error: tuple[int, str] | None = None, data: Any = None) -> None: ...

    def _stream_for(self, key: str | None) -> str: ...

    def _serve(self, key: str, request_id: Any, method: str,
               message: dict[str, Any]) -> None: ...

    def _release_held(self, now: float) -> None: ...
