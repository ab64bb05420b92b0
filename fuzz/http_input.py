"""One coverage-guided fuzzer input for the HTTP server: how it is decoded and checked.

Shared by ``fuzz/atheris_http.py`` (which needs atheris) and the replay of the kept corpus
``fuzz/corpus/http/`` in ``fuzz/test_http_raw.py`` (which does not). An input's first byte
picks the server's response mode (bit 0: SSE or JSON), whether the client ends with end of
file (bit 1), and how the rest is cut into reads ((byte >> 2) % 3: whole, byte by byte, or
after each of the next four bytes' values plus one); the rest is the byte stream of one TCP
connection, fed to a fresh in-memory server by :func:`fuzz.http_target.serve` and checked by
:func:`fuzz.http_target.check`. When it was cut, the cut must not matter: the same requests
reach the MCP layer, with the same statuses (or a refusal both times), and the same bytes go
out up to a refusal, whose text is h11's message and may quote what was buffered.
"""

from __future__ import annotations

from typing import Any

from mcp_sansio.http import ResponseMode

from .http_target import Outcome, check, is_refusal, read_responses, serve

MODES = (ResponseMode.SSE, ResponseMode.JSON)


def cut(payload: bytes, how: int, points: bytes) -> list[bytes]:
    """The reads: whole (0), byte by byte (1), or cut after each of ``points``' bytes."""
    if how == 0 or not points:
        return [payload]
    if how == 1:
        return [payload[i:i + 1] for i in range(len(payload))]
    chunks = []
    start = 0
    for step in points:
        end = min(len(payload), start + step + 1)
        chunks.append(payload[start:end])
        start = end
    chunks.append(payload[start:])
    return chunks


def before_refusal(outcome: Outcome) -> bytes:
    end = outcome.out.find(b"content-type: text/plain")
    return outcome.out if end < 0 else outcome.out[:end]


def statuses(outcome: Outcome) -> list[int | str]:
    # A refusal's status may depend on the cut (a head too long *and* malformed is 431 when
    # the reads stop before its end, 400 when it came whole): only that it is one.
    return ["refused" if is_refusal(a) else a.status for a in read_responses(outcome)]


def summary(outcome: Outcome) -> list[tuple[Any, ...]]:
    return [(r.method, r.target, r.http_version, list(r.headers.raw), r.body)
            for r in outcome.handed]


def one_input(data: bytes, wire: str = "h11") -> None:
    """Decode one fuzzer input (see the module docstring) and check it on the server wire
    ``wire``."""
    if not data:
        return
    flags = data[0]
    mode = MODES[flags & 1]
    eof = bool(flags & 2)
    how = (flags >> 2) % 3
    points = data[1:5] if how == 2 else b""
    payload = data[1 + len(points):]
    if not payload:
        return
    whole = serve([payload], eof=eof, response_mode=mode, wire=wire)
    check(whole, payload)
    if how:
        chunks = cut(payload, how, points)
        split = serve(chunks, eof=eof, response_mode=mode, wire=wire)
        check(split, payload)
        # A refusal's text is h11's message, which may quote what was buffered: compare the
        # bytes before it, and the statuses.
        assert before_refusal(split) == before_refusal(whole), (
            "the reads' boundaries changed the bytes out")
        assert statuses(split) == statuses(whole), "the reads' boundaries changed a status"
        assert summary(split) == summary(whole), "the reads' boundaries changed the requests in"
