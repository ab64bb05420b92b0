"""``check_client`` against real client processes: ours (no findings, every step taken),
the deliberately broken ones (exactly their finding) and the official SDK's (the findings
listed in docs/checking-clients.rst)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_sansio.adapters.testing_client import check_client

from mcp_sansio.testing import CHECKS, Report
from tests.paths import PEERS, ROOT

#: Generous: the machine is shared with other test runs. Only the "no-ping" broken client
#: waits it out.
CALL_TIMEOUT = 10.0
BUDGET = 120.0

TASK_STEPS = ["tasks/get answered", "tasks/result answered"]
HANDSHAKE_STEPS = ["initialize answered", "initialized", "ping answered",
                   "roots/list answered", "sampling/createMessage answered",
                   "elicitation/create answered", "hostile output sent",
                   "liveness ping answered"]
HTTP_STEPS = ["stream dropped", "stream resumed", "session expired",
              "initialized again after 404"]
STATELESS_STEPS = ["input_required sent", "input_required retried", "hostile output sent"]


def command(script: str, *args: str, http: bool, flag: str = "--http") -> list[str]:
    return [sys.executable, str(PEERS / script), *args,
            *([flag] if http else ["--", "{server}"])]


def steps(report: Report) -> str:
    return " ".join(n for n in report.notes if n.startswith("steps: "))


def run(cmd: list[str], *, http: bool, **options: Any) -> Report:
    options.setdefault("call_timeout", CALL_TIMEOUT)
    return check_client(cmd, http=http, budget=BUDGET, examples=5, **options)


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
@pytest.mark.parametrize("era", ["handshake", "stateless"])
@pytest.mark.parametrize("runtime", ["asyncio", "trio", "threads"])
def test_our_clients_have_no_findings(runtime: str, era: str, http: bool) -> None:
    report = run(command("kit_clients.py", runtime, "--era", era, http=http), http=http,
                 era=era)
    assert not report.findings, report.summary()
    expected = (HANDSHAKE_STEPS + (HTTP_STEPS if http else []) if era == "handshake"
                else STATELESS_STEPS)
    for step in expected:
        assert step in steps(report), report.summary()


LEGACY_STEPS = ["endpoint sent", *HANDSHAKE_STEPS]


@pytest.mark.parametrize("era", ["handshake", None], ids=["handshake", "dual"])
@pytest.mark.parametrize("runtime", ["asyncio", "trio", "threads"])
def test_our_clients_pass_over_legacy_http_sse(runtime: str, era: str | None) -> None:
    # Each finds the legacy transport by itself: its POST to the URL is refused (405),
    # it GETs the URL and the endpoint event follows.
    report = run(command("kit_clients.py", runtime, *(["--era", era] if era else []),
                         http=True), http=True, legacy_sse=True)
    assert not report.findings, report.summary()
    for step in LEGACY_STEPS:
        assert step in steps(report), report.summary()


def test_a_dual_era_kit_lets_our_client_choose() -> None:
    report = run(command("kit_clients.py", "asyncio", http=False), http=False)
    assert not report.findings, report.summary()
    assert set(report.sessions) == {"2026-07-28"}


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
def test_our_dual_era_client_falls_back_to_a_handshake_kit(http: bool) -> None:
    report = run(command("kit_clients.py", "asyncio", http=http), http=http, era="handshake")
    assert not report.findings, report.summary()
    assert set(report.sessions) == {"2025-11-25"}
    assert "liveness ping answered" in steps(report)


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_the_conformance_client_has_no_findings(version: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_CONFORMANCE_PROTOCOL_VERSION", version)
    monkeypatch.delenv("MCP_CONFORMANCE_SCENARIO", raising=False)
    report = run([sys.executable, "-m", "mcp_sansio", "conformance-client"], http=True)
    assert not report.findings, report.summary()
    assert set(report.sessions) == {version}
    expected = STATELESS_STEPS if version == "2026-07-28" else HANDSHAKE_STEPS + HTTP_STEPS
    for step in expected:
        assert step in steps(report), report.summary()


#: The broken clients whose finding is a timeout run with a shorter one: the plain client
#: takes milliseconds for each step, so 5 s still leaves room for a loaded machine.
WAITED_OUT = {"no-ping", "no-sampling-answer"}
WAITED_OUT_TIMEOUT = 5.0

#: Each broken client, the transport(s) it runs on, and the one finding it must trip.
BROKEN = [
    ("garbage-output", "stdio", "client-output-not-json"),
    ("bad-envelope", "stdio", "client-envelope"),
    ("request-before-initialize", "stdio", "client-request-before-initialize"),
    ("bad-initialize", "stdio", "client-initialize-schema"),
    ("no-initialized", "stdio", "client-initialized"),
    ("unknown-method", "stdio", "client-unknown-request"),
    ("ungated", "stdio", "client-capability-gating"),
    ("bad-request", "stdio", "client-request-schema"),
    ("reuse-id", "stdio", "client-id-reused"),
    ("unknown-notification", "stdio", "client-unknown-notification"),
    ("cancel-initialize", "stdio", "client-cancel-initialize"),
    ("cancel-unknown", "stdio", "client-cancel-unknown"),
    ("progress-unknown", "stdio", "client-progress-unknown-token"),
    ("progress-decreasing", "stdio", "client-progress-not-increasing"),
    ("no-ping", "stdio", "client-ping"),
    ("bad-ping", "http", "client-ping"),
    ("duplicate-response", "stdio", "client-duplicate-response"),
    ("undeclared-roots", "stdio", "client-undeclared-answer"),
    ("bad-roots", "http", "client-result-schema"),
    ("crash-on-garbage", "stdio", "client-robustness"),
    ("crash-on-garbage", "http", "client-robustness"),
    ("crash-on-garbage", "http-stateless", "client-robustness"),
    ("stateless-initialize", "stdio", "client-version"),
    ("roots-changed-undeclared", "stdio", "client-notification-gating"),
    ("no-sampling-answer", "stdio", "client-no-reply"),
    ("url-content", "stdio", "client-elicitation-url-result"),
    ("task-get-no-status", "stdio", "client-task-result"),
    ("no-session-id", "http", "client-session-id"),
    ("no-version-header", "http", "client-protocol-version-header"),
    ("no-reinitialize", "http", "client-reinitialize"),
    ("no-resume", "http", "client-sse-resume"),
    ("no-delete", "http", "client-session-end"),
    ("wrong-endpoint", "sse", "client-sse-endpoint"),
    ("no-meta", "stdio-stateless", "client-meta-envelope"),
    ("retry-same-id", "stdio-stateless", "client-input-retry"),
    ("no-method-header", "http-stateless", "client-method-headers"),
    ("no-param-header", "http-stateless", "client-method-headers"),
    ("listen-cancel-post", "http-stateless", "client-listen"),
    ("task-ignored", "stdio-stateless", "client-task-poll"),
    ("task-poll-eager", "http-stateless", "client-task-poll"),
    ("task-update-stray", "stdio-stateless", "client-task-update"),
]


def test_the_broken_clients_break_distinct_rules() -> None:
    rules = {rule for _, _, rule in BROKEN}
    assert len(rules) >= 15
    assert all(rule in CHECKS for rule in rules)


@pytest.mark.parametrize(("fault", "where", "rule"), BROKEN,
                         ids=[f"{f}-{w}" for f, w, _ in BROKEN])
def test_a_broken_client_trips_exactly_its_finding(fault: str, where: str,
                                                   rule: str) -> None:
    http = where.startswith(("http", "sse"))
    era = ["--era", "stateless"] if where.endswith("stateless") else []
    options: dict[str, Any] = {"era": "stateless" if era else None}
    if fault in WAITED_OUT:
        options["call_timeout"] = WAITED_OUT_TIMEOUT
    if where == "sse":
        options["legacy_sse"] = True
    report = run(command("broken_clients.py", fault, *era, http=http,
                         flag="--sse" if where == "sse" else "--http"), http=http, **options)
    assert report.rules() == {rule}, report.summary()
    assert report.findings[0].requirement == CHECKS[rule].requirement or (
        rule == "client-capability-gating")


def test_the_correct_broken_client_is_clean() -> None:
    for http in (False, True):
        report = run(command("broken_clients.py", "none", http=http), http=http)
        assert not report.findings, report.summary()
    report = run(command("broken_clients.py", "none", http=True, flag="--sse"), http=True,
                 legacy_sse=True)
    assert not report.findings, report.summary()
    # It declares URL-mode elicitation and tasks for sampling: both were exercised.
    for step in ["liveness ping answered", "elicitation/create (url) answered", *TASK_STEPS]:
        assert step in steps(report), report.summary()


#: What the official SDK's client (``mcp``, see docs/checking-clients.rst) trips, by mode
#: and transport: each checked by hand against the spec text.
SDK_FINDINGS = {
    ("legacy", False): set(),
    ("legacy", True): {"client-reinitialize"},
    ("auto", False): set(),
    # An SSE event whose data is not JSON fails the pending call, although its valid answer
    # follows on the same stream (over stdio the same line is skipped).
    ("auto", True): {"client-robustness"},
}


@pytest.mark.parametrize(("mode", "http"), list(SDK_FINDINGS),
                         ids=[f"{m}-{'http' if h else 'stdio'}" for m, h in SDK_FINDINGS])
def test_the_official_sdk_client(mode: str, http: bool) -> None:
    pytest.importorskip("mcp")
    report = run(command("sdk_client.py", "--mode", mode, http=http), http=http)
    assert report.rules() == SDK_FINDINGS[mode, http], report.summary()


def test_a_command_without_the_placeholder_is_refused() -> None:
    with pytest.raises(ValueError, match="placeholder"):
        check_client([sys.executable, "-c", "pass"], http=False)


def test_a_client_that_never_connects_is_noted_not_found() -> None:
    report = check_client([sys.executable, "-c", "import sys; sys.exit(0)", "{server}"],
                          http=False, budget=30)
    assert not report.findings
    assert any("never started" in n for n in report.notes)


def test_the_budget_cuts_a_hanging_client_short() -> None:
    report = check_client([sys.executable, "-c", "import time; time.sleep(60)"], http=True,
                          budget=1.0)
    assert any("cut short" in n for n in report.notes)


def test_relay_module_runs(tmp_path: Path) -> None:
    # The relay is what a client spawns: it must import without the test tree.
    env = dict(os.environ, PYTHONPATH="")
    import subprocess

    done = subprocess.run([sys.executable, "-m", "mcp_sansio.adapters.testing_client"],
                          check=False, capture_output=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and b"relay HOST:PORT" in done.stderr


def test_the_documented_example_runs() -> None:
    import subprocess

    root = ROOT
    page = (root / "docs" / "checking-clients.rst").read_text()
    assert "literalinclude:: examples/check_client.py" in page
    done = subprocess.run([sys.executable, str(root / "docs" / "examples" / "check_client.py")],
                          capture_output=True, text=True, check=True, cwd=root, timeout=120)
    assert "no findings" in done.stdout, done.stdout


#: One of our clients declaring URL-mode elicitation on top of the form mode its callback
#: implies (kit_clients.py's exercise, with ``capabilities=``).
URL_CLIENT = ("import sys; sys.path.insert(0, sys.argv.pop(1)); import kit_clients; "
              "kit_clients.OPTIONS['capabilities'] = {'elicitation': {'url': {}}}; "
              "sys.exit(kit_clients.main(sys.argv[1:]))")


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
@pytest.mark.parametrize("runtime", ["asyncio", "trio", "threads"])
def test_our_clients_answer_url_mode_elicitation(runtime: str, http: bool) -> None:
    cmd = [sys.executable, "-c", URL_CLIENT, str(PEERS), runtime, "--era", "handshake",
           *(["--http"] if http else ["--", "{server}"])]
    report = run(cmd, http=http, era="handshake")
    assert not report.findings, report.summary()
    assert "elicitation/create (url) answered" in steps(report), report.summary()


def test_a_client_without_url_mode_gets_no_url_elicitation() -> None:
    report = run(command("kit_clients.py", "asyncio", "--era", "handshake", http=False),
                 http=False, era="handshake")
    assert "elicitation/create answered" in steps(report), report.summary()
    assert "(url)" not in steps(report), report.summary()
