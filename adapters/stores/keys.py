"""The ``requestState`` key ring of a shared server, kept current from the key store.

Theory of operation
-------------------
Every worker of one service must open what any of them sealed (2026-07-28
``basic/patterns/mrtr.mdx``: the state comes back on whatever worker the retry lands on), so
a shared server's :class:`~mcp_sansio.KeyRing` takes its keys from the store's key ring
(:class:`mcp_sansio.stores.KeyStore`, newest first) through :class:`StoreKeys`, a
:class:`~mcp_sansio.KeySource` that answers from memory and is refreshed by the adapter:

* at start, :func:`store_key_ring` reads the store with ``ensure_key`` -- one atomic step that
  adds a fresh random key only when the store has none, so workers starting at once on an
  empty store all end with the one key that won (Redis runs it as one script);
* then every ``refresh_interval`` seconds, and at once when a ``keys`` message comes on the
  event bus (:func:`rotate_key` publishes one), the worker reads the store again;
* a key this worker sees for the first time *opens* at once but *seals* only after it has
  been held here for two refresh intervals. Every worker reads the store at least once per
  interval, so by then every worker holds the key and no state sealed with it is refused
  anywhere: rotation (``rotate_key``, or ``add_key`` on the store) loses nothing while
  traffic flows. Keys present at the first read seal at once (they were there before this
  worker started). Keys the store no longer keeps (trimmed beyond its bound) stop opening.

The waiting uses this process's monotonic clock (an interval inside one process); nothing
of it crosses a process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from mcp_sansio import KeyRing

__all__ = ["DEFAULT_KEY_REFRESH_INTERVAL", "StoreKeys", "rotate_key", "store_key_ring"]

log = logging.getLogger(__name__)

#: Seconds between two reads of the store's key ring: 5. A new key seals two intervals
#: (10 s) after a worker first sees it, which is nothing next to a rotation period (days)
#: and costs one small read per worker every five seconds.
DEFAULT_KEY_REFRESH_INTERVAL = 5.0


class StoreKeys:
    """A :class:`~mcp_sansio.KeySource` over a key store: :meth:`refresh` reads the store,
    :meth:`keys` answers from memory (the sealing key first, then every other key kept)."""

    def __init__(self, store: Any, initial: Sequence[bytes], *,
                 refresh_interval: float = DEFAULT_KEY_REFRESH_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if refresh_interval <= 0:
            raise ValueError("refresh_interval must be positive")
        self.store = store
        self.refresh_interval = refresh_interval
        self._clock = clock
        now = clock()
        # When this worker first held each key; the first read's keys count as long held.
        self._seen: dict[bytes, float] = {key: -float("inf") for key in initial}
        self._stored: list[bytes] = list(initial)
        self._ring: tuple[bytes, ...] = ()
        self._order(now)

    def keys(self) -> Sequence[bytes]:
        # The same tuple while nothing changed: the ring then skips its comparison.
        return self._ring

    async def refresh(self) -> None:
        """Read the store's ring and re-order (a new key seals once it is old enough)."""
        stored = list(await self.store.get_keys())
        now = self._clock()
        if stored:  # an empty answer (a store flushed by hand) keeps the keys in hand
            for key in stored:
                self._seen.setdefault(key, now)
            self._seen = {key: self._seen[key] for key in stored}
            self._stored = stored
        self._order(now)

    def _order(self, now: float) -> None:
        grace = 2 * self.refresh_interval
        ripe = [key for key in self._stored if now - self._seen[key] >= grace]
        if not ripe:  # nothing old enough (cannot follow the first read): the oldest
            ripe = self._stored[-1:]
        sealing = ripe[0]
        ring = (sealing, *(key for key in self._stored if key != sealing))
        if ring != self._ring:
            self._ring = ring


async def store_key_ring(stores: Any, *,
                         refresh_interval: float = DEFAULT_KEY_REFRESH_INTERVAL,
                         clock: Callable[[], float] = time.monotonic
                         ) -> tuple[KeyRing, StoreKeys]:
    """The key ring of a shared server and the source that keeps it current (the adapter
    calls :meth:`StoreKeys.refresh` on its schedule and on the bus's ``keys`` topic)."""
    import secrets  # here: a server that never shares keys never loads it (test_cold_imports)

    initial = await stores.keys.ensure_key(secrets.token_bytes(32))
    source = StoreKeys(stores.keys, initial, refresh_interval=refresh_interval, clock=clock)
    return KeyRing(source=source), source


async def rotate_key(stores: Any, key: bytes | None = None) -> bytes:
    """Rotation while traffic flows: make ``key`` (default: 32 fresh random bytes) the
    store's newest key and tell every worker on the bus (``keys``). Each worker opens with
    it at once and seals with it two refresh intervals later; the old keys keep opening
    until the store's bound trims them. Returns the key."""
    import secrets

    key = key if key is not None else secrets.token_bytes(32)
    await stores.keys.add_key(key)
    await stores.bus.publish("keys", b"{}")
    log.info("a new requestState sealing key was added to the shared key store")
    return key
