"""Raw bytes against the sans-IO HTTP server in memory: no request may crash, confuse or
outlive its welcome.

Hypothesis draws one TCP connection's bytes from the grammar in :mod:`fuzz.http_grammar`
(valid, near-valid and hostile requests, pipelined), cuts them into reads at drawn points
(or at every byte), optionally ends with end of file, and feeds them to a fresh
:class:`~mcp_sansio.http.HTTPServer` through :func:`fuzz.http_target.serve`. The invariants
are :func:`fuzz.http_target.check`'s (each cites its RFC section there):

1. nothing escapes the server;
2. every response is well-formed HTTP/1.1 (read back by a client-side h11 connection);
3. only requests that RFC 9112 section 6 frames whole and unambiguously reach the MCP layer,
   with the bytes a strict reading gives; one response per request read whole, in order, and
   beyond those only the wire's refusal; after ``Connection: close`` nothing, and it closes;
4. the channel's buffered bytes stay under the head limit plus the body limit plus a read;
5. a fresh connection is served afterwards.

Plus, here: how the bytes are cut into reads changes nothing (the same requests reach the
MCP layer and get the same statuses), well-formed pipelined traffic is answered in full and
in order (RFC 9112 section 9.3.2), and the memory a hostile connection makes the server
allocate stays bounded (tracemalloc).

``MCP_SANSIO_FUZZ_EXAMPLES`` sets the number of examples (default 250 for the main test; the
others scale from it). The seeds of the coverage-guided run (:mod:`fuzz.http_seeds`), the
inputs the fuzzers stopped on, and the coverage-guided run's minimized corpus
(``fuzz/corpus/http/``) are replayed too.
"""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from mcp_sansio import NEED_DATA
from mcp_sansio.http import ResponseMode

from .http_grammar import connections, cuts
from .http_input import one_input
from .http_seeds import SEEDS
from .http_target import (
    HOST,
    MAX_BODY,
    MAX_HEADER,
    Answer,
    check,
    check_answers,
    frame,
    is_refusal,
    make_server,
    read_responses,
    serve,
)

EXAMPLES = int(os.environ.get("MCP_SANSIO_FUZZ_EXAMPLES", "250"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
MODES = st.sampled_from([ResponseMode.SSE, ResponseMode.JSON])
#: Every test here runs on both server wires: h11 (the reference) and httptools (llhttp).
#: Each must keep the invariants on its own; fuzz/test_http_wires_differential.py compares
#: their answers to the same bytes.
WIRES = pytest.mark.parametrize("wire", ["h11", "httptools"])

#: Inputs the fuzzers stopped on while their checks were being made precise (false alarms
#: of the checks, kept so that the checks stay precise), and the defects they found (HEAD;
#: Transfer-Encoding in HTTP/1.0; a whole head over the limit; Transfer-Encoding with
#: Content-Length -- the last one, which the main test's explicit example uses), as one
#: connection's bytes.
FOUND = [
    b"HEAD /mcp HTContent-Type: application/json\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: localhost:8000\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"a4;a=b\r\xb7{}\r\n0\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: localhost:8000\r\nExpect: 100-continue\r\n"
    b"Content-Length: 4\r\n\r\n{}",
    b"POST /mcp HTTP/1.1\r\nHost: localhost:8000\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"2\r\n{}\r\n0\r\nGET\r\n",
    b"POST /mcp HTTP/1.2\r\nHost: localhost:8000\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"GET /mcp HTTP/1.1\r\nHost: localhost:8000\r\nX-Ctl: v\x0f\r\n\r\n",
    b"HEAD /mcp HTTP/1.1\r\nHost: localhost:8000\r\n\r\n",
    b"POST /mcp HTTP/1.0\r\nHost: localhost:8000\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"GET /" + b"a" * 3000 + b" HTTP/1.1\r\nHost: localhost:8000\r\n\r\n",
    # Refusals of requests framed whole that keep the connection open (the oracle once
    # took every plain-text answer for the wire's refusal): a target in no form of RFC 9112
    # section 3.2 (400), CONNECT (501, RFC 9110 section 15.6.2) followed by a request that is
    # served, and an authority-form POST after a DELETE (400).
    b"CONNECT 0 HTTP/1.1\r\nHost:8\n\r\n",
    b"CONNECT localhost:8000 HTTP/1.1\r\nHost: localhost:8000\r\n\r\n"
    b"OPTIONS * HTTP/1.1\r\nHost: localhost:8000\r\n\r\n",
    b"DELETE /mcp HTTP/1.1\r\nHost: localhost:8000\r\nMcp-Session-Id: session-1\r\n\r\n"
    b"POST localhost:8000 HTTP/1.1\r\nHost: localhost:8000\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /mcp HTTP/1.1\r\nHost: localhost:8000\r\nTransfer-Encoding: chunked\r\n"
    b"Content-Length: 5\r\n\r\n0\r\n\r\n",
]


CORPUS = Path(__file__).parent / "corpus" / "http"


@WIRES
def test_the_kept_corpus_replays_clean(wire: str) -> None:
    """Every input of the coverage-guided run's minimized corpus, decoded and checked as the
    run did (:func:`fuzz.http_input.one_input`)."""
    files = sorted(CORPUS.iterdir())
    assert len(files) > 100  # the corpus is there (a few hundred inputs)
    for path in files:
        one_input(path.read_bytes(), wire)


@WIRES
@pytest.mark.parametrize("data", SEEDS + FOUND)
@pytest.mark.parametrize("eof", [False, True])
def test_seeds_and_found_inputs(data: bytes, eof: bool, wire: str) -> None:
    whole = serve([data], eof=eof, wire=wire)
    check(whole, data)
    bytewise = serve([data[i:i + 1] for i in range(len(data))], eof=eof, wire=wire)
    check(bytewise, data)
    assert _summary(bytewise) == _summary(whole)


def _answer(status: int, *, close: bool = False, plain: bool = True,
            complete: bool = True) -> Answer:
    headers = {b"content-type": b"text/plain; charset=utf-8" if plain else b"application/json"}
    if close:
        headers[b"connection"] = b"keep-alive, Close"
    return Answer(status, headers, complete)


def test_the_answer_pairing_accepts_what_the_rfc_allows() -> None:
    # A refusal of a request framed whole, the connection kept open (CONNECT 501, then a
    # served request).
    check_answers([_answer(501), _answer(200, plain=False)], 2, False, "end")
    # The wire's refusal of the request after the framed ones, then the close.
    check_answers([_answer(202, plain=False), _answer(400, close=True)], 1, True, "invalid")
    # A stream still open as the last answer.
    check_answers([_answer(200, plain=False, complete=False)], 1, False, "end")


@pytest.mark.parametrize(("answers", "settled", "closed"), [
    # An answer (not a refusal) to a request that was not framed whole (RFC 9112 section 6).
    ([_answer(200, plain=False)], 0, False),
    ([_answer(400)], 0, False),  # a refusal beyond the framed requests that keeps it open
    ([_answer(200, close=True)], 0, True),  # a "refusal" with a success status
    ([_answer(400, close=True), _answer(400, close=True)], 0, True),  # two beyond
    # Something after "Connection: close", or the connection left open (RFC 9112 9.6).
    ([_answer(400, close=True), _answer(200, plain=False)], 2, True),
    ([_answer(200, plain=False, close=True)], 1, False),
    ([_answer(200, plain=False, complete=False), _answer(200)], 2, False),  # cut short
])
def test_the_answer_pairing_refuses_what_the_rfc_forbids(
    answers: list[Answer], settled: int, closed: bool,
) -> None:
    with pytest.raises(AssertionError):
        check_answers(answers, settled, closed, "invalid")


def _summary(outcome: object) -> tuple[object, ...]:
    handed = [(r.method, r.target, list(r.headers.raw), r.body)
              for r in outcome.handed]  # type: ignore[attr-defined]
    # A refusal's status may differ with the cut (a head both too long and malformed is 431
    # when the reads stop before its end, 400 when it came whole): only that it is one.
    statuses = tuple("refused" if is_refusal(a) else a.status
                     for a in read_responses(outcome))  # type: ignore[arg-type]
    return tuple(handed), statuses


@WIRES
@FUZZ
@given(reqs=connections(), data=st.data(), eof=st.booleans(), mode=MODES)
@example(reqs=[FOUND[-1]], data=None, eof=False, mode=ResponseMode.SSE).via("TE + CL")
def test_any_connection(reqs: list[bytes], data: st.DataObject | None, eof: bool,
                        mode: ResponseMode, wire: str) -> None:
    stream = b"".join(reqs)
    chunks = data.draw(cuts(stream)) if data is not None else [stream]
    outcome = serve(chunks, eof=eof, response_mode=mode, wire=wire)
    answers = check(outcome, stream)
    # What the grammar reached (--hypothesis-show-statistics): the strict reading's verdict,
    # and whether the wire refused, the MCP layer answered, or neither.
    event(f"framing: {frame(stream)[1]}")
    event("refused" if any(map(is_refusal, answers)) else
          f"served {len(outcome.handed)}" if outcome.handed else "no answer")
    if len(chunks) > 1:
        # RFC 9112 section 2.1: the message is the byte sequence; where TCP cut it is
        # meaningless. The same requests reach the MCP layer, answered with the same
        # statuses, and the same ones are refused.
        whole = serve([stream], eof=eof, response_mode=mode, wire=wire)
        assert _summary(outcome) == _summary(whole)


@WIRES
@settings(FUZZ, max_examples=max(10, EXAMPLES // 3))
@given(reqs=connections(clean=True), data=st.data(), mode=MODES)
def test_well_formed_pipelines_are_answered_in_full_and_in_order(
    reqs: list[bytes], data: st.DataObject, mode: ResponseMode, wire: str,
) -> None:
    stream = b"".join(reqs)
    outcome = serve(data.draw(cuts(stream)), response_mode=mode, wire=wire)
    answers = check(outcome, stream)
    framed, why, _ = frame(stream)
    assert why == "end" and len(framed) == len(reqs)
    # RFC 9112 section 9.3.2: pipelined requests are answered in order, each once; none is
    # refused by the wire, and the connection stays open (HTTP/1.1 persistence, section
    # 9.3) -- unless one opened a stream (a GET), which holds the connection from then on.
    assert not any(is_refusal(a) for a in answers), answers
    assert [r.body for r in outcome.handed] == [f.body for f in framed[:len(outcome.handed)]]
    open_stream = bool(answers) and not answers[-1].complete
    assert len(answers) == len(reqs) or open_stream, (answers, reqs)
    assert not outcome.closed


def _hostile_streams() -> Iterator[tuple[str, Iterator[bytes]]]:
    head = b"POST /mcp HTTP/1.1\r\nHost: " + HOST.encode() + b"\r\n"

    def endless_head() -> Iterator[bytes]:
        yield head
        while True:
            yield b"X-A: " + b"a" * 1000 + b"\r\n"

    def endless_line() -> Iterator[bytes]:
        yield b"GET /"
        while True:
            yield b"a" * 1000

    def endless_chunks() -> Iterator[bytes]:
        yield head + b"Transfer-Encoding: chunked\r\n\r\n"
        while True:
            yield b"3e8\r\n" + b"a" * 1000 + b"\r\n"

    def flood_behind_a_stream() -> Iterator[bytes]:
        # A GET on the session opens a stream that never ends; pipelined bytes pile up
        # behind it.
        yield (b"GET /mcp HTTP/1.1\r\nHost: " + HOST.encode() + b"\r\nAccept: "
               b"text/event-stream\r\nMcp-Session-Id: session-1\r\n"
               b"MCP-Protocol-Version: 2025-11-25\r\n\r\n")
        while True:
            yield b"GET /mcp HTTP/1.1\r\n" + b"x" * 1000

    yield "an endless head", endless_head()
    yield "an endless request line", endless_line()
    yield "an endless chunked body", endless_chunks()
    yield "a flood behind an open stream", flood_behind_a_stream()


@WIRES
@pytest.mark.parametrize(("name", "source"), list(_hostile_streams()))
def test_a_hostile_connection_costs_bounded_memory(name: str, source: Iterator[bytes],
                                                   wire: str) -> None:
    # Invariant 4, measured: 1 MiB fed in 1 KiB reads. The server refuses or closes within
    # the head and body limits (RFC 9110 section 15.5.14 413, RFC 6585 section 5 431; RFC
    # 9112 section 3 for a request line that never ends), so what it allocates for the
    # connection stays near those limits, not near what was sent.
    server = make_server(wire=wire)
    channel = server.new_channel(now=1.0)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        sent = 0
        for chunk in source:
            if channel.closed or sent > 1 << 20:
                break
            channel.receive_data(chunk, now=1.0)
            while server.next_event() is not NEED_DATA:
                pass
            server.data_to_send()
            sent += len(chunk)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert channel.closed, f"{name}: the connection is still read after {sent} bytes"
    assert sent <= 2 * (MAX_HEADER + MAX_BODY) + 2000, (name, sent)
    assert peak < 8 * (MAX_HEADER + MAX_BODY), (name, peak)  # measured: 7-11 KB
