"""The in-memory HTTP target shared by the raw-bytes fuzzers, and the invariants they check.

Theory of operation
-------------------
:func:`serve` builds a fresh sans-IO :class:`~mcp_sansio.http.HTTPServer` (small limits, so
the oversized paths are cheap to reach; the legacy HTTP+SSE endpoints on; one handshake-era
session already open under the id :data:`SESSION`, so that fuzzed ``Mcp-Session-Id`` values
can name a live one), opens one channel and feeds it a byte stream in the chunks given (then,
optionally, end of file). An application answers every request at once. Everything the
server writes to the channel is collected, with the requests the wire handed to the MCP
layer and the request heads h11 parsed on the way.

:func:`check` then asserts the invariants, each citing the RFC section it rests on:

1. nothing escapes: the server is a library, so "the process lives" means no exception
   leaves ``receive_data``/``next_event``/``data_to_send`` (checked by :func:`serve` simply
   running);
2. the bytes written are well-formed HTTP/1.1 responses, read back with a separate
   client-side h11 connection, one per request head, in order (RFC 9112 section 9.3.2:
   responses come in request order);
3. a request is handed to the MCP layer -- and so answered as MCP -- only when it was fully
   and unambiguously framed: :func:`frame` is an independent, strict reading of RFC 9112
   section 6 (framing) on the same bytes, and every handed request must be one it framed,
   with the same method, target and body. Responses pair with requests in order (RFC 9112
   section 9.3.2), so :func:`check_answers` holds the answers to that count: the first ones
   answer the requests handed over, with any status (the server may refuse a request that
   is fully and unambiguously framed -- a CONNECT answered 501, a target form its method may
   not use answered 400 -- and keep the connection open, since the next request's start is
   known); at most one answer follows them, and it is the wire's refusal of the request it
   could not read: an error status, ``Connection: close``, and the connection closed after it
   (RFC 9112 section 6.3 rules 4-5: invalid framing is answered 400 and the connection
   closed). Any response carrying ``Connection: close`` is the last one and the connection
   closes after it (RFC 9112 section 9.6: the server closes after that response and processes
   no further request);
4. memory stays bounded: what the channel holds (unparsed bytes and a partial body) never
   exceeds the head limit plus the body limit plus one read;
5. afterwards a fresh connection with one well-formed ``initialize`` is answered 200.

The hypothesis fuzzers (``fuzz/test_http_raw.py``) and the coverage-guided one
(``fuzz/atheris_http.py``) both go through here.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from typing import Any

import attrs
import h11

from mcp_sansio import NEED_DATA, Event, Request, ServerConnection
from mcp_sansio.http import HTTPRequest, HTTPServer, ResponseMode, ServerChannel, Session
from mcp_sansio.http._wire_httptools import HttptoolsWire

HOST = "localhost:8000"
SESSION = "session-1"
VERSION = "2025-11-25"
#: Small limits so that "too large" is a few kilobytes away: the fuzzers reach 413 and 431
#: without megabytes of input. The server's defaults are 4 MiB and 16 KiB.
MAX_BODY = 4096
MAX_HEADER = 2048
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": VERSION, "capabilities": {},
                   "clientInfo": {"name": "fuzz", "version": "1"}}}
WELL_FORMED = (b"POST /mcp HTTP/1.1\r\nHost: " + HOST.encode()
               + b"\r\nAccept: application/json, text/event-stream\r\n"
               b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n")


def _answer(session: Session, event: Event) -> None:
    if isinstance(event, Request):
        session.connection.send_response(event.request_id, {})


def _run(server: HTTPServer, out: dict[ServerChannel, bytearray]) -> None:
    while True:
        progressed = False
        while (item := server.next_event()) is not NEED_DATA:
            progressed = True
            _answer(*item)
        for channel, data in server.data_to_send():
            progressed = True
            out.setdefault(channel, bytearray()).extend(data)
        if not progressed:
            return


def well_formed(body: Any, extra: bytes = b"") -> bytes:
    """One complete, valid POST of ``body`` (JSON) to the endpoint."""
    data = json.dumps(body).encode()
    return (WELL_FORMED % len(data))[:-2] + extra + b"\r\n" + data


@attrs.define
class Outcome:
    """What one fuzzed connection did."""

    out: bytes  #: every byte the server wrote to the channel
    closed: bool  #: the server closed the channel
    eof: bool  #: the client sent end of file
    heads: list[bytes]  #: the method of each request head h11 parsed, in order
    handed: list[HTTPRequest]  #: the requests the wire handed to the MCP layer, in order
    max_held: int  #: the most bytes the channel held between chunks
    largest: int  #: the largest chunk fed
    fresh_status: int | None  #: the status a fresh connection's initialize got


def make_server(response_mode: ResponseMode = ResponseMode.SSE, wire: str = "h11"
                ) -> HTTPServer:
    ids = itertools.count(1)
    server = HTTPServer(
        lambda: ServerConnection(info={"name": "fuzz", "version": "1"},
                                 capabilities={"tools": {}, "logging": {}}),
        new_session_id=lambda: f"session-{next(ids)}",
        response_mode=response_mode, max_body_size=MAX_BODY, max_header_size=MAX_HEADER,
        legacy_sse_path="/sse", wire=wire)
    channel = server.new_channel(now=0.0)
    out: dict[ServerChannel, bytearray] = {}
    channel.receive_data(well_formed(INIT), now=0.0)
    _run(server, out)
    assert SESSION in server.sessions, bytes(out[channel])
    return server


def _held(channel: ServerChannel) -> int:
    wire = channel.wire
    if isinstance(wire, HttptoolsWire):
        return len(wire._buf) + len(wire._gather)
    data, _ = wire._h11.trailing_data  # type: ignore[union-attr]
    return len(data) + len(wire._gather)  # type: ignore[union-attr]


def _record_heads(wire: Any, heads: list[bytes]) -> None:
    """Record the method of each request head the wire parsed (even one it then refused):
    h11's request events; on the httptools wire, each head whose method llhttp read."""
    if isinstance(wire, HttptoolsWire):
        feed_head = wire._feed_head

        def recording_feed_head() -> bool:
            # Called between requests only, when the wire's method is empty: afterwards it
            # is the method of the head just read (accepted or refused), if llhttp read one.
            progressed = feed_head()
            if wire._method:
                heads.append(wire._method)
            return progressed

        wire._feed_head = recording_feed_head  # type: ignore[method-assign]
        return
    parse = wire._h11.next_event

    def next_event() -> Any:
        event = parse()
        if isinstance(event, h11.Request):
            heads.append(event.method)
        return event

    wire._h11.next_event = next_event


def serve(chunks: Sequence[bytes], *, eof: bool = False,
          response_mode: ResponseMode = ResponseMode.SSE, wire: str = "h11") -> Outcome:
    """Feed ``chunks`` to one new channel of a fresh server (see the module docstring) on
    the server wire ``wire`` (``"h11"`` or ``"httptools"``)."""
    server = make_server(response_mode, wire)
    out: dict[ServerChannel, bytearray] = {}
    channel = server.new_channel(now=1.0)
    heads: list[bytes] = []
    handed: list[HTTPRequest] = []
    take = channel.wire.next_request

    def next_request() -> HTTPRequest | None:
        request = take()
        if request is not None:
            handed.append(request)
        return request

    # Instance attributes shadow the methods: the recording is the test's, not the wire's.
    _record_heads(channel.wire, heads)
    channel.wire.next_request = next_request  # type: ignore[method-assign]
    now = 1.0
    max_held = 0
    for chunk in chunks:
        if not chunk:
            continue
        now += 0.001
        channel.receive_data(chunk, now=now)
        _run(server, out)
        max_held = max(max_held, _held(channel))
    if eof:
        channel.receive_data(b"", now=now)
        _run(server, out)
    fresh = server.new_channel(now=now)
    fresh.receive_data(well_formed(INIT), now=now)
    _run(server, out)
    status = _status_of(bytes(out.get(fresh, b"")))
    return Outcome(out=bytes(out.get(channel, b"")), closed=channel.closed, eof=eof,
                   heads=heads, handed=handed, max_held=max_held,
                   largest=max((len(c) for c in chunks), default=0), fresh_status=status)


def _status_of(data: bytes) -> int | None:
    match = re.match(rb"HTTP/1\.1 (\d{3}) ", data)
    return int(match.group(1)) if match else None


# -- a strict, independent reading of RFC 9112's framing ---------------------------------------

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_TARGET = re.compile(rb"[\x21-\x7e\x80-\xff]+\Z")
_VERSION = re.compile(rb"HTTP/(\d)\.(\d)\Z")
#: Field values: RFC 9110 section 5.5 asks only that CR, LF and NUL be refused (or replaced);
#: other control characters are bad syntax but cannot change the framing, and h11 lets them
#: through, so this reading accepts them too (a server may refuse more than this reading).
_VALUE = re.compile(rb"[^\x00\r\n]*\Z")
#: chunk-size [chunk-ext] (RFC 9112 section 7.1.1). A bare CR inside an extension is read as
#: a space (RFC 9112 section 2.2 allows either that or refusal): extensions are ignored, so it
#: cannot change the framing.
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]+)[ \t]*(;[^\n]*)?\Z")


@attrs.define
class Framed:
    """One request :func:`frame` read whole and unambiguously."""

    method: bytes
    target: bytes
    version: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes


def _line(data: bytes, pos: int) -> tuple[bytes, int] | None:
    """The line at ``pos`` without its terminator (CRLF, or a bare LF: RFC 9112 section 2.2
    lets a recipient accept one), and where the next starts; None if it has not ended."""
    end = data.find(b"\n", pos)
    if end < 0:
        return None
    line = data[pos:end]
    return (line[:-1] if line.endswith(b"\r") else line), end + 1


def frame(data: bytes, max_body: int = MAX_BODY) -> tuple[list[Framed], str, int]:
    """Read ``data`` as pipelined requests, strictly. Returns the requests framed whole and
    unambiguously, why reading stopped: ``"end"`` (all read), ``"incomplete"`` (the
    next one is not all there) or ``"invalid: ..."``, and where the request it stopped in
    starts. Anything this reading calls invalid
    must never reach the MCP layer; the server may refuse more than this (its head limits)."""
    requests: list[Framed] = []
    pos = 0
    while True:
        # RFC 9112 section 2.2: a server SHOULD ignore at least one empty line before the
        # request line.
        while data.startswith(b"\r\n", pos) or data.startswith(b"\n", pos):
            pos += 2 if data.startswith(b"\r\n", pos) else 1
        if pos >= len(data):
            return requests, "end", pos
        begin = pos
        got = _line(data, pos)
        if got is None:
            return requests, "incomplete", begin
        start, pos = got
        parts = start.split(b" ")
        if len(parts) != 3 or not _TOKEN.match(parts[0]) or not _TARGET.match(parts[1]):
            return requests, "invalid: request line", begin  # RFC 9112 section 3
        method, target, version = parts
        if not _VERSION.match(version):
            return requests, "invalid: version", begin
        fields: list[tuple[bytes, bytes]] = []
        while True:
            got = _line(data, pos)
            if got is None:
                return requests, "incomplete", begin
            line, pos = got
            if not line:
                break
            if line[:1] in (b" ", b"\t"):
                # obs-fold (RFC 9112 section 5.2): a server may unfold it into one SP.
                if not fields or not _VALUE.match(line):
                    return requests, "invalid: fold", begin
                name, value = fields[-1]
                fields[-1] = (name, (value + b" " + line.strip(b" \t")).strip(b" \t"))
                continue
            name, colon, value = line.partition(b":")
            # RFC 9112 section 5.1: no whitespace between the field name and the colon.
            if not colon or not _TOKEN.match(name) or not _VALUE.match(value):
                return requests, "invalid: field line", begin
            fields.append((name.lower(), value.strip(b" \t")))
        body, framing = _body(data, pos, fields, version, max_body)
        if body is None:
            return requests, framing, begin
        content, pos = body
        requests.append(Framed(method, target, version, fields, content))


def _body(data: bytes, pos: int, fields: list[tuple[bytes, bytes]], version: bytes,
          max_body: int) -> tuple[tuple[bytes, int] | None, str]:
    """RFC 9112 section 6.3: the body's length from the framing fields, strictly."""
    te = [c.strip(b" \t").lower() for n, v in fields if n == b"transfer-encoding"
          for c in v.split(b",")]
    cl = [c.strip(b" \t") for n, v in fields if n == b"content-length" for c in v.split(b",")]
    if te:
        if cl:
            # Section 6.1: both present is a possible smuggling attempt; we read it as
            # ambiguous (a server may only process it by Transfer-Encoding and then close).
            return None, "invalid: Transfer-Encoding with Content-Length"
        if version[5:] < b"1.1":
            # Section 6.1: Transfer-Encoding in an HTTP/1.0 message is faulty framing.
            # (HTTP/1.2 and up are read as 1.1: RFC 9110 section 2.5, a higher minor
            # version is processed as the highest one the recipient supports.)
            return None, "invalid: Transfer-Encoding in HTTP/1.0"
        if te != [b"chunked"]:
            # Section 6.3 rule 4 (chunked not final: 400) and section 6.1 (a coding we do
            # not understand: 501); either way the body cannot be read.
            return None, "invalid: transfer coding"
        return _chunked(data, pos, max_body)
    if cl:
        # Section 6.3 rule 5: a list of identical valid values may be read as one; anything
        # else is unrecoverable.
        if any(not c.isdigit() for c in cl) or len(set(cl)) != 1:
            return None, "invalid: Content-Length"
        length = int(cl[0])
        if length > max_body:
            return None, "invalid: too large"
        if len(data) - pos < length:
            return None, "incomplete"
        return (data[pos:pos + length], pos + length), ""
    # Section 6.3 rule 6: a request with neither has no body.
    return (b"", pos), ""


def _chunked(data: bytes, pos: int, max_body: int) -> tuple[tuple[bytes, int] | None, str]:
    """RFC 9112 section 7.1: chunk-size [chunk-ext] CRLF chunk-data CRLF ... last-chunk
    trailer-section CRLF."""
    body = bytearray()
    while True:
        got = _line(data, pos)
        if got is None:
            return None, "incomplete"
        line, pos = got
        match = _CHUNK_SIZE.match(line)
        if not match:
            return None, "invalid: chunk size"
        size = int(match.group(1), 16)
        if size == 0:
            break
        if len(body) + size > max_body:
            return None, "invalid: chunks too large"
        if len(data) - pos < size + 1:
            return None, "incomplete"
        body += data[pos:pos + size]
        pos += size
        if data.startswith(b"\r\n", pos):
            pos += 2
        elif data.startswith(b"\n", pos):
            pos += 1
        elif len(data) - pos < 2 and data[pos:] in (b"", b"\r"):
            return None, "incomplete"
        else:
            return None, "invalid: chunk data not followed by CRLF"
    while True:  # section 7.1.2: the trailer section, ended by an empty line
        got = _line(data, pos)
        if got is None:
            return None, "incomplete"
        line, pos = got
        if not line:
            return (bytes(body), pos), ""
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.match(name) or not _VALUE.match(value):
            return None, "invalid: trailer"


#: Reasons found inside a body: h11 sees them only when it reaches them (a trailer section
#: only when it has all of it), so only "never served" is asked of them, not "refused now".
_BODY_LEVEL = ("invalid: chunk", "invalid: trailer")


# -- the invariants ------------------------------------------------------------------------------


@attrs.define
class Answer:
    status: int
    headers: dict[bytes, bytes]
    complete: bool


def read_responses(outcome: Outcome) -> list[Answer]:
    """Invariant 2: the server's bytes, read back by a client-side h11 connection that sent
    one request per head the server parsed (HEAD for HEAD, so that h11 expects no content:
    RFC 9112 section 6.3 rule 1; GET otherwise). A malformed response raises."""
    client = h11.Connection(h11.CLIENT)
    methods = [b"HEAD" if m == b"HEAD" else b"GET" for m in outcome.heads] or [b"GET"]
    answers: list[Answer] = []
    client.receive_data(outcome.out)
    if outcome.closed:
        client.receive_data(b"")
    current: Answer | None = None
    index = 0
    while True:
        if client.our_state is h11.IDLE:
            if not client.trailing_data[0]:
                return answers  # every byte read, and the last response ended
            method = methods[min(index, len(methods) - 1)]
            client.send(h11.Request(method=method, target="/", headers=[("host", "x")]))
            client.send(h11.EndOfMessage())
            index += 1
        try:
            event = client.next_event()
        except h11.RemoteProtocolError as exc:
            if outcome.eof and not client.trailing_data[0]:
                # Every byte was read well; the client went away mid-response (or after a
                # 100 Continue) and the server dropped the rest.
                return answers
            raise AssertionError(f"malformed response: {exc}; {outcome.out[:400]!r}") from exc
        if event is h11.NEED_DATA or event is h11.PAUSED:
            return answers
        if isinstance(event, h11.InformationalResponse):
            assert event.status_code == 100, event  # only 100-continue is ever sent
        elif isinstance(event, h11.Response):
            current = Answer(event.status_code, dict(event.headers), False)
            answers.append(current)
        elif isinstance(event, h11.EndOfMessage):
            assert current is not None
            current.complete = True
            current = None
            if client.our_state is h11.DONE and client.their_state is h11.DONE:
                client.start_next_cycle()
            else:
                return answers
        elif isinstance(event, h11.ConnectionClosed):
            return answers


def closes(answer: Answer) -> bool:
    """The response carries the "close" connection option (RFC 9112 section 9.6; the field
    value is a list of case-insensitive tokens, RFC 9110 section 7.6.1)."""
    value = answer.headers.get(b"connection", b"")
    return b"close" in [token.strip(b" \t").lower() for token in value.split(b",")]


def is_refusal(answer: Answer) -> bool:
    """A refusal by the wire itself of a request it could not read: plain text, an error
    status, and "Connection: close" (nothing after it can be trusted to start a request).
    The MCP layer's own plain-text refusals of a request it was handed (a target form the
    method may not use, CONNECT) keep the connection open and are not these."""
    return (answer.headers.get(b"content-type", b"").startswith(b"text/plain")
            and 400 <= answer.status < 600 and closes(answer))


def check_answers(answers: Sequence[Answer], settled: int, closed: bool, why: str) -> None:
    """The answers on one connection against ``settled``, the number of requests read whole
    and unambiguously (handed to the MCP layer in memory; framed by :func:`frame` for a real
    server); ``closed``: the server closed the connection. Raises AssertionError."""
    # Every answer but the last is complete (the last may be a stream still going).
    for answer in answers[:-1]:
        assert answer.complete, answers
    # RFC 9112 section 9.3.2: one response per request, in order -- the first ``settled``
    # answers are those requests' (any status: refusing a request that was framed whole is
    # the server's right, and the connection may stay open after it). Beyond them, at most
    # one answer, and only the wire's refusal of the request it could not read (RFC 9112
    # section 6.3 rules 4-5: answered with an error, and the connection closed): a response
    # is never sent for a request that was not fully and unambiguously framed.
    beyond = list(answers[settled:])
    assert len(beyond) <= 1, (
        f"{len(beyond)} answers to requests that were not fully and unambiguously framed "
        f"({why}): {answers}")
    if beyond:
        assert is_refusal(beyond[0]), (
            f"an answer that is not a refusal to a request that was not fully and "
            f"unambiguously framed ({why}): {answers}")
    # RFC 9112 section 9.6: "A server that sends a "close" connection option MUST initiate
    # a close of the connection ... after it sends the response containing" it, "MUST NOT
    # process any further requests received on that connection".
    for index, answer in enumerate(answers):
        if closes(answer):
            assert index == len(answers) - 1, answers
            if answer.complete:
                assert closed, f"the connection stayed open after Connection: close: {answers}"


def check(outcome: Outcome, data: bytes) -> list[Answer]:
    """All the invariants of the module docstring for one fuzzed connection fed ``data``."""
    answers = read_responses(outcome)
    if outcome.out:
        assert outcome.out.startswith(b"HTTP/1.1 "), outcome.out[:100]
    framed, why, stop = frame(data)
    # Invariant 3 -- every request handed to the MCP layer is one that RFC 9112 section 6
    # frames whole and unambiguously, in order, with the same method, target and body.
    assert len(outcome.handed) <= len(framed), (
        f"a request was served that was not fully and unambiguously framed ({why}): "
        f"{outcome.handed[len(framed)]!r}")
    for got, want in zip(outcome.handed, framed, strict=False):
        assert got.method.encode("latin-1") == want.method, (got, want)
        assert got.target.encode("latin-1") == want.target, (got, want)
        assert got.body == want.body, (got, want)
    # Invariant 3 -- the MCP layer answers only requests it was handed, one each, in order;
    # beyond them only the wire's refusal, after which the connection closes (RFC 9112
    # sections 9.3.2, 6.3 and 9.6: :func:`check_answers`).
    check_answers(answers, len(outcome.handed), outcome.closed, why)
    # An open last answer is a stream still going (SSE) or was cut by the client's end of
    # file.
    if answers and not answers[-1].complete:
        last = answers[-1]
        assert (last.headers.get(b"content-type", b"").startswith(b"text/event-stream")
                or outcome.eof), answers
    head_ended = data.find(b"\n\r\n", stop) >= 0 or data.find(b"\n\n", stop) >= 0
    in_head = why.startswith("invalid") and not why.startswith(_BODY_LEVEL)
    if in_head and head_ended and len(outcome.handed) == len(framed) and not outcome.eof:
        # The connection reached an unreadable request whose head is all there: it is
        # refused (or the connection closed) -- never left waiting for a body it cannot
        # delimit. (Unless a response is still streaming: the wire has not looked yet.)
        streaming = answers and not answers[-1].complete
        assert outcome.closed or streaming, (why, answers)
    # Invariant 4 -- bounded memory: the channel never holds more than a head, a body and a
    # read's worth.
    assert outcome.max_held <= MAX_HEADER + MAX_BODY + outcome.largest, outcome.max_held
    # Invariant 5 -- a fresh connection is served.
    assert outcome.fresh_status == 200, outcome.fresh_status
    return answers
