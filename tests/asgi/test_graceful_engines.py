"""Graceful shutdown under the ASGI engines: ``serve-example --transport http --engine E``
(uvicorn, hypercorn on asyncio and trio workers, granian), SIGTERM sent to the server's
process -- as a supervisor does -- while CALLS calls of ``sleep(1)`` are in flight (each has
streamed progress). The engine stops through the ASGI lifespan, which closes our
application (``aclose``). Every call in flight ends at the client -- answered, or failed
with a clear error -- none hangs; the process exits with the engine's status for a stop by
SIGTERM (:data:`STATUS`), without a traceback."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from typing import Any

import pytest

from tests.asgi.test_asgi_engines import ENGINES, START
from tests.paths import ROOT

CALLS = 4  # in flight when SIGTERM comes
WAIT = 60.0  # a bound for a failing test only: a call still running then "hung"
#: The exit status after a graceful stop by SIGTERM: 0 on every engine (uvicorn raises the
#: signal again once done; serve-example's handler for it lets the run end normally).
STATUS = {"uvicorn": 0, "hypercorn": 0, "granian": 0}


async def calls_across_a_sigterm(url: str, proc: subprocess.Popen[str]) -> list[Any]:
    from mcp_sansio.adapters.asyncio import connect_http

    reporting: set[int] = set()
    all_started = asyncio.Event()

    def progress_of(i: int) -> Any:
        def progress(value: float, total: float | None, message: str | None) -> None:
            reporting.add(i)
            if len(reporting) == CALLS:
                all_started.set()
        return progress

    async with connect_http(url, request_timeout=WAIT) as client:
        calls = [asyncio.ensure_future(client.call_tool("sleep", {"seconds": 1.0},
                                                        progress=progress_of(i)))
                 for i in range(CALLS)]
        await asyncio.wait_for(all_started.wait(), START)
        proc.send_signal(signal.SIGTERM)
        _, pending = await asyncio.wait(calls, timeout=WAIT)
        for call in pending:
            call.cancel()
        return ["hung" if call in pending else
                call.exception() or call.result()["content"][0]["text"] for call in calls]


@pytest.mark.parametrize(("engine", "runtime"), ENGINES)
def test_sigterm_under_traffic_on_an_engine(engine: str, runtime: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_sansio", "serve-example", "--transport", "http",
         "--runtime", runtime, "--engine", engine],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        cwd=ROOT)
    err: list[str] = []
    drain = threading.Thread(target=lambda: err.extend(proc.stderr or ()), daemon=True)
    drain.start()
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, "".join(err))
        outcomes = asyncio.run(calls_across_a_sigterm(url, proc))
        status = proc.wait(WAIT)
        drain.join(WAIT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    stderr = "".join(err)
    sys.stderr.write(f"figures {engine}-{runtime}: status {status}, {outcomes!r}\n")
    assert "hung" not in outcomes, (outcomes, stderr)
    for outcome in outcomes:  # answered, or a clear error at the client
        assert outcome == "slept 1 s" or (isinstance(outcome, Exception) and str(outcome)), \
            outcome
    assert status == STATUS[engine], stderr
    assert "Traceback" not in stderr, stderr
