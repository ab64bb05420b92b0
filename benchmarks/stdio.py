"""stdio end to end: the adapters against a raw-pipe floor and the official SDK.

What is measured, each between this process and a child process over a pair of pipes:

* ``floor``: a child that reads a line, decodes it (``json.loads``), builds the
  ``tools/call`` result, encodes it (``json.dumps``) and writes it; this side encodes each
  request and decodes each answer the same way. Nothing else: the cost of the pipes, two
  processes and the JSON, which no MCP implementation can avoid.
* ``ours/<runtime>``: our client on asyncio, trio or threads, against ``mcp-sansio
  serve-example --runtime <runtime>``: ``call_tool("echo", {"text": "hello"})`` (with its
  default 60 s idle timeout, so a timer per request, as in real use).
* ``rt/<runtime>``: the runtime floors. The floor's client against a *bare* child on asyncio
  (a loop-native pipe reader and write transport), trio (``FdStream`` fds: ``wait_readable``,
  ``os.read``, ``os.write``) or threads (a reader thread), doing the floor's work and no MCP:
  how much of ours over the floor is the runtime itself (``ours x rt`` in the summary).
* ``srv/<runtime>``: our server alone: the floor's client against ``serve-example`` on that
  runtime (initialized first). What is left of ``ours/<runtime>`` over it is our client's.
* ``sdk/legacy``: the official Python SDK's ``Client`` over stdio against its own server
  (``tests/peers/sdk_stdio_server.py``, the same ``echo``), in the handshake era.

Two shapes: **sequential** (one call at a time: the round-trip latency) and **100 in flight**
(100 calls started together, then all awaited: per-call cost under load; on threads the
calls are started with ``start_call`` and awaited one by one, so no thread per call).

Also measured: **cold start** (spawn the server, send ``initialize``, read the answer), and
the **Python heap per pending request** (``tracemalloc``) in the asyncio client: with the
call bookkeeping only, and with an awaiting task per call.

Method: every contestant keeps its connection open for the whole run, in a thread of its
own (its event loop runs there; the others wait, idle), and every repetition times one batch
of each, one after the other, in an order that rotates from one repetition to the next --
first the sequential batches, then the in-flight ones. A batch is timed with
``time.perf_counter`` after a warm-up. Reported: the median over repetitions of microseconds
per call, the minimum, and the ratio to the floor as the **median of per-repetition ratios**
(each sample against the floor's from the same repetition, seconds apart: drift of a shared
machine hits both sides of a ratio alike -- the floor alone moved between 23 and 73 us per
sequential call from one run to another here). Compare ratios, not absolute numbers.

Run: ``python benchmarks/stdio.py`` (``--quick`` for a smoke run, ``--json FILE`` to save).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import importlib.util
import json
import os
import platform
import queue
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "tests" / "peers"
RUNTIMES = ("asyncio", "trio", "threading")
IN_FLIGHT = 100

FLOOR_CHILD = r"""
import json, sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    request = json.loads(line)
    text = request["params"]["arguments"]["text"]
    response = {"jsonrpc": "2.0", "id": request["id"],
                "result": {"content": [{"type": "text", "text": text}]}}
    out.write(json.dumps(response).encode() + b"\n")
    out.flush()
"""

#: What every runtime floor's child does with one line: the floor's work, as a function (an
#: ``initialize`` line, which has no arguments, gets an empty result: the cold-start probe).
ANSWER = r"""
import json, os
def answer(line):
    request = json.loads(line)
    arguments = request["params"].get("arguments")
    result = {"content": [{"type": "text", "text": arguments["text"]}]} if arguments else {}
    return json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode() + b"\n"
def answers(rest, data):
    *lines, rest = (rest + data).split(b"\n")
    return b"".join(map(answer, lines)), rest
def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
"""

#: The runtime floors: the floor's child on each runtime, bare (no MCP): what the runtime
#: itself costs before any of our code runs. Each reads its stdin as our server does on that
#: runtime (64 KiB reads), answers every complete line of a read, and writes the answers of a
#: read in one write.
RUNTIME_CHILDREN = {
    # A loop-native pipe reader (connect_read_pipe, data_received) and a write transport.
    "asyncio": ANSWER + r"""
import asyncio, os

class Echo(asyncio.Protocol):
    def __init__(self, out, done):
        self.out, self.done, self.rest = out, done, b""
    def data_received(self, data):
        reply, self.rest = answers(self.rest, data)
        if reply:
            self.out.write(reply)
    def eof_received(self):
        if not self.done.done():
            self.done.set_result(None)
    def connection_lost(self, exc):
        self.eof_received()

async def main():
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    out, _ = await loop.connect_write_pipe(asyncio.BaseProtocol,
                                           open(1, "wb", buffering=0, closefd=False))
    inp, _ = await loop.connect_read_pipe(lambda: Echo(out, done),
                                          open(0, "rb", buffering=0, closefd=False))
    inp.max_size = 65536  # as our adapter sets it (asyncio's 256 KiB reads mmap each time)
    await done

asyncio.run(main())
""",
    # trio's FdStream fds; wait_readable then os.read, and a direct os.write (our pump's way).
    "trio": ANSWER + r"""
import os, trio

async def main():
    inp = trio.lowlevel.FdStream(os.dup(0))
    out = trio.lowlevel.FdStream(os.dup(1))
    ifd, ofd, rest = inp.fileno(), out.fileno(), b""
    while True:
        await trio.lowlevel.wait_readable(ifd)
        try:
            data = os.read(ifd, 65536)
        except BlockingIOError:
            continue
        if not data:
            break
        reply, rest = answers(rest, data)
        if reply:
            try:
                written = os.write(ofd, reply)
            except BlockingIOError:
                written = 0
            if written < len(reply):
                await out.send_all(reply[written:])

trio.run(main)
""",
    # A reader thread (blocking 64 KiB reads, writes from that thread); the main thread waits.
    "threading": ANSWER + r"""
import os, threading

def pump():
    rest = b""
    while data := os.read(0, 65536):
        reply, rest = answers(rest, data)
        if reply:
            write_all(1, reply)

reader = threading.Thread(target=pump)
reader.start()
reader.join()
""",
}


INITIALIZE = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"}}}) + "\n").encode()


def example(runtime: str) -> list[str]:
    return [sys.executable, "-m", "mcp_sansio", "serve-example", "--runtime", runtime]


class Result:
    def __init__(self, name: str, shape: str) -> None:
        self.name = name
        self.shape = shape
        self.samples: list[float] = []  # microseconds per call, one per repetition
        self.ratios: list[float] = []  # this repetition's sample / the floor's, paired

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


#: A contestant's two batches: each runs its calls and returns how many it made.
Batches = tuple[Callable[[], Any], Callable[[], Any]]


class Contestant:
    """One contestant's connection, kept open in a thread of its own (its runtime's event
    loop runs there) for the whole run, so that every repetition can time every contestant
    back to back (see :func:`measure`). ``run(shape)`` times one batch there and returns
    microseconds per call."""

    def __init__(self, name: str, body: Callable[[Contestant], None]) -> None:
        self.name = name
        self.results = (Result(name, "sequential"), Result(name, "100 in flight"))
        self.commands: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self.answers: queue.SimpleQueue[float | BaseException] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._main, args=(body,), name=name)

    def _main(self, body: Callable[[Contestant], None]) -> None:
        try:
            body(self)
        except BaseException as exc:  # reported to the main thread
            self.answers.put(exc)

    def start(self) -> None:
        self.thread.start()
        self._answer()  # connected and warmed up

    def run(self, shape: int) -> float:
        self.commands.put(shape)
        return self._answer()

    def stop(self) -> None:
        self.commands.put(None)
        self.thread.join()

    def _answer(self) -> float:
        answer = self.answers.get()
        if isinstance(answer, BaseException):
            raise RuntimeError(f"{self.name} failed") from answer
        return answer

    # -- used in the contestant's thread -----------------------------------------------------

    def ready(self) -> None:
        self.answers.put(0.0)

    def serve_sync(self, batches: Batches) -> None:
        """The command loop of a blocking contestant."""
        self.ready()
        while (shape := self.commands.get()) is not None:
            gc.collect()
            start = time.perf_counter()
            calls = batches[shape]()
            self.answers.put((time.perf_counter() - start) / calls * 1e6)

    async def serve_async(self, batches: Batches, wait: Callable[[], Any]) -> None:
        """The command loop of an async contestant; ``wait()`` awaits the next command
        without blocking its loop (a worker thread waits on the queue)."""
        self.ready()
        while (shape := await wait()) is not None:
            gc.collect()
            start = time.perf_counter()
            calls = await batches[shape]()
            self.answers.put((time.perf_counter() - start) / calls * 1e6)


def measure(contestants: list[Contestant], reps: int) -> None:
    """Every repetition times one batch of every contestant, shape by shape, in an order
    that rotates from one repetition to the next; each sample is paired with the floor's
    from the same repetition (the first contestant is the floor)."""
    for contestant in contestants:
        contestant.start()
    try:
        for rep in range(reps):
            for shape in (0, 1):
                k = rep % len(contestants)
                order = contestants[k:] + contestants[:k]
                samples = {c.name: c.run(shape) for c in order}
                floor = samples[contestants[0].name]
                for c in contestants:
                    c.results[shape].samples.append(samples[c.name])
                    c.results[shape].ratios.append(samples[c.name] / floor)
    finally:
        for contestant in contestants:
            contestant.stop()


# -- the floor ---------------------------------------------------------------------------------


def floor_contestant(seq_n: int, rounds: int, name: str = "floor",
                     child: str = FLOOR_CHILD, command: list[str] | None = None) -> Contestant:
    """The floor, or (with ``child``) a runtime floor, or (with ``command``, an MCP server)
    our server alone: the same client side (a blocking ``os.write`` and a buffered
    ``readline``, stdlib ``json``) against another child. An MCP server is initialized
    first (one ``initialize``, one ``notifications/initialized``)."""
    def body(me: Contestant) -> None:
        proc = subprocess.Popen(command or [sys.executable, "-c", child],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdin and proc.stdout
        fd = proc.stdin.fileno()
        reader = proc.stdout
        next_id = [0]
        if command is not None:
            os.write(fd, INITIALIZE)
            assert b'"result"' in reader.readline()
            os.write(fd, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

        def request() -> bytes:
            next_id[0] += 1
            return (json.dumps({"jsonrpc": "2.0", "id": next_id[0], "method": "tools/call",
                                "params": {"name": "echo", "arguments": {"text": "hello"}}})
                    + "\n").encode()

        def sequential() -> int:
            for _ in range(seq_n):
                os.write(fd, request())
                json.loads(reader.readline())
            return seq_n

        def in_flight() -> int:
            for _ in range(rounds):
                os.write(fd, b"".join(request() for _ in range(IN_FLIGHT)))
                for _ in range(IN_FLIGHT):
                    json.loads(reader.readline())
            return rounds * IN_FLIGHT

        sequential()
        try:
            me.serve_sync((sequential, in_flight))
        finally:
            proc.stdin.close()
            proc.wait()

    return Contestant(name, body)


def runtime_floor(runtime: str, seq_n: int, rounds: int) -> Contestant:
    """``rt/<runtime>``: the floor's client against the floor's work done by a bare child on
    ``runtime`` (:data:`RUNTIME_CHILDREN`)."""
    return floor_contestant(seq_n, rounds, f"rt/{runtime}", RUNTIME_CHILDREN[runtime])


def server_alone(runtime: str, seq_n: int, rounds: int) -> Contestant:
    """``srv/<runtime>``: the floor's client against ``serve-example`` on ``runtime``: our
    server's share of ``ours/<runtime>`` (the rest is our client's)."""
    return floor_contestant(seq_n, rounds, f"srv/{runtime}", command=example(runtime))


# -- ours --------------------------------------------------------------------------------------


def ours_contestant(runtime: str, seq_n: int, rounds: int) -> Contestant:
    args = {"text": "hello"}

    def asyncio_body(me: Contestant) -> None:
        from mcp_sansio.adapters.asyncio import connect_stdio

        async def main() -> None:
            async with connect_stdio(example("asyncio")) as client:
                async def sequential() -> int:
                    for _ in range(seq_n):
                        await client.call_tool("echo", args)
                    return seq_n

                async def in_flight() -> int:
                    for _ in range(rounds):
                        await asyncio.gather(*(client.call_tool("echo", args)
                                               for _ in range(IN_FLIGHT)))
                    return rounds * IN_FLIGHT

                await sequential()
                await me.serve_async((sequential, in_flight),
                                     lambda: asyncio.to_thread(me.commands.get))

        asyncio.run(main())

    def trio_body(me: Contestant) -> None:
        import trio
        from mcp_sansio.adapters.trio import connect_stdio as trio_connect

        async def main() -> None:
            async with trio_connect(example("trio")) as client:
                async def sequential() -> int:
                    for _ in range(seq_n):
                        await client.call_tool("echo", args)
                    return seq_n

                async def in_flight() -> int:
                    for _ in range(rounds):
                        async with trio.open_nursery() as nursery:
                            for _ in range(IN_FLIGHT):
                                nursery.start_soon(client.call_tool, "echo", args)
                    return rounds * IN_FLIGHT

                await sequential()
                await me.serve_async((sequential, in_flight),
                                     lambda: trio.to_thread.run_sync(me.commands.get))

        trio.run(main)

    def threading_body(me: Contestant) -> None:
        from mcp_sansio.adapters.threading import connect_stdio as thread_connect

        from mcp_sansio.app.errors import outcome

        params = {"name": "echo", "arguments": args}
        with thread_connect(example("threading")) as client:
            def sequential() -> int:
                for _ in range(seq_n):
                    client.call_tool("echo", args)
                return seq_n

            def in_flight() -> int:
                for _ in range(rounds):
                    calls = [client._start_call("tools/call", params)
                             for _ in range(IN_FLIGHT)]
                    for call in calls:
                        client._wait_call(call, None)
                        outcome(call, "")
                return rounds * IN_FLIGHT

            sequential()
            me.serve_sync((sequential, in_flight))

    bodies = {"asyncio": asyncio_body, "trio": trio_body, "threading": threading_body}
    return Contestant(f"ours/{runtime}", bodies[runtime])


# -- the official SDK --------------------------------------------------------------------------


def sdk_contestant(seq_n: int, rounds: int) -> Contestant | None:
    try:
        import anyio
        from mcp.client.client import Client
        from mcp.client.stdio import StdioServerParameters
    except ImportError:
        return None
    params = StdioServerParameters(command=sys.executable,
                                   args=[str(PEERS / "sdk_stdio_server.py")])
    args = {"text": "hello"}

    def body(me: Contestant) -> None:
        async def main() -> None:
            async with Client(params, mode="legacy") as client:
                async def sequential() -> int:
                    for _ in range(seq_n):
                        await client.call_tool("echo", args)
                    return seq_n

                async def in_flight() -> int:
                    for _ in range(rounds):
                        async with anyio.create_task_group() as group:
                            for _ in range(IN_FLIGHT):
                                group.start_soon(client.call_tool, "echo", args)
                    return rounds * IN_FLIGHT

                await sequential()
                await me.serve_async((sequential, in_flight),
                                     lambda: anyio.to_thread.run_sync(me.commands.get))

        anyio.run(main)

    return Contestant("sdk/legacy", body)


# -- cold start and heap -----------------------------------------------------------------------


def cold_start(command: list[str], runs: int) -> float:
    """Median milliseconds from spawn to the answer to ``initialize``.

    A cold *process* on a warm installation: one untimed run first, with
    ``PYTHONDONTWRITEBYTECODE`` removed from the child's environment, so that the bytecode
    caches exist as they do after any install (``pip`` compiles them; a shell that sets the
    variable would otherwise make every run recompile whatever changed since the caches
    were written, measured +15-30 ms on serve-example)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    samples = []
    for run in range(runs + 1):
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env)
        assert proc.stdin and proc.stdout
        proc.stdin.write(INITIALIZE)
        proc.stdin.flush()
        line = proc.stdout.readline()
        if run:
            samples.append((time.perf_counter() - start) * 1000)
        assert b'"result"' in line, line
        proc.stdin.close()
        proc.wait()
    return statistics.median(samples)


def floor_answer_child() -> list[str]:
    """The floor for cold start: a Python child that answers one initialize line."""
    code = ("import sys, json\nline = sys.stdin.buffer.readline()\n"
            "req = json.loads(line)\nsys.stdout.write(json.dumps({'jsonrpc': '2.0', "
            "'id': req['id'], 'result': {}}) + '\\n')\nsys.stdout.flush()\nsys.stdin.read()\n")
    return [sys.executable, "-c", code]


def heap_per_pending(n: int) -> dict[str, float]:
    """Bytes of Python heap per pending request in the asyncio client, against a server that
    never answers: bookkeeping only (``start_call``), and with an awaiting task per call."""
    from mcp_sansio.adapters.asyncio import connect_stdio

    out: dict[str, float] = {}

    async def main() -> None:
        async with connect_stdio([sys.executable, str(PEERS / "silent_server.py")],
                                 shutdown_timeout=0.5) as client:
            params = {"name": "echo", "arguments": {"text": "hello"}}
            for label, with_task in (("call + core bookkeeping", False),
                                     ("call + core + awaiting task", True)):
                await asyncio.sleep(0.05)
                gc.collect()
                tracemalloc.start()
                before = tracemalloc.take_snapshot()
                keep: list[Any] = []
                for _ in range(n):
                    if with_task:
                        keep.append(asyncio.ensure_future(client.call_tool("echo",
                                                                           params["arguments"])))
                    else:
                        keep.append(client._start_call("tools/call", params))
                for _ in range(20):
                    await asyncio.sleep(0.01)  # let the requests reach the pipe
                gc.collect()
                after = tracemalloc.take_snapshot()
                tracemalloc.stop()
                grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
                out[label] = grown / n
                if with_task:
                    for task in keep:
                        task.cancel()
                    await asyncio.gather(*keep, return_exceptions=True)
                else:
                    for call in keep:
                        client._cancel_call(call)
                await asyncio.sleep(0.05)

    asyncio.run(main())
    return out


# -- report ------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per contestant")
    parser.add_argument("--no-sdk", action="store_true", help="leave the official SDK out")
    parser.add_argument("--no-runtime-floors", action="store_true",
                        help="leave the bare runtime echo children (rt/<runtime>) out")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES),
                        help="comma-separated runtimes (default: all available)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    reps = args.reps or (2 if args.quick else 7)
    seq_n = 50 if args.quick else 1000
    rounds = 2 if args.quick else 20
    runtimes = [r for r in args.runtimes.split(",") if r]
    if "trio" in runtimes and importlib.util.find_spec("trio") is None:
        runtimes.remove("trio")

    contestants = [floor_contestant(seq_n, rounds)]
    if not args.no_runtime_floors:
        contestants += [runtime_floor(runtime, seq_n, rounds) for runtime in runtimes]
        contestants += [server_alone(runtime, seq_n, rounds) for runtime in runtimes]
    contestants += [ours_contestant(runtime, seq_n, rounds) for runtime in runtimes]
    sdk = None if args.no_sdk else sdk_contestant(seq_n, rounds)
    if sdk is not None:
        contestants.append(sdk)
    measure(contestants, reps)
    results = [c.results for c in contestants]

    print(f"# stdio round trip ({platform.python_implementation()} "
          f"{platform.python_version()}, {os.cpu_count()} cpus; {reps} reps; sequential "
          f"{seq_n} calls, in flight {rounds} x {IN_FLIGHT})")
    print(f"{'contestant':<18}{'shape':<15}{'us/call':>10}{'min':>10}{'x floor':>10}")
    report: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).isoformat(),
                              "python": platform.python_version(), "results": []}
    for seq, par in results:
        for result in (seq, par):
            ratio = statistics.median(result.ratios)  # paired: same repetition's floor
            print(f"{result.name:<18}{result.shape:<15}{result.median:>10.1f}"
                  f"{min(result.samples):>10.1f}{ratio:>10.2f}")
            report["results"].append({"name": result.name, "shape": result.shape,
                                      "median_us": result.median,
                                      "min_us": min(result.samples), "x_floor": ratio})

    runs = 3 if args.quick else 9
    print(f"\n# cold start: spawn -> answer to initialize (median of {runs}, ms)")
    starts = {"floor (python answers one line)": cold_start(floor_answer_child(), runs)}
    for runtime in runtimes:
        if not args.no_runtime_floors:
            starts[f"rt/{runtime} (bare child)"] = cold_start(
                [sys.executable, "-c", RUNTIME_CHILDREN[runtime]], runs)
        starts[f"serve-example/{runtime}"] = cold_start(example(runtime), runs)
    if sdk is not None:
        starts["sdk server"] = cold_start([sys.executable, str(PEERS / "sdk_stdio_server.py")],
                                          runs)
    for name, ms in starts.items():
        print(f"{name:<34}{ms:>8.1f}")
    report["cold_start_ms"] = starts

    n = 1000 if args.quick else 10_000
    heap = heap_per_pending(n)
    print(f"\n# Python heap per pending request (asyncio client, {n} pending, bytes)")
    for label, size in heap.items():
        print(f"{label:<34}{size:>8.0f}")
    report["heap_bytes_per_pending"] = heap

    by = {(r.name, r.shape): r for pair in results for r in pair}
    print()
    for runtime in runtimes:
        s = statistics.median(by[(f"ours/{runtime}", "sequential")].ratios)
        p = statistics.median(by[(f"ours/{runtime}", "100 in flight")].ratios)
        print(f"aim ours/{runtime}: sequential <= 1.3x floor: {s:.2f}x; "
              f"100 in flight <= 3x floor: {p:.2f}x")
        if not args.no_runtime_floors:
            # Paired per repetition as x floor is: ours against its runtime's bare child.
            rs, rp = (by[(f"rt/{runtime}", shape)] for shape in ("sequential", "100 in flight"))
            ours_s, ours_p = (by[(f"ours/{runtime}", shape)]
                              for shape in ("sequential", "100 in flight"))
            over_s = statistics.median(
                a / b for a, b in zip(ours_s.samples, rs.samples, strict=True))
            over_p = statistics.median(
                a / b for a, b in zip(ours_p.samples, rp.samples, strict=True))
            print(f"  rt/{runtime} (the runtime alone): sequential "
                  f"{statistics.median(rs.ratios):.2f}x floor, 100 in flight "
                  f"{statistics.median(rp.ratios):.2f}x; ours x rt/{runtime}: "
                  f"{over_s:.2f}x, {over_p:.2f}x")
            ss, sp = (by[(f"srv/{runtime}", shape)] for shape in ("sequential", "100 in flight"))
            print(f"  srv/{runtime} (our server, the floor's client): sequential "
                  f"{statistics.median(ss.ratios):.2f}x floor, 100 in flight "
                  f"{statistics.median(sp.ratios):.2f}x")
            report.setdefault("ours_x_runtime_floor", {})[runtime] = {
                "sequential": over_s, "100 in flight": over_p}
    if "asyncio" in runtimes:
        print(f"aim cold start <= 100 ms: {starts['serve-example/asyncio']:.1f} ms (asyncio)")
    print(f"aim heap <= 3072 bytes per pending request: "
          f"{heap['call + core bookkeeping']:.0f} (bookkeeping), "
          f"{heap['call + core + awaiting task']:.0f} (with its task)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
