"""The lifecycle: states, inputs and one transition table per role.

Theory of operation
-------------------
The handshake era's lifecycle (``basic/lifecycle.mdx`` of 2024-11-05 .. 2025-11-25) has three
phases -- initialization, operation, shutdown -- which we model as four states:

=============== ===================================== =========================================
state           client                                server
=============== ===================================== =========================================
IDLE            created; nothing sent yet             waiting for ``initialize`` or a stateless
                                                      request
PROBING         ``server/discover`` sent to find the  (not used)
                server's era (dual-era client)
INITIALIZING    ``initialize`` sent, awaiting result  answered ``initialize``, awaiting
                                                      ``notifications/initialized``
OPERATING       handshake complete                    handshake complete (or assumed so, by a
                                                      sessionless HTTP server's fresh
                                                      connection: ``ASSUME_INITIALIZED``)
STATELESS       the server speaks 2026-07-28: every   serving stateless requests, each checked
                request carries its own ``_meta``     on its own
CLOSED          nothing more is sent or received      same
=============== ===================================== =========================================

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import enum

from ._errors import ErrorCode

__all__ = [
    "NOT_INITIALIZED_CODE",
    "TRANSITIONS",
    "Input",
    "Role",
    "State",
    "Verdict",
    "classify_notification",
    "classify_request",
    "transition",
]


class Role(enum.Enum):
    __hash__ = object.__hash__  # identity hash: C speed for table lookups
    CLIENT = "client"
    SERVER = "server"


class State(enum.Enum):
    __hash__ = object.__hash__  # identity hash: C speed for table lookups
    IDLE = "idle"
    PROBING = "probing"
    INITIALIZING = "initializing"
    OPERATING = "operating"
    STATELESS = "stateless"
    CLOSED = "closed"


class Input(enum.Enum):
    """What can happen to a connection, classified for the lifecycle table."""
    __hash__ = object.__hash__  # identity hash: C speed for table lookups

    SEND_INITIALIZE = "send initialize"
    SEND_INITIALIZED = "send notifications/initialized"
    SEND_PING = "send ping"
    SEND_REQUEST = "send other request"
    SEND_LOG = "send notifications/message"
    #: ``notifications/cancelled`` and ``notifications/progress``: about a request already in
    #: flight, which was legal when it was sent, so they follow it in every open state.
    SEND_UTILITY = "send cancelled/progress"
    SEND_NOTIFICATION = "send other notification"
    SEND_RESPONSE = "send response"
    RECV_INITIALIZE = "recv initialize"
    RECV_INITIALIZE_RESULT = "recv initialize result"
    RECV_INITIALIZE_ERROR = "recv initialize error"
    RECV_INITIALIZED = "recv notifications/initialized"
    RECV_PING = "recv ping"
    RECV_REQUEST = "recv other request"
    RECV_LOG = "recv notifications/message"
    RECV_UTILITY = "recv cancelled/progress"
    RECV_NOTIFICATION = "recv other notification"
    RECV_RESPONSE = "recv response"
    #: A request carrying the stateless ``_meta`` (server side).
    RECV_STATELESS = "recv stateless request"
    #: A dual-era client sends its ``server/discover`` probe.
    START_PROBE = "start era probe"
    #: The probe's answer says the server speaks the stateless era (``judge_probe``).
    PROBE_STATELESS = "probe: stateless"
    #: Anything else (including a timeout of the probe): fall back to ``initialize``.
    PROBE_FALLBACK = "probe: fall back"
    #: Server: serve a request as if the handshake had happened, at a revision the caller
    #: knows -- a sessionless HTTP server keeps no session, so each POST gets a fresh
    #: connection (``_sessionless``; the handshake era's transports.mdx lets a server
    #: assign no session id).
    ASSUME_INITIALIZED = "assume initialized"
    EOF = "eof"


class Verdict(enum.Enum):
    __hash__ = object.__hash__  # identity hash: C speed for table lookups
    ALLOW = "allow"
    REFUSE = "refuse"
    #: Dropped without an event: input that arrives after the connection closed.
    IGNORE = "ignore"


#: The error code for a request refused because the handshake is not complete. JSON-RPC's
#: "Invalid Request" fits: the request is well formed but not valid in this state (MCP defines
#: no dedicated code; lifecycle.mdx only says such requests SHOULD NOT be sent).
NOT_INITIALIZED_CODE = ErrorCode.INVALID_REQUEST

_I, _S = Input, State
A, R, X = Verdict.ALLOW, Verdict.REFUSE, Verdict.IGNORE

_SEND = [i for i in Input if i.name.startswith("SEND_")]
_RECV = [i for i in Input if i.name.startswith("RECV_")]
_OTHER = [i for i in Input if i not in _SEND and i not in _RECV and i is not Input.EOF]


def _row(
    default: Verdict, state: State, **cells: tuple[Verdict, State] | Verdict
) -> dict[Input, tuple[Verdict, State]]:
    """One state's row: every input gets ``default`` (staying in ``state``) unless named."""
    row = {i: (default, state) for i in Input}
    for name, cell in cells.items():
        row[Input[name]] = cell if isinstance(cell, tuple) else (cell, state)
    row[Input.EOF] = (A, State.CLOSED)
    return row


# Citations: lifecycle.mdx (every handshake revision), "Initialization" and "Operation".
_CLIENT: dict[State, dict[Input, tuple[Verdict, State]]] = {
    # "The initialization phase MUST be the first interaction": only initialize goes out;
    # ping is allowed at any time (ping.mdx).
    _S.IDLE: _row(
        R, _S.IDLE,
        SEND_INITIALIZE=(A, _S.INITIALIZING), SEND_PING=A, SEND_UTILITY=A, SEND_RESPONSE=A,
        RECV_PING=A, RECV_LOG=A, RECV_UTILITY=A, RECV_RESPONSE=A,
        START_PROBE=(A, _S.PROBING),
    ),
    # versioning.mdx (2026-07-28), dual-era clients: only the probe is in flight; its answer
    # decides. A fallback returns to IDLE, from where the core sends initialize at once.
    # Any response other than the probe's is unexpected here (nothing else was sent).
    _S.PROBING: _row(
        R, _S.PROBING,
        RECV_PING=A,
        PROBE_STATELESS=(A, _S.STATELESS), PROBE_FALLBACK=(A, _S.IDLE),
    ),
    # "The client SHOULD NOT send requests other than pings before the server has responded
    # to the initialize request." The server "SHOULD NOT send requests other than pings and
    # logging before receiving the initialized notification".
    _S.INITIALIZING: _row(
        R, _S.INITIALIZING,
        SEND_PING=A, SEND_UTILITY=A, SEND_RESPONSE=A,
        RECV_INITIALIZE_RESULT=(A, _S.OPERATING),
        RECV_INITIALIZE_ERROR=(A, _S.CLOSED),
        RECV_PING=A, RECV_LOG=A, RECV_UTILITY=A, RECV_RESPONSE=A,
    ),
    # Operation: anything the method and capability tables allow. initialize happens once.
    _S.OPERATING: _row(
        A, _S.OPERATING,
        SEND_INITIALIZE=R, SEND_INITIALIZED=R,
        RECV_INITIALIZE=R, RECV_INITIALIZED=R,
        RECV_INITIALIZE_RESULT=R, RECV_INITIALIZE_ERROR=R,
    ),
    # 2026-07-28: no session. Requests carry their own _meta; servers send no requests; ping
    # is gone (changelog.mdx); the only notification a client sends is cancelled.
    _S.STATELESS: _row(
        A, _S.STATELESS,
        SEND_INITIALIZE=R, SEND_INITIALIZED=R, SEND_PING=R, SEND_NOTIFICATION=R,
        RECV_INITIALIZE=R, RECV_INITIALIZE_RESULT=R, RECV_INITIALIZE_ERROR=R,
        RECV_INITIALIZED=R, RECV_PING=R, RECV_REQUEST=R, RECV_STATELESS=R,
        START_PROBE=R, PROBE_STATELESS=R, PROBE_FALLBACK=R,
    ),
    _S.CLOSED: {
        **{i: (R, _S.CLOSED) for i in _SEND},
        **{i: (X, _S.CLOSED) for i in _RECV},
        **{i: (X, _S.CLOSED) for i in _OTHER},
        Input.START_PROBE: (R, _S.CLOSED),
        Input.ASSUME_INITIALIZED: (R, _S.CLOSED),
        Input.EOF: (X, _S.CLOSED),
    },
}

_SERVER: dict[State, dict[Input, tuple[Verdict, State]]] = {
    # Waiting for initialize. Ping and log messages may go out before initialized.
    _S.IDLE: _row(
        R, _S.IDLE,
        SEND_PING=A, SEND_LOG=A, SEND_UTILITY=A, SEND_RESPONSE=A,
        RECV_INITIALIZE=(A, _S.INITIALIZING), RECV_PING=A, RECV_UTILITY=A, RECV_RESPONSE=A,
        RECV_STATELESS=(A, _S.STATELESS),
        ASSUME_INITIALIZED=(A, _S.OPERATING),
    ),
    _S.PROBING: _row(R, _S.PROBING),  # servers do not probe
    # initialize answered; "the client MUST send an initialized notification" next. A second
    # initialize is refused and changes nothing.
    _S.INITIALIZING: _row(
        R, _S.INITIALIZING,
        SEND_PING=A, SEND_LOG=A, SEND_UTILITY=A, SEND_RESPONSE=A,
        RECV_INITIALIZED=(A, _S.OPERATING), RECV_PING=A, RECV_UTILITY=A, RECV_RESPONSE=A,
    ),
    _S.OPERATING: _row(
        A, _S.OPERATING,
        SEND_INITIALIZE=R, SEND_INITIALIZED=R,
        RECV_INITIALIZE=R, RECV_INITIALIZED=R,
    ),
    # Serving stateless requests. initialize may still select the handshake for the rest of
    # the connection: nothing may be derived from earlier stateless requests. The server sends
    # no requests in 2026-07-28; notifications only about a request or on a listen stream.
    _S.STATELESS: _row(
        A, _S.STATELESS,
        SEND_INITIALIZE=R, SEND_INITIALIZED=R, SEND_PING=R, SEND_REQUEST=R,
        RECV_INITIALIZE=(A, _S.INITIALIZING), RECV_INITIALIZED=R, RECV_REQUEST=R,
        RECV_INITIALIZE_RESULT=R, RECV_INITIALIZE_ERROR=R,
        RECV_RESPONSE=R,  # it sent no request, so any response is unexpected
    ),
    _S.CLOSED: _CLIENT[_S.CLOSED],
}

# The core sends notifications/initialized itself (when the InitializeResult is accepted); the
# handshake messages and log messages, which have inputs of their own, only ever flow one way:
# these cells are refusals in every state. (The direction of the methods grouped under
# SEND_REQUEST/RECV_REQUEST/... is the method table's business, _capabilities.py.)
for _state in (_S.IDLE, _S.PROBING, _S.INITIALIZING, _S.OPERATING, _S.STATELESS):
    _CLIENT[_state][Input.SEND_INITIALIZED] = (R, _state)
    _CLIENT[_state][Input.SEND_LOG] = (R, _state)
    _CLIENT[_state][Input.RECV_INITIALIZE] = (R, _state)
    _CLIENT[_state][Input.RECV_INITIALIZED] = (R, _state)
    _SERVER[_state][Input.SEND_INITIALIZE] = (R, _state)
    _SERVER[_state][Input.SEND_INITIALIZED] = (R, _state)
    _SERVER[_state][Input.RECV_LOG] = (R, _state)
    _SERVER[_state][Input.RECV_INITIALIZE_RESULT] = (R, _state)
    _SERVER[_state][Input.RECV_INITIALIZE_ERROR] = (R, _state)
    # Only servers receive stateless requests; only clients probe.
    _CLIENT[_state][Input.RECV_STATELESS] = (R, _state)
    for _probe in (Input.START_PROBE, Input.PROBE_STATELESS, Input.PROBE_FALLBACK):
        _SERVER[_state][_probe] = (R, _state)
    # A connection is assumed initialized only when fresh (IDLE), and only by a server.
    _CLIENT[_state][Input.ASSUME_INITIALIZED] = (R, _state)
    if _state is not _S.IDLE:
        _SERVER[_state][Input.ASSUME_INITIALIZED] = (R, _state)
for _state in (_S.INITIALIZING, _S.OPERATING):
    # A connection that negotiated a handshake revision keeps it (see module docstring).
    _SERVER[_state][Input.RECV_STATELESS] = (R, _state)
    for _probe in (Input.START_PROBE, Input.PROBE_STATELESS, Input.PROBE_FALLBACK):
        _CLIENT[_state][_probe] = (R, _state)

#: (role, state, input) -> (verdict, next state). Total over all three enums.
TRANSITIONS: dict[tuple[Role, State, Input], tuple[Verdict, State]] = {
    (role, state, inp): cell
    for role, table in ((Role.CLIENT, _CLIENT), (Role.SERVER, _SERVER))
    for state, row in table.items()
    for inp, cell in row.items()
}


def transition(role: Role, state: State, inp: Input) -> tuple[Verdict, State]:
    """Look up one cell of the lifecycle table."""
    return TRANSITIONS[role, state, inp]


_SEND_REQUEST = {"initialize": Input.SEND_INITIALIZE, "ping": Input.SEND_PING}
_RECV_REQUEST = {"initialize": Input.RECV_INITIALIZE, "ping": Input.RECV_PING}
_SEND_NOTIFICATION = {
    "notifications/initialized": Input.SEND_INITIALIZED,
    "notifications/message": Input.SEND_LOG,
    "notifications/cancelled": Input.SEND_UTILITY,
    "notifications/progress": Input.SEND_UTILITY,
}
_RECV_NOTIFICATION = {
    "notifications/initialized": Input.RECV_INITIALIZED,
    "notifications/message": Input.RECV_LOG,
    "notifications/cancelled": Input.RECV_UTILITY,
    "notifications/progress": Input.RECV_UTILITY,
}


def classify_request(method: str, *, sending: bool) -> Input:
    """The lifecycle input for a request with this method."""
    if sending:
        return _SEND_REQUEST.get(method, Input.SEND_REQUEST)
    return _RECV_REQUEST.get(method, Input.RECV_REQUEST)


def classify_notification(method: str, *, sending: bool) -> Input:
    """The lifecycle input for a notification with this method."""
    if sending:
        return _SEND_NOTIFICATION.get(method, Input.SEND_NOTIFICATION)
    return _RECV_NOTIFICATION.get(method, Input.RECV_NOTIFICATION)
