"""A second HTTP/1.1 server wire, on httptools (llhttp), behind the same exchange seam.

Theory of operation
-------------------
:class:`HttptoolsWire` is a drop-in for the h11 :class:`~mcp_sansio.http._wire.ServerWire`:
the same constructor limits, the same operations for the server (``receive_data``,
``next_request``, ``respond``, the streaming calls, ``abort``, ``fail``, ``data_to_send``)
and the same producer of the seam's events (:meth:`~HttptoolsWire.next_event`:
:class:`~mcp_sansio.http._exchange.RequestStarted`, ``RequestData``, ``RequestEnded``,
``PeerClosed``) and consumer of its output ones (:meth:`~HttptoolsWire.send`). h11 stays the
default and the reference (docs/wires.rst); this wire exists because llhttp parses a request
in a few microseconds where h11 takes a hundred, and an MCP server's CPU under load is mostly
HTTP framing. Like h11, httptools is sans-IO: a parser that is fed bytes and calls back with
what it found, so this module is as pure as the rest of the core. It is imported by
:meth:`HTTPServer.new_channel <mcp_sansio.http.HTTPServer.new_channel>` only for a server
built with ``wire="httptools"``, and it imports httptools (an extra, ``mcp-sansio[fast]``)
when first used.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import contextlib
import importlib
import re
from collections import deque
from collections.abc import Iterable
from typing import Any

from .._compiled import mypyc_attr
from ._exchange import (
    CloseConnection,
    ExchangeInput,
    ExchangeOutput,
    PeerClosed,
    RequestData,
    RequestEnded,
    RequestStarted,
    ResponseData,
    ResponseStarted,
)
from ._headers import Headers
from ._wire import (
    _FOLD,
    _HEAD_END,
    _LAST_CODING,
    DEFAULT_MAX_HEADER_COUNT,
    DEFAULT_MAX_HEADER_SIZE,
    DEFAULT_MAX_TARGET_LENGTH,
    REFUSALS,
    HTTPRequest,
    RequestGatherer,
    reason_phrase,
)

__all__ = ["CHECKS", "DIFFERENCES", "HttptoolsWire", "MissingParser", "load_httptools"]


@mypyc_attr(native_class=False)  # the compiler builds no native subclass of ImportError
class MissingParser(ImportError):
    """``wire="httptools"`` was asked for and httptools is not installed."""


def load_httptools() -> Any:
    """The httptools module, or :class:`MissingParser` with what to install."""
    try:  # imported by name: a compiled import is made once and would not look again
        httptools = importlib.import_module("httptools")
    except ImportError as exc:
        raise MissingParser(
            "wire='httptools' needs the httptools package: pip install 'mcp-sansio[fast]' "
            "(or pip install httptools); the default wire='h11' needs nothing more") from exc
    return httptools


#: What h11 checks while it parses a request head and llhttp does not: rule -> (status, the
#: section). The wire applies them so that both wires refuse the same heads.
CHECKS: dict[str, tuple[int, str]] = {
    # "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1 request
    # message that lacks a Host header field and to any request message that contains more
    # than one Host header field line" (h11 checks the first for HTTP/1.1 and the second).
    "missing Host in an HTTP/1.1 request": (400, "RFC 9112 section 3.2"),
    "more than one Host field": (400, "RFC 9112 section 3.2"),
    # h11 decodes only "chunked" and answers any other coding list 501, the status for a
    # transfer coding the server does not understand ("A server that receives a request
    # message with a transfer coding it does not understand SHOULD respond with 501"). A
    # list whose final coding is not chunked is refused 400 before this (REFUSALS).
    "a transfer coding other than chunked": (501, "RFC 9112 section 6.1"),
    # Content-Length must be digits (llhttp also checks), at most 20 of them (h11's bound:
    # 2**64 has 20 digits; a longer one is refused 400, as a value "that cannot be parsed",
    # where a 20-digit one over 2**64 is answered 413 by both wires).
    "invalid Content-Length": (400, "RFC 9110 section 8.6; RFC 9112 section 6.3 item 5"),
}

#: Where the two parsers legitimately differ: input -> (h11's answer, llhttp's answer, the
#: text that allows both). h11 is the reference; llhttp is stricter in each case, never
#: more lenient. The differential fuzzer (fuzz/test_http_wires_differential.py) reads this
#: table: a difference not listed here fails it; docs/wires.rst shows it.
DIFFERENCES: dict[str, tuple[str, str, str]] = {
    "bare LF as a line terminator": (
        "accepted", "400",
        "RFC 9112 section 2.2: a recipient MAY recognize a single LF as a line terminator"),
    "a method llhttp does not know (any token is a method for h11)": (
        "the server's answer (405 on the endpoint)", "400",
        "RFC 9110 section 9.1: methods are an open set; RFC 9112 section 3: a server that "
        "receives an invalid request-line SHOULD respond with 400"),
    "Content-Length repeated with the same value": (
        "accepted as one", "400",
        "RFC 9110 section 8.6: a recipient MAY either reject the message as invalid or "
        "replace the duplicated field values with a single valid Content-Length"),
    "a request-target in a form its method may not use (authority-form without CONNECT)": (
        "the server's 400 (TARGET_FORMS), the connection open", "400, the connection closed",
        "RFC 9112 section 3.2.3: the authority-form is only used for CONNECT; section 3: "
        "a server that receives an invalid request-line SHOULD respond with 400"),
    "characters h11's grammar takes and llhttp's refuses in the request-target or a field "
    "value": (
        "the server's answer", "400",
        "RFC 9110 section 5.5: field values with control characters other than CR, LF and "
        "NUL are invalid, but recipients MAY retain them (h11 does, llhttp refuses them); "
        "RFC 9112 section 3: an invalid request-line SHOULD be answered 400"),
}

_CONTINUE = b"HTTP/1.1 100 \r\n\r\n"  # what h11 writes for its 100 (no reason phrase)
_LAST_CHUNK = b"0\r\n\r\n"
_CHUNKED = -1  # _remaining for a chunked body
_MAX_LENGTH_DIGITS = 20  # the longest Content-Length h11 reads (CHECKS)
#: A Content-Length field whose value is all digits (one past what llhttp reads, 2**64-1).
_LONG_LENGTH = re.compile(rb"(?im)^(content-length[ \t]*:[ \t]*)[0-9]+(?=[ \t]*\r?$)")
# Where a chunked body is (_next_chunk_piece): a chunk line next, chunk data, the CRLF after
# the data, the trailer section.
_CHUNK_SIZE, _CHUNK_DATA_LEFT, _CHUNK_CRLF, _CHUNK_TRAILER = range(4)
#: A chunk line as h11 reads it: 1 to 20 hex digits (h11's bound: 2**64 has 20 digits),
#: anything after a ";" (extensions are ignored), trailing OWS, CRLF.
_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;[^\n]*)?[ \t]*\r\n")
#: Distinct response heads kept, as the h11 wire's head cache (_wire._HEAD_CACHE_SIZE).
_HEAD_CACHE_SIZE = 256
_HEADS: dict[tuple[Any, ...], tuple[bytes, bool]] = {}
_PEER_CLOSED = PeerClosed()
_ENDED = RequestEnded()


def _has_token(value: bytes | None, token: bytes) -> bool:
    """Whether a comma-separated field value lists ``token`` (case-insensitive)."""
    if not value:
        return False
    return any(part.strip() == token for part in value.lower().split(b","))


class _Callbacks:
    """What llhttp calls back with for one message (a protocol object for httptools)."""

    __slots__ = ("body", "complete", "events", "fields", "in_body", "url")

    def __init__(self) -> None:
        self.url = b""
        self.fields: list[tuple[bytes, bytes]] = []
        self.in_body = False
        self.complete = False
        self.body = 0
        self.events: list[ExchangeInput] = []

    def on_message_begin(self) -> None:
        self.url = b""
        self.fields = []
        self.in_body = False
        self.complete = False
        self.body = 0

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.in_body:  # after the body: trailer fields, dropped as h11 drops them
            name = name.lower()
            value = value.strip(b" \t")
            if name == b"transfer-encoding":
                value = value.lower()  # as h11 hands it over (it compares it so)
            self.fields.append((name, value))

    def on_headers_complete(self) -> None:
        self.in_body = True

    def on_body(self, body: bytes) -> None:
        self.body += len(body)
        self.events.append(RequestData(body))

    def on_message_complete(self) -> None:
        self.complete = True
        self.events.append(_ENDED)


class HttptoolsWire:
    """The server side of one HTTP/1.1 connection on llhttp (see the module docstring);
    parameters as for :class:`~mcp_sansio.http._wire.ServerWire`."""

    def __init__(
        self, *, max_body_size: int, max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
        max_header_count: int = DEFAULT_MAX_HEADER_COUNT,
        max_target_length: int = DEFAULT_MAX_TARGET_LENGTH,
    ) -> None:
        self._httptools = load_httptools()
        self.max_body_size = max_body_size
        self.max_header_size = max_header_size
        self.max_header_count = max_header_count
        self.max_target_length = max_target_length
        #: True once the connection is over: close the socket after writing what is left.
        self.closed = False
        #: True once the peer closed its side (end of file).
        self.peer_closed = False
        #: Whether a request has been handed out and its response is not finished.
        self.busy = False
        self._streaming = False  # a response head went out, its end has not
        self._buf = bytearray()
        self._scanned = 0  # how far the search for the head's end has got
        self._buffered_while_busy = 0
        self._calls = _Callbacks()
        self._parser: Any = self._new_parser()
        self._events: deque[ExchangeInput] = deque()
        self._remaining: int | None = None  # of the body being fed; None between messages
        self._chunk = _CHUNK_SIZE  # where a chunked body is
        self._chunk_left = 0  # bytes of the current chunk's data not yet fed
        self._chunk_crlf = 0  # bytes of the CRLF after a chunk's data seen
        self._doomed = False  # a chunk over the body limit is being counted (413 to come)
        self._method = b""  # of the request being answered (HEAD: no content)
        self._version = b""  # of the request being answered ("" before one was read)
        self._keep_alive = True  # the request allows the connection to go on
        self._started = False  # a request head was handed over and not yet answered
        self._answered = False  # a response head went out for the current request
        self._frame = ""  # the response body's framing: "length", "chunked", "close", "none"
        self._out: list[bytes] = []
        self._gather = RequestGatherer()  # next_request's request being gathered

    # -- input -------------------------------------------------------------------------------

    def receive_data(self, data: bytes) -> None:
        """Bytes from the peer; ``b""`` means it closed its side."""
        if self.closed or self.peer_closed:
            return
        if not data:
            self.peer_closed = True
            if not self.busy:
                self.closed = True
            return
        if self.busy:
            # Pipelined bytes wait here until this response ends; bound them (as h11's wire).
            self._buffered_while_busy += len(data)
            if self._buffered_while_busy > self.max_header_size + self.max_body_size:
                self.closed = True
                return
        self._buf += data

    def next_request(self) -> HTTPRequest | None:
        """The next whole request, or None (as :meth:`ServerWire.next_request
        <mcp_sansio.http._wire.ServerWire.next_request>`)."""
        if self._gather._head is None and not self._events:
            request = self._whole_request()
            if request is not None:
                return request
        return self._gather.next_request(self.next_event)

    def _whole_request(self) -> HTTPRequest | None:
        """The common case in one go: a request whose head and ``Content-Length`` body are
        both buffered is read by the same steps as :meth:`next_event` takes (the head, then
        the body in one piece) and returned whole, without passing its events one by one
        through the gatherer. None otherwise -- the events read so far stay queued, in
        order, for the general path."""
        between = self._remaining is None  # a local: _feed_head sets _remaining
        if self.busy or self.closed or not between or not self._buf:
            return None
        if not self._feed_head():
            return None
        remaining = self._remaining  # a body to feed: whole and Content-Length framed only
        if remaining is not None and (
                remaining == _CHUNKED or len(self._buf) < remaining or not self._feed()):
            return None
        events = self._events
        if events[-1] is not _ENDED:  # pragma: no cover - a whole body ends its message
            return None
        head = events.popleft()
        events.pop()
        body = b"".join([event.data for event in events]  # type: ignore[union-attr]
                        ) if events else b""
        events.clear()
        self.busy = True  # as next_event does when it hands out the end
        self._buffered_while_busy = 0
        self._remaining = None
        assert type(head) is RequestStarted
        return HTTPRequest(method=head.method, target=head.target, headers=head.headers,
                           body=body, http_version=head.http_version)

    def next_event(self) -> ExchangeInput | None:
        """The next exchange event of the request being received, or None (more data
        needed, a response is in progress, or the connection is over). Malformed or
        oversized input is answered here (the connection then closes), never returned."""
        while not (self.busy or self.closed):
            if self._events:
                event = self._events.popleft()
                if event is _ENDED:
                    self.busy = True
                    self._buffered_while_busy = 0
                    self._remaining = None
                return event
            if not self._feed():
                if self.peer_closed and not self.busy:
                    self.closed = True
                    return _PEER_CLOSED
                return None
        return None

    def _feed(self) -> bool:
        """Give the parser the next piece of the current message; False when nothing could
        be given (more bytes needed, or the input was refused)."""
        buf = self._buf
        if not buf:
            return False
        if self._remaining is None:
            return self._feed_head()
        if self._remaining == _CHUNKED:
            piece = self._next_chunk_piece()
            if piece is None:
                return False
        else:
            size = min(len(buf), self._remaining)
            self._remaining -= size
            piece = bytes(buf[:size])
            del buf[:size]
        calls = self._calls
        try:
            self._parser.feed_data(piece)
        except self._httptools.HttpParserUpgrade:
            self._new_parser()
        except self._httptools.HttpParserError as exc:
            self._fail(400, str(exc) or "malformed request")
            return False
        if calls.body > self.max_body_size:
            self._fail(413, f"the body is larger than {self.max_body_size} bytes")
            return False
        self._events.extend(calls.events)
        calls.events.clear()
        return True

    def _next_chunk_piece(self) -> bytes | None:
        """The next piece of a chunked body for the parser, or None (more bytes needed, or
        the input was refused). The framing is followed here, as h11 reads it (a chunk line
        is ``chunk-size [";" anything] OWS CRLF``: extensions are ignored, RFC 9112 section
        7.1.1 "A recipient MUST ignore unrecognized chunk extensions"), so that the parser
        never reads past the message's end and is given each chunk line without its
        extension (llhttp refuses the whitespace RFC 9112 section 7.1.1's grammar allows
        there, BWS: RFC 9110 section 5.6.3 asks a recipient to parse it). Chunk data goes
        to the parser whole; the trailer section line by line up to each LF."""
        buf = self._buf
        state = self._chunk
        if state == _CHUNK_DATA_LEFT:
            size = min(len(buf), self._chunk_left)
            self._chunk_left -= size
            if not self._chunk_left:
                self._chunk = _CHUNK_CRLF
            if self._doomed:
                # A chunk larger than the body limit (the parser never saw its line): its
                # bytes are counted, not parsed, and 413 comes once they pass the limit --
                # when the h11 wire answers it too.
                del buf[:size]
                self._calls.body += size
                return b""
        elif state == _CHUNK_CRLF:
            size = min(len(buf), 2 - self._chunk_crlf)
            if buf[:size] != b"\r\n"[self._chunk_crlf:self._chunk_crlf + size]:
                self._fail(400, f"malformed chunk footer: {bytes(buf[:size])!r}")
                return None
            self._chunk_crlf += size
            if self._chunk_crlf == 2:
                self._chunk, self._chunk_crlf = _CHUNK_SIZE, 0
        elif state == _CHUNK_SIZE:
            end = buf.find(b"\r\n")
            if end < 0:
                if len(buf) > self.max_header_size:  # a chunk line that never ends
                    self._fail(431, "a chunk line larger than the head limit")
                return None
            match = _CHUNK_LINE.fullmatch(buf, 0, end + 2)
            if match is None:
                self._fail(400, f"illegal chunk header: {bytes(buf[:end + 2])!r}")
                return None
            size = int(match.group(1), 16)  # (before the buffer changes under the match)
            del buf[:end + 2]
            if self._calls.body + size > self.max_body_size:
                self._doomed = True
                self._chunk, self._chunk_left = _CHUNK_DATA_LEFT, size
                return b""
            if size:
                self._chunk, self._chunk_left = _CHUNK_DATA_LEFT, size
            else:
                self._chunk = _CHUNK_TRAILER
            return b"%x\r\n" % size
        elif buf[:2] == b"\r\n":  # the trailer section: none
            size = 2
        else:  # the trailer section, whole, up to the blank line (as h11 reads it)
            found = _HEAD_END.search(buf)
            if found is None:
                if len(buf) > self.max_header_size:
                    self._fail(431, "a trailer section larger than the head limit")
                return None
            size = found.end()
        piece = bytes(buf[:size])
        del buf[:size]
        return piece

    def _scan_head(self) -> int | str | None:
        """The end of the head at the start of the buffer, a rule of :data:`REFUSALS` the
        head breaks, or None (more bytes needed). As the h11 wire's ``_prescan``: the search
        resumes where it stopped, so a head sent byte by byte costs linear time."""
        data = self._buf
        start = self._scanned if len(data) >= self._scanned else 0
        end = _HEAD_END.search(data, max(0, start - 3), self.max_header_size + 4)
        if end is None:
            self._scanned = len(data)
            if len(data) > self.max_header_size:
                if b"\n" not in data[:self.max_header_size]:
                    return "request-target too long"  # the request line alone is that long
                return "header section too large"
            return None
        self._scanned = 0
        limit = end.start()
        if _FOLD.search(data, 0, limit) is not None:
            return "obsolete line folding (obs-fold)"
        head = data[:limit + 1].lower()
        if b"transfer-encoding" in head:
            codings = _LAST_CODING.findall(head)
            if codings and codings[-1] != b"chunked":
                return "chunked is not the final transfer coding"
        return end.end()

    def _feed_head(self) -> bool:
        found = self._scan_head()
        if isinstance(found, str):
            self._refuse(found)
            return False
        if self._buf[0] < 0x21:
            # A control character, a space or an empty line where a request-line should
            # start (a TLS handshake on the plain port, say): h11 refuses it at once, before
            # the head is whole (400), and so does this wire -- llhttp would wait for the
            # head, and skip an empty line, as RFC 9112 section 2.2 allows ("SHOULD ignore
            # at least one empty line"); the reference decides.
            self._fail(400, "illegal request line")
            return False
        if found is None:
            return False
        buf = self._buf
        if found > self.max_header_size:
            self._fail(431, f"the request head is larger than {self.max_header_size} bytes")
            return False
        head = bytes(buf[:found])
        del buf[:found]
        calls = self._calls
        parser = self._parser
        try:
            parser.feed_data(head)
        except self._httptools.HttpParserUpgrade:
            self._new_parser()
        except self._httptools.HttpParserError as exc:
            # A request line refused after its method was read: a HEAD is answered without
            # content even so (RFC 9110 section 9.3.2), so that its client reads the answer
            # as one response (h11 cannot tell the method of a line it refuses).
            with contextlib.suppress(Exception):  # (the parser may keep the last method)
                method = parser.get_method()
                if head.lstrip(b"\r\n").startswith(method + b" "):
                    self._method = method
            if "Content-Length overflow" in str(exc):
                # A length past 2**64-1: digits all the same, so a body over any limit --
                # 413, as h11 answers it (RFC 9110 section 15.5.14), after the checks h11
                # makes first. llhttp stopped at the field: the rest of the head is parsed
                # with the length set to 0 (its syntax), then checked as it is.
                probe = self._httptools.HttpRequestParser(_Callbacks())
                probe.set_dangerous_leniencies(lenient_version=True, lenient_chunked_length=True)
                try:
                    probe.feed_data(_LONG_LENGTH.sub(rb"\g<1>0", head))
                except self._httptools.HttpParserUpgrade:
                    pass
                except self._httptools.HttpParserError as syntax:
                    self._fail(400, str(syntax) or "malformed request")
                    return False
                lines = head.split(b"\r\n")[:-2]
                start = lines[0].split(b" ")
                fields = [(name.strip().lower(), value.strip(b" \t")) for name, _, value in
                          (line.partition(b":") for line in lines[1:])]
                rule = self._check_head(start[1] if len(start) > 1 else b"",
                                        start[-1].rpartition(b"/")[2], fields)
                if rule is not None:
                    self._fail(*self._check_answer(rule))
                else:
                    self._fail(413, f"the body is larger than {self.max_body_size} bytes")
                return False
            if "Transfer-Encoding" in str(exc):
                # A coding list that is not exactly "chunked" (the final coding is chunked:
                # the scan refused the rest): 501, as on h11 (CHECKS).
                self._fail(*self._check_answer("a transfer coding other than chunked"))
                return False
            self._fail(400, str(exc) or "malformed request")
            return False
        if not calls.in_body:  # pragma: no cover - a head always has a request line here
            self._fail(400, "no request line received")
            return False
        version = parser.get_http_version().encode("ascii")
        method = parser.get_method()
        self._method = method  # before the checks: a refused HEAD is answered without content
        fields = calls.fields
        refusal = self._check_head(calls.url, version, fields)
        if refusal is not None:
            self._fail(*self._check_answer(refusal))
            return False
        headers = Headers(fields)
        values = headers.decoded()  # (lower-case names: one dict access each)
        length = values.get("content-length")
        if length is not None and int(length) > self.max_body_size:
            self._fail(413, f"the body is larger than {self.max_body_size} bytes")
            return False
        self._version = version
        connection = values.get("connection")
        self._keep_alive = version >= b"1.1" and not _has_token(
            connection.encode("latin-1") if connection else None, b"close")
        expect = values.get("expect")
        if version >= b"1.1" and expect and _has_token(expect.encode("latin-1"),
                                                      b"100-continue"):
            self._out.append(_CONTINUE)
        self._started = True
        self._answered = False
        if not calls.complete:
            self._remaining = _CHUNKED if "transfer-encoding" in values else int(length or 0)
            self._chunk, self._chunk_left, self._chunk_crlf = _CHUNK_SIZE, 0, 0
            self._doomed = False
        self._events.append(RequestStarted(
            method=method.decode("ascii", "replace"), target=calls.url.decode("latin-1"),
            headers=headers, http_version=version.decode("ascii", "replace")))
        self._events.extend(calls.events)
        calls.events.clear()
        return True

    def _check_head(self, url: bytes, version: bytes,
                    fields: list[tuple[bytes, bytes]]) -> str | None:
        """The rule of :data:`CHECKS` or :data:`REFUSALS` a head breaks, in h11's order."""
        # One pass over the fields (this runs for every request); the rules in h11's order.
        codings: list[bytes] = []
        lengths = hosts = 0
        bad_length = False
        for name, value in fields:
            if name == b"host":
                hosts += 1
            elif name == b"content-length":
                lengths += 1
                if not value.isdigit() or len(value) > _MAX_LENGTH_DIGITS:
                    bad_length = True
            elif name == b"transfer-encoding":
                codings.append(value)
        if bad_length:
            return "invalid Content-Length"
        if codings and (len(codings) > 1 or codings[0].strip().lower() != b"chunked"):
            return "a transfer coding other than chunked"
        if hosts > 1:
            return "more than one Host field"
        if hosts == 0 and version == b"1.1":
            return "missing Host in an HTTP/1.1 request"
        if not version.startswith(b"1."):
            return "HTTP major version other than 1"
        if len(url) > self.max_target_length:
            return "request-target too long"
        if len(fields) > self.max_header_count:
            return "too many header fields"
        if codings:
            if lengths:
                return "both Transfer-Encoding and Content-Length"
            if version == b"1.0":
                return "Transfer-Encoding in an HTTP/1.0 request"
        return None

    def _new_parser(self) -> Any:
        """A parser on a fresh callbacks object: the first, and after a request that asked
        to upgrade (or CONNECT) has been read whole -- llhttp stops there, and we never
        switch protocols, so the next request gets a fresh parser.

        Two leniencies, neither of which lets anything through that the h11 wire refuses:
        the version -- llhttp knows 0.9, 1.0, 1.1 and 2.0 and refuses the rest, where "a
        recipient that receives a message with a major version number that it implements and
        a minor version number higher than what it implements SHOULD process the message as
        if it were in the highest minor version within that major version" (RFC 9112 section
        2.3), as h11 does; another major version is refused 505 after the parse
        (:data:`~mcp_sansio.http._wire.REFUSALS`) -- and a head with both Transfer-Encoding
        and Content-Length, which this wire refuses itself after the parse (REFUSALS, RFC
        9112 section 6.1), in h11's order: a head that also has too many fields is 431, as
        on h11, not llhttp's 400 at the second framing field. Every other llhttp check
        stays strict."""
        self._calls = _Callbacks()
        self._parser = parser = self._httptools.HttpRequestParser(self._calls)
        parser.set_dangerous_leniencies(lenient_version=True, lenient_chunked_length=True)
        return parser

    @staticmethod
    def _check_answer(rule: str) -> tuple[int, str]:
        """The status and text for a rule of :data:`CHECKS` or :data:`REFUSALS`."""
        status, section = CHECKS[rule] if rule in CHECKS else REFUSALS[rule]
        return status, f"{rule} ({section})"

    def _refuse(self, rule: str) -> None:
        status, section = REFUSALS[rule]
        self._fail(status, f"{rule} ({section})")

    def fail(self, status: int = 500, detail: str = "internal server error") -> None:
        """As :meth:`ServerWire.fail <mcp_sansio.http._wire.ServerWire.fail>`: a request
        read and not answered is answered ``status``; a response under way is cut short."""
        if self.closed:
            return
        self._streaming = False
        if self._started and not self._answered:
            self._fail(status, detail)
        else:
            self.closed = True
            self.busy = False

    def _fail(self, status: int, detail: str) -> None:
        """Answer a request we cannot read (or could not serve), then close."""
        if not self._answered:
            body = detail.encode("utf-8", "replace")
            self._out.append(b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
                             b"content-length: %d\r\nconnection: close\r\n\r\n"
                             % (status, reason_phrase(status), len(body)))
            if self._method != b"HEAD":
                self._out.append(body)
        self.closed = True
        self.busy = False

    # -- output ------------------------------------------------------------------------------

    def _start(self, status: int, headers: Iterable[tuple[str, str]], length: int | None
               ) -> None:
        """Write a response head (``length``: its Content-Length, None for a stream)."""
        pairs = tuple(headers)
        head_only = self._method == b"HEAD" or status in (204, 304)
        old = self._version < b"1.1"
        key: tuple[Any, ...] = (status, length, pairs, old, self._keep_alive,
                                self._method == b"HEAD")
        try:
            known = _HEADS.get(key)
        except TypeError:  # a header pair given as a list: unhashable, never kept
            known, key = None, ()
        if known is None:
            known = self._build(status, pairs, length, old)
            if key:
                if len(_HEADS) >= _HEAD_CACHE_SIZE:
                    _HEADS.clear()
                _HEADS[key] = known
        head, close = known
        self._out.append(head)
        self._answered = True
        if length is not None or status in (204, 304):
            self._frame = "length"
        elif old:
            self._frame = "close"
        else:
            self._frame = "chunked"
        if head_only:
            self._frame = "none"
        if close:
            self._keep_alive = False

    def _build(self, status: int, pairs: tuple[tuple[str, str], ...], length: int | None,
               old: bool) -> tuple[bytes, bool]:
        """A response head's bytes, and whether the connection closes after it (h11's
        rules, module docstring)."""
        lines = [b"HTTP/1.1 %d %s\r\n" % (status, reason_phrase(status))]
        close = not self._keep_alive
        for name, value in pairs:
            raw_name = name.encode("ascii")
            raw_value = value.encode("latin-1")
            if b"\r" in raw_value or b"\n" in raw_value or b"\x00" in raw_value:
                raise ValueError(f"a CR, LF or NUL in the value of the {name} field")
            lower = raw_name.lower()
            if lower == b"connection":
                if _has_token(raw_value, b"close"):
                    close = True
                    continue
            elif lower in (b"content-length", b"transfer-encoding") and (
                    length is None or lower == b"transfer-encoding"):
                continue  # the framing is this wire's
            lines.append(b"%s: %s\r\n" % (raw_name, raw_value))
        if length is not None:
            lines.append(b"content-length: %d\r\n" % length)
        elif status not in (204, 304):
            if not old:
                lines.append(b"Transfer-Encoding: chunked\r\n")
            elif self._method != b"HEAD":
                close = True  # an HTTP/1.0 client reads the body up to the close
        if close:
            lines.append(b"Connection: close\r\n")
        lines.append(b"\r\n")
        return b"".join(lines), close

    def respond(
        self, status: int, headers: Iterable[tuple[str, str]] = (), body: bytes = b"",
    ) -> None:
        """Answer the current request with a complete response (Content-Length set)."""
        if self.closed:
            return
        self._start(status, headers, len(body))
        if body and self._frame != "none":
            self._out.append(body)
        self._finish()

    def start_response(self, status: int, headers: Iterable[tuple[str, str]] = ()) -> None:
        """Start a streamed response (chunked for HTTP/1.1 clients)."""
        if self.closed:
            return
        self._start(status, headers, None)
        self._streaming = True

    def send_body(self, data: bytes) -> None:
        """One piece of a streamed response's body."""
        if self.closed or not self._streaming or not data:
            return
        frame = self._frame
        if frame == "chunked":
            self._out.append(b"%x\r\n%s\r\n" % (len(data), data))
        elif frame != "none":
            self._out.append(data)

    def end_response(self) -> None:
        """End a streamed response."""
        if self.closed or not self._streaming:
            return
        self._streaming = False
        if self._frame == "chunked":
            self._out.append(_LAST_CHUNK)
        self._finish()

    def send(self, event: ExchangeOutput) -> None:
        """Write one exchange output event (as :meth:`ServerWire.send
        <mcp_sansio.http._wire.ServerWire.send>`)."""
        if isinstance(event, ResponseStarted):
            if event.content_length is None:
                self.start_response(event.status, event.headers)
            elif not self.closed:
                self._start(event.status, event.headers, event.content_length)
                self._streaming = True
        elif isinstance(event, ResponseData):
            self.send_body(event.data)
        elif isinstance(event, CloseConnection):
            self.abort()
        else:
            self.end_response()

    def abort(self) -> None:
        """Give up on the connection: close it."""
        self.closed = True
        self.busy = False
        self._streaming = False

    def _finish(self) -> None:
        self.busy = False
        self._started = False
        self._answered = False
        self._method = b""  # an error answered before the next request is read has content
        if not self._keep_alive or self._frame == "close" or self.peer_closed:
            self.closed = True
        self._frame = ""

    def data_to_send(self) -> bytes:
        if not self._out:
            return b""
        out = b"".join(self._out)
        self._out.clear()
        return out

    @property
    def streaming(self) -> bool:
        """A streamed response has started and not ended."""
        return self._streaming
