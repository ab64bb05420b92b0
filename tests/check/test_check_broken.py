"""Deliberately broken servers (``tests/peers/broken_servers.py``): each trips exactly the
finding of the rule it breaks, and the command line fails on one served over stdio."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from mcp_sansio.adapters.tools import _check_cli

from mcp_sansio import testing as kit
from tests.paths import ROOT
from tests.peers.broken_servers import BROKEN


def test_there_are_at_least_thirty_broken_servers() -> None:
    assert len(BROKEN) >= 30
    assert len({b.rule for b in BROKEN.values()}) >= 30


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_each_broken_server_trips_exactly_its_finding(name: str) -> None:
    broken = BROKEN[name]
    report = kit.sweep(broken.transport, revisions=[broken.revision], reply_timeout=1.0,
                       invalid_rules=broken.invalid_rules)
    assert report.rules() == {broken.rule}, report.summary()
    finding = report.by_rule()[broken.rule][0]
    assert finding.revision == broken.revision
    # (a few checks are a SHOULD in one revision and a MUST in another: see CHECKS)
    assert finding.requirement in ("must", "should")
    assert finding.source == kit.CHECKS[broken.rule].source
    assert finding.exchange, "a finding carries the exchange that shows it"
    assert not finding.cut_short


def test_the_command_line_reports_a_broken_stdio_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the broken servers run as `python -m tests.peers...`
    out = tmp_path / "report.json"
    junit = tmp_path / "report.xml"
    command = [sys.executable, "-m", "tests.peers.broken_servers", "unknown-tool-2025-06-18"]
    text = io.StringIO()
    status = _check_cli.main(["--revision", "2025-06-18", "--examples", "0", "--budget", "60",
                              "--json", str(out), "--junit", str(junit), "--", *command],
                             out=text)
    assert status == 0  # unknown-tool is a SHOULD: no MUST violated
    report = json.loads(out.read_text())
    [finding] = report["findings"]
    assert finding["rule"] == "unknown-tool"
    assert finding["severity"] == "SHOULD"
    assert "expected error -32602" in finding["message"]
    assert [step["from"] for step in finding["exchange"]] == ["kit", "peer"]
    assert finding["exchange"][0]["message"]["params"]["name"] == "kit-no-such-tool"
    assert "unknown-tool (SHOULD)" in text.getvalue()
    assert "<testsuite" in junit.read_text()


def test_the_command_line_exits_1_on_a_must(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    status = _check_cli.main(["--revision", "2025-06-18", "--examples", "0", "--junit", "-",
                              "--", sys.executable, "-m", "tests.peers.broken_servers",
                              "ping-2025-06-18"], out=out)
    assert status == 1, out.getvalue()
    assert '<failure message="ping (must)' in out.getvalue()
