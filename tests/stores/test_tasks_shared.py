"""Tasks every worker sees (issue 18): two asyncio HTTP servers -- two workers -- sharing
stores (the in-memory stores in one process, and a real Redis), their tasks shared by
``enable_tasks(shared=stores)`` or by ``start_http(stores=...)`` itself. A task created on
one is polled, fetched, listed, updated and cancelled on the other, in both eras; the work
runs where it started; ``tasks/list`` and ``tasks/get`` never show another session's or
principal's tasks; the shared ASGI application shares its tasks too; servers stopped and
started again share again."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcp_sansio.adapters.asyncio import Context, Server, start_http

from tests._redis import redis_server  # noqa: F401  (the fixture)
from tests.adapters.asyncio.test_http_asyncio import Conn
from tests.adapters.common.test_tasks import Client
from tests.stores.test_http_shared_asyncio import (  # noqa: F401
    headers,
    open_session,
    stores_factory,
)

TIMEOUT = 60  # generous: the machine is shared


class Host:
    """What one worker's handlers did (the work runs where it started)."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.stopped = asyncio.Event()


def make_server(stores: Any, release: asyncio.Event, host: Host, *,
                explicit: bool) -> Server:
    server = Server("shared-tasks")
    if explicit:
        server.enable_tasks(shared=stores, poll_interval_ms=50)
    else:  # start_http(stores=...) shares them
        server.enable_tasks(poll_interval_ms=50)

    @server.tool(task_support="optional")
    async def slow() -> str:
        host.ran.append("slow")
        await release.wait()
        return "done"

    @server.tool(task_support="optional")
    async def forever() -> str:
        host.ran.append("forever")
        try:
            await asyncio.Event().wait()
        finally:
            host.stopped.set()
        return "never"

    @server.tool(task_support="optional")
    async def ask(ctx: Context) -> str:
        host.ran.append("ask")
        answer = await ctx.elicit("Your name?", {"type": "object",
                                                 "properties": {"name": {"type": "string"}}})
        return f"hello {answer['content']['name']}"

    return server


@contextlib.asynccontextmanager
async def two_workers(stores_factory: Any, release: asyncio.Event,  # noqa: F811
                      explicit: bool = False) -> AsyncIterator[tuple[int, int, Host, Host]]:
    a_host, b_host = Host(), Host()
    async with stores_factory() as one, stores_factory() as two:
        servers = [make_server(one, release, a_host, explicit=explicit),
                   make_server(two, release, b_host, explicit=explicit)]
        async with start_http(servers[0], stores=one) as a, \
                start_http(servers[1], stores=two) as b:
            yield a.port, b.port, a_host, b_host


async def until_status(client: Client, task_id: str, *statuses: str) -> dict[str, Any]:
    for _ in range(TIMEOUT * 20):
        task = await client.result("tasks/get", {"taskId": task_id})
        if task["status"] in statuses:
            return task
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} never reached {statuses}")


def test_stateless_era_a_task_created_on_one_worker_is_seen_on_the_other(
        stores_factory: Any) -> None:  # noqa: F811
    async def main() -> None:
        release = asyncio.Event()
        async with two_workers(stores_factory, release, explicit=True) as (
                pa, pb, a_host, b_host):
            a, b = Client(await Conn.open(pa)), Client(await Conn.open(pb))
            # Poll and fetch on B a task that runs on A.
            created = await a.result("tools/call", {"name": "slow", "arguments": {}})
            assert created["resultType"] == "task"
            task_id = created["taskId"]
            got = await b.result("tasks/get", {"taskId": task_id})
            assert got["status"] == "working" and got["createdAt"] == created["createdAt"]
            release.set()
            done = await until_status(b, task_id, "completed")
            assert done["result"]["content"][0]["text"] == "done"
            # An update sent to B reaches the handler waiting on A.
            created = await a.result("tools/call", {"name": "ask", "arguments": {}})
            parked = await until_status(b, created["taskId"], "input_required")
            assert "elicitation" in parked["inputRequests"]
            acked = await b.result("tasks/update", {
                "taskId": created["taskId"], "inputResponses": {"elicitation": {
                    "action": "accept", "content": {"name": "Ada"}}}})
            assert acked["resultType"] == "complete" and "status" not in acked
            done = await until_status(b, created["taskId"], "completed")
            assert done["result"]["content"][0]["text"] == "hello Ada"
            # A cancel sent to B stops the handler on A.
            created = await a.result("tools/call", {"name": "forever", "arguments": {}})
            await b.result("tasks/cancel", {"taskId": created["taskId"]})
            await asyncio.wait_for(a_host.stopped.wait(), TIMEOUT)
            assert (await until_status(b, created["taskId"], "cancelled"))[
                "status"] == "cancelled"
            # The work ran where it started; an unknown id is -32602 on either worker.
            assert a_host.ran == ["slow", "ask", "forever"] and b_host.ran == []
            _, message = await b.call("tasks/get", {"taskId": "no-such-task"})
            assert message["error"]["code"] == -32602
            await a.conn.close()
            await b.conn.close()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


async def post(port: int, sid: str, n: int, method: str, params: dict[str, Any]
               ) -> dict[str, Any]:
    conn = await Conn.open(port)  # a fresh connection for each request, as a balancer may
    try:
        status, _, messages = await conn.request(
            "POST", {"jsonrpc": "2.0", "id": n, "method": method, "params": params},
            headers(sid))
    finally:
        await conn.close()
    assert status == 200, (status, messages)
    answers = [m for m in messages if m.get("id") == n]
    assert len(answers) == 1, messages
    return answers[0]  # type: ignore[no-any-return]


def test_handshake_era_get_result_list_and_cancel_on_the_other_worker(
        stores_factory: Any) -> None:  # noqa: F811
    async def main() -> None:
        release = asyncio.Event()
        async with two_workers(stores_factory, release) as (pa, pb, a_host, b_host):
            sid = await open_session(pa)
            other_sid = await open_session(pb)
            created = await post(pa, sid, 1, "tools/call",
                                 {"name": "slow", "arguments": {}, "task": {}})
            task = created["result"]["task"]
            task_id = task["taskId"]
            got = await post(pb, sid, 2, "tasks/get", {"taskId": task_id})
            assert got["result"]["status"] == "working"
            listed = await post(pb, sid, 3, "tasks/list", {})
            assert [t["taskId"] for t in listed["result"]["tasks"]] == [task_id]
            # Another session sees nothing of it, on either worker.
            for port in (pa, pb):
                assert (await post(port, other_sid, 4, "tasks/list", {}))["result"] == {
                    "tasks": []}
                refused = await post(port, other_sid, 5, "tasks/get", {"taskId": task_id})
                assert refused["error"]["code"] == -32602
            # A blocking tasks/result on B wakes when A stores the result.
            waiting = asyncio.ensure_future(post(pb, sid, 6, "tasks/result",
                                                 {"taskId": task_id}))
            await asyncio.sleep(0.3)
            assert not waiting.done()
            release.set()
            result = (await waiting)["result"]
            assert result["content"][0]["text"] == "done"
            assert result["_meta"]["io.modelcontextprotocol/related-task"] == {
                "taskId": task_id}
            # A cancel on B answers the cancelled Task; the handler on A stops.
            created = await post(pa, sid, 7, "tools/call",
                                 {"name": "forever", "arguments": {}, "task": {}})
            forever_id = created["result"]["task"]["taskId"]
            cancelled = await post(pb, sid, 8, "tasks/cancel", {"taskId": forever_id})
            assert cancelled["result"]["status"] == "cancelled"
            await asyncio.wait_for(a_host.stopped.wait(), TIMEOUT)
            again = await post(pb, sid, 9, "tasks/cancel", {"taskId": forever_id})
            assert again["error"]["code"] == -32602  # already terminal
            listed = await post(pb, sid, 10, "tasks/list", {})
            assert [(t["taskId"], t["status"]) for t in listed["result"]["tasks"]] == [
                (task_id, "completed"), (forever_id, "cancelled")]
            assert b_host.ran == []
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_the_shared_asgi_application_shares_its_tasks(stores_factory: Any) -> None:  # noqa: F811
    """``asgi.app(server, stores=...)`` shares the tasks as ``start_http`` does."""
    from mcp_sansio.adapters import asgi

    from tests.asgi.test_asgi import post
    from tests.http_stories import stateless, tool_call

    caps = {"io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}}}

    def answer(call: Any) -> dict[str, Any]:
        messages = (call.sse() if call.headers["content-type"] == "text/event-stream"
                    else [call.json()])
        return messages[-1]  # type: ignore[no-any-return]

    async def main() -> None:
        release = asyncio.Event()
        a_host, b_host = Host(), Host()
        async with stores_factory() as one, stores_factory() as two:
            a = asgi.app(make_server(one, release, a_host, explicit=False), stores=one)
            b = asgi.app(make_server(two, release, b_host, explicit=False), stores=two)
            try:
                body, headers = tool_call("slow", {}, 1, **caps)
                created = answer(await post(a, body, list(headers.items())).run())["result"]
                assert created["resultType"] == "task", created
                release.set()
                for n in range(TIMEOUT * 20):
                    body, headers = stateless("tasks/get", {"taskId": created["taskId"]},
                                              2 + n, created["taskId"], **caps)
                    task = answer(await post(b, body, list(headers.items())).run())["result"]
                    if task["status"] == "completed":
                        break
                    await asyncio.sleep(0.05)
                assert task["result"]["content"][0]["text"] == "done"
                assert a_host.ran == ["slow"] and b_host.ran == []
            finally:
                for app in (a, b):
                    await app.aclose()  # writes the last records, leaves the bus
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_servers_started_again_share_their_tasks_again() -> None:
    """Stopping a shared server closes its task sharing (the last records written, the bus
    left); the same servers started again subscribe afresh: an update taken by one still
    reaches the handler on the other."""
    from mcp_sansio.stores import MemoryStores

    async def main() -> None:
        stores = MemoryStores()
        release = asyncio.Event()
        a_host, b_host = Host(), Host()
        servers = [make_server(stores, release, a_host, explicit=False),
                   make_server(stores, release, b_host, explicit=False)]
        for round_ in range(2):
            async with start_http(servers[0], stores=stores) as a, \
                    start_http(servers[1], stores=stores) as b:
                on_a, on_b = Client(await Conn.open(a.port)), Client(await Conn.open(b.port))
                created = await on_a.result("tools/call", {"name": "ask", "arguments": {}})
                await until_status(on_b, created["taskId"], "input_required")
                await on_b.result("tasks/update", {
                    "taskId": created["taskId"], "inputResponses": {"elicitation": {
                        "action": "accept", "content": {"name": f"round {round_}"}}}})
                done = await until_status(on_b, created["taskId"], "completed")
                assert done["result"]["content"][0]["text"] == f"hello round {round_}"
                await on_a.conn.close()
                await on_b.conn.close()
        assert a_host.ran == ["ask", "ask"] and b_host.ran == []
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))


def test_another_principals_task_is_unknown_on_every_worker(stores_factory: Any  # noqa: F811
                                                            ) -> None:
    """Protected workers (auth=): a 2026-07-28 task created for one principal is unknown
    (-32602) to another on either worker, its id notwithstanding; its own principal polls it
    on the other worker."""
    from mcp_sansio.auth import AccessInfo, InvalidToken, ProtectedResource

    class Verifier:
        def verify(self, token: str, now: float) -> AccessInfo:
            if token not in ("alice", "bob"):
                raise InvalidToken("not a token we know")
            return AccessInfo(subject=token)

    async def as_(who: str, port: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from tests.http_stories import stateless

        name = params.get("name", params.get("taskId"))
        body, headers = stateless(method, params, 1, name, **{
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": {"io.modelcontextprotocol/tasks": {}}}})
        conn = await Conn.open(port)
        try:
            status, _, messages = await conn.request(
                "POST", body, {**headers, "authorization": f"Bearer {who}"})
        finally:
            await conn.close()
        assert status in (200, 400), (status, messages)  # 2026-07-28: an error is a 400
        return messages[-1]  # type: ignore[no-any-return]

    async def main() -> None:
        release = asyncio.Event()
        a_host, b_host = Host(), Host()
        async with stores_factory() as one, stores_factory() as two:
            auth = ProtectedResource("http://127.0.0.1/mcp", ["https://as.example"],
                                     Verifier())
            async with start_http(make_server(one, release, a_host, explicit=False),
                                  stores=one, auth=auth) as a, \
                    start_http(make_server(two, release, b_host, explicit=False),
                               stores=two, auth=auth) as b:
                created = (await as_("alice", a.port, "tools/call",
                                     {"name": "slow", "arguments": {}}))["result"]
                task_id = created["taskId"]
                for port in (a.port, b.port):
                    refused = await as_("bob", port, "tasks/get", {"taskId": task_id})
                    assert refused["error"]["code"] == -32602, refused
                    refused = await as_("bob", port, "tasks/cancel", {"taskId": task_id})
                    assert refused["error"]["code"] == -32602, refused
                got = await as_("alice", b.port, "tasks/get", {"taskId": task_id})
                assert got["result"]["status"] == "working"
                release.set()
                assert a_host.ran == ["slow"] and not a_host.stopped.is_set()
    asyncio.run(asyncio.wait_for(main(), TIMEOUT))
