"""In-process round trip of one ``tools/call``: mcp-sansio's core against its floors and the SDK.

What one round trip is, for each contestant (all in this process, no I/O):

* ``core/<json>``: mcp-sansio after a handshake, bytes both ways::

      client.send_request("tools/call", {"name": "echo", "arguments": {"text": "hello"}})
      server.receive_data(client.data_to_send()); server.next_event()        # a Request
      server.send_response(request_id, {"content": [{"type": "text", "text": "hello"}]})
      client.receive_data(server.data_to_send()); client.next_event()        # a Response

  with the JSON backend ``stdlib`` or ``orjson`` (``mcp_sansio._json.use_backend``).
* ``core/<json>+drain``: the same, following the full call-order contract an adapter follows:
  each side drains ``next_event()`` until ``NEED_DATA``, passes ``now`` and re-reads
  ``next_deadline()`` after every input.
* ``floor/<json>``: the same two messages written and read back with nothing else:
  ``loads(dumps(request))`` + ``loads(dumps(response))`` (2 dumps + 2 loads).
* ``sdk/legacy``: the official Python SDK (``mcp``): a low-level ``Server`` with an ``echo``
  tool behind its ``InMemoryTransport`` (memory object streams), a ``ClientSession`` after
  ``initialize()``; one ``await session.call_tool("echo", {"text": "hello"})``. Its messages
  are pydantic objects passed through memory streams (they are never written as JSON).
* ``sdk/2026-07-28``: the SDK's stateless-era in-process path (``Client(server,
  mode="2026-07-28")``: a direct dispatcher, no JSON-RPC, no streams) -- for information.

Method: every contestant is timed side by side in each repetition (the order rotates from one
repetition to the next); a repetition times one batch of round trips with
``time.perf_counter``; batch sizes are calibrated so that each batch lasts about
``--target-ms``. Reported: the median over repetitions of microseconds per round trip, and
ratios as the median of the per-repetition ratios (paired, which cancels most of the drift of
a noisy machine). The garbage collector stays on (it is part of the real cost) and is run
before every batch.

Run: ``python benchmarks/roundtrip.py`` (``--quick`` for a smoke run, ``--json FILE`` to
save the results).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import gc
import json
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import mcp_sansio
from mcp_sansio import (
    NEED_DATA,
    ClientConnection,
    Initialized,
    Request,
    Response,
    ServerConnection,
    _json,
)

TOOL_PARAMS = {"name": "echo", "arguments": {"text": "hello"}}
TOOL_RESULT = {"content": [{"type": "text", "text": "hello"}]}
#: The two wire messages of one round trip, as the core writes them.
REQUEST_MESSAGE = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": TOOL_PARAMS}
RESPONSE_MESSAGE = {"jsonrpc": "2.0", "id": 1, "result": TOOL_RESULT}

#: The aim: a round trip through the core costs at most this many stdlib floors.
AIM = 2.0

STDLIB_FLOOR = "floor/stdlib"
ORJSON_FLOOR = "floor/orjson"
SDK_LEGACY = "sdk/legacy"

#: The clock that times a batch: wall time by default; ``--clock process`` counts only this
#: process's CPU time, which a machine shared with other busy processes disturbs less.
CLOCKS = {"perf_counter": time.perf_counter, "process": time.process_time}
CLOCK = time.perf_counter


class Contestant:
    """One way of doing round trips. ``run(n)`` does ``n`` of them (sync or async)."""

    def __init__(
        self,
        name: str,
        run: Callable[[int], Any],
        *,
        is_async: bool = False,
        prepare: Callable[[], None] | None = None,
        describe: str = "",
    ) -> None:
        self.name = name
        self.run = run
        self.is_async = is_async
        self.prepare = prepare or (lambda: None)
        self.describe = describe
        self.batch = 1
        self.samples: list[float] = []  # microseconds per round trip, one per repetition

    async def timed(self, n: int) -> float:
        """Seconds for ``n`` round trips."""
        self.prepare()
        gc.collect()
        clock = CLOCK
        if self.is_async:
            start = clock()
            await self.run(n)
            return clock() - start
        start = clock()
        self.run(n)
        return clock() - start


# -- floors ------------------------------------------------------------------------------------


def floor_stdlib(n: int) -> None:
    dumps, loads = json.dumps, json.loads
    request, response = REQUEST_MESSAGE, RESPONSE_MESSAGE
    for _ in range(n):
        loads(dumps(request))
        loads(dumps(response))


def make_floor_orjson() -> Callable[[int], None]:
    import orjson

    dumps, loads = orjson.dumps, orjson.loads
    request, response = REQUEST_MESSAGE, RESPONSE_MESSAGE

    def floor_orjson(n: int) -> None:
        for _ in range(n):
            loads(dumps(request))
            loads(dumps(response))

    return floor_orjson


# -- the core ----------------------------------------------------------------------------------


def handshake(now: float = 0.0) -> tuple[ClientConnection, ServerConnection]:
    """A client and a server connection after initialize / initialized."""
    client = ClientConnection(info={"name": "bench-client", "version": "1.0"})
    server = ServerConnection(
        info={"name": "bench-server", "version": "1.0"}, capabilities={"tools": {}}
    )
    client.initialize(now=now)
    server.receive_data(client.data_to_send(), now=now)
    server_events = server.events()
    client.receive_data(server.data_to_send(), now=now)
    client_events = client.events()
    server.receive_data(client.data_to_send(), now=now)
    server_events += server.events()
    if not (
        client_events
        and isinstance(client_events[-1], Initialized)
        and server_events
        and isinstance(server_events[-1], Initialized)
    ):
        raise RuntimeError(f"handshake failed: {client_events!r} / {server_events!r}")
    return client, server


def make_core(backend: str) -> Contestant:
    client, server = handshake()
    params, result = TOOL_PARAMS, TOOL_RESULT

    def core(n: int) -> None:
        send_request, client_out = client.send_request, client.data_to_send
        server_in, server_next = server.receive_data, server.next_event
        send_response, server_out = server.send_response, server.data_to_send
        client_in, client_next = client.receive_data, client.next_event
        for _ in range(n):
            send_request("tools/call", params)
            server_in(client_out())
            request = server_next()
            send_response(request.request_id, result)  # type: ignore[union-attr]
            client_in(server_out())
            client_next()

    return Contestant(
        f"core/{backend}", core, prepare=lambda: _json.use_backend(backend),
        describe="send_request/receive_data/next_event/send_response, bytes both ways",
    )


def make_core_drain(backend: str) -> Contestant:
    client, server = handshake()
    params, result = TOOL_PARAMS, TOOL_RESULT

    def core_drain(n: int) -> None:
        now = 1.0
        for _ in range(n):
            client.send_request("tools/call", params, now=now)
            while client.next_event() is not NEED_DATA:
                pass  # nothing arrives on a send
            client.next_deadline()
            server.receive_data(client.data_to_send(), now=now)
            request_id = None
            while (event := server.next_event()) is not NEED_DATA:
                request_id = event.request_id  # type: ignore[union-attr]
            server.next_deadline()
            server.send_response(request_id, result)  # type: ignore[arg-type]
            client.receive_data(server.data_to_send(), now=now)
            while client.next_event() is not NEED_DATA:
                pass
            client.next_deadline()

    return Contestant(
        f"core/{backend}+drain", core_drain, prepare=lambda: _json.use_backend(backend),
        describe="the same, draining events to NEED_DATA and re-reading next_deadline()",
    )


def check_core(backend: str) -> None:
    """One round trip, checked (not timed): the core does what the benchmark claims."""
    _json.use_backend(backend)
    client, server = handshake()
    client.send_request("tools/call", TOOL_PARAMS)
    server.receive_data(client.data_to_send())
    request = server.next_event()
    assert isinstance(request, Request) and request.method == "tools/call", request
    assert request.params == TOOL_PARAMS, request.params
    server.send_response(request.request_id, TOOL_RESULT)
    client.receive_data(server.data_to_send())
    response = client.next_event()
    assert isinstance(response, Response) and response.result == TOOL_RESULT, response


# -- the official SDK --------------------------------------------------------------------------


def sdk_server() -> Any:
    import mcp_types as types
    from mcp.server import Server

    async def call_tool(ctx: Any, params: Any) -> Any:
        text = (params.arguments or {}).get("text", "")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name="echo",
                    input_schema={
                        "type": "object",
                        "properties": {"text": {"type": "string"}},
                        "required": ["text"],
                    },
                )
            ]
        )

    return Server("bench-server", on_call_tool=call_tool, on_list_tools=list_tools)


async def make_sdk_legacy(stack: contextlib.AsyncExitStack) -> Contestant:
    from mcp.client._memory import InMemoryTransport
    from mcp.client.session import ClientSession
    from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

    read_stream, write_stream = await stack.enter_async_context(InMemoryTransport(sdk_server()))
    session = await stack.enter_async_context(
        ClientSession(dispatcher=JSONRPCDispatcher(read_stream, write_stream))
    )
    await session.initialize()
    # call_tool validates results against the tool's output schema and lists the tools first
    # if it has never seen the tool: list once so the timed calls are single round trips.
    await session.list_tools()
    await check_sdk(session.call_tool)

    async def sdk(n: int) -> None:
        call_tool = session.call_tool
        for _ in range(n):
            await call_tool("echo", {"text": "hello"})

    return Contestant(
        SDK_LEGACY, sdk, is_async=True,
        describe="lowlevel Server + InMemoryTransport + ClientSession.call_tool (2025-11-25)",
    )


async def make_sdk_modern(stack: contextlib.AsyncExitStack) -> Contestant:
    from mcp import Client

    client = await stack.enter_async_context(Client(sdk_server(), mode="2026-07-28"))
    await client.list_tools()
    await check_sdk(client.call_tool)

    async def sdk_modern(n: int) -> None:
        call_tool = client.call_tool
        for _ in range(n):
            await call_tool("echo", {"text": "hello"})

    return Contestant(
        "sdk/2026-07-28", sdk_modern, is_async=True,
        describe="Client(server, mode='2026-07-28'): direct dispatcher, no JSON-RPC (info)",
    )


async def check_sdk(call_tool: Callable[..., Awaitable[Any]]) -> None:
    result = await call_tool("echo", {"text": "hello"})
    assert not result.is_error and result.content[0].text == "hello", result


# -- the run -----------------------------------------------------------------------------------


async def calibrate(contestant: Contestant, target: float, warmup: int) -> None:
    """Warm up, then pick a batch size that lasts about ``target`` seconds."""
    await contestant.timed(warmup)
    n = warmup
    while True:
        elapsed = await contestant.timed(n)
        if elapsed >= target / 4 or n >= 1_000_000:
            break
        n *= 4
    contestant.batch = max(1, round(n * target / max(elapsed, 1e-9)))


def paired_ratio(a: Contestant, b: Contestant) -> float:
    return statistics.median(x / y for x, y in zip(a.samples, b.samples, strict=True))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    previous_backend = _json.backend
    backends = _json.available_backends()
    contestants: list[Contestant] = [Contestant(STDLIB_FLOOR, floor_stdlib)]
    if "orjson" in backends:
        contestants.append(Contestant(ORJSON_FLOOR, make_floor_orjson()))
    for backend in backends:
        check_core(backend)
        contestants.append(make_core(backend))
    for backend in backends:
        contestants.append(make_core_drain(backend))
    notes: list[str] = []
    if "orjson" not in backends:
        notes.append("orjson is not installed: no orjson rows")

    async with contextlib.AsyncExitStack() as stack:
        if args.no_sdk:
            notes.append("--no-sdk: the official SDK was not measured")
        else:
            try:
                contestants.append(await make_sdk_legacy(stack))
                contestants.append(await make_sdk_modern(stack))
            except ImportError as exc:
                notes.append(f"the official SDK is not importable ({exc}): not measured")
            except Exception as exc:  # another SDK version with another API
                notes.append(f"the official SDK could not be set up "
                             f"({type(exc).__name__}: {exc}): not measured")

        target = args.target_ms / 1000
        for contestant in contestants:
            await calibrate(contestant, target, args.warmup)
        for rep in range(args.reps):
            shift = rep % len(contestants)
            for contestant in contestants[shift:] + contestants[:shift]:
                elapsed = await contestant.timed(contestant.batch)
                contestant.samples.append(elapsed / contestant.batch * 1e6)
    _json.use_backend(previous_backend)

    by_name = {c.name: c for c in contestants}
    references = [by_name[name] for name in (STDLIB_FLOOR, ORJSON_FLOOR, SDK_LEGACY)
                  if name in by_name]
    results = []
    for c in contestants:
        results.append({
            "name": c.name,
            "describe": c.describe,
            "batch": c.batch,
            "median_us": statistics.median(c.samples),
            "min_us": min(c.samples),
            "max_us": max(c.samples),
            "samples_us": c.samples,
            "ratios": {ref.name: paired_ratio(c, ref) for ref in references},
        })
    return {
        "benchmark": "roundtrip",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "machine": f"{platform.machine()} {platform.system()}, {_cpu_count()} CPUs",
        "versions": {name: _version(name) for name in ("mcp-sansio", "mcp", "orjson")},
        "reps": args.reps,
        "target_ms": args.target_ms,
        "clock": args.clock,
        "mcp_sansio_path": str(Path(mcp_sansio.__file__).parent),
        "build": _build(),
        "notes": notes,
        "results": results,
    }


def _build() -> str:
    """``compiled`` or ``pure``: which build of the core this run measured (docs/compiled.rst);
    ``partly compiled`` when only some of the listed modules are extensions."""
    try:
        from mcp_sansio._compiled import compiled_modules
    except ImportError:  # a tree older than the compiled build
        return "pure"
    loaded = compiled_modules().values()
    return "compiled" if all(loaded) else "partly compiled" if any(loaded) else "pure"


def _cpu_count() -> int | None:
    import os  # the benchmark may; the core may not

    return os.cpu_count()


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def print_report(report: dict[str, Any]) -> None:
    refs = [r for r in (STDLIB_FLOOR, ORJSON_FLOOR, SDK_LEGACY)
            if any(row["name"] == r for row in report["results"])]
    print(f"tools/call round trip, in process -- {report['date']}, {report['python']}, "
          f"{report['machine']}")
    print(f"mcp_sansio from {report['mcp_sansio_path']} ({report['build']} build); "
          f"clock {report['clock']}; "
          f"median of {report['reps']} repetitions;")
    print("ratios are medians of per-repetition ratios (side by side)")
    header = f"{'contestant':<20} {'us/rt':>9} {'min':>9} {'max':>9} {'batch':>7}"
    header += "".join(f" {'x ' + r:>15}" for r in refs)
    print(header)
    print("-" * len(header))
    for row in report["results"]:
        line = (f"{row['name']:<20} {row['median_us']:>9.2f} {row['min_us']:>9.2f} "
                f"{row['max_us']:>9.2f} {row['batch']:>7}")
        line += "".join(f" {row['ratios'][r]:>15.2f}" for r in refs)
        print(line)
    by_name = {row["name"]: row for row in report["results"]}
    print()
    for backend in ("stdlib", "orjson"):
        row = by_name.get(f"core/{backend}")
        if row is None:
            continue
        ratio = row["ratios"][STDLIB_FLOOR]
        verdict = "meets" if ratio <= AIM else "misses"
        line = (f"aim core/{backend} <= {AIM:g}x floor/stdlib: {ratio:.2f}x "
                f"({verdict} the aim)")
        if SDK_LEGACY in row["ratios"]:
            line += f"; {1 / row['ratios'][SDK_LEGACY]:.1f}x faster than {SDK_LEGACY}"
        print(line)
    for note in report["notes"]:
        print(f"note: {note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny counts: a smoke test, not a measurement")
    parser.add_argument("--reps", type=int, default=None,
                        help="repetitions (default 15; 3 with --quick)")
    parser.add_argument("--target-ms", type=float, default=None,
                        help="duration of one timed batch (default 50 ms; 2 ms with --quick)")
    parser.add_argument("--no-sdk", action="store_true", help="skip the official SDK")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="perf_counter",
                        help="time.perf_counter (default) or time.process_time")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    args = parser.parse_args(argv)
    if args.reps is None:
        args.reps = 3 if args.quick else 15
    if args.target_ms is None:
        args.target_ms = 2.0 if args.quick else 50.0
    args.warmup = 5 if args.quick else 200
    global CLOCK
    CLOCK = CLOCKS[args.clock]
    report = asyncio.run(run(args))
    print_report(report)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2)
            out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
