"""The cost of typed models: one ``tools/call`` request/result pair through ``mcp_sansio.types``.

What one operation is, for each contestant (all in this process, no I/O, revision
2025-11-25; the values are the ones ``roundtrip.py`` sends):

* ``floor/json``: the JSON work of the pair and nothing else -- the params and the result
  written and read back: ``loads(dumps(params))`` + ``loads(dumps(result))``.
* ``dict``: the plain dict path the core hands an application: the client builds the params
  dict, the server reads ``name`` and ``arguments``, builds the result dict, the client reads
  its first content block's text.
* ``typed``: the same with models: the client builds ``CallToolRequestParams`` and
  unstructures it; the server structures it (``structure_request``), reads the fields,
  builds a ``CallToolResult`` and unstructures it; the client structures it
  (``structure_result``) and reads the text. I.e. structure + unstructure of both messages.
* ``typed+json``: ``typed`` with the JSON floor's ``dumps``/``loads`` of both messages in
  between: what the pair costs an application end to end.

and the four steps of ``typed`` one by one: ``structure_request``, ``unstructure(params)``,
``structure_result``, ``unstructure(result)``.

Method (as in ``roundtrip.py``): every contestant is timed side by side in each repetition
(the order rotates); a repetition times one batch, sized so that it lasts about
``--target-ms``; reported are the median over repetitions of microseconds per operation and
ratios as the median of per-repetition ratios (paired). The garbage collector stays on and
runs before every batch.

Run: ``python benchmarks/typed_models.py`` (``--quick`` for a smoke run, ``--json FILE`` to save).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from mcp_sansio import types

REVISION = "2025-11-25"
V = types.namespace(REVISION)
TOOL_PARAMS: dict[str, Any] = {"name": "echo", "arguments": {"text": "hello"}}
TOOL_RESULT: dict[str, Any] = {"content": [{"type": "text", "text": "hello"}]}

FLOOR = "floor/json"
DICT = "dict"
TYPED = "typed"

dumps = json.dumps
loads = json.loads


def floor_json(n: int) -> None:
    params, result = TOOL_PARAMS, TOOL_RESULT
    for _ in range(n):
        loads(dumps(params))
        loads(dumps(result))


def plain_dicts(n: int) -> None:
    for _ in range(n):
        params = {"name": "echo", "arguments": {"text": "hello"}}
        name, arguments = params["name"], params.get("arguments") or {}
        assert name == "echo"
        result = {"content": [{"type": "text", "text": arguments["text"]}]}
        text = result["content"][0]["text"]
        assert text == "hello"


def _typed_pair(wire: Callable[[Any], Any]) -> Callable[[int], None]:
    structure_request, structure_result = types.structure_request, types.structure_result
    unstructure = types.unstructure
    params_cls, result_cls, text_cls = V.CallToolRequestParams, V.CallToolResult, V.TextContent

    def run(n: int) -> None:
        for _ in range(n):
            sent = unstructure(params_cls(name="echo", arguments={"text": "hello"}))
            params = structure_request("tools/call", wire(sent), REVISION)
            assert params.name == "echo"
            answer = unstructure(result_cls(content=[text_cls(text=params.arguments["text"])]))
            result = structure_result("tools/call", wire(answer), REVISION)
            assert result.content[0].text == "hello"

    return run


def _step(name: str) -> Callable[[int], None]:
    params = V.CallToolRequestParams(name="echo", arguments={"text": "hello"})
    result = V.CallToolResult(content=[V.TextContent(text="hello")])
    steps: dict[str, Callable[[], Any]] = {
        "structure_request": lambda: types.structure_request("tools/call", TOOL_PARAMS,
                                                             REVISION),
        "unstructure(params)": lambda: types.unstructure(params),
        "structure_result": lambda: types.structure_result("tools/call", TOOL_RESULT,
                                                           REVISION),
        "unstructure(result)": lambda: types.unstructure(result),
    }
    one = steps[name]

    def run(n: int) -> None:
        for _ in range(n):
            one()

    return run


STEPS = ("structure_request", "unstructure(params)", "structure_result", "unstructure(result)")


def check() -> None:
    """The typed path gives exactly the dicts the plain path sends."""
    params = types.structure_request("tools/call", TOOL_PARAMS, REVISION)
    assert types.unstructure(params) == TOOL_PARAMS
    result = types.structure_result("tools/call", TOOL_RESULT, REVISION)
    assert types.unstructure(result) == TOOL_RESULT


# -- the run ---------------------------------------------------------------------------------

CLOCK = time.perf_counter


@dataclass
class Contestant:
    name: str
    run: Callable[[int], None]
    describe: str
    batch: int = 1
    samples: list[float] = field(default_factory=list)

    def timed(self, n: int) -> float:
        gc.collect()
        start = CLOCK()
        self.run(n)
        return CLOCK() - start


def calibrate(contestant: Contestant, target: float, warmup: int) -> None:
    contestant.timed(warmup)
    n = warmup
    while True:
        elapsed = contestant.timed(n)
        if elapsed >= target / 4 or n >= 10_000_000:
            break
        n *= 4
    contestant.batch = max(1, round(n * target / max(elapsed, 1e-9)))


def paired_ratio(a: Contestant, b: Contestant) -> float:
    return statistics.median(x / y for x, y in zip(a.samples, b.samples, strict=True))


def run(args: argparse.Namespace) -> dict[str, Any]:
    check()
    contestants = [
        Contestant(FLOOR, floor_json, "loads(dumps(params)) + loads(dumps(result))"),
        Contestant(DICT, plain_dicts, "build, read, build, read: plain dicts"),
        Contestant(TYPED, _typed_pair(lambda x: x),
                   "structure + unstructure of the request params and the result"),
        Contestant(TYPED + "+json", _typed_pair(lambda x: loads(dumps(x))),
                   "typed, with dumps/loads of both messages"),
        *[Contestant(step, _step(step), f"types.{step} alone") for step in STEPS],
    ]
    target = args.target_ms / 1000
    for contestant in contestants:
        calibrate(contestant, target, args.warmup)
    for rep in range(args.reps):
        shift = rep % len(contestants)
        for contestant in contestants[shift:] + contestants[:shift]:
            elapsed = contestant.timed(contestant.batch)
            contestant.samples.append(elapsed / contestant.batch * 1e6)
    by_name = {c.name: c for c in contestants}
    references = [by_name[FLOOR], by_name[DICT]]
    return {
        "benchmark": "types",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "machine": f"{platform.machine()} {platform.system()}",
        "versions": {name: _version(name) for name in ("mcp-sansio", "attrs", "cattrs")},
        "revision": REVISION,
        "reps": args.reps,
        "target_ms": args.target_ms,
        "clock": args.clock,
        "results": [{
            "name": c.name,
            "describe": c.describe,
            "batch": c.batch,
            "median_us": statistics.median(c.samples),
            "min_us": min(c.samples),
            "max_us": max(c.samples),
            "samples_us": c.samples,
            "ratios": {ref.name: paired_ratio(c, ref) for ref in references},
        } for c in contestants],
    }


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def print_report(report: dict[str, Any]) -> None:
    refs = [FLOOR, DICT]
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v)
    print(f"tools/call request/result pair through mcp_sansio.types ({report['revision']}) "
          f"-- {report['date']}, {report['python']}, {report['machine']}; {versions}")
    print(f"clock {report['clock']}; median of {report['reps']} repetitions; "
          "ratios are medians of per-repetition ratios (side by side)")
    header = f"{'contestant':<22} {'us/op':>9} {'min':>9} {'max':>9} {'batch':>8}"
    header += "".join(f" {'x ' + r:>12}" for r in refs)
    print(header)
    print("-" * len(header))
    for row in report["results"]:
        line = (f"{row['name']:<22} {row['median_us']:>9.2f} {row['min_us']:>9.2f} "
                f"{row['max_us']:>9.2f} {row['batch']:>8}")
        line += "".join(f" {row['ratios'][r]:>12.2f}" for r in refs)
        print(line)
    by_name = {row["name"]: row for row in report["results"]}
    typed = by_name[TYPED]
    steps = sum(by_name[s]["median_us"] for s in STEPS)
    print()
    print(f"typed pair = {typed['ratios'][FLOOR]:.2f}x the JSON floor; "
          f"its four steps sum to {steps:.2f} us")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny counts: a smoke test, not a measurement")
    parser.add_argument("--reps", type=int, default=None,
                        help="repetitions (default 15; 3 with --quick)")
    parser.add_argument("--target-ms", type=float, default=None,
                        help="duration of one timed batch (default 50 ms; 2 ms with --quick)")
    parser.add_argument("--clock", choices=("perf_counter", "process"), default="perf_counter",
                        help="time.perf_counter (default) or time.process_time")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    args = parser.parse_args(argv)
    if args.reps is None:
        args.reps = 3 if args.quick else 15
    if args.target_ms is None:
        args.target_ms = 2.0 if args.quick else 50.0
    args.warmup = 5 if args.quick else 200
    global CLOCK
    CLOCK = time.process_time if args.clock == "process" else time.perf_counter
    report = run(args)
    print_report(report)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2)
            out.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
