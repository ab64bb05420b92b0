"""What a call ends in: the errors of the high-level layer and the bookkeeping of one request
we sent.

Theory of operation
-------------------
A request we send is a :class:`Call`: its method, its id, an optional progress callback, and
-- once the core reports the one terminal event of that request (``Event.TERMINAL``) -- the
event itself. A runtime only waits for ``call.done`` (``wake`` is its waiter) and then asks
:func:`outcome`, which maps the terminal event to the result or to exactly one exception:
:class:`McpError` for a JSON-RPC error (:class:`ResultRejected` when the core refused the
result), :class:`RequestTimeout`, :class:`ConnectionClosedError`,
:class:`RequestCancelledError`. The mapping is a pure function of the event, so every
runtime (and an embedder's own loop) raises the same exceptions for the same wire.

The exceptions a server handler raises to steer its answer live here too
(:class:`ToolError`, :class:`InputRequiredSignal`, :class:`MissingCapability`): the session
logic turns them into the answer (see :mod:`mcp_sansio.app.session`). Nothing here reads a
clock or touches I/O; this module imports only the core, so every other module of the layer
(and the tools) can import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp_sansio import (
    ErrorCode,
    ErrorResponse,
    Event,
    RequestAborted,
    RequestCancelled,
    RequestFailed,
    RequestId,
    RequestTimedOut,
    Response,
)

__all__ = [
    "Call",
    "ConnectionClosedError",
    "InputRequiredSignal",
    "McpError",
    "MissingCapability",
    "ProgressCallback",
    "RequestCancelledError",
    "RequestTimeout",
    "ResultRejected",
    "ToolError",
    "outcome",
    "secret_prefix",
]


class McpError(Exception):
    """A JSON-RPC error: raised by a client call when the peer answered with an error, and
    raised by a server handler to answer with one (code, message and data are sent as
    given, so never put secrets in them)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class RequestTimeout(TimeoutError):
    """A request hit its idle timeout or hard maximum; the core sent
    ``notifications/cancelled`` for it."""

    def __init__(self, method: str, hard_limit: bool) -> None:
        what = "hard time limit" if hard_limit else "idle timeout"
        super().__init__(f"{method}: no answer within the {what}")
        self.method = method
        self.hard_limit = hard_limit


class ConnectionClosedError(ConnectionError):
    """The connection closed (the peer went away, or we closed it) before an answer came."""


class RequestCancelledError(Exception):
    """A call was cancelled by the caller (a cancel token on threads; asyncio and trio raise
    their own cancellation instead)."""


class ResultRejected(McpError):
    """The peer's result broke a rule the core checks (e.g. an unknown ``resultType``)."""


class ToolError(Exception):
    """Raised by a tool handler to fail *as a tool*: the result is sent with ``isError: true``
    and this exception's text as its content (the model sees it; keep it meaningful)."""


class InputRequiredSignal(Exception):
    """Raised (through :meth:`Context.input_required` or a stateless-era ask) to answer the
    current request with ``input_required``."""

    def __init__(self, input_requests: Mapping[str, Any], request_state: str | None) -> None:
        super().__init__("input required")
        self.input_requests = dict(input_requests)
        self.request_state = request_state


class MissingCapability(Exception):
    """A handler needs a client capability the request's client did not declare."""

    def __init__(self, required: Mapping[str, Any]) -> None:
        super().__init__(f"the client did not declare {sorted(required)}")
        self.required = dict(required)


def secret_prefix(value: str | None) -> str:
    """What a log may show of a secret (a session id, a token): its first characters -- at
    most 8, and at most a quarter of it -- then an ellipsis. Enough to tell two sessions apart
    in one log; far too little to act as one (a session id is a bearer credential:
    2025-11-25 basic/security_best_practices.mdx, session hijacking)."""
    if not value:
        return repr(value)
    return value[:min(8, len(value) // 4)] + "…"


ProgressCallback = Callable[[float, "float | None", "str | None"], Any]


class Call:
    """One request we sent, from ``send_request`` to its terminal event."""

    __slots__ = ("error", "event", "method", "on_progress", "request_id", "wake")

    def __init__(self, method: str, request_id: RequestId,
                 on_progress: ProgressCallback | None) -> None:
        self.method = method
        self.request_id = request_id
        self.on_progress = on_progress
        self.event: Event | None = None
        #: Raised instead of what ``event`` means: set by a transport adapter that knows
        #: better why the call ended (e.g. an HTTP failure, see ``common.http_client``).
        self.error: BaseException | None = None
        self.wake: Callable[[], None] = _nothing

    @property
    def done(self) -> bool:
        return self.event is not None


def _nothing() -> None:
    return None


def outcome(call: Call, closed_detail: str) -> dict[str, Any]:
    """The result of a finished call, or the exception its terminal event means."""
    if call.error is not None:
        raise call.error
    event = call.event
    if isinstance(event, Response):
        return event.result
    if isinstance(event, ErrorResponse):
        raise McpError(event.code, event.message, event.data)
    if isinstance(event, RequestTimedOut):
        raise RequestTimeout(event.method, event.hard_limit)
    if isinstance(event, RequestAborted):
        raise ConnectionClosedError(f"{event.method}: {closed_detail}")
    if isinstance(event, RequestFailed):
        raise ResultRejected(ErrorCode.INTERNAL_ERROR, event.reason, event.result)
    if isinstance(event, RequestCancelled):
        raise RequestCancelledError(
            f"{event.method} was cancelled{': ' + event.reason if event.reason else ''}")
    raise AssertionError(f"not a terminal event: {event!r}")  # pragma: no cover


# -- the session: pump bookkeeping shared by both roles ----------------------------------------
