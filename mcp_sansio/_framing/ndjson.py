"""Newline-delimited JSON framing, for stdio (``basic/transports.mdx``, "stdio").

Theory of operation
-------------------
Each message is one line of UTF-8 JSON with no embedded newline; a 2025-03-26 batch is one
line too. :class:`LineSplitter` cuts a byte stream into lines:

* chunks may split a line anywhere (even inside a multi-byte character): the partial line is
  kept until its newline arrives;
* ``\\r\\n`` is tolerated (the ``\\r`` is dropped) and blank lines are skipped;
* a line longer than ``max_line`` is *refused*: the bytes seen so far are dropped at once,
  the rest of that line is discarded as it arrives, and :data:`OVERSIZED` is produced in its
  place so that the connection can answer it. The limit counts the message, not a CR before
  its LF. Memory stays bounded by ``max_line`` (+ 1 for a CR awaiting its LF) plus one chunk
  whatever the peer sends.

Each chunk is scanned once (the search for a newline resumes where the previous one
stopped), so feeding a large message in small chunks takes linear time.
"""

from __future__ import annotations

import enum

__all__ = ["DEFAULT_MAX_LINE", "OVERSIZED", "LineSplitter", "Oversized"]

#: Default maximum line (message) size: 32 MiB. Large enough for tool results and resources
#: carrying multi-megabyte base64 images, audio or blobs (base64 adds a third), small enough
#: that a peer that never sends a newline cannot make us hold more than that.
DEFAULT_MAX_LINE = 32 * 1024 * 1024


class Oversized(enum.Enum):
    OVERSIZED = "OVERSIZED"


#: Produced in place of a line that exceeded ``max_line``.
OVERSIZED = Oversized.OVERSIZED


class LineSplitter:
    """Cuts a byte stream into lines, bounded by ``max_line`` bytes per line."""

    __slots__ = ("_buffer", "_discarding", "_scanned", "max_line")

    def __init__(self, max_line: int = DEFAULT_MAX_LINE) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self.max_line = max_line
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer known to hold no newline
        self._discarding = False  # inside an oversized line: drop until its newline

    @property
    def pending(self) -> int:
        """Bytes held for a line whose newline has not arrived."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        """Add ``data``; return the complete lines it finished, in order."""
        if not self._buffer and not self._discarding and type(data) is bytes:
            # Fast path: a chunk that is exactly one whole line, nothing buffered (the usual
            # case on a pipe between two processes that write one message at a time).
            newline = data.find(b"\n")
            if newline == len(data) - 1 and newline <= self.max_line:
                line = data[:-1]
                if line.endswith(b"\r"):
                    line = line[:-1]
                return [line] if line.strip() else []
        out: list[bytes | Oversized] = []
        buffer = self._buffer
        start = 0
        if self._discarding:
            end = data.find(b"\n")
            if end < 0:
                return out
            self._discarding = False
            start = end + 1
        buffer += memoryview(data)[start:] if start else data
        while True:
            newline = buffer.find(b"\n", self._scanned)
            if newline < 0:
                # A trailing CR may be the first half of a CRLF: it does not count yet.
                if len(buffer) > self.max_line + (buffer[-1:] == b"\r"):
                    out.append(OVERSIZED)
                    buffer.clear()
                    self._discarding = True
                self._scanned = len(buffer)
                return out
            # The limit is on the message: a CR before the LF does not count against it.
            length = newline - 1 if newline and buffer[newline - 1] == 0x0D else newline
            if length > self.max_line:
                out.append(OVERSIZED)
            else:
                line = bytes(buffer[:newline])
                if line.endswith(b"\r"):
                    line = line[:-1]
                if line.strip():
                    out.append(line)
            del buffer[: newline + 1]  # bytearray drops a prefix without copying the rest
            self._scanned = 0

    def eof(self) -> bytes | None:
        """End of stream: the unterminated tail, if any (a truncated message)."""
        tail = bytes(self._buffer).strip()
        self._buffer.clear()
        self._scanned = 0
        self._discarding = False
        return tail or None


def frame(message: bytes) -> bytes:
    """One encoded message as one line."""
    return message + b"\n"
