"""Exchanges parked on an asynchronous answer: the server's one table of them.

Theory of operation
-------------------
:mod:`mcp_sansio.http._park` says what a parked exchange is; :class:`Parking` keeps them
for one server: a fresh handle per question, the record on its channel (whose further
requests wait in its buffer), the deadline on the hub's timer heap, the need handed to the
adapter (the ``on_decision_needed`` callback, else :meth:`Parking.pending_decisions`).
:meth:`Parking.decide` resumes the exchange with the answer and reads the connection on;
:meth:`Parking._expire_decisions` answers the ones whose deadline passed. The auth gate
parks a token question here, the shared-store relay a lookup.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from ._hub import Hub, ServerChannel
from ._park import DecisionNeeded, Parked

__all__ = ["Parking"]


class Parking:
    """The parked exchanges of one server (see the module docstring)."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.config = hub.config  # (the server hands a replaced one to every part)
        #: Called with each :class:`~mcp_sansio.http._park.DecisionNeeded` as the exchange
        #: parks, when the adapter sets it; else they wait in :meth:`pending_decisions`.
        self.on_decision_needed: Callable[[DecisionNeeded], None] | None = None
        self._parked: dict[int, Parked[ServerChannel]] = {}
        self._needs: list[DecisionNeeded] = []
        self._handles = itertools.count(1)

    def pending_decisions(self) -> list[DecisionNeeded]:
        """The decisions parked exchanges wait on, each handed out once (when no
        ``on_decision_needed`` callback took them): answer each with :meth:`decide`."""
        needs, self._needs = self._needs, []
        return [need for need in needs if need.handle in self._parked]

    def decide(self, handle: int, answer: Any, *, now: float | None = None,
               wall_time: float | None = None) -> bool:
        """The answer to a :class:`~mcp_sansio.http._park.DecisionNeeded` (a value, or the
        exception that stopped the adapter from getting one): the exchange goes on, then
        its connection's next request. False when the exchange is no longer waiting (its
        client left, or it timed out): the answer is dropped. ``wall_time`` as for
        :meth:`ServerChannel.receive_data`. An exception from here is a bug, raised after
        the channel was failed (as :meth:`ServerChannel.receive_data` does)."""
        self.hub._clock(now)
        parked = self._parked.pop(handle, None)
        if parked is None:
            return False
        channel = parked.channel
        channel._parked = None
        if wall_time is not None:
            channel._wall = wall_time
        try:
            parked.resume(answer)
            self.hub.owner._process_channel(channel)
        except Exception:
            channel.fail()
            raise
        return True

    def _park(self, channel: ServerChannel, question: Any, resume: Callable[[Any], None],
              expire: Callable[[], None], *, announce: bool = True) -> DecisionNeeded:
        """Park ``channel``'s exchange until ``question`` is answered (module http/_park).
        ``announce``: hand the need out as a decision (else the caller hands the question
        out its own way: a shared server's Lookup goes with the store effects, in order)."""
        need = DecisionNeeded(next(self._handles), question,
                              self.hub._now + self.config.decision_timeout)
        channel._parked = self._parked[need.handle] = Parked(channel, need, resume, expire)
        self.hub._schedule(need.deadline, None, "decision")
        if announce and self.on_decision_needed is not None:
            self.on_decision_needed(need)
        elif announce:
            self._needs.append(need)
        return need

    def _expire_decisions(self, now: float) -> None:
        for handle, parked in list(self._parked.items()):
            if parked.need.deadline <= now:
                del self._parked[handle]
                channel = parked.channel
                channel._parked = None
                try:
                    parked.expire()
                    self.hub.owner._process_channel(channel)
                except Exception:  # a bug: this channel alone ends (as receive_data)
                    channel.fail()
                    raise

