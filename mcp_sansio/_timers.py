"""Deadlines for requests in flight: a heap with lazy deletion.

Theory of operation
-------------------
Each outgoing request may own two deadlines: an *idle* one (reset by progress, when asked)
and a *hard* one (never extended). Both go into one binary heap as ``(when, seq, key, kind)``
entries. Moving or cancelling a deadline does not search the heap: the owner's current
deadline is kept in :attr:`TimerTable._current`, and heap entries that no longer match it are
*stale* and skipped when they reach the top (lazy deletion). So:

* ``set``/``clear`` are O(log n) / O(1);
* ``next_deadline`` is O(1) amortised (stale entries at the top are popped once, ever);
* ``expired(now)`` pops every due entry in O(k log n) for k due entries.

Keeping stale entries costs memory only until they surface; ``_compact`` rebuilds the heap
when stale entries outnumber live ones, so the heap never exceeds twice the live size.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Hashable

__all__ = ["TimerKind", "TimerTable"]


class TimerKind(enum.IntEnum):
    IDLE = 0
    HARD = 1


class TimerTable:
    """Deadlines keyed by ``(key, kind)``."""

    __slots__ = ("_current", "_heap", "_seq")

    def __init__(self) -> None:
        # Made by the first ``set``: most connections (every idle session's) never hold a
        # deadline, and an empty heap and table are 120 bytes.
        self._heap: list[tuple[float, int, Hashable, TimerKind]] | None = None
        self._current: dict[tuple[Hashable, TimerKind], float] | None = None
        self._seq = 0

    def __len__(self) -> int:
        return 0 if self._current is None else len(self._current)

    def set(self, key: Hashable, kind: TimerKind, when: float) -> None:
        """Set (or move) the deadline ``(key, kind)`` to ``when``."""
        current, heap = self._current, self._heap
        if current is None or heap is None:
            current = {}
            heap = []
            self._current = current
            self._heap = heap
        current[key, kind] = when
        self._seq += 1
        heapq.heappush(heap, (when, self._seq, key, kind))
        if len(heap) > 64 and len(heap) > 2 * len(current):
            self._compact(heap, current)

    def clear(self, key: Hashable, kind: TimerKind | None = None) -> None:
        """Remove one deadline of ``key`` (or both when ``kind`` is None)."""
        current = self._current
        if current is None:
            return
        if kind is None:
            current.pop((key, TimerKind.IDLE), None)
            current.pop((key, TimerKind.HARD), None)
        else:
            current.pop((key, kind), None)

    def get(self, key: Hashable, kind: TimerKind) -> float | None:
        return None if self._current is None else self._current.get((key, kind))

    def _prune(self) -> None:
        heap, current = self._heap, self._current
        if heap is None or current is None:
            return
        while heap:
            when, _, key, kind = heap[0]
            if current.get((key, kind)) == when:
                return
            heapq.heappop(heap)

    def next_deadline(self) -> float | None:
        """The earliest live deadline, or None."""
        self._prune()
        heap = self._heap
        return heap[0][0] if heap else None

    def due(self, now: float) -> bool:
        """Whether a deadline (live or stale) is at or before ``now``: a cheap test before
        :meth:`pop_expired` (a stale entry only costs that call finding nothing)."""
        heap = self._heap
        if not heap:
            return False
        return heap[0][0] <= now

    def pop_expired(self, now: float) -> list[tuple[Hashable, TimerKind]]:
        """Remove and return every live deadline at or before ``now``, earliest first."""
        due: list[tuple[Hashable, TimerKind]] = []
        heap, current = self._heap, self._current
        if heap is None or current is None:
            return due
        while heap and heap[0][0] <= now:
            when, _, key, kind = heapq.heappop(heap)
            if current.get((key, kind)) == when:
                del current[key, kind]
                due.append((key, kind))
        return due

    def _compact(self, heap: list[tuple[float, int, Hashable, TimerKind]],
                 current: dict[tuple[Hashable, TimerKind], float]) -> None:
        kept = [entry for entry in heap if current.get((entry[2], entry[3])) == entry[0]]
        heapq.heapify(kept)
        self._heap = kept
