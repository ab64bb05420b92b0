"""The checker judged by peers whose verdict is known: our server on every runtime over
stdio, Streamable HTTP and HTTP+SSE, and our clients in both eras, pass with no finding and
no note but ``slow`` for every seed tried; the official SDK's servers and client get a
report and an exit status of 0 or 1, never a traceback.

The first seed of a server case runs the whole command line, sweep included; the sweep is
the same for every seed, so later seeds run the random sessions alone (``check_server`` with
``sweep_first=False``). CI tries one seed per case (``MCP_CHECK_SEEDS`` sets how many: the
full proof is 20 for our peers, 10 for the SDK's) and, to stay cheap, one revision per case
(``MCP_CHECK_ALL_REVISIONS=1`` sweeps them all).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_sansio.adapters.testing_server import check_server
from mcp_sansio.adapters.tools import _check_cli

from mcp_sansio import HANDSHAKE_REVISIONS, KNOWN_REVISIONS
from mcp_sansio.testing import SLOW_NOTE
from tests.paths import PEERS

SEEDS = range(1, 1 + int(os.environ.get("MCP_CHECK_SEEDS", "1")))
#: Random sessions per later seed (each a new process or HTTP session).
EXAMPLES = int(os.environ.get("MCP_CHECK_EXAMPLES", "3"))
ALL_REVISIONS = bool(os.environ.get("MCP_CHECK_ALL_REVISIONS")) or len(SEEDS) > 1
RUNTIMES = ("asyncio", "trio", "threading")
#: Small and quick: the sweep covers every rule; two random sessions on top.
OPTIONS = ["--examples", "2", "--call-timeout", "1", "--budget", "90"]


def _revision(index: int, pool: tuple[str, ...] = KNOWN_REVISIONS, *,
              rotate: bool = False) -> list[str]:
    """One revision per case in CI (each case a different one), all of them otherwise;
    ``rotate``: always one, a different one for each seed (the SDK's cases)."""
    if ALL_REVISIONS and not rotate:
        return []
    return ["--revision", pool[index % len(pool)]]


def _server(seed: int, target: list[str], index: int, tmp_path: Path,
            pool: tuple[str, ...] = KNOWN_REVISIONS) -> None:
    """The first seed: the command line, sweep and all; later ones: random sessions only."""
    if seed == SEEDS[0]:
        _clean(*_run(["--seed", str(seed), *OPTIONS, *_revision(index, pool), *target],
                     tmp_path))
        return
    url = target[1] if target[0] == "--url" else None
    report = check_server(None if url else target[1:], url=url, seed=seed, examples=EXAMPLES,
                          call_timeout=1.0, budget=90, sweep_first=False)
    text = report.summary()
    assert report.findings == [], text
    assert all(note.startswith(SLOW_NOTE) for note in report.notes), text


def _run(argv: list[str], tmp_path: Path) -> tuple[int, dict[str, Any], str]:
    target = tmp_path / "report.json"
    out = io.StringIO()
    status = _check_cli.main(["--json", str(target), *argv], out=out, err=out)
    report = json.loads(target.read_text()) if target.exists() else {}
    return status, report, out.getvalue()


def _clean(status: int, report: dict[str, Any], text: str) -> None:
    assert status == 0, text
    assert report["findings"] == [], text
    assert all(note.startswith((SLOW_NOTE, "steps: ")) for note in report["notes"]), text


def _served(argv: list[str]) -> Iterator[str]:
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
    assert process.stdout is not None
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        process.terminate()
        process.wait(30)


@pytest.fixture(scope="module", params=[(r, t) for r in RUNTIMES for t in ("http", "sse")],
                ids=[f"{r}-{t}" for r in RUNTIMES for t in ("http", "sse")])
def our_url(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    runtime, transport = request.param
    index = RUNTIMES.index(runtime) * 2 + (transport == "sse")
    legacy = ", legacy_sse_path='/sse'" if transport == "sse" else ""
    for url in _served([sys.executable, "-P", "-c", "from mcp_sansio.adapters.tools."
                        f"_example_server import run_http; run_http(runtime={runtime!r}"
                        f"{legacy})"]):
        yield (url.rsplit("/", 1)[0] + "/sse" if legacy else url), index


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_our_stdio_server_passes(runtime: str, seed: int, tmp_path: Path) -> None:
    _server(seed, ["--", sys.executable, "-P", "-m", "mcp_sansio", "serve-example",
                   "--runtime", runtime], RUNTIMES.index(runtime), tmp_path)


@pytest.mark.parametrize("seed", SEEDS)
def test_our_http_server_passes(our_url: tuple[str, int], seed: int, tmp_path: Path) -> None:
    url, index = our_url
    _server(seed, ["--url", url], index, tmp_path,
            HANDSHAKE_REVISIONS if url.endswith("/sse") else KNOWN_REVISIONS)


#: kit_clients.py with its stateless-era exercises on: a listen stream, and the tool called
#: as a task of the 2026-07-28 tasks extension (declared).
EXERCISED = ("import sys; sys.path.insert(0, sys.argv.pop(1)); import kit_clients; "
             "kit_clients.OPTIONS['capabilities'] = {'extensions': "
             "{'io.modelcontextprotocol/tasks': {}}}; "
             "kit_clients.EXERCISES.update({'listen', 'task'}); "
             "sys.exit(kit_clients.main(sys.argv[1:]))")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("era", ["handshake", "stateless"])
@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
def test_our_client_passes(era: str, http: bool, seed: int, tmp_path: Path) -> None:
    client = [sys.executable, str(PEERS / "kit_clients.py"), "asyncio", "--era", era]
    if era == "stateless":
        # With a listen stream and the tool called as a task (the extension declared).
        client[1:2] = ["-c", EXERCISED, str(PEERS)]
    target = ["--client-url", "--", *client, "--http"] if http else [
        "--client", "--", *client, "--", "{server}"]
    status, report, text = _run(["--seed", str(seed), "--era", era, "--call-timeout", "10",
                                 "--budget", "90", "--examples", "5", *target], tmp_path)
    _clean(status, report, text)
    if era == "stateless":
        assert "listen acknowledged" in text and "tasks/get answered (completed)" in text, text


def _judged(status: int, report: dict[str, Any], text: str) -> None:
    assert status in (0, 1), text
    assert report["seed"] is not None and "findings" in report, text
    assert "Traceback" not in text


@pytest.mark.parametrize("seed", SEEDS)
def test_the_sdk_stdio_server_gets_a_verdict(seed: int, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    _judged(*_run(["--seed", str(seed), "--examples", "4", "--call-timeout", "2",
                   "--budget", "60", *_revision(seed, rotate=True), "--", sys.executable,
                   str(PEERS / "sdk_small_server.py")], tmp_path))


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    pytest.importorskip("mcp")
    yield from _served([sys.executable, str(PEERS / "sdk_http_server.py")])


@pytest.mark.parametrize("seed", SEEDS)
def test_the_sdk_http_server_gets_a_verdict(sdk_url: str, seed: int, tmp_path: Path) -> None:
    _judged(*_run(["--seed", str(seed), "--examples", "4", "--call-timeout", "2",
                   "--budget", "60", *_revision(seed + 1, rotate=True), "--url",
                   sdk_url], tmp_path))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_sdk_client_gets_a_verdict(seed: int, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    _judged(*_run(["--seed", str(seed), "--budget", "60", "--client", "--", sys.executable,
                   str(PEERS / "sdk_client.py"), "--mode", "auto", "--", "{server}"],
                  tmp_path))
