"""HTTP/1.1 message framing on h11, one object per TCP connection and role.

Theory of operation
-------------------
h11 is itself sans-IO: it turns bytes into HTTP events and events into bytes, and keeps the
HTTP/1.1 state machine (keep-alive, pipelining, chunked bodies, ``Connection: close``).
These two classes sit on it and deal in *whole* things, which is what the MCP layer wants:

* :class:`ServerWire` collects each request's head and body into one :class:`HTTPRequest`
  (the body bounded by ``max_body_size``: a larger one is answered ``413`` at once, from
  ``Content-Length`` when there is one, and the connection closes), and writes a response
  either whole (:meth:`~ServerWire.respond`) or as a stream of body chunks
  (:meth:`~ServerWire.start_response`, :meth:`~ServerWire.send_body`,
  :meth:`~ServerWire.end_response`) -- an SSE stream, written event by event. Malformed
  input is answered with h11's suggested status (``400``, ``431`` for oversized heads) and
  ``Connection: close``. When a response ends and both sides are done, the next cycle starts
  (keep-alive); a pipelined request that was already buffered comes out of the next
  :meth:`~ServerWire.next_request`.
* :class:`ClientWire` writes requests and yields the response as a head, body chunks and an
  end, so that an SSE body can be parsed while it streams.

Neither reads a socket: ``receive_data`` takes bytes (``b""`` for end of file) and
``data_to_send`` gives bytes. ``closed`` tells the caller to close the socket once it has
written what ``data_to_send`` returned.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

import attrs
import h11

from ._headers import Headers

__all__ = [
    "DEFAULT_MAX_HEADER_SIZE",
    "ClientWire",
    "HTTPRequest",
    "ResponseBody",
    "ResponseEnd",
    "ResponseHead",
    "ServerWire",
    "WireClosed",
]

#: The largest request or response head (start line and headers) accepted: 16 KiB, h11's
#: default and what common servers allow; MCP headers are short (a session id, a protocol
#: version, a method and a name).
DEFAULT_MAX_HEADER_SIZE = 16 * 1024

_REASONS = {
    100: b"Continue", 200: b"OK", 202: b"Accepted", 204: b"No Content",
    400: b"Bad Request", 403: b"Forbidden", 404: b"Not Found", 405: b"Method Not Allowed",
    406: b"Not Acceptable", 409: b"Conflict", 413: b"Content Too Large",
    415: b"Unsupported Media Type", 431: b"Request Header Fields Too Large",
    500: b"Internal Server Error", 503: b"Service Unavailable",
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
    def path(self) -> str:
        """The target without its query string."""
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.split("?", 1)[1] if "?" in self.target else ""


def _header_list(headers: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("ascii"), v.encode("latin-1")) for k, v in headers]


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
    :param max_header_size: the largest request head accepted; larger ones get ``431``.
    """

    def __init__(
        self, *, max_body_size: int, max_header_size: int = DEFAULT_MAX_HEADER_SIZE
    ) -> None:
        self.max_body_size = max_body_size
        self.max_header_size = max_header_size
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=max_header_size)
        self._out: list[bytes] = []
        self._head: h11.Request | None = None
        self._headers: Headers | None = None
        self._body = bytearray()
        self._ready: HTTPRequest | None = None
        #: True once the connection is over: close the socket after writing what is left.
        self.closed = False
        #: True once the peer closed its side (end of file).
        self.peer_closed = False
        #: Whether a request has been handed out and its response is not finished.
        self.busy = False
        self._streaming = False  # a response head went out, its end has not
        self._buffered_while_busy = 0
        # The request being answered is HEAD: its response carries the head only (RFC 9110
        # section 9.3.2; RFC 9112 section 6.3 rule 1), and h11 refuses content for it.
        self._no_content = False
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
        (the connection then closes) and never returned."""
        if self.busy or self.closed:
            return None
        conn = self._h11
        if self._head is None:
            # Between requests (or before the first): with nothing buffered and no end of
            # file, h11 can only say NEED_DATA -- asking it costs as much as the check.
            data, closed = conn.trailing_data
            if not data and not closed:
                return None
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                self._fail(exc.error_status_hint or 400, str(exc) or "malformed request")
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
                self._no_content = event.method == b"HEAD"
                self._headers = Headers.from_raw(event.headers.raw_items())
                self._body = bytearray()
                if "transfer-encoding" in self._headers and "content-length" in self._headers:
                    # RFC 9112 section 6.1: both present may be a request smuggling attempt
                    # (a proxy in front may have read the other one). A server may process
                    # it by Transfer-Encoding and then close; we take the safe choice and
                    # refuse it without reading or answering it as MCP.
                    self._fail(400, "both Transfer-Encoding and Content-Length")
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
            elif isinstance(event, h11.Data):
                self._body += event.data
                if len(self._body) > self.max_body_size:
                    self._fail(413, f"the body is larger than {self.max_body_size} bytes")
                    return None
            elif isinstance(event, h11.EndOfMessage):
                self._mark = self._fed - len(conn.trailing_data[0])
                head = self._head
                headers = self._headers
                assert head is not None and headers is not None
                self._head = None
                self._headers = None
                body = bytes(self._body)
                self._body = bytearray()
                self.busy = True
                self._buffered_while_busy = 0
                return HTTPRequest(
                    method=head.method.decode("ascii", "replace"),
                    target=head.target.decode("latin-1"),
                    headers=headers,
                    body=body,
                    http_version=head.http_version.decode("ascii", "replace"),
                )
            elif isinstance(event, h11.ConnectionClosed):
                self.closed = True
                return None

    def _fail(self, status: int, detail: str) -> None:
        """Answer a request we cannot read, then close."""
        if self._h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            body = detail.encode("utf-8", "replace")
            try:
                self._out.append(self._h11.send(h11.Response(
                    status_code=status, reason=reason_phrase(status),
                    headers=[(b"content-type", b"text/plain; charset=utf-8"),
                             (b"content-length", str(len(body)).encode()),
                             (b"connection", b"close")],
                )))
                if not self._no_content:
                    self._out.append(self._h11.send(h11.Data(data=body)))
                self._out.append(self._h11.send(h11.EndOfMessage()))
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
        self._out.append(conn.send(_response(status, headers, len(body))))
        if body and not self._no_content:
            self._out.append(conn.send(h11.Data(data=body)))
        self._finish()

    def start_response(self, status: int, headers: Iterable[tuple[str, str]] = ()) -> None:
        """Start a streamed response (chunked for HTTP/1.1 peers)."""
        if self.closed:
            return
        self._out.append(self._h11.send(_response(status, headers, None)))
        self._streaming = True

    def send_body(self, data: bytes) -> None:
        """One piece of a streamed response's body."""
        if self.closed or not self._streaming or not data or self._no_content:
            return
        self._out.append(self._h11.send(h11.Data(data=data)))

    def end_response(self) -> None:
        """End a streamed response."""
        if self.closed or not self._streaming:
            return
        self._streaming = False
        self._finish()

    def abort(self) -> None:
        """Give up on the connection (e.g. a stream handed over elsewhere): close it."""
        self.closed = True
        self.busy = False
        self._streaming = False

    def _finish(self) -> None:
        conn = self._h11
        self._out.append(conn.send(h11.EndOfMessage()))
        self.busy = False
        self._no_content = False
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
        self._eof = False

    def send_request(
        self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes = b"",
    ) -> None:
        length = len(body) if method != "GET" or body else None
        pairs = tuple(headers)
        key = (method, target, length, pairs)
        conn = self._h11
        known = _REQUEST_HEADS.get(key)
        if known is not None:
            event = h11.Request(method=method, target=target, headers=known)
        else:
            items = _header_list(pairs)
            if length is not None:
                items.append((b"content-length", b"%d" % length))
            event = h11.Request(method=method, target=target, headers=items)
            _REQUEST_HEADS.keep(key, event.headers)
        self._out.append(conn.send(event))
        if body:
            self._out.append(conn.send(h11.Data(data=body)))
        self._out.append(conn.send(h11.EndOfMessage()))
        self.busy = True
        self.received = 0

    def receive_data(self, data: bytes) -> None:
        if self._eof:
            return
        if not data:
            self._eof = True
        self.received += len(data)
        self._h11.receive_data(data)

    def next_event(self) -> ClientWireEvent | None:
        """The next piece of the response, or None when more data is needed."""
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
                return WireClosed(detail=str(exc) or "malformed response")
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return None
            if isinstance(event, h11.InformationalResponse):
                continue
            if isinstance(event, h11.Response):
                return ResponseHead(status=event.status_code,
                                    headers=Headers.from_raw(event.headers.raw_items()))
            if isinstance(event, h11.Data):
                return ResponseBody(data=bytes(event.data))
            if isinstance(event, h11.EndOfMessage):
                self.busy = False
                if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                    conn.start_next_cycle()
                else:
                    self.closed = True
                return _END
            if isinstance(event, h11.ConnectionClosed):
                self.closed = True
                was_busy, self.busy = self.busy, False
                return WireClosed(detail="the server closed the connection") if was_busy \
                    else None

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
