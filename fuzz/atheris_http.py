"""Coverage-guided fuzzing of the sans-IO HTTP server with atheris (optional).

atheris is *not* a dependency of mcp-sansio; install it yourself (CPython on Linux or macOS)::

    pip install atheris
    python -m fuzz.atheris_http -dict=fuzz/http.dict -max_len=8192 \\
        -max_total_time=1800 /tmp/http-corpus fuzz/corpus/http

(run from the repository root; every argument goes to libFuzzer). Not collected by pytest
(no ``test_`` prefix). Each input's first byte picks the server's response mode, whether the
client ends with end of file, and how the rest is cut into reads (whole, byte by byte, or at
points taken from the next bytes); the rest is the byte stream of one TCP connection, fed to
a fresh in-memory server by :func:`fuzz.http_target.serve`. The checks are
:func:`fuzz.http_target.check` -- nothing escapes the server, every response is well-formed
HTTP/1.1, only requests framed whole and unambiguously (RFC 9112 section 6) reach the MCP
layer and a refusal closes the connection, memory stays bounded, a fresh connection is
served -- plus one of its own: the answer does not depend on how the bytes were cut into
reads (whole and cut give the same requests in, the same statuses -- or a refusal both times --
and the same bytes out up to a refusal, whose text is h11's message and may quote what was
buffered). A failed check is an
``AssertionError``, which libFuzzer reports as a crash and saves as ``crash-<sha1>``; replay
it with ``python -m fuzz.atheris_http crash-<sha1>``. h11 is instrumented too: its parser
is where the framing decisions are made.
"""

from __future__ import annotations

import sys
from typing import Any

import atheris

with atheris.instrument_imports(include=["mcp_sansio", "h11"]):
    import h11  # noqa: F401  (instrumented for coverage feedback)

    import mcp_sansio.http  # noqa: F401

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


def test_one_input(data: bytes) -> None:
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
    whole = serve([payload], eof=eof, response_mode=mode)
    check(whole, payload)
    if how:
        chunks = cut(payload, how, points)
        split = serve(chunks, eof=eof, response_mode=mode)
        check(split, payload)
        # A refusal's text is h11's message, which may quote what was buffered: compare the
        # bytes before it, and the statuses.
        assert before_refusal(split) == before_refusal(whole), (
            "the reads' boundaries changed the bytes out")
        assert statuses(split) == statuses(whole), "the reads' boundaries changed a status"
        assert summary(split) == summary(whole), "the reads' boundaries changed the requests in"


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
