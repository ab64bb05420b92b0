"""Errors, JSON-RPC error codes and the ``NEED_DATA`` sentinel.

Theory of operation
-------------------
Two kinds of rule-breaking, as in h11:

* :class:`LocalProtocolError` -- *our* caller broke a rule (sent before ``initialize``,
  answered a request twice, sent after close...). It is raised synchronously by the ``send_*``
  method and nothing is queued, so the connection is exactly as it was before the call.
* :class:`RemoteProtocolError` -- the *peer* broke a rule. A single bad message is never
  raised: it is answered with the JSON-RPC error the spec asks for and reported as an event.
  The exception exists for the codec and framing layers, which raise it internally, and the
  connection catches it at one boundary (``Connection._receive_one``) and turns it into that
  answer and event.

Both carry the JSON-RPC ``code`` that describes the problem, so the boundary that answers
the peer never has to guess.
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = [
    "NEED_DATA",
    "ErrorCode",
    "LocalProtocolError",
    "NeedData",
    "ProtocolError",
    "RemoteProtocolError",
]


class ErrorCode(enum.IntEnum):
    """JSON-RPC 2.0 and MCP error codes.

    The five standard codes exist in every revision (JSON-RPC 2.0 section 5.1). The MCP
    codes are listed with the revisions that define them (spec-digest section e).
    """

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    #: Implementation-defined server error (JSON-RPC 2.0 section 5.1 reserves -32000..-32099;
    #: 2026-07-28 keeps -32000..-32019 for implementations): we use it for "too many requests
    #: in flight" (``max_incoming_requests``).
    TOO_MANY_REQUESTS = -32000
    #: 2024-11-05 .. 2025-11-25; 2026-07-28 uses -32602 (clients should still accept it).
    RESOURCE_NOT_FOUND = -32002
    #: 2025-11-25 only: URL-mode elicitation required.
    URL_ELICITATION_REQUIRED = -32042
    #: 2026-07-28: HTTP header does not match the body.
    HEADER_MISMATCH = -32020
    #: 2026-07-28: the server needs a client capability the request did not declare.
    MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
    #: 2026-07-28: the request's protocol version is not supported.
    UNSUPPORTED_PROTOCOL_VERSION = -32022


class ProtocolError(Exception):
    """Base class of every error the core raises about the protocol.

    :ivar code: the JSON-RPC error code that describes the problem.
    :ivar message: a short human-readable description (safe to send to the peer).
    :ivar data: optional structured detail, sent as the error's ``data`` member.
    """

    def __init__(self, message: str, *, code: int = ErrorCode.INVALID_REQUEST, data: Any = None):
        super().__init__(message)
        self.message = message
        self.code = int(code)
        self.data = data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code})"


class LocalProtocolError(ProtocolError):
    """The local application tried to do something the protocol forbids.

    Raised synchronously; the connection's state is unchanged and nothing was queued.
    """


class RemoteProtocolError(ProtocolError):
    """The peer sent something the protocol forbids.

    It never escapes the connection: the codec raises it (as ``InvalidMessage``) for one bad
    message, and the connection turns that into an error reply plus a
    :class:`~mcp_sansio.MessageRejected` event and goes on. It is public so that code
    driving the codec directly, and ``except ProtocolError`` handlers, can name it.
    """


class NeedData(enum.Enum):
    """Type of the :data:`NEED_DATA` sentinel (an enum so that ``is NEED_DATA`` narrows)."""

    NEED_DATA = "NEED_DATA"

    def __repr__(self) -> str:
        return "NEED_DATA"


#: Returned by ``next_event()`` when no event is ready: feed more input.
NEED_DATA = NeedData.NEED_DATA
