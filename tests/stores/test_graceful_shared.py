"""Graceful shutdown of a worker of shared stores (adapters/common/graceful.py step 3): a
``serve-example --store`` worker on a real Redis, stopped by SIGTERM, says "gone" on the
bus's ``workers`` topic -- the clean leave the other workers hear (adapters/stores/driver.py)
rather than a silence they must time out -- and exits 0 without a traceback. The test's
own subscription to the bus stands for the other workers."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from typing import Any

from tests._redis import RedisServer, redis_server  # noqa: F401  (the fixture)
from tests.http_stories import serve_example

WAIT = 60.0  # a bound for a failing test only


async def notes_across_a_sigterm(url: str) -> tuple[list[dict[str, Any]], int, str]:
    from mcp_sansio.adapters.redis import RedisStores

    stores = RedisStores.from_url(url)
    notes: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    unsubscribe = await stores.bus.subscribe(
        "workers", lambda topic, message: notes.put_nowait(json.loads(message)))
    proc = subprocess.Popen(serve_example("--store", url), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert (await asyncio.to_thread(proc.stdout.readline)).startswith("http://")
        seen = [await asyncio.wait_for(notes.get(), WAIT)]  # its first heartbeat
        tag = seen[0]["worker"]
        assert seen[0] == {"worker": tag, "alive": True}
        proc.send_signal(signal.SIGTERM)
        while not seen[-1].get("gone"):
            seen.append(await asyncio.wait_for(notes.get(), WAIT))
        _, err = await asyncio.to_thread(proc.communicate, timeout=WAIT)
        return [n for n in seen if n["worker"] == tag], proc.returncode, err
    finally:
        proc.kill()
        await unsubscribe()
        await stores.aclose()


def test_a_worker_stopped_by_sigterm_says_gone_to_the_others(
        redis_server: RedisServer) -> None:  # noqa: F811
    notes, status, err = asyncio.run(notes_across_a_sigterm(redis_server.url))
    tag = notes[0]["worker"]
    assert notes[-1] == {"worker": tag, "gone": True}
    assert all(note == {"worker": tag, "alive": True} for note in notes[:-1])
    assert status == 0, err
    assert "Traceback" not in err, err
