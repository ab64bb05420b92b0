"""JSON-RPC 2.0 envelopes: strict parsing and compact serialization.

Theory of operation
-------------------
:func:`decode` turns one JSON text into a Python value (-32700 on anything that is not
standard, UTF-8, reasonably nested JSON). :func:`parse` classifies one decoded value as a
request, notification, result response or error response and checks the envelope rules of
JSON-RPC 2.0 (sections 4 and 5) as MCP tightens them (spec-digest section e):

* ``jsonrpc`` is exactly ``"2.0"``;
* a request id is a string or an integer -- never null, a bool or a float;
* ``method`` is a string; ``params``, when present, is an object (MCP never uses positional
  params);
* a response has ``result`` xor ``error``; ``result`` is an object; ``error`` is an object
  with an integer ``code`` and a string ``message``.

A rule broken raises :class:`InvalidMessage`, which says whether the peer gets an answer:
a broken *request* (or anything unrecognisable) is answered -32600 with the id if it could be
read, else ``null`` (JSON-RPC 2.0 section 5); something shaped like a notification or a
response is never answered (section 4.1; answering a response could make two broken peers
talk forever).

Parsed messages are plain tuples ``(kind, id, method, payload)`` -- the hot path allocates
nothing else. Batches (JSON arrays) are split by the connection, which knows the negotiated
revision.
"""

from __future__ import annotations

import enum
from typing import Any

from . import _json
from ._errors import ErrorCode, RemoteProtocolError
from ._events import RequestId

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "InvalidMessage",
    "MessageKind",
    "Parsed",
    "decode",
    "encode",
    "error_message",
    "notification_message",
    "parse",
    "request_message",
    "result_message",
]

#: Default JSON nesting limit. Deep enough for any realistic tool schema or structured result
#: (JSON Schema nests about two levels per property level, the envelope adds three), far
#: below the interpreter's recursion limit (1000) so neither JSON library nor any walk over
#: a message can hit ``RecursionError``, and below orjson's own fixed limit (1024).
DEFAULT_MAX_DEPTH = 128


class MessageKind(enum.IntEnum):
    REQUEST = 0
    NOTIFICATION = 1
    RESULT = 2
    ERROR = 3


#: (kind, id, method, payload): payload is params (or None) for requests and notifications,
#: the result object for results, the error object for errors.
Parsed = tuple[MessageKind, RequestId | None, str | None, Any]


class InvalidMessage(RemoteProtocolError):
    """A single message broke an envelope rule.

    :ivar request_id: the id, if it could be read (else None).
    :ivar method: the method, if it could be read.
    :ivar reply: whether JSON-RPC wants an error response sent back.
    """

    def __init__(
        self,
        message: str,
        *,
        code: int = ErrorCode.INVALID_REQUEST,
        request_id: RequestId | None = None,
        method: str | None = None,
        reply: bool = True,
    ):
        super().__init__(message, code=code)
        self.request_id = request_id
        self.method = method
        self.reply = reply


def decode(data: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """Decode one JSON text; any failure is -32700 (Parse error) with no readable id."""
    try:
        return _json.loads(data, max_depth)
    except _json.DecodeError as exc:
        raise InvalidMessage(f"Parse error: {exc}", code=ErrorCode.PARSE_ERROR) from None


def encode(message: Any) -> bytes:
    """Compact UTF-8 JSON for one message (or batch). Raises ``EncodeError``."""
    return _json.dumps(message)


def _is_id(value: object) -> bool:
    return (type(value) is int) or (type(value) is str)  # bool and float are refused


_REQUEST, _NOTIFICATION, _RESULT, _ERROR = MessageKind


def parse(obj: Any) -> Parsed:
    """Classify and validate one decoded JSON-RPC message (not a batch)."""
    if type(obj) is not dict:
        raise InvalidMessage("Invalid Request: a message must be a JSON object")
    method = obj.get("method")
    has_id = "id" in obj
    msg_id = obj.get("id")
    if method is not None or ("result" not in obj and "error" not in obj):
        # Shaped like a request or notification (or like nothing at all).
        readable_id = msg_id if _is_id(msg_id) else None
        if type(method) is not str:
            raise InvalidMessage(
                "Invalid Request: 'method' must be a string", request_id=readable_id
            )
        if obj.get("jsonrpc") != "2.0":
            raise InvalidMessage(
                "Invalid Request: 'jsonrpc' must be \"2.0\"",
                request_id=readable_id, method=method, reply=has_id,
            )
        if has_id and readable_id is None:
            raise InvalidMessage(
                "Invalid Request: 'id' must be a string or an integer", method=method
            )
        if "result" in obj or "error" in obj:
            raise InvalidMessage(
                "Invalid Request: a request cannot carry 'result' or 'error'",
                request_id=readable_id, method=method, reply=has_id,
            )
        params = obj.get("params")
        if (params is not None or "params" in obj) and type(params) is not dict:
            raise InvalidMessage(
                "Invalid Request: 'params' must be an object",
                request_id=readable_id, method=method, reply=has_id,
            )
        if has_id:
            return _REQUEST, msg_id, method, params
        return _NOTIFICATION, None, method, params

    # Shaped like a response: never answered, only reported.
    readable_id = msg_id if _is_id(msg_id) else None
    if obj.get("jsonrpc") != "2.0":
        raise InvalidMessage(
            "Invalid response: 'jsonrpc' must be \"2.0\"", request_id=readable_id, reply=False
        )
    if "result" in obj:
        if "error" in obj:
            raise InvalidMessage(
                "Invalid response: both 'result' and 'error'", request_id=readable_id,
                reply=False,
            )
        if readable_id is None:
            raise InvalidMessage(
                "Invalid response: 'id' must be a string or an integer", reply=False
            )
        result = obj["result"]
        if type(result) is not dict:
            raise InvalidMessage(
                "Invalid response: 'result' must be an object", request_id=readable_id,
                reply=False,
            )
        return _RESULT, msg_id, None, result
    error = obj["error"]
    if has_id and msg_id is not None and readable_id is None:
        raise InvalidMessage("Invalid response: 'id' must be a string or an integer",
                             reply=False)
    if (
        type(error) is not dict
        or type(error.get("code")) is not int
        or type(error.get("message")) is not str
    ):
        raise InvalidMessage(
            "Invalid response: 'error' must have an integer 'code' and a string 'message'",
            request_id=readable_id, reply=False,
        )
    return _ERROR, readable_id, None, error


# -- builders (the connection's only way to make wire messages) -------------------------------


def request_message(request_id: RequestId, method: str, params: dict[str, Any] | None) -> dict[
    str, Any
]:
    if params is None:
        return {"jsonrpc": "2.0", "id": request_id, "method": method}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def notification_message(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    if params is None:
        return {"jsonrpc": "2.0", "method": method}
    return {"jsonrpc": "2.0", "method": method, "params": params}


def result_message(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_message(
    request_id: RequestId | None, code: int, message: str, data: Any = None
) -> dict[str, Any]:
    """An error response. ``request_id=None`` writes ``"id": null`` (JSON-RPC 2.0 section 5:
    the id could not be read)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}
