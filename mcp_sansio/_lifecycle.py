"""A connection's lifecycle steps: the handshake, the era probe and the close (both roles).

Theory of operation
-------------------
How a connection settles its revision and learns its peer. The decisions are pure functions
in ``_handshake.py`` (what to answer to ``initialize``, whether an ``InitializeResult`` is
acceptable, what a probe's answer says); this module applies them to the connection
(:class:`~mcp_sansio._engine.Engine`): it records the negotiated revision, the peer's
capabilities and info, moves the lifecycle state, queues the answer or the
``notifications/initialized`` that follows, and reports :class:`Initialized` or closes.

Which role reaches each step is decided by the tables, not by overriding: only a server
receives ``initialize`` (the method table), only a client gets its answer, only a client
enters ``PROBING`` (the lifecycle table). A dual-era client probes with ``server/discover``
(``versioning.mdx``): a discover result or a stateless-era error settles the stateless era
(:func:`on_probe_response`); anything else, or no answer in time, falls back to
``initialize`` when a handshake revision is supported, else closes (:func:`probe_failed`).
:func:`close` ends the connection for good: each request of ours in flight is aborted with
an event, the peer's are forgotten with the unread input, and :class:`ConnectionClosed` says
why.
"""

from __future__ import annotations

from typing import Any, cast

from . import _codec
from ._capabilities import SESSION_OPENERS
from ._checks import refusal
from ._engine import DEFAULT, Batch, Engine
from ._errors import ErrorCode, LocalProtocolError
from ._events import CloseReason, ConnectionClosed, Initialized, RequestAborted, RequestId
from ._handshake import (
    answer_initialize,
    implementation,
    initialize_params,
    judge_probe_answer,
    read_initialize_result,
)
from ._pending import Outgoing
from ._state import Input, State, Verdict, transition
from ._stateless import META_SERVER_INFO

__all__ = ["close", "edge_of_input", "on_initialize", "on_initialize_response",
           "on_opening_response", "on_probe_response", "probe_failed", "record_discovery",
           "refuse_initialize", "send_initialize"]


def on_initialize(
    conn: Engine, request_id: RequestId, params: dict[str, Any], next_state: State,
    batch: Batch | None,
) -> None:
    """Server: answer ``initialize`` (the lifecycle and method tables have admitted it)."""
    answer = answer_initialize(params, conn._handshake_versions, conn.capabilities,
                               conn.info, conn.server_instructions)
    if answer is None:
        conn._reply_error(
            batch, request_id, ErrorCode.INVALID_PARAMS,
            "Invalid params: initialize needs protocolVersion, capabilities and clientInfo "
            "(with name and version)",
            "initialize",
        )
        return
    conn.protocol_version = answer.version
    conn.peer_capabilities = answer.peer_capabilities
    conn.peer_info = answer.peer_info
    conn._state = next_state
    conn._queue_reply(batch, _codec.result_message(request_id, answer.result), request_id)


def refuse_initialize(
    conn: Engine, request_id: RequestId, method: str, params: dict[str, Any] | None,
    batch: Batch | None,
) -> None:
    """Server of the stateless era only: refuse ``initialize``, naming our versions."""
    # versioning.mdx: a stateless-only server SHOULD name its versions when it rejects
    # initialize (in the handshake era's own error shape, which old clients understand:
    # lifecycle.mdx, "Error Handling").
    requested = (params or {}).get("protocolVersion")
    conn._reply_error(
        batch, request_id, ErrorCode.INVALID_PARAMS, "Unsupported protocol version",
        method, data={"supported": list(conn.versions), "requested": requested},
    )


def send_initialize(conn: Engine, now: float | None, timeout: Any) -> RequestId:
    """Client: queue ``initialize`` offering our newest handshake-era revision."""
    if not conn._handshake_versions:
        raise LocalProtocolError("this client supports no handshake-era revision")
    params = initialize_params(conn._handshake_versions, conn.capabilities, conn.info)
    return conn.send_request("initialize", params, now=now, timeout=timeout, max_total=None)


def on_opening_response(
    conn: Engine, request_id: RequestId, record: Outgoing, is_result: bool, payload: Any
) -> None:
    """Client: the answer to the era probe or to ``initialize``."""
    if conn._state is State.PROBING:
        # The only request in flight while probing is the probe; its answer is judged
        # into PROBE_STATELESS or PROBE_FALLBACK.
        conn._end_outgoing(request_id, record)
        on_probe_response(conn, is_result, payload)
        return
    inp = Input.RECV_INITIALIZE_RESULT if is_result else Input.RECV_INITIALIZE_ERROR
    verdict, _ = transition(conn.role, conn._state, inp)
    if verdict is not Verdict.ALLOW:  # pragma: no cover - responses are allowed when open
        conn._report(ErrorCode.INVALID_REQUEST, refusal(inp, conn._state), request_id)
        return
    conn._end_outgoing(request_id, record)
    on_initialize_response(conn, is_result, payload)


def on_initialize_response(conn: Engine, is_result: bool, payload: dict[str, Any]) -> None:
    """Client: the answer to ``initialize``: operate and say ``initialized``, or close."""
    refusal = read_initialize_result(is_result, payload, conn._handshake_versions)
    if refusal is not None:
        close(conn, *refusal)
        return
    version: str = payload["protocolVersion"]
    conn.protocol_version = version
    conn.peer_capabilities = payload["capabilities"]
    conn.peer_info = payload["serverInfo"]
    conn.instructions = instructions = payload.get("instructions")
    conn._advance(Input.RECV_INITIALIZE_RESULT)
    # lifecycle.mdx: "the client MUST send an initialized notification".
    message = _codec.notification_message("notifications/initialized", None)
    conn._outbox.append((message, None, _codec.encode(message)))
    conn._events.append(
        Initialized(
            protocol_version=version,
            peer_capabilities=conn.peer_capabilities,
            peer_info=conn.peer_info,
            instructions=instructions,
        )
    )


def on_probe_response(conn: Engine, is_result: bool, payload: dict[str, Any]) -> None:
    """Client: the answer to the ``server/discover`` probe."""
    verdict = judge_probe_answer(is_result, payload, conn._stateless_versions)
    if verdict.version is None:
        probe_failed(conn, verdict.detail)
        return
    conn._state = transition(conn.role, conn._state, Input.PROBE_STATELESS)[1]
    conn.protocol_version = verdict.version
    if is_result:
        record_discovery(conn, payload)
    conn._events.append(Initialized(
        protocol_version=verdict.version,
        peer_capabilities=conn.peer_capabilities,
        peer_info=conn.peer_info,
        instructions=conn.instructions,
    ))


def probe_failed(conn: Engine, detail: str) -> None:
    """Fall back to initialize (versioning.mdx), or close if we cannot."""
    if not conn._handshake_versions or conn._no_fallback:
        close(conn, CloseReason.VERSION_REJECTED,
              f"{detail}; this client supports no handshake-era revision")
        return
    conn._state = transition(conn.role, conn._state, Input.PROBE_FALLBACK)[1]
    send_initialize(conn, None, DEFAULT)


def record_discovery(conn: Engine, result: dict[str, Any]) -> None:
    """Keep what a DiscoverResult says about the server (``server/discover.mdx``)."""
    capabilities = result.get("capabilities")
    if type(capabilities) is dict:
        conn.peer_capabilities = capabilities
    meta = result.get("_meta")
    info = meta.get(META_SERVER_INFO) if type(meta) is dict else None
    if implementation(info):
        conn.peer_info = cast("dict[str, Any]", info)
    instructions = result.get("instructions")
    conn.instructions = instructions if isinstance(instructions, str) else None
    conn.discovery = result


def close(conn: Engine, reason: CloseReason, detail: str) -> None:
    """Close for good: abort every pending request (one event each), then report."""
    conn._state = State.CLOSED
    conn.close_reason = reason
    for request_id, record in list(conn._outgoing.items()):
        conn._end_outgoing(request_id, record)
        if record.method not in SESSION_OPENERS:  # initialize ends with ConnectionClosed
            conn._events.append(
                RequestAborted(request_id=request_id, method=record.method, reason=reason)
            )
    conn._incoming.clear()
    conn._drop_input()
    conn._events.append(ConnectionClosed(reason=reason, detail=detail))


def edge_of_input(conn: Engine, eof: bool) -> None:
    """An input item the message path does not take: any once closed (dropped with the rest
    of the input), the end of input (``eof``: close), or a message over the size limit."""
    if conn._state is State.CLOSED:
        conn._drop_input()
    elif eof:
        close(conn, CloseReason.EOF, "the peer closed the connection")
    else:
        conn._reply_error(None, None, ErrorCode.INVALID_REQUEST,
                          f"Invalid Request: message larger than {conn.max_message_size} bytes")
