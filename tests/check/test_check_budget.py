"""Budgets and scope of the testing kit: a tool that keeps reporting progress is slow, not
unanswered; one that answers late is not "never answered"; a run stops when its budget is
spent and says so; destructive, excluded and unlisted tools are not called; generated
arguments stay within their bound."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from mcp_sansio.adapters.testing_server import check_server
from mcp_sansio.adapters.testing_stdio import StdioTransport

from mcp_sansio import testing as kit
from tests.check.test_testing_kit import Tampered, _on_method, good_server

EXAMPLE = [sys.executable, "-P", "-m", "mcp_sansio", "serve-example"]


def _example() -> StdioTransport:
    return StdioTransport(EXAMPLE)


def _one_call(arguments: dict[str, Any], *, progress: bool, call_timeout: float,
              reply_timeout: float = 1.0) -> tuple[kit.Report, Any]:
    """One 2025-11-25 session that calls the example server's sleep tool, then ends."""
    report = kit.Report()
    machine = kit.PeerMachine.configure(
        _example, report=report, clock=time.monotonic, call_timeout=call_timeout,
        reply_timeout=reply_timeout, settle_time=0.2)
    session = machine()
    session.open_session("2025-11-25")
    assert session.alive
    call = session.request("tools/call", {"name": "sleep", "arguments": arguments},
                           progress=progress, tool=session.tools["sleep"])
    session.teardown()
    return report, call


def test_a_tool_that_keeps_reporting_progress_is_slow_not_unanswered() -> None:
    report, _ = _one_call({"seconds": 600}, progress=True, call_timeout=2.0)
    assert report.findings == [], report.summary()
    assert any("was still working" in note and "counted as slow" in note
               for note in report.notes), report.notes
    assert not report.cut_short


def test_a_tool_that_answers_late_is_not_never_answered() -> None:
    # Silent for longer than reply_timeout (no progress token), answered well within
    # call_timeout: waited for, no finding.
    report, _ = _one_call({"seconds": 2.5}, progress=False, call_timeout=20.0,
                             reply_timeout=0.5)
    assert report.findings == [], report.summary()
    assert not report.notes, report.notes


def test_a_tool_still_silent_at_the_call_timeout_is_slow_not_unanswered() -> None:
    # No progress and no answer within call_timeout: time is not a violation (nothing finite
    # proves a tool will never answer) -- a slow note naming the tool and its arguments.
    report, _ = _one_call({"seconds": 600}, progress=False, call_timeout=1.5)
    assert report.findings == [], report.summary()
    [note] = report.notes
    assert note.startswith(kit.SLOW_NOTE) and "'sleep'" in note and '"seconds": 600' in note
    assert "unanswered after 1.5 s" in note


def test_the_budget_cuts_a_run_short() -> None:
    started = time.monotonic()
    report = check_server(EXAMPLE, budget=2.0, examples=50)
    assert report.cut_short
    assert report.ok, report.summary()
    assert "cut short" in report.summary()
    assert report.to_json()["cut_short"] is True
    # The run stops at the budget, give or take one owed answer's wait (generous: the
    # machine is shared).
    assert time.monotonic() - started < 120


def _annotate(annotations: dict[str, dict[str, Any]]) -> Any:
    def change(message: Any, t: Tampered) -> list[Any]:
        tools = [{**tool, "annotations": annotations[tool["name"]]}
                 if tool["name"] in annotations else tool
                 for tool in message["result"]["tools"]]
        return [{**message, "result": {**message["result"], "tools": tools}}]
    return _on_method("tools/list", change)


def _called(transport: Tampered) -> set[str]:
    return {m["params"]["name"] for m in transport.sent if isinstance(m, dict)
            and m.get("method") == "tools/call"}


def _sweep_with(**scope: Any) -> tuple[kit.Report, Tampered]:
    transports: list[Tampered] = []
    output = _annotate({"echo": {"destructiveHint": True},
                        "add": {"destructiveHint": True, "readOnlyHint": True}})

    def factory() -> Tampered:
        transports.append(Tampered(good_server(), output))
        return transports[-1]

    report = kit.sweep(factory, revisions=["2025-06-18"], invalid_rules=[], **scope)
    return report, transports[0]


def test_destructive_tools_are_not_called_unless_allowed() -> None:
    report, transport = _sweep_with()
    assert report.findings == [], report.summary()
    assert "echo" not in _called(transport)
    assert "add" in _called(transport)  # readOnlyHint wins over destructiveHint
    assert any("'echo' is annotated destructive" in note for note in report.notes)
    _, transport = _sweep_with(allow_destructive=True)
    assert "echo" in _called(transport)


def test_tools_are_chosen_by_pattern() -> None:
    _, transport = _sweep_with(tools=["a*", "slo?"])
    assert _called(transport) == {"add", "slow", "kit-no-such-tool"}
    _, transport = _sweep_with(exclude_tools=["slow"], allow_destructive=True)
    assert _called(transport) == {"add", "echo", "kit-no-such-tool"}


def test_generated_arguments_stay_within_their_bound() -> None:
    transports: list[Tampered] = []

    def factory() -> Tampered:
        transports.append(Tampered(good_server(), lambda m, t: [m]))
        return transports[-1]

    kit.sweep(factory, revisions=["2025-06-18"], invalid_rules=[], max_argument_size=20)
    kit.check_peer(factory, revisions=["2025-06-18"], sessions=10, steps=30, invalid_rules=[],
                   max_argument_size=20)
    sizes = [len(json.dumps(m["params"]["arguments"], separators=(",", ":"),
                            ensure_ascii=False).encode())
             for t in transports for m in t.sent if isinstance(m, dict)
             and m.get("method") == "tools/call" and m["params"]["name"] != "kit-no-such-tool"]
    assert sizes
    assert max(sizes) <= 20


def test_shrink_finds_the_smallest_session_that_shows_a_check() -> None:
    from tests.check.test_testing_kit import _unknown_tool_as_result

    finding = kit.shrink(lambda: Tampered(good_server(), _unknown_tool_as_result),
                         "unknown-tool", revisions=["2025-06-18"], sessions=30, steps=20)
    assert finding is not None
    assert finding.rule == "unknown-tool" and finding.shrunk
    assert finding.sent["params"]["name"] == "kit-no-such-tool"
    assert finding.to_dict()["shrunk"] is True
    # A check the peer never trips: nothing to shrink.
    assert kit.shrink(good_server, "unknown-tool", revisions=["2025-06-18"], sessions=5,
                      steps=10) is None

