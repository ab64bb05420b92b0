"""Faults in the shared store, with a real ``redis-server`` of the test's own (tests/_redis.py)
under ``mcp-sansio serve-example --engine uvicorn --workers 2 --store URL``:

* Redis unreachable at the start: one line naming the URL, exit status 1 (our own server
  and an engine alike);
* Redis restarted while traffic flows: every request ends at the client with an answer or
  a clear error (an HTTP error status with a JSON-RPC error, or the connection closed),
  none hangs; after Redis is back, new sessions work without restarting the server;
* Redis stopped (``SIGSTOP``) for longer than the store timeout: every store call is
  bounded, a request that waits on the store is answered ``503`` with ``Retry-After``
  (an ``initialize`` too, when its new session could not be recorded), none hangs; after
  ``SIGCONT``, new sessions work.

Each traffic test counts the requests sent, answered, failed with an error, and hung (no
answer within :data:`HANG` seconds: must be none); ``pytest -s`` prints the counts."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._redis import REDIS_SERVER, RedisServer
from tests.asgi.test_asgi_shared_engines import Engine, engine, request, session_headers, tool
from tests.http_util import init_body
from tests.paths import ROOT

#: Seconds without an answer after which a request counts as hung: far beyond the store
#: timeout (5 s) and the server's decision timeout (10 s), which bound every wait.
HANG = 30.0

pytestmark = pytest.mark.skipif(REDIS_SERVER is None and not os.environ.get("CI"),
                                reason="redis-server is not installed")


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    pytest.importorskip("redis")
    with tempfile.TemporaryDirectory(prefix="mcp-redis-faults-") as directory:
        server = RedisServer(Path(directory))
        try:
            yield server
        finally:
            if server.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(server.process.pid, signal.SIGCONT)
            server.stop()


@pytest.mark.parametrize("engine_name", [None, "uvicorn"])
def test_an_unreachable_store_at_the_start_is_one_line_and_status_1(
        engine_name: str | None) -> None:
    url = "redis://127.0.0.1:1/0"
    argv = [sys.executable, "-m", "mcp_sansio", "serve-example", "--transport", "http",
            "--store", url]
    if engine_name is not None:
        argv += ["--engine", engine_name, "--workers", "2"]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and url in lines[0] and "cannot reach" in lines[0], done.stderr


class Tally:
    """What became of each request sent."""

    def __init__(self) -> None:
        self.sent = self.answered = self.failed = self.hung = 0
        self.statuses: dict[int, int] = {}
        self.lock = threading.Lock()

    def count(self, outcome: str, status: int | None = None) -> None:
        with self.lock:
            self.sent += 1
            setattr(self, outcome, getattr(self, outcome) + 1)
            if status is not None:
                self.statuses[status] = self.statuses.get(status, 0) + 1

    def __repr__(self) -> str:
        return (f"sent {self.sent}, answered {self.answered}, failed with an error "
                f"{self.failed}, hung {self.hung} (statuses {self.statuses})")


def send(port: int, body: Any, headers: dict[str, str], tally: Tally) -> dict[str, Any] | None:
    """One request on a fresh connection, counted; the answer's headers (None: failed)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG)
    try:
        conn.request("POST", "/mcp", body=json.dumps(body), headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream", **headers})
        response = conn.getresponse()
        raw = response.read().decode()
    except TimeoutError:
        tally.count("hung")
        return None
    except (ConnectionError, http.client.HTTPException, OSError):
        tally.count("failed")  # the connection closed: an error the client sees at once
        return None
    finally:
        conn.close()
    if response.status >= 400:
        # a clear error: a JSON-RPC error body (or an engine's plain text for a 5xx)
        assert raw, response.status
        if response.status == 503:
            assert response.getheader("retry-after"), raw
        tally.count("failed", response.status)
        return None
    tally.count("answered", response.status)
    return {k.lower(): v for k, v in response.getheaders()}


def traffic(port: int, tally: Tally, stop: threading.Event) -> None:
    """Sessions opened and used, one request per fresh connection, until ``stop``."""
    n = 0
    while not stop.is_set():
        found = send(port, init_body(), {}, tally)
        sid = found.get("mcp-session-id") if found else None
        if sid is None:
            time.sleep(0.05)
            continue
        send(port, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             session_headers(sid), tally)
        for _ in range(3):
            n += 1
            send(port, tool(n, "echo", {"text": "x"}), session_headers(sid), tally)


def new_session_works(eng: Engine) -> None:
    tally = Tally()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = send(eng.port, init_body(), {}, tally)
        sid = found.get("mcp-session-id") if found else None
        if sid is not None and send(eng.port, tool(1, "echo", {"text": "back"}),
                                    session_headers(sid), tally) is not None:
            return
        time.sleep(0.5)
    raise AssertionError(f"no new session worked after the store came back: {tally}")


def every_worker_serves(eng: Engine, count: int) -> None:
    """Until each of the ``count`` workers has answered (each started with the store up: a
    worker whose own start meets the fault fails to start, and uvicorn then stops them all)."""
    pids = set()
    for _ in range(200):
        pids.add(request(eng, "POST", init_body())[3])
        if len(pids) == count:
            return
    raise AssertionError(f"only {pids} of {count} workers answered")


def under_fault(eng: Engine, fault: Any, heal: Any, seconds: float) -> Tally:
    every_worker_serves(eng, 2)
    tally = Tally()
    stop = threading.Event()
    runners = [threading.Thread(target=traffic, args=(eng.port, tally, stop)) for _ in range(3)]
    for runner in runners:
        runner.start()
    try:
        time.sleep(1.0)
        fault()
        time.sleep(seconds)
        heal()
        time.sleep(1.0)
    finally:
        stop.set()
        for runner in runners:
            runner.join(HANG * 3)
    sys.stdout.write(f"\n{tally}\n")
    return tally


def test_redis_restarted_while_traffic_flows(redis: RedisServer) -> None:
    with engine("uvicorn", 2, redis.url) as eng:
        directory = redis.socket.parent

        def restart() -> None:
            redis.stop()
            time.sleep(2.0)  # down for a while, then back (empty: persistence is off)
            fresh = RedisServer(directory)
            redis.process = fresh.process

        tally = under_fault(eng, restart, lambda: None, 2.0)
        assert tally.hung == 0 and tally.sent > 0 and tally.failed > 0, tally
        new_session_works(eng)


def test_redis_stopped_past_the_store_timeout(redis: RedisServer) -> None:
    with engine("uvicorn", 2, redis.url) as eng:
        def stop() -> None:
            os.kill(redis.process.pid, signal.SIGSTOP)

        def resume() -> None:
            os.kill(redis.process.pid, signal.SIGCONT)

        tally = under_fault(eng, stop, resume, 12.0)
        assert tally.hung == 0 and tally.sent > 0, tally
        # What fails says "try again": 503 with Retry-After, for a request that waited on
        # the store (a lookup, or an initialize whose new session could not be recorded --
        # never a 404 later for a session no other worker could find).
        failures = {status for status in tally.statuses if status >= 400}
        assert failures <= {503}, tally
        new_session_works(eng)
