"""The shared stores of :mod:`mcp_sansio.stores` in Redis (the ``redis`` extra).

Theory of operation
-------------------
Every worker of a service points at the same Redis (``redis://HOST:PORT/DB`` or
``unix:///path``) and builds :class:`RedisStores` from it: a session table, an event log, an
event bus and a key store, all on one redis-py asyncio client (a trio or threads server
uses them from its store thread: ``stores/home.py``) and all under one key prefix, so
that several services can share a database. Each implementation keeps the in-memory one's
behaviour -- the same contract tests run against both -- and lets Redis do the forgetting:

* a session record is a string key with the session's idle deadline as its expiry
  (``SET ... PX``), written relative to the caller's ``wall_time`` so that a skew between
  the worker's clock and Redis's does not shorten or stretch it; the record also carries
  its absolute deadline, which a reader judges at its own ``wall_time``;
* a stream's events are one list (``RPUSH``, trimmed to the per-stream bound with
  ``LTRIM``, expiring ``ttl`` seconds after its last write); each entry holds the event's
  sequence number and wall time before its data, so a replay can judge gaps and age;
* the bus is Redis publish/subscribe: one subscription connection per :class:`RedisEventBus`,
  read by one task that calls the subscribers; :meth:`RedisEventBus.subscribe` returns only
  once Redis confirmed the subscription, so nothing published afterwards is missed;
* the key ring is one list, newest first, trimmed to ``max_keys``;
* a task record is a string key expiring at its wall-clock deadline (like a session
  record); its owner's index is a sorted set of task ids scored by first write, whose own
  expiry is pushed out to the latest record's (``PEXPIRE ... GT``, Redis 7); a listing
  drops the ids whose records Redis has already forgotten.

A store that cannot reach Redis raises redis-py's ``ConnectionError`` from the awaited call:
the caller (the adapter driving the store) decides what the client is told.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import struct
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from mcp_sansio.stores import (
    DEFAULT_EVENT_TTL,
    DEFAULT_MAX_EVENTS_PER_STREAM,
    DEFAULT_MAX_KEYS,
    Deliver,
    events_after,
    parse_event_id,
)

try:
    import redis.asyncio as aioredis
except ImportError as exc:  # pragma: no cover - exercised by the CLI's message test
    raise ImportError(
        "the Redis stores need redis-py: pip install 'mcp-sansio[redis]'") from exc

__all__ = [
    "store_unreachable",
    "DEFAULT_PREFIX",
    "RedisEventBus",
    "RedisEventLog",
    "RedisKeyStore",
    "RedisSessionTable",
    "RedisStores",
    "RedisTaskTable",
]

log = logging.getLogger(__name__)

#: Every key and channel name starts with this, so that one Redis database can hold other
#: data (or several services, each with a prefix of its own).
DEFAULT_PREFIX = "mcp:"
#: An event entry: its sequence number and wall time (big-endian), then its data.
_ENTRY = struct.Struct(">qd")


class RedisSessionTable:
    """A :class:`~mcp_sansio.stores.SessionTable` in Redis: one string key per session."""

    def __init__(self, client: aioredis.Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._client = client
        self._prefix = f"{prefix}session:"

    async def put(self, session_id: str, record: Mapping[str, Any], *,
                  expires_at: float, wall_time: float) -> None:
        value = json.dumps({"r": dict(record), "e": expires_at}, separators=(",", ":"))
        await self._client.set(self._prefix + session_id, value,
                               px=_milliseconds(expires_at - wall_time))

    async def get(self, session_id: str, *, wall_time: float) -> dict[str, Any] | None:
        return _live(await self._client.get(self._prefix + session_id), wall_time)

    async def touch(self, session_id: str, *, expires_at: float, wall_time: float) -> bool:
        record = await self.get(session_id, wall_time=wall_time)
        if record is None:
            return False
        value = json.dumps({"r": record, "e": expires_at}, separators=(",", ":"))
        # XX: only if it is still there (a DELETE on another worker wins).
        done = await self._client.set(self._prefix + session_id, value,
                                      px=_milliseconds(expires_at - wall_time), xx=True)
        return bool(done)

    async def delete(self, session_id: str) -> bool:
        return bool(await self._client.delete(self._prefix + session_id))


class RedisEventLog:
    """An :class:`~mcp_sansio.stores.EventLog` in Redis: one list per stream.

    :param max_events_per_stream: events kept per stream (``LTRIM``).
    :param ttl: seconds an event stays resumable; the list expires ``ttl`` after its last
        write, and older entries in it are not replayed.
    """

    def __init__(self, client: aioredis.Redis, *, prefix: str = DEFAULT_PREFIX,
                 max_events_per_stream: int = DEFAULT_MAX_EVENTS_PER_STREAM,
                 ttl: float = DEFAULT_EVENT_TTL) -> None:
        if max_events_per_stream < 1 or ttl <= 0:
            raise ValueError("bounds and ttl must be positive")
        self._client = client
        self._prefix = f"{prefix}events:"
        self.max_events_per_stream = max_events_per_stream
        self.ttl = ttl

    async def append(self, event_id: str, data: bytes, *, wall_time: float) -> None:
        parsed = parse_event_id(event_id)
        if parsed is None:
            raise ValueError(f"not a server event id: {event_id!r}")
        stream_id, seq = parsed
        key = self._prefix + stream_id
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.rpush(key, _ENTRY.pack(seq, wall_time) + data)
            pipe.ltrim(key, -self.max_events_per_stream, -1)
            pipe.pexpire(key, _milliseconds(self.ttl))
            await pipe.execute()

    async def replay(self, last_event_id: str, *, wall_time: float
                     ) -> tuple[str, list[tuple[str, bytes]]] | None:
        parsed = parse_event_id(last_event_id)
        if parsed is None:
            return None
        stream_id, seq = parsed
        return events_after(stream_id, seq, await self.kept(stream_id, wall_time=wall_time))

    async def kept(self, stream_id: str, *, wall_time: float) -> list[tuple[int, bytes]]:
        """Every event kept for ``stream_id`` (sequence, data), oldest first."""
        entries = await self._client.lrange(self._prefix + stream_id, 0, -1)
        horizon = wall_time - self.ttl
        kept = []
        for entry in entries:
            raw = cast(bytes, entry)  # the client does not decode responses
            number, stored_at = _ENTRY.unpack_from(raw)
            if stored_at > horizon:
                kept.append((number, raw[_ENTRY.size:]))
        return kept

    async def forget(self, stream_id: str) -> None:
        await self._client.delete(self._prefix + stream_id)


#: Seconds between two attempts to subscribe again after the bus's connection broke.
_RESUBSCRIBE_DELAY = 0.5
#: Seconds to connect to Redis before the attempt fails (a host that drops packets would
#: otherwise hold a store call for the kernel's whole connect timeout).
DEFAULT_CONNECT_TIMEOUT = 5.0


def store_unreachable(url: str, *, timeout: float = DEFAULT_CONNECT_TIMEOUT) -> str | None:
    """Why the Redis at ``url`` cannot be used now (one line), or None: a ``PING`` on a
    connection of its own, bounded by ``timeout`` (what a server checks before it starts)."""
    async def ping() -> None:
        client = aioredis.Redis.from_url(url, socket_connect_timeout=timeout,
                                         socket_timeout=timeout)
        try:
            async with asyncio.timeout(timeout):
                await client.ping()
        finally:
            await client.aclose()

    try:
        asyncio.run(ping())
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except Exception as exc:
        return str(exc) or type(exc).__name__
    return None


class RedisEventBus:
    """An :class:`~mcp_sansio.stores.EventBus` on Redis publish/subscribe.

    Subscribers are called from one reader task on the loop that first subscribed; a
    subscriber that raises is logged and the others still get the message. Call
    :meth:`aclose` when done (it ends the reader and the subscription connection).
    """

    def __init__(self, client: aioredis.Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._client = client
        self._prefix = f"{prefix}bus:"
        self._pubsub: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._subscribers: dict[str, dict[int, Deliver]] = {}
        self._confirmed: dict[str, asyncio.Event] = {}
        self._next = 0

    async def publish(self, topic: str, message: bytes) -> None:
        await self._client.publish(self._prefix + topic, message)

    async def subscribe(self, topic: str, deliver: Deliver) -> Callable[[], Awaitable[None]]:
        if self._pubsub is None:
            self._pubsub = self._client.pubsub()
        token = self._next
        self._next += 1
        subscribers = self._subscribers.setdefault(topic, {})
        subscribers[token] = deliver
        if topic not in self._confirmed:
            self._confirmed[topic] = asyncio.Event()
            await self._pubsub.subscribe(self._prefix + topic)
            if self._reader is None:
                self._reader = asyncio.get_running_loop().create_task(self._read())
        await self._confirmed[topic].wait()

        async def unsubscribe() -> None:
            topic_subscribers = self._subscribers.get(topic, {})
            topic_subscribers.pop(token, None)
            if not topic_subscribers and topic in self._confirmed:
                self._subscribers.pop(topic, None)
                del self._confirmed[topic]
                await self._pubsub.unsubscribe(self._prefix + topic)

        return unsubscribe

    async def _read(self) -> None:
        """Deliver what comes, for as long as the bus is used: a connection that breaks (a
        Redis restarted, or down for a while) is opened again and every topic subscribed
        again, so the workers hear each other again once Redis is back."""
        while True:
            try:
                await self._read_until_broken()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("the event bus's connection broke (%s); subscribing again",
                            str(exc) or type(exc).__name__)
            await asyncio.sleep(_RESUBSCRIBE_DELAY)
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
            self._pubsub = self._client.pubsub()
            try:
                for topic in list(self._confirmed):
                    await self._pubsub.subscribe(self._prefix + topic)
            except Exception:  # still down: the next round tries again
                continue

    async def _read_until_broken(self) -> None:
        skip = len(self._prefix)
        async for message in self._pubsub.listen():
            channel = message["channel"]
            topic = (channel.decode() if isinstance(channel, bytes) else channel)[skip:]
            if message["type"] == "subscribe":
                confirmed = self._confirmed.get(topic)
                if confirmed is not None:
                    confirmed.set()
                continue
            if message["type"] != "message":
                continue
            for deliver in list(self._subscribers.get(topic, {}).values()):
                try:
                    deliver(topic, message["data"])
                except Exception:
                    log.exception("an event bus subscriber of %r failed", topic)

    async def aclose(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            await pubsub.aclose()
        self._subscribers.clear()
        self._confirmed.clear()


class RedisTaskTable:
    """A :class:`~mcp_sansio.stores.TaskTable` in Redis: a string key per task, a sorted set
    per owner."""

    def __init__(self, client: aioredis.Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._client = client
        self._prefix = f"{prefix}task:"
        self._owners = f"{prefix}tasks-of:"

    async def put(self, task_id: str, record: Mapping[str, Any], *, owner: str | None,
                  expires_at: float, wall_time: float) -> None:
        value = json.dumps({"r": dict(record), "e": expires_at}, separators=(",", ":"))
        px = _milliseconds(expires_at - wall_time)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.set(self._prefix + task_id, value, px=px)
            if owner is not None:
                index = self._owners + owner
                # NX: the first write's score stands, so a listing is in creation order.
                pipe.zadd(index, {task_id: wall_time}, nx=True)
                pipe.pexpire(index, px, gt=True)
                pipe.pexpire(index, px, nx=True)  # GT never sets a first expiry
            await pipe.execute()

    async def get(self, task_id: str, *, wall_time: float) -> dict[str, Any] | None:
        return _live(await self._client.get(self._prefix + task_id), wall_time)

    async def owned(self, owner: str, *, wall_time: float) -> list[dict[str, Any]]:
        index = self._owners + owner
        ids = [i.decode() if isinstance(i, bytes) else str(i)
               for i in await self._client.zrange(index, 0, -1)]
        if not ids:
            return []
        raws = await self._client.mget([self._prefix + i for i in ids])
        records: list[dict[str, Any]] = []
        gone: list[str] = []
        for task_id, raw in zip(ids, raws, strict=True):
            record = _live(raw, wall_time)
            if record is None:
                gone.append(task_id)
            else:
                records.append(record)
        if gone:
            await self._client.zrem(index, *gone)
        return records


#: Adds ARGV[1] to the key list KEYS[1] when it is empty; answers the whole list.
_ENSURE_KEY = """
if redis.call('LLEN', KEYS[1]) == 0 then redis.call('LPUSH', KEYS[1], ARGV[1]) end
return redis.call('LRANGE', KEYS[1], 0, -1)
"""


class RedisKeyStore:
    """A :class:`~mcp_sansio.stores.KeyStore` in Redis: one list, newest first.

    :param max_keys: keys kept; adding beyond it drops the oldest.
    """

    def __init__(self, client: aioredis.Redis, *, prefix: str = DEFAULT_PREFIX,
                 max_keys: int = DEFAULT_MAX_KEYS) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be positive")
        self._client = client
        self._key = f"{prefix}keys"
        self.max_keys = max_keys

    async def get_keys(self) -> list[bytes]:
        return [cast(bytes, k) for k in await self._client.lrange(self._key, 0, -1)]

    async def add_key(self, key: bytes) -> None:
        if not key:
            raise ValueError("a sealing key must not be empty")
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.lrem(self._key, 0, cast(Any, key))  # bytes, which the stubs do not list
            pipe.lpush(self._key, key)
            pipe.ltrim(self._key, 0, self.max_keys - 1)
            await pipe.execute()

    async def ensure_key(self, key: bytes) -> list[bytes]:
        if not key:
            raise ValueError("a sealing key must not be empty")
        # One script: Redis runs it atomically, so between two workers starting at once on
        # an empty store the second sees the first's key (an LLEN then an LPUSH from the
        # client would let both write).
        keys = await self._client.eval(_ENSURE_KEY, 1, self._key, cast(Any, key))
        return [cast(bytes, k) for k in keys]


class RedisStores:
    """The stores on one Redis client. Build with :meth:`from_url`; :meth:`aclose`
    when the server stops."""

    def __init__(self, client: aioredis.Redis, *, prefix: str = DEFAULT_PREFIX,
                 max_events_per_stream: int = DEFAULT_MAX_EVENTS_PER_STREAM,
                 event_ttl: float = DEFAULT_EVENT_TTL, max_keys: int = DEFAULT_MAX_KEYS,
                 ) -> None:
        self.client = client
        self.sessions = RedisSessionTable(client, prefix=prefix)
        self.events = RedisEventLog(client, prefix=prefix,
                                    max_events_per_stream=max_events_per_stream, ttl=event_ttl)
        self.bus = RedisEventBus(client, prefix=prefix)
        self.keys = RedisKeyStore(client, prefix=prefix, max_keys=max_keys)
        self.tasks = RedisTaskTable(client, prefix=prefix)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisStores:
        """Stores on the Redis at ``url`` (``redis://HOST:PORT/DB``, ``rediss://`` for TLS,
        ``unix:///path/to/socket``); ``options`` as for the constructor."""
        return cls(aioredis.Redis.from_url(
            url, socket_connect_timeout=DEFAULT_CONNECT_TIMEOUT), **options)

    async def aclose(self) -> None:
        await self.bus.aclose()
        await self.client.aclose()


def _live(raw: bytes | str | None, wall_time: float) -> dict[str, Any] | None:
    """A stored record (JSON ``{"r": record, "e": expires_at}``), or None when there is none
    or it expired by ``wall_time`` (Redis drops it a little later)."""
    if raw is None:
        return None
    stored = json.loads(raw)
    if stored["e"] <= wall_time:
        return None
    record: dict[str, Any] = stored["r"]
    return record


def _milliseconds(seconds: float) -> int:
    """A Redis expiry: at least 1 ms (0 or less is refused by Redis, and means "gone")."""
    return max(1, int(seconds * 1000))
