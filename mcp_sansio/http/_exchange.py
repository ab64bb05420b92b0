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

The rest of its theory of operation: docs/architecture.rst, "Module notes".
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
