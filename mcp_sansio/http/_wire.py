"""HTTP/1.1 message framing on h11, one object per TCP connection and role.

Theory of operation
-------------------
h11 is itself sans-IO: it turns bytes into HTTP events and events into bytes, and keeps the
HTTP/1.1 state machine (keep-alive, pipelining, chunked bodies, ``Connection: close``).
These two classes sit on it and deal in *whole* things, which is what the MCP layer wants.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable
from typing import Any, cast

import attrs
import h11

from ._exchange import (
    ClientExchangeInput,
    ClientExchangeOutput,
    CloseConnection,
    ExchangeInput,
    ExchangeOutput,
    PeerClosed,
    RequestData,
    RequestEnded,
    RequestStarted,
    ResponseData,
    ResponseEnded,
    ResponseStarted,
)
from ._headers import Headers

__all__ = [
    "DEFAULT_MAX_HEADER_COUNT",
    "DEFAULT_MAX_HEADER_SIZE",
    "DEFAULT_MAX_TARGET_LENGTH",
    "REFUSALS",
    "ClientWire",
    "HTTPRequest",
    "ResponseBody",
    "ResponseEnd",
    "ResponseHead",
    "ServerWire",
    "TARGET_FORMS",
    "WireClosed",
    "target_allowed",
    "target_form",
]

#: The largest request or response head (start line and headers) accepted: 16 KiB, h11's
#: default and what common servers allow; MCP headers are short (a session id, a protocol
#: version, a method and a name).
DEFAULT_MAX_HEADER_SIZE = 16 * 1024
#: The most header fields a request may carry: 100, Apache httpd's ``LimitRequestFields``
#: default. An MCP request needs about ten; proxies add a few (``Forwarded``, ``Via``,
#: ``X-Forwarded-*``). Many tiny fields fit in ``max_header_size`` and each costs a parse
#: and a dict entry, so the count is bounded on its own (431, RFC 6585 section 5).
DEFAULT_MAX_HEADER_COUNT = 100
#: The longest request-target accepted: 8 KiB, the line length nginx and Apache accept by
#: default. The MCP endpoint is one short path (a legacy POST adds ``?sessionId=``); a longer
#: target is answered 414 (RFC 9112 section 3: "A server that receives a request-target
#: longer than any URI it wishes to parse MUST respond with a 414").
DEFAULT_MAX_TARGET_LENGTH = 8 * 1024

#: The requests the server wire refuses on its own, beyond what h11 enforces (module
#: docstring): rule -> (status, the section that allows or requires the refusal). Each
#: closes the connection after the answer.
REFUSALS: dict[str, tuple[int, str]] = {
    # "A server MAY reject a request that contains both Content-Length and
    # Transfer-Encoding or process such a request in accordance with the Transfer-Encoding
    # alone. Regardless, the server MUST close the connection after responding": the
    # disagreement is the signature of request smuggling; refusing is the safe choice.
    "both Transfer-Encoding and Content-Length": (400, "RFC 9112 section 6.1"),
    # "A server or client that receives an HTTP/1.0 message containing a Transfer-Encoding
    # header field MUST treat the message as if the framing is faulty, even if a
    # Content-Length is present, and close the connection after processing the message":
    # faulty framing is refused (h11 would read it chunked).
    "Transfer-Encoding in an HTTP/1.0 request": (400, "RFC 9112 section 6.1"),
    # "A server that receives an obs-fold in a request message ... MUST either reject the
    # message by sending a 400 (Bad Request) ... or replace each received obs-fold with one
    # or more SP octets": h11 replaces; a proxy in front may not, so we refuse.
    "obsolete line folding (obs-fold)": (400, "RFC 9112 section 5.2"),
    "too many header fields": (431, "RFC 6585 section 5"),
    # h11 bounds a head only while it is incomplete; one that arrives whole in one read is
    # held to max_header_size here.
    "header section too large": (431, "RFC 6585 section 5"),
    "request-target too long": (414, "RFC 9112 section 3; RFC 9110 section 15.5.15"),
    # "If a Transfer-Encoding header field is present in a request and the chunked transfer
    # coding is not the final encoding, ... the server MUST respond with the 400 (Bad
    # Request) status code and then close the connection" (h11 would answer 501, the status
    # for a coding it does not know, section 6.1, which stays right for "gzip, chunked").
    "chunked is not the final transfer coding": (400, "RFC 9112 section 6.3"),
    # "A server can send a 505 (HTTP Version Not Supported) response if it wishes, for any
    # reason, to refuse service of the client's major protocol version" (RFC 9112 section
    # 2.3): an HTTP/1.1 message framed as another major version (h11 reads any d.d) is not
    # one we can trust to be framed as we read it.
    "HTTP major version other than 1": (505, "RFC 9112 section 2.3; RFC 9110 section 15.6.6"),
}
#: A header line that starts with whitespace: a continuation (obs-fold) of the line before.
_FOLD = re.compile(rb"\n[ \t]")
#: The last coding of a request's Transfer-Encoding lines (the final one decides its framing).
_LAST_CODING = re.compile(
    rb"(?m)^transfer-encoding[ \t]*:(?:[^\r\n]*,)?[ \t]*([^\r\n,]*?)[ \t]*\r?$")
#: The blank line that ends a head (h11 accepts a bare LF as a line end: RFC 9112 section 2.2).
_HEAD_END = re.compile(rb"\n\r?\n")

_REASONS = {
    100: b"Continue", 200: b"OK", 202: b"Accepted", 204: b"No Content",
    400: b"Bad Request", 403: b"Forbidden", 404: b"Not Found", 405: b"Method Not Allowed",
    406: b"Not Acceptable", 409: b"Conflict", 413: b"Content Too Large",
    414: b"URI Too Long", 415: b"Unsupported Media Type",
    431: b"Request Header Fields Too Large", 500: b"Internal Server Error",
    501: b"Not Implemented", 503: b"Service Unavailable", 505: b"HTTP Version Not Supported",
}


def reason_phrase(status: int) -> bytes:
    return _REASONS.get(status, b"")


@attrs.frozen(kw_only=True, slots=True)
class HTTPRequest:
    """One whole HTTP request."""

    method: str
    target: str
    headers: Headers
    body: bytes = b""
    http_version: str = "1.1"

    @property
    def form(self) -> str | None:
        """The request-target's form (RFC 9112 section 3.2): ``"origin"``, ``"absolute"``,
        ``"authority"`` or ``"asterisk"`` -- None when it is none of them."""
        return target_form(self.target)

    @property
    def path(self) -> str:
        """The target's path, without its query string (that of an absolute-form target:
        RFC 9112 section 3.2.2; empty for the authority and asterisk forms)."""
        target = self.target
        if target[:1] != "/":
            match = _ABSOLUTE.match(target)
            return (match.group(3) or "/") if match else ""
        return target.split("?", 1)[0]

    @property
    def query(self) -> str:
        target = self.target
        if target[:1] != "/":
            match = _ABSOLUTE.match(target)
            return (match.group(4) or "") if match else ""
        return target.split("?", 1)[1] if "?" in target else ""

    @property
    def authority(self) -> str | None:
        """The host of an absolute-form target, which stands for the ``Host`` header: "an
        origin server ... MUST ignore the received Host header field (if any) and instead
        use the host information of the request-target" (RFC 9112 section 3.2.2)."""
        match = _ABSOLUTE.match(self.target) if self.target[:1] != "/" else None
        return match.group(2) if match else None


class RequestGatherer:
    """A wire's exchange events gathered into whole requests, for the sans-IO server's
    whole-request path (``next_request``); one per wire, shared by every wire's code."""

    __slots__ = ("_body", "_head")

    def __init__(self) -> None:
        self._head: RequestStarted | None = None
        self._body = bytearray()

    def __len__(self) -> int:
        """Body bytes held for the request being gathered (the wire's memory bound counts
        them)."""
        return len(self._body)

    def next_request(self, next_event: Callable[[], ExchangeInput | None]
                     ) -> HTTPRequest | None:
        """Read ``next_event`` until a request has ended (returned whole) or it gives
        something else (None: more data needed, or the connection is over)."""
        while (event := next_event()) is not None:
            kind = type(event)
            if kind is RequestData:
                self._body += event.data  # type: ignore[union-attr]
            elif kind is RequestStarted:
                self._head = event  # type: ignore[assignment]
                self._body = bytearray()
            elif kind is RequestEnded:
                head = self._head
                assert head is not None
                self._head = None
                body = bytes(self._body)
                self._body = bytearray()
                return HTTPRequest(method=head.method, target=head.target,
                                   headers=head.headers, body=body,
                                   http_version=head.http_version)
            else:
                return None
        return None


#: absolute-form (RFC 9112 section 3.2.2) for the ``http`` and ``https`` schemes (the only
#: ones an HTTP origin serves, RFC 9110 section 4.2): scheme, a non-empty authority without
#: userinfo (RFC 9110 section 4.2.4: its presence is treated as an error), path, query.
_ABSOLUTE = re.compile(r"(?i:(https?))://([^/?#@\s]+)(/[^?#\s]*)?(?:\?([^#\s]*))?\Z")
#: authority-form (RFC 9112 section 3.2.3): ``uri-host ":" port``, CONNECT's alone.
_AUTHORITY = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[^/?#@:\[\]\s]+):[0-9]+\Z")
#: The request-target forms (RFC 9112 section 3.2) -> the only methods that may use the
#: form (None: any method but CONNECT, which uses the authority form alone) and the section.
#: A request whose target has none of the forms, or a form its method may not use, is
#: answered 400 (the request line is invalid, RFC 9112 section 3).
TARGET_FORMS: dict[str, tuple[frozenset[str] | None, str]] = {
    "origin": (None, "RFC 9112 section 3.2.1"),
    # "a server MUST accept the absolute-form in requests": routed on its path.
    "absolute": (None, "RFC 9112 section 3.2.2"),
    "authority": (frozenset({"CONNECT"}), "RFC 9112 section 3.2.3"),
    "asterisk": (frozenset({"OPTIONS"}), "RFC 9112 section 3.2.4"),
}


def target_form(target: str) -> str | None:
    """Which form of RFC 9112 section 3.2 a request-target has (None: none)."""
    if target[:1] == "/":
        return "origin"
    if target == "*":
        return "asterisk"
    if _ABSOLUTE.match(target):
        return "absolute"
    if _AUTHORITY.match(target):
        return "authority"
    return None


def target_allowed(method: str, form: str | None) -> bool:
    """Whether ``method`` may use a request-target of ``form`` (:data:`TARGET_FORMS`)."""
    if form is None:
        return False
    methods = TARGET_FORMS[form][0]
    if methods is None:
        return method != "CONNECT"
    return method in methods


def _header_list(headers: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    # Any pair of two strings will do (a list too): iterated untyped for the compiled build.
    pairs: Iterable[Any] = headers
    return [(k.encode("ascii"), v.encode("latin-1")) for k, v in pairs]


#: How many distinct header sets :class:`_HeadCache` keeps before it starts over: far more
#: than the few shapes a server or client sends (a JSON answer, an SSE head, a POST per
#: method and tool name, each with a Content-Length or two), small enough to be nothing in
#: memory.
_HEAD_CACHE_SIZE = 256


class _HeadCache:
    """h11 header lists already validated, by content.

    h11 checks every header name and value of an outgoing request or response against the
    RFC 9110 grammar, which costs more than the rest of building the head (about 9 us for a
    2026-07-28 POST's seven headers, 3 us for a response's two). Our heads repeat: the same
    names and values for every call of one tool, every JSON answer, every SSE head. h11
    takes the ``headers`` of an event it made as the headers of a new one without checking
    them again, so this keeps the ``headers`` of the first event of each distinct set and
    hands them back for the next. Every head still goes through h11's state machine and
    writer; a set is validated once by h11 before it is ever reused. Bounded: once
    ``_HEAD_CACHE_SIZE`` sets are held (Content-Length values vary with the bodies, session
    ids with the sessions), it starts over.
    """

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[tuple[Any, ...], Any] = {}

    def get(self, key: tuple[Any, ...]) -> Any:
        try:
            return self._known.get(key)
        except TypeError:  # a header pair given as a list: unhashable, never kept
            return None

    def keep(self, key: tuple[Any, ...], headers: Any) -> None:
        known = self._known
        if len(known) >= _HEAD_CACHE_SIZE:
            known.clear()
        with contextlib.suppress(TypeError):
            known[key] = headers


# One per process and direction: the heads a server sends are the same on every connection
# (so are a client's), and most connections carry few requests. Dict reads and writes are
# atomic, so threads may share them; a lost race costs one more validation.
_RESPONSE_HEADS = _HeadCache()
_REQUEST_HEADS = _HeadCache()


def _response(status: int, headers: Iterable[tuple[str, str]], length: int | None) -> h11.Response:
    """An h11 response head (``length``: its Content-Length, None for a streamed body)."""
    pairs = tuple(headers)
    key = (status, length, pairs)
    known = _RESPONSE_HEADS.get(key)
    if known is not None:
        return h11.Response(status_code=status, reason=reason_phrase(status), headers=known)
    items = _header_list(pairs)
    if length is not None:
        items.append((b"content-length", b"%d" % length))
    event = h11.Response(status_code=status, reason=reason_phrase(status), headers=items)
    _RESPONSE_HEADS.keep(key, event.headers)
    return event


class ServerWire:
    """The server side of one HTTP/1.1 connection (see the module docstring).

    :param max_body_size: the largest request body accepted; larger ones get ``413``.
    :param max_header_size: the largest request head accepted; larger ones get ``431``
        (``414`` when the request line alone is that long).
    :param max_header_count: the most header fields a request may carry (``431`` beyond).
    :param max_target_length: the longest request-target accepted (``414`` beyond).
    """

    def __init__(
        self, *, max_body_size: int, max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
        max_header_count: int = DEFAULT_MAX_HEADER_COUNT,
        max_target_length: int = DEFAULT_MAX_TARGET_LENGTH,
    ) -> None:
        self.max_body_size = max_body_size
        self.max_header_size = max_header_size
        self.max_header_count = max_header_count
        self.max_target_length = max_target_length
        #: The method of the request being answered (a response to HEAD has no content).
        self._method = b""
        #: How far the search for the end of the head being received has got (_prescan).
        self._scanned = 0
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=max_header_size)
        self._out: list[bytes] = []
        self._head: h11.Request | None = None
        self._headers: Headers | None = None
        self._body_size = 0  # of the request being received, for max_body_size
        #: next_request's whole request being gathered from the events.
        self._gather = RequestGatherer()
        #: True once the connection is over: close the socket after writing what is left.
        self.closed = False
        #: True once the peer closed its side (end of file).
        self.peer_closed = False
        #: Whether a request has been handed out and its response is not finished.
        self.busy = False
        self._streaming = False  # a response head went out, its end has not
        self._buffered_while_busy = 0
        # Bytes given to h11, and how many of them h11 had consumed when the current request
        # began: their difference at the head's end is the head's size on the wire.
        self._fed = 0
        self._mark = 0

    # -- input -------------------------------------------------------------------------------

    def receive_data(self, data: bytes) -> None:
        """Bytes from the peer; ``b""`` means it closed its side."""
        if self.closed or self.peer_closed:
            return
        if not data:
            self.peer_closed = True
            self._h11.receive_data(b"")
            if not self.busy:
                self.closed = True
            return
        if self.busy:
            # Pipelined bytes wait in h11 until this response ends; bound them.
            self._buffered_while_busy += len(data)
            if self._buffered_while_busy > self.max_header_size + self.max_body_size:
                self.closed = True
                return
        self._fed += len(data)
        self._h11.receive_data(data)

    def next_request(self) -> HTTPRequest | None:
        """The next whole request, or None (more data needed, a response is still in
        progress, or the connection is over). Malformed or oversized input is answered here
        (the connection then closes) and never returned. Gathered from :meth:`next_event`."""
        return self._gather.next_request(self.next_event)

    def next_event(self) -> ExchangeInput | None:
        """The next exchange event (:mod:`~mcp_sansio.http._exchange`) of the request being
        received, or None (more data needed, a response is still in progress, or the
        connection is over): the h11 wire as a producer of the seam's events. Malformed or
        oversized input is answered here (the connection then closes) and never returned."""
        if self.busy or self.closed:
            return None
        conn = self._h11
        if self._head is None:
            # Between requests (or before the first): with nothing buffered and no end of
            # file, h11 can only say NEED_DATA -- asking it costs as much as the check.
            data, closed = conn.trailing_data
            if not data and not closed:
                return None
            # The buffer starts with the next head: read what h11 does not tell (obs-fold,
            # which it unfolds; the coding list, which it refuses with 501) before it parses.
            if conn.their_state is h11.IDLE:
                rule = self._prescan(data)
                if rule is not None:
                    self._refuse(rule)
                    return None
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                status = exc.error_status_hint or 400
                if status == 431 and b"\n" not in conn.trailing_data[0]:
                    # The request line alone is over the head limit: its target is too
                    # long (RFC 9112 section 3).
                    self._refuse("request-target too long")
                    return None
                self._fail(status, str(exc) or "malformed request")
                return None
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return None
            if isinstance(event, h11.Request):
                # h11 enforces max_header_size only on a head it is still waiting for the end
                # of; a whole head that came in one read is measured here, so the limit does
                # not depend on how TCP cut the bytes (RFC 6585 section 5: 431).
                # (Everything fed since the last request ended bounds the head: only when
                # that is over the limit is the unread rest counted, a copy of it.)
                if (self._fed - self._mark > self.max_header_size
                        and self._fed - len(conn.trailing_data[0]) - self._mark
                        > self.max_header_size):
                    self._fail(431, f"the request head is larger than {self.max_header_size} "
                                    "bytes")
                    return None
                self._head = event
                self._method = event.method
                self._headers = Headers.from_raw(event.headers.raw_items())
                self._body_size = 0
                refusal = self._check_head(event, self._headers)
                if refusal is not None:
                    self._refuse(refusal)
                    return None
                if "transfer-encoding" in self._headers and event.http_version < b"1.1":
                    # RFC 9112 section 6.1: Transfer-Encoding in an HTTP/1.0 message MUST be
                    # treated as faulty framing (the sender may not have chunked what it
                    # sent); the safe choice is to refuse it unread, like the case above.
                    self._fail(400, "Transfer-Encoding in an HTTP/1.0 request")
                    return None
                length = _content_length(self._headers)
                if length is not None and length > self.max_body_size:
                    self._fail(413, f"the body is larger than {self.max_body_size} bytes")
                    return None
                if conn.they_are_waiting_for_100_continue:
                    self._out.append(conn.send(
                        h11.InformationalResponse(status_code=100, headers=[])))
                return RequestStarted(
                    method=event.method.decode("ascii", "replace"),
                    target=event.target.decode("latin-1"),
                    headers=self._headers,
                    http_version=event.http_version.decode("ascii", "replace"),
                )
            elif isinstance(event, h11.Data):
                # h11 hands a chunked body's data over as a bytearray where it says bytes:
                # read untyped (the compiled build checks declared types) and made bytes.
                data = bytes(cast(Any, event).data)
                self._body_size += len(data)
                if self._body_size > self.max_body_size:
                    self._fail(413, f"the body is larger than {self.max_body_size} bytes")
                    return None
                return RequestData(data)
            elif isinstance(event, h11.EndOfMessage):
                self._mark = self._fed - len(conn.trailing_data[0])
                self._head = None
                self._headers = None
                self.busy = True
                self._buffered_while_busy = 0
                return _REQUEST_ENDED
            elif isinstance(event, h11.ConnectionClosed):
                self.closed = True
                return _PEER_CLOSED

    def _prescan(self, data: bytes) -> str | None:
        """The rule of :data:`REFUSALS` the head at the start of ``data`` breaks that only
        its bytes show: a folded line (a line that starts with whitespace continues the one
        before: obs-fold, RFC 9112 section 5.2), or a Transfer-Encoding whose final coding
        is not chunked (section 6.3); and a head over the size limit. A head is judged once
        it is whole (h11 cannot parse it before); while it arrives, the search for its end
        resumes where the last one stopped, so a head sent byte by byte costs linear time."""
        start = self._scanned if len(data) >= self._scanned else 0
        end = _HEAD_END.search(data, max(0, start - 3), self.max_header_size + 4)
        if end is None:
            self._scanned = len(data)
            if len(data) > self.max_header_size:
                if b"\n" not in data[:self.max_header_size]:
                    return "request-target too long"  # the request line alone is that long
                return "header section too large"
            return None
        self._scanned = 0  # the next head starts after this one
        limit = end.start()
        if _FOLD.search(data, 0, limit) is not None:
            return "obsolete line folding (obs-fold)"
        head = data[:limit + 1].lower()
        if b"transfer-encoding" in head:  # (a plain search first: most heads have none)
            codings = _LAST_CODING.findall(head)
            if codings and codings[-1] != b"chunked":
                return "chunked is not the final transfer coding"
        return None

    def _check_head(self, head: h11.Request, headers: Headers) -> str | None:
        """The rule of :data:`REFUSALS` a request head breaks, if any."""
        if not head.http_version.startswith(b"1."):
            return "HTTP major version other than 1"
        if len(head.target) > self.max_target_length:
            return "request-target too long"
        if len(head.headers) > self.max_header_count:
            return "too many header fields"
        if "transfer-encoding" in headers:
            if "content-length" in headers:
                return "both Transfer-Encoding and Content-Length"
            if head.http_version == b"1.0":
                return "Transfer-Encoding in an HTTP/1.0 request"
        return None

    def _refuse(self, rule: str) -> None:
        status, section = REFUSALS[rule]
        self._fail(status, f"{rule} ({section})")

    def fail(self, status: int = 500, detail: str = "internal server error") -> None:
        """End the connection after an unexpected failure while handling it: a request read
        and not yet answered is answered ``status`` (with ``Connection: close``); a response
        under way is cut short; between requests the connection just closes (no answer to a
        request never made)."""
        if self.closed:
            return
        self._streaming = False
        if self._h11.our_state is h11.SEND_RESPONSE:
            self._fail(status, detail)
        else:
            self.closed = True
            self.busy = False

    def _fail(self, status: int, detail: str) -> None:
        """Answer a request we cannot read (or could not serve), then close."""
        if self._h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            body = detail.encode("utf-8", "replace")
            try:
                out = [self._h11.send(h11.Response(
                    status_code=status, reason=reason_phrase(status),
                    headers=[(b"content-type", b"text/plain; charset=utf-8"),
                             (b"content-length", str(len(body)).encode()),
                             (b"connection", b"close")],
                ))]
                if self._method != b"HEAD":  # RFC 9110 section 9.3.2: no content
                    out.append(self._h11.send(h11.Data(data=body)))
                out.append(self._h11.send(h11.EndOfMessage()))
                self._out.extend(out)
            except h11.LocalProtocolError:  # pragma: no cover - state checked above
                pass
        self.closed = True
        self.busy = False

    # -- output ------------------------------------------------------------------------------

    def respond(
        self, status: int, headers: Iterable[tuple[str, str]] = (), body: bytes = b"",
    ) -> None:
        """Answer the current request with a complete response (Content-Length set)."""
        if self.closed:
            return
        conn = self._h11
        # Whole or nothing: a head whose body then fails to go out is never written.
        head = conn.send(_response(status, headers, len(body)))
        if body and self._method != b"HEAD":
            # A response to HEAD carries the headers a GET would get -- Content-Length
            # included -- and no content (RFC 9110 section 9.3.2; h11 frames it so).
            data = conn.send(h11.Data(data=body))
            self._out.append(head)
            self._out.append(data)
        else:
            self._out.append(head)
        self._finish()

    def start_response(self, status: int, headers: Iterable[tuple[str, str]] = ()) -> None:
        """Start a streamed response (chunked for HTTP/1.1 peers)."""
        if self.closed:
            return
        self._out.append(self._h11.send(_response(status, headers, None)))
        self._streaming = True

    def send_body(self, data: bytes) -> None:
        """One piece of a streamed response's body."""
        if self.closed or not self._streaming or not data or self._method == b"HEAD":
            return
        self._out.append(self._h11.send(h11.Data(data=data)))

    def end_response(self) -> None:
        """End a streamed response."""
        if self.closed or not self._streaming:
            return
        self._streaming = False
        self._finish()

    def send(self, event: ExchangeOutput) -> None:
        """Write one exchange output event (:mod:`~mcp_sansio.http._exchange`): the h11 wire
        as a consumer of the seam's events. A :class:`ResponseStarted` with a length frames
        the body with ``Content-Length``; without one the body is chunked (HTTP/1.1)."""
        if isinstance(event, ResponseStarted):
            if event.content_length is None:
                self.start_response(event.status, event.headers)
            elif not self.closed:
                self._out.append(self._h11.send(
                    _response(event.status, event.headers, event.content_length)))
                self._streaming = True
        elif isinstance(event, ResponseData):
            self.send_body(event.data)
        elif isinstance(event, CloseConnection):
            self.abort()
        else:
            self.end_response()

    def abort(self) -> None:
        """Give up on the connection (e.g. a stream handed over elsewhere): close it."""
        self.closed = True
        self.busy = False
        self._streaming = False

    def _finish(self) -> None:
        conn = self._h11
        self._out.append(conn.send(h11.EndOfMessage()))
        self.busy = False
        self._method = b""  # an error answered before the next request is read has content
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE and not self.peer_closed:
            conn.start_next_cycle()
        else:
            # Connection: close, an HTTP/1.0 peer, a body we did not read (413), or EOF.
            self.closed = True

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


_REQUEST_ENDED = RequestEnded()
_PEER_CLOSED = PeerClosed()


def _content_length(headers: Headers) -> int | None:
    value = headers.get("content-length")
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:  # pragma: no cover - h11 validates it
        return None


# -- client side -----------------------------------------------------------------------------


@attrs.frozen(kw_only=True, slots=True)
class ResponseHead:
    """The status line and headers of a response."""

    status: int
    headers: Headers


@attrs.frozen(kw_only=True, slots=True)
class ResponseBody:
    """A piece of a response body, as it arrived."""

    data: bytes


@attrs.frozen(kw_only=True, slots=True)
class ResponseEnd:
    """The response is complete."""


@attrs.frozen(kw_only=True, slots=True)
class WireClosed:
    """The connection ended before the response was complete (or was malformed)."""

    detail: str = ""


ClientWireEvent = ResponseHead | ResponseBody | ResponseEnd | WireClosed
_END = ResponseEnd()
_RESPONSE_ENDED = ResponseEnded()


class ClientWire:
    """The client side of one HTTP/1.1 connection: one request at a time, keep-alive."""

    def __init__(self, *, max_header_size: int = DEFAULT_MAX_HEADER_SIZE) -> None:
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=max_header_size)
        self._out: list[bytes] = []
        #: Close the socket once what ``data_to_send`` returned is written.
        self.closed = False
        #: A request has been sent and its response has not ended.
        self.busy = False
        #: Bytes received since the last request was sent.
        self.received = 0
        #: Why the connection ended early (with the last ``PeerClosed``).
        self.detail = ""
        self._eof = False

    def send_request(
        self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes = b"",
    ) -> None:
        length = len(body) if method != "GET" or body else None
        self._send_head(method, target, tuple(headers), length)
        conn = self._h11
        if body:
            self._out.append(conn.send(h11.Data(data=body)))
        self._out.append(conn.send(h11.EndOfMessage()))

    def _send_head(self, method: str, target: str, pairs: tuple[tuple[str, str], ...],
                   length: int | None) -> None:
        key = (method, target, length, pairs)
        known = _REQUEST_HEADS.get(key)
        if known is not None:
            event = h11.Request(method=method, target=target, headers=known)
        else:
            items = _header_list(pairs)
            if length is not None:
                items.append((b"content-length", b"%d" % length))
            elif method not in ("GET", "HEAD"):
                # A body of unknown length (RFC 9112 section 7.1); ours are always known.
                items.append((b"transfer-encoding", b"chunked"))
            event = h11.Request(method=method, target=target, headers=items)
            _REQUEST_HEADS.keep(key, event.headers)
        self._out.append(self._h11.send(event))
        self.busy = True
        self.received = 0

    def send(self, event: ClientExchangeOutput) -> None:
        """Write one exchange event of a request (:mod:`~mcp_sansio.http._exchange`): the h11
        wire as a consumer of the client's side of the seam. ``RequestStarted`` frames the
        body with its ``content_length`` (chunked when None, except for ``GET`` and ``HEAD``,
        which then have no body); ``CloseConnection`` is :meth:`close`."""
        if isinstance(event, CloseConnection):
            self.close()
        elif self.closed:
            return
        elif isinstance(event, RequestStarted):
            self._send_head(event.method, event.target, tuple(event.headers.items()),
                            event.content_length)
        elif isinstance(event, RequestData):
            if event.data:
                self._out.append(self._h11.send(h11.Data(data=event.data)))
        else:
            self._out.append(self._h11.send(h11.EndOfMessage()))

    def receive_data(self, data: bytes) -> None:
        if self._eof:
            return
        if not data:
            self._eof = True
        self.received += len(data)
        self._h11.receive_data(data)

    def next_exchange_event(self) -> ClientExchangeInput | None:
        """The next piece of the response as an exchange event (``ResponseStarted`` with the
        header names lower-cased and ``content_length`` from ``Content-Length`` when there is
        one, ``ResponseData``, ``ResponseEnded``, or ``PeerClosed`` when the connection ended
        before the response did or the response was malformed), or None when more data is
        needed."""
        if self.closed:
            return None
        conn = self._h11
        if not self.busy:
            # No request in flight (its response has ended): with nothing buffered and no
            # end of file, h11 can only say NEED_DATA.
            data, closed = conn.trailing_data
            if not data and not closed:
                return None
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                self.closed = True
                self.busy = False
                self.detail = str(exc) or "malformed response"
                return _PEER_CLOSED
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return None
            if isinstance(event, h11.InformationalResponse):
                continue
            if isinstance(event, h11.Response):
                length = None
                pairs = []
                for name, value in event.headers:  # h11 lower-cases the names
                    if name == b"content-length" and value.isdigit():  # h11 checked it
                        length = int(value)
                    pairs.append((name.decode("latin-1"), value.decode("latin-1")))
                return ResponseStarted(status=event.status_code, headers=tuple(pairs),
                                       content_length=length)
            if isinstance(event, h11.Data):
                return ResponseData(bytes(cast(Any, event).data))  # see next_event
            if isinstance(event, h11.EndOfMessage):
                self.busy = False
                if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                    conn.start_next_cycle()
                else:
                    self.closed = True
                return _RESPONSE_ENDED
            if isinstance(event, h11.ConnectionClosed):
                self.closed = True
                was_busy, self.busy = self.busy, False
                if not was_busy:
                    return None
                self.detail = "the server closed the connection"
                return _PEER_CLOSED

    def next_event(self) -> ClientWireEvent | None:
        """The next piece of the response, or None when more data is needed: what
        :meth:`next_exchange_event` gives, in this module's own shapes."""
        event = self.next_exchange_event()
        if event is None:
            return None
        if isinstance(event, ResponseStarted):
            return ResponseHead(status=event.status, headers=Headers.from_pairs(event.headers))
        if isinstance(event, ResponseData):
            return ResponseBody(data=event.data)
        if isinstance(event, ResponseEnded):
            return _END
        return WireClosed(detail=self.detail)

    def close(self) -> None:
        """Stop using this connection (the caller closes the socket)."""
        self.closed = True
        self.busy = False

    def data_to_send(self) -> bytes:
        if not self._out:
            return b""
        out = b"".join(self._out)
        self._out.clear()
        return out
