"""Two asyncio HTTP servers -- two workers -- sharing stores (start_http(stores=...)): the
in-memory stores in one process, and a real Redis (tests/_redis.py). A session opened on one
is served by the other, a GET with Last-Event-ID on the second replays what the first
stored, a DELETE on one ends the session on both, and a list change on one reaches a GET
stream on the other (the event bus)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import h11
import pytest
from mcp_sansio.adapters.asyncio import Server, start_http

from mcp_sansio.http import SSEParser
from mcp_sansio.stores import MemoryStores
from tests._redis import RedisServer, redis_server  # noqa: F401  (the fixture)
from tests.adapters.asyncio.test_http_asyncio import Conn
from tests.http_stories import add_tools, tool_call
from tests.http_util import init_body

_prefixes = itertools.count()
TIMEOUT = 60  # generous: the machine is shared


@pytest.fixture(params=["memory", "redis"])
def stores_factory(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        shared = MemoryStores()

        @contextlib.asynccontextmanager
        async def memory() -> AsyncIterator[Any]:
            yield shared  # both workers share the one object
        return memory
    server: RedisServer = request.getfixturevalue("redis_server")
    from mcp_sansio.adapters.redis import RedisStores

    prefix = f"e{next(_prefixes)}:"

    @contextlib.asynccontextmanager
    async def redis() -> AsyncIterator[Any]:
        stores = RedisStores.from_url(server.url, prefix=prefix)  # one client per worker
        try:
            yield stores
        finally:
            await stores.aclose()
    return redis


def make_server(release: asyncio.Event) -> Server:
    server = Server("shared-test")

    @server.tool()
    async def slow(ctx: Any) -> str:
        ctx.progress(1)
        ctx.progress(2)
        await release.wait()
        return "done"

    @server.tool()
    async def two_rounds(ctx: Any) -> str:
        if ctx.request_state is None:  # 2026-07-28: ask for a retry carrying sealed state
            ctx.input_required(request_state="round-one")
        return f"resumed {ctx.request_state}"

    add_tools(server, "echo", "change", "ask_name")
    return server


@contextlib.asynccontextmanager
async def two_workers(stores_factory: Any, release: asyncio.Event
                      ) -> AsyncIterator[tuple[int, int]]:
    async with stores_factory() as one, stores_factory() as two, \
            start_http(make_server(release), stores=one) as a, \
            start_http(make_server(release), stores=two) as b:
        yield a.port, b.port


def headers(sid: str, **extra: str) -> dict[str, str]:
    return {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25", **extra}


def call(n: int, name: str, arguments: dict[str, Any] | None = None,
         progress: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if progress:
        params["_meta"] = {"progressToken": "p"}
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}


async def open_session(port: int, capabilities: dict[str, Any] | None = None) -> str:
    conn = await Conn.open(port)
    body = init_body()
    if capabilities is not None:
        body["params"]["capabilities"] = capabilities
    status, got, _ = await conn.request("POST", body)
    assert status == 200
    sid = got["mcp-session-id"]
    status, _, _ = await conn.request(
        "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers(sid))
    assert status == 202
    await conn.close()
    return sid


async def events_until(conn: Conn, parser: SSEParser, count: int) -> list[Any]:
    """SSE events with data (id, message) until ``count`` arrived."""
    got: list[Any] = []
    while len(got) < count:
        event = await conn.next()
        assert isinstance(event, h11.Data), event
        got += [(e.id, json.loads(e.data)) for e in parser.feed(event.data) if e.data]
    return got


def test_a_session_opened_on_one_worker_is_served_on_the_other(stores_factory: Any) -> None:
    async def main() -> None:
        async with two_workers(stores_factory, asyncio.Event()) as (pa, pb):
            sid = await open_session(pa)
            conn = await Conn.open(pb)
            status, _, messages = await conn.request("POST", call(1, "echo", {"text": "hi"}),
                                                     headers(sid))
            assert status == 200
            assert messages[-1]["result"]["content"][0]["text"] == "hi"
            assert messages[0]["method"] == "notifications/message"  # echo logs at info
            # logging/setLevel on a: b's copy follows (the bus), and b stops sending info logs
            first = await Conn.open(pa)
            status, _, _ = await first.request(
                "POST", {"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel",
                         "params": {"level": "error"}}, headers(sid))
            assert status == 200
            await first.close()
            for n in range(TIMEOUT * 10):
                status, _, messages = await conn.request(
                    "POST", call(100 + n, "echo", {"text": "quiet"}), headers(sid))
                if len(messages) == 1:
                    break
                await asyncio.sleep(0.1)
            assert len(messages) == 1 and "result" in messages[0]
            # DELETE on b; then a (which opened it) refuses it too, once the bus told it
            status, _, _ = await conn.request("DELETE", None, headers(sid))
            assert status == 200
            other = await Conn.open(pa)
            for _ in range(TIMEOUT * 10):
                status, _, _ = await other.request("POST", call(2, "echo", {"text": "x"}),
                                                   headers(sid))
                if status == 404:
                    break
                await asyncio.sleep(0.1)
            assert status == 404
            await conn.close()
            await other.close()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_a_get_with_last_event_id_on_the_other_worker_replays(stores_factory: Any) -> None:
    async def main() -> None:
        release = asyncio.Event()
        async with two_workers(stores_factory, release) as (pa, pb):
            sid = await open_session(pa)
            conn = await Conn.open(pa)
            await conn.send("POST", call(7, "slow", progress=True), headers(sid))
            status, got = await conn.head()
            assert status == 200 and got["content-type"] == "text/event-stream"
            parser = SSEParser()
            (first_id, first), (second_id, _) = await events_until(conn, parser, 2)
            assert first["params"]["progress"] == 1
            await conn.close()  # the stream broke after two progress events
            # resume after the first on the other worker: the second is replayed
            other = await Conn.open(pb)
            for _ in range(TIMEOUT * 10):  # the first worker stores after it writes
                await other.send("GET", None, headers(sid, **{"last-event-id": first_id}))
                status, got = await other.head()
                if status == 200:
                    break
                while not isinstance(await other.next(), h11.EndOfMessage):
                    pass
                other.h11.start_next_cycle()
                await asyncio.sleep(0.1)
            assert status == 200
            replayed = await events_until(other, SSEParser(), 1)
            assert replayed == [(second_id, replayed[0][1])]
            assert replayed[0][1]["params"]["progress"] == 2
            release.set()
            await other.close()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_a_stream_resumed_on_the_other_worker_carries_on_live(stores_factory: Any) -> None:
    """issue 18: a GET with Last-Event-ID landing on the worker that does not run the
    request replays what the store holds, then relays what the first worker writes after
    (the bus), in order, each event once, and ends when the stream ends there."""
    async def main() -> None:
        release = asyncio.Event()
        async with two_workers(stores_factory, release) as (pa, pb):
            sid = await open_session(pa)
            conn = await Conn.open(pa)
            await conn.send("POST", call(7, "slow", progress=True), headers(sid))
            status, _ = await conn.head()
            assert status == 200
            (first_id, _), (second_id, _) = await events_until(conn, SSEParser(), 2)
            await conn.close()
            other = await Conn.open(pb)
            for _ in range(TIMEOUT * 10):  # the first worker stores after it writes
                await other.send("GET", None, headers(sid, **{"last-event-id": first_id}))
                status, _ = await other.head()
                if status == 200:
                    break
                while not isinstance(await other.next(), h11.EndOfMessage):
                    pass
                other.h11.start_next_cycle()
                await asyncio.sleep(0.1)
            assert status == 200
            parser = SSEParser()
            got = await events_until(other, parser, 1)
            assert [event_id for event_id, _ in got] == [second_id]
            release.set()  # the tool finishes on the first worker: its answer comes here
            got += await events_until(other, parser, 1)
            (_, answer) = got[-1]
            assert answer["id"] == 7 and answer["result"]["content"][0]["text"] == "done"
            seqs = [int(event_id.rpartition(":")[2]) for event_id, _ in got]
            assert seqs == sorted(set(seqs))  # in order, no duplicates
            assert got[-1][0].rpartition(":")[0] == second_id.rpartition(":")[0]
            while True:  # the stream ended there: the response ends here
                event = await other.next()
                if isinstance(event, h11.EndOfMessage):
                    break
                assert isinstance(event, h11.Data)
                assert not [e for e in parser.feed(event.data) if e.data]
            await other.close()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_an_answer_to_an_elicitation_posted_on_the_other_worker_reaches_the_tool(
        stores_factory: Any) -> None:
    """issue 18: the tool runs on one worker and elicits; the client posts its answer on a
    connection to the other worker; the answer crosses the bus and the tool finishes.
    The request's id names the worker that sent it; an answer to an id no worker waits
    for is accepted (202) and dropped, as on one server."""
    from tests.http_stories import elicit

    async def main() -> None:
        async with two_workers(stores_factory, asyncio.Event()) as (pa, pb):
            sid = await open_session(pa, {"elicitation": {}})
            caller = await Conn.open(pa)
            await caller.send("POST", call(3, "ask_name"), headers(sid))
            status, _ = await caller.head()
            assert status == 200
            parser = SSEParser()
            (_, ask), = await events_until(caller, parser, 1)
            assert ask["method"] == "elicitation/create"
            assert isinstance(ask["id"], str) and "-" in ask["id"]  # <worker tag>-<n>
            other = await Conn.open(pb)
            answer = {"jsonrpc": "2.0", "id": ask["id"], "result": elicit(ask["params"])}
            status, _, _ = await other.request("POST", answer, headers(sid))
            assert status == 202
            (_, done), = await events_until(caller, parser, 1)
            assert done["id"] == 3 and done["result"]["content"][0]["text"] == "hello Ada"
            stray = {"jsonrpc": "2.0", "id": "nobody-7", "result": {}}
            status, _, _ = await other.request("POST", stray, headers(sid))
            assert status == 202
            await other.close()
            await caller.close()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_a_list_change_on_one_worker_reaches_a_stream_on_the_other(stores_factory: Any
                                                                   ) -> None:
    async def main() -> None:
        async with two_workers(stores_factory, asyncio.Event()) as (pa, pb):
            sid = await open_session(pa)
            listener = await Conn.open(pb)
            await listener.send("GET", None, headers(sid))
            status, _ = await listener.head()
            assert status == 200
            caller = await Conn.open(pa)
            status, _, _ = await caller.request("POST", call(1, "change"), headers(sid))
            assert status == 200
            parser = SSEParser()
            messages = [m for _, m in await events_until(listener, parser, 1)]
            assert messages[0]["method"] == "notifications/tools/list_changed"
            await listener.close()
            await caller.close()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_request_state_sealed_on_one_worker_opens_on_the_other(stores_factory: Any) -> None:
    async def main() -> None:
        async with two_workers(stores_factory, asyncio.Event()) as (pa, pb):
            first = await Conn.open(pa)
            body, hdrs = tool_call("two_rounds", {}, 1)
            status, _, messages = await first.request("POST", body, hdrs)
            assert status == 200
            result = messages[-1]["result"]
            assert result["resultType"] == "input_required"
            sealed = result["requestState"]
            assert sealed != "round-one"  # sealed, not raw
            second = await Conn.open(pb)
            body, hdrs = tool_call("two_rounds", {"x": 1}, 2)
            body["params"]["requestState"] = sealed
            body["params"]["arguments"] = {}
            status, _, messages = await second.request("POST", body, hdrs)
            assert status == 200, messages
            assert messages[-1]["result"]["content"][0]["text"] == "resumed round-one"
            await first.close()
            await second.close()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_workers_on_one_store_share_its_key_ring(stores_factory: Any) -> None:
    from mcp_sansio.adapters.stores.keys import store_key_ring

    async def main() -> None:
        async with stores_factory() as stores:
            ring, _ = await store_key_ring(stores)
            key = ring.sealing_key()[1]
            assert len(key) == 32 and await stores.keys.get_keys() == [key]
            again, _ = await store_key_ring(stores)
            assert again.keys() == (key,)  # not added again
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_key_rotation_during_traffic_loses_no_request_state(stores_factory: Any) -> None:
    """issue 18: states sealed on one worker keep opening on the other while keys rotate
    (twice), and both workers end up sealing with the newest key."""
    from mcp_sansio.adapters.stores.keys import rotate_key

    async def seal(port: int, n: int) -> str:
        conn = await Conn.open(port)
        status, _, messages = await conn.request("POST", *tool_call("two_rounds", {}, n))
        await conn.close()
        assert status == 200
        state: str = messages[-1]["result"]["requestState"]
        return state

    async def open_(port: int, n: int, state: str) -> None:
        conn = await Conn.open(port)
        body, hdrs = tool_call("two_rounds", {}, n)
        body["params"]["requestState"] = state
        status, _, messages = await conn.request("POST", body, hdrs)
        await conn.close()
        assert status == 200, messages
        assert messages[-1]["result"]["content"][0]["text"] == "resumed round-one", messages

    async def main() -> None:
        release = asyncio.Event()
        async with stores_factory() as one, stores_factory() as two, \
                start_http(make_server(release), stores=one, key_refresh_interval=0.05) as a, \
                start_http(make_server(release), stores=two, key_refresh_interval=0.05) as b:
            new_keys = []
            kept = await seal(a.port, 1000)  # sealed before any rotation, opened after both
            for n in range(60):
                if n in (10, 35):
                    new_keys.append(await rotate_key(one))
                sealer, opener = (a, b) if n % 2 else (b, a)
                await open_(opener.port, 2 * n + 1, await seal(sealer.port, 2 * n))
                await asyncio.sleep(0.01)
            for service in (a, b):
                assert service._shared is not None and service._shared.keys is not None
                for _ in range(TIMEOUT * 20):  # it seals with the newest once it is ripe
                    if service._shared.keys.keys()[0] == new_keys[-1]:
                        break
                    await asyncio.sleep(0.05)
                assert service._shared.keys.keys()[0] == new_keys[-1]
            await open_(b.port, 1001, kept)  # the old key still opens on every worker
            assert set(await one.keys.get_keys()) >= set(new_keys)
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_a_list_change_on_one_worker_reaches_a_listen_stream_on_the_other(
        stores_factory: Any) -> None:
    """2026-07-28: a subscriptions/listen stream held by one worker hears a change made by a
    stateless request served on the other (the event bus)."""
    from tests.http_stories import stateless

    async def main() -> None:
        async with two_workers(stores_factory, asyncio.Event()) as (pa, pb):
            listener = await Conn.open(pb)
            await listener.send("POST", *stateless(
                "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, 1))
            status, _ = await listener.head()
            assert status == 200
            parser = SSEParser()
            (_, ack), = await events_until(listener, parser, 1)
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            caller = await Conn.open(pa)
            status, _, answer = await caller.request("POST", *tool_call("change", {}, 2))
            assert status == 200 and answer[-1]["result"]["content"][0]["text"] == "changed"
            (_, change), = await events_until(listener, parser, 1)
            assert change["method"] == "notifications/tools/list_changed"
            await listener.close()
            await caller.close()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_a_store_that_fails_leaves_no_request_hanging(tmp_path: Any,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """Redis unreachable: every store call fails, and each request that waits on it is
    answered 503 with Retry-After: initialize (its session could not be recorded, so no
    other worker could find it: nothing is made, nothing is lost), and a request for a
    session another worker has to look up (the store did not answer: it cannot say the
    session is gone)."""
    pytest.importorskip("redis")
    from mcp_sansio.adapters.redis import RedisStores

    url = f"unix://{tmp_path}/nobody-listens.sock"

    async def main() -> None:
        one, two = RedisStores.from_url(url), RedisStores.from_url(url)
        server = make_server(asyncio.Event())
        try:
            # (no key in an unreachable store: give one)
            async with start_http(server, stores=_NoBus(one), request_state_key=b"k" * 32) as a, \
                    start_http(server, stores=_NoBus(two), request_state_key=b"k" * 32) as b:
                conn = await Conn.open(a.port)
                status, answered, messages = await conn.request("POST", init_body())
                assert status == 503 and answered["retry-after"] == "1"
                assert "mcp-session-id" not in answered
                assert "could not record" in messages[-1]["error"]["message"]
                assert not a.http.sessions  # nothing of it is left on that worker
                sid = "a-session-of-another-worker"
                other = await Conn.open(b.port)
                status, answered, _ = await other.request(
                    "POST", call(2, "echo", {"text": "b"}), headers(sid))
                # nothing known, nothing lost: try again (not 404, which ends the session)
                assert status == 503 and answered["retry-after"] == "1"
                await other.send("GET", None, headers(sid, **{"last-event-id": "x-1:0"}))
                assert (await other.head())[0] == 503  # the session's lookup first
                await conn.close()
                await other.close()
        finally:
            await one.aclose()
            await two.aclose()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))
    failures = [r for r in caplog.records if "a shared store failed" in r.getMessage()]
    assert failures  # logged, with the effect's repr: a session id's prefix only
    assert all(len(r.getMessage()) < 200 for r in failures)


class _NoBus:
    """Stores whose bus is in memory (subscribing to an unreachable Redis would fail at
    start, which is the right thing for a server but not what this test is about)."""

    def __init__(self, stores: Any) -> None:
        self.sessions, self.events, self.keys = stores.sessions, stores.events, stores.keys
        self.bus = MemoryStores().bus


def test_the_other_workers_are_told_before_the_answer_goes() -> None:
    """A DELETE or a logging/setLevel is answered only after the bus carried the change: a
    client that sends its next request to the other worker at once finds the session ended
    there, or quiet. The bus here takes its time, as a network one does (the two-host test
    once saw the other host serve a deleted session)."""
    async def main() -> None:
        stores = MemoryStores()
        stores.bus = _SlowBus(stores.bus)  # type: ignore[assignment]
        server = make_server(asyncio.Event())
        async with start_http(server, stores=stores) as a, \
                start_http(server, stores=stores) as b:
            sid = await open_session(a.port)
            conn = await Conn.open(a.port)
            status, _, messages = await conn.request("POST", call(1, "echo", {"text": "a"}),
                                                     headers(sid))
            assert status == 200 and len(messages) == 2  # echo logs at info, then answers
            other = await Conn.open(b.port)
            status, _, _ = await other.request(
                "POST", {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
                         "params": {"level": "error"}}, headers(sid))
            assert status == 200
            status, _, messages = await conn.request("POST", call(3, "echo", {"text": "b"}),
                                                     headers(sid))
            assert status == 200 and len(messages) == 1  # a's copy is quiet already
            status, _, _ = await other.request("DELETE", None, headers(sid))
            assert status == 200
            status, _, _ = await conn.request("POST", call(4, "echo", {"text": "c"}),
                                              headers(sid))
            assert status == 404
            await conn.close()
            await other.close()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


class _SlowBus:
    """A bus whose messages take a moment to leave (a round trip to Redis, say)."""

    def __init__(self, bus: Any) -> None:
        self.bus = bus

    async def publish(self, topic: str, message: bytes) -> None:
        await asyncio.sleep(0.2)
        await self.bus.publish(topic, message)

    async def subscribe(self, topic: str, deliver: Any) -> Any:
        return await self.bus.subscribe(topic, deliver)


def test_the_driver_carries_out_a_refresh_as_a_touch() -> None:
    """A SaveSession that is a refresh moves the table's deadline and writes nothing over
    the record (a newer one saved by another worker stays), tells no worker, and does not
    bring back a session deleted meanwhile."""
    import time

    from mcp_sansio.adapters.stores.driver import SharedDriver

    from mcp_sansio import ServerConnection
    from mcp_sansio.http import HTTPServer
    from mcp_sansio.http._shared import SaveSession

    async def main() -> None:
        stores = MemoryStores()
        heard: list[bytes] = []
        await stores.bus.subscribe("sessions", lambda topic, message: heard.append(message))
        http = HTTPServer(lambda: ServerConnection(info={"name": "s", "version": "1"}),
                          shared=True, session_idle_timeout=100.0,
                          new_session_id=lambda: "s9")
        driver = SharedDriver(http, stores, lambda: None)
        newer = {"session": {"logLevel": "error"}, "principal": None}
        await stores.sessions.put("s1", newer, expires_at=time.time() + 10,
                                  wall_time=time.time())
        stale = {"session": {"logLevel": None}, "principal": None}
        await driver._carry_out(SaveSession("s1", stale, refresh=True))
        # the deadline moved from 10 s to 100 s from now; the record is the newer one
        assert await stores.sessions.get("s1", wall_time=time.time() + 99) == newer
        assert heard == []
        await stores.sessions.delete("s1")
        await driver._carry_out(SaveSession("s1", stale, refresh=True))
        assert await stores.sessions.get("s1", wall_time=time.time()) is None
        await driver._carry_out(SaveSession("s1", stale))  # a change is written whole
        assert await stores.sessions.get("s1", wall_time=time.time()) == stale
        assert len(heard) == 1
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


# -- a worker that goes while a stream it writes is relayed elsewhere (issue 18) -------------------


async def _resume_on_b(pa: int, pb: int, sid: str) -> tuple[Conn, SSEParser, str]:
    """A slow call on a, its stream broken after two progress events and resumed on b: the
    open response on b (the live relay), its parser, and the id of the last event."""
    conn = await Conn.open(pa)
    await conn.send("POST", call(7, "slow", progress=True), headers(sid))
    status, _ = await conn.head()
    assert status == 200
    (first_id, _), (second_id, _) = await events_until(conn, SSEParser(), 2)
    await conn.close()
    other = await Conn.open(pb)
    for _ in range(TIMEOUT * 10):  # the first worker stores after it writes
        await other.send("GET", None, headers(sid, **{"last-event-id": first_id}))
        status, _ = await other.head()
        if status == 200:
            break
        while not isinstance(await other.next(), h11.EndOfMessage):
            pass
        other.h11.start_next_cycle()
        await asyncio.sleep(0.1)
    assert status == 200
    parser = SSEParser()
    assert [event_id for event_id, _ in await events_until(other, parser, 1)] == [second_id]
    return other, parser, second_id


async def _ends(conn: Conn, parser: SSEParser) -> None:
    """The response ends, with no more events (keep-alive comments may come first)."""
    while True:
        event = await conn.next()
        if isinstance(event, h11.EndOfMessage):
            return
        assert isinstance(event, h11.Data)
        assert not [e for e in parser.feed(event.data) if e.data]


async def _stranded(conn: Conn, parser: SSEParser, request_id: int) -> None:
    """One error event for ``request_id`` (its worker stopped), then the response ends."""
    got = []
    while True:
        event = await conn.next()
        if isinstance(event, h11.EndOfMessage):
            break
        assert isinstance(event, h11.Data)
        got += [json.loads(e.data) for e in parser.feed(event.data) if e.data]
    assert [(m["id"], m["error"]["code"]) for m in got] == [(request_id, -32603)], got


@pytest.mark.parametrize("how", ["killed", "stopped"])
def test_a_relay_ends_when_the_writing_worker_goes(stores_factory: Any, how: str) -> None:
    """The worker writing a stream that a client resumed on the other goes: killed (its
    heartbeats stop, no notice: the other notices the silence) or stopped cleanly (it says
    "gone" at once; the survivor's timeout is set far beyond the test's so only the notice
    can end the relay). The relay ends, and a resumption replays what is stored, then ends
    -- it no longer waits for events that cannot come."""
    async def main() -> None:
        release = asyncio.Event()
        # The survivor: beats often and judges fast when a death is to be noticed; when a
        # notice must do it, the silence would take longer than the test waits.
        liveness = ({"heartbeat_interval": 0.2, "worker_timeout": 1.0} if how == "killed"
                    else {"heartbeat_interval": 100.0, "worker_timeout": 1000.0})
        async with contextlib.AsyncExitStack() as stack:
            one = await stack.enter_async_context(stores_factory())
            two = await stack.enter_async_context(stores_factory())
            b = await stack.enter_async_context(
                start_http(make_server(release), stores=two, **liveness))
            writer = contextlib.AsyncExitStack()
            a = await writer.enter_async_context(start_http(make_server(release), stores=one))
            try:
                sid = await open_session(a.port)
                other, parser, last_id = await _resume_on_b(a.port, b.port, sid)
                driver = a._shared
                assert driver is not None and driver._heartbeat is not None
                if how == "killed":
                    # What a dead process does: it falls silent. (Its socket stays open
                    # and its tool waits: only the silence tells b.)
                    driver._stop_beat.set()
                    driver._heartbeat = None  # and aclose then sends no notice
                else:
                    await writer.aclose()
                # the call's request is ended with an error (its worker stopped: outcome
                # unknown, mcp_sansio/http/_stranded.py), then the relay ends
                await _stranded(other, parser, 7)
                other.h11.start_next_cycle()
                await other.send("GET", None, headers(sid, **{"last-event-id": last_id}))
                status, _ = await other.head()
                assert status == 200
                await _stranded(other, parser, 7)  # the same, replayed from the log
                await other.close()
                # and the session carries on at b
                conn = await Conn.open(b.port)
                status, _, messages = await conn.request(
                    "POST", call(8, "echo", {"text": "still"}), headers(sid))
                assert status == 200
                assert messages[-1]["result"]["content"][0]["text"] == "still"
                await conn.close()
            finally:
                release.set()
                await writer.aclose()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_a_worker_says_it_is_gone_when_it_stops_and_beats_while_it_runs() -> None:
    async def main() -> None:
        stores = MemoryStores()
        heard: list[dict[str, Any]] = []
        await stores.bus.subscribe("workers", lambda topic, m: heard.append(json.loads(m)))
        async with start_http(make_server(asyncio.Event()), stores=stores,
                              heartbeat_interval=0.05, worker_timeout=1.0) as a:
            tag = a.http.stream_tag
            while len(heard) < 3:
                await asyncio.sleep(0.05)
        assert heard[0] == {"worker": tag, "alive": True}
        assert heard[-1] == {"worker": tag, "gone": True}
        assert all(note["worker"] == tag for note in heard)
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_heartbeat_options_are_checked() -> None:
    async def main() -> None:
        with pytest.raises(ValueError):
            async with start_http(make_server(asyncio.Event()), stores=MemoryStores(),
                                  heartbeat_interval=5.0, worker_timeout=5.0):
                pass  # pragma: no cover
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_a_resumption_of_a_stream_whose_writer_is_known_gone_replays_and_ends(
        stores_factory: Any) -> None:
    """The worker the GET lands on already counts the writer gone (here: it heard the
    notice, but its server was not told yet, and it beats too rarely to check): the
    replay ends at once, the call ended with an error, instead of relaying live until the
    next check."""
    async def main() -> None:
        release = asyncio.Event()
        async with contextlib.AsyncExitStack() as stack:
            one = await stack.enter_async_context(stores_factory())
            two = await stack.enter_async_context(stores_factory())
            b = await stack.enter_async_context(start_http(
                make_server(release), stores=two, heartbeat_interval=100.0,
                worker_timeout=1000.0))
            a = await stack.enter_async_context(start_http(make_server(release), stores=one))
            sid = await open_session(a.port)
            conn = await Conn.open(a.port)
            await conn.send("POST", call(7, "slow", progress=True), headers(sid))
            assert (await conn.head())[0] == 200
            (first_id, _), (second_id, _) = await events_until(conn, SSEParser(), 2)
            await conn.close()
            assert b._shared is not None
            b._shared.liveness.left(a.http.stream_tag)
            other = await Conn.open(b.port)
            # (the first worker stores after it writes: asked again until the second
            # event is in the log; each answer ends, none waits)
            for _ in range(TIMEOUT * 10):
                await other.send("GET", None, headers(sid, **{"last-event-id": first_id}))
                status, _ = await other.head()
                parser = SSEParser()
                got = []
                while not isinstance(event := await other.next(), h11.EndOfMessage):
                    got += [(e.id, json.loads(e.data)) for e in parser.feed(event.data)
                            if e.data]
                if status == 200 and got:
                    break
                other.h11.start_next_cycle()
                await asyncio.sleep(0.1)
            # replayed (the second event, if it was stored by then), then the call ended
            # with an error in the writer's place (mcp_sansio/http/_stranded.py), the end
            assert status == 200 and [i for i, _ in got[:-1]] in ([], [second_id])
            assert got[-1][1]["id"] == 7 and got[-1][1]["error"]["code"] == -32603
            await other.close()
            release.set()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))
