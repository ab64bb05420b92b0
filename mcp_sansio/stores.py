"""Shared state behind small interfaces: what every worker of one service must see.

Theory of operation
-------------------
One process serving MCP keeps its sessions, its SSE events and its sealing keys in memory.
Several workers (processes, machines) behind a load balancer without sticky sessions must
share them, or a request that lands on another worker finds nothing ("unknown session",
"unknown Last-Event-ID", a ``requestState`` it cannot open). Each thing shared sits behind
one small asynchronous interface here, with an in-memory default in this module and a Redis
implementation in :mod:`mcp_sansio.adapters.redis`.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from ._snapshot import SNAPSHOT_FORMAT, restore_session, snapshot_session

__all__ = [
    "DEFAULT_EVENT_TTL",
    "DEFAULT_MAX_EVENTS_PER_STREAM",
    "DEFAULT_MAX_KEYS",
    "DEFAULT_MAX_STREAMS",
    "DEFAULT_TASK_SKEW",
    "SNAPSHOT_FORMAT",
    "TOPICS",
    "Deliver",
    "EventBus",
    "EventLog",
    "KeyStore",
    "MemoryEventBus",
    "MemoryEventLog",
    "MemoryKeyStore",
    "MemorySessionTable",
    "MemoryStores",
    "MemoryTaskTable",
    "SessionTable",
    "TaskTable",
    "events_after",
    "parse_event_id",
    "restore_session",
    "snapshot_session",
    "task_deadline",
]

#: Events kept per stream: 1,000. A client resumes a stream it lost a moment ago (the SSE
#: ``retry`` default is one second), so it needs the last few events, not the stream's
#: history; a stream of progress notifications for one long tool call is the longest there
#: is, and a thousand of them is minutes of progress at any sane rate. Beyond it the oldest
#: go, and a resumption that needs them is refused (400) rather than replayed with a gap.
DEFAULT_MAX_EVENTS_PER_STREAM = 1000
#: Seconds an event stays resumable: 300. Five minutes covers a client's reconnect after a
#: network change or a laptop lid, far beyond the one-second retry; past it, the events are
#: dropped by the store itself (Redis expires the key), so a crashed worker leaks nothing.
DEFAULT_EVENT_TTL = 300.0
#: Streams the in-memory event log keeps: 10,000 (the oldest stream goes first). With the
#: per-stream bound this caps one process's memory; Redis bounds by TTL instead.
DEFAULT_MAX_STREAMS = 10_000
#: Sealing keys kept in a key ring: 4. Rotation adds one at a time; a state sealed with a key
#: three rotations old still opens, which at any rotation period longer than a
#: ``requestState``'s lifetime (minutes) loses nothing.
DEFAULT_MAX_KEYS = 4
#: Seconds a shared task record outlives its TTL: 30, the same allowance as a sealed
#: ``requestState``'s (:data:`mcp_sansio._stateless.DEFAULT_SKEW`, explained there). The record
#: is written on the creating host's wall clock and judged on the reader's; SEP-2663 ("TTL")
#: says a task is not dropped before its TTL, so a reader whose clock runs up to this far
#: ahead still finds it.
DEFAULT_TASK_SKEW = 30.0


def task_deadline(created_at: float, ttl_ms: int, *, skew: float = DEFAULT_TASK_SKEW) -> float:
    """The wall-clock instant a shared task record may be forgotten: ``created_at`` (seconds
    since the epoch, the creating host's clock) plus the TTL plus the skew allowance."""
    return created_at + ttl_ms / 1000 + skew

#: The event bus's topics: what is published on each, and who listens.
TOPICS: Mapping[str, str] = {
    # A server-initiated notification for every session that may receive it (e.g.
    # notifications/tools/list_changed): JSON {"method", "params"}; every worker offers it
    # to its own sessions and listen streams (HTTPServer.broadcast).
    "broadcast": "notifications every worker fans out to its sessions and listen streams",
    # A message for one session's standalone (GET) stream, wherever that stream is open:
    # JSON {"session", "message"}.
    "session": "messages for one session's GET stream, delivered where the stream is open",
    # Every SSE event a worker stores, JSON {"id", "data"} (data as latin-1 text): a worker
    # where a client resumed that stream relays it (HTTPServer.relay_event).
    "events": "stored SSE events, relayed by a worker where a client resumed their stream",
    # A key was added to the key store: every worker re-reads the ring (adapters.keys).
    "keys": "a new sealing key: every worker re-reads the key ring",
    # A client's answer to a server-to-client request, posted on a worker other than the
    # one whose handler waits: JSON {"session", "to" (the worker's tag), "message"}.
    "answers": "answers to server-to-client requests, for the worker whose handler waits",
    # Each worker's heartbeat, JSON {"worker" (its stream_tag), "alive": true}, every few
    # seconds, and {"worker", "gone": true} at a clean shutdown: a worker relaying a stream
    # ends the relay once its writer is gone (http/_shared.py, WorkerLiveness).
    "workers": "heartbeats and shutdown notices: relays of a gone writer's streams end",
    # Tasks, JSON {"op", "taskId", ...}: "cancel" and "update" (with
    # "inputResponses") for the worker that runs the task, which alone holds its handler;
    # "stored" after a worker wrote a task's record, so that a blocking tasks/result on
    # another worker reads it at once instead of at its next poll.
    "tasks": "task cancels and updates for the worker that runs the task; record notices",
}


def parse_event_id(event_id: str) -> tuple[str, int] | None:
    """``<stream id>:<sequence>`` -> (stream id, sequence), or None for anything else (an id
    a client sends is attacker input: it is parsed, never trusted)."""
    stream_id, sep, number = event_id.rpartition(":")
    if not sep or not stream_id or not number.isdigit() or len(number) > 18:
        return None
    return stream_id, int(number)


# -- interfaces ---------------------------------------------------------------------------------


class SessionTable(Protocol):
    """Session id -> the record of a handshake-era session, until its idle deadline."""

    async def put(self, session_id: str, record: Mapping[str, Any], *,
                  expires_at: float, wall_time: float) -> None:
        """Keep ``record`` (JSON-able) for ``session_id`` until ``expires_at`` (wall clock,
        seconds since the epoch; ``wall_time`` is now on it), replacing what was there."""

    async def get(self, session_id: str, *, wall_time: float) -> dict[str, Any] | None:
        """The record, or None if unknown, deleted or past its deadline at ``wall_time``."""

    async def touch(self, session_id: str, *, expires_at: float, wall_time: float) -> bool:
        """Move a live session's deadline to ``expires_at``; False if it is gone."""

    async def delete(self, session_id: str) -> bool:
        """Forget the session (DELETE, end); True if it was there."""


class EventLog(Protocol):
    """The SSE events of resumable streams, numbered by the server."""

    async def append(self, event_id: str, data: bytes, *, wall_time: float) -> None:
        """Keep ``data`` (one JSON-RPC message; ``b""`` for a priming event) as event
        ``event_id`` (``<stream id>:<sequence>``, sequences counting up from 0 per stream)."""

    async def replay(self, last_event_id: str, *, wall_time: float
                     ) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream ``last_event_id`` belongs to and every event kept after it, oldest
        first; None if the id is unknown or events after it are lost (bound or TTL)."""

    async def forget(self, stream_id: str) -> None:
        """Drop everything kept for ``stream_id`` (its session ended)."""

    # Optional: ``async def kept(stream_id, *, wall_time) -> list[tuple[int, bytes]]``,
    # every event kept for a stream, oldest first. With it, a worker finishes the streams of
    # a writer that is gone (an error for each request left unanswered: docs/stores.rst);
    # without it, their clients are told only that the stream ended.


#: What a subscriber is called with: (topic, message).
Deliver = Callable[[str, bytes], None]


class EventBus(Protocol):
    """Publish on one worker, delivered on every worker subscribed to the topic (the
    publisher's own subscribers included, so one code path serves one worker and many)."""

    async def publish(self, topic: str, message: bytes) -> None:
        """Deliver ``message`` to every subscriber of ``topic``, on every worker."""

    async def subscribe(self, topic: str, deliver: Deliver) -> Callable[[], Awaitable[None]]:
        """Call ``deliver(topic, message)`` for each message published on ``topic`` from
        now on (in publication order per publisher); returns the coroutine function that
        unsubscribes. ``deliver`` runs on the subscriber's loop and must not block."""


class TaskTable(Protocol):
    """Task id -> the record of a task (JSON-able, see
    :meth:`mcp_sansio.app.tasks.Task.record`), until a wall-clock deadline; listed by owner."""

    async def put(self, task_id: str, record: Mapping[str, Any], *, owner: str | None,
                  expires_at: float, wall_time: float) -> None:
        """Keep ``record`` until ``expires_at`` (wall clock), replacing what was there;
        ``owner`` (None: nobody lists it) files it for :meth:`owned`."""

    async def get(self, task_id: str, *, wall_time: float) -> dict[str, Any] | None:
        """The record, or None if unknown or past its deadline at ``wall_time``."""

    async def owned(self, owner: str, *, wall_time: float) -> list[dict[str, Any]]:
        """The live records filed under ``owner``, in the order they were first put."""


class KeyStore(Protocol):
    """Where a key ring's keys live: newest first, at most a few."""

    async def get_keys(self) -> list[bytes]:
        """Every kept key, newest first (empty if none was ever added)."""

    async def add_key(self, key: bytes) -> None:
        """Make ``key`` the newest; the oldest beyond the store's bound is dropped."""

    async def ensure_key(self, key: bytes) -> list[bytes]:
        """Every kept key, newest first, after adding ``key`` *if the store had none* -- in
        one atomic step, so that of several workers starting at once on an empty store one
        key wins and every worker gets that one."""


# -- in-memory defaults -------------------------------------------------------------------------


class MemorySessionTable:
    """A :class:`SessionTable` in a dict (one process). Deadlines are judged when read:
    an expired record is dropped by the :meth:`get` that finds it."""

    def __init__(self) -> None:
        self._records: dict[str, tuple[dict[str, Any], float]] = {}

    def __len__(self) -> int:
        return len(self._records)

    async def put(self, session_id: str, record: Mapping[str, Any], *,
                  expires_at: float, wall_time: float) -> None:
        self._records[session_id] = (dict(record), expires_at)

    async def get(self, session_id: str, *, wall_time: float) -> dict[str, Any] | None:
        found = self._records.get(session_id)
        if found is None:
            return None
        if found[1] <= wall_time:
            del self._records[session_id]
            return None
        return dict(found[0])

    async def touch(self, session_id: str, *, expires_at: float, wall_time: float) -> bool:
        if await self.get(session_id, wall_time=wall_time) is None:
            return False
        self._records[session_id] = (self._records[session_id][0], expires_at)
        return True

    async def delete(self, session_id: str) -> bool:
        return self._records.pop(session_id, None) is not None


class MemoryTaskTable:
    """A :class:`TaskTable` in a dict (one process); deadlines are judged when read."""

    def __init__(self) -> None:
        self._records: dict[str, tuple[dict[str, Any], str | None, float]] = {}

    def __len__(self) -> int:
        return len(self._records)

    async def put(self, task_id: str, record: Mapping[str, Any], *, owner: str | None,
                  expires_at: float, wall_time: float) -> None:
        # A copy: the caller's dict is its own (a JSON round trip in Redis does the same).
        self._records[task_id] = (dict(record), owner, expires_at)

    async def get(self, task_id: str, *, wall_time: float) -> dict[str, Any] | None:
        kept = self._records.get(task_id)
        if kept is None:
            return None
        if kept[2] <= wall_time:
            del self._records[task_id]
            return None
        return dict(kept[0])

    async def owned(self, owner: str, *, wall_time: float) -> list[dict[str, Any]]:
        for task_id in [k for k, (_, _, e) in self._records.items() if e <= wall_time]:
            del self._records[task_id]
        return [dict(r) for r, o, _ in self._records.values() if o == owner]


class MemoryEventLog:
    """An :class:`EventLog` in memory (one process).

    :param max_events_per_stream: events kept per stream (the oldest go first).
    :param ttl: seconds an event stays resumable (judged at ``wall_time``).
    :param max_streams: streams kept (the least recently written goes first).
    """

    def __init__(self, *, max_events_per_stream: int = DEFAULT_MAX_EVENTS_PER_STREAM,
                 ttl: float = DEFAULT_EVENT_TTL, max_streams: int = DEFAULT_MAX_STREAMS) -> None:
        if max_events_per_stream < 1 or max_streams < 1 or ttl <= 0:
            raise ValueError("bounds and ttl must be positive")
        self.max_events_per_stream = max_events_per_stream
        self.ttl = ttl
        self.max_streams = max_streams
        # stream id -> events (sequence, data, stored at); most recently written last
        self._streams: OrderedDict[str, deque[tuple[int, bytes, float]]] = OrderedDict()

    async def append(self, event_id: str, data: bytes, *, wall_time: float) -> None:
        parsed = parse_event_id(event_id)
        if parsed is None:
            raise ValueError(f"not a server event id: {event_id!r}")
        stream_id, seq = parsed
        events = self._streams.pop(stream_id, None)
        if events is None:
            events = deque(maxlen=self.max_events_per_stream)
        self._streams[stream_id] = events
        events.append((seq, data, wall_time))
        while len(self._streams) > self.max_streams:
            self._streams.popitem(last=False)

    async def replay(self, last_event_id: str, *, wall_time: float
                     ) -> tuple[str, list[tuple[str, bytes]]] | None:
        parsed = parse_event_id(last_event_id)
        if parsed is None:
            return None
        stream_id, seq = parsed
        events = self._streams.get(stream_id)
        if events is None:
            return None
        horizon = wall_time - self.ttl
        while events and events[0][2] <= horizon:
            events.popleft()
        if not events:
            del self._streams[stream_id]
            return None
        return events_after(stream_id, seq, [(s, d) for s, d, _ in events])

    async def kept(self, stream_id: str, *, wall_time: float) -> list[tuple[int, bytes]]:
        """Every event kept for ``stream_id`` (sequence, data), oldest first (what a worker
        reads to finish the stream of a writer that is gone: mcp_sansio/http/_stranded.py)."""
        horizon = wall_time - self.ttl
        return [(s, d) for s, d, at in self._streams.get(stream_id, ()) if at > horizon]

    async def forget(self, stream_id: str) -> None:
        self._streams.pop(stream_id, None)


def events_after(stream_id: str, seq: int, kept: list[tuple[int, bytes]]
           ) -> tuple[str, list[tuple[str, bytes]]] | None:
    """The replay rule both implementations share: ``seq`` must be an event that was stored
    (not past the newest), and nothing between it and the oldest kept may be lost."""
    if not kept or seq > kept[-1][0] or kept[0][0] > seq + 1:
        return None
    return stream_id, [(f"{stream_id}:{s}", d) for s, d in kept if s > seq]


class MemoryEventBus:
    """An :class:`EventBus` for one process: :meth:`publish` calls every subscriber of the
    topic at once, in subscription order. A subscriber that raises does not stop the
    others; the first exception is raised from :meth:`publish` once all were called."""

    def __init__(self) -> None:
        self._subscribers: dict[str, dict[int, Deliver]] = {}
        self._next = 0

    async def publish(self, topic: str, message: bytes) -> None:
        error: BaseException | None = None
        for deliver in list(self._subscribers.get(topic, {}).values()):
            try:
                deliver(topic, message)
            except Exception as exc:
                error = error or exc
        if error is not None:
            raise error

    async def subscribe(self, topic: str, deliver: Deliver) -> Callable[[], Awaitable[None]]:
        token = self._next
        self._next += 1
        self._subscribers.setdefault(topic, {})[token] = deliver

        async def unsubscribe() -> None:
            subscribers = self._subscribers.get(topic, {})
            subscribers.pop(token, None)
            if not subscribers:
                self._subscribers.pop(topic, None)

        return unsubscribe


class MemoryKeyStore:
    """A :class:`KeyStore` in a list (one process).

    :param max_keys: keys kept; adding beyond it drops the oldest.
    """

    def __init__(self, *, max_keys: int = DEFAULT_MAX_KEYS) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be positive")
        self.max_keys = max_keys
        self._keys: list[bytes] = []

    async def get_keys(self) -> list[bytes]:
        return list(self._keys)

    async def add_key(self, key: bytes) -> None:
        if not key:
            raise ValueError("a sealing key must not be empty")
        self._keys = [key, *(k for k in self._keys if k != key)][: self.max_keys]

    async def ensure_key(self, key: bytes) -> list[bytes]:
        if not key:
            raise ValueError("a sealing key must not be empty")
        if not self._keys:  # no await between the test and the write: atomic on one loop
            self._keys = [key]
        return list(self._keys)


class MemoryStores:
    """The in-memory stores together: what ``start_http(stores=...)`` takes for one
    worker (tests, or one process that wants the shared code path); several workers use
    :class:`mcp_sansio.adapters.redis.RedisStores` instead."""

    def __init__(self, *, max_events_per_stream: int = DEFAULT_MAX_EVENTS_PER_STREAM,
                 event_ttl: float = DEFAULT_EVENT_TTL, max_keys: int = DEFAULT_MAX_KEYS) -> None:
        self.sessions = MemorySessionTable()
        self.events = MemoryEventLog(max_events_per_stream=max_events_per_stream,
                                     ttl=event_ttl)
        self.bus = MemoryEventBus()
        self.keys = MemoryKeyStore(max_keys=max_keys)
        self.tasks = MemoryTaskTable()

    async def aclose(self) -> None:
        """Nothing to release (the same shape as the Redis stores)."""
