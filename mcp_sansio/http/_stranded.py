"""The requests of a stream whose writer is gone: ended with an error instead of waited on.

Theory of operation
-------------------
On a shared server (:mod:`mcp_sansio.http._shared`) only the worker that runs a POST's
requests writes their stream, and only it stores the stream's end. A worker killed while
it runs one never does: a client that resumes the stream elsewhere gets what the log holds
and then nothing, and clients that resume again and again (the official SDK's) wait for
ever. So the writer stores, as the stream's first event (the priming event, sent to the
client with empty data), an *opening record*: which requests' answers belong on the stream
(:func:`opening_record`). Once the writer is known to be gone, a worker that relays or
resumes the stream reads the whole log and finishes it in the writer's place
(:func:`stranded_answers`): a JSON-RPC error for each request of the record whose answer
the log does not hold -- the worker that ran it stopped and its outcome is unknown
(JSON-RPC 2.0 section 5.1: -32603, internal error) -- then the end marker. Every relay of the
stream, on any worker, sends those like any event and ends; a later resumption replays them.

Like :data:`~mcp_sansio.http._shared.STREAM_END`, a record is not a JSON text (it starts
with NUL): it is never sent to a client as data.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ._shared import STREAM_END

__all__ = ["STRANDED_CODE", "STREAM_OPEN", "is_opening", "opening_record",
           "stranded_answers"]

#: The start of an opening record's data.
STREAM_OPEN = b"\x00open "
#: The JSON-RPC error code of a request whose worker stopped (internal error).
STRANDED_CODE = -32603
_STRANDED_MESSAGE = ("the server worker that ran this request stopped; the request's "
                     "outcome is unknown")


def opening_record(request_ids: Iterable[Any]) -> bytes:
    """The first event of a stream carrying the answers to ``request_ids``."""
    return STREAM_OPEN + json.dumps(sorted(request_ids, key=repr)).encode()


def is_opening(data: bytes) -> bool:
    """Whether an event's data is an opening record (sent to a client as empty data)."""
    return data.startswith(STREAM_OPEN)


def stranded_answers(events: Iterable[tuple[int, bytes]]) -> list[bytes] | None:
    """For a stream's whole log (``(sequence, data)``), the error messages that finish it:
    one per request of its opening record with no answer in the log. None when there is
    nothing to finish: the stream has ended, or it has no opening record."""
    opened: list[Any] | None = None
    answered: set[str] = set()
    for _, data in sorted(events, key=lambda event: event[0]):
        if data == STREAM_END:
            return None
        if is_opening(data):
            try:
                ids = json.loads(data[len(STREAM_OPEN):])
            except ValueError:
                return None
            opened = ids if isinstance(ids, list) else None
            continue
        try:
            message = json.loads(data)
        except ValueError:
            continue
        if isinstance(message, dict) and "id" in message and (
                "result" in message or "error" in message) and "method" not in message:
            answered.add(json.dumps(message["id"]))
    if opened is None:
        return None
    return [json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
        "code": STRANDED_CODE, "message": _STRANDED_MESSAGE}}).encode()
        for request_id in opened if json.dumps(request_id) not in answered]
