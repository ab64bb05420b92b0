"""Where SSE events wait to be replayed: the resumability of handshake-era streams.

Theory of operation
-------------------
In 2025-03-26 .. 2025-11-25 a server MAY give its SSE events ids; a client whose stream broke
sends the last id it saw back as ``Last-Event-ID`` on a GET, and the server replays what
followed *on that stream only* (``basic/transports.mdx``, "Resumability and Redelivery").
Ids must be unique across the session's streams and SHOULD say which stream they belong to.

The server asks an :class:`EventStore` to keep each event it writes (``store``), to find the
stream and the events after an id (``replay``), and to drop a stream when its session ends
(``forget``). :class:`InMemoryEventStore` is the default: ids are ``<stream id>:<sequence>``
and memory is bounded by ``max_events`` across all streams, the oldest going first. A store
that has dropped events a client still needs answers ``None`` rather than replay with a gap.

The server calls an :class:`EventStore` synchronously, in the middle of its work: a store
here must be pure and quick, like the in-memory one. A store several server processes
share (behind a load balancer) is a network round trip, which must not block an event
loop: that is :class:`mcp_sansio.stores.EventLog`, asynchronous, driven by the adapter of a
server built with ``shared=True`` (:mod:`mcp_sansio.http._shared`).
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

__all__ = ["DEFAULT_MAX_STORED_EVENTS", "EventStore", "InMemoryEventStore"]

#: Events kept by the default store, across all sessions: 10,000. A message waits there only
#: until the client has had time to resume a broken stream; at the 4 KiB of a typical
#: message that is about 40 MB at worst, and old events go first.
DEFAULT_MAX_STORED_EVENTS = 10_000


class EventStore(Protocol):
    """What the server needs from an event store."""

    def store(self, stream_id: str, data: bytes) -> str:
        """Keep ``data`` (one JSON-RPC message; ``b""`` for a priming event) as the next event
        of ``stream_id``; return its event id: visible ASCII, unique across every stream."""

    def replay(self, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream ``last_event_id`` belongs to, and every event stored after it (id,
        data), oldest first; None if the id is unknown or events after it are lost."""

    def forget(self, stream_id: str) -> None:
        """Drop everything stored for ``stream_id``."""


class InMemoryEventStore:
    """A bounded in-process :class:`EventStore`.

    :param max_events: events kept in total; beyond it the oldest event (of any stream)
        is dropped, and a replay that would need it returns None.
    """

    def __init__(self, max_events: int = DEFAULT_MAX_STORED_EVENTS) -> None:
        if max_events < 1:
            raise ValueError("max_events must be positive")
        self.max_events = max_events
        self._streams: dict[str, deque[tuple[int, bytes]]] = {}
        self._next: dict[str, int] = {}  # stream -> next sequence number
        self._lost: dict[str, int] = {}  # stream -> highest sequence number dropped
        self._order: deque[str] = deque()  # stream of each stored event, oldest first
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def store(self, stream_id: str, data: bytes) -> str:
        seq = self._next.get(stream_id, 0)
        self._next[stream_id] = seq + 1
        events = self._streams.get(stream_id)
        if events is None:
            events = self._streams[stream_id] = deque()
        events.append((seq, data))
        self._order.append(stream_id)
        self._count += 1
        while self._count > self.max_events:
            self._evict()
        return f"{stream_id}:{seq}"

    def _evict(self) -> None:
        stream_id = self._order.popleft()
        events = self._streams.get(stream_id)
        if not events:  # forgotten already
            return
        seq, _ = events.popleft()
        self._lost[stream_id] = seq
        self._count -= 1

    def replay(self, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        stream_id, sep, number = last_event_id.rpartition(":")
        if not sep or not number.isdigit() or stream_id not in self._next:
            return None
        seq = int(number)
        if seq >= self._next[stream_id]:
            return None
        if self._lost.get(stream_id, -1) > seq:
            return None  # events after the client's position were dropped
        events = self._streams.get(stream_id, ())
        return stream_id, [(f"{stream_id}:{s}", data) for s, data in events if s > seq]

    def forget(self, stream_id: str) -> None:
        events = self._streams.pop(stream_id, None)
        if events:
            self._count -= len(events)
        self._next.pop(stream_id, None)
        self._lost.pop(stream_id, None)
        # Its entries in _order are skipped lazily by _evict... but _count must stay the
        # number of live events, and _order may keep stale names: compact when it doubles.
        if len(self._order) > 2 * self.max_events:
            live = set(self._streams)
            self._order = deque(s for s in self._order if s in live)
