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
* Known failures are listed, each with its reason, in ``.ci/conformance-expected-failures.yml``.

Prints the pass counts per requirement set (and how long each run took); exits non-zero if
any run failed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
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


def _run(args: list[str], label: str, results: list[str], harness: Path = HARNESS,
         log: Path | None = None) -> bool:
    cmd = [str(NODE), str(harness), *args]
    if harness == HARNESS:
        cmd += ["--expected-failures", str(EXPECTED)]
    print(f"\n--- {label}: {' '.join(args)}", flush=True)
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False)
    took = time.monotonic() - start
    out = proc.stdout
    lines = out.splitlines()
    if log is None:
        for line in lines:
            if _shown(line):
                print(line)
    else:
        # Client mode interleaves every scenario's checks and its client's log (the
        # harness prints a client's output when it exits non-zero): keep all of it in a
        # file, and show the summary from its start.
        log.write_text(out)
        start_at = next((i for i, line in enumerate(lines) if "SUITE SUMMARY" in line), 0)
        for line in lines[start_at:]:
            if line.strip():
                print(line)
        print(f"(the whole output: {log.relative_to(ROOT)})")
    total = [line for line in lines if line.startswith("Total:")]
    summary = total[-1] if total else "no total"
    if log is not None:
        # Per scenario too: the check totals mix the expected failures in.
        passed = sum(line.startswith("\u2713 ") for line in lines)
        failed = [line for line in lines if line.startswith("\u2717 ")]
        auth = sum(line.startswith("\u2717 auth/") for line in failed)
        summary += (f"; scenarios: {passed} passed, {len(failed)} failed "
                    f"({auth} of them auth/*)")
    results.append(f"{label}: {summary} (exit {proc.returncode}, {took:.0f} s)")
    return proc.returncode == 0


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
    print("\n=== conformance results")
    for line in results:
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(inside() if sys.argv[1:] == ["--inside"] else outside())
