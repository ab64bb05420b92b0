"""Where a server's CPU goes per request under load: ``load.py``'s clients against one row,
sampled from outside by ``py-spy``, the samples sorted into components.

The row's server (``--row``, default ``ours-asyncio-httptools``; ``--tree DIR`` to run it from
a tree as ``load_ab.py`` does) runs pinned to the server core; per era a ``load.py`` window
runs while ``py-spy record --nonblocking --format raw`` samples the server at ``--rate`` Hz
(idle samples, the loop waiting in ``epoll``, are not recorded). Each sample is charged to a
component by its innermost frame that a rule of :data:`COMPONENTS` matches (so the JSON
library called by the connection is JSON, not the connection; a sample with no Python frame
of ours below the event loop is the loop's own). The share of samples times the window's
server CPU per request (``/proc``, as ``load.py`` measures it) gives microseconds per request
per component. ``--inclusive`` adds a table of inclusive shares for a few entry points (the
wire's callbacks, the server's request path, the app's handler call, the transport write).

``--calls``: instead of sampling, run the server under ``cProfile`` from the moment it is up
(deterministic: it slows every call, so its times are inflated; read its *counts*) and
report Python function calls and built-in calls per request by component -- a measure the
machine's noise does not move (a built-in counts for its caller's component).

py-spy is not a dependency: ``pip install py-spy``. Sampling perturbs the server a little
(it reads the process's memory without stopping it): compare components, not the total with
an unsampled run.

Run: ``python benchmarks/profile_load.py [--row R] [--tree DIR] [--seconds 8] [--rate 997]``.
"""

from __future__ import annotations

import argparse
import collections
import os
import pstats
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load  # (this directory's load.py)

#: (component, regular expression on a frame "function (path:line)"), tried from the innermost
#: frame outwards; the first match is the sample's component. Order matters only within one
#: frame (the more specific first).
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("json (stdlib/orjson, our seam)", r"json/(encoder|decoder|__init__)\.py|mcp_sansio/_json\.py"),
    ("wire: llhttp callbacks + parse", r"http/_wire_httptools\.py"),
    ("wire: shared (_wire.py) or h11", r"/h11/|http/_wire\.py"),
    ("headers (tables, checks)", r"http/_(headers|head_rules|checks|gate)\.py"),
    ("sessions (lookup, table)", r"http/_(sessions|shared|store|park|parking|stranded)\.py"),
    ("server streams / answers", r"http/_(streams|sse|relay|hub|oneshot|refusal|legacy)\.py"),
    ("server request path", r"http/_(server|exchange|exchange_wire|wires|config)\.py"),
    ("connection (core)", r"mcp_sansio/_(connection|pending|state|capabilities|stateless|"
                          r"sessionless|mrtr|handshake|admission|versions|timers|events|"
                          r"frozen|errors|listen|snapshot)\.py|mcp_sansio/_framing/"),
    ("codec", r"mcp_sansio/_codec\.py"),
    ("requestState seal/open", r"mcp_sansio/_keyring\.py|hmac\.py|hashlib\.py"),
    ("app: session logic + handler", r"mcp_sansio/app/|adapters/tools/"),
    ("adapter (asyncio http_server, session, runtime)", r"adapters/"),
    ("asyncio: transport write/read", r"asyncio/selector_events\.py"),
    ("asyncio: loop, tasks, futures", r"asyncio/|selectors\.py"),
    ("logging", r"logging/"),
)
ENTRY_POINTS: tuple[tuple[str, str], ...] = (
    ("asyncio read callback (_read_ready)", r"_read_ready"),
    ("Socket.data_received (wire + pump)", r"http_server\.py:\d+\)$|data_received \(.*http_server"),
    ("channel.receive_data (wire, requests out)", r"receive_data \(.*mcp_sansio/http/"),
    ("HTTPService pump (_sync_drain)", r"_sync_drain"),
    ("HTTPServer.next_event", r"next_event \(.*http/_server"),
    ("session logic: dispatch one event", r"(on_event|dispatch|_dispatch) \(.*app/"),
    ("transport.write", r"write \(.*asyncio/selector_events"),
    ("json dumps", r"dumps \(|encode \(.*json/encoder"),
    ("json loads", r"loads \(|decode \(.*json/decoder"),
)


def classify(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, pattern in _COMPILED:
            if pattern.search(frame):
                return name
    return "other (interpreter, native)"


_COMPILED = [(name, re.compile(pattern)) for name, pattern in COMPONENTS]


def read_raw(path: Path) -> list[tuple[list[str], int]]:
    stacks = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        stacks.append((frames, int(count)))
    return stacks


def profile_era(pid: int, port: int, era: str, args: argparse.Namespace,
                row: load.Row, spy: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "raw.txt"
        sampler = subprocess.Popen(
            [spy, "record", "--nonblocking", "--format", "raw", "--rate", str(args.rate),
             "-d", str(int(args.seconds + 2)), "-p", str(pid), "-o", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            result = load.one_load(pid, port, era, args, row)
        finally:
            sampler.wait(args.seconds + 60)
        stacks = read_raw(out)
    return {"load": result, "stacks": stacks}


def report(era: str, got: dict[str, Any], inclusive: bool) -> None:
    stacks, result = got["stacks"], got["load"]
    total = sum(count for _, count in stacks) or 1
    cpu = result["cpu_us"]
    by: collections.Counter[str] = collections.Counter()
    for frames, count in stacks:
        by[classify(frames)] += count
    print(f"\n## {era}: {result['rps']:.0f} req/s, server cpu {cpu:.1f} us/req, "
          f"{total} samples")
    print(f"{'component (innermost matching frame)':<52}{'share':>8}{'us/req':>9}")
    for name, count in by.most_common():
        print(f"{name:<52}{count / total:>8.1%}{count / total * cpu:>9.1f}")
    if inclusive:
        print(f"{'inclusive (a frame on the stack)':<52}{'share':>8}{'us/req':>9}")
        for name, pattern in ENTRY_POINTS:
            rx = re.compile(pattern)
            hit = sum(count for frames, count in stacks if any(rx.search(f) for f in frames))
            print(f"{name:<52}{hit / total:>8.1%}{hit / total * cpu:>9.1f}")
    functions: collections.Counter[str] = collections.Counter()
    for frames, count in stacks:
        if frames:
            functions[frames[-1]] += count
    print("top own-time frames:")
    for frame, count in functions.most_common(args_top):
        print(f"  {count / total:6.1%} {count / total * cpu:6.1f} us  {frame}")


args_top = 25

#: The server under cProfile (``--calls``): profiling starts on SIGUSR1, sent once the
#: server is up (its start-up is not counted), and the profile is written when the server
#: stops (serve-example stops on SIGTERM).
CPROFILE_WRAPPER = r"""
import cProfile, os, runpy, signal, sys
profile = cProfile.Profile()
sys.argv = sys.argv[1:]
signal.signal(signal.SIGUSR1, lambda *_: profile.enable())
try:
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
finally:
    profile.disable()
    profile.dump_stats(os.environ["PROFILE_LOAD_OUT"])
"""


def count_calls(row: load.Row, args: argparse.Namespace) -> None:
    """``--calls``: per era a fresh server under cProfile, one window, calls per request."""
    command = row.command()
    assert command[1] == "-m", "--calls takes a row started with python -m"
    for era in args.eras.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "calls.prof"
            env = dict(os.environ, PROFILE_LOAD_OUT=str(out))
            flags = []
            if args.tree:
                flags, env["PYTHONPATH"] = ["-P"], args.tree
            proc = subprocess.Popen([command[0], *flags, "-c", CPROFILE_WRAPPER, *command[2:]],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    stdin=subprocess.DEVNULL, text=True, cwd=load.ROOT, env=env)
            try:
                os.sched_setaffinity(proc.pid, load.cores()[0])
                assert proc.stdout is not None
                port = int(proc.stdout.readline().strip().rsplit(":", 1)[1].split("/")[0])
                os.kill(proc.pid, signal.SIGUSR1)  # count from here (the clients' set-up too)
                result = load.one_load(proc.pid, port, era, args, row)
            finally:
                load.stop(proc)  # type: ignore[arg-type]
            stats = pstats.Stats(str(out)).stats  # type: ignore[attr-defined]
        requests = next((v[1] for k, v in stats.items()
                         if k[2] in ("on_message_complete", "_process_channel")), 0)
        requests = next((v[1] for k, v in stats.items() if k[2] == "_handle"
                         and k[0].endswith("http/_server.py")), requests)
        if not requests:
            print(f"\n## {era}: no request was served in the window (a starved server core?)")
            continue
        # A Python function counts for its component; a built-in (a C function or method:
        # dict.get, len, isinstance, bytes.decode) for its callers' components.
        by: collections.Counter[str] = collections.Counter()
        builtins: collections.Counter[str] = collections.Counter()
        for (path, line, name), (_, ncalls, _tt, _ct, callers) in stats.items():
            if path != "~":
                by[classify([f"{name} ({path}:{line})"])] += ncalls
                continue
            for (cpath, cline, cname), counts in callers.items():
                builtins[classify([f"{cname} ({cpath}:{cline})"])] += counts[1]
        total = sum(by.values()) + sum(builtins.values())
        print(f"\n## {era}: {requests} requests (server cpu under cProfile "
              f"{result['cpu_us']:.0f} us/req), {total / requests:.0f} calls per request")
        print(f"{'component':<52}{'python':>8}{'built-in':>10}")
        for name, _ in (by + builtins).most_common():
            print(f"{name:<52}{by[name] / requests:>8.1f}{builtins[name] / requests:>10.1f}")


def main() -> int:
    global args_top
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--row", default="ours-asyncio-httptools")
    parser.add_argument("--tree", default=None, help="run the row's server from this tree")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rate", type=int, default=997)
    parser.add_argument("--clients", type=int, default=load.CLIENTS)
    parser.add_argument("--eras", default=",".join(load.ERAS))
    parser.add_argument("--top", type=int, default=25, help="own-time frames listed")
    parser.add_argument("--inclusive", action="store_true")
    parser.add_argument("--calls", action="store_true",
                        help="count Python calls per request under cProfile instead")
    args = parser.parse_args()
    args_top = args.top
    args.procs = 1
    row = {r.name: r for r in load.ROWS}[args.row]
    os.sched_setaffinity(0, load.cores()[1])
    if args.calls:  # cProfile in the server: no sampler needed
        print(f"# Python calls per request of {row.name} ({args.tree or 'installed'}), "
              f"{args.clients} clients, {args.seconds:g} s per era, under cProfile")
        count_calls(row, args)
        return 0
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not os.path.exists(spy):
        parser.error("py-spy is not installed (pip install py-spy)")
    command, env = row.command(), None
    if args.tree:
        command = [command[0], "-P", *command[1:]]
        env = dict(os.environ, PYTHONPATH=args.tree)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, text=True, cwd=load.ROOT, env=env)
    try:
        os.sched_setaffinity(proc.pid, load.cores()[0])
        assert proc.stdout is not None
        port = int(proc.stdout.readline().strip().rsplit(":", 1)[1].split("/")[0])
        results = {era: profile_era(proc.pid, port, era, args, row, spy)
                   for era in args.eras.split(",") if era}
    finally:
        load.stop(proc)  # type: ignore[arg-type]
    print(f"# profile of {row.name} ({args.tree or 'installed'}), {args.clients} clients, "
          f"{args.seconds:g} s per era, py-spy at {args.rate} Hz")
    for era, got in results.items():
        report(era, got, args.inclusive)
    return 0


if __name__ == "__main__":
    sys.exit(main())
