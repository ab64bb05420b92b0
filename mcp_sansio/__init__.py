"""mcp-sansio: the Model Context Protocol, sans I/O.

A connection object takes bytes (or decoded messages) in and hands events out; it takes
``send_*`` calls and hands bytes (or messages) out. It never reads a socket, a clock or a
random source: time comes in as ``now`` arguments. See the documentation's "Call order
contract" for how to drive it.
"""

from __future__ import annotations

from ._capabilities import METHODS, MethodRule
from ._codec import DEFAULT_MAX_DEPTH
from ._connection import (
    DEFAULT_REQUEST_TIMEOUT,
    LOG_LEVELS,
    ClientConnection,
    Connection,
    ServerConnection,
)
from ._errors import (
    NEED_DATA,
    ErrorCode,
    LocalProtocolError,
    NeedData,
    ProtocolError,
    RemoteProtocolError,
)
from ._events import (
    CancelRequested,
    CloseReason,
    ConnectionClosed,
    ErrorResponse,
    Event,
    Initialized,
    InputRequired,
    LateResponse,
    MessageRejected,
    Notification,
    Progress,
    Request,
    RequestAborted,
    RequestCancelled,
    RequestFailed,
    RequestId,
    RequestTimedOut,
    Response,
    SubscriptionAcknowledged,
    UnexpectedResponse,
)
from ._framing.ndjson import DEFAULT_MAX_LINE
from ._keyring import KeyRing, KeySource
from ._sessionless import SessionlessError
from ._state import Role, State
from ._stateless import InvalidRequestState, open_state, principal_key, seal_state
from ._versions import (
    FEATURES,
    HANDSHAKE_REVISIONS,
    KNOWN_REVISIONS,
    STATELESS_REVISIONS,
    Era,
    judge_probe,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_LINE",
    "DEFAULT_REQUEST_TIMEOUT",
    "FEATURES",
    "HANDSHAKE_REVISIONS",
    "KNOWN_REVISIONS",
    "STATELESS_REVISIONS",
    "LOG_LEVELS",
    "METHODS",
    "NEED_DATA",
    "CancelRequested",
    "ClientConnection",
    "CloseReason",
    "Connection",
    "ConnectionClosed",
    "Era",
    "ErrorCode",
    "ErrorResponse",
    "Event",
    "Initialized",
    "InputRequired",
    "InvalidRequestState",
    "KeyRing",
    "KeySource",
    "LateResponse",
    "LocalProtocolError",
    "MessageRejected",
    "MethodRule",
    "NeedData",
    "Notification",
    "Progress",
    "ProtocolError",
    "RemoteProtocolError",
    "Request",
    "RequestAborted",
    "RequestCancelled",
    "RequestFailed",
    "RequestId",
    "RequestTimedOut",
    "Response",
    "Role",
    "ServerConnection",
    "SessionlessError",
    "State",
    "SubscriptionAcknowledged",
    "UnexpectedResponse",
    "judge_probe",
    "open_state",
    "principal_key",
    "seal_state",
]
