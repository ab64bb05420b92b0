"""What makes the checker's verdict trustworthy: a seed in every report and the same
sessions for the same seed, realistic numbers unless asked for wild ones, a peer that is
not deterministic noted (never a traceback), and a command line that always ends with
0, 1 or 2."""

from __future__ import annotations

import io
import itertools
import json
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st
from mcp_sansio.adapters.tools import _check_cli

from mcp_sansio import testing as kit
from mcp_sansio.testing import SchemaStrategies
from tests.check.test_testing_kit import Tampered, good_server

EXAMPLE = [sys.executable, "-P", "-m", "mcp_sansio", "serve-example"]


def _recorded(seed: int | None, sessions: int = 4) -> tuple[kit.Report, list[Any]]:
    sent: list[Any] = []

    def factory() -> Tampered:
        transport = Tampered(good_server(), lambda message, t: [message])
        transport.sent = sent  # one record over every session
        return transport

    report = kit.check_peer(factory, revisions=["2025-06-18", "2026-07-28"],
                            sessions=sessions, steps=8, seed=seed, reply_timeout=0.5,
                            settle_time=0.05)
    return report, sent


def test_the_same_seed_draws_the_same_sessions() -> None:
    first, sent_first = _recorded(11)
    again, sent_again = _recorded(11)
    other, sent_other = _recorded(12)
    assert first.seed == again.seed == 11 and other.seed == 12
    assert sent_first == sent_again
    assert [f.to_dict() for f in first] == [f.to_dict() for f in again]
    assert sent_other != sent_first


def test_the_seed_is_in_every_report_form() -> None:
    report = kit.Report(seed=4242)
    report.note(kit.SLOW_NOTE + "a tool took its time")
    assert report.summary().splitlines()[0] == "seed: 4242"
    assert report.to_json()["seed"] == 4242
    suite = ElementTree.fromstring(report.to_junit())
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["seed"] == "4242"
    assert properties["note"].startswith("slow: ")
    assert kit.Report().summary().startswith("seed: derandomized")


def _flipping_capabilities(message: Any, t: Tampered) -> list[Any]:
    """A peer whose capabilities change from one process to the next (as if it kept state
    on disk): the same draws meet different preconditions."""
    if t.method_of(message) == "initialize" and "result" in message:
        counter = next(_SESSIONS)
        if counter % 2:
            caps = {k: v for k, v in message["result"]["capabilities"].items()
                    if k not in ("tools", "prompts")}
            return [{**message, "result": {**message["result"], "capabilities": caps}}]
    return [message]


_SESSIONS = itertools.count()


def test_a_peer_that_is_not_deterministic_is_a_note_and_the_run_goes_on() -> None:
    report = kit.check_peer(lambda: Tampered(good_server(), _flipping_capabilities),
                            revisions=["2025-06-18"], sessions=40, steps=10, seed=3,
                            reply_timeout=0.5, settle_time=0.05)
    assert report.findings == [], report.summary()
    flaky = [n for n in report.notes if n.startswith("the peer is not deterministic")]
    assert flaky, report.notes
    assert sum(report.sessions.values()) >= 40


@given(st.data())
@settings(max_examples=30, deadline=None)
def test_numbers_are_realistic_unless_wild(data: st.DataObject) -> None:
    realistic = SchemaStrategies(magnitude=10.0)
    free = data.draw(realistic.build({"type": "number"}))
    assert -10 <= free <= 10
    above = data.draw(realistic.build({"type": "integer", "minimum": 100}))
    assert 100 <= above <= 110
    bounded = data.draw(realistic.build({"type": "number", "minimum": -1e6,
                                         "maximum": 1e6}))
    assert -1e6 <= bounded <= 1e6  # the schema's own range is realistic by definition


def test_wild_numbers_reach_the_extremes() -> None:
    wild = SchemaStrategies().build({"type": "number"})
    huge = find(wild, lambda x: abs(x) > 1e6, settings=settings(
        database=None, phases=(Phase.generate,), max_examples=500))
    assert abs(huge) > 1e6


def test_the_command_line_prints_its_seed_in_every_form(tmp_path: Path) -> None:
    out, report, junit = io.StringIO(), tmp_path / "r.json", tmp_path / "r.xml"
    status = _check_cli.main(["--seed", "77", "--revision", "2025-11-25", "--examples", "1",
                              "--call-timeout", "2", "--json", str(report),
                              "--junit", str(junit), "--", *EXAMPLE], out=out)
    assert status == 0, out.getvalue()
    assert out.getvalue().splitlines()[0] == "seed: 77"
    assert json.loads(report.read_text())["seed"] == 77
    assert '<property name="seed" value="77"' in junit.read_text()


def test_derandomize_is_seed_zero_and_excludes_seed() -> None:
    err = io.StringIO()
    assert _check_cli.main(["--seed", "1", "--derandomize", "--", "x"], err=err) == 2
    assert "not both" in err.getvalue()


def test_an_error_of_the_kits_own_is_a_message_not_a_traceback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the kit tripped")

    monkeypatch.setattr(_check_cli, "_run", broken)
    err = io.StringIO()
    status = _check_cli.main(["--seed", "5", "--", "whatever"], out=io.StringIO(), err=err)
    assert status == 2
    assert "RuntimeError: the kit tripped" in err.getvalue() and "seed 5" in err.getvalue()
    assert "Traceback" not in err.getvalue()
