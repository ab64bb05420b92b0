"""The async HTTP client adapters (asyncio, trio) checked alike, each against its own
runtime's HTTP server over loopback (the two have the same API): both eras in JSON and SSE
response modes (keep-alive, progress, calls at once), the handshake era's notifications and
server requests, a per-call timeout, a listen stream, ``input_required`` answered and
retried, pending calls when the server goes away, connecting to nothing, a forgotten session
renewed, the legacy HTTP+SSE fallback, ``DELETE`` on close, many sessions at once and HTTPS.
(What is particular to one runtime -- its way of cancelling a call, say -- is in
tests/adapters/asyncio/test_http_client_asyncio.py and test_http_trio.py.)"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from mcp_sansio import Era
from mcp_sansio.app.server import Server
from mcp_sansio.http import ResponseMode, SessionRenewed, Transport
from tests.http_stories import (
    ERAS,
    GUARD,
    HAIKU,
    add_tools,
    block_tool,
    elicit,
    self_signed,
    tls_front,
)

trio = pytest.importorskip("trio")


class Runtime:
    """One runtime: its adapter module, events, sleep and ``run``."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == "asyncio":
            from mcp_sansio.adapters import asyncio as adapter
            self.sleep: Callable[[float], Any] = asyncio.sleep
            self.event: Callable[[], Any] = asyncio.Event
        else:
            from mcp_sansio.adapters import trio as adapter  # type: ignore[no-redef]
            self.sleep, self.event = trio.sleep, trio.Event
        self.adapter: Any = adapter

    def run(self, main: Callable[[], Any]) -> None:
        """``main()`` on the runtime, bounded by :data:`GUARD` (a hang, not a measurement)."""
        if self.name == "asyncio":
            asyncio.run(asyncio.wait_for(main(), GUARD))
            return

        async def guarded() -> None:
            with trio.fail_after(GUARD):
                await main()
        trio.run(guarded)

    async def raised_by(self, call: Callable[[], Any], meanwhile: Callable[[], Any]
                        ) -> BaseException | None:
        """Run ``call()`` in a task of its own while ``meanwhile()`` runs here; what the call
        raised (None: it returned)."""
        raised: list[BaseException] = []

        async def calling() -> None:
            try:
                await call()
            except Exception as exc:  # returned to the test
                raised.append(exc)

        if self.name == "asyncio":
            task = asyncio.ensure_future(calling())
            await meanwhile()
            await task
        else:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(calling)
                await meanwhile()
        return raised[0] if raised else None

    async def gather(self, *calls: Callable[[], Any]) -> list[Any]:
        """Run the calls at once (a task each); their results, in order."""
        if self.name == "asyncio":
            return list(await asyncio.gather(*(call() for call in calls)))
        results: list[Any] = [None] * len(calls)

        async def one(i: int, call: Callable[[], Any]) -> None:
            results[i] = await call()

        async with trio.open_nursery() as nursery:
            for i, call in enumerate(calls):
                nursery.start_soon(one, i, call)
        return results

    async def sample(self, params: dict[str, Any]) -> dict[str, Any]:
        await self.sleep(0)
        return HAIKU


@pytest.fixture(params=["asyncio", "trio"])
def rt(request: pytest.FixtureRequest) -> Runtime:
    return Runtime(request.param)


class Probe:
    """What the ``block`` tool saw (made in the running loop)."""

    def __init__(self, rt: Runtime) -> None:
        self.started = rt.event()
        self.cancelled = rt.event()


def make_server(rt: Runtime, probe: Probe) -> Server:
    server = Server("client-runtimes")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    @server.tool()
    async def add_later(a: int, b: int) -> int:
        await rt.sleep(0)  # suspends: the answer comes after the request was processed
        return a + b

    @server.tool()
    async def count(steps: int, ctx: Any) -> str:
        for i in range(steps):
            ctx.progress(i + 1, steps, f"step {i + 1}")
            await rt.sleep(0)
        return f"counted {steps}"

    add_tools(server, "change", "ask_name", "haiku")
    server.add_tool(block_tool(probe, rt.name))
    return server


@contextlib.asynccontextmanager
async def served(rt: Runtime, probe: Probe, server_options: dict[str, Any] | None = None,
                 **client_options: Any) -> AsyncIterator[tuple[Any, Any]]:
    async with rt.adapter.start_http(make_server(rt, probe), **(server_options or {})
                                     ) as service, \
            rt.adapter.connect_http(service.url, **client_options) as client:
        yield service, client


def rtext(result: dict[str, Any]) -> str:
    """The text of a tool result."""
    return str(result["content"][0]["text"])


@pytest.mark.parametrize("mode", [ResponseMode.SSE, ResponseMode.JSON])
@pytest.mark.parametrize("era", ERAS)
def test_both_eras_and_response_modes(rt: Runtime, era: str, mode: ResponseMode) -> None:
    async def main() -> None:
        async with served(rt, Probe(rt), {"response_mode": mode}, era=ERAS[era]
                          ) as (_, client):
            assert isinstance(client, rt.adapter.HTTPClientSession)
            assert client.era is (Era.HANDSHAKE if era == "handshake" else Era.STATELESS)
            assert client.transport is Transport.STREAMABLE
            assert (client.session_id is not None) is (era == "handshake")
            assert client.server_info["name"] == "client-runtimes"
            names = {t["name"] for t in await client.list_tools()}
            assert {"echo", "add_later", "count", "block"} <= names
            assert rtext(await client.call_tool("echo", {"text": "hi"}, timeout=10)) == "hi"
            opened = client.connections_opened
            for i in range(5):  # one after the other: the same kept-alive connection
                assert rtext(await client.call_tool("echo", {"text": str(i)})) == str(i)
                assert rtext(await client.call_tool("add_later", {"a": i, "b": 0})) == str(i)
            assert client.connections_opened == opened
            seen: list[tuple[float, float | None, str | None]] = []
            result = await client.call_tool(
                "count", {"steps": 3}, progress=lambda *p: seen.append(p))
            assert rtext(result) == "counted 3"
            if mode is ResponseMode.SSE:  # a JSON answer has no room for progress
                assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
            # several calls at once, on as many connections as the client needs (answered
            # at once, and after a suspension)
            got = await rt.gather(*(
                functools.partial(client.call_tool, "echo", {"text": str(i)}) if i % 2 else
                functools.partial(client.call_tool, "add_later", {"a": i, "b": 0})
                for i in range(40)))
            assert [rtext(r) for r in got] == [str(i) for i in range(40)]
    rt.run(main)


def test_handshake_era_notifications_reach_on_notification(rt: Runtime) -> None:
    async def main() -> None:
        seen: list[str] = []
        arrived = rt.event()

        def on_notification(note: Any) -> None:
            seen.append(note.method)
            arrived.set()

        async with served(rt, Probe(rt), era=Era.HANDSHAKE,
                          on_notification=on_notification) as (_, client):
            await client.call_tool("change", {})
            await arrived.wait()  # on the standalone GET stream
            assert seen == ["notifications/tools/list_changed"]
    rt.run(main)


def test_handshake_era_server_requests_reach_the_callbacks(rt: Runtime) -> None:
    async def main() -> None:
        async with served(rt, Probe(rt), era=Era.HANDSHAKE, elicitation=elicit,
                          sampling=rt.sample) as (_, client):
            assert rtext(await client.call_tool("ask_name", {})) == "hello Ada"
            assert rtext(await client.call_tool("haiku", {})) == "old pond, frog"
    rt.run(main)


@pytest.mark.parametrize("mode", [ResponseMode.SSE, ResponseMode.JSON])
@pytest.mark.parametrize("era", ERAS)
def test_pending_calls_fail_when_the_server_goes_away(rt: Runtime, era: str,
                                                      mode: ResponseMode) -> None:
    async def main() -> None:
        probe = Probe(rt)
        async with served(rt, probe, {"response_mode": mode}, era=ERAS[era]
                          ) as (service, client):
            async def going_away() -> None:
                await probe.started.wait()
                await service.aclose()  # sockets dropped, nothing listens any more

            raised = await rt.raised_by(
                lambda: client.call_tool("block", {}, timeout=None), going_away)
            # A resumable stream (handshake era, SSE) is tried once more after the server's
            # retry delay; the refused connection ends the call there.
            assert isinstance(raised, rt.adapter.HTTPTransportError), raised
            assert "HTTP transport failure" in str(raised)
            # the next call fails at once: nothing to connect to
            with pytest.raises(rt.adapter.HTTPTransportError, match="cannot connect"):
                await client.call_tool("echo", {"text": "x"})
    rt.run(main)


def test_per_call_timeout(rt: Runtime) -> None:
    async def main() -> None:
        probe = Probe(rt)
        async with served(rt, probe) as (_, client):
            with pytest.raises(rt.adapter.RequestTimeout):
                await client.call_tool("block", {}, timeout=0.2)
            await probe.cancelled.wait()
    rt.run(main)


def test_listen_stream_receives_list_changes(rt: Runtime) -> None:
    async def main() -> None:
        async with served(rt, Probe(rt)) as (_, client):
            assert client.era is Era.STATELESS
            async with await client.listen({"toolsListChanged": True}) as subscription:
                assert subscription.acknowledged == {"toolsListChanged": True}
                await client.call_tool("change", {})
                note = await anext(subscription)
                assert note.method == "notifications/tools/list_changed"
    rt.run(main)


def test_stateless_era_input_required_is_answered_and_retried(rt: Runtime) -> None:
    async def main() -> None:
        async with served(rt, Probe(rt), elicitation=elicit, sampling=rt.sample) as (_, client):
            assert client.era is Era.STATELESS
            assert rtext(await client.call_tool("ask_name", {})) == "hello Ada"
            assert rtext(await client.call_tool("haiku", {})) == "old pond, frog"
    rt.run(main)


def test_connecting_to_nothing_fails_clearly(rt: Runtime) -> None:
    async def main() -> None:
        async with rt.adapter.start_http(make_server(rt, Probe(rt))) as service:
            url = service.url
        with pytest.raises(rt.adapter.ConnectionClosedError, match="cannot connect"):
            async with rt.adapter.connect_http(url):
                pass  # pragma: no cover
    rt.run(main)


def test_a_forgotten_session_is_renewed_and_the_call_retried(rt: Runtime) -> None:
    async def main() -> None:
        probe = Probe(rt)
        renewed: list[Any] = []
        async with contextlib.AsyncExitStack() as outer:
            service = await outer.enter_async_context(
                rt.adapter.start_http(make_server(rt, probe)))
            port = service.port
            client = await outer.enter_async_context(
                rt.adapter.connect_http(service.url, era=Era.HANDSHAKE))
            client.on_transport_event = renewed.append
            first = client.session_id
            await service.aclose()
            # the same port, a new server: it knows no session
            async with rt.adapter.start_http(make_server(rt, probe), port=port) as again:
                assert rtext(await client.call_tool("echo", {"text": "again"})) == "again"
                assert client.session_id is not None and client.session_id != first
                assert client.session_renewals == 1
                assert [type(e) for e in renewed] == [SessionRenewed]
                assert list(again.http.sessions) == [client.session_id]
                await client.aclose()  # while the new server listens: its DELETE arrives
                assert again.http.sessions == {}
    rt.run(main)


def test_legacy_http_sse_fallback(rt: Runtime) -> None:
    async def main() -> None:
        probe = Probe(rt)
        # A 2024-11-05 server: only the legacy transport, at its own paths.
        async with rt.adapter.start_http(make_server(rt, probe), path="/streamable",
                                         legacy_sse_path="/mcp",
                                         connection_options={"versions": ["2024-11-05"]}
                                         ) as service:
            url = f"http://127.0.0.1:{service.port}/mcp"
            async with rt.adapter.connect_http(url) as client:  # probe, initialize, legacy
                assert client.transport is Transport.LEGACY
                assert client.protocol_version == "2024-11-05"
                assert rtext(await client.call_tool("echo", {"text": "old"})) == "old"
                # HTTP+SSE cannot be resumed: the server going away ends the session
                async def going_away() -> None:
                    await probe.started.wait()
                    await service.aclose()

                raised = await rt.raised_by(
                    lambda: client.call_tool("block", {}, timeout=None), going_away)
                assert isinstance(raised, rt.adapter.ConnectionClosedError), raised
                assert client.closed is not None
    rt.run(main)


def test_close_sends_delete_and_ends_the_session(rt: Runtime) -> None:
    async def main() -> None:
        async with rt.adapter.start_http(make_server(rt, Probe(rt))) as service:
            async with rt.adapter.connect_http(service.url, era=Era.HANDSHAKE) as client:
                sid = client.session_id
                assert sid in service.http.sessions
            assert sid not in service.http.sessions  # DELETE ended it
            assert not client.sockets.open
            with pytest.raises(rt.adapter.ConnectionClosedError):
                await client.ping()
    rt.run(main)


def test_many_client_sessions_at_once(rt: Runtime) -> None:
    async def main() -> None:
        n = 100
        async with rt.adapter.start_http(make_server(rt, Probe(rt))) as service:
            live = 0
            all_live = rt.event()

            async def one(i: int) -> str:
                nonlocal live
                async with rt.adapter.connect_http(service.url, era=Era.HANDSHAKE) as client:
                    live += 1
                    if live == n:
                        all_live.set()
                    await all_live.wait()  # every session is live at the same time
                    assert len(service.http.sessions) == n
                    return rtext(await client.call_tool("echo", {"text": str(i)}))

            got = await rt.gather(*(functools.partial(one, i) for i in range(n)))
            assert got == [str(i) for i in range(n)]
            assert service.http.sessions == {}  # each ended with DELETE
    rt.run(main)


def test_https_through_a_tls_terminating_proxy(rt: Runtime, tmp_path: Any) -> None:
    cert, key = self_signed(tmp_path)
    client_side = ssl.create_default_context(cafile=cert)

    async def main() -> None:
        async with rt.adapter.start_http(make_server(rt, Probe(rt))) as service:
            with tls_front(service.port, cert, key) as port:
                url = f"https://127.0.0.1:{port}/mcp"
                async with rt.adapter.connect_http(
                        url, era=Era.HANDSHAKE,
                        http_options={"ssl_context": client_side}) as client:
                    assert rtext(await client.call_tool("echo", {"text": "sealed"})) == "sealed"
                # without trusting the certificate: the connection is refused
                with pytest.raises(rt.adapter.ConnectionClosedError, match="cannot connect"):
                    async with rt.adapter.connect_http(url):
                        pass  # pragma: no cover
    rt.run(main)
