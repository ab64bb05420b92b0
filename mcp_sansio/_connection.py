"""The engine: one MCP connection, for one role, with no I/O.

Theory of operation
-------------------
Input methods (``receive_data``, ``receive_message``, ``receive_eof``) only *store* input:
bytes are cut into lines at once (cheap, no protocol decision) and queued in an inbox.
``next_event()`` takes one item from the inbox, applies every rule to it -- envelope, method
table, lifecycle table, capability gating, request bookkeeping -- and returns the events it
produced one at a time. So state changes when the caller asks for the next event, never ahead
of it (as in h11).

Every rule that depends on the revision, role or state is looked up in a table:
``_state.TRANSITIONS`` (lifecycle), ``_capabilities.METHODS`` (direction, existence,
gating) and ``_versions.FEATURES`` (per-revision features). This module only wires them.

Everything to send -- the application's messages and the core's own (ping replies, error
replies, cancellations after a timeout, ``notifications/initialized``) -- goes into one outbox,
encoded at the moment it is queued so that a value that cannot be written as JSON fails the
``send_*`` call that tried, with nothing queued. Drain it with ``data_to_send()`` (stdio
bytes) or ``messages_to_send()`` (one message at a time, with the id of the request each
relates to, for HTTP routing).

Time is an argument: each input method takes ``now`` (seconds on the caller's monotonic
clock); the core keeps the largest value seen, so time never runs backwards.

Call order contract: after any input (``receive_*``, ``send_*``, ``cancel``,
``handle_timeout``), drain ``next_event()`` until it returns ``NEED_DATA``, then drain the
outbox, then re-read ``next_deadline()``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, cast

from . import _codec
from ._capabilities import ALL_METHODS, Kind, lookup, missing_capability
from ._codec import InvalidMessage, MessageKind
from ._errors import NEED_DATA, ErrorCode, LocalProtocolError, NeedData
from ._events import (
    CancelRequested,
    CloseReason,
    ConnectionClosed,
    ErrorResponse,
    Event,
    Initialized,
    LateResponse,
    MessageRejected,
    Notification,
    Progress,
    Request,
    RequestAborted,
    RequestCancelled,
    RequestId,
    RequestTimedOut,
    Response,
    UnexpectedResponse,
)
from ._framing.ndjson import DEFAULT_MAX_LINE, OVERSIZED, LineSplitter
from ._json import EncodeError
from ._pending import Incoming, Outgoing, RecentIds
from ._state import (
    NOT_INITIALIZED_CODE,
    Input,
    Role,
    State,
    Verdict,
    classify_notification,
    classify_request,
    transition,
)
from ._timers import TimerKind, TimerTable
from ._versions import FEATURES, HANDSHAKE_REVISIONS, negotiate_server_version, newest

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT",
    "LOG_LEVELS",
    "ClientConnection",
    "Connection",
    "OutgoingMessage",
    "ServerConnection",
]

#: Default idle timeout for a request we send, in seconds. Sixty seconds is what the official
#: SDKs use; long enough for a slow tool, short enough that a lost reply is noticed.
#: ``None`` disables it. Progress can reset it per request (``progress_resets_timeout``).
DEFAULT_REQUEST_TIMEOUT: float | None = 60.0

#: Syslog severities, lowest first (``server/utilities/logging.mdx``, every revision).
LOG_LEVELS: tuple[str, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
)
_LOG_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}

_DEFAULT = object()  # "use the connection's default" for per-request options


class _Eof:
    __slots__ = ()


_EOF = _Eof()

#: (message, related request id, encoded bytes): one queued outgoing message.
OutgoingMessage = tuple[Any, RequestId | None, bytes]


class _Batch:
    """Replies to one incoming 2025-03-26 batch, sent together as one array when the last
    request in it has been answered (JSON-RPC 2.0 section 6)."""

    __slots__ = ("open", "replies", "waiting")

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.waiting = 0  # requests delivered to the application and not yet answered
        self.open = True  # still being processed


def _number(value: object) -> bool:
    return (type(value) is int or type(value) is float) and math.isfinite(value)


class Connection:
    """The shared engine of :class:`ClientConnection` and :class:`ServerConnection`.

    :param info: our ``Implementation`` object (``clientInfo``/``serverInfo``):
        at least ``name`` and ``version``.
    :param capabilities: the capabilities we declare.
    :param versions: the protocol revisions we accept (default: every handshake-era one).
    :param request_timeout: default idle timeout for requests we send (seconds, or None).
    :param max_request_time: default hard maximum for requests we send (never extended by
        progress), or None.
    :param progress_resets_timeout: default for whether progress restarts the idle timer.
    :param strict_capabilities: refuse to send requests the peer's capabilities do not allow.
        Relax it (False) only to talk to peers that forget to declare what they support.
    :param max_message_size: the largest message accepted, in bytes (see
        :data:`~mcp_sansio._framing.ndjson.DEFAULT_MAX_LINE`).
    :param max_depth: the deepest JSON nesting accepted (see
        :data:`~mcp_sansio._codec.DEFAULT_MAX_DEPTH`).
    """

    role: Role

    def __init__(
        self,
        *,
        info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        versions: Iterable[str] | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        max_request_time: float | None = None,
        progress_resets_timeout: bool = True,
        strict_capabilities: bool = True,
        max_message_size: int = DEFAULT_MAX_LINE,
        max_depth: int = _codec.DEFAULT_MAX_DEPTH,
    ) -> None:
        self.info: dict[str, Any] = dict(info or {"name": "mcp-sansio", "version": "0"})
        self.capabilities: dict[str, Any] = dict(capabilities or {})
        supported = tuple(versions) if versions is not None else HANDSHAKE_REVISIONS
        handshake = tuple(v for v in supported if v in FEATURES and FEATURES[v].handshake)
        if not handshake:
            raise ValueError("at least one handshake-era revision is required")
        self.versions: tuple[str, ...] = supported
        self._handshake_versions = handshake
        self.request_timeout = request_timeout
        self.max_request_time = max_request_time
        self.progress_resets_timeout = progress_resets_timeout
        self.strict_capabilities = strict_capabilities
        self.max_message_size = max_message_size
        self.max_depth = max_depth

        self._state = State.IDLE
        self._peer_role = Role.SERVER if self.role is Role.CLIENT else Role.CLIENT
        #: The negotiated revision (None until negotiated).
        self.protocol_version: str | None = None
        #: The peer's declared capabilities, its Implementation object, and (for a client)
        #: the server's instructions.
        self.peer_capabilities: dict[str, Any] = {}
        self.peer_info: dict[str, Any] = {}
        self.instructions: str | None = None
        #: Why the connection closed (None while open).
        self.close_reason: CloseReason | None = None

        self._now = -math.inf
        self._splitter = LineSplitter(max_message_size)
        self._inbox: deque[Any] = deque()
        self._events: deque[Event] = deque()
        self._outbox: list[OutgoingMessage] = []
        self._next_id = 1
        self._outgoing: dict[RequestId, Outgoing] = {}
        self._incoming: dict[RequestId, Incoming] = {}
        self._progress_tokens: dict[str | int, RequestId] = {}
        self._ended_outgoing = RecentIds()  # timed out / cancelled by us
        self._cancelled_incoming = RecentIds()  # cancelled by the peer
        self._timers = TimerTable()
        #: Resource URIs with an active subscription (resources/subscribe succeeded).
        self.subscriptions: set[str] = set()
        #: The minimum log level the client asked for with logging/setLevel (server side).
        self.log_level: str | None = None

    # -- properties --------------------------------------------------------------------------

    @property
    def state(self) -> State:
        """The lifecycle state (see :mod:`mcp_sansio._state`)."""
        return self._state

    @property
    def pending_requests(self) -> int:
        """How many requests we sent are still waiting for an answer."""
        return len(self._outgoing)

    @property
    def revision(self) -> str:
        """The revision whose tables apply now: the negotiated one, or (before negotiation)
        the newest handshake revision we support."""
        return self.protocol_version or newest(self._handshake_versions)

    # -- time --------------------------------------------------------------------------------

    def _clock(self, now: float | None) -> float:
        if now is not None and now > self._now:
            self._now = float(now)
        return self._now

    def next_deadline(self) -> float | None:
        """The earliest time at which ``handle_timeout`` has something to do, or None."""
        return self._timers.next_deadline()

    def handle_timeout(self, now: float) -> None:
        """Fire every timer that expired at ``now``; does nothing when none has."""
        now = self._clock(now)
        for key, kind in self._timers.pop_expired(now):
            record = self._outgoing.get(key)  # type: ignore[call-overload]
            if record is None:
                continue
            request_id: RequestId = key  # type: ignore[assignment]
            if record.method == "initialize":
                # lifecycle.mdx: the client MUST NOT cancel initialize; close instead.
                self._close(CloseReason.INITIALIZE_TIMEOUT, "initialize was not answered in time")
                return
            self._end_outgoing(request_id, record)
            self._ended_outgoing.add(request_id, record.method)
            reason = "hard time limit reached" if kind is TimerKind.HARD else "timed out"
            self._queue_cancel(request_id, reason)
            self._events.append(
                RequestTimedOut(
                    request_id=request_id,
                    method=record.method,
                    hard_limit=kind is TimerKind.HARD,
                )
            )

    def pause_timeout(self, request_id: RequestId, *, now: float | None = None) -> None:
        """Stop the clock of a request we sent (e.g. while it waits on a human)."""
        now = self._clock(now)
        record = self._require_outgoing(request_id)
        if record.paused is not None:
            return
        idle = self._timers.get(request_id, TimerKind.IDLE)
        hard = self._timers.get(request_id, TimerKind.HARD)
        record.paused = (
            None if idle is None else max(0.0, idle - now),
            None if hard is None else max(0.0, hard - now),
        )
        self._timers.clear(request_id)

    def resume_timeout(self, request_id: RequestId, *, now: float | None = None) -> None:
        """Restart a paused request's clock with the time it had left."""
        now = self._clock(now)
        record = self._require_outgoing(request_id)
        if record.paused is None:
            return
        idle, hard = record.paused
        record.paused = None
        if idle is not None:
            self._timers.set(request_id, TimerKind.IDLE, now + idle)
        if hard is not None:
            self._timers.set(request_id, TimerKind.HARD, now + hard)

    # -- input -------------------------------------------------------------------------------

    def receive_data(self, data: bytes, *, now: float | None = None) -> None:
        """Feed bytes from a newline-delimited stream (stdio). ``b""`` means EOF."""
        self._clock(now)
        if not data:
            self.receive_eof(now=now)
            return
        if self._state is State.CLOSED:
            return
        self._inbox.extend(self._splitter.feed(data))

    def receive_message(self, message: Any, *, now: float | None = None) -> None:
        """Feed one whole message: raw JSON ``bytes`` (an HTTP body, an SSE ``data`` field) or
        an already decoded JSON value (a dict, or a list for a batch)."""
        self._clock(now)
        if self._state is State.CLOSED:
            return
        if isinstance(message, bytes | bytearray | memoryview):
            data = bytes(message)
            self._inbox.append(OVERSIZED if len(data) > self.max_message_size else data)
        else:
            self._inbox.append((message,))

    def receive_eof(self, *, now: float | None = None) -> None:
        """The peer closed its side. Pending requests are aborted; the connection closes."""
        self._clock(now)
        if self._state is State.CLOSED:
            return
        tail = self._splitter.eof()
        if tail is not None:
            self._inbox.append(tail)
        self._inbox.append(_EOF)

    def next_event(self) -> Event | NeedData:
        """The next event, or ``NEED_DATA`` when the input so far has been fully handled."""
        events = self._events
        while not events:
            if not self._inbox:
                return NEED_DATA
            self._process(self._inbox.popleft())
        return events.popleft()

    def events(self) -> list[Event]:
        """Every event available now (a convenience over ``next_event``)."""
        out: list[Event] = []
        while (event := self.next_event()) is not NEED_DATA:
            out.append(event)
        return out

    # -- output ------------------------------------------------------------------------------

    def data_to_send(self) -> bytes:
        """Drain the outbox as newline-delimited JSON (stdio)."""
        if not self._outbox:
            return b""
        out = b"\n".join([entry[2] for entry in self._outbox]) + b"\n"
        self._outbox.clear()
        return out

    def messages_to_send(self) -> list[tuple[Any, RequestId | None]]:
        """Drain the outbox as ``(message, related_request_id)`` pairs (HTTP routing).

        ``related_request_id`` is the id of the request a message belongs to: a response's
        own id, a progress notification's request, a request the application sent on behalf
        of an incoming one; None for unrelated messages.
        """
        out = [(entry[0], entry[1]) for entry in self._outbox]
        self._outbox.clear()
        return out

    def encoded_messages_to_send(self) -> list[OutgoingMessage]:
        """Drain the outbox as ``(message, related_request_id, json_bytes)`` triples."""
        out = self._outbox
        self._outbox = []
        return out

    def send(self, event: Event) -> RequestId | None:
        """Send a symmetric event (:class:`Request`, :class:`Notification`,
        :class:`Response` or :class:`ErrorResponse`), e.g. one received from another
        connection. Returns the new id for a request (ids belong to the connection)."""
        if isinstance(event, Request):
            return self.send_request(event.method, event.params)
        if isinstance(event, Notification):
            self.send_notification(event.method, event.params)
        elif isinstance(event, Response):
            self.send_response(event.request_id, event.result)
        elif isinstance(event, ErrorResponse):
            if event.request_id is None:
                raise LocalProtocolError("an error response to send needs a request id")
            self.send_error(event.request_id, event.code, event.message, event.data)
        else:
            raise LocalProtocolError(f"{type(event).__name__} is not an event that can be sent")
        return None

    def send_request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        now: float | None = None,
        timeout: Any = _DEFAULT,
        max_total: Any = _DEFAULT,
        progress: bool = False,
        progress_resets_timeout: bool | None = None,
        related_request_id: RequestId | None = None,
    ) -> RequestId:
        """Queue a request; return its id.

        :param timeout: idle timeout in seconds (None: none); default ``request_timeout``.
        :param max_total: hard maximum in seconds that progress never extends (None: none);
            default ``max_request_time``.
        :param progress: ask for progress notifications (adds ``_meta.progressToken``).
        :param related_request_id: the incoming request this one is sent on behalf of.
        :raises LocalProtocolError: the method, lifecycle or capabilities forbid it.
        """
        now = self._clock(now)
        inp = classify_request(method, sending=True)
        self._check_send(inp, method, Kind.REQUEST, params)
        if method == "initialize" and progress:
            raise LocalProtocolError("initialize cannot carry a progress token")
        request_id = self._next_id
        body = dict(params) if params is not None else None
        token: str | int | None = None
        if progress:
            body = dict(body or {})
            meta = dict(body.get("_meta") or {})
            token = meta.setdefault("progressToken", request_id)
            if isinstance(token, bool) or not isinstance(token, str | int):
                raise LocalProtocolError("_meta.progressToken must be a string or an integer")
            if token in self._progress_tokens:
                raise LocalProtocolError(f"progress token {token!r} is already in use")
            body["_meta"] = meta
        message = _codec.request_message(request_id, method, body)
        data = self._encode(message)
        # Committed from here on: nothing below can fail.
        self._next_id += 1
        idle = self.request_timeout if timeout is _DEFAULT else timeout
        hard = self.max_request_time if max_total is _DEFAULT else max_total
        resets = (
            self.progress_resets_timeout
            if progress_resets_timeout is None
            else progress_resets_timeout
        )
        subject = _subject(method, body)
        self._outgoing[request_id] = Outgoing(method, idle, token, resets, subject,
                                              related_request_id)
        if token is not None:
            self._progress_tokens[token] = request_id
        if idle is not None:
            self._timers.set(request_id, TimerKind.IDLE, now + idle)
        if hard is not None:
            self._timers.set(request_id, TimerKind.HARD, now + hard)
        self._advance(inp)
        self._outbox.append((message, related_request_id or request_id, data))
        return request_id

    def send_notification(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        related_request_id: RequestId | None = None,
    ) -> None:
        """Queue a notification.

        ``notifications/message`` below the level the client set with ``logging/setLevel`` is
        dropped quietly (``server/utilities/logging.mdx``).
        """
        inp = classify_notification(method, sending=True)
        self._check_send(inp, method, Kind.NOTIFICATION, params)
        body = dict(params) if params is not None else None
        if method == "notifications/message" and not self._log_wanted(body):
            return
        if method == "notifications/resources/updated":
            uri = (body or {}).get("uri")
            if uri not in self.subscriptions:
                raise LocalProtocolError(
                    f"the client has not subscribed to {uri!r}", code=ErrorCode.INVALID_PARAMS
                )
        message = _codec.notification_message(method, body)
        self._outbox.append((message, related_request_id, self._encode(message)))
        self._advance(inp)

    def send_response(self, request_id: RequestId, result: Mapping[str, Any]) -> None:
        """Answer a request the peer sent us with a result.

        A response for a request the peer has cancelled is dropped quietly (races are
        normal); answering twice, or an id never received, raises ``LocalProtocolError``.
        """
        if not isinstance(result, Mapping):
            raise LocalProtocolError("a result must be a mapping (JSON object)")
        record = self._answerable(request_id)
        if record is None:
            return
        message = _codec.result_message(request_id, dict(result))
        data = self._encode(message)
        del self._incoming[request_id]
        if record.subject is not None:
            if record.method == "resources/subscribe":
                self.subscriptions.add(record.subject)
            elif record.method == "resources/unsubscribe":
                self.subscriptions.discard(record.subject)
        self._queue_reply(record.batch, message, request_id, data, from_application=True)

    def send_error(
        self, request_id: RequestId, code: int, message: str, data: Any = None
    ) -> None:
        """Answer a request the peer sent us with an error."""
        if isinstance(code, bool) or not isinstance(code, int):
            raise LocalProtocolError("an error code must be an integer")
        if not isinstance(message, str):
            raise LocalProtocolError("an error message must be a string")
        record = self._answerable(request_id)
        if record is None:
            return
        wire = _codec.error_message(request_id, code, message, data)
        encoded = self._encode(wire)
        del self._incoming[request_id]
        self._queue_reply(record.batch, wire, request_id, encoded, from_application=True)

    def send_progress(
        self,
        request_id: RequestId,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> None:
        """Report progress on a request the peer sent us, with the token it gave.

        ``message`` is left out in 2024-11-05, which does not define it.

        :raises LocalProtocolError: no token was given, the request is finished, or
            ``progress`` does not increase.
        """
        if self._state is State.CLOSED:
            raise LocalProtocolError("the connection is closed")
        record = self._incoming.get(request_id)
        if record is None:
            if request_id in self._cancelled_incoming:
                return  # cancelled by the peer: nothing more goes out for it
            raise LocalProtocolError(f"no request {request_id!r} is in progress")
        if record.progress_token is None:
            raise LocalProtocolError(f"request {request_id!r} did not ask for progress")
        if not _number(progress) or (total is not None and not _number(total)):
            raise LocalProtocolError("progress and total must be finite numbers")
        if record.last_progress is not None and progress <= record.last_progress:
            raise LocalProtocolError(
                f"progress must increase (last {record.last_progress}, now {progress})"
            )
        params: dict[str, Any] = {"progressToken": record.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and FEATURES[self.revision].progress_message:
            params["message"] = message
        wire = _codec.notification_message("notifications/progress", params)
        self._outbox.append((wire, request_id, self._encode(wire)))
        record.last_progress = progress

    def cancel(
        self, request_id: RequestId, reason: str | None = None, *, now: float | None = None
    ) -> None:
        """Cancel a request we sent: queue ``notifications/cancelled`` and end it with a
        :class:`RequestCancelled` event. A reply that still arrives becomes a
        :class:`LateResponse`. ``initialize`` cannot be cancelled (lifecycle.mdx)."""
        self._clock(now)
        if self._state is State.CLOSED:
            raise LocalProtocolError("the connection is closed")
        record = self._require_outgoing(request_id)
        if record.method == "initialize":
            raise LocalProtocolError("initialize cannot be cancelled (lifecycle.mdx)")
        self._end_outgoing(request_id, record)
        self._ended_outgoing.add(request_id, record.method)
        self._queue_cancel(request_id, reason)
        self._events.append(
            RequestCancelled(request_id=request_id, method=record.method, reason=reason)
        )

    def close(self, *, now: float | None = None) -> None:
        """Close the connection locally: pending requests are aborted with events."""
        self._clock(now)
        if self._state is not State.CLOSED:
            self._close(CloseReason.LOCAL, "closed by the application")

    # -- send-side checks ----------------------------------------------------------------------

    def _check_send(
        self, inp: Input, method: str, kind: Kind, params: Mapping[str, Any] | None
    ) -> None:
        if params is not None and not isinstance(params, Mapping):
            raise LocalProtocolError("params must be a mapping (JSON object)")
        if self._state is State.CLOSED:
            raise LocalProtocolError("the connection is closed")
        revision = self.revision
        rule = lookup(method, revision)
        if rule is None:
            if method in ALL_METHODS:
                raise LocalProtocolError(
                    f"{method} does not exist in revision {revision}",
                    code=ErrorCode.METHOD_NOT_FOUND,
                )
            # A method no revision defines: an extension, the application's business.
        elif rule.kind is not kind or not rule.sender.allows(self.role):
            raise LocalProtocolError(
                f"a {self.role.value} does not send {method} as a {kind.value}",
                code=ErrorCode.METHOD_NOT_FOUND,
            )
        verdict, _ = transition(self.role, self._state, inp)
        if verdict is not Verdict.ALLOW:
            raise LocalProtocolError(_refusal(inp, self._state))
        if rule is not None and self._state is State.OPERATING:
            if rule.gated_by_receiver:
                if self.strict_capabilities:
                    missing = missing_capability(rule, revision, params, self.peer_capabilities)
                    if missing is not None:
                        raise LocalProtocolError(
                            f"{method} needs the peer's {missing!r} capability, "
                            "which it did not declare",
                            code=ErrorCode.METHOD_NOT_FOUND,
                        )
            else:
                missing = missing_capability(rule, revision, params, self.capabilities)
                if missing is not None:
                    raise LocalProtocolError(
                        f"{method} needs our own {missing!r} capability, which we did not "
                        "declare",
                        code=ErrorCode.METHOD_NOT_FOUND,
                    )

    def _advance(self, inp: Input) -> None:
        self._state = transition(self.role, self._state, inp)[1]

    def _encode(self, message: Any) -> bytes:
        try:
            return _codec.encode(message)
        except EncodeError as exc:
            raise LocalProtocolError(f"cannot encode the message as JSON: {exc}") from None

    def _answerable(self, request_id: RequestId) -> Incoming | None:
        if self._state is State.CLOSED:
            raise LocalProtocolError("the connection is closed")
        record = self._incoming.get(request_id)
        if record is None:
            if self._cancelled_incoming.pop(request_id) is not None:
                return None  # the peer cancelled it: drop the answer quietly
            raise LocalProtocolError(
                f"no request with id {request_id!r} is waiting for an answer "
                "(never received, or already answered)"
            )
        return record

    def _require_outgoing(self, request_id: RequestId) -> Outgoing:
        record = self._outgoing.get(request_id)
        if record is None:
            raise LocalProtocolError(f"no request {request_id!r} of ours is in flight")
        return record

    def _log_wanted(self, params: Mapping[str, Any] | None) -> bool:
        if self.log_level is None:
            return True
        level = (params or {}).get("level")
        rank = _LOG_RANK.get(level) if isinstance(level, str) else None
        return rank is None or rank >= _LOG_RANK[self.log_level]

    # -- queueing ----------------------------------------------------------------------------

    def _queue_reply(
        self, batch: _Batch | None, message: dict[str, Any], request_id: RequestId | None,
        data: bytes | None = None, *, from_application: bool = False,
    ) -> None:
        """Queue a reply, or hold it for its batch's reply array. ``from_application`` marks
        the answer to a request that was delivered as an event (the batch waits for those)."""
        if batch is not None:
            batch.replies.append(message)
            self._flush_batch(batch, answered=from_application)
            return
        self._outbox.append((message, request_id, data or _codec.encode(message)))

    def _flush_batch(self, batch: _Batch, *, answered: bool) -> None:
        if answered:
            batch.waiting -= 1
        if not batch.open and batch.waiting == 0 and batch.replies:
            replies, batch.replies = batch.replies, []
            self._outbox.append((replies, None, _codec.encode(replies)))

    def _queue_cancel(self, request_id: RequestId, reason: str | None) -> None:
        params: dict[str, Any] = {"requestId": request_id}
        if reason is not None:
            params["reason"] = reason
        message = _codec.notification_message("notifications/cancelled", params)
        self._outbox.append((message, request_id, _codec.encode(message)))

    def _reply_error(
        self, batch: _Batch | None, request_id: RequestId | None, code: int, reason: str,
        method: str | None = None, data: Any = None,
    ) -> None:
        """Answer a request the core refused on its own, and report it."""
        self._queue_reply(batch, _codec.error_message(request_id, code, reason, data), request_id)
        self._events.append(
            MessageRejected(code=code, reason=reason, request_id=request_id, method=method,
                            replied=True)
        )

    def _report(
        self, code: int, reason: str, request_id: RequestId | None = None,
        method: str | None = None,
    ) -> None:
        """Report a refused notification or response (never answered)."""
        self._events.append(
            MessageRejected(code=code, reason=reason, request_id=request_id, method=method)
        )

    # -- processing one input item ----------------------------------------------------------

    def _process(self, item: Any) -> None:
        if self._state is State.CLOSED:
            self._inbox.clear()
            return
        if item is _EOF:
            self._close(CloseReason.EOF, "the peer closed the connection")
            return
        if item is OVERSIZED:
            self._reply_error(
                None, None, ErrorCode.INVALID_REQUEST,
                f"Invalid Request: message larger than {self.max_message_size} bytes",
            )
            return
        if type(item) is tuple:
            value = item[0]
        else:
            try:
                value = _codec.decode(item, self.max_depth)
            except InvalidMessage as exc:
                self._reply_error(None, None, exc.code, exc.message)
                return
        if type(value) is list:
            self._process_batch(value)
        else:
            self._handle(value, None)

    def _process_batch(self, items: list[Any]) -> None:
        # JSON-RPC 2.0 section 6; MCP allows batches only in 2025-03-26 (changelog.mdx), and
        # never with initialize in them.
        if self.protocol_version is None or not FEATURES[self.protocol_version].batching:
            self._reply_error(
                None, None, ErrorCode.INVALID_REQUEST,
                f"Invalid Request: batches are not supported in revision {self.revision}",
            )
            return
        if not items:
            self._reply_error(None, None, ErrorCode.INVALID_REQUEST,
                              "Invalid Request: empty batch")
            return
        batch = _Batch()
        for item in items:
            if type(item) is dict and item.get("method") == "initialize":
                self._reply_error(
                    batch, item.get("id") if _codec._is_id(item.get("id")) else None,
                    ErrorCode.INVALID_REQUEST,
                    "Invalid Request: initialize must not be part of a batch", "initialize",
                )
                continue
            if self._state is State.CLOSED:
                break
            self._handle(item, batch)
        batch.open = False
        self._flush_batch(batch, answered=False)

    def _handle(self, obj: Any, batch: _Batch | None) -> None:
        try:
            kind, msg_id, method, payload = _codec.parse(obj)
        except InvalidMessage as exc:
            if exc.reply:
                self._reply_error(batch, exc.request_id, exc.code, exc.message, exc.method)
            else:
                self._report(exc.code, exc.message, exc.request_id, exc.method)
            return
        if kind is MessageKind.REQUEST:
            self._on_request(msg_id, method, payload, batch)  # type: ignore[arg-type]
        elif kind is MessageKind.NOTIFICATION:
            self._on_notification(method, payload)  # type: ignore[arg-type]
        else:
            self._on_response(kind, msg_id, payload)

    def _on_request(
        self, request_id: RequestId, method: str, params: dict[str, Any] | None,
        batch: _Batch | None,
    ) -> None:
        if request_id in self._incoming:
            self._reply_error(
                batch, request_id, ErrorCode.INVALID_REQUEST,
                f"Invalid Request: id {request_id!r} is already in use by a request in flight",
                method,
            )
            return
        revision = self.revision
        rule = lookup(method, revision)
        if rule is None or rule.kind is not Kind.REQUEST or not rule.sender.allows(
            self._peer_role
        ):
            self._reply_error(batch, request_id, ErrorCode.METHOD_NOT_FOUND,
                              f"Method not found: {method}", method)
            return
        inp = classify_request(method, sending=False)
        verdict, next_state = transition(self.role, self._state, inp)
        if verdict is not Verdict.ALLOW:
            self._reply_error(batch, request_id, NOT_INITIALIZED_CODE,
                              _refusal(inp, self._state), method)
            return
        missing = missing_capability(rule, revision, params, self.capabilities)
        if missing is not None:
            self._reply_error(
                batch, request_id, ErrorCode.METHOD_NOT_FOUND,
                f"Method not found: {method} needs the {missing!r} capability, "
                "which was not declared",
                method,
            )
            return
        if method == "ping":
            # ping.mdx: the receiver MUST respond promptly with an empty result.
            self._queue_reply(batch, _codec.result_message(request_id, {}), request_id)
            return
        if method == "initialize":
            self._on_initialize(request_id, params or {}, next_state, batch)
            return
        if method == "logging/setLevel":
            self._on_set_level(request_id, params or {}, batch)
            return
        meta = (params or {}).get("_meta")
        token = meta.get("progressToken") if type(meta) is dict else None
        if isinstance(token, bool) or not isinstance(token, str | int):
            token = None
        self._incoming[request_id] = Incoming(method, token, _subject(method, params), batch)
        if batch is not None:
            batch.waiting += 1
        self._events.append(Request(request_id=request_id, method=method, params=params))

    def _on_set_level(
        self, request_id: RequestId, params: dict[str, Any], batch: _Batch | None
    ) -> None:
        # server/utilities/logging.mdx: an invalid level is -32602.
        level = params.get("level")
        if level not in _LOG_RANK:
            self._reply_error(batch, request_id, ErrorCode.INVALID_PARAMS,
                              f"Invalid params: unknown log level {level!r}",
                              "logging/setLevel")
            return
        self.log_level = level
        self._queue_reply(batch, _codec.result_message(request_id, {}), request_id)

    def _on_notification(self, method: str, params: dict[str, Any] | None) -> None:
        revision = self.revision
        rule = lookup(method, revision)
        if rule is None:
            if method in ALL_METHODS:
                self._report(ErrorCode.METHOD_NOT_FOUND,
                             f"{method} does not exist in revision {revision}", None, method)
            else:  # unknown to every revision (e.g. notifications/closed): the app's call
                self._deliver_unknown_notification(method, params)
            return
        if rule.kind is not Kind.NOTIFICATION or not rule.sender.allows(self._peer_role):
            self._report(ErrorCode.METHOD_NOT_FOUND,
                         f"a {self._peer_role.value} does not send {method}", None, method)
            return
        inp = classify_notification(method, sending=False)
        verdict, next_state = transition(self.role, self._state, inp)
        if verdict is not Verdict.ALLOW:
            self._report(NOT_INITIALIZED_CODE, _refusal(inp, self._state), None, method)
            return
        if self._state is State.OPERATING:
            missing = missing_capability(rule, revision, params, self.peer_capabilities)
            if missing is not None:
                self._report(ErrorCode.METHOD_NOT_FOUND,
                             f"{method} needs the {missing!r} capability, which the peer did "
                             "not declare", None, method)
                return
        if method == "notifications/initialized":
            self._state = next_state
            self._events.append(
                Initialized(
                    protocol_version=self.revision,
                    peer_capabilities=self.peer_capabilities,
                    peer_info=self.peer_info,
                )
            )
        elif method == "notifications/cancelled":
            self._on_cancelled(params or {})
        elif method == "notifications/progress":
            self._on_progress(params or {})
        elif method == "notifications/resources/updated" and (
            (params or {}).get("uri") not in self.subscriptions
        ):
            self._report(ErrorCode.INVALID_PARAMS,
                         "resources/updated for a URI we did not subscribe to", None, method)
        else:
            self._events.append(Notification(method=method, params=params))

    def _deliver_unknown_notification(self, method: str, params: dict[str, Any] | None) -> None:
        verdict, _ = transition(self.role, self._state, Input.RECV_NOTIFICATION)
        if verdict is Verdict.ALLOW:
            self._events.append(Notification(method=method, params=params))
        else:
            self._report(NOT_INITIALIZED_CODE,
                         _refusal(Input.RECV_NOTIFICATION, self._state), None, method)

    def _on_cancelled(self, params: dict[str, Any]) -> None:
        # cancellation.mdx: unknown, finished or uncancellable ids SHOULD be ignored.
        request_id = params.get("requestId")
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return
        record = self._incoming.pop(request_id, None)
        if record is None:
            return
        self._cancelled_incoming.add(request_id, record.method)
        if record.batch is not None:
            self._flush_batch(record.batch, answered=True)
        reason = params.get("reason")
        self._events.append(
            CancelRequested(
                request_id=request_id,
                method=record.method,
                reason=reason if isinstance(reason, str) else None,
            )
        )

    def _on_progress(self, params: dict[str, Any]) -> None:
        token = params.get("progressToken")
        progress = params.get("progress")
        request_id = (
            self._progress_tokens.get(token)
            if not isinstance(token, bool) and isinstance(token, str | int)
            else None
        )
        record = self._outgoing.get(request_id) if request_id is not None else None
        if record is None or request_id is None:
            self._report(ErrorCode.INVALID_PARAMS,
                         f"progress for unknown token {token!r}", None, "notifications/progress")
            return
        total = params.get("total")
        message = params.get("message")
        if (
            isinstance(progress, bool)
            or not isinstance(progress, int | float)
            or not _number(progress)
            or (total is not None and not _number(total))
        ):
            self._report(ErrorCode.INVALID_PARAMS, "progress and total must be numbers",
                         request_id, "notifications/progress")
            return
        if record.last_progress is not None and progress <= record.last_progress:
            # progress.mdx: "The progress value MUST increase with each notification".
            self._report(ErrorCode.INVALID_PARAMS,
                         f"progress did not increase ({record.last_progress} -> {progress})",
                         request_id, "notifications/progress")
            return
        record.last_progress = progress
        if record.progress_resets and record.timeout is not None and record.paused is None:
            self._timers.set(request_id, TimerKind.IDLE, self._now + record.timeout)
        self._events.append(
            Progress(
                request_id=request_id,
                token=token,  # type: ignore[arg-type]
                progress=progress,
                total=total,
                message=message if isinstance(message, str) else None,
            )
        )

    def _on_response(self, kind: MessageKind, request_id: RequestId | None, payload: Any) -> None:
        is_result = kind is MessageKind.RESULT
        record = self._outgoing.get(request_id) if request_id is not None else None
        if record is None or request_id is None:
            method = self._ended_outgoing.pop(request_id) if request_id is not None else None
            if method is not None and request_id is not None:
                self._events.append(
                    LateResponse(
                        request_id=request_id, method=method,
                        result=payload if is_result else None,
                        error=None if is_result else payload,
                    )
                )
            else:
                self._events.append(
                    UnexpectedResponse(
                        request_id=request_id,
                        result=payload if is_result else None,
                        error=None if is_result else payload,
                    )
                )
            return
        if record.method == "initialize":
            inp = Input.RECV_INITIALIZE_RESULT if is_result else Input.RECV_INITIALIZE_ERROR
        else:
            inp = Input.RECV_RESPONSE
        verdict, _ = transition(self.role, self._state, inp)
        if verdict is not Verdict.ALLOW:  # pragma: no cover - responses are allowed when open
            self._report(ErrorCode.INVALID_REQUEST, _refusal(inp, self._state), request_id)
            return
        self._end_outgoing(request_id, record)
        if record.method == "initialize":
            self._on_initialize_response(is_result, payload)
            return
        if is_result:
            if record.subject is not None:
                if record.method == "resources/subscribe":
                    self.subscriptions.add(record.subject)
                elif record.method == "resources/unsubscribe":
                    self.subscriptions.discard(record.subject)
            self._events.append(
                Response(request_id=request_id, result=payload, method=record.method)
            )
        else:
            self._events.append(
                ErrorResponse(
                    request_id=request_id,
                    code=payload["code"],
                    message=payload["message"],
                    data=payload.get("data"),
                    method=record.method,
                )
            )

    def _end_outgoing(self, request_id: RequestId, record: Outgoing) -> None:
        del self._outgoing[request_id]
        self._timers.clear(request_id)
        if record.progress_token is not None:
            self._progress_tokens.pop(record.progress_token, None)

    def _close(self, reason: CloseReason, detail: str) -> None:
        """Close for good: abort every pending request (one event each), then report."""
        self._state = State.CLOSED
        self.close_reason = reason
        for request_id, record in list(self._outgoing.items()):
            self._end_outgoing(request_id, record)
            if record.method != "initialize":  # initialize ends with ConnectionClosed itself
                self._events.append(
                    RequestAborted(request_id=request_id, method=record.method, reason=reason)
                )
        self._incoming.clear()
        self._inbox.clear()
        self._events.append(ConnectionClosed(reason=reason, detail=detail))

    # -- the handshake (role-specific halves are in the subclasses) --------------------------

    def _on_initialize(
        self, request_id: RequestId, params: dict[str, Any], next_state: State,
        batch: _Batch | None,
    ) -> None:  # pragma: no cover - only a server receives initialize (method table)
        raise AssertionError("unreachable")

    def _on_initialize_response(self, is_result: bool, payload: dict[str, Any]) -> None:
        raise AssertionError("unreachable")  # pragma: no cover - only a client sends initialize


def _subject(method: str, params: Mapping[str, Any] | None) -> str | None:
    if method in ("resources/subscribe", "resources/unsubscribe") and params is not None:
        uri = params.get("uri")
        return uri if isinstance(uri, str) else None
    return None


def _refusal(inp: Input, state: State) -> str:
    """The human-readable reason for a lifecycle refusal."""
    if state is State.CLOSED:
        return "the connection is closed"
    if inp in (Input.SEND_INITIALIZE, Input.RECV_INITIALIZE):
        return "initialize may only be sent once, as the first request"
    if inp in (Input.SEND_INITIALIZED, Input.RECV_INITIALIZED):
        return "notifications/initialized is sent once, by the client, after the result"
    if state is State.IDLE:
        return "not initialized: initialize must come first (lifecycle.mdx)"
    return "the handshake is not complete yet (lifecycle.mdx)"


def _implementation(value: object) -> bool:
    return (
        type(value) is dict
        and isinstance(value.get("name"), str)
        and isinstance(value.get("version"), str)
    )


class ClientConnection(Connection):
    """The client side of an MCP connection."""

    role = Role.CLIENT

    def initialize(self, *, now: float | None = None, timeout: Any = _DEFAULT) -> RequestId:
        """Queue ``initialize`` offering our newest handshake-era revision.

        If its deadline passes the connection closes (``INITIALIZE_TIMEOUT``): initialize is
        never cancelled. Its outcome is an :class:`Initialized` event or a
        :class:`ConnectionClosed` one -- never a ``Response``.
        """
        params = {
            "protocolVersion": newest(self._handshake_versions),
            "capabilities": self.capabilities,
            "clientInfo": self.info,
        }
        return self.send_request("initialize", params, now=now, timeout=timeout, max_total=None)

    def _on_initialize_response(self, is_result: bool, payload: dict[str, Any]) -> None:
        if not is_result:
            self._close(
                CloseReason.INITIALIZE_FAILED,
                f"initialize failed: error {payload['code']}: {payload['message']}",
            )
            return
        version = payload.get("protocolVersion")
        capabilities = payload.get("capabilities")
        info = payload.get("serverInfo")
        instructions = payload.get("instructions")
        if (
            not isinstance(version, str)
            or type(capabilities) is not dict
            or not _implementation(info)
            or (instructions is not None and not isinstance(instructions, str))
        ):
            self._close(CloseReason.INITIALIZE_FAILED,
                        "the InitializeResult is not valid (protocolVersion, capabilities and "
                        "serverInfo with name and version are required)")
            return
        if version not in self._handshake_versions:
            # lifecycle.mdx, Version Negotiation: the client SHOULD disconnect.
            self._close(
                CloseReason.VERSION_REJECTED,
                f"the server chose protocol version {version!r}; this client supports "
                f"{', '.join(self._handshake_versions)}",
            )
            return
        self.protocol_version = version
        self.peer_capabilities = capabilities
        self.peer_info = cast("dict[str, Any]", info)
        self.instructions = instructions
        self._advance(Input.RECV_INITIALIZE_RESULT)
        # lifecycle.mdx: "the client MUST send an initialized notification".
        message = _codec.notification_message("notifications/initialized", None)
        self._outbox.append((message, None, _codec.encode(message)))
        self._events.append(
            Initialized(
                protocol_version=version,
                peer_capabilities=self.peer_capabilities,
                peer_info=self.peer_info,
                instructions=instructions,
            )
        )


class ServerConnection(Connection):
    """The server side of an MCP connection.

    :param instructions: sent in the ``InitializeResult`` (optional).
    """

    role = Role.SERVER

    def __init__(self, *, instructions: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.server_instructions = instructions

    def _on_initialize(
        self, request_id: RequestId, params: dict[str, Any], next_state: State,
        batch: _Batch | None,
    ) -> None:
        capabilities = params.get("capabilities")
        info = params.get("clientInfo")
        requested = params.get("protocolVersion")
        if not isinstance(requested, str) or type(capabilities) is not dict or not (
            _implementation(info)
        ):
            self._reply_error(
                batch, request_id, ErrorCode.INVALID_PARAMS,
                "Invalid params: initialize needs protocolVersion, capabilities and clientInfo "
                "(with name and version)",
                "initialize",
            )
            return
        version = negotiate_server_version(requested, self._handshake_versions)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": self.capabilities,
            "serverInfo": self.info,
        }
        if self.server_instructions is not None:
            result["instructions"] = self.server_instructions
        self.protocol_version = version
        self.peer_capabilities = capabilities
        self.peer_info = cast("dict[str, Any]", info)
        self._state = next_state
        self._queue_reply(batch, _codec.result_message(request_id, result), request_id)

