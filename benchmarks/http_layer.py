"""HTTP end to end: our HTTP client and server against a raw keep-alive socket floor and the
official SDK, side by side in one run.

What is measured, each between this process (the client) and a server process on 127.0.0.1:

* ``floor``: a server that reads an HTTP/1.1 request (head, ``Content-Length`` body),
  decodes the JSON, builds the ``tools/call`` result, encodes it and writes a
  ``Content-Length`` response on the keep-alive connection (one ``selectors`` loop, no
  framework); this side builds and parses requests and responses the same way on raw
  sockets. The cost of the sockets, two processes, minimal HTTP framing and the JSON, which
  no MCP implementation over HTTP can avoid.
* ``floor/h11``: the same floor with h11 building and parsing the HTTP on both ends (the
  server still one ``selectors`` loop, the client still blocking sockets): what any stack
  built on h11, as the core is, pays before MCP starts. Its column ``x h11`` is the ratio
  to it (paired, like ``x floor``).
* ``ours/<runtime>/<era>``: our client on asyncio, trio or threads (those whose adapter has
  ``connect_http``) against ``mcp-sansio serve-example --transport http --runtime <runtime>``
  (the same runtime on both ends, default server options):
  ``call_tool("echo", {"text": "hello"})``, in the stateless era (2026-07-28: every call is
  a self-contained POST with its ``_meta``) and in the handshake era (2025-11-25: a
  session, ``Mcp-Session-Id``).
* ``sdk/<era>``: the official Python SDK's ``Client(url, mode=...)`` against its own
  Streamable HTTP server (``tests/peers/sdk_http_server.py``: uvicorn, SSE response mode,
  the same ``echo``): ``mode="legacy"`` (handshake) and ``mode="auto"`` (2026-07-28).

Two shapes: **sequential** (one call at a time: the round-trip latency) and **10 in flight**
(10 calls started together, then all awaited: per-call cost under load; HTTP/1.1 has no
multiplexing, so each in-flight call holds a connection: the floor uses 10 connections,
our client opens up to 16 and reuses them).

Method (as benchmarks/stdio.py, but paired): every server is started once; each repetition
runs every contestant in turn (connect, a warm-up, then one timed batch of each shape with
``time.perf_counter``), so a contestant and the floor are measured moments apart and see the
same machine. Reported per contestant and shape: the median over repetitions of microseconds
per call, the minimum, and the median of the per-repetition ratios to the floor (paired).
The machine is shared and noisy: compare ratios, not absolute numbers.

Run: ``python benchmarks/http_layer.py`` (``--quick`` for a smoke run, ``--json FILE`` to save).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import gc
import importlib
import importlib.util
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "tests" / "peers"
RUNTIMES = ("asyncio", "trio", "threading")
IN_FLIGHT = 10
WARM_UP = 20
ARGS = {"text": "hello"}

FLOOR_SERVER = r"""
import json, selectors, socket, sys

listener = socket.create_server(("127.0.0.1", 0))
listener.setblocking(False)
select = selectors.DefaultSelector()
select.register(listener, selectors.EVENT_READ)
print(listener.getsockname()[1], flush=True)
buffers = {}
while True:
    for key, _ in select.select():
        sock = key.fileobj
        if sock is listener:
            conn, _ = listener.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.setblocking(False)
            select.register(conn, selectors.EVENT_READ)
            buffers[conn] = b""
            continue
        data = sock.recv(65536)
        if not data:
            select.unregister(sock)
            sock.close()
            del buffers[sock]
            continue
        buf = buffers[sock] + data
        out = []
        while (end := buf.find(b"\r\n\r\n")) >= 0:
            head = buf[:end].lower()
            at = head.find(b"content-length:")
            length = int(head[at + 15:].split(b"\r\n", 1)[0])
            if len(buf) < end + 4 + length:
                break
            request = json.loads(buf[end + 4:end + 4 + length])
            buf = buf[end + 4 + length:]
            text = request["params"]["arguments"]["text"]
            body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {
                "content": [{"type": "text", "text": text}]}}).encode()
            out.append(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                       b"content-length: %d\r\n\r\n" % len(body) + body)
        buffers[sock] = buf
        if out:
            sock.sendall(b"".join(out))
"""


#: The same floor with h11 on both ends: what any h11-based stack pays before MCP starts.
H11_FLOOR_SERVER = r"""
import json, selectors, socket, sys
import h11

listener = socket.create_server(("127.0.0.1", 0))
listener.setblocking(False)
select = selectors.DefaultSelector()
select.register(listener, selectors.EVENT_READ)
print(listener.getsockname()[1], flush=True)
conns = {}
while True:
    for key, _ in select.select():
        sock = key.fileobj
        if sock is listener:
            conn, _ = listener.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.setblocking(False)
            select.register(conn, selectors.EVENT_READ)
            conns[conn] = (h11.Connection(h11.SERVER), [])
            continue
        data = sock.recv(65536)
        if not data:
            select.unregister(sock)
            sock.close()
            del conns[sock]
            continue
        http, body = conns[sock]
        http.receive_data(data)
        out = []
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                break
            if isinstance(event, h11.Data):
                body.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                request = json.loads(b"".join(body))
                body.clear()
                text = request["params"]["arguments"]["text"]
                answer = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {
                    "content": [{"type": "text", "text": text}]}}).encode()
                out.append(http.send(h11.Response(status_code=200, headers=[
                    ("content-type", "application/json"),
                    ("content-length", str(len(answer)))])))
                out.append(http.send(h11.Data(data=answer)))
                out.append(http.send(h11.EndOfMessage()))
                http.start_next_cycle()
        if out:
            sock.sendall(b"".join(out))
"""

class Result:
    def __init__(self, name: str, shape: str) -> None:
        self.name = name
        self.shape = shape
        self.samples: list[float] = []  # microseconds per call, one per repetition
        self.ratios: list[float] = []  # to the floor of the same repetition
        self.h11_ratios: list[float] = []  # to the h11 floor of the same repetition

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


SHAPES = ("sequential", f"{IN_FLIGHT} in flight")


def spawn(command: list[str]) -> tuple[subprocess.Popen[str], str]:
    """Start a server process; its first line on stdout (URL or port)."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line:
        proc.kill()
        raise RuntimeError(f"{command} did not start")
    return proc, line


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- the floor ---------------------------------------------------------------------------------


class FloorConnection:
    """A raw keep-alive HTTP/1.1 client connection: JSON in, JSON out, Content-Length."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.next_id = 0

    def send(self) -> None:
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                           "params": {"name": "echo", "arguments": ARGS}}).encode()
        self.sock.sendall(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                          b"content-type: application/json\r\ncontent-length: %d\r\n\r\n"
                          % len(body) + body)

    def receive(self) -> Any:
        buf = self.buf
        while True:
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                head = buf[:end].lower()
                at = head.find(b"content-length:")
                length = int(head[at + 15:].split(b"\r\n", 1)[0])
                if len(buf) >= end + 4 + length:
                    self.buf = buf[end + 4 + length:]
                    return json.loads(buf[end + 4:end + 4 + length])
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the floor server closed the connection")
            buf += data

    def close(self) -> None:
        self.sock.close()


class H11FloorConnection(FloorConnection):
    """The floor's client connection with h11 building and parsing the HTTP."""

    def __init__(self, port: int) -> None:
        import h11

        super().__init__(port)
        self.h11 = h11
        self.http = h11.Connection(h11.CLIENT)

    def send(self) -> None:
        h11 = self.h11
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                           "params": {"name": "echo", "arguments": ARGS}}).encode()
        http = self.http
        self.sock.sendall(
            http.send(h11.Request(method="POST", target="/mcp", headers=[
                ("host", "127.0.0.1"), ("content-type", "application/json"),
                ("content-length", str(len(body)))]))
            + http.send(h11.Data(data=body)) + http.send(h11.EndOfMessage()))

    def receive(self) -> Any:
        h11 = self.h11
        http = self.http
        body = []
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                http.receive_data(self.sock.recv(65536))
            elif isinstance(event, h11.Data):
                body.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                http.start_next_cycle()
                return json.loads(b"".join(body))


def floor_block(port: int, seq_n: int, rounds: int,
                kind: type[FloorConnection] | None = None) -> tuple[float, float]:
    conns = [(kind or FloorConnection)(port) for _ in range(IN_FLIGHT)]
    one = conns[0]
    try:
        def sequential() -> int:
            for _ in range(seq_n):
                one.send()
                one.receive()
            return seq_n

        def in_flight() -> int:
            for _ in range(rounds):
                for conn in conns:
                    conn.send()
                for conn in conns:
                    conn.receive()
            return rounds * IN_FLIGHT

        for _ in range(WARM_UP):
            one.send()
            one.receive()
        in_flight()
        return timed(sequential), timed(in_flight)
    finally:
        for conn in conns:
            conn.close()


def timed(batch: Callable[[], int]) -> float:
    gc.collect()
    start = time.perf_counter()
    calls = batch()
    return (time.perf_counter() - start) / calls * 1e6


async def atimed(batch: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    calls = await batch()
    return (time.perf_counter() - start) / calls * 1e6


# -- ours --------------------------------------------------------------------------------------


def available_runtimes(wanted: list[str]) -> list[str]:
    """The runtimes whose adapter has an HTTP client (and whose package is installed)."""
    found = []
    for runtime in wanted:
        if runtime == "trio" and importlib.util.find_spec("trio") is None:
            continue
        adapter = importlib.import_module(f"mcp_sansio.adapters.{runtime}")
        if "connect_http" in adapter.__all__:
            found.append(runtime)
    return found


def ours_block(runtime: str, url: str, era_name: str, seq_n: int,
               rounds: int) -> tuple[float, float]:
    from mcp_sansio import Era

    era = Era.HANDSHAKE if era_name == "handshake" else Era.STATELESS
    if runtime == "asyncio":
        from mcp_sansio.adapters.asyncio import connect_http

        async def main() -> tuple[float, float]:
            async with connect_http(url, era=era) as client:
                async def sequential() -> int:
                    for _ in range(seq_n):
                        await client.call_tool("echo", ARGS)
                    return seq_n

                async def in_flight() -> int:
                    for _ in range(rounds):
                        await asyncio.gather(*(client.call_tool("echo", ARGS)
                                               for _ in range(IN_FLIGHT)))
                    return rounds * IN_FLIGHT

                for _ in range(WARM_UP):
                    await client.call_tool("echo", ARGS)
                await in_flight()
                return await atimed(sequential), await atimed(in_flight)

        return asyncio.run(main())
    if runtime == "trio":
        import trio

        trio_adapter: Any = importlib.import_module("mcp_sansio.adapters.trio")

        async def trio_main() -> tuple[float, float]:
            async with trio_adapter.connect_http(url, era=era) as client:
                async def sequential() -> int:
                    for _ in range(seq_n):
                        await client.call_tool("echo", ARGS)
                    return seq_n

                async def in_flight() -> int:
                    for _ in range(rounds):
                        async with trio.open_nursery() as nursery:
                            for _ in range(IN_FLIGHT):
                                nursery.start_soon(client.call_tool, "echo", ARGS)
                    return rounds * IN_FLIGHT

                for _ in range(WARM_UP):
                    await client.call_tool("echo", ARGS)
                await in_flight()
                return await atimed(sequential), await atimed(in_flight)

        result: tuple[float, float] = trio.run(trio_main)
        return result
    from mcp_sansio.adapters.threading import connect_http as thread_connect

    from mcp_sansio.app.errors import outcome

    params = {"name": "echo", "arguments": ARGS}
    with thread_connect(url, era=era) as client:
        def sequential() -> int:
            for _ in range(seq_n):
                client.call_tool("echo", ARGS)
            return seq_n

        def in_flight() -> int:
            for _ in range(rounds):
                calls = [client._start_call("tools/call", params) for _ in range(IN_FLIGHT)]
                for call in calls:
                    client._wait_call(call, None)
                    outcome(call, "")
            return rounds * IN_FLIGHT

        for _ in range(WARM_UP):
            client.call_tool("echo", ARGS)
        in_flight()
        return timed(sequential), timed(in_flight)


# -- the official SDK --------------------------------------------------------------------------


def sdk_available() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("mcp", "uvicorn"))


def sdk_block(url: str, mode: str, seq_n: int, rounds: int) -> tuple[float, float]:
    import anyio
    from mcp.client.client import Client

    async def main() -> tuple[float, float]:
        async with Client(url, mode=mode) as client:
            async def sequential() -> int:
                for _ in range(seq_n):
                    await client.call_tool("echo", ARGS)
                return seq_n

            async def in_flight() -> int:
                for _ in range(rounds):
                    async with anyio.create_task_group() as group:
                        for _ in range(IN_FLIGHT):
                            group.start_soon(client.call_tool, "echo", ARGS)
                return rounds * IN_FLIGHT

            for _ in range(WARM_UP):
                await client.call_tool("echo", ARGS)
            await in_flight()
            return await atimed(sequential), await atimed(in_flight)

    result: tuple[float, float] = anyio.run(main)
    return result


# -- the run -----------------------------------------------------------------------------------


@contextlib.contextmanager
def servers(runtimes: list[str], sdk: bool) -> Iterator[dict[str, str]]:
    """Every server process, started once: name -> URL (the floor: its port)."""
    procs: list[subprocess.Popen[str]] = []
    urls: dict[str, str] = {}
    try:
        proc, port = spawn([sys.executable, "-c", FLOOR_SERVER])
        procs.append(proc)
        urls["floor"] = port
        proc, port = spawn([sys.executable, "-c", H11_FLOOR_SERVER])
        procs.append(proc)
        urls["floor/h11"] = port
        for runtime in runtimes:
            proc, url = spawn([sys.executable, "-m", "mcp_sansio", "serve-example",
                               "--transport", "http", "--runtime", runtime])
            procs.append(proc)
            urls[runtime] = url
        if sdk:
            proc, url = spawn([sys.executable, str(PEERS / "sdk_http_server.py")])
            procs.append(proc)
            urls["sdk"] = url
        yield urls
    finally:
        for proc in procs:
            stop(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--reps", type=int, default=None, help="repetitions")
    parser.add_argument("--no-sdk", action="store_true", help="leave the official SDK out")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES),
                        help="comma-separated runtimes (default: all with an HTTP client)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    reps = args.reps or (2 if args.quick else 7)
    seq_n = 30 if args.quick else 500
    rounds = 3 if args.quick else 50
    runtimes = available_runtimes([r for r in args.runtimes.split(",") if r])
    sdk = not args.no_sdk and sdk_available()

    contestants: list[tuple[str, Callable[[dict[str, str]], tuple[float, float]]]] = [
        ("floor", lambda urls: floor_block(int(urls["floor"]), seq_n, rounds)),
        ("floor/h11", lambda urls: floor_block(int(urls["floor/h11"]), seq_n, rounds,
                                               H11FloorConnection))]
    for runtime in runtimes:
        for era in ("stateless", "handshake"):
            contestants.append((f"ours/{runtime}/{era}", lambda urls, r=runtime, e=era:
                                ours_block(r, urls[r], e, seq_n, rounds)))
    if sdk:
        for era, mode in (("stateless", "auto"), ("handshake", "legacy")):
            contestants.append((f"sdk/{era}", lambda urls, m=mode:
                                sdk_block(urls["sdk"], m, seq_n, rounds)))
    results = {name: (Result(name, SHAPES[0]), Result(name, SHAPES[1]))
               for name, _ in contestants}

    with servers(runtimes, sdk) as urls:
        for _ in range(reps):
            pairs = {name: block(urls) for name, block in contestants}
            for name, pair in pairs.items():
                for result, value, floor, h11_floor in zip(
                        results[name], pair, pairs["floor"], pairs["floor/h11"], strict=True):
                    result.samples.append(value)
                    result.ratios.append(value / floor)
                    result.h11_ratios.append(value / h11_floor)

    print(f"# HTTP round trip, tools/call echo ({platform.python_implementation()} "
          f"{platform.python_version()}, {os.cpu_count()} cpus; {reps} reps; sequential "
          f"{seq_n} calls, in flight {rounds} x {IN_FLIGHT})")
    print(f"{'contestant':<26}{'shape':<15}{'us/call':>10}{'min':>10}{'x floor':>10}"
          f"{'x h11':>8}")
    report: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).isoformat(),
                              "python": platform.python_version(), "results": []}
    for pair in results.values():
        for result in pair:
            ratio = statistics.median(result.ratios)
            h11_ratio = statistics.median(result.h11_ratios)
            print(f"{result.name:<26}{result.shape:<15}{result.median:>10.1f}"
                  f"{min(result.samples):>10.1f}{ratio:>10.2f}{h11_ratio:>8.2f}")
            report["results"].append({"name": result.name, "shape": result.shape,
                                      "median_us": result.median,
                                      "min_us": min(result.samples), "x_floor": ratio,
                                      "x_h11_floor": h11_ratio})
    print()
    for runtime in runtimes:
        for era in ("stateless", "handshake"):
            seq, par = results[f"ours/{runtime}/{era}"]
            print(f"aim ours/{runtime}/{era}: <= 2x floor: sequential "
                  f"{statistics.median(seq.ratios):.2f}x; {SHAPES[1]} "
                  f"{statistics.median(par.ratios):.2f}x (h11 floor: "
                  f"{statistics.median(seq.h11_ratios):.2f}x; "
                  f"{statistics.median(par.h11_ratios):.2f}x)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
