"""The HTTP client's resumption of broken streams.

``basic/transports.mdx`` (2025-03-26 onwards), "Resumability and Redelivery": a client may
resume an SSE stream that broke with a GET carrying the ``Last-Event-ID`` of the last event
it received, after the ``retry`` delay the server last gave. :class:`StreamResumption`
decides, when a stream ends, whether its requests are still open and it can be resumed (an
event id was seen; not in the stateless era, whose streams cannot be), turns a broken POST
stream into a ``RESUME`` exchange that carries its open requests on, and schedules each
attempt with bounded exponential backoff (``max_reconnects`` attempts, at most
``max_reconnect_delay`` apart; an event seen resets the count). The handshake era's
standalone GET is reopened the same way until the server refuses it. Time is an argument:
the timers are a heap the client reads in ``next_deadline`` and ``handle_timeout``.
"""

from __future__ import annotations

import heapq
import itertools

from .._state import State
from ._client_state import ClientHost, Exchange, Kind

__all__ = ["StreamResumption"]


class StreamResumption:
    """One client's stream resumptions and their timers (``client._streams``)."""

    def __init__(self, client: ClientHost) -> None:
        self._client = client
        self._timers: list[tuple[float, int, Exchange]] = []
        self._seq = itertools.count()

    def next_deadline(self) -> float | None:
        return self._timers[0][0] if self._timers else None

    def due(self, now: float) -> list[Exchange]:
        """The exchanges whose attempt is due by ``now`` (taken off the timers)."""
        due = []
        while self._timers and self._timers[0][0] <= now:
            due.append(heapq.heappop(self._timers)[2])
        return due

    def ended(self, exchange: Exchange, *, broken: bool) -> None:
        """A stream (not legacy HTTP+SSE's) ended: resume it, or end what it carried."""
        client = self._client
        if exchange.kind is Kind.STANDALONE:
            if client._closing or client.connection.state is State.CLOSED:
                exchange.done = True
                return
            self.reconnect(exchange)
            return
        if not exchange.open_ids:
            exchange.done = True
            return
        if exchange.unreachable:
            client._fail(exchange, None, "the server is unreachable")
            return
        if exchange.last_event_id is not None and not exchange.stateless:
            resume = exchange
            if exchange.kind is Kind.POST:
                resume = Exchange(Kind.RESUME, "GET", client._target)
                resume.ids = tuple(exchange.open_ids)
                resume.last_event_id = exchange.last_event_id
                resume.retry_ms = exchange.retry_ms
                resume.session_id = exchange.session_id
                resume.answered = set()
                exchange.done = True
                for request_id in resume.ids:
                    client._by_id[request_id] = resume
            self.reconnect(resume)
            return
        client._fail(exchange, exchange.status,
                     "the stream ended before the response" + (" (broken)" if broken else ""))

    def reconnect(self, exchange: Exchange) -> None:
        """Resume a stream after the server's retry delay, with bounded backoff."""
        client = self._client
        if exchange.attempts >= client.max_reconnects:
            if exchange.kind is Kind.STANDALONE:
                exchange.done = True
                client._standalone = None
                client._standalone_refused = True
                return
            client._fail(exchange, None, "the stream could not be resumed")
            return
        base = (exchange.retry_ms / 1000 if exchange.retry_ms is not None
                else client.reconnect_delay)
        delay = min(base * (2 ** exchange.attempts), client.max_reconnect_delay)
        exchange.attempts += 1
        heapq.heappush(self._timers, (client._now + delay, next(self._seq), exchange))
