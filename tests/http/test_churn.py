"""Session churn: sessions opened, used and deleted without end cost nothing that stays.

The short version of the hour-long run (``benchmarks/churn.py``: 50 clients against a real
server, RSS within 5% of its value after the first five minutes). Here one in-memory HTTP
server (no sockets, a virtual clock) serves a stream of sessions, each opened with
``initialize``, given a ``tools/call`` and deleted with ``DELETE``, on each wire. After a
warm-up (caches, interned strings, the allocator's pools), the Python heap traced by
``tracemalloc`` may not grow with the number of sessions: a session leaked per cycle (its
connection, its streams, its id in a table) would add kilobytes per cycle, hundreds of
kilobytes over the measured cycles. The only things that hold a session's id for a while
are the wires' caches of response and request heads (``_wire._HeadCache``,
``_wire_httptools._HEADS``: bounded, each starts over once full, a sawtooth of a few hundred
KiB); the test empties them every cycle so that what is left to see is what would grow
without bound.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc

from mcp_sansio.http import _wire, _wire_httptools
from tests.http_util import Harness, RawConn
from tests.paths import ROOT

WARM_UP = 80
MEASURED = 250
#: Heap growth allowed over the measured cycles: far below one leaked session per cycle
#: (an idle session is ~4 KiB; 250 of them would be ~1 MiB).
BOUND = 32 * 1024

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hello"}}}


def _cycle(harness: Harness) -> None:
    """One session's life on its own connection: open, call, delete, hang up."""
    conn = RawConn(harness)
    session_id = harness.initialize(conn)
    headers = harness.session_headers(session_id)
    answer = conn.send(body=CALL, headers=headers)
    assert answer.status == 200, answer
    assert [m.get("result") for m in answer.messages if "id" in m] != [None], answer
    gone = conn.send("DELETE", headers=headers)
    assert gone.status in (200, 202, 204), gone
    conn.close()
    # The harness's own records of this cycle (its events and the client's side of the
    # connection) are the test's, not the server's: drop them so they are not counted.
    harness.conns.pop(conn.channel, None)
    harness.events.clear()
    harness.closed_channels.clear()
    harness.raw_out.clear()
    _wire._REQUEST_HEADS._known.clear()
    _wire._RESPONSE_HEADS._known.clear()
    _wire_httptools._HEADS.clear()


def _heap() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def test_session_churn_keeps_the_heap_flat(server_wire: str) -> None:
    harness = Harness()
    for _ in range(WARM_UP):
        _cycle(harness)
    assert not harness.server.sessions
    tracemalloc.start()
    try:
        for _ in range(WARM_UP):  # warm-up again, now traced
            _cycle(harness)
        before = _heap()
        for _ in range(MEASURED):
            _cycle(harness)
            harness.advance(0.01)  # time passes: idle timers and expiries run
        after = _heap()
    finally:
        tracemalloc.stop()
    assert not harness.server.sessions, list(harness.server.sessions)
    assert after - before < BOUND, (
        f"{server_wire}: heap grew {after - before} bytes over {MEASURED} sessions "
        f"({(after - before) / MEASURED:.0f} per session)")


def test_churn_benchmark_runs() -> None:
    # benchmarks/churn.py --quick: a few seconds against a real server (a smoke run of the
    # script, not a measurement); the server is stopped by the script.
    script = ROOT / "benchmarks" / "churn.py"
    proc = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    summary = proc.stdout.split("\n# ", 1)[1]
    assert " 0 errors" in summary, summary
    assert "aim RSS within 5% of its warm-up value" in summary, summary
