"""The official MCP conformance harness, run against this project: a step of .ci/check.py.

* Installs node 22 (the npm package ``node@22``) into ``.cache/node22`` and the harness
  (``@modelcontextprotocol/conformance``, pinned below) into ``.cache/harness`` the first
  time; later runs reuse them. Needs only node and npm on the machine.
* Re-runs itself inside a private network namespace with only loopback up
  (``unshare -n``; CI runs as root), so neither our server nor the harness's own mock
  servers can be reached from -- or reach -- anything but 127.0.0.1.
* Server mode: starts ``mcp-sansio serve-example --transport http`` on 127.0.0.1 and runs
  ``server --requirements R`` for each requirement set R; then the same on the trio and
  threading runtimes.
* And the handshake-era harness 0.1.16 with ``--suite all``.
* Client mode: ``client --command "<python> -m mcp_sansio conformance-client"
  --requirements R`` for each R. The harness starts a mock server per scenario (all of a
  requirement set in parallel) and runs the command with the mock's URL appended and the
  scenario in ``MCP_CONFORMANCE_*`` environment variables. The full output of each client
  run (with every client's log) goes to ``.cache/conformance-client-R.log``; this log shows
  the summary.
* The authorization extension scenarios (:data:`EXTENSIONS`) once more with the clients of
  the other runtimes (``MCP_SANSIO_CONFORMANCE_RUNTIME``): the harness's ``extensions``
  suite at 2025-11-25, and each scenario forced at 2026-07-28 (the suite cannot be given a
  revision: extension scenarios are not on the spec timeline).
* Known failures are listed, each with its reason, in ``.ci/conformance-expected-failures.yml``.
  Its ``#: PATTERN: REASON`` comment lines give the reason per group of entries (shell-style
  patterns over scenario names) for the summaries; the harness reads the list and ignores
  the comments.

A passing run reads as passing: each run prints one line -- its scenarios passed, then its
expected failures counted per reason group, then the failures of the scenarios the
requirement set runs but does not score, then the authorization extension scenarios
(:data:`EXTENSIONS`: run unscored by every requirement set, but ours to pass, so they are
reported apart and a failing one fails the run) -- and the harness's whole output goes to
``.cache/conformance-<run>.log``. A run the harness fails (an unexpected failure, or a
listed failure that now passes: the list can only shrink) prints its output in full, less
the rows of the expected failures. Exits non-zero if any run failed.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"
HARNESS_VERSION = "0.2.0-alpha.12"
NODE = CACHE / "node22" / "node_modules" / "node" / "bin" / "node"
HARNESS_DIR = CACHE / "harness"
HARNESS = (HARNESS_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist"
           / "index.js")
#: The handshake-era harness (npm's `latest` tag), run with --suite all.
OLD_VERSION = "0.1.16"
OLD_DIR = CACHE / "harness-0.1.16"
OLD_HARNESS = (OLD_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist"
               / "index.js")
EXPECTED = ROOT / ".ci" / "conformance-expected-failures.yml"
REQUIREMENTS = ["2025-11-25", "2026-07-28"]
#: The authorization extension scenarios (client credentials, enterprise-managed
#: authorization, DPoP, workload identity): not scored by any requirement set, but a run
#: where one fails is a failed run.
EXTENSIONS = (
    "auth/client-credentials-basic", "auth/client-credentials-jwt",
    "auth/enterprise-managed-authorization", "auth/dpop", "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
)
#: serve-example runs on asyncio first (with every run); then on these.
OTHER_RUNTIMES = ["trio", "threading"]
PY = sys.executable
#: The harness splits ``--command`` on spaces and hands the pieces to a shell: quoting keeps
#: an interpreter path with spaces in one piece.
CLIENT_COMMAND = f"{shlex.quote(PY)} -m mcp_sansio conformance-client"


def _npm_install(where: Path, spec: str, marker: Path) -> None:
    stamp = where / ".installed"
    if marker.exists() and stamp.exists() and stamp.read_text() == spec:
        return
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("conformance: npm is needed to install the harness (and node 22)")
    where.mkdir(parents=True, exist_ok=True)
    if not (where / "package.json").exists():
        (where / "package.json").write_text('{"name": "mcp-sansio-cache", "private": true}\n')
    print(f"conformance: npm install {spec} into {where.relative_to(ROOT)}", flush=True)
    subprocess.run([npm, "install", "--no-audit", "--no-fund", "-q", spec], cwd=where,
                   check=True)
    stamp.write_text(spec)


def install() -> None:
    _npm_install(CACHE / "node22", "node@22", NODE)
    _npm_install(HARNESS_DIR, f"@modelcontextprotocol/conformance@{HARNESS_VERSION}", HARNESS)
    _npm_install(OLD_DIR, f"@modelcontextprotocol/conformance@{OLD_VERSION}", OLD_HARNESS)


def outside() -> int:
    install()
    unshare = shutil.which("unshare")
    if unshare is None:
        print("conformance: FAILED: `unshare` (util-linux) is not available, and the harness "
              "is only run inside a loopback-only network namespace", flush=True)
        return 1
    inner = f"ip link set lo up && exec {PY} {Path(__file__).resolve()} --inside"
    return subprocess.call([unshare, "-n", "bash", "-c", inner], cwd=ROOT)


def _start_server(runtime: str = "asyncio") -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [PY, "-m", "mcp_sansio", "serve-example", "--transport", "http",
         "--host", "127.0.0.1", "--port", "0", "--runtime", runtime],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"conformance: the example server did not start (said {url!r})")
    return proc, url


def _shown(line: str) -> bool:
    """Server mode: the per-scenario summary and everything that is not a SUCCESS."""
    return not ("SUCCESS" in line or line.startswith("Running client scenario")
                or line.startswith("=== Running scenario") or not line.strip())


#: The harness colours its baseline report (ANSI SGR sequences); the parser reads plain text.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: A scenario's row in the harness's summary: "✓ name: 3 passed, 0 failed".
_ROW = re.compile(r"^([\u2713\u2717]) (\S+): (\d+) passed, (\d+) failed")
#: The headings of the harness's baseline report, and what their items are.
_SECTIONS = {
    "Expected failures (in baseline):": "expected",
    "Stale baseline entries": "stale",
    "Unexpected failures (not in baseline):": "unexpected",
}


@dataclass
class Outcome:
    """What one harness run said, read from its output (see :func:`read_output`)."""

    passed: list[str] = field(default_factory=list)   # scenarios with no failed check
    failed: list[str] = field(default_factory=list)   # scenarios with a failed check
    checks_passed: int = 0
    checks_failed: int = 0
    expected: list[str] = field(default_factory=list)    # baseline entries that failed
    stale: list[str] = field(default_factory=list)       # baseline entries that passed
    unexpected: list[str] = field(default_factory=list)  # failures not in the baseline
    baseline: bool = False  # the harness checked a baseline (its report is there)

    def not_scored(self) -> list[str]:
        """Failed scenarios the harness neither expected nor held against the run: those
        the requirement set runs but does not score. Without a baseline there are none."""
        if not self.baseline:
            return []
        known = {entry.split(":", 1)[0] for entry in self.expected + self.unexpected}
        return [name for name in self.failed if name not in known and name not in EXTENSIONS]

    def extensions(self) -> tuple[list[str], list[str]]:
        """The :data:`EXTENSIONS` scenarios this run ran: (passed, failed)."""
        return ([n for n in self.passed if n in EXTENSIONS],
                [n for n in self.failed if n in EXTENSIONS])


def read_output(out: str) -> Outcome:
    """Parse a harness run's output: the summary rows and the baseline report."""
    outcome = Outcome()
    section = ""
    for raw in out.splitlines():
        line = _ANSI.sub("", raw).rstrip()
        row = _ROW.match(line)
        if row:
            (outcome.passed if row[1] == "\u2713" else outcome.failed).append(row[2])
            outcome.checks_passed += int(row[3])
            outcome.checks_failed += int(row[4])
            continue
        heading = next((kind for text, kind in _SECTIONS.items() if line.startswith(text)),
                       None)
        if heading is not None:
            section = heading
            outcome.baseline = True
            continue
        item = re.match(r"^  [~\u2713\u2717] (\S+)$", line)
        if item and section:
            getattr(outcome, section).append(item[1])
            continue
        if line.startswith(("Baseline check passed", "Baseline is stale",
                            "Unexpected failures detected")):
            outcome.baseline = True
        if line.strip():
            section = ""
    return outcome


def read_reasons(path: Path = EXPECTED) -> list[tuple[str, str]]:
    """The ``#: PATTERN: REASON`` lines of the expected-failures file, in order."""
    reasons = []
    for line in path.read_text().splitlines():
        if line.startswith("#: ") and ": " in line[3:]:
            pattern, reason = line[3:].split(": ", 1)
            reasons.append((pattern.strip(), reason.strip()))
    return reasons


def _grouped(names: list[str], reasons: list[tuple[str, str]]) -> str:
    """``names`` counted per reason group, in the file's order: "auth/*: why" ..."""
    counts: dict[str, int] = {}
    for name in names:
        scenario = name.split(":", 1)[0]
        group = next((f"{pattern}: {reason}" for pattern, reason in reasons
                      if fnmatch.fnmatchcase(scenario, pattern)), "no reason given")
        counts[group] = counts.get(group, 0) + 1
    return "; ".join(f"{count} {group}" if len(counts) > 1 else group
                     for group, count in counts.items())


def summary(label: str, outcome: Outcome, returncode: int, took: float,
            reasons: list[tuple[str, str]]) -> str:
    """The run's one line: what passed, what failed as expected and why, what is unscored."""
    parts = [f"{len(outcome.passed)} scenarios passed ({outcome.checks_passed} checks)"]
    if outcome.expected:
        parts.append(f"{len(outcome.expected)} expected failures "
                     f"({_grouped(outcome.expected, reasons)}; see "
                     f"{EXPECTED.relative_to(ROOT)})")
    unscored = outcome.not_scored()
    if unscored:
        families = sorted({name.split("/", 1)[0] + "/*" if "/" in name else name
                           for name in unscored})
        parts.append(f"{len(unscored)} unscored scenarios failed ({', '.join(families)}: "
                     f"run, but not scored by this requirement set)")
    ext_passed, ext_failed = outcome.extensions()
    if ext_passed or ext_failed:
        ran = len(ext_passed) + len(ext_failed)
        parts.append(f"{len(ext_passed)} of {ran} authorization extension scenarios passed"
                     + (f", {len(ext_failed)} FAILED ({', '.join(ext_failed)})"
                        if ext_failed else ""))
        if ext_failed and returncode == 0:
            returncode = -1
    if outcome.unexpected:
        parts.append(f"{len(outcome.unexpected)} UNEXPECTED failures "
                     f"({', '.join(outcome.unexpected)})")
    if outcome.stale:
        parts.append(f"{len(outcome.stale)} listed as expected failures now PASS "
                     f"({', '.join(outcome.stale)}: delete them from the list)")
    if not outcome.baseline and outcome.failed:
        parts.append(f"{len(outcome.failed)} FAILED ({', '.join(outcome.failed)})")
    status = ("ok" if returncode == 0 else "FAILED: an extension scenario failed"
              if returncode == -1 else f"FAILED, exit {returncode}")
    return f"{label}: {'; '.join(parts)} ({status}, {took:.0f} s)"


def details(out: str, outcome: Outcome, client_mode: bool) -> list[str]:
    """A failed run's output, in full less the noise: client mode from the summary on,
    server mode every line but a SUCCESS; in both, the expected failures' rows and list
    left out (the summary line counts them)."""
    lines = [_ANSI.sub("", line).rstrip() for line in out.splitlines()]
    if client_mode:
        start = next((i for i, line in enumerate(lines) if "SUITE SUMMARY" in line), 0)
        lines = lines[start:]
    expected = {entry.split(":", 1)[0] for entry in outcome.expected}
    shown = []
    section = ""
    for line in lines:
        row = _ROW.match(line)
        if row and row[1] == "\u2717" and row[2] in expected:
            continue
        if line.startswith("Expected failures (in baseline):"):
            section = "expected"
            continue
        if section == "expected" and line.startswith("  ~ "):
            continue
        section = ""
        if line.strip() and (client_mode or _shown(line)):
            shown.append(line)
    return shown


def _run(args: list[str], label: str, results: list[str], harness: Path = HARNESS,
         log: Path | None = None, env: dict[str, str] | None = None) -> bool:
    cmd = [str(NODE), str(harness), *args]
    if harness == HARNESS:
        cmd += ["--expected-failures", str(EXPECTED)]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False, env=env)
    took = time.monotonic() - start
    out = proc.stdout
    # Every run's whole output is kept: client mode interleaves every scenario's checks and
    # its client's log (the harness prints a client's output when it exits non-zero).
    if log is None:
        log = CACHE / ("conformance-" + re.sub(r"[^A-Za-z0-9.]+", "-", label).strip("-")
                       + ".log")
    log.write_text(out)
    outcome = read_output(out)
    line = summary(label, outcome, proc.returncode, took, read_reasons())
    print(line, flush=True)
    failed = proc.returncode != 0 or bool(outcome.extensions()[1])
    if failed:
        print(f"--- {label}: {' '.join(args)}")
        for shown in details(out, outcome, client_mode=args[:1] == ["client"]):
            print(shown)
        print(f"(the whole output: {log.relative_to(ROOT)})", flush=True)
    results.append(line)
    return not failed


#: Names the conformance client's runtime (adapters/tools/_conformance_client.py).
RUNTIME_ENV = "MCP_SANSIO_CONFORMANCE_RUNTIME"


def _extensions(runtime: str, results: list[str]) -> bool:
    """The :data:`EXTENSIONS` with ``runtime``'s client, in both revisions: one line each."""
    env = {**os.environ, RUNTIME_ENV: runtime}
    client = ["client", "--command", CLIENT_COMMAND]
    ok = _run([*client, "--suite", "extensions"], f"client extensions 2025-11-25 ({runtime})",
              results, env=env)
    start = time.monotonic()
    outcome = Outcome(baseline=True)
    failed_output = []
    for scenario in EXTENSIONS:
        proc = subprocess.run(
            [str(NODE), str(HARNESS), *client, "--scenario", scenario,
             "--spec-version", REQUIREMENTS[-1], "--force"], cwd=ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        passed = proc.returncode == 0
        (outcome.passed if passed else outcome.failed).append(scenario)
        if not passed:
            failed_output.append(proc.stdout)
    label = f"client extensions {REQUIREMENTS[-1]} ({runtime})"
    ext_passed, ext_failed = outcome.extensions()
    line = (f"{label}: {len(ext_passed)} of {len(EXTENSIONS)} authorization extension "
            f"scenarios passed" + (f", {len(ext_failed)} FAILED ({', '.join(ext_failed)})"
                                   if ext_failed else "")
            + f" ({'FAILED' if ext_failed else 'ok'}, {time.monotonic() - start:.0f} s)")
    print(line, flush=True)
    results.append(line)
    if failed_output:
        log = CACHE / f"conformance-client-extensions-{runtime}.log"
        log.write_text("\n".join(failed_output))
        print(f"(the failed scenarios' output: {log.relative_to(ROOT)})", flush=True)
    return ok and not failed_output


def inside() -> int:
    if any(re.match(r"\d+: (?!lo:)", line) for line in subprocess.run(
            ["ip", "-o", "link"], capture_output=True, text=True, check=False
            ).stdout.splitlines()
           if "state UP" in line):
        print("conformance: refusing to run: an interface other than lo is up", flush=True)
        return 1
    results: list[str] = []
    ok = True
    server, url = _start_server()
    try:
        for requirements in REQUIREMENTS:
            ok &= _run(["server", "--url", url, "--requirements", requirements],
                       f"server {requirements}", results)
        ok &= _run(["server", "--url", url, "--suite", "all"],
                   f"server {OLD_VERSION} --suite all", results, OLD_HARNESS)
    finally:
        server.terminate()
        server.wait(10)
    # The same server on the other runtimes: each has its own HTTP adapter (sockets, pump,
    # handler tasks), so each is judged too (the scored sets only; ~15 s per runtime).
    for runtime in OTHER_RUNTIMES:
        server, url = _start_server(runtime)
        try:
            for requirements in REQUIREMENTS:
                ok &= _run(["server", "--url", url, "--requirements", requirements],
                           f"server {requirements} ({runtime})", results)
        finally:
            server.terminate()
            server.wait(10)
    for requirements in REQUIREMENTS:
        ok &= _run(["client", "--command", CLIENT_COMMAND, "--requirements", requirements],
                   f"client {requirements}", results,
                   log=CACHE / f"conformance-client-{requirements}.log")
    for runtime in ("trio", "threading"):
        ok &= _extensions(runtime, results)
    passed = sum(", ok, " in line or "(ok, " in line for line in results)
    print(f"\nconformance: {passed} of {len(results)} runs passed "
          f"(each run's whole output: .cache/conformance-*.log)")
    return 0 if ok else 1


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(inside() if sys.argv[1:] == ["--inside"] else outside())
