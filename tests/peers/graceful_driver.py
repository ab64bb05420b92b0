"""Subprocess driver for tests/adapters/common/test_graceful_shutdown.py.

``serve RUNTIME``: serve the example server over HTTP with the runtime's ``run_http`` (the
graceful stop), print the URL, exit with what ``run_http`` leaves (0).

``interrupt RUNTIME TRIES SEED``: TRIES times, serve the example server in this process and
SIGINT ourselves after a random delay (0-250 ms: while starting, idle, inside accept, mid
request, mid stream, while stopping) under traffic from a thread (connections opened and
dropped, tool calls that sleep and stream progress); print one JSON line of counts.
Anything escaping the serve is counted by type, and its traceback printed on stderr.
"""

from __future__ import annotations

import collections
import http.client
import importlib
import json
import os
import random
import signal
import sys
import threading
import time
import traceback

from mcp_sansio.adapters.common.graceful import serve_until_signal
from mcp_sansio.adapters.tools import _example_server


def serve(runtime: str) -> int:
    adapter = importlib.import_module(f"mcp_sansio.adapters.{runtime}")
    server = _example_server.build(_example_server._sleep_for(runtime))
    adapter.run_http(server, "127.0.0.1", 0)
    return 0


def _traffic(port_box: dict[str, int], stop: threading.Event, rng: random.Random) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "sleep", "arguments": {"seconds": 0.3},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "progressToken": 1}}})
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
               "Mcp-Name": "sleep"}
    while not stop.is_set():
        port = port_box.get("port")
        if port is None:
            time.sleep(0.002)
            continue
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            if rng.random() < 0.3:
                conn.connect()  # opened and dropped: the server is inside accept
            else:
                conn.request("POST", "/mcp", body, headers)
                conn.getresponse().read(rng.choice([0, 64, 100000]))
        except (OSError, http.client.HTTPException):
            time.sleep(0.002)
        finally:
            conn.close()


def interrupt(runtime: str, tries: int, seed: int) -> int:
    adapter = importlib.import_module(f"mcp_sansio.adapters.{runtime}")
    server = _example_server.build(_example_server._sleep_for(runtime))
    rng = random.Random(seed)
    counts: collections.Counter[str] = collections.Counter()
    for _ in range(tries):
        port_box: dict[str, int] = {}
        stop = threading.Event()
        delay = rng.uniform(0.0, 0.25)
        traffic = threading.Thread(target=_traffic, args=(port_box, stop,
                                                          random.Random(rng.random())))
        traffic.start()

        def ready(service: object, box: dict[str, int] = port_box) -> None:
            box["port"] = service.port  # type: ignore[attr-defined]

        def fire(after: float = delay) -> None:
            time.sleep(after)
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=fire, daemon=True).start()
        try:
            got = serve_until_signal(runtime, adapter, server, "127.0.0.1", 0, on_ready=ready,
                                     shutdown_timeout=0.5)
            counts["stopped" if got == signal.SIGINT else f"signal {got}"] += 1
        except BaseException as exc:  # what the test says must never happen
            counts[type(exc).__name__] += 1
            traceback.print_exc()
        finally:
            stop.set()
            traffic.join()
    print(json.dumps(dict(counts)), flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        sys.exit(serve(sys.argv[2]))
    sys.exit(interrupt(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
