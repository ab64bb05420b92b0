"""A worker killed while it runs a call does not strand the client: an engine's workers on
a real Redis (tests/_redis.py), ``mcp-sansio serve-example --engine E --workers N --store
URL``. A client calls ``sleep`` (60 s, with progress); once
the call runs, every worker holding one of the client's connections is killed (SIGKILL), the
one running the call among them. The client resumes the call's stream on a worker that is
alive; once that worker counts the killed one gone (its heartbeats stopped), it ends the
call with a JSON-RPC error on the stream, in the killed worker's place
(mcp_sansio/http/_stranded.py). The call ends at the client with that error -- for the
official SDK's client (legacy and auto modes) and ours -- within :data:`BOUND` seconds of
the kill, and the session carries on. (In the 2026-07-28 era -- the SDK's auto mode -- a
request lives on its stream: the broken connection ends the call at once.)

uvicorn (four workers) and granian (two) run it. Two traits of granian's worker model are
the engine's, not ours, and the test keeps clear of them as a deployment must
(docs/deploying.rst, "Many workers with Redis"): each granian worker listens on a socket of
its own (``SO_REUSEPORT``), so a connection the kernel queued on a worker as it dies is
reset unless ``net.ipv4.tcp_migrate_req`` is 1 (a client's next request waits until the
killed workers are gone: the SDK's client in auto mode stops altogether on such a reset);
and granian stops the whole server when a worker it started again less than 5.5 s ago dies
(its crash-loop guard: each story starts once every worker is older than :data:`SETTLED`).
When every worker was killed, ours may try its resumption before one is listening again:
a refused connection ends the call at once with that error (its design: an unreachable
server is not waited for), as clear and as final as the other."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sansio import Era
from tests._redis import RedisServer, redis_server  # noqa: F401  (the fixture)
from tests.asgi.test_asgi_shared_engines import Engine, engine

if not Path("/proc/net/tcp").exists():  # pragma: no cover - Linux has it
    pytest.skip("finding the workers of connections needs Linux's /proc",
                allow_module_level=True)

#: Seconds from the kill to the call's end at the client: the workers' heartbeat timeout
#: (15 s) plus a check (1 s) and a resumption (1 s), with room to spare -- the bound the
#: issue asks for; a stranded call (the failure) waits for ever.
BOUND = 20.0
ENGINES = [("uvicorn", 4), ("granian", 2)]
CLIENTS = ["sdk-legacy", "sdk-auto", "ours"]
#: Seconds every worker has run before a story kills one: past granian's crash-loop guard
#: (a worker respawned 5.5 s ago or less that dies stops the server).
SETTLED = 6.0
#: Seconds to wait for the workers to be settled, or for the killed ones to be gone.
WAIT = 60.0


def our_connections(eng: Engine) -> list[int]:
    """The local ports of this process's connections to the engine."""
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if (fields[9] in inodes and fields[3] == "01"  # ESTABLISHED
                        and int(fields[2].rsplit(":", 1)[1], 16) == eng.port):
                    ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def kill_our_workers(eng: Engine) -> set[int]:
    doomed = set()
    for port in our_connections(eng):
        with contextlib.suppress(AssertionError):
            doomed.add(eng.worker_of(port))
    doomed.discard(eng.proc.pid)
    for pid in doomed:
        os.kill(pid, signal.SIGKILL)
    return doomed


def gone(pid: int) -> bool:
    """Whether ``pid`` is gone, or a zombie (its sockets closed)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def ages(eng: Engine) -> list[float]:
    """Seconds each worker of the engine (its parent excluded) has run."""
    tick = os.sysconf("SC_CLK_TCK")
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    got = []
    for pid in eng.group():
        if pid == eng.proc.pid:
            continue
        with contextlib.suppress(OSError):
            start = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
            got.append(uptime - start / tick)
    return got


def settle(eng: Engine, workers: int) -> None:
    """Wait until the engine runs ``workers`` workers, each for :data:`SETTLED` seconds."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        running = ages(eng)
        if len(running) >= workers and min(running) >= SETTLED:
            return
        time.sleep(0.2)
    raise AssertionError(f"the engine's workers did not settle: {ages(eng)}")


async def killed_call(eng: Engine, client: str) -> dict[str, Any]:
    """The story with ``client``: the call (its worker killed), then another call."""
    import anyio

    url = f"http://127.0.0.1:{eng.port}/mcp"
    started = anyio.Event()
    got: dict[str, Any] = {}

    async def on_progress(*_: Any) -> None:
        started.set()

    async def call_and_kill(call: Any) -> None:
        async with anyio.create_task_group() as group:
            async def watch() -> None:
                await started.wait()
                got["killed"] = kill_our_workers(eng)
                got["at"] = time.monotonic()
                # The session's next request waits until the killed workers are gone (a
                # connection queued on a dying granian worker is reset: module doc).
                with anyio.fail_after(WAIT):
                    while not all(gone(pid) for pid in got["killed"]):
                        await anyio.sleep(0.01)
            group.start_soon(watch)
            try:
                with anyio.fail_after(120):
                    got["result"] = await call()
            except Exception as exc:  # what the client raises for the error
                got["error"] = exc
            got["ended"] = time.monotonic()

    if client.startswith("sdk"):
        from mcp.client.client import Client

        async with Client(url, mode=client[4:]) as c:
            await call_and_kill(lambda: c.call_tool("sleep", {"seconds": 60},
                                                    progress_callback=on_progress))
            for _ in range(20):  # the session carries on (a connection may be reset once)
                with contextlib.suppress(Exception):
                    got["after"] = (await c.call_tool("echo", {"text": "on"})).content[0].text
                    break
                await anyio.sleep(0.5)
    else:
        from mcp_sansio.adapters.asyncio import connect_http

        def progress(value: float, total: float | None, message: str | None) -> None:
            started.set()

        async with connect_http(url, era=Era.HANDSHAKE) as c:
            await call_and_kill(lambda: c.call_tool("sleep", {"seconds": 60},
                                                    progress=progress))
            for _ in range(20):
                with contextlib.suppress(Exception):
                    result = await c.call_tool("echo", {"text": "on"})
                    got["after"] = result["content"][0]["text"]
                    break
                await anyio.sleep(0.5)
    return got


@pytest.fixture(scope="module", params=ENGINES, ids=[f"{e}-{n}" for e, n in ENGINES])
def shared(request: pytest.FixtureRequest,
           redis_server: RedisServer  # noqa: F811
           ) -> Iterator[tuple[Engine, int]]:
    name, count = request.param
    pytest.importorskip(name)
    with engine(name, count, redis_server.url) as running:
        yield running, count


@pytest.mark.parametrize("client", CLIENTS)
def test_a_killed_workers_call_ends_with_an_error(shared: tuple[Engine, int],
                                                  client: str) -> None:
    eng, workers = shared
    settle(eng, workers)
    got = asyncio.run(killed_call(eng, client))
    assert got.get("killed"), got
    assert "result" not in got or getattr(got["result"], "is_error", False), got
    error = got.get("error")
    assert error is not None, got
    if client != "sdk-auto":  # (2026-07-28: the stream's end is the call's end)
        # Every worker killed (granian's two, both holding one of our connections): our
        # client's resumption may find none listening yet, and a refused connection ends
        # its call at once, saying so (the server unreachable: no backoff is spent on it).
        unreachable = (client == "ours" and len(got["killed"]) >= workers
                       and "cannot connect" in str(error))
        assert "outcome is unknown" in str(error) or unreachable, error
    assert got["ended"] - got["at"] < BOUND, got  # the bound the issue sets (module doc)
    assert got.get("after") == "on", got
