"""``mcp-sansio check``: bad usage exits 2, our stdio server on every runtime has no
findings (exit 0), the documented pytest entry point raises on a MUST."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from mcp_sansio.adapters.testing_server import assert_server_conforms, check_server
from mcp_sansio.adapters.tools import _check_cli

from mcp_sansio import KNOWN_REVISIONS
from mcp_sansio import testing as kit
from mcp_sansio.__main__ import main as cli_main
from tests.paths import ROOT

EXAMPLE = [sys.executable, "-P", "-m", "mcp_sansio", "serve-example"]


@pytest.mark.parametrize("argv", [
    [],                                                   # nothing to check
    ["--url", "http://127.0.0.1:9/mcp", "--", "x"],       # both
    ["--client", "--", "my-client"],                      # no {server} placeholder
    ["--revision", "1999-01-01", "--", "x"],              # unknown revision
    ["--revision", "2026-07-28", "--era", "handshake", "--", "x"],
    ["--examples", "-1", "--", "x"],
    ["--budget", "0", "--", "x"],
    ["--url", "http://127.0.0.1:9/mcp", "--client-url"],  # exclusive forms
    ["--client", "--legacy-sse", "--", "c", "{server}"],   # legacy HTTP+SSE is for HTTP clients
])
def test_bad_usage_exits_2(argv: list[str]) -> None:
    err = io.StringIO()
    out = io.StringIO()
    assert _check_cli.main(argv, out=out, err=err) == 2


def test_a_peer_that_cannot_be_started_exits_2() -> None:
    err = io.StringIO()
    assert _check_cli.main(["--examples", "0", "--", "/nonexistent/mcp-server"],
                           err=err) == 2
    assert "mcp-sansio check:" in err.getvalue()


def test_check_is_a_subcommand_of_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["check", "--help"]) == 0
    assert "--client-url" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli_main(["--help"])
    assert "check" in capsys.readouterr().out


@pytest.mark.parametrize("runtime", ["asyncio", "trio", "threading"])
def test_our_stdio_server_has_no_findings_on_every_runtime(runtime: str, tmp_path: Path
                                                           ) -> None:
    out = io.StringIO()
    target = tmp_path / "report.json"
    junit = tmp_path / "report.xml"
    status = _check_cli.main(["--examples", "3", "--budget", "120", "--json", str(target),
                              "--junit", str(junit), "--", *EXAMPLE, "--runtime", runtime],
                             out=out)
    assert status == 0, out.getvalue()
    report = json.loads(target.read_text())
    assert report["findings"] == [] and report["ok"] is True
    assert set(report["sessions"]) == set(KNOWN_REVISIONS)
    suite = ElementTree.fromstring(junit.read_text())
    assert suite.get("failures") == "0"


def test_the_pytest_entry_point_raises_on_a_must(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    broken = [sys.executable, "-m", "tests.peers.broken_servers", "ping-2025-06-18"]
    with pytest.raises(kit.CheckFailed) as info:
        assert_server_conforms(broken, revision="2025-06-18", examples=0)
    assert isinstance(info.value, AssertionError)
    assert "ping (MUST)" in str(info.value)
    assert info.value.report.rules() == {"ping"}
    # A SHOULD alone does not fail it; check_server never raises.
    shoulds = [sys.executable, "-m", "tests.peers.broken_servers", "unknown-tool-2025-06-18"]
    report = assert_server_conforms(shoulds, revision="2025-06-18", examples=0)
    assert report.rules() == {"unknown-tool"} and report.ok
    assert not check_server(broken, revision="2025-06-18", examples=0).ok


def test_the_documented_pytest_snippet_runs() -> None:
    page = (ROOT / "docs" / "checking.rst").read_text()
    start = page.index("   from mcp_sansio.adapters.testing_server import assert_server_conforms")
    snippet = page[page.rindex(".. code-block:: python", 0, start):]
    snippet = snippet.split("\n\n", 1)[1]
    lines = []
    for line in snippet.splitlines():
        if line and not line.startswith("   "):
            break
        lines.append(line[3:])
    code = "\n".join(lines)
    assert "test_the_example_server_conforms()" in code
    exec(compile(code, "checking.rst", "exec"), {})


PEERS = ROOT / "tests" / "peers"


@pytest.mark.parametrize(("form", "fault", "status", "rule"), [
    ("--client", "none", 0, ""),
    ("--client", "no-initialized", 1, "client-initialized"),
    ("--client-url", "none", 0, ""),
    ("--client-url", "garbage-output", 1, "client-output-not-json"),
    ("--client-url --legacy-sse", "none", 0, ""),
    ("--client-url --legacy-sse", "wrong-endpoint", 1, "client-sse-endpoint"),
])
def test_the_client_forms_judge_a_client_command(form: str, fault: str, status: int,
                                                 rule: str, tmp_path: Path) -> None:
    # --client: the command names the kit's server with {server}; --client-url: the kit
    # appends its URL to the command (as the official harness does).
    if form == "--client":
        command = [sys.executable, str(PEERS / "broken_clients.py"), fault, "--", "{server}"]
    else:
        flag = "--sse" if "--legacy-sse" in form else "--http"
        command = [sys.executable, str(PEERS / "broken_clients.py"), fault, flag]
    target = tmp_path / "report.json"
    out = io.StringIO()
    code = _check_cli.main([*form.split(), "--budget", "60", "--examples", "3",
                            "--json", str(target), "--", *command], out=out)
    report = json.loads(target.read_text())
    rules = {finding["rule"] for finding in report["findings"]}
    if status == 0:
        assert code == 0 and not rules, out.getvalue()
    else:
        assert code == 1 and rules == {rule}, out.getvalue()
