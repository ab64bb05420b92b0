"""Server-Sent Events framing (the WHATWG ``text/event-stream`` format), both directions.

Theory of operation
-------------------
An event stream is UTF-8 text cut into lines (by CRLF, LF or CR). ``field: value`` lines
accumulate an event; a blank line dispatches it. The fields are ``event`` (the type,
``message`` by default), ``data`` (lines joined with LF), ``id`` (becomes the stream's last
event id, which a client sends back as ``Last-Event-ID`` to resume) and ``retry`` (the
reconnection delay in milliseconds). Lines starting with ``:`` are comments (keep-alives).

:func:`encode_event` writes one event; :class:`SSEParser` reads a stream fed in chunks of
any size -- a line, even a CRLF pair or a multi-byte character, may be split anywhere -- and
yields the same events whether it is fed the whole stream at once or one byte at a time. It
works on bytes: ``data`` stays bytes (a JSON-RPC message for MCP), so a message is decoded
once, by the JSON codec. Memory is bounded: an event or a line larger than ``max_event_size``
raises :class:`SSEError`, and the caller drops the stream.

Dispatch follows the WHATWG algorithm: an event whose data buffer is empty is not dispatched
(but its ``id`` still sets the last event id); the final LF of the data is removed. MCP's
*priming* event (``id`` plus an empty ``data`` line, ``2025-11-25/basic/transports.mdx``)
therefore dispatches with ``data == b""``: MCP code skips it as a message and keeps its id.
"""

from __future__ import annotations

import attrs

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "SSEError",
    "SSEEvent",
    "SSEParser",
    "encode_comment",
    "encode_event",
]

#: Largest event (all its data lines) a parser accepts by default: the core's message
#: limit (32 MiB, see ``mcp_sansio.DEFAULT_MAX_LINE``), since one event carries one message.
DEFAULT_MAX_EVENT_SIZE = 32 * 1024 * 1024


class SSEError(Exception):
    """The event stream broke a limit (an event or a line too large)."""


@attrs.frozen(kw_only=True, slots=True)
class SSEEvent:
    """One dispatched event. ``id`` is the stream's last event id *after* this event (the
    WHATWG model: it persists across events until an ``id`` field changes it)."""

    data: bytes
    event: str = "message"
    id: str | None = None
    retry: int | None = None


def _field_bytes(value: str) -> bytes:
    if "\n" in value or "\r" in value:
        raise ValueError(f"an SSE field value cannot contain a line break: {value!r}")
    return value.encode("utf-8")


def encode_event(
    data: bytes | None = None,
    *,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
) -> bytes:
    """One event, ready to write. ``data`` may hold line breaks (each line becomes a ``data:``
    line; CRLF and CR are read as LF by the parser). ``data=b""`` writes one empty ``data``
    line (the priming event); ``data=None`` writes none (e.g. a ``retry``-only event)."""
    parts: list[bytes] = []
    if event is not None:
        parts.append(b"event: " + _field_bytes(event) + b"\n")
    if id is not None:
        if "\0" in id:
            raise ValueError("an SSE event id cannot contain NUL")
        parts.append(b"id: " + _field_bytes(id) + b"\n")
    if retry is not None:
        if isinstance(retry, bool) or not isinstance(retry, int) or retry < 0:
            raise ValueError("retry must be a non-negative integer (milliseconds)")
        parts.append(b"retry: %d\n" % retry)
    if data is not None:
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        for line in data.split(b"\n"):
            parts.append(b"data: " + line + b"\n" if line else b"data:\n")
    parts.append(b"\n")
    return b"".join(parts)


def encode_comment(text: str = "") -> bytes:
    """A comment line (ignored by parsers): a keep-alive."""
    return b":" + _field_bytes(text) + b"\n\n" if text else b":\n\n"


class SSEParser:
    """Incremental ``text/event-stream`` parser.

    :param max_event_size: the largest event (accumulated data) and the longest line
        accepted, in bytes.
    """

    __slots__ = (
        "_buffer", "_data", "_data_size", "_event", "_pending_cr", "_retry", "_scanned",
        "_started", "last_event_id", "max_event_size", "retry",
    )

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        self._buffer = bytearray()
        self._scanned = 0  # bytes at the start of _buffer known to hold no line break
        self._pending_cr = False  # the last chunk ended in CR: a following LF belongs to it
        self._started = False  # past the optional BOM
        self._data: list[bytes] = []
        self._data_size = 0
        self._event: str | None = None
        self._retry: int | None = None
        #: The last event id seen (sent back as ``Last-Event-ID`` to resume).
        self.last_event_id: str | None = None
        #: The last ``retry`` value seen, in milliseconds.
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse ``chunk``; return the events it completed, in order."""
        if not chunk:
            return []
        buf = self._buffer
        if self._pending_cr:
            self._pending_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buf += chunk
        if not self._started:
            if len(buf) < 3 and b"\xef\xbb\xbf".startswith(bytes(buf)):
                return []
            if buf.startswith(b"\xef\xbb\xbf"):
                del buf[:3]
            self._started = True
        events: list[SSEEvent] = []
        start = 0
        size = len(buf)
        while start < size:
            scan = max(start, self._scanned)
            lf = buf.find(b"\n", scan)
            cr = buf.find(b"\r", scan, lf if lf >= 0 else size)
            if cr >= 0:
                end, nxt = cr, cr + 1
                if nxt < size and buf[nxt] == 0x0A:
                    nxt += 1
                elif nxt == size:
                    self._pending_cr = True
            elif lf >= 0:
                end, nxt = lf, lf + 1
            else:
                break
            self._line(bytes(buf[start:end]), events)
            start = nxt
            self._scanned = 0
        del buf[:start]
        self._scanned = len(buf)
        if len(buf) > self.max_event_size:
            raise SSEError(f"an event-stream line is longer than {self.max_event_size} bytes")
        return events

    def _line(self, line: bytes, events: list[SSEEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[0] == 0x3A:  # ':' comment
            return
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data_size += len(value) + 1
            if self._data_size > self.max_event_size:
                raise SSEError(f"an event is larger than {self.max_event_size} bytes")
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value and value.isdigit():
            self._retry = int(value)
            self.retry = self._retry
        # any other field is ignored (WHATWG)

    def _dispatch(self, events: list[SSEEvent]) -> None:
        data, event, retry = self._data, self._event, self._retry
        self._data, self._data_size, self._event, self._retry = [], 0, None, None
        if not data:
            return
        events.append(SSEEvent(
            data=b"\n".join(data), event=event or "message", id=self.last_event_id,
            retry=retry,
        ))
