"""The connection as its feature modules see it: the :class:`Engine` protocol and a batch.

Theory of operation
-------------------
:class:`~mcp_sansio.Connection` keeps the one copy of a connection's state (lifecycle state,
negotiated revision, the inbox, the events, the outbox, the requests in flight, the timers)
and runs the hot path itself: decoding, the request and response paths of the handshake
era, queueing. Every other concern -- timeouts, progress and cancellation
(``_inflight.py``), notifications (``_notifications.py``), 2025-03-26 batches
(``_batches.py``), the stateless era (``_stateless_era.py``), the handshake and the era
probe (``_lifecycle.py``) -- is a module of functions that take the connection as their
first argument and read and write it through :class:`Engine`, the part of it they may use.

So the feature modules never import the connection's module (no import cycle), hold no
state of their own (the state lives once, on the connection; the long-lived sub-states --
``_listen.py``, ``_mrtr.py``, ``_timers.py``, ``_pending.py`` -- are objects it owns), and
add nothing per connection: a server holds one connection per session, and a stateless
HTTP request builds one. The type checker holds the connection to the protocol wherever it
passes itself. :class:`Batch` is the one record they share: the replies to one incoming
batch, which the queueing path and the batch path both touch.
"""

from __future__ import annotations

from typing import Any, Protocol

from ._events import CloseReason, Event, RequestId
from ._keyring import KeyRing
from ._listen import ListenStreams
from ._mrtr import InputRetries
from ._pending import Incoming, Outgoing, RecentIds
from ._state import Input, Role, State
from ._timers import TimerTable

__all__ = ["DEFAULT", "Batch", "Engine", "OutgoingMessage"]

#: "Use the connection's default" for the per-request options (``timeout=``, ``max_total=``).
DEFAULT: Any = object()

#: (message, related request id, encoded bytes): one queued outgoing message.
OutgoingMessage = tuple[Any, RequestId | None, bytes]


class Batch:
    """Replies to one incoming 2025-03-26 batch, sent together as one array when the last
    request in it has been answered (JSON-RPC 2.0 section 6)."""

    __slots__ = ("open", "replies", "waiting")

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.waiting = 0  # requests delivered to the application and not yet answered
        self.open = True  # still being processed


class Engine(Protocol):
    """What the feature modules read and write of a connection (see the module notes)."""

    # Configuration and what was negotiated (public attributes of the connection).
    info: dict[str, Any]
    capabilities: dict[str, Any]
    versions: tuple[str, ...]
    strict_capabilities: bool
    max_incoming_requests: int
    max_message_size: int
    protocol_version: str | None
    peer_capabilities: dict[str, Any]
    peer_info: dict[str, Any]
    instructions: str | None
    discovery: dict[str, Any] | None
    close_reason: CloseReason | None
    subscriptions: frozenset[str]
    log_level: str | None
    sessionless: bool
    server_instructions: str | None
    request_state_key: bytes | KeyRing | None
    request_state_principal: str | None
    request_state_skew: float
    cache_ttl_ms: int
    cache_scope: str

    # The state the engine keeps.
    _state: State
    _now: float
    _wall_now: float | None
    _events: list[Event]
    _outbox: list[OutgoingMessage]
    _incoming: dict[RequestId, Incoming]
    _outgoing: dict[RequestId, Outgoing]
    _progress_tokens: dict[str | int, RequestId]
    _ended_outgoing: RecentIds
    _cancelled_incoming: RecentIds
    _timers: TimerTable
    _listens: ListenStreams
    _retries: InputRetries
    _handshake_versions: tuple[str, ...]
    _stateless_versions: tuple[str, ...]
    _newest_stateless: str | None
    _no_fallback: bool

    @property
    def role(self) -> Role: ...

    @property
    def _peer_role(self) -> Role: ...

    @property
    def revision(self) -> str: ...

    def _answerable(self, request_id: RequestId) -> Incoming | None: ...

    def send_notification(self, method: str, params: dict[str, Any] | None = None) -> None: ...

    def send_response(self, request_id: RequestId, result: dict[str, Any]) -> None: ...

    def send_error(self, request_id: RequestId, code: int, message: str,
                   data: Any = None) -> None: ...

    def send_request(self, method: str, params: dict[str, Any] | None = None, *,
                     now: float | None = None, timeout: Any = DEFAULT,
                     max_total: Any = DEFAULT) -> RequestId: ...

    def _clock(self, now: float | None, wall_now: float | None = None) -> float: ...

    def _advance(self, inp: Input) -> None: ...

    def _encode(self, message: Any) -> bytes: ...

    def _end_outgoing(self, request_id: RequestId, record: Outgoing) -> None: ...

    def _drop_input(self) -> None: ...

    def _handle(self, obj: Any, batch: Batch | None) -> None: ...

    def _queue_reply(
        self, batch: Batch | None, message: dict[str, Any], request_id: RequestId | None,
        data: bytes | None = None, *, from_application: bool = False,
    ) -> None: ...

    def _reply_error(
        self, batch: Batch | None, request_id: RequestId | None, code: int, reason: str,
        method: str | None = None, data: Any = None,
    ) -> None: ...

    def _report(self, code: int, reason: str, request_id: RequestId | None = None,
                method: str | None = None) -> None: ...
