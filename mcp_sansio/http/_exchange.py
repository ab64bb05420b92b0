"""The exchange seam: an HTTP request and its response as parser-neutral events.

Theory of operation
-------------------
The HTTP server (:class:`~mcp_sansio.http.HTTPServer`) decides what MCP means by a request --
routing, sessions, SSE, resumption -- and none of that depends on how the request's bytes
were parsed. This module names what a parser hands over and takes back, one connection at a
time, in the shape HTTP servers already use between their protocol parsers and their
applications (a request head, body pieces, an end, the peer leaving; a response head, body
pieces, an end):

* in, from the parser: :class:`RequestStarted` (method, target, headers, HTTP version),
  :class:`RequestData` (a piece of the body, as it arrived), :class:`RequestEnded` (the
  body is complete) and :class:`PeerClosed` (the client is gone: in the middle of a response
  that is the stream's cancellation);
* out, to the parser: :class:`ResponseStarted` (status, headers, and the content length when
  the whole body is known, None for a streamed one such as SSE), :class:`ResponseData`,
  :class:`ResponseEnded`, and :class:`CloseConnection` (nothing more will be sent: close
  after writing what came before, without ending a response that is cut short).

:class:`ExchangeWire` is the server's side of one connection driven by these events: it
gathers a request's body (bounded by ``max_body_size``: a larger one is answered ``413`` and
the connection closes, as on the h11 wire) into an :class:`~mcp_sansio.http._wire.HTTPRequest`
for the server and turns the server's answer into output events. It offers the server the
same operations as the h11 :class:`~mcp_sansio.http._wire.ServerWire` (``next_request``,
``respond``, ``start_response``, ``send_body``, ``end_response``, ``abort``, ``fail``), so the
server's request handling is the same whichever fed it. :meth:`HTTPServer.new_exchange
<mcp_sansio.http.HTTPServer.new_exchange>` gives a channel on one.

What stays with the parser: everything that is a fact of one HTTP version -- message framing
(Content-Length, chunked), keep-alive and ``Connection: close``, pipelining (hand over the next
request only after :class:`ResponseEnded`), the head limits and request-target checks of RFC
9112 (:data:`~mcp_sansio.http._wire.REFUSALS`), and the refusal of malformed input. A request
handed over is one the parser accepted. The exchange keeps one rule that holds in every HTTP
version: a response to ``HEAD`` carries no content (RFC 9110 section 9.3.2), so its
:class:`ResponseStarted` has the length a ``GET`` would get and no :class:`ResponseData`
follows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import attrs

from ._headers import Headers
from ._wire import HTTPRequest

__all__ = [
    "CloseConnection",
    "ExchangeInput",
    "ExchangeOutput",
    "ExchangeWire",
    "PeerClosed",
    "RequestData",
    "RequestEnded",
    "RequestStarted",
    "ResponseData",
    "ResponseEnded",
    "ResponseStarted",
]


@attrs.frozen(kw_only=True, slots=True)
class RequestStarted:
    """A request's head: what came before its body."""

    method: str
    target: str
    headers: Headers
    http_version: str = "1.1"


@attrs.frozen(slots=True)
class RequestData:
    """A piece of the request body, as it arrived."""

    data: bytes


@attrs.frozen(slots=True)
class RequestEnded:
    """The request body is complete."""


@attrs.frozen(slots=True)
class PeerClosed:
    """The client closed the connection (or it broke)."""


@attrs.frozen(kw_only=True, slots=True)
class ResponseStarted:
    """A response's head. ``content_length``: the body's length when the whole body is known
    (a parser frames the response with it), None for a streamed body (chunked in HTTP/1.1)."""

    status: int
    headers: tuple[tuple[str, str], ...]
    content_length: int | None = None


@attrs.frozen(slots=True)
class ResponseData:
    """A piece of the response body (for SSE, one or more whole events)."""

    data: bytes


@attrs.frozen(slots=True)
class ResponseEnded:
    """The response is complete; the connection may carry the next request."""


@attrs.frozen(slots=True)
class CloseConnection:
    """Close the connection after writing what came before: the server is done with it (an
    error answered with ``Connection: close``, a stream handed over or cut short)."""


ExchangeInput = RequestStarted | RequestData | RequestEnded | PeerClosed
ExchangeOutput = ResponseStarted | ResponseData | ResponseEnded | CloseConnection

_ENDED = ResponseEnded()
_CLOSE = CloseConnection()


class ExchangeWire:
    """The server's side of one connection fed with exchange events (module docstring).

    :param max_body_size: the largest request body accepted; a larger one is answered
        ``413`` and the connection closes (the server's ``max_body_size``).
    """

    def __init__(self, *, max_body_size: int) -> None:
        self.max_body_size = max_body_size
        #: True once the connection is over: the parser closes it after what was sent.
        self.closed = False
        #: True once the peer left (:class:`PeerClosed`).
        self.peer_closed = False
        #: Whether a request has been handed out and its response is not finished.
        self.busy = False
        self._streaming = False
        self._head: RequestStarted | None = None
        self._body = bytearray()
        #: Whole requests received and not yet handed out (a parser should not send the next
        #: one before the response ended, but one that does is served in order).
        self._ready: deque[HTTPRequest] = deque()
        self._method = ""
        self._out: list[ExchangeOutput] = []

    # -- input -------------------------------------------------------------------------------

    def receive_event(self, event: ExchangeInput) -> None:
        """One event from the parser."""
        if self.closed or self.peer_closed:
            return
        if isinstance(event, RequestStarted):
            self._head = event
            self._body = bytearray()
        elif isinstance(event, RequestData):
            if self._head is None:
                return  # no request to belong to: the parser's mistake, ignored
            self._body += event.data
            if len(self._body) > self.max_body_size:
                self._head = None
                self._body = bytearray()
                if not self.busy:
                    self._fail(413, f"the body is larger than {self.max_body_size} bytes")
                else:
                    self.closed = True
        elif isinstance(event, RequestEnded):
            head = self._head
            if head is None:
                return
            self._head = None
            body = bytes(self._body)
            self._body = bytearray()
            self._ready.append(HTTPRequest(
                method=head.method, target=head.target, headers=head.headers, body=body,
                http_version=head.http_version))
        else:
            self.peer_closed = True
            self._head = None
            if not self.busy:
                self.closed = True

    def receive_data(self, data: bytes) -> None:
        """Only end of file (``b""``) means anything here: bytes are the parser's business."""
        if not data:
            self.receive_event(PeerClosed())

    def next_request(self) -> HTTPRequest | None:
        """The next whole request, or None (none yet, a response is in progress, or the
        connection is over)."""
        if self.busy or self.closed or not self._ready:
            return None
        request = self._ready.popleft()
        self._method = request.method
        self.busy = True
        return request

    # -- output ------------------------------------------------------------------------------

    def respond(
        self, status: int, headers: Iterable[tuple[str, str]] = (), body: bytes = b"",
    ) -> None:
        """Answer the current request with a complete response."""
        if self.closed:
            return
        self._out.append(ResponseStarted(status=status, headers=tuple(headers),
                                         content_length=len(body)))
        if body and self._method != "HEAD":  # RFC 9110 section 9.3.2: no content
            self._out.append(ResponseData(body))
        self._finish()

    def start_response(self, status: int, headers: Iterable[tuple[str, str]] = ()) -> None:
        """Start a streamed response."""
        if self.closed:
            return
        self._out.append(ResponseStarted(status=status, headers=tuple(headers)))
        self._streaming = True

    def send_body(self, data: bytes) -> None:
        """One piece of a streamed response's body."""
        if self.closed or not self._streaming or not data or self._method == "HEAD":
            return
        self._out.append(ResponseData(data))

    def end_response(self) -> None:
        """End a streamed response."""
        if self.closed or not self._streaming:
            return
        self._streaming = False
        self._finish()

    def abort(self) -> None:
        """Give up on the connection: the parser closes it."""
        if not self.closed:
            self._out.append(_CLOSE)
        self.closed = True
        self.busy = False
        self._streaming = False

    def fail(self, status: int = 500, detail: str = "internal server error") -> None:
        """End the connection after an unexpected failure: a request handed out and not yet
        answered is answered ``status``; a response under way is cut short."""
        if self.closed:
            return
        if self.busy and not self._streaming:
            self._fail(status, detail)
        else:
            self.abort()

    def _fail(self, status: int, detail: str) -> None:
        body = detail.encode("utf-8", "replace")
        self._out.append(ResponseStarted(
            status=status, headers=(("content-type", "text/plain; charset=utf-8"),
                                    ("connection", "close")),
            content_length=len(body)))
        if self._method != "HEAD":
            self._out.append(ResponseData(body))
        self._out.append(_ENDED)
        self.abort()

    def _finish(self) -> None:
        self._out.append(_ENDED)
        self.busy = False
        self._method = ""
        if self.peer_closed:
            self.abort()

    def events_to_send(self) -> list[ExchangeOutput]:
        """What the parser should write now, in order."""
        out, self._out = self._out, []
        return out

    def data_to_send(self) -> bytes:
        """Nothing: an exchange's output is :meth:`events_to_send`."""
        return b""

    @property
    def streaming(self) -> bool:
        """A streamed response has started and not ended."""
        return self._streaming
