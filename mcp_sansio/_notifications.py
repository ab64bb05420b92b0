"""Notifications on a connection, both ways, and the log level the client set.

Theory of operation
-------------------
A notification is never answered, so what the peer sends wrong is *reported*
(:class:`MessageRejected`, ``replied=False``), never replied to. :func:`on_notification`
looks the method up in the method table for the revision in force, checks the sender's role,
the lifecycle table and, once operating, the capability gate, then routes it:
``notifications/initialized`` completes the handshake, cancellation and progress go to
``_inflight.py``, a 2026-07-28 change notification to the listen streams, and a
``resources/updated`` must name a URI we subscribed to. A method no revision defines is the
application's business and is delivered once the lifecycle allows notifications.

:func:`send_notification` is the way out: the same checks for ours, then the rules of
``server/utilities/logging.mdx`` (messages below the level set with ``logging/setLevel``,
answered by :func:`on_set_level`, are dropped quietly) and of subscriptions (an update only
for a subscribed URI); the stateless era's rules are in ``_stateless_era.py``. Each is a
function of the connection (:class:`~mcp_sansio._engine.Engine`), keeping nothing of its own.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Any

from . import _codec, _stateless_era
from ._capabilities import ALL_METHODS, Kind, lookup, missing_capability
from ._checks import check_send, refusal
from ._engine import Batch, Engine
from ._errors import ErrorCode, LocalProtocolError
from ._events import Initialized, Notification, RequestId
from ._inflight import on_cancelled, on_progress
from ._state import (
    NOT_INITIALIZED_CODE,
    Input,
    Role,
    State,
    Verdict,
    classify_notification,
    transition,
)
from ._stateless import LOG_RANK

__all__ = ["is_member", "on_notification", "on_set_level", "record_subscription",
           "send_notification"]


def is_member(value: object, container: Container[Any]) -> bool:
    """``value in container`` for a value read off the wire (which may be unhashable)."""
    return (type(value) is str or type(value) is int) and value in container


def send_notification(
    conn: Engine, method: str, params: Mapping[str, Any] | None, related: RequestId | None
) -> None:
    """Check and queue a notification of ours (see the module notes)."""
    inp = classify_notification(method, sending=True)
    check_send(conn.role, conn._state, conn.revision, inp, method, Kind.NOTIFICATION, params,
               conn.strict_capabilities, conn.peer_capabilities, conn.capabilities)
    body = dict(params) if params is not None else None
    if conn._state is State.STATELESS and conn.role is Role.SERVER:
        _stateless_era.send_notification(conn, method, body, related)
        return
    if (method == "notifications/message" and conn.log_level is not None
            and _stateless_era.log_rank((body or {}).get("level")) < LOG_RANK[conn.log_level]):
        return
    if method == "notifications/resources/updated":
        uri = (body or {}).get("uri")
        if not is_member(uri, conn.subscriptions):
            raise LocalProtocolError(
                f"the client has not subscribed to {uri!r}", code=ErrorCode.INVALID_PARAMS
            )
    message = _codec.notification_message(method, body)
    conn._outbox.append((message, related, conn._encode(message)))
    conn._advance(inp)


def on_notification(conn: Engine, method: str, params: dict[str, Any] | None) -> None:
    """Judge and route a notification the peer sent."""
    revision = conn.revision
    rule = lookup(method, revision)
    if rule is None:
        if method in ALL_METHODS:
            conn._report(ErrorCode.METHOD_NOT_FOUND,
                         f"{method} does not exist in revision {revision}", None, method)
        else:  # unknown to every revision (e.g. notifications/closed): the app's call
            _deliver_unknown(conn, method, params)
        return
    if rule.kind is not Kind.NOTIFICATION or not rule.sender.allows(conn._peer_role):
        conn._report(ErrorCode.METHOD_NOT_FOUND,
                     f"a {conn._peer_role.value} does not send {method}", None, method)
        return
    inp = classify_notification(method, sending=False)
    verdict, next_state = transition(conn.role, conn._state, inp)
    if verdict is not Verdict.ALLOW:
        conn._report(NOT_INITIALIZED_CODE, refusal(inp, conn._state), None, method)
        return
    if conn._state is State.OPERATING:
        gate = conn.capabilities if rule.gated_by_receiver else conn.peer_capabilities
        missing = missing_capability(rule, revision, params, gate)
        if missing is not None:
            conn._report(ErrorCode.METHOD_NOT_FOUND,
                         f"{method} needs the {missing!r} capability, which the peer did "
                         "not declare", None, method)
            return
    if method == "notifications/initialized":
        conn._state = next_state
        conn._events.append(
            Initialized(
                protocol_version=conn.revision,
                peer_capabilities=conn.peer_capabilities,
                peer_info=conn.peer_info,
            )
        )
    elif method == "notifications/cancelled":
        on_cancelled(conn, params or {})
    elif method == "notifications/progress":
        on_progress(conn, params or {})
    elif conn._state is State.STATELESS and conn._listens.concerns(method):
        _stateless_era.on_listen_notification(conn, method, params or {})
    elif method == "notifications/resources/updated" and not is_member(
        (params or {}).get("uri"), conn.subscriptions
    ):
        conn._report(ErrorCode.INVALID_PARAMS,
                     "resources/updated for a URI we did not subscribe to", None, method)
    else:
        conn._events.append(Notification(method=method, params=params))


def _deliver_unknown(conn: Engine, method: str, params: dict[str, Any] | None) -> None:
    verdict, _ = transition(conn.role, conn._state, Input.RECV_NOTIFICATION)
    if verdict is Verdict.ALLOW:
        conn._events.append(Notification(method=method, params=params))
    else:
        conn._report(NOT_INITIALIZED_CODE,
                     refusal(Input.RECV_NOTIFICATION, conn._state), None, method)


def on_set_level(
    conn: Engine, request_id: RequestId, params: dict[str, Any], batch: Batch | None
) -> None:
    """Server: ``logging/setLevel`` (answered by the core)."""
    # server/utilities/logging.mdx: an invalid level is -32602.
    level = params.get("level")
    if not isinstance(level, str) or level not in LOG_RANK:
        conn._reply_error(batch, request_id, ErrorCode.INVALID_PARAMS,
                          f"Invalid params: unknown log level {level!r}", "logging/setLevel")
        return
    conn.log_level = level
    conn._queue_reply(batch, _codec.result_message(request_id, {}), request_id)


def record_subscription(conn: Engine, method: str, uri: str) -> None:
    """A successful resources/(un)subscribe -- answered by us (server) or to us (client) --
    changes which URIs notifications/resources/updated may name."""
    if method == "resources/subscribe":
        conn.subscriptions = conn.subscriptions | {uri}
    elif method == "resources/unsubscribe":
        conn.subscriptions = conn.subscriptions - {uri}
