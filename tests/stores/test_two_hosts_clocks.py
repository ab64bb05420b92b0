"""Hosts whose clocks disagree, with the clocks injected (the pure half of issue 18's
proof; tests/stores/test_two_hosts.py is the half with processes). Each host has its own monotonic
clock -- seconds since *its* boot, so two hosts' readings are unrelated -- and its own wall
clock, off the true time by at most the skew allowance (:data:`DEFAULT_SKEW`).

What crosses hosts is judged on the wall clock only, and within the allowance the answers
are the ones a single host would give:

* a session's record in the shared table (its idle deadline): a client that alternates
  between two skewed hosts keeps its session as long as it keeps talking, and once it
  stops the session ends on both hosts within the idle timeout plus the skew, never
  earlier than three quarters of it minus the skew (docs/deploying.rst, "Behind a load
  balancer");
* the sealed ``requestState`` (tests/core/test_keyring.py: expiry, issue time, the allowance);
* the key ring's rotation (tests/stores/test_shared_keys.py: a new key seals after two refresh
  intervals on each host's own monotonic clock, which never crosses a host).

Task records (``createdAt``/``ttl``) have no shared store yet; their skew tests join here
when they do.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio._stateless import DEFAULT_SKEW
from mcp_sansio.stores import MemoryEventLog, MemorySessionTable
from tests.http.test_http_shared import WALL, Worker, request

#: The session idle timeout of these tests: ten minutes (the default is an hour; the
#: proportions are what matter).
IDLE = 600.0


class Host(Worker):
    """A worker on a host of its own: its monotonic clock started ``boot`` seconds before
    the test's time 0, its wall clock is ``skew`` seconds off the true time."""

    def __init__(self, tag: str, table: MemorySessionTable, log: MemoryEventLog, *,
                 boot: float, skew: float) -> None:
        super().__init__(tag, table, log, session_idle_timeout=IDLE)
        self.boot, self.skew = boot, skew
        self.now = boot  # before the server sees any time

    def wall(self) -> float:
        return WALL + (self.now - self.boot) + self.skew

    def at(self, true_time: float) -> None:
        """Move this host's clocks to the true time ``true_time`` (timers fire)."""
        self.advance(true_time + self.boot - self.now)

    def ping(self, sid: str, n: int) -> int:
        status: int = self.conn().send(body=request(n, "ping"),
                                       headers=self.session_headers(sid)).status
        return status


def hosts(boots: tuple[float, float], skews: tuple[float, float]) -> tuple[Host, Host]:
    table, log = MemorySessionTable(), MemoryEventLog()
    return (Host("a", table, log, boot=boots[0], skew=skews[0]),
            Host("b", table, log, boot=boots[1], skew=skews[1]))


skew = st.floats(-DEFAULT_SKEW, DEFAULT_SKEW)
boot = st.sampled_from([0.0, 1_000.0, 1_000_000.0, 1e9])


@settings(max_examples=150, deadline=None)
@given(boots=st.tuples(boot, boot), skews=st.tuples(skew, skew),
       gaps=st.lists(st.floats(0.5, 3 / 4 * IDLE - 2 * DEFAULT_SKEW - 1), min_size=1,
                     max_size=12))
def test_a_session_lives_while_its_client_alternates_between_skewed_hosts(
        boots: tuple[float, float], skews: tuple[float, float], gaps: list[float]) -> None:
    a, b = hosts(boots, skews)
    sid = a.initialize()
    t = 0.0
    for n, gap in enumerate(gaps):
        t += gap
        host = (b, a)[n % 2]
        for each in (a, b):
            each.at(t)
        assert host.ping(sid, n) == 200, (n, t)


def _ends(boots: tuple[float, float], skews: tuple[float, float], last: int,
          when: float) -> list[int]:
    a, b = hosts(boots, skews)
    sid = a.initialize()
    for each in (a, b):
        each.at(10.0)
    assert (a, b)[last].ping(sid, 1) == 200
    for each in (a, b):
        each.at(when)
    return [each.ping(sid, 2) for each in (b, a)]


@settings(max_examples=150, deadline=None)
@given(boots=st.tuples(boot, boot), skews=st.tuples(skew, skew), last=st.sampled_from([0, 1]))
def test_a_quiet_session_is_alive_early_and_gone_late_on_both_hosts(
        boots: tuple[float, float], skews: tuple[float, float], last: int) -> None:
    disagreement = abs(skews[0] - skews[1])
    assert _ends(boots, skews, last, 10.0 + 3 / 4 * IDLE - disagreement - 1) == [200, 200]
    assert _ends(boots, skews, last, 10.0 + IDLE + disagreement + 1) == [404, 404]


def test_a_host_whose_wall_clock_is_far_behind_shortens_what_it_saves() -> None:
    """Beyond the allowance the wall clock decides, as documented: a host an hour behind
    saves a deadline the others judge long past, so they do not serve its sessions (the
    client re-initializes). This is why hosts keep time (NTP) -- and why nothing here is
    judged on a monotonic clock, which no two hosts share at all."""
    a, b = hosts((1e9, 0.0), (-2 * IDLE, 0.0))
    sid = a.initialize()
    for each in (a, b):
        each.at(1.0)
    assert b.ping(sid, 1) == 404
    assert a.ping(sid, 2) == 200  # its own copy still serves on the host that opened it


def test_a_session_adopted_by_another_host_is_saved_there_at_once() -> None:
    """B serves a session A saved; the table's deadline counts from B's request, not from
    A's save (monotonic clocks a billion seconds apart change nothing). A, whose own copy
    idled out meanwhile, finds the session in the table."""
    a, b = hosts((1e9, 0.0), (0.0, 0.0))
    sid = a.initialize()
    for each in (a, b):
        each.at(IDLE / 2)
    assert b.ping(sid, 1) == 200
    for each in (a, b):
        each.at(IDLE + IDLE / 2 - 1)
    assert a.server.session(sid) is None  # idled out on A's own clock
    assert a.ping(sid, 2) == 200  # adopted again from B's save
