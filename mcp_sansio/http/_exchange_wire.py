"""The server's side of one connection fed with exchange events, for a parser that is not h11.

Theory of operation
-------------------
A parser (an ASGI server, another HTTP/1.1 parser) hands over each request as the events of
:mod:`mcp_sansio.http._exchange`; :class:`ExchangeWire` gathers them into whole requests for
the HTTP server, with the body bounded as on the h11 wire, and turns the server's answer into
output events for the parser to write. It offers the server the operations the h11
:class:`~mcp_sansio.http._wire.ServerWire` does, so the server's handling is the same
whichever parser fed it (:meth:`HTTPServer.new_exchange
<mcp_sansio.http.HTTPServer.new_exchange>` gives a channel on one). The split from
:mod:`~mcp_sansio.http._exchange` keeps that module free of the wire it is shared with.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

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
    ResponseEnded,
    ResponseStarted,
)
from ._wire import HTTPRequest

__all__ = ["ExchangeWire"]

_ENDED = ResponseEnded()
_CLOSE = CloseConnection()


@mypyc_attr(allow_interpreted_subclasses=True)  # the ASGI adapter's wire derives from it
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
