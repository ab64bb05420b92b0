"""2025-03-26 batches (JSON-RPC 2.0 section 6) on a connection, and replies JSON cannot carry.

Theory of operation
-------------------
A JSON array received on a connection is a batch. The connection asks the batch rule
(``_admission.py``) whether the revision allows one (only 2025-03-26 does,
``changelog.mdx``); :func:`process_batch` answers a refusal, or handles each member as the
connection handles a lone message, except that the replies go into one
:class:`~mcp_sansio._engine.Batch` record instead of the outbox: the core's own answers at
once, the application's as it sends them (the record counts the requests it still waits
for). :func:`flush_batch` queues the reply array when the batch has been read to its end and
nothing is awaited; a batch with no reply at all (only notifications) sends nothing.
``initialize`` never belongs in a batch and is refused inside it.

The core echoes what the peer sent in its automatic replies (the id, the method name). When
the peer handed a value in already decoded (``receive_message``) that JSON cannot write, such
as a lone surrogate, :func:`sanitized_reply` turns the reply into one it can.
"""

from __future__ import annotations

from typing import Any

from . import _codec
from ._admission import Refusal
from ._capabilities import SESSION_OPENERS
from ._engine import Batch, Engine
from ._errors import ErrorCode
from ._json import EncodeError
from ._state import State

__all__ = ["flush_batch", "process_batch", "sanitized_reply"]


def process_batch(conn: Engine, items: list[Any], refusal: Refusal | None) -> None:
    """Handle one received array, member by member, unless the batch rule refused it."""
    # JSON-RPC 2.0 section 6; MCP allows batches only in 2025-03-26 (changelog.mdx), and
    # never with initialize in them.
    if refusal is not None:
        conn._reply_error(None, None, refusal.code, refusal.message)
        return
    if not items:
        conn._reply_error(None, None, ErrorCode.INVALID_REQUEST, "Invalid Request: empty batch")
        return
    batch = Batch()
    for item in items:
        method = item.get("method") if type(item) is dict else None
        if (type(method) is str and method in SESSION_OPENERS) and "id" in item:
            conn._reply_error(
                batch, item.get("id") if _codec._is_id(item.get("id")) else None,
                ErrorCode.INVALID_REQUEST,
                f"Invalid Request: {method} must not be part of a batch", method,
            )
            continue
        if conn._state is State.CLOSED:
            break
        conn._handle(item, batch)
    batch.open = False
    flush_batch(conn, batch, answered=False)


def flush_batch(conn: Engine, batch: Batch, *, answered: bool) -> None:
    """Count an answer the batch waited for (``answered``); queue the reply array once the
    batch is read and nothing is awaited."""
    if answered:
        batch.waiting -= 1
    if not batch.open and batch.waiting == 0 and batch.replies:
        replies, batch.replies = batch.replies, []
        try:
            data = _codec.encode(replies)
        except EncodeError:  # see sanitized_reply
            replies = [sanitized_reply(r) if _unencodable(r) else r for r in replies]
            data = _codec.encode(replies)
        conn._outbox.append((replies, None, data))


def _unencodable(message: dict[str, Any]) -> bool:
    try:
        _codec.encode(message)
    except EncodeError:
        return True
    return False


def sanitized_reply(message: dict[str, Any]) -> dict[str, Any]:
    """An automatic reply that JSON cannot carry because it echoes what the peer handed in
    already decoded (``receive_message``), e.g. a lone surrogate in an id or a method name:
    the id becomes null (as for an unreadable id) and the text loses what cannot be written."""
    error = message.get("error") or {
        "code": ErrorCode.INVALID_REQUEST, "message": "Invalid Request: unencodable id"}
    text = str(error.get("message", "")).encode("utf-8", "replace").decode("utf-8")
    request_id = message.get("id")
    try:
        _codec.encode(request_id)
    except EncodeError:
        request_id = None
    return _codec.error_message(request_id, error["code"], text)
