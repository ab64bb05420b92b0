"""The checks of a connection's messages by the method, lifecycle and capability tables.

Theory of operation
-------------------
Before a request or a notification of ours is queued, :func:`check_send` asks the tables
whether it may go: the method table (does the method exist in the revision, and do we, in
our role, send it as this kind of message), the lifecycle table (may it be sent in this
state) and, once operating, the capability gate (did the peer declare what the method needs,
or did we declare what we offer). A refusal raises :class:`LocalProtocolError` naming the
rule; nothing has been queued then. It is a pure function of what the connection passes in,
so it runs on every send without touching the connection itself.

For what the peer sends, :func:`incoming_rule` finds a received request's row (the method
exists in the revision, and the peer's role sends it) and :func:`gate_incoming` asks
whether our declared capabilities cover it; each answers the request itself when the
answer is no (-32601, or -32602 for a params-dependent gate) and the caller stops.

:func:`refusal` and :func:`gate_message` word the refusals that both directions share: the
connection raises them for what the application sends and answers or reports them for what
the peer sends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._capabilities import ALL_METHODS, Kind, MethodRule, lookup, missing_capability, refusal_code
from ._engine import Batch, Engine
from ._errors import ErrorCode, LocalProtocolError
from ._events import RequestId
from ._state import Input, Role, State, Verdict, transition

__all__ = ["check_send", "gate_incoming", "gate_message", "incoming_rule", "refusal"]


def check_send(
    role: Role, state: State, revision: str, inp: Input, method: str, kind: Kind,
    params: Mapping[str, Any] | None, strict: bool, peer_capabilities: Mapping[str, Any],
    capabilities: Mapping[str, Any],
) -> None:
    """Raise :class:`LocalProtocolError` unless we may send ``method`` as ``kind`` now."""
    if params is not None and type(params) is not dict and not isinstance(params, Mapping):
        raise LocalProtocolError("params must be a mapping (JSON object)")
    if state is State.CLOSED:
        raise LocalProtocolError("the connection is closed")
    rule = lookup(method, revision)
    if rule is None:
        if method in ALL_METHODS:
            raise LocalProtocolError(
                f"{method} does not exist in revision {revision}",
                code=ErrorCode.METHOD_NOT_FOUND,
            )
        # A method no revision defines: an extension, the application's business.
    elif rule.kind is not kind or not rule.sender.allows(role):
        raise LocalProtocolError(
            f"a {role.value} does not send {method} as a {kind.value}",
            code=ErrorCode.METHOD_NOT_FOUND,
        )
    verdict, _ = transition(role, state, inp)
    if verdict is not Verdict.ALLOW:
        raise LocalProtocolError(refusal(inp, state))
    if rule is not None and state is State.OPERATING:
        if rule.gated_by_receiver:
            if strict:
                missing = missing_capability(rule, revision, params, peer_capabilities)
                if missing is not None:
                    raise LocalProtocolError(
                        f"{method} needs the peer's {missing!r} capability, "
                        "which it did not declare",
                        code=ErrorCode.METHOD_NOT_FOUND,
                    )
        else:
            missing = missing_capability(rule, revision, params, capabilities)
            if missing is not None:
                raise LocalProtocolError(
                    f"{method} needs our own {missing!r} capability, which we did not "
                    "declare",
                    code=ErrorCode.METHOD_NOT_FOUND,
                )


def incoming_rule(
    conn: Engine, request_id: RequestId, method: str, revision: str, peer_role: Role,
    batch: Batch | None,
) -> MethodRule | None:
    """The method-table row for a received request, or None after answering -32601: the
    method does not exist in ``revision``, or the peer's role does not send it."""
    rule = lookup(method, revision)
    if rule is None or rule.kind is not Kind.REQUEST or not rule.sender.allows(peer_role):
        conn._reply_error(batch, request_id, ErrorCode.METHOD_NOT_FOUND,
                          f"Method not found: {method}", method)
        return None
    return rule


def gate_incoming(
    conn: Engine, request_id: RequestId, rule: MethodRule, revision: str,
    params: dict[str, Any] | None, capabilities: Mapping[str, Any], batch: Batch | None,
) -> bool:
    """Whether our declared ``capabilities`` let us serve a received request; if not, it has
    been answered (-32601 for the capability, -32602 for a params-dependent one)."""
    missing = missing_capability(rule, revision, params, capabilities)
    if missing is None:
        return True
    conn._reply_error(batch, request_id, refusal_code(rule, missing),
                      gate_message(rule, rule.method, missing), rule.method)
    return False


def refusal(inp: Input, state: State) -> str:
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


def gate_message(rule: MethodRule, method: str, missing: str) -> str:
    """Why a received request was refused by the capability gate."""
    if missing == rule.capability:
        return f"Method not found: {method} needs the {missing!r} capability, which was not " \
            "declared"
    return f"Invalid params: {method} as sent needs the {missing!r} capability, which was " \
        "not declared"
