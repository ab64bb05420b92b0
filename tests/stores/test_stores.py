"""The shared stores (mcp_sansio.stores): one contract, run against the in-memory defaults
and the Redis implementations (a real redis-server, tests/_redis.py), plus the event bus
across two clients and hypothesis's random histories of the event log on both."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio.stores import (
    MemoryEventBus,
    MemoryEventLog,
    MemoryKeyStore,
    MemorySessionTable,
    parse_event_id,
)
from tests._redis import RedisServer, redis_server  # noqa: F401  (the fixture)

_prefixes = itertools.count()
#: A wall clock for the tests: now, so that Redis's own expiry (on its clock) agrees.
NOW = time.time()


class Kit:
    """The four stores of one implementation."""

    def __init__(self, sessions: Any, events: Any, bus: Any, keys: Any) -> None:
        self.sessions = sessions
        self.events = events
        self.bus = bus
        self.keys = keys


Opener = Callable[..., Any]


@pytest.fixture(params=["memory", "redis"])
def open_kit(request: pytest.FixtureRequest) -> Opener:
    """An async context manager factory: ``async with open_kit(**options) as kit``."""
    if request.param == "memory":
        @asynccontextmanager
        async def memory(**options: Any) -> AsyncIterator[Kit]:
            yield Kit(MemorySessionTable(), MemoryEventLog(**_log_options(options)),
                      MemoryEventBus(), MemoryKeyStore(**_key_options(options)))
        return memory
    server: RedisServer = request.getfixturevalue("redis_server")
    from mcp_sansio.adapters.redis import RedisStores

    @asynccontextmanager
    async def redis(**options: Any) -> AsyncIterator[Kit]:
        opts = _log_options(options)
        stores = RedisStores.from_url(
            server.url, prefix=f"t{next(_prefixes)}:",
            max_events_per_stream=opts.get("max_events_per_stream", 1000),
            event_ttl=opts.get("ttl", 300.0), **_key_options(options))
        try:
            yield Kit(stores.sessions, stores.events, stores.bus, stores.keys)
        finally:
            await stores.aclose()
    return redis


def _log_options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k in ("max_events_per_stream", "ttl")}


def _key_options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k == "max_keys"}


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 60))  # type: ignore[arg-type]


# -- session table ------------------------------------------------------------------------------


def test_session_table_keeps_a_record_until_its_deadline(open_kit: Opener) -> None:
    async def main() -> None:
        async with open_kit() as kit:
            table = kit.sessions
            record = {"v": "2025-11-25", "caps": {"roots": {}}, "n": [1, 2]}
            assert await table.get("s1", wall_time=NOW) is None
            await table.put("s1", record, expires_at=NOW + 60, wall_time=NOW)
            assert await table.get("s1", wall_time=NOW + 1) == record
            # judged at the reader's wall clock: past the deadline it is gone
            assert await table.get("s1", wall_time=NOW + 61) is None
    run(main())


def test_session_table_touch_and_delete(open_kit: Opener) -> None:
    async def main() -> None:
        async with open_kit() as kit:
            table = kit.sessions
            await table.put("s2", {"a": 1}, expires_at=NOW + 10, wall_time=NOW)
            assert await table.touch("s2", expires_at=NOW + 100, wall_time=NOW + 5)
            assert await table.get("s2", wall_time=NOW + 50) == {"a": 1}
            assert await table.delete("s2")
            assert not await table.delete("s2")
            assert await table.get("s2", wall_time=NOW) is None
            assert not await table.touch("s2", expires_at=NOW + 100, wall_time=NOW)
            # a record the store itself dropped at its deadline is gone for touch too
            await table.put("s3", {}, expires_at=NOW + 10, wall_time=NOW)
            assert not await table.touch("s3", expires_at=NOW + 100, wall_time=NOW + 11)
    run(main())


def test_session_table_record_survives_as_json(open_kit: Opener) -> None:
    async def main() -> None:
        async with open_kit() as kit:
            record = {"nested": {"list": [None, True, 1.5, "é"]}}
            await kit.sessions.put("s", record, expires_at=NOW + 5, wall_time=NOW)
            got = await kit.sessions.get("s", wall_time=NOW)
            assert got == record
            got["nested"]["list"].append(0)  # the caller's copy, not the store's
            assert await kit.sessions.get("s", wall_time=NOW) == record
    run(main())


# -- event log ----------------------------------------------------------------------------------


def test_event_log_replays_what_follows_an_id(open_kit: Opener) -> None:
    async def main() -> None:
        async with open_kit() as kit:
            log = kit.events
            for seq, data in enumerate([b"", b"a", b"b", b"c"]):
                await log.append(f"abc-1:{seq}", data, wall_time=NOW)
            await log.append("abc-2:0", b"other", wall_time=NOW)
            assert await log.replay("abc-1:0", wall_time=NOW) == (
                "abc-1", [("abc-1:1", b"a"), ("abc-1:2", b"b"), ("abc-1:3", b"c")])
            assert await log.replay("abc-1:3", wall_time=NOW) == ("abc-1", [])
            assert await log.replay("abc-2:0", wall_time=NOW) == ("abc-2", [])
            # unknown stream, an id past the newest, garbage: unknown
            for bad in ("abc-9:0", "abc-1:4", "abc-1", "abc-1:x", ":1", "abc-1:-1", ""):
                assert await log.replay(bad, wall_time=NOW) is None, bad
            await log.forget("abc-1")
            assert await log.replay("abc-1:0", wall_time=NOW) is None
            assert await log.replay("abc-2:0", wall_time=NOW) == ("abc-2", [])
    run(main())


def test_event_log_is_bounded_per_stream_and_refuses_a_gap(open_kit: Opener) -> None:
    async def main() -> None:
        async with open_kit(max_events_per_stream=3) as kit:
            log = kit.events
            for seq in range(6):
                await log.append(f"s-1:{seq}", b"%d" % seq, wall_time=NOW)
            # kept: 3, 4, 5. After 2 nothing is lost; after 1, event 2 is.
            assert await log.replay("s-1:2", wall_time=NOW) == (
                "s-1", [("s-1:3", b"3"), ("s-1:4", b"4"), ("s-1:5", b"5")])
            assert await log.replay("s-1:1", wall_time=NOW) is None
    run(main())


def test_event_log_forgets_events_past_their_ttl(open_kit: Opener) -> None:
    async def main() -> None:
        async with open_kit(ttl=60.0) as kit:
            log = kit.events
            await log.append("t-1:0", b"", wall_time=NOW)
            await log.append("t-1:1", b"old", wall_time=NOW + 10)
            await log.append("t-1:2", b"new", wall_time=NOW + 50)
            assert await log.replay("t-1:0", wall_time=NOW + 55) == (
                "t-1", [("t-1:1", b"old"), ("t-1:2", b"new")])
            # at NOW+65 events 0 is past its TTL: resuming after it still works (1, 2 kept)
            assert await log.replay("t-1:0", wall_time=NOW + 65) == (
                "t-1", [("t-1:1", b"old"), ("t-1:2", b"new")])
            # at NOW+75 event 1 is gone too: after 0 there is a gap
            assert await log.replay("t-1:0", wall_time=NOW + 75) is None
            assert await log.replay("t-1:1", wall_time=NOW + 75) == ("t-1", [("t-1:2", b"new")])
            assert await log.replay("t-1:2", wall_time=NOW + 200) is None
    run(main())


def test_event_log_refuses_an_id_it_did_not_make(open_kit: Opener) -> None:
    async def main() -> None:
        async with open_kit() as kit:
            with pytest.raises(ValueError):
                await kit.events.append("no-sequence", b"x", wall_time=NOW)
    run(main())


# -- key store ----------------------------------------------------------------------------------


def test_ensure_key_adds_only_to_an_empty_store_and_one_of_a_race_wins(
        open_kit: Opener) -> None:
    """issue 18: workers starting at once on an empty store all end with the same key."""
    async def main() -> None:
        async with open_kit() as kit:
            first = [b"a" * 32, b"b" * 32, b"c" * 32, b"d" * 32]
            answers = await asyncio.gather(*(kit.keys.ensure_key(k) for k in first))
            assert len(answers[0]) == 1 and answers[0][0] in first
            assert all(answer == answers[0] for answer in answers)
            assert await kit.keys.get_keys() == answers[0]
            await kit.keys.add_key(b"e" * 32)
            assert await kit.keys.ensure_key(b"f" * 32) == [b"e" * 32, answers[0][0]]
            with pytest.raises(ValueError):
                await kit.keys.ensure_key(b"")
    asyncio.run(main())


def test_key_store_newest_first_bounded(open_kit: Opener) -> None:
    async def main() -> None:
        async with open_kit(max_keys=3) as kit:
            keys = kit.keys
            assert await keys.get_keys() == []
            for key in (b"k1", b"k2", b"k3", b"k4"):
                await keys.add_key(key)
            assert await keys.get_keys() == [b"k4", b"k3", b"k2"]
            await keys.add_key(b"k2")  # adding a kept key makes it the newest, once
            assert await keys.get_keys() == [b"k2", b"k4", b"k3"]
            with pytest.raises(ValueError):
                await keys.add_key(b"")
    run(main())


# -- event bus ----------------------------------------------------------------------------------


def test_bus_delivers_to_every_subscriber_of_the_topic(open_kit: Opener) -> None:
    async def main() -> None:
        async with open_kit() as kit:
            got: list[tuple[str, str, bytes]] = []
            arrived = asyncio.Event()

            def on(name: str) -> Callable[[str, bytes], None]:
                def deliver(topic: str, message: bytes) -> None:
                    got.append((name, topic, message))
                    if len(got) >= 4:
                        arrived.set()
                return deliver

            stop_a = await kit.bus.subscribe("broadcast", on("a"))
            await kit.bus.subscribe("broadcast", on("b"))
            await kit.bus.subscribe("tasks", on("c"))
            await kit.bus.publish("broadcast", b"1")
            await kit.bus.publish("tasks", b"2")
            await kit.bus.publish("answers", b"nobody")
            await stop_a()
            await kit.bus.publish("broadcast", b"3")
            await asyncio.wait_for(arrived.wait(), 30)
            await asyncio.sleep(0.05)  # nothing more arrives
            assert sorted(got) == [("a", "broadcast", b"1"), ("b", "broadcast", b"1"),
                                   ("b", "broadcast", b"3"), ("c", "tasks", b"2")]
    run(main())


def test_redis_bus_crosses_clients(redis_server: RedisServer) -> None:  # noqa: F811
    """Publish on one worker's client, delivered on another's (and on the publisher's)."""
    from mcp_sansio.adapters.redis import RedisStores

    async def main() -> None:
        prefix = f"x{next(_prefixes)}:"
        one = RedisStores.from_url(redis_server.url, prefix=prefix)
        two = RedisStores.from_url(redis_server.url, prefix=prefix)
        try:
            got: dict[str, list[bytes]] = {"one": [], "two": []}
            done = asyncio.Event()

            def on(name: str) -> Callable[[str, bytes], None]:
                def deliver(topic: str, message: bytes) -> None:
                    got[name].append(message)
                    if all(len(v) == 3 for v in got.values()):
                        done.set()
                return deliver

            await one.bus.subscribe("broadcast", on("one"))
            await two.bus.subscribe("broadcast", on("two"))
            for n in range(3):
                await (one if n % 2 else two).bus.publish("broadcast", b"m%d" % n)
            await asyncio.wait_for(done.wait(), 30)
            # in publication order, on both
            assert got == {"one": [b"m0", b"m1", b"m2"], "two": [b"m0", b"m1", b"m2"]}
        finally:
            await one.aclose()
            await two.aclose()
    run(main())


def test_memory_bus_subscriber_error_does_not_stop_the_others() -> None:
    async def main() -> None:
        bus = MemoryEventBus()
        got: list[bytes] = []

        def broken(topic: str, message: bytes) -> None:
            raise RuntimeError("subscriber bug")

        await bus.subscribe("t", broken)
        await bus.subscribe("t", lambda topic, message: got.append(message))
        with pytest.raises(RuntimeError):
            await bus.publish("t", b"x")
        assert got == [b"x"]
    run(main())


# -- random histories ---------------------------------------------------------------------------

_ops = st.lists(st.one_of(
    st.tuples(st.just("append"), st.sampled_from(["a-1", "a-2"]), st.binary(max_size=8),
              st.floats(0, 30)),
    st.tuples(st.just("replay"), st.sampled_from(["a-1", "a-2", "zz"]), st.integers(-1, 12),
              st.floats(0, 30)),
    st.tuples(st.just("forget"), st.sampled_from(["a-1", "a-2"]), st.none(), st.none()),
), max_size=25)


def _model(ops: list[tuple[Any, ...]], bound: int, ttl: float) -> list[Any]:
    """What a bounded, expiring log must answer, written the obvious way."""
    streams: dict[str, list[tuple[int, bytes, float]]] = {}
    clock = 0.0
    answers: list[Any] = []
    for op, stream, arg, step in ops:
        if op == "forget":
            streams.pop(stream, None)
            continue
        clock += step
        if op == "append":
            events = streams.setdefault(stream, [])
            seq = events[-1][0] + 1 if events else 0
            events.append((seq, arg, clock))
            del events[:-bound]
            answers.append(f"{stream}:{seq}")
        else:
            kept = [(s, d) for s, d, t in streams.get(stream, []) if t > clock - ttl]
            if not kept or arg < 0 or arg > kept[-1][0] or kept[0][0] > arg + 1:
                answers.append(None)
            else:
                answers.append((stream, [(f"{stream}:{s}", d) for s, d in kept if s > arg]))
    return answers


async def _play(log: Any, ops: list[tuple[Any, ...]]) -> list[Any]:
    next_seq: dict[str, int] = {}
    clock = 0.0
    answers: list[Any] = []
    for op, stream, arg, step in ops:
        if op == "forget":
            await log.forget(stream)
            next_seq.pop(stream, None)
            continue
        clock += step
        if op == "append":
            seq = next_seq.get(stream, 0)
            next_seq[stream] = seq + 1
            await log.append(f"{stream}:{seq}", arg, wall_time=NOW + clock)
            answers.append(f"{stream}:{seq}")
        else:
            answers.append(await log.replay(f"{stream}:{arg}", wall_time=NOW + clock))
    return answers


@settings(max_examples=60)
@given(ops=_ops)
def test_memory_event_log_matches_the_model(ops: list[tuple[Any, ...]]) -> None:
    answers = asyncio.run(_play(MemoryEventLog(max_events_per_stream=4, ttl=40.0), ops))
    assert answers == _model(ops, 4, 40.0)


def test_redis_event_log_matches_the_model(redis_server: RedisServer) -> None:  # noqa: F811
    from mcp_sansio.adapters.redis import RedisStores

    @settings(max_examples=40)
    @given(ops=_ops)
    def check(ops: list[tuple[Any, ...]]) -> None:
        async def main() -> list[Any]:
            stores = RedisStores.from_url(redis_server.url, prefix=f"h{next(_prefixes)}:",
                                          max_events_per_stream=4, event_ttl=40.0)
            try:
                return await _play(stores.events, ops)
            finally:
                await stores.aclose()
        assert asyncio.run(main()) == _model(ops, 4, 40.0)
    check()


def test_parse_event_id() -> None:
    assert parse_event_id("abc-1:7") == ("abc-1", 7)
    assert parse_event_id("a:b:3") == ("a:b", 3)
    for bad in ("", ":", "x:", ":3", "x:-3", "x:+3", "x:1e3", "x:" + "9" * 19):
        assert parse_event_id(bad) is None
