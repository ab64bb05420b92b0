"""The same bytes into both server wires: h11 (the reference) and httptools (llhttp).

Hypothesis draws one connection's bytes from :mod:`fuzz.http_grammar` (valid, near-valid and
hostile requests, pipelined), and :func:`fuzz.http_target.serve` feeds them to a fresh
server on each wire. Both must hand the same requests to the MCP layer (method, target,
fields, body), answer them with the same statuses, refuse the same input with the same
status, and leave the connection open or closed alike. Where they may legitimately differ,
:data:`mcp_sansio.http._wire_httptools.DIFFERENCES` says so with the RFC text that allows
both; :func:`documented` recognizes those inputs, and for them the test still asserts the
shape of the difference: llhttp is the stricter one -- it hands over a prefix of what h11
hands over, then refuses (400, ``Connection: close``) -- never the more lenient one.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from mcp_sansio.http import ResponseMode
from mcp_sansio.http._wire_httptools import DIFFERENCES

from .http_grammar import connections, cuts
from .http_seeds import SEEDS
from .http_target import Outcome, is_refusal, read_responses, serve
from .test_http_raw import EXAMPLES, FOUND, FUZZ, MODES

#: The methods llhttp knows (llhttp's method table; any other token is refused 400).
_LLHTTP_METHODS = frozenset(
    b"DELETE GET HEAD POST PUT CONNECT OPTIONS TRACE COPY LOCK MKCOL MOVE PROPFIND PROPPATCH "
    b"SEARCH UNLOCK BIND REBIND UNBIND ACL REPORT MKACTIVITY CHECKOUT MERGE M-SEARCH NOTIFY "
    b"SUBSCRIBE UNSUBSCRIBE PATCH PURGE MKCALENDAR LINK UNLINK SOURCE QUERY".split())
_REQUEST_LINE = re.compile(rb"(?:\r?\n)*([^ \r\n]*) ([^ \r\n]*) ([^\r\n]*)\r?\n")
#: What h11 takes in a request-target (RFC 9112 section 3.2: visible ASCII).
_H11_TARGET = re.compile(rb"[\x21-\x7e]+\Z")
#: Control characters other than HTAB, CR and LF: h11 keeps them in a field value (RFC 9110
#: section 5.5: "recipients MAY retain such characters"), llhttp refuses them.
_CTL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _heads(data: bytes) -> list[bytes]:
    """The heads in a connection's bytes, roughly (up to each blank line): enough to spot
    the features :data:`DIFFERENCES` names."""
    return [part for part in re.split(rb"\r?\n\r?\n", data) if part]


def documented(data: bytes) -> str | None:
    """The entry of :data:`DIFFERENCES` these bytes fall under, if any."""
    if re.search(rb"(?<!\r)\n", data):
        return "bare LF as a line terminator"
    for head in _heads(data):
        line = _REQUEST_LINE.match(head + b"\r\n")
        if line is not None:
            method, target = line.group(1), line.group(2)
            if method and method not in _LLHTTP_METHODS and re.fullmatch(rb"[!-~]+", method):
                return "a method llhttp does not know (any token is a method for h11)"
            if (method != b"CONNECT" and target[:1] not in (b"/", b"*")
                    and not re.match(rb"(?i)https?://", target)):
                return ("a request-target in a form its method may not use (authority-form "
                        "without CONNECT)")
            fields = head.split(b"\n", 1)[1] if b"\n" in head else b""
            if not _H11_TARGET.match(target) or _CTL.search(fields):
                return ("characters h11's grammar takes and llhttp's refuses in the "
                        "request-target or a field value")
        lengths = re.findall(rb"(?im)^content-length[ \t]*:", head)
        if len(lengths) > 1 or re.search(rb"(?im)^content-length[ \t]*:[^\r\n]*,", head):
            return "Content-Length repeated with the same value"
    return None


def _summary(outcome: Outcome) -> tuple[object, ...]:
    handed = tuple((r.method, r.target, tuple(r.headers.raw), r.body) for r in outcome.handed)
    statuses = tuple(a.status for a in read_responses(outcome))
    return handed, statuses, outcome.closed


def _compare(chunks: list[bytes], data: bytes, eof: bool, mode: ResponseMode) -> str:
    """Serve the bytes on both wires and compare (module docstring); what was found."""
    reference = serve(chunks, eof=eof, response_mode=mode, wire="h11")
    fast = serve(chunks, eof=eof, response_mode=mode, wire="httptools")
    if _summary(reference) == _summary(fast):
        return "same answers"
    why = documented(data)
    assert why is not None, (
        "the wires differ on input DIFFERENCES does not cover:\n"
        f"  h11:       {_summary(reference)}\n  httptools: {_summary(fast)}\n"
        f"  {data[:600]!r} ... {data[-400:]!r}")
    assert why in DIFFERENCES
    # The shape of every documented difference: llhttp is stricter, never more lenient. It
    # hands over what h11 handed over, up to where it refuses.
    ref_handed = _summary(reference)[0]
    fast_handed = _summary(fast)[0]
    assert ref_handed[:len(fast_handed)] == fast_handed, (why, ref_handed, fast_handed)
    answers = read_responses(fast)
    if len(fast_handed) < len(ref_handed) or not fast.closed:
        assert answers and is_refusal(answers[-1]) and answers[-1].status == 400, (why, answers)
        assert fast.closed
    return f"documented: {why}"


WIRE_FUZZ = settings(FUZZ, max_examples=max(20, EXAMPLES))


@WIRE_FUZZ
@given(reqs=connections(), data=st.data(), eof=st.booleans(), mode=MODES)
@example(reqs=[FOUND[-1]], data=None, eof=False, mode=ResponseMode.SSE).via("TE + CL")
def test_both_wires_answer_the_same_bytes_alike(
    reqs: list[bytes], data: st.DataObject | None, eof: bool, mode: ResponseMode,
) -> None:
    stream = b"".join(reqs)
    chunks = data.draw(cuts(stream)) if data is not None else [stream]
    event(_compare(chunks, stream, eof, mode))


_GET = b"GET /mcp HTTP/1.1\r\nHost: localhost:8000\r\nAccept: text/event-stream\r\n"
#: Inputs this test stopped on while the httptools wire was made to answer as h11 does
#: (each fixed in the wire, kept so that they stay fixed).
FOUND_DIFFERENT = [
    b"\r",  # a control byte where a request line starts: 400 at once
    b"\r\nDELETE /mcp HTTP/1.1\r\nHost: localhost:8000\r\n\r\n",  # an empty line first
    b"DELETE /mcp HTTP/1.1\r\nHost: localhost:8000\r\nTransfer-Encoding: Chunked\r\n\r\n"
    b"0\r\n\r\n",  # the coding handed over lower-cased
    b"POST /mcp HTTP/1.1\r\nHost: localhost:8000\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"2\r\n{}\r\n0\r\nGET\r\n",  # a trailer section read whole before it is judged
    b"DELETE /mcp HTTP/1.1\r\nHost: localhost:8000\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"1000000\r\n",  # a chunk over the body limit: 413 only once its bytes pass the limit
    b"POST /mcp HTTP/1.1\r\nHost: localhost:8000\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"1; y = z\r\n{\r\n1\r\n}\r\n0\r\n\r\n",  # whitespace in a chunk extension
    _GET + b"".join(b"X-%d: v\r\n" % i for i in range(120))
    + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",  # 431 before both framings
    _GET + b"".join(b"X-%d: v\r\n" % i for i in range(120))
    + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",  # 501 first
    _GET + b"Content-Length: 99999999999999999999\r\n\r\n",  # past 2**64: 413
    _GET + b"Content-Length: 111111111111111111111111111111\r\n\r\n",  # over 20 digits: 400
    _GET + b"Content-Length: 99999999999999999999\r\nContent-Type : x\r\n\r\n",  # 400 first
    _GET + b"".join(b"X-%d: v\r\n" % i for i in range(120))
    + b"Content-Length: 99999999999999999999\r\n\r\n",  # 431 first
]


@pytest.mark.parametrize("data", SEEDS + FOUND + FOUND_DIFFERENT)
@pytest.mark.parametrize("eof", [False, True])
def test_both_wires_answer_the_seeds_alike(data: bytes, eof: bool) -> None:
    _compare([data], data, eof, ResponseMode.SSE)
    _compare([data[i:i + 1] for i in range(len(data))], data, eof, ResponseMode.SSE)


@pytest.mark.parametrize(("data", "why"), [
    (b"GET /mcp HTTP/1.1\nHost: localhost:8000\n\n", "bare LF as a line terminator"),
    (b"BREW /mcp HTTP/1.1\r\nHost: localhost:8000\r\n\r\n",
     "a method llhttp does not know (any token is a method for h11)"),
    (b"POST /mcp HTTP/1.1\r\nHost: localhost:8000\r\nContent-Length: 2\r\n"
     b"Content-Length: 2\r\n\r\n{}", "Content-Length repeated with the same value"),
    (b"POST localhost:8000 HTTP/1.1\r\nHost: localhost:8000\r\nContent-Length: 2\r\n\r\n{}",
     "a request-target in a form its method may not use (authority-form without CONNECT)"),
    (b"GET /mcp HTTP/1.1\r\nHost: localhost:8000\r\nX-Ctl: v\x0f\r\n\r\n",
     "characters h11's grammar takes and llhttp's refuses in the request-target or a field "
     "value"),
])
def test_each_documented_difference_is_real_and_recognized(data: bytes, why: str) -> None:
    # The table is not a blanket excuse: each entry names input on which the wires do
    # differ, the way the entry says (llhttp refuses 400 what h11 takes).
    assert documented(data) == why
    reference = serve([data], wire="h11")
    fast = serve([data], wire="httptools")
    assert _summary(reference) != _summary(fast)
    answers = read_responses(fast)
    assert [a.status for a in answers] == [400] and fast.closed
    assert read_responses(reference)[0].status != 400 or reference.handed
