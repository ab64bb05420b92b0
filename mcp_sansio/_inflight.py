"""The life of requests in flight on a connection: timeouts, progress, cancellation, late replies.

Theory of operation
-------------------
A request we send gets an :class:`~mcp_sansio._pending.Outgoing` record and up to two
deadlines in the connection's :class:`~mcp_sansio._timers.TimerTable`: an idle one that
progress may push back and a hard one nothing extends. :func:`handle_timeout` ends each
request whose deadline passed: cancelled on the wire (``cancellation.mdx``), reported as
:class:`RequestTimedOut`, its id remembered so that a reply still arriving becomes a
:class:`LateResponse` (:func:`unmatched_response`). Two requests never time out that way:
``initialize`` closes the connection instead (``lifecycle.mdx``), the era probe falls back to
``initialize`` (``versioning.mdx``). :func:`pause` and :func:`resume` stop and restart a
request's clock with the time it had left.

Progress runs both ways with the token the request carried (``progress.mdx``): the peer's
notifications about our requests are checked (known token, finite numbers, increasing) by
:func:`on_progress`; ours about the peer's requests by :func:`send_progress`. Cancellation
too: :func:`cancel` ends one of ours, :func:`on_cancelled` one of the peer's (an answer the
application still sends for it is dropped quietly). Each is a function of the connection
(:class:`~mcp_sansio._engine.Engine`) and keeps nothing of its own.
"""

from __future__ import annotations

import math
from typing import Any

from . import _codec
from ._batches import flush_batch
from ._capabilities import PROMPT_METHODS, SESSION_OPENERS
from ._engine import Batch, Engine
from ._errors import ErrorCode, LocalProtocolError
from ._events import (
    CancelRequested,
    CloseReason,
    ErrorResponse,
    Event,
    LateResponse,
    Notification,
    Progress,
    Request,
    RequestCancelled,
    RequestId,
    RequestTimedOut,
    Response,
    UnexpectedResponse,
)
from ._lifecycle import close, probe_failed
from ._pending import Outgoing
from ._sessionless import MODE as SESSIONLESS_MODE
from ._sessionless import REFUSED_REQUESTS as SESSIONLESS_REFUSED
from ._state import Role, State
from ._timers import TimerKind
from ._versions import FEATURES

__all__ = ["cancel", "handle_timeout", "number", "on_cancelled", "on_progress", "pause",
           "progress_meta", "queue_cancel", "refuse_request", "resume", "send_error",
           "send_event", "send_progress", "unmatched_response"]


def number(value: object) -> bool:
    """A finite JSON number (not a bool)."""
    return (type(value) is int or type(value) is float) and math.isfinite(value)


def refuse_request(
    conn: Engine, request_id: RequestId, method: str, batch: Batch | None
) -> None:
    """Answer a received request that cannot be taken: too many are in flight already
    (``max_incoming_requests``), its id is in use by one in flight, or it only changes
    session state and the connection serves one sessionless POST."""
    if len(conn._incoming) >= conn.max_incoming_requests and method not in PROMPT_METHODS:
        conn._reply_error(
            batch, request_id, ErrorCode.TOO_MANY_REQUESTS,
            f"Too many requests in flight (limit {conn.max_incoming_requests})", method,
        )
        return
    if request_id in conn._incoming:
        reason = f"Invalid Request: id {request_id!r} is already in use by a request in flight"
    else:
        reason = (f"Invalid Request: {method} is not available in {SESSIONLESS_MODE}: "
                  f"{SESSIONLESS_REFUSED[method]}")
    conn._reply_error(batch, request_id, ErrorCode.INVALID_REQUEST, reason, method)


def handle_timeout(conn: Engine, now: float) -> None:
    """Fire every expired timer (the connection checked that one is due)."""
    for key, kind in conn._timers.pop_expired(now):
        record = conn._outgoing.get(key)  # type: ignore[call-overload]
        if record is None:
            continue
        request_id: RequestId = key  # type: ignore[assignment]
        if record.method in SESSION_OPENERS:
            # lifecycle.mdx: the client MUST NOT cancel initialize; close instead.
            close(conn, CloseReason.INITIALIZE_TIMEOUT, "initialize was not answered in time")
            return
        if conn._state is State.PROBING:
            # versioning.mdx: a timeout of the probe means fall back to initialize. No
            # cancel: before initialize a handshake-era server expects nothing else.
            conn._end_outgoing(request_id, record)
            conn._ended_outgoing.add(request_id, record.method)
            probe_failed(conn, "the server/discover probe timed out")
            continue
        conn._end_outgoing(request_id, record)
        conn._ended_outgoing.add(request_id, record.method)
        reason = "hard time limit reached" if kind is TimerKind.HARD else "timed out"
        queue_cancel(conn, request_id, reason, record.related)
        conn._events.append(
            RequestTimedOut(
                request_id=request_id,
                method=record.method,
                hard_limit=kind is TimerKind.HARD,
            )
        )


def _require_outgoing(conn: Engine, request_id: RequestId) -> Outgoing:
    record = conn._outgoing.get(request_id)
    if record is None:
        raise LocalProtocolError(f"no request {request_id!r} of ours is in flight")
    return record


def pause(conn: Engine, request_id: RequestId, now: float) -> None:
    """Stop the clock of a request we sent, keeping the time it has left."""
    record = _require_outgoing(conn, request_id)
    if record.paused is not None:
        return
    idle = conn._timers.get(request_id, TimerKind.IDLE)
    hard = conn._timers.get(request_id, TimerKind.HARD)
    record.paused = (
        None if idle is None else max(0.0, idle - now),
        None if hard is None else max(0.0, hard - now),
    )
    conn._timers.clear(request_id)


def resume(conn: Engine, request_id: RequestId, now: float) -> None:
    """Restart a paused request's clock with the time it had left."""
    record = _require_outgoing(conn, request_id)
    if record.paused is None:
        return
    idle, hard = record.paused
    record.paused = None
    if idle is not None:
        conn._timers.set(request_id, TimerKind.IDLE, now + idle)
    if hard is not None:
        conn._timers.set(request_id, TimerKind.HARD, now + hard)


def progress_meta(
    conn: Engine, body: dict[str, Any] | None, request_id: RequestId
) -> tuple[dict[str, Any], str | int]:
    """A request's params with ``_meta.progressToken`` (the request id unless the caller
    chose one), and the token."""
    body = dict(body or {})
    meta = dict(body.get("_meta") or {})
    token = meta.setdefault("progressToken", request_id)
    if isinstance(token, bool) or not isinstance(token, str | int):
        raise LocalProtocolError("_meta.progressToken must be a string or an integer")
    if token in conn._progress_tokens:
        raise LocalProtocolError(f"progress token {token!r} is already in use")
    body["_meta"] = meta
    return body, token


def send_progress(
    conn: Engine, request_id: RequestId, progress: float, total: float | None,
    message: str | None,
) -> None:
    """Queue ``notifications/progress`` about a request the peer sent us."""
    if conn._state is State.CLOSED:
        raise LocalProtocolError("the connection is closed")
    record = conn._incoming.get(request_id)
    if record is None:
        if request_id in conn._cancelled_incoming:
            return  # cancelled by the peer: nothing more goes out for it
        raise LocalProtocolError(f"no request {request_id!r} is in progress")
    if record.progress_token is None:
        raise LocalProtocolError(f"request {request_id!r} did not ask for progress")
    if not number(progress) or (total is not None and not number(total)):
        raise LocalProtocolError("progress and total must be finite numbers")
    if record.last_progress is not None and progress <= record.last_progress:
        raise LocalProtocolError(
            f"progress must increase (last {record.last_progress}, now {progress})"
        )
    params: dict[str, Any] = {"progressToken": record.progress_token, "progress": progress}
    if total is not None:
        params["total"] = total
    if message is not None and FEATURES[conn.revision].progress_message:
        params["message"] = message
    wire = _codec.notification_message("notifications/progress", params)
    conn._outbox.append((wire, request_id, conn._encode(wire)))
    record.last_progress = progress


def cancel(conn: Engine, request_id: RequestId, reason: str | None) -> None:
    """End a request we sent: ``notifications/cancelled`` out, :class:`RequestCancelled`."""
    if conn._state is State.CLOSED:
        raise LocalProtocolError("the connection is closed")
    record = _require_outgoing(conn, request_id)
    if record.method in SESSION_OPENERS:
        raise LocalProtocolError(f"{record.method} cannot be cancelled (lifecycle.mdx)")
    conn._end_outgoing(request_id, record)
    conn._ended_outgoing.add(request_id, record.method)
    queue_cancel(conn, request_id, reason, record.related)
    conn._events.append(
        RequestCancelled(request_id=request_id, method=record.method, reason=reason)
    )


def queue_cancel(
    conn: Engine, request_id: RequestId, reason: str | None, related: RequestId | None
) -> None:
    """Queue ``notifications/cancelled`` for one of our requests."""
    params: dict[str, Any] = {"requestId": request_id}
    if reason is not None:
        params["reason"] = reason
    message = _codec.notification_message("notifications/cancelled", params)
    conn._outbox.append((message, related, _codec.encode(message)))


def on_cancelled(conn: Engine, params: dict[str, Any]) -> None:
    """The peer cancelled one of its requests (or, 2026-07-28, ended our listen stream)."""
    # cancellation.mdx: unknown, finished or uncancellable ids SHOULD be ignored.
    request_id = params.get("requestId")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return
    reason = params.get("reason")
    listen = conn._outgoing.get(request_id) if conn.role is Role.CLIENT else None
    if listen is not None and listen.method == "subscriptions/listen":
        # CancelledNotification (2026-07-28): on stdio the server ends a listen stream
        # this way, and only a listen stream.
        conn._end_outgoing(request_id, listen)
        conn._events.append(RequestCancelled(
            request_id=request_id, method=listen.method,
            reason=reason if isinstance(reason, str) else None,
        ))
        return
    record = conn._incoming.pop(request_id, None)
    if record is None:
        return
    conn._listens.pop(request_id, None)
    conn._cancelled_incoming.add(request_id, record.method)
    if record.batch is not None:
        flush_batch(conn, record.batch, answered=True)
    conn._events.append(
        CancelRequested(
            request_id=request_id,
            method=record.method,
            reason=reason if isinstance(reason, str) else None,
        )
    )


def on_progress(conn: Engine, params: dict[str, Any]) -> None:
    """The peer reported progress on one of our requests."""
    token = params.get("progressToken")
    progress = params.get("progress")
    request_id = (
        conn._progress_tokens.get(token)
        if not isinstance(token, bool) and isinstance(token, str | int)
        else None
    )
    record = conn._outgoing.get(request_id) if request_id is not None else None
    if record is None or request_id is None:
        conn._report(ErrorCode.INVALID_PARAMS,
                     f"progress for unknown token {token!r}", None, "notifications/progress")
        return
    total = params.get("total")
    message = params.get("message")
    if (
        isinstance(progress, bool)
        or not isinstance(progress, int | float)
        or not number(progress)
        or (total is not None and not number(total))
    ):
        conn._report(ErrorCode.INVALID_PARAMS, "progress and total must be numbers",
                     request_id, "notifications/progress")
        return
    if record.last_progress is not None and progress <= record.last_progress:
        # progress.mdx: "The progress value MUST increase with each notification".
        conn._report(ErrorCode.INVALID_PARAMS,
                     f"progress did not increase ({record.last_progress} -> {progress})",
                     request_id, "notifications/progress")
        return
    record.last_progress = progress
    if record.progress_resets and record.timeout is not None and record.paused is None:
        conn._timers.set(request_id, TimerKind.IDLE, conn._now + record.timeout)
    conn._events.append(
        Progress(
            request_id=request_id,
            token=token,  # type: ignore[arg-type]
            progress=progress,
            total=total,
            message=message if isinstance(message, str) else None,
        )
    )


def unmatched_response(
    conn: Engine, request_id: RequestId | None, is_result: bool, payload: Any
) -> None:
    """A reply to no request in flight: late (one we ended) or unexpected."""
    method = conn._ended_outgoing.pop(request_id) if request_id is not None else None
    if method is not None and request_id is not None:
        conn._events.append(
            LateResponse(
                request_id=request_id, method=method,
                result=payload if is_result else None,
                error=None if is_result else payload,
            )
        )
    else:
        conn._events.append(
            UnexpectedResponse(
                request_id=request_id,
                result=payload if is_result else None,
                error=None if is_result else payload,
            )
        )


def send_error(conn: Engine, request_id: RequestId, code: int, message: str, data: Any) -> None:
    """Answer a request the peer sent us with an error."""
    if isinstance(code, bool) or not isinstance(code, int):
        raise LocalProtocolError("an error code must be an integer")
    if not isinstance(message, str):
        raise LocalProtocolError("an error message must be a string")
    record = conn._answerable(request_id)
    if record is None:
        return
    wire = _codec.error_message(request_id, code, message, data)
    encoded = conn._encode(wire)
    del conn._incoming[request_id]
    conn._listens.pop(request_id, None)
    conn._queue_reply(record.batch, wire, request_id, encoded, from_application=True)


def send_event(conn: Engine, event: Event) -> RequestId | None:
    """Send a symmetric event received from another connection, by its kind."""
    if isinstance(event, Request):
        return conn.send_request(event.method, event.params)
    if isinstance(event, Notification):
        conn.send_notification(event.method, event.params)
    elif isinstance(event, Response):
        conn.send_response(event.request_id, event.result)
    elif isinstance(event, ErrorResponse):
        if event.request_id is None:
            raise LocalProtocolError("an error response to send needs a request id")
        conn.send_error(event.request_id, event.code, event.message, event.data)
    else:
        raise LocalProtocolError(f"{type(event).__name__} is not an event that can be sent")
    return None
