"""The client's side of one connection driven by exchange events, for an HTTP library that
is not our h11 wire (httpx, aiohttp, a browser's fetch).

Theory of operation
-------------------
:class:`~mcp_sansio.http.HTTPClient` decides what to send and what an answer means -- the
era, the session, SSE parsing, resumption, legacy HTTP+SSE -- and none of that depends on
who writes the request's bytes or parses the response's. Its channels (one per connection,
one exchange at a time) talk to a *wire* with four operations: ``send_request`` (a whole
request), ``next_exchange_event`` (the next piece of the response, as the events of
:mod:`~mcp_sansio.http._exchange`), ``close`` and ``receive_data`` (only end of file
matters). The h11 :class:`~mcp_sansio.http._wire.ClientWire` is one such wire, for sockets;
:class:`ClientExchangeWire` is the other, for a library that sends requests and reports
responses itself:

* out: each request becomes :class:`~mcp_sansio.http._exchange.RequestStarted` (method,
  target, headers with lower-case names, ``content_length``), one ``RequestData`` with the
  body when there is one, and ``RequestEnded``, all queued at once (the client's bodies are
  whole JSON-RPC messages), for :meth:`~ClientExchangeWire.events_to_send`; ``close`` queues
  ``CloseConnection`` (stop reading this response, drop the connection);
* in: :meth:`~ClientExchangeWire.receive_event` takes the library's ``ResponseStarted``,
  ``ResponseData``, ``ResponseEnded`` and ``PeerClosed``; the client reads them back in
  order. Informational heads (1xx, RFC 9110 section 15.2) are skipped, as h11 does.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from ._exchange import (
    ClientExchangeInput,
    ClientExchangeOutput,
    CloseConnection,
    PeerClosed,
    RequestData,
    RequestEnded,
    RequestStarted,
    ResponseEnded,
    ResponseStarted,
)
from ._headers import Headers

__all__ = ["ClientExchangeWire"]

_ENDED = RequestEnded()
_CLOSE = CloseConnection()
_PEER_CLOSED = PeerClosed()


class ClientExchangeWire:
    """The client's side of one connection fed with exchange events (module docstring)."""

    def __init__(self) -> None:
        #: True once the connection is over (closed here, or by the peer).
        self.closed = False
        #: A request has been sent and its response has not ended.
        self.busy = False
        #: Response events received since the last request was sent (the client's
        #: keep-alive retry asks whether anything came back at all).
        self.received = 0
        #: Why the exchange ended early (with the last ``PeerClosed``).
        self.detail = ""
        self._started = False  # the current response's head has arrived
        self._in: deque[ClientExchangeInput] = deque()
        self._out: list[ClientExchangeOutput] = []

    # -- output ------------------------------------------------------------------------------

    def send_request(
        self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes = b"",
    ) -> None:
        """Queue a whole request (the h11 wire's framing rule: a ``GET`` without a body has
        no length)."""
        if self.closed:
            return
        length = len(body) if method != "GET" or body else None
        self._out.append(RequestStarted(method=method, target=target,
                                        headers=Headers.from_pairs(headers),
                                        content_length=length))
        if body:
            self._out.append(RequestData(body))
        self._out.append(_ENDED)
        self.busy = True
        self.received = 0
        self._started = False

    def close(self) -> None:
        """Stop using this connection: the library closes it (and stops reading a response
        under way)."""
        if not self.closed:
            self._out.append(_CLOSE)
        self.closed = True
        self.busy = False
        self._in.clear()

    def events_to_send(self) -> list[ClientExchangeOutput]:
        """What the library should send now, in order."""
        out, self._out = self._out, []
        return out

    def data_to_send(self) -> bytes:
        """Nothing: an exchange's output is :meth:`events_to_send`."""
        return b""

    # -- input -------------------------------------------------------------------------------

    def receive_event(self, event: ClientExchangeInput) -> None:
        """One event from the library."""
        if self.closed:
            return
        if isinstance(event, PeerClosed):
            if self.busy:
                self._broken("the server closed the connection")
            self.closed = True
            return
        if not self.busy:
            return  # no request in flight: nothing for it to answer
        self.received += 1
        if isinstance(event, ResponseStarted):
            if event.status < 200:
                return  # an informational head: the final one follows
            if self._started:
                self._broken("a second response head")
                return
            self._started = True
        elif not self._started:
            self._broken("a response body or end before its head")
            return
        elif isinstance(event, ResponseEnded):
            self.busy = False
            self._started = False
        self._in.append(event)

    def receive_data(self, data: bytes) -> None:
        """Only end of file (``b""``) means anything here: bytes are the library's
        business."""
        if not data:
            self.receive_event(_PEER_CLOSED)

    def _broken(self, detail: str) -> None:
        """The exchange ends as if the connection broke; the connection is over."""
        self._in.append(_PEER_CLOSED)
        self.detail = detail
        self.closed = True
        self.busy = False
        self._started = False

    def next_exchange_event(self) -> ClientExchangeInput | None:
        """The next response event for the client (in the order received), or None."""
        return self._in.popleft() if self._in else None
