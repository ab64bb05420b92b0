"""Keepalive: an opt-in ``ping`` every so often, and a count of unanswered ones that ends
the session.

Theory of operation
-------------------
Spec 2025-11-25 basic/utilities/ping: "Implementations SHOULD periodically issue pings to
detect connection health", the frequency "SHOULD be configurable", and when the peer does
not answer in time the sender "MAY ... terminate the connection". :class:`Keepalive` is that
policy as a small state machine with time handed in (``now``), no clock and no I/O:

* :meth:`Keepalive.deadline` is when the next ping is due (``interval`` after the last one
  was sent, or after the session became able to ping);
* the pump sends a ``ping`` whose timeout is ``interval`` (one ping in flight at a time: a
  ping not answered before the next is due is a miss) and reports its end: any answer --
  an error too, the peer is alive -- resets the count (:meth:`answered`); a time-out adds
  one (:meth:`missed`);
* after ``max_missed`` misses in a row :meth:`missed` says "close", and the session closes
  its connection (pending requests end with ``ConnectionClosedError``).

Only the handshake era pings: 2026-07-28 has no ``ping`` (and no session to keep alive;
over HTTP its SSE streams carry comment keepalives instead, which stay as they are).
"""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_MISSED", "Keepalive"]

#: Misses in a row before the session is closed. Three: one lost ping (a busy peer, a
#: scheduler hiccup under load) must not end a healthy session, and three intervals of
#: silence are long enough to call a peer gone while short enough to notice in time.
DEFAULT_MAX_MISSED = 3


class Keepalive:
    """The ping schedule and miss count of one session (see the module docstring).

    :param interval: seconds between pings, and each ping's timeout (> 0).
    :param max_missed: unanswered pings in a row that close the session (>= 1).
    """

    __slots__ = ("_due", "in_flight", "interval", "max_missed", "misses")

    def __init__(self, interval: float, max_missed: int = DEFAULT_MAX_MISSED) -> None:
        if not interval > 0:
            raise ValueError(f"the keepalive interval must be positive, not {interval!r}")
        if max_missed < 1:
            raise ValueError(f"max_missed must be at least 1, not {max_missed!r}")
        self.interval = float(interval)
        self.max_missed = max_missed
        #: Unanswered pings in a row.
        self.misses = 0
        #: Whether a ping of ours is waiting for its answer.
        self.in_flight = False
        self._due: float | None = None

    def start(self, now: float) -> None:
        """The session can ping from now on: the first ping is due one interval later."""
        if self._due is None:
            self._due = now + self.interval

    def deadline(self) -> float | None:
        """When the next ping is due (None: not started, or one is in flight)."""
        return None if self.in_flight else self._due

    def due(self, now: float) -> bool:
        """Whether a ping should be sent now."""
        return not self.in_flight and self._due is not None and now >= self._due

    def sent(self, now: float) -> None:
        """A ping went out (its timeout is :attr:`interval`)."""
        self.in_flight = True
        self._due = now + self.interval

    def answered(self) -> None:
        """The peer answered the ping in flight (a result or an error)."""
        self.in_flight = False
        self.misses = 0

    def missed(self) -> bool:
        """The ping in flight timed out; True when the session should close."""
        self.in_flight = False
        self.misses += 1
        return self.misses >= self.max_missed
