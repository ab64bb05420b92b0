"""Session churn under load: does a server's memory stay flat while sessions come and go?

One ``mcp-sansio serve-example --transport http`` server (``--runtime``, ``--wire``) and
``--clients`` (50) clients, each on its own keep-alive connection, each looping without pause
over one session's life: ``initialize``, ``notifications/initialized``, a ``tools/call`` of
``echo``, ``DELETE``. The server's resident set (``VmRSS`` of ``/proc/<pid>/status``, Linux) is
sampled every ``--sample`` seconds. The aim (issue "speed to the limit", cost growth): after
``--warm-up`` (five minutes) the RSS stays within 5% of its value then, to the end of
``--duration`` (one hour). The script prints the samples, the sessions per second, the RSS at
the end of the warm-up, its maximum and final value after it, and whether the aim holds.

Run (about an hour)::

    python benchmarks/churn.py --runtime asyncio

``--quick`` runs a few seconds with 4 clients: a smoke test, not a measurement. The clients
are threads of this process (``http.client``); on a small machine they, not the server, bound
the churn rate, which does not matter here: what is measured is the server's memory, not its
speed. ``tests/http/test_churn.py`` is the short in-memory version (``tracemalloc``, no sockets).
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import threading
import time

ACCEPT = "application/json, text/event-stream"
VERSION = "2025-11-25"
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": VERSION, "capabilities": {},
    "clientInfo": {"name": "churn", "version": "1"}}}).encode()
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
CALL = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"text": "hello"}}}).encode()


def rss_kib(pid: int) -> int:
    """The resident set of ``pid`` in KiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def spawn(runtime: str, wire: str) -> tuple[subprocess.Popen[str], int]:
    """The server, and its port (from the URL it prints first)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_sansio", "serve-example", "--transport", "http",
         "--runtime", runtime, "--wire", wire, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line:
        proc.kill()
        raise RuntimeError("the server did not start")
    return proc, int(line.rsplit(":", 1)[1].split("/")[0])


class Client(threading.Thread):
    """One connection, one session after another until ``stop`` is set."""

    def __init__(self, port: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.stop = stop
        self.sessions = 0
        self.errors: list[str] = []

    def _post(self, conn: http.client.HTTPConnection, body: bytes,
              headers: dict[str, str]) -> http.client.HTTPResponse:
        conn.request("POST", "/mcp", body, {"Accept": ACCEPT,
                                            "Content-Type": "application/json", **headers})
        response = conn.getresponse()
        response.read()
        return response

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self.stop.is_set():
            try:
                opened = self._post(conn, INITIALIZE, {})
                session = opened.getheader("Mcp-Session-Id")
                if opened.status != 200 or session is None:
                    raise RuntimeError(f"initialize: {opened.status}")
                headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": VERSION}
                self._post(conn, INITIALIZED, headers)
                called = self._post(conn, CALL, headers)
                if called.status != 200:
                    raise RuntimeError(f"tools/call: {called.status}")
                conn.request("DELETE", "/mcp", headers=headers)
                gone = conn.getresponse()
                gone.read()
                if gone.status >= 300:
                    raise RuntimeError(f"DELETE: {gone.status}")
                self.sessions += 1
            except (OSError, RuntimeError, http.client.HTTPException) as exc:
                self.errors.append(str(exc))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runtime", default="asyncio", choices=["asyncio", "trio", "threading"])
    parser.add_argument("--wire", default="h11", choices=["h11", "httptools"])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=3600.0, help="seconds in all")
    parser.add_argument("--warm-up", type=float, default=300.0,
                        help="seconds before the reference RSS is taken")
    parser.add_argument("--sample", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--quick", action="store_true", help="a smoke run (seconds, 4 clients)")
    args = parser.parse_args()
    if args.quick:
        args.clients, args.duration, args.warm_up, args.sample = 4, 4.0, 1.5, 0.5
    proc, port = spawn(args.runtime, args.wire)
    stop = threading.Event()
    clients = [Client(port, stop) for _ in range(args.clients)]
    try:
        for client in clients:
            client.start()
        start = time.monotonic()
        samples: list[tuple[float, int, int]] = []  # (seconds, RSS KiB, sessions so far)
        while (elapsed := time.monotonic() - start) < args.duration:
            time.sleep(min(args.sample, max(0.0, args.duration - elapsed)))
            samples.append((time.monotonic() - start, rss_kib(proc.pid),
                            sum(c.sessions for c in clients)))
            print(f"{samples[-1][0]:8.1f} s  RSS {samples[-1][1]:8d} KiB  "
                  f"sessions {samples[-1][2]:9d}", flush=True)
    finally:
        stop.set()
        for client in clients:
            client.join(10)
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    errors = [e for c in clients for e in c.errors]
    after = [s for s in samples if s[0] >= args.warm_up]
    reference = next((s for s in samples if s[0] >= args.warm_up), samples[-1])
    sessions = samples[-1][2]
    peak = max(s[1] for s in after) if after else reference[1]
    print(f"\n# {args.runtime}/{args.wire}, {args.clients} clients, {args.duration:.0f} s: "
          f"{sessions} sessions ({sessions / samples[-1][0]:.0f}/s), {len(errors)} errors"
          + (f" (first: {errors[0]})" if errors else ""))
    print(f"RSS after warm-up ({reference[0]:.0f} s): {reference[1]} KiB; after it: max "
          f"{peak} KiB ({peak / reference[1]:.3f}x), final {samples[-1][1]} KiB "
          f"({samples[-1][1] / reference[1]:.3f}x)")
    print(f"aim RSS within 5% of its warm-up value: "
          f"{'met' if peak <= reference[1] * 1.05 else 'NOT met'}")
    return 1 if errors and not sessions else 0


if __name__ == "__main__":
    sys.exit(main())
