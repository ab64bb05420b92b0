"""Keepalive: the opt-in ping schedule (``mcp_sansio/app/keepalive.py``) on a virtual clock, then
both roles end to end over stdio with a peer that stops answering."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_sansio.adapters import asyncio as aio
from mcp_sansio.adapters import threading as thr

from mcp_sansio import Era
from mcp_sansio.app.keepalive import DEFAULT_MAX_MISSED, Keepalive
from tests.virtual_sessions import Pair

# -- the state machine alone ------------------------------------------------------------------


def test_schedule() -> None:
    keepalive = Keepalive(10.0, max_missed=2)
    assert keepalive.deadline() is None and not keepalive.due(100.0)  # not started
    keepalive.start(5.0)
    keepalive.start(7.0)  # starting again changes nothing
    assert keepalive.deadline() == 15.0
    assert not keepalive.due(14.9) and keepalive.due(15.0)
    keepalive.sent(15.0)
    assert keepalive.deadline() is None and not keepalive.due(99.0)  # one in flight
    keepalive.answered()
    assert keepalive.deadline() == 25.0
    keepalive.sent(25.0)
    assert not keepalive.missed()
    assert keepalive.due(35.0)  # the next is due when the missed one timed out
    keepalive.sent(35.0)
    assert keepalive.missed()


def test_bad_settings_refused() -> None:
    for interval in (0, -1.0, float("nan")):
        with pytest.raises(ValueError):
            Keepalive(interval)
    with pytest.raises(ValueError):
        Keepalive(1.0, max_missed=0)
    assert Keepalive(1.0).max_missed == DEFAULT_MAX_MISSED


@given(st.lists(st.booleans(), max_size=30), st.integers(1, 5))
def test_closes_after_max_missed_in_a_row(answers: list[bool], max_missed: int) -> None:
    keepalive = Keepalive(1.0, max_missed)
    keepalive.start(0.0)
    now, run = 0.0, 0
    for answered in answers:
        now = keepalive.deadline() or now
        assert keepalive.due(now)
        keepalive.sent(now)
        if answered:
            keepalive.answered()
            run = 0
            continue
        run += 1
        now += keepalive.interval
        close = keepalive.missed()
        assert close == (run >= max_missed)
        if close:
            return


# -- through the sessions, on a virtual clock ----------------------------------------------------


def pings(chunks: list[bytes]) -> int:
    return sum(1 for chunk in chunks for line in chunk.splitlines()
               if json.loads(line).get("method") == "ping")


def test_client_pings_and_closes_when_the_server_goes_silent() -> None:
    pair = Pair(client_options={"keepalive": 10.0, "keepalive_misses": 2})
    pair.connect(Era.HANDSHAKE)
    assert pair.client.keepalive is not None
    for _ in range(3):  # answered pings: nothing happens
        pair.advance(10.0)
    assert pings(pair.client.written) == 3 and pair.client.keepalive.misses == 0
    written = len(pair.client.written)
    # The server is gone from here on: nothing the client writes reaches it.
    call = pair.client._start_call("ping", None, timeout=None)  # pending when it closes
    for _ in range(3):  # ping 1 sent; ping 1 missed, ping 2 sent; ping 2 missed: close
        pair.clock.now += 10.0
        pair.client.on_timer()
        pair.client.outbox.clear()
    assert pings(pair.client.written[written:]) == 3  # ours, then the two keepalive pings
    assert pair.client.closed is not None
    assert "2 keepalive pings" in pair.client._closed_detail()
    assert call.done  # aborted by the close
    assert pair.client.deadline is None


def test_server_pings_too() -> None:
    pair = Pair(server_session_options={"keepalive": 5.0})
    pair.connect(Era.HANDSHAKE)
    pair.advance(5.0)
    pair.advance(5.0)
    assert pings(pair.server.written) == 2
    assert pair.server.closed is None


def test_stateless_era_never_pings() -> None:
    pair = Pair(client_options={"keepalive": 1.0},
                server_options={"versions": ["2026-07-28"]})
    pair.connect(None)
    assert pair.client.conn.era is Era.STATELESS
    for _ in range(5):
        pair.advance(1.0)
    assert pings(pair.client.written) == 0
    assert pair.client.deadline is None  # nothing to wake up for


def test_off_by_default() -> None:
    pair = Pair()
    pair.connect(Era.HANDSHAKE)
    assert pair.client.keepalive is None and pair.client.deadline is None


# -- end to end: a peer that answers initialize, then nothing -----------------------------------

#: A server that completes the handshake and then reads without ever answering.
MUTE_SERVER = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {},
                  "serverInfo": {"name": "mute", "version": "1"}}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                     "result": result}) + "\\n")
        sys.stdout.flush()
"""

#: Generous: the test waits for an outcome, it does not time one.
PATIENCE = 60.0


def test_asyncio_client_closes_on_a_mute_server() -> None:
    async def main() -> Any:
        async with aio.connect_stdio([sys.executable, "-c", MUTE_SERVER], era=Era.HANDSHAKE,
                                     keepalive=0.1, keepalive_misses=2) as client:
            deadline = time.monotonic() + PATIENCE
            while client.closed is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return client._closed_detail()

    assert "2 keepalive pings" in asyncio.run(main())


def test_threads_client_closes_on_a_mute_server() -> None:
    with thr.connect_stdio([sys.executable, "-c", MUTE_SERVER], era=Era.HANDSHAKE,
                           keepalive=0.1, keepalive_misses=2) as client:
        deadline = time.monotonic() + PATIENCE
        while client.closed is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "2 keepalive pings" in client._closed_detail()


@pytest.mark.parametrize("runtime", ["asyncio", "threading", "trio"])
def test_server_ends_a_session_with_a_mute_client(runtime: str) -> None:
    script = (f"from mcp_sansio.adapters import {runtime} as rt\n"
              "rt.run_stdio(rt.Server('pinger'), keepalive=0.1, keepalive_misses=2)\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env={**os.environ})
    assert child.stdin is not None and child.stdout is not None
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mute", "version": "1"}}}
    child.stdin.write(json.dumps(hello).encode() + b"\n")
    child.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    child.stdin.flush()
    try:
        methods = []
        for line in child.stdout:  # ends when the server closes its side
            methods.append(json.loads(line).get("method"))
        assert methods.count("ping") == 2
    finally:
        child.stdin.close()
        child.wait(PATIENCE)


def test_asyncio_http_client_pings_a_handshake_era_server() -> None:
    server = aio.Server("http-pong")

    async def main() -> tuple[int, int, Any]:
        async with aio.start_http(server) as service, \
                aio.connect_http(service.url, era=Era.HANDSHAKE, keepalive=0.05) as client:
            keepalive = client.keepalive
            assert keepalive is not None
            dues = {keepalive._due}
            give_up = time.monotonic() + PATIENCE
            while len(dues) < 4 and time.monotonic() < give_up:  # three pings answered
                await asyncio.sleep(0.01)
                if not keepalive.in_flight:
                    dues.add(keepalive._due)
            return len(dues), keepalive.misses, client.closed

    schedules, misses, closed = asyncio.run(main())
    assert schedules >= 4 and misses == 0 and closed is None
