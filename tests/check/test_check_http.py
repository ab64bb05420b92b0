"""The testing kit over HTTP: our server on every runtime has no findings, each broken
HTTP server (``tests/peers/broken_http.py``) trips exactly its transport finding, and
``mcp-sansio check --url`` works."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_sansio.adapters.testing_http import (
    LegacySSETransport,
    StreamableHTTPTransport,
    detect_transport,
)
from mcp_sansio.adapters.testing_server import check_server
from mcp_sansio.adapters.tools import _check_cli

from mcp_sansio import KNOWN_REVISIONS
from mcp_sansio import testing as kit
from tests.peers.broken_http import MODES, BreakingProxy

RUNTIMES = ("asyncio", "trio", "threading")


def _serve(runtime: str) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", "mcp_sansio", "serve-example", "--transport", "http",
         "--runtime", runtime], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        process.terminate()
        process.wait(30)


@pytest.fixture(scope="module", params=RUNTIMES)
def server_url(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from _serve(request.param)


@pytest.fixture(scope="module")
def asyncio_url() -> Iterator[str]:
    yield from _serve("asyncio")


def _factory(url: str) -> StreamableHTTPTransport:
    return StreamableHTTPTransport(url)


def test_our_http_server_passes_the_sweep_on_every_runtime(server_url: str) -> None:
    report = kit.sweep(lambda: _factory(server_url), reply_timeout=5.0, settle_time=0.3,
                       clock=time.monotonic)
    assert report.findings == [], report.summary()
    assert report.sessions == dict.fromkeys(KNOWN_REVISIONS, 1)


def test_our_http_server_passes_random_sessions(server_url: str) -> None:
    report = kit.check_peer(lambda: _factory(server_url), sessions=4, steps=20,
                            revisions=["2025-11-25", "2026-07-28"], reply_timeout=5.0,
                            settle_time=0.3, clock=time.monotonic, call_timeout=5.0)
    assert report.findings == [], report.summary()
    assert report.sessions


def test_detection_finds_streamable_http(asyncio_url: str) -> None:
    assert detect_transport(asyncio_url) == "streamable"


@pytest.mark.parametrize("mode", MODES)
def test_each_broken_http_server_trips_exactly_its_finding(asyncio_url: str, mode: str
                                                           ) -> None:
    revision = "2026-07-28" if mode == "http-headers" else "2025-11-25"
    with BreakingProxy(asyncio_url, mode) as proxy:
        report = kit.sweep(lambda: _factory(proxy.url), revisions=[revision],
                           reply_timeout=5.0, settle_time=0.3, clock=time.monotonic,
                           invalid_rules=[])
    assert report.rules() == {mode}, report.summary()
    [finding, *_] = report.by_rule()[mode]
    assert finding.revision == revision
    assert finding.source == kit.CHECKS[mode].source
    sent = finding.exchange[0]["message"]
    assert isinstance(sent, dict) and sent["http"].split()[0] in ("POST", "GET", "DELETE")


def test_check_server_over_http_with_a_budget(asyncio_url: str) -> None:
    report = check_server(url=asyncio_url, revision="2025-06-18", budget=60, examples=2,
                          steps=10)
    assert report.ok, report.summary()
    assert report.findings == [], report.summary()
    assert not report.cut_short


def test_the_command_line_checks_a_url(asyncio_url: str, tmp_path: Path) -> None:
    out = io.StringIO()
    target = tmp_path / "r.json"
    status = _check_cli.main(["--url", asyncio_url, "--era", "stateless", "--examples", "1",
                              "--json", str(target)], out=out)
    assert status == 0, out.getvalue()
    assert "no findings" in out.getvalue()
    assert json.loads(target.read_text())["findings"] == []


def test_the_command_line_fails_on_a_broken_http_server(asyncio_url: str) -> None:
    with BreakingProxy(asyncio_url, "http-delete") as proxy:
        out = io.StringIO()
        status = _check_cli.main(["--url", proxy.url, "--revision", "2025-11-25",
                                  "--examples", "0"], out=out)
    assert status == 1, out.getvalue()
    assert "http-delete (MUST)" in out.getvalue()
    assert "DELETE /mcp" in out.getvalue() or "POST /mcp" in out.getvalue()


@pytest.fixture(scope="module")
def legacy_url() -> Iterator[str]:
    """Our asyncio server with the legacy HTTP+SSE endpoints (/sse) beside /mcp."""
    process = subprocess.Popen(
        [sys.executable, "-P", "-c", "from mcp_sansio.adapters.tools._example_server import "
         "run_http; run_http(legacy_sse_path='/sse')"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    try:
        url = process.stdout.readline().strip()
        yield url.rsplit("/", 1)[0] + "/sse"
    finally:
        process.terminate()
        process.wait(30)


def test_our_legacy_sse_server_passes_the_sweep(legacy_url: str) -> None:
    assert detect_transport(legacy_url) == "sse"
    report = kit.sweep(lambda: LegacySSETransport(legacy_url),
                       revisions=["2024-11-05", "2025-03-26"], reply_timeout=5.0,
                       settle_time=0.3, clock=time.monotonic)
    assert report.findings == [], report.summary()
    assert report.sessions == {"2024-11-05": 1, "2025-03-26": 1}


def test_the_command_line_finds_the_legacy_transport(legacy_url: str) -> None:
    out = io.StringIO()
    status = _check_cli.main(["--url", legacy_url, "--revision", "2024-11-05",
                              "--examples", "1"], out=out)
    assert status == 0, out.getvalue()
    assert "no findings" in out.getvalue()
