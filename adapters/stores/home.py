"""The shared stores of a trio or threads server: one asyncio loop on a thread of its own
(the *store thread*) where the stores, their driver and the task sharing live.

Theory of operation
-------------------
The store side -- the Redis stores (:mod:`mcp_sansio.adapters.redis`, redis-py's asyncio
client), :class:`~.driver.SharedDriver` and :class:`~.tasks.SharedTasks` -- is written once,
against asyncio, and is the code an asyncio server runs on its own loop. A trio or threads
server runs that same code on :class:`StoreHome`'s loop and talks to it only at three seams:

* the server to the driver: after each pump the server calls :meth:`SharedDriver.kick`
  where it runs; the kick takes the queued effects and posts them to the store thread
  (``call_soon_threadsafe``: the server never waits for a store);
* the driver to the server: every touch of the HTTP server goes through an ``enter``
  (:func:`locked_enter`: under the threads server's lock; :func:`trio_enter`: in the trio
  run, by ``trio.from_thread.run_sync``), with ``now`` on the server's own clock;
* a task handler to the task sharing: its awaits are carried to the store thread and
  waited for on the handler's runtime (``tasks.wait_on_caller``).

One store thread per process (:meth:`StoreHome.current`), whatever the number of servers.

So every store call keeps the driver's bound (``store_timeout``; a lookup past it is 503
with Retry-After) on every runtime. Why not redis-py's blocking client on worker threads,
and the runtime matrix: :doc:`/stores`, "On every runtime".
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from .driver import DEFAULT_STORE_TIMEOUT, Enter, SharedDriver
from .keys import DEFAULT_KEY_REFRESH_INTERVAL, StoreKeys, store_key_ring
from .tasks import HOMES, close_sharing

__all__ = ["OffLoopShare", "StoreHome", "locked_enter", "share_on_trio",
           "trio_enter"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

#: Seconds starting or stopping the store side may take (a Redis that does not answer: the
#: server does not start, or stops without its goodbye).
_START_TIMEOUT = 30.0
_STOP_TIMEOUT = 10.0


class StoreHome:
    """An asyncio loop running on a daemon thread of its own until :meth:`close`.

    :meth:`current` is the process's one store thread, started on first use and kept (an
    idle loop costs nothing): every trio or threads server of the process shares it, so
    servers sharing one :class:`~mcp_sansio.stores.MemoryStores` use it from one loop, as
    asyncio servers on one loop do, and stores given as an object outlive a server.
    """

    _current: StoreHome | None = None
    _current_lock = threading.Lock()

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="mcp-sansio-stores",
                                        daemon=True)
        self._thread.start()

    @classmethod
    def current(cls) -> StoreHome:
        """The process's store thread (a new one in a forked child: threads do not fork)."""
        with cls._current_lock:
            home = cls._current
            if home is None or home.pid != os.getpid() or home.loop.is_closed():
                home = cls._current = cls()
            return home

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, _T], timeout: float = _START_TIMEOUT) -> _T:
        """Run ``coro`` on the store thread and wait for it here (never on that thread)."""
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"the stores did not answer within {timeout:g} s") from None

    def close(self) -> None:
        if self.loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(_STOP_TIMEOUT)
        if not self._thread.is_alive():
            self.loop.close()


def locked_enter(lock: Any) -> Enter:
    """The threads server's ``enter``: under its lock, ``now`` on :func:`time.monotonic`."""
    def enter(fn: Callable[[float], Any]) -> Any:
        with lock:
            return fn(time.monotonic())
    return enter


def trio_enter(token: Any) -> Enter:
    """The trio server's ``enter``: in its run (blocking the store thread meanwhile)."""
    import trio

    def enter(fn: Callable[[float], Any]) -> Any:
        return trio.from_thread.run_sync(lambda: fn(trio.current_time()), trio_token=token)
    return enter


class OffLoopShare:
    """What makes a trio or threads server shared: the store thread, the stores on it (built
    from a URL, then owned and closed here, or given), the key ring and the driver.

    :meth:`take` reads the options ``start_http`` was given; :meth:`prepare` (blocking:
    trio calls it on a worker thread) reads the key ring; :meth:`start` starts the driver;
    :meth:`close` says goodbye on the bus and closes the stores it built.
    """

    def __init__(self, stores: Any, *, key_refresh_interval: float,
                 liveness: Mapping[str, float], store_timeout: float) -> None:
        self.home = StoreHome.current()
        self._given = stores
        self._owned: Any = None
        self.stores: Any = None
        self.key_refresh_interval = key_refresh_interval
        self.liveness = dict(liveness)
        self.store_timeout = store_timeout
        self.key_source: StoreKeys | None = None
        self.driver: SharedDriver | None = None

    @classmethod
    def take(cls, http_options: dict[str, Any]) -> OffLoopShare | None:
        """The share ``http_options`` ask for (its options popped), or None."""
        stores = http_options.pop("stores", None)
        refresh = http_options.pop("key_refresh_interval", DEFAULT_KEY_REFRESH_INTERVAL)
        liveness: dict[str, float] = {name: http_options.pop(name) for name in
                    ("heartbeat_interval", "worker_timeout") if name in http_options}
        timeout = http_options.pop("store_timeout", DEFAULT_STORE_TIMEOUT)
        if stores is None:
            return None
        return cls(stores, key_refresh_interval=refresh, liveness=liveness,
                   store_timeout=timeout)

    def prepare(self, http_options: dict[str, Any], request_state_key: Any) -> Any:
        """Build the stores on the store thread and read the key ring; the
        ``request_state_key`` to build the HTTP server with."""
        http_options.setdefault("shared", True)
        http_options.setdefault("stream_tag", secrets.token_hex(4))
        ring = self.open(keys=request_state_key is None)
        return ring if ring is not None else request_state_key

    def open(self, *, keys: bool) -> Any:
        """The stores (built from the URL, or given), marked as living on the store thread
        (:data:`~.tasks.HOMES`: their task sharing runs there); with ``keys``, the store's
        key ring (kept current by the driver), else None."""
        try:
            stores = self._given
            if isinstance(stores, str):
                from ..redis import RedisStores

                stores = self._owned = RedisStores.from_url(stores)
            self.stores = stores
            HOMES[stores] = self.home.loop
            if keys:  # the store's key ring, kept current (stores.keys)
                ring, self.key_source = self.home.call(store_key_ring(
                    self.stores, refresh_interval=self.key_refresh_interval))
                return ring
        except BaseException:
            self.close(None)
            raise
        return None

    def start(self, server: Any, http: Any, pump: Callable[[], None], enter: Enter
              ) -> SharedDriver:
        async def started() -> SharedDriver:
            driver = SharedDriver(http, self.stores, pump, keys=self.key_source,
                                  store_timeout=self.store_timeout, enter=enter,
                                  **self.liveness)
            await driver.start()
            return driver
        self.driver = self.home.call(started())
        share_tasks = getattr(getattr(server, "tasks", None), "share", None)
        if share_tasks is not None:  # the server's tasks on every worker
            share_tasks(self.stores)
        return self.driver

    def close(self, server: Any) -> None:
        """The goodbye on the bus, the last task records, the owned stores (bounded: a
        store that does not answer is logged)."""
        async def closed() -> None:
            if self.driver is not None:
                await self.driver.aclose()
            if server is not None:
                await close_sharing(server)
            if self._owned is not None:
                await self._owned.aclose()
        try:
            self.home.call(closed(), _STOP_TIMEOUT)
        except Exception:
            log.warning("the shared stores did not close cleanly", exc_info=True)


async def share_on_trio(server: Any, http: Any, service: Any, stores: Any, *,
                        keys: bool, key_refresh_interval: float) -> OffLoopShare:
    """Make a trio service of an already shared ``http`` share ``stores`` (the ASGI
    application under hypercorn's trio worker); close the result with
    ``trio.to_thread.run_sync(share.close, server)``."""
    import trio

    share = OffLoopShare(stores, key_refresh_interval=key_refresh_interval, liveness={},
                         store_timeout=DEFAULT_STORE_TIMEOUT)
    token = trio.lowlevel.current_trio_token()
    await trio.to_thread.run_sync(functools.partial(share.open, keys=keys))
    service._shared = await trio.to_thread.run_sync(share.start, server, http, service._wake,
                                                    trio_enter(token))
    return share
