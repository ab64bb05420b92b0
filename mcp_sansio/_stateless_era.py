"""The stateless era (2026-07-28) on a connection: both roles' paths that only it has.

Theory of operation
-------------------
In the stateless era no handshake happens: each request carries in its ``_meta`` the
protocol version, the client's capabilities and info (``RequestMetaObject``), and is judged
on that alone, never by what earlier requests said (``basic/versioning.mdx``). Server side,
:func:`on_request` admits a request (the ordered rows of ``_admission.py``), gates it on our
capabilities, checks its log level and a listen filter, opens a sealed ``requestState``
(``_stateless.py``), answers ``server/discover`` itself and records the rest for the
application with what its ``_meta`` declared. :func:`decorate_result` adds what a result of
the era carries (``resultType``, ``serverInfo``, the caching hints);
:func:`send_notification` sends log messages only about a request that asked for a level and
change notifications only on listen streams (``_listen.py``) that honour them.

Client side, :func:`with_meta` adds the ``_meta`` to each request and :func:`on_result`
reads each result's ``resultType``: complete, or ``input_required`` (kept for
``retry_with_input``, ``_mrtr.py``). Each is a function of the connection
(:class:`~mcp_sansio._engine.Engine`), keeping nothing of its own.
"""

from __future__ import annotations

from typing import Any, cast

from . import _codec
from ._admission import Admitted, Refusal, admit_after_envelope, admit_stateless
from ._capabilities import MRTR_METHODS, MethodRule, lookup, subject_of
from ._checks import gate_incoming, incoming_rule
from ._engine import Batch, Engine
from ._errors import ErrorCode, LocalProtocolError
from ._events import Event, RequestFailed, RequestId, trusted_request, trusted_response
from ._handshake import discover_result
from ._keyring import KeyRing
from ._lifecycle import record_discovery
from ._pending import Incoming, Outgoing
from ._state import NOT_INITIALIZED_CODE, Input, State, Verdict, transition
from ._stateless import (
    LISTEN_NOTIFICATIONS,
    LOG_LEVELS,
    LOG_RANK,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    InvalidRequestState,
    open_state,
)

__all__ = ["decorate_result", "log_rank", "on_listen_notification", "on_request", "on_result",
           "send_notification", "with_meta"]


def log_rank(level: object) -> int:
    """A log level's rank; an unknown level ranks above every known one (sent, never lost)."""
    return LOG_RANK.get(level, len(LOG_LEVELS)) if isinstance(level, str) else len(LOG_LEVELS)


def on_request(
    conn: Engine, request_id: RequestId, method: str, params: dict[str, Any] | None,
    batch: Batch | None, envelope: Admitted | None = None,
) -> None:
    """Server: a request served with 2026-07-28 semantics: checked on its own. ``envelope``:
    what the transport's admission of the same request found (the HTTP server admits the
    envelope before it compares the mirrored headers), so only the rows after it run here."""
    verdict, next_state = transition(conn.role, conn._state, Input.RECV_STATELESS)
    if verdict is not Verdict.ALLOW:
        conn._reply_error(
            batch, request_id, NOT_INITIALIZED_CODE,
            "this connection negotiated a handshake revision with initialize; "
            "stateless requests are not accepted on it", method,
        )
        return
    admitted = (  # _admission.py
        admit_stateless(params, conn._stateless_versions) if envelope is None
        else admit_after_envelope(envelope, conn._stateless_versions))
    if isinstance(admitted, Refusal):
        conn._reply_error(batch, request_id, admitted.code, admitted.message, method,
                          data=admitted.data)
        return
    version, capabilities, meta = admitted
    rule = incoming_rule(conn, request_id, method, version, conn._peer_role, batch)
    if rule is None or not gate_incoming(conn, request_id, rule, version, params,
                                         conn.capabilities, batch):
        return
    level = meta.get(META_LOG_LEVEL)
    if level is not None and (not isinstance(level, str) or level not in LOG_RANK):
        # logging.mdx (2026-07-28): an unknown level SHOULD be -32602.
        conn._reply_error(batch, request_id, ErrorCode.INVALID_PARAMS,
                          f"Invalid params: unknown log level {level!r}", method)
        return
    if method == "subscriptions/listen" and type(
        (params or {}).get("notifications")
    ) is not dict:
        # SubscriptionsListenRequestParams: ``notifications`` (the filter) is required.
        # Refused before anything is acknowledged.
        conn._reply_error(batch, request_id, ErrorCode.INVALID_PARAMS,
                          "Invalid params: subscriptions/listen needs a notifications "
                          "filter object", method)
        return
    name = subject_of(method, params)
    if (
        rule.mrtr
        and conn.request_state_key is not None
        and params is not None
        and "requestState" in params
    ):
        try:
            state = _open_request_state(conn, params["requestState"], method, name)
        except InvalidRequestState as exc:
            conn._reply_error(batch, request_id, exc.code, exc.message, method)
            return
        params = {**params, "requestState": state}
    # Nothing is recorded from the request itself: the next one is judged afresh.
    conn._state = next_state
    if method == "server/discover":
        # The server's DiscoverResult, built from configuration (see _handshake.py).
        result = discover_result(conn.versions, conn.capabilities, conn.info,
                                 conn.server_instructions, conn.cache_ttl_ms, conn.cache_scope)
        conn._queue_reply(batch, _codec.result_message(request_id, result), request_id)
        return
    token = meta.get("progressToken")
    if token is not None and type(token) is not str and type(token) is not int:
        token = None  # a string or an integer (decoded JSON: bool and float refused)
    record = Incoming(method, token, None, batch)
    record.client_capabilities = capabilities
    record.log_level = level
    record.name = name
    conn._incoming[request_id] = record
    if batch is not None:  # pragma: no cover - batches exist only in 2025-03-26
        batch.waiting += 1
    if method == "subscriptions/listen":
        # The acknowledgement is the stream's first message (spec-digest h).
        note = conn._listens.open(request_id, params or {}, conn.capabilities)
        conn._outbox.append((note, request_id, _codec.encode(note)))
    conn._events.append(trusted_request(request_id, method, params))


def _open_request_state(conn: Engine, sealed: object, method: str, name: str | None) -> str:
    """The state a retry brings back, opened on the clock it was sealed on."""
    key = cast("bytes | KeyRing", conn.request_state_key)
    if conn._wall_now is None:
        return open_state(key, sealed, method=method, name=name, now=conn._now,
                          principal=conn.request_state_principal, clock="monotonic")
    return open_state(key, sealed, method=method, name=name, now=conn._wall_now,
                      principal=conn.request_state_principal, clock="wall",
                      skew=conn.request_state_skew)


def send_notification(
    conn: Engine, method: str, body: dict[str, Any] | None, related: RequestId | None
) -> None:
    """Server: log messages only about a request that asked for a level; change
    notifications only on listen streams that acknowledged them."""
    if method == "notifications/message":
        # logging.mdx (2026-07-28): no logLevel in the request's _meta -> MUST NOT log.
        record = conn._incoming.get(related) if related is not None else None
        level = (body or {}).get("level")
        if (
            record is None
            or record.log_level is None
            or log_rank(level) < LOG_RANK[record.log_level]
        ):
            return
    elif method in LISTEN_NOTIFICATIONS:
        for sub_id, note in conn._listens.fan_out(method, body):
            conn._outbox.append((note, sub_id, conn._encode(note)))
        return
    elif method == "notifications/cancelled":
        # On stdio the server cancels only to end a listen stream.
        listen_id: Any = (body or {}).get("requestId")
        if listen_id not in conn._listens:
            raise LocalProtocolError(
                "in 2026-07-28 a server sends notifications/cancelled only to end a "
                "listen stream"
            )
        conn._listens.discard(listen_id)
        conn._incoming.pop(listen_id, None)
        related = listen_id
    message = _codec.notification_message(method, body)
    conn._outbox.append((message, related, conn._encode(message)))


def with_meta(conn: Engine, body: dict[str, Any] | None) -> dict[str, Any]:
    """Client: add the per-request ``_meta`` of 2026-07-28 (``RequestMetaObject``): the
    protocol version (ours, always), our capabilities and info (unless the caller set them
    for this request)."""
    body = dict(body or {})
    meta = dict(body.get("_meta") or {})
    meta[META_PROTOCOL_VERSION] = (
        conn.protocol_version
        if conn._state is State.STATELESS and conn.protocol_version
        else cast("str", conn._newest_stateless)
    )
    meta.setdefault(META_CLIENT_CAPABILITIES, conn.capabilities)
    meta.setdefault(META_CLIENT_INFO, conn.info)
    body["_meta"] = meta
    return body


def decorate_result(
    conn: Engine, request_id: RequestId, record: Incoming, result: dict[str, Any]
) -> dict[str, Any]:
    """Server: decorate a 2026-07-28 result: ``resultType``, ``serverInfo`` in ``_meta``
    (SHOULD), the caching fields for cacheable methods, the listen stream's id."""
    result_type = result.setdefault("resultType", "complete")
    if result_type == "input_required":
        raise LocalProtocolError("use send_input_required() to ask for input")
    found = result.get("_meta")
    if found:  # a copy: the handler's dict is not changed
        meta = dict(found)
        meta.setdefault(META_SERVER_INFO, conn.info)
    else:  # (most results)
        meta = {META_SERVER_INFO: conn.info}
    if record.method == "subscriptions/listen":
        meta[META_SUBSCRIPTION_ID] = request_id
    result["_meta"] = meta
    rule: MethodRule | None = lookup(record.method, conn.revision)
    if rule is not None and rule.cacheable and result_type == "complete":
        result.setdefault("ttlMs", conn.cache_ttl_ms)
        result.setdefault("cacheScope", conn.cache_scope)
    return result


def on_result(
    conn: Engine, request_id: RequestId, record: Outgoing, payload: dict[str, Any]
) -> None:
    """Client: a result in the stateless era, by its ``resultType``."""
    # Result.resultType (2026-07-28 schema): missing means "complete" (older servers).
    result_type = payload.get("resultType", "complete")
    if result_type == "complete":
        if record.method == "server/discover":
            record_discovery(conn, payload)
        conn._events.append(
            trusted_response(request_id, payload, record.method)
        )
        return
    if result_type == "input_required" and record.method in MRTR_METHODS:
        event = conn._retries.receive(request_id, record.method, record.params, payload)
        if event is not None:
            conn._events.append(event)
            return
        reason = "malformed input_required result (inputRequests and/or requestState)"
    elif result_type == "input_required":
        reason = f"{record.method} may not answer input_required (mrtr.mdx)"
    else:
        reason = f"unknown resultType {result_type!r}"
    conn._events.append(RequestFailed(request_id=request_id, method=record.method,
                                      reason=reason, result=payload))


def on_listen_notification(conn: Engine, method: str, params: dict[str, Any]) -> None:
    """Client side of a listen stream (judged by :class:`~._listen.ListenStreams`)."""
    outcome = conn._listens.receive(method, params)
    if type(outcome) is tuple:
        reason, sub_id = outcome
        conn._report(ErrorCode.INVALID_PARAMS, reason, sub_id, method)
    else:
        conn._events.append(cast("Event", outcome))
