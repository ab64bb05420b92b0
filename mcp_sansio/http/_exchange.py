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

:class:`~mcp_sansio.http._exchange_wire.ExchangeWire` is the server's side of one connection
driven by these events: it gathers a request's body (bounded by ``max_body_size``: a larger
one is answered ``413`` and the connection closes, as on the h11 wire) into an
:class:`~mcp_sansio.http._wire.HTTPRequest` for the server and turns the server's answer into
output events. It offers the server the same operations as the h11
:class:`~mcp_sansio.http._wire.ServerWire` (``next_request``, ``respond``,
``start_response``, ``send_body``, ``end_response``, ``abort``, ``fail``), so the server's
request handling is the same whichever fed it; the h11 wire is itself a producer of these
events (:meth:`~mcp_sansio.http._wire.ServerWire.next_event`) and a consumer of the output
ones (:meth:`~mcp_sansio.http._wire.ServerWire.send`). :meth:`HTTPServer.new_exchange
<mcp_sansio.http.HTTPServer.new_exchange>` gives a channel on an exchange.

The client side of the seam speaks the same events the other way round
(:class:`~mcp_sansio.http._client_exchange.ClientExchangeWire`, ``HTTPClient(...,
events=True)``): out, to the HTTP library that sends them, a request as
:class:`RequestStarted` (``content_length`` is the body's length, which the client always
knows; None for a ``GET``, which has none), :class:`RequestData` and :class:`RequestEnded`,
and :class:`CloseConnection` when the client is done with a connection (a 2026-07-28
request's stream closed is its cancellation); in, from that library, the response as
:class:`ResponseStarted` (header names in any case; its ``content_length`` is informational
there), :class:`ResponseData` (an SSE body as it streams), :class:`ResponseEnded`, and
:class:`PeerClosed` when the server closed the connection or it broke (before
:class:`ResponseEnded`, the response is cut short). :data:`ClientExchangeOutput` and
:data:`ClientExchangeInput` name the two directions; the h11
:class:`~mcp_sansio.http._wire.ClientWire` consumes the first
(:meth:`~mcp_sansio.http._wire.ClientWire.send`) and produces the second
(:meth:`~mcp_sansio.http._wire.ClientWire.next_exchange_event`).

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

import attrs

from ._headers import Headers

__all__ = [
    "ClientExchangeInput",
    "ClientExchangeOutput",
    "CloseConnection",
    "ExchangeInput",
    "ExchangeOutput",
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
    """A request's head: what came before its body. ``content_length``: the body's length
    when the sender knows it (the client always does: an HTTP library frames the request with
    it); a server-side parser may leave it None, the headers carrying what was received."""

    method: str
    target: str
    headers: Headers
    http_version: str = "1.1"
    content_length: int | None = None


@attrs.frozen(slots=True)
class RequestData:
    """A piece of the request body, as it arrived."""

    data: bytes


@attrs.frozen(slots=True)
class RequestEnded:
    """The request body is complete."""


@attrs.frozen(slots=True)
class PeerClosed:
    """The peer closed the connection (or it broke): the client, on a server's exchange;
    the server, on a client's."""


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
    error answered with ``Connection: close``, a stream handed over or cut short), or the
    client is (a stream it stops reading, the session's end)."""


ExchangeInput = RequestStarted | RequestData | RequestEnded | PeerClosed
ExchangeOutput = ResponseStarted | ResponseData | ResponseEnded | CloseConnection
#: What a client sends through an HTTP library (the seam's client side, module docstring).
ClientExchangeOutput = RequestStarted | RequestData | RequestEnded | CloseConnection
#: What an HTTP library hands a client back.
ClientExchangeInput = ResponseStarted | ResponseData | ResponseEnded | PeerClosed
