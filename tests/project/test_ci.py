"""The CI scripts' promises (issue 11): a passing run reads as passing, a failing one shows why.

* ``.ci/conformance.py`` reads each harness run's output and prints one line for it: the
  scenarios passed, the expected failures counted with their reason (the ``#:`` lines of
  ``.ci/conformance-expected-failures.yml``), the unscored ones; a run with an unexpected
  failure or a stale entry prints those in full. Checked on outputs shaped like the
  harness's (its summary rows and its baseline report, colours included).
* The example server's deliberate failure logs one quiet line under serve-example's own log
  handler, and any other handler exception keeps its ERROR line and traceback.
* ``.ci/run`` requires the schemas; the marker tables name files that exist.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from mcp_sansio.adapters.tools import _example_server

from tests import conftest
from tests.paths import ROOT


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / ".ci" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


conformance = _load("conformance")

YELLOW, GREEN, RED, RESET = "\x1b[33m", "\x1b[32m", "\x1b[31m", "\x1b[0m"
REASONS = [("auth/*", "not implemented")]

#: A client run as the harness prints it when every failure is expected or unscored.
CLIENT_PASSING = f"""\
=== SUITE SUMMARY ===
\u2713 initialize: 1 passed, 0 failed
\u2713 tools_call: 2 passed, 0 failed
\u2717 auth/metadata-default: 0 passed, 7 failed
\u2717 auth/basic-cimd: 0 passed, 1 failed
\u2717 sse-retry: 0 passed, 1 failed
\u2713 auth/dpop-nonce: 1 passed, 0 failed
Total: 4 passed, 9 failed, 0 warnings

{YELLOW}Expected failures (in baseline):{RESET}
  ~ auth/metadata-default
  ~ auth/basic-cimd

{GREEN}Baseline check passed: all failures are expected.{RESET}
"""

#: The same run where a scored scenario broke and an expected failure started passing.
CLIENT_FAILING = f"""\
=== SUITE SUMMARY ===
\u2713 initialize: 1 passed, 0 failed
\u2717 tools_call: 1 passed, 1 failed
\u2713 auth/basic-cimd: 1 passed, 0 failed
\u2717 auth/metadata-default: 0 passed, 7 failed
Total: 3 passed, 8 failed, 0 warnings

{YELLOW}Expected failures (in baseline):{RESET}
  ~ auth/metadata-default

{RED}Stale baseline entries (now passing - remove from baseline):{RESET}
  \u2713 auth/basic-cimd

{RED}Unexpected failures (not in baseline):{RESET}
  \u2717 tools_call

{RED}Baseline is stale: update your expected-failures file to remove passing entries.{RESET}
"""

#: The handshake-era harness: no baseline, one failing scenario.
OLD_FAILING = """\
Running all suite (3 scenarios) against http://127.0.0.1:1/mcp
=== SUMMARY ===
\u2713 ping: 1 passed, 0 failed
\u2717 tools-call-error: 0 passed, 1 failed
\u2713 tools-list: 1 passed, 0 failed
Total: 2 passed, 1 failed
"""


def test_a_passing_client_run_is_one_line_with_its_expected_failures_counted() -> None:
    outcome = conformance.read_output(CLIENT_PASSING)
    assert outcome.passed == ["initialize", "tools_call", "auth/dpop-nonce"]
    assert outcome.expected == ["auth/metadata-default", "auth/basic-cimd"]
    assert outcome.not_scored() == ["sse-retry"]
    assert outcome.extensions() == (["auth/dpop-nonce"], [])
    assert (outcome.unexpected, outcome.stale) == ([], [])
    line = conformance.summary("client 2025-11-25", outcome, 0, 4.6, REASONS)
    assert line == (
        "client 2025-11-25: 3 scenarios passed (4 checks); 2 expected failures "
        "(auth/*: not implemented; see .ci/conformance-expected-failures.yml); "
        "1 unscored scenarios failed (sse-retry: run, but not scored by this requirement "
        "set); 1 of 1 authorization extension scenarios passed (ok, 5 s)")
    assert "\u2717" not in line and "failed," not in line


def test_a_failing_extension_scenario_fails_the_run_and_is_named() -> None:
    outcome = conformance.read_output(CLIENT_PASSING.replace(
        "\u2713 auth/dpop-nonce: 1 passed, 0 failed", "\u2717 auth/dpop-nonce: 0 passed, 1 failed"))
    assert outcome.extensions() == ([], ["auth/dpop-nonce"])
    line = conformance.summary("client 2025-11-25", outcome, 0, 4.6, REASONS)
    assert "0 of 1 authorization extension scenarios passed, 1 FAILED (auth/dpop-nonce)" in line
    assert line.endswith("(FAILED: an extension scenario failed, 5 s)")


def test_a_failing_run_names_its_unexpected_and_stale_entries_in_full() -> None:
    outcome = conformance.read_output(CLIENT_FAILING)
    assert outcome.unexpected == ["tools_call"]
    assert outcome.stale == ["auth/basic-cimd"]
    assert outcome.not_scored() == []
    line = conformance.summary("client 2026-07-28", outcome, 1, 3.0, REASONS)
    assert "1 UNEXPECTED failures (tools_call)" in line
    assert "1 listed as expected failures now PASS (auth/basic-cimd" in line
    assert line.endswith("(FAILED, exit 1, 3 s)")
    shown = conformance.details(CLIENT_FAILING, outcome, client_mode=True)
    assert "\u2717 tools_call: 1 passed, 1 failed" in shown
    assert "  \u2713 auth/basic-cimd" in shown and "  \u2717 tools_call" in shown
    # The expected failure's row and list entry are left out; no colour codes.
    assert not [x for x in shown if "auth/metadata-default" in x]
    assert not [x for x in shown if "\x1b[" in x]


def test_a_run_without_a_baseline_counts_every_failure_as_a_failure() -> None:
    outcome = conformance.read_output(OLD_FAILING)
    assert not outcome.baseline and outcome.not_scored() == []
    line = conformance.summary("server 0.1.16 --suite all", outcome, 1, 1.0, REASONS)
    assert "1 FAILED (tools-call-error)" in line
    shown = conformance.details(OLD_FAILING, outcome, client_mode=False)
    assert "\u2717 tools-call-error: 0 passed, 1 failed" in shown


def test_several_reason_groups_are_counted_apart() -> None:
    outcome = conformance.Outcome(expected=["auth/a", "auth/b", "sse-retry:check-1"],
                                  baseline=True)
    line = conformance.summary("client x", outcome, 0, 1.0,
                               [("auth/*", "no OAuth"), ("sse-*", "flaky mock")])
    assert "3 expected failures (2 auth/*: no OAuth; 1 sse-*: flaky mock; see" in line


def test_reason_lines_are_read(tmp_path: Path) -> None:
    listing = tmp_path / "expected.yml"
    listing.write_text("# prose: not a reason\n#: auth/*: not implemented\nclient:\n  - auth/x\n")
    assert conformance.read_reasons(listing) == [("auth/*", "not implemented")]


def test_every_expected_failure_has_a_reason_line() -> None:
    text = (ROOT / ".ci" / "conformance-expected-failures.yml").read_text()
    entries = re.findall(r"^\s*- ([^\s#]+)", text, re.M)
    reasons = conformance.read_reasons()
    for entry in entries:
        scenario = entry.split(":", 1)[0]
        assert any(re.fullmatch(p.replace("*", ".*"), scenario) for p, _ in reasons), entry


# -- the example server's deliberate failure ------------------------------------------------


def _log_through_serve_examples_handler(error: BaseException) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_example_server._quiet_deliberate)
    logger = logging.getLogger("mcp_sansio.adapters.test_ci_probe")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            raise error
        except BaseException as exc:
            logger.error("task %s failed", "T1", exc_info=exc)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


def test_a_deliberate_failure_prints_no_traceback() -> None:
    out = _log_through_serve_examples_handler(
        _example_server.DeliberateFailure("breaks on purpose"))
    assert "Traceback" not in out and "ERROR" not in out


def test_a_real_handler_exception_keeps_its_traceback() -> None:
    out = _log_through_serve_examples_handler(RuntimeError("a real bug"))
    assert out.startswith("ERROR mcp_sansio.adapters.test_ci_probe: task T1 failed")
    assert "Traceback" in out and "RuntimeError: a real bug" in out


def test_the_protocol_error_fixture_fails_deliberately() -> None:
    import asyncio

    server = _example_server.build(asyncio.sleep)
    with pytest.raises(_example_server.DeliberateFailure):
        asyncio.run(server.tools["protocol_error_job"].fn())


# -- CI requires the schemas; the marker tables ----------------------------------------------


def test_ci_requires_the_schemas_before_the_test_command() -> None:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    export = lines.index("export MCP_REQUIRE_SCHEMAS=1")
    command = next(i for i, line in enumerate(lines) if ".ci/check.py" in line)
    assert export < command


def test_the_marker_tables_name_existing_tests() -> None:
    for module in conftest.MODULE_MARKERS:
        assert (ROOT / "tests" / module).is_file(), module
    for module, function in conftest.TEST_MARKERS:
        assert f"def {function}(" in (ROOT / "tests" / module).read_text(), function
    markers = {m for m, _ in [*conftest.MODULE_MARKERS.values(), *conftest.TEST_MARKERS.values()]}
    assert markers <= set(conftest.NOT_QUICK)
    assert conftest.marker_for("core/test_types.py", "test_x") == "slow"
    assert conftest.marker_for("core/test_capabilities.py",
                               "test_random_capabilities_incoming") == "slow"
    assert conftest.marker_for("core/test_capabilities.py", "test_the_table") is None


def test_this_module_is_quick(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("quick") is not None
    assert not any(request.node.get_closest_marker(m) for m in conftest.NOT_QUICK)
