"""The ASGI application in shared mode (``asgi.app(server, stores=...)``), in this process:
two applications -- two workers -- on the in-memory stores and on a real Redis
(tests/_redis.py), and one application alone on the in-memory stores, played by the tiny
ASGI server of tests/asgi/test_asgi.py. The same scenarios as the engine workers of
tests/asgi/test_asgi_shared_engines.py: a session opened on one worker is served by the other and
a DELETE ends it everywhere; a stream cut on one worker is resumed on the other with
``Last-Event-ID`` (replay, then live); a list change reaches GET and listen streams held by
the other; ``requestState`` sealed on one opens on the other while the keys rotate. Also:
the ``lifespan`` starts shared mode, stores given as a URL are each worker's own, a tag is
drawn per process, and trio is refused in one line."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp_sansio.adapters import asgi
from mcp_sansio.adapters.stores.keys import rotate_key

from mcp_sansio.http import SSEParser
from mcp_sansio.stores import MemoryStores
from tests._redis import RedisServer, redis_server  # noqa: F401  (the fixture)
from tests.asgi.test_asgi import Call, post, scope
from tests.http_stories import stateless as stateless_call
from tests.http_stories import tool_call
from tests.http_util import init_body
from tests.stores.test_http_shared_asyncio import call, make_server

TIMEOUT = 60.0  # generous: the machine is shared


@pytest.fixture(params=["memory", "redis", "one"])
def workers(request: pytest.FixtureRequest) -> Any:
    """Two applications on one set of stores (``memory``, ``redis``), or one alone
    (``one``: the same application twice)."""
    release = asyncio.Event()

    @contextlib.asynccontextmanager
    async def two(**options: Any) -> AsyncIterator[tuple[Any, Any, asyncio.Event]]:
        if request.param == "redis":
            server: RedisServer = request.getfixturevalue("redis_server")
            from mcp_sansio.adapters.redis import RedisStores

            prefix = f"asgi{id(release)}:"
            one = RedisStores.from_url(server.url, prefix=prefix)
            other = RedisStores.from_url(server.url, prefix=prefix)
        else:
            one = other = MemoryStores()
        a = asgi.app(make_server(release), stores=one, **options)
        b = asgi.app(make_server(release), stores=other, **options) \
            if request.param != "one" else a
        try:
            yield a, b, release
        finally:
            release.set()
            await a.aclose()
            await b.aclose()
            if request.param == "redis":
                await one.aclose()
                await other.aclose()
    return two


def hdrs(sid: str, **extra: str) -> list[tuple[str, str]]:
    return [("mcp-session-id", sid), ("mcp-protocol-version", "2025-11-25"),
            *extra.items()]


def request(app: Any, method: str, headers: list[tuple[str, str]]) -> Call:
    """A request with an empty body (GET, DELETE)."""
    return Call(app, scope(method, headers=headers), [b""])


async def open_session(app: Any) -> str:
    answer = await post(app, init_body()).run()
    assert answer.status == 200, answer.sent
    sid = answer.headers["mcp-session-id"]
    note = await post(app, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                      hdrs(sid)).run()
    assert note.status == 202
    return sid


def events(answer: Call) -> list[tuple[str | None, Any]]:
    """The SSE events with data sent so far: (id, message)."""
    parser = SSEParser()
    return [(e.id, json.loads(e.data)) for e in parser.feed(answer.body) if e.data]


async def echo(app: Any, sid: str, n: int) -> None:
    answer = await post(app, call(n, "echo", {"text": f"hop {n}"}), hdrs(sid)).run()
    assert answer.status == 200, answer.sent
    messages = answer.sse() if answer.headers["content-type"] == "text/event-stream" \
        else [answer.json()]
    assert messages[-1]["result"]["content"][0]["text"] == f"hop {n}"


def test_a_session_is_served_by_every_worker_and_deleted_everywhere(workers: Any) -> None:
    async def main() -> None:
        async with workers() as (a, b, _):
            sid = await open_session(a)
            for n, app in enumerate([b, a, b], start=1):
                await echo(app, sid, n)
            assert (await request(b, "DELETE", hdrs(sid)).run()).status == 200
            with anyio.fail_after(TIMEOUT):
                while True:  # the other worker drops its copy when the bus tells it
                    answer = await post(a, call(9, "echo", {"text": "x"}), hdrs(sid)).run()
                    if answer.status == 404:
                        break
                    await anyio.sleep(0.02)
    asyncio.run(main())


def test_a_stream_cut_on_one_worker_resumes_on_the_other(workers: Any) -> None:
    async def main() -> None:
        async with workers() as (a, b, release), anyio.create_task_group() as group:
            sid = await open_session(a)
            cut = post(a, call(7, "slow", progress=True), hdrs(sid))
            group.start_soon(cut.run)
            await cut.until(lambda: len(events(cut)) >= 2)
            (first, _), (second, _) = events(cut)[:2]
            assert first is not None and second is not None
            cut.leave.set()  # the client's connection broke
            await cut.until(lambda: cut.done)
            with anyio.fail_after(TIMEOUT):
                while True:  # the first worker stores each event just after writing it
                    resumed = request(b, "GET", hdrs(sid, **{"last-event-id": first}))
                    group.start_soon(resumed.run)
                    await resumed.until(lambda r=resumed: bool(r.sent))  # type: ignore[misc]
                    if resumed.status == 200:
                        break
                    await resumed.until(lambda r=resumed: r.done)  # type: ignore[misc]
                    await anyio.sleep(0.02)
            await resumed.until(lambda: len(events(resumed)) >= 1)
            assert [event_id for event_id, _ in events(resumed)] == [second]
            release.set()  # the tool ends on the first worker: its answer comes here, live
            await resumed.until(lambda: resumed.done)
            got = events(resumed)
            assert got[-1][1]["id"] == 7 and got[-1][1]["result"]["content"][0]["text"] == "done"
            seqs = [int(str(event_id).rpartition(":")[2]) for event_id, _ in got]
            assert seqs == sorted(set(seqs))  # in order, each once
    asyncio.run(main())


def test_a_list_change_reaches_the_streams_held_by_the_other(workers: Any) -> None:
    async def main() -> None:
        async with workers() as (a, b, _), anyio.create_task_group() as group:
            sid = await open_session(a)
            get = request(b, "GET", hdrs(sid))
            body, headers = stateless_call("subscriptions/listen",
                                           {"notifications": {"toolsListChanged": True}})
            listen = post(b, body, list(headers.items()))
            group.start_soon(get.run)
            group.start_soon(listen.run)
            await listen.until(lambda: len(events(listen)) >= 1)
            await get.until(lambda: bool(get.sent))
            assert get.status == 200
            changed = await post(a, call(1, "change"), hdrs(sid)).run()
            assert changed.status == 200
            body, headers = tool_call("change", {}, 2)
            assert (await post(a, body, list(headers.items())).run()).status == 200
            for stream in (get, listen):
                await stream.until(lambda s=stream: sum(  # type: ignore[misc]
                    m.get("method") == "notifications/tools/list_changed"
                    for _, m in events(s)) == 2)
            get.leave.set()
            listen.leave.set()
    asyncio.run(main())


def test_request_state_sealed_on_one_worker_opens_on_the_other_across_rotation(
        workers: Any) -> None:
    async def seal(app: Any, n: int) -> str:
        body, headers = tool_call("two_rounds", {}, n)
        answer = await post(app, body, list(headers.items())).run()
        result = (answer.sse() if answer.headers["content-type"] == "text/event-stream"
                  else [answer.json()])[-1]["result"]
        assert result["resultType"] == "input_required"
        assert result["requestState"] != "round-one"  # sealed, not raw
        return str(result["requestState"])

    async def open_(app: Any, n: int, state: str) -> None:
        body, headers = tool_call("two_rounds", {}, n)
        body["params"]["requestState"] = state
        answer = await post(app, body, list(headers.items())).run()
        messages = (answer.sse() if answer.headers["content-type"] == "text/event-stream"
                    else [answer.json()])
        assert messages[-1]["result"]["content"][0]["text"] == "resumed round-one", messages

    async def main() -> None:
        async with workers(key_refresh_interval=0.05) as (a, b, _):
            kept = await seal(a, 1000)
            new_keys = []
            for n in range(40):
                if n in (5, 20):
                    new_keys.append(await rotate_key(a.stores))
                sealer, opener = (a, b) if n % 2 else (b, a)
                await open_(opener, 2 * n + 1, await seal(sealer, 2 * n))
                await anyio.sleep(0.01)
            for app in {a, b}:
                keys = app._service._shared.keys
                with anyio.fail_after(TIMEOUT):  # it seals with the newest once it is ripe
                    while keys.keys()[0] != new_keys[-1]:
                        await anyio.sleep(0.05)
            await open_(b, 1001, kept)  # the first key still opens
    asyncio.run(main())


def test_the_lifespan_starts_shared_mode_and_url_stores_are_the_workers_own(
        redis_server: RedisServer) -> None:  # noqa: F811
    """Stores given as a URL: each application connects at its start (here the lifespan)
    and closes them at shutdown; two such applications share a session."""
    async def lifespan(app: Any, group: Any) -> tuple[list[dict[str, Any]], anyio.Event]:
        outbox: list[dict[str, Any]] = []
        inbox = [{"type": "lifespan.startup"}]
        stop = anyio.Event()

        async def receive() -> dict[str, Any]:
            if inbox:
                return inbox.pop(0)
            await stop.wait()
            return {"type": "lifespan.shutdown"}

        async def send(message: dict[str, Any]) -> None:
            outbox.append(message)

        group.start_soon(app, {"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
        with anyio.fail_after(TIMEOUT):
            while not outbox:
                await anyio.sleep(0.01)
        return outbox, stop

    async def main() -> None:
        a = asgi.app(make_server(asyncio.Event()), stores=redis_server.url)
        b = asgi.app(make_server(asyncio.Event()), stores=redis_server.url)
        assert a.http.stream_tag != b.http.stream_tag
        async with anyio.create_task_group() as group:
            (out_a, stop_a), (out_b, stop_b) = (await lifespan(a, group),
                                                await lifespan(b, group))
            assert out_a == out_b == [{"type": "lifespan.startup.complete"}]
            owned = a._owned_stores
            assert owned is not None and a._service._shared.stores is owned
            sid = await open_session(a)
            await echo(b, sid, 1)
            stop_a.set()
            stop_b.set()
            with anyio.fail_after(TIMEOUT):
                while len(out_a) < 2 or len(out_b) < 2:
                    await anyio.sleep(0.01)
            assert out_a[1] == {"type": "lifespan.shutdown.complete"}
            assert a._owned_stores is None and a._service is None
    asyncio.run(main())


def test_a_worker_forked_after_the_application_was_built_draws_its_own_tag() -> None:
    async def main() -> None:
        app = asgi.app(make_server(asyncio.Event()), stores=MemoryStores())
        before = app.http.stream_tag
        app._tag_pid = -1  # as if built in the parent of a fork
        sid = await open_session(app)  # started lazily, on the first request
        assert app.http.stream_tag != before and app.http.stream_tag.isalnum()
        await echo(app, sid, 1)
        await app.aclose()
        # a tag the caller chose is kept (it is theirs to make unique)
        given = asgi.app(make_server(asyncio.Event()), stores=MemoryStores(), stream_tag="w7")
        await open_session(given)
        assert given.http.stream_tag == "w7"
        await given.aclose()
    asyncio.run(main())


def test_shared_mode_on_trio_starts_on_the_store_thread_and_leaves_at_shutdown() -> None:
    """Under trio (hypercorn's trio worker) the lifespan startup starts shared mode on the
    store thread (adapters/stores/home.py): the worker listens on the bus until the
    shutdown, which leaves it."""
    stores = MemoryStores()
    listening: list[set[str]] = []

    async def main() -> None:
        app = asgi.app(make_server(asyncio.Event()), stores=stores)
        sent: list[dict[str, Any]] = []
        inbox = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

        async def receive() -> dict[str, Any]:
            if len(inbox) == 1:  # started: what the worker listens on before it stops
                listening.append(set(stores.bus._subscribers))
            return inbox.pop(0)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        with anyio.fail_after(TIMEOUT):
            await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
        assert [m["type"] for m in sent] == ["lifespan.startup.complete",
                                             "lifespan.shutdown.complete"]
    anyio.run(main, backend="trio")
    assert {"sessions", "events", "answers", "workers"} <= listening[0]
    assert set(stores.bus._subscribers) == set()


def test_stores_need_a_shared_http_server() -> None:
    from mcp_sansio.http import HTTPServer
    from tests.asgi.test_asgi import Probe
    from tests.asgi.test_asgi import make_server as plain_server

    http = HTTPServer(plain_server(Probe()).connection, new_session_id=lambda: "s")
    with pytest.raises(ValueError, match="shared=True"):
        asgi.ASGIApp(http, server=plain_server(Probe()), stores=MemoryStores())


def test_serve_example_store_on_hypercorn_trio_is_served() -> None:
    """``--store`` on hypercorn's trio worker is served too (its scenarios:
    tests/asgi/test_asgi_shared_engines.py, ``hypercorn-trio``): a store that cannot be reached is
    then the only refusal, one line, exit status 1."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "mcp_sansio", "serve-example", "--transport", "http",
         "--engine", "hypercorn", "--runtime", "trio", "--store", "redis://127.0.0.1:1/0"],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert "cannot reach the store" in done.stderr and "asyncio" not in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_an_application_served_again_from_another_loop_hears_the_bus_once() -> None:
    """An application reused across ``asyncio.run`` calls (as tests do) without its
    shutdown: the service of the old loop stops listening on the bus, so a list change
    reaches a stream of the new loop once, not twice."""
    stores = MemoryStores()
    app = asgi.app(make_server(asyncio.Event()), stores=stores)

    async def first() -> str:
        return await open_session(app)

    async def second(sid: str) -> None:
        async with anyio.create_task_group() as group:
            get = request(app, "GET", hdrs(sid))
            group.start_soon(get.run)
            await get.until(lambda: bool(get.sent))
            assert get.status == 200
            assert (await post(app, call(1, "change"), hdrs(sid)).run()).status == 200
            await get.until(lambda: len(events(get)) >= 1)
            await anyio.sleep(0.2)  # time for a duplicate to arrive, if one were coming
            assert [m["method"] for _, m in events(get)] == [
                "notifications/tools/list_changed"]
            get.leave.set()
        await app.aclose()

    sid = asyncio.run(first())
    asyncio.run(second(sid))
