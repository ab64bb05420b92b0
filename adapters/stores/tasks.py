"""Tasks every worker of a service sees: the :class:`~mcp_sansio.app.tasks.TaskSharing`
over the shared stores (asyncio code, run on every runtime).

Theory of operation
-------------------
The ledger (:mod:`mcp_sansio.app.tasks`) is sans-IO and synchronous; a shared store is a
network call that must not block the loop. So the ledger never calls the store itself: it
hands each changed record to :meth:`SharedTasks.saved`, which queues it -- the newest record
per task replacing one not yet written -- and one writer task on the loop puts the records
into the :class:`~mcp_sansio.stores.TaskTable` (a later status is never overtaken by an
earlier one) and then publishes a ``stored`` notice on the bus's ``tasks`` topic. Everything
the ledger must wait for -- the first record before the creating call is answered, a
record read on a worker that does not run the task, a cancel or an update sent to the worker
that does -- is an ``async`` method the ledger's jobs await (why: docs/stores.rst).

Records are kept until ``createdAt + TTL + skew`` on the **wall clock**
(:func:`mcp_sansio.stores.task_deadline`): they are read on other hosts. The owner key of a
2025-11-25 task is a digest of its HTTP session id (the same on every worker that serves the
session; the id itself is a secret and is neither stored as a key nor logged), and the
principal is the access token's subject when the server is protected.

The bus's ``tasks`` topic carries ``cancel``/``update`` to every worker; only the one that
runs the task acts (:meth:`TaskLedger.receive`). A worker subscribes on its first use of
sharing -- before its first task's creation is answered, so no cancel for it is missed. Bus
notices are at most once (Redis publish/subscribe): a waiter re-reads the record after its
poll interval (at most :data:`~mcp_sansio.app.tasks.MAX_REMOTE_POLL`) anyway.

On trio and threads the stores live on a store thread (:mod:`.stores.home`; :data:`HOMES`):
the writer and every await run there, and a handler waits for them on its own runtime.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from mcp_sansio import ErrorCode
from mcp_sansio.app.context import Context
from mcp_sansio.app.errors import McpError
from mcp_sansio.stores import DEFAULT_TASK_SKEW, task_deadline

from .driver import DEFAULT_STORE_TIMEOUT

if TYPE_CHECKING:
    from mcp_sansio.app.tasks import Task, TaskLedger

__all__ = ["HOMES", "SharedTasks", "close_sharing", "wait_on_caller"]

log = logging.getLogger("mcp_sansio.adapters.tasks")
_T = TypeVar("_T")

#: Stores that live on the store thread of a trio or threads server -> that thread's loop
#: (``stores/home.py`` fills it): their task sharing runs there, wherever it was built.
HOMES: weakref.WeakKeyDictionary[Any, asyncio.AbstractEventLoop] = weakref.WeakKeyDictionary()


async def _in_task(coro: Coroutine[Any, Any, _T],
                   home: asyncio.AbstractEventLoop | None = None) -> _T:
    """Run ``coro`` as a task of its own and wait for it: a request's handler is first
    stepped eagerly, outside any task (the asyncio session), and redis-py's timeouts need
    one. With a ``home`` loop (the store thread's) other than the caller's, it runs there
    and the caller waits on its own runtime."""
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:  # trio
        running = None
    if home is None or running is home:
        assert running is not None
        return await running.create_task(coro)
    return await wait_on_caller(asyncio.run_coroutine_threadsafe(coro, home))


async def wait_on_caller(future: concurrent.futures.Future[_T]) -> _T:
    """Await ``future`` (done on the store thread, ``stores/home.py``) on the caller's
    runtime: trio, or an asyncio loop other than the store thread's (a threads handler's
    own loop)."""
    import sniffio

    if sniffio.current_async_library() != "trio":
        return await asyncio.wrap_future(future)
    import trio

    token = trio.lowlevel.current_trio_token()
    done = trio.Event()

    def wake(_: object) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(done.set)
    future.add_done_callback(wake)
    try:
        await done.wait()
    except BaseException:
        future.cancel()
        raise
    return future.result()



class SharedTasks:
    """Shares one ledger's tasks through ``stores`` (an object with ``tasks``, a
    :class:`~mcp_sansio.stores.TaskTable`, and ``bus``, an
    :class:`~mcp_sansio.stores.EventBus`: :class:`~mcp_sansio.stores.MemoryStores`,
    :class:`~mcp_sansio.adapters.redis.RedisStores`).

    :param wall: wall-clock seconds (records are judged on other hosts).
    :param skew: how long a record outlives its TTL (the wall-clock skew allowance).
    :param store_timeout: seconds one store call may take; beyond it a write is logged and
        dropped, and a read or a send fails the request that waits on it.
    """

    #: Seconds one store call may take (as the HTTP server's store driver's).
    store_timeout = DEFAULT_STORE_TIMEOUT

    def __init__(self, stores: Any, *, wall: Callable[[], float] = time.time,
                 skew: float = DEFAULT_TASK_SKEW, store_timeout: float | None = None) -> None:
        self.stores = stores
        if store_timeout is not None:
            self.store_timeout = store_timeout
        self.wall = wall
        self.skew = skew
        self.ledger: TaskLedger | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Records waiting to be written: the newest per task (task id -> record, owner,
        #: deadline), oldest task first. A task that changes faster than the store writes
        #: (progress in a loop) costs one write per round, not one per change.
        self._pending: dict[str, tuple[dict[str, Any], str | None, float]] = {}
        #: Task id -> whoever waits until its queued records are written (:meth:`stored`).
        self._flushed: dict[str, list[asyncio.Future[None]]] = {}
        self._writing: str | None = None
        self._writer: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], Awaitable[None]] | None = None
        self._subscribing: asyncio.Future[None] | None = None
        self._changed: dict[str, asyncio.Event] = {}

    # -- TaskSharing ------------------------------------------------------------------------

    def identity(self, ctx: Context) -> tuple[str | None, str | None]:
        auth = ctx.auth
        principal = auth.subject if auth is not None else None
        link = getattr(ctx.session, "link", None)  # an HTTP session's tie (mcp_sansio.app)
        session = getattr(link, "http_session", None)
        session_id = getattr(session, "id", None)
        if not isinstance(session_id, str):
            return None, principal
        return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32], \
            principal

    def saved(self, task: Task, record: dict[str, Any]) -> None:
        loop = self._current_loop()
        expires = task_deadline(task.created, task.ttl_ms, skew=self.skew)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._enqueue(task.task_id, record, task.owner_key, expires)
        else:  # a handler on a thread of its own
            loop.call_soon_threadsafe(self._enqueue, task.task_id, record, task.owner_key,
                                      expires)

    async def stored(self, task_id: str) -> None:
        await _in_task(self._stored(task_id), self._home())

    async def _stored(self, task_id: str) -> None:
        await self._subscribed()
        if task_id not in self._pending and self._writing != task_id:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._flushed.setdefault(task_id, []).append(done)
        await done

    async def fetch(self, task_id: str) -> dict[str, Any] | None:
        return await _in_task(self._bounded(self.stores.tasks.get(
            task_id, wall_time=self.wall())), self._home())

    async def owned(self, owner: str) -> list[dict[str, Any]]:
        return await _in_task(self._bounded(self.stores.tasks.owned(
            owner, wall_time=self.wall())), self._home())

    async def send(self, task_id: str, op: str, data: Mapping[str, Any]) -> None:
        message = {"op": op, "taskId": task_id, **data}
        await _in_task(self._bounded(self.stores.bus.publish(
            "tasks", json.dumps(message).encode())), self._home())

    async def _bounded(self, call: Awaitable[_T]) -> _T:
        """A store call within :attr:`store_timeout`: a Redis that hangs fails the request
        that waits on it with an internal error that says so (-32603), rather than
        holding it."""
        try:
            async with asyncio.timeout(self.store_timeout):
                return await call
        except TimeoutError:
            raise McpError(ErrorCode.INTERNAL_ERROR, f"the task store gave no answer "
                           f"within {self.store_timeout:g} s; try again") from None

    async def until_changed(self, task_id: str, timeout: float) -> None:
        await _in_task(self._until_changed(task_id, timeout), self._home())

    async def _until_changed(self, task_id: str, timeout: float) -> None:
        await self._subscribed()
        event = self._changed.setdefault(task_id, asyncio.Event())
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout)
        finally:
            if self._changed.get(task_id) is event:
                del self._changed[task_id]

    # -- the writer and the bus -------------------------------------------------------------

    def _home(self) -> asyncio.AbstractEventLoop | None:
        """The store thread's loop, if these stores live there (trio, threads)."""
        return HOMES.get(self.stores)

    def _current_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = self._home() or asyncio.get_running_loop()
        return self._loop

    def _enqueue(self, task_id: str, record: dict[str, Any], owner: str | None,
                 expires: float) -> None:
        self._pending[task_id] = (record, owner, expires)  # the newest replaces, in place
        if self._writer is None or self._writer.done():
            self._writer = self._current_loop().create_task(self._write())

    async def _write(self) -> None:
        while self._pending:
            task_id = next(iter(self._pending))
            record, owner, expires = self._pending.pop(task_id)
            self._writing = task_id
            try:
                async with asyncio.timeout(self.store_timeout):
                    await self.stores.tasks.put(task_id, record, owner=owner,
                                                expires_at=expires, wall_time=self.wall())
                    await self.stores.bus.publish(
                        "tasks", json.dumps({"op": "stored", "taskId": task_id}).encode())
            except Exception:  # (TimeoutError included: a store that hangs)
                # Redis unreachable: the task runs on here; other workers see it stale.
                log.warning("a task record could not be stored", exc_info=True)
            finally:
                self._writing = None
            if task_id not in self._pending:  # (a newer one came meanwhile: not yet)
                for done in self._flushed.pop(task_id, []):
                    if not done.done():
                        done.set_result(None)

    async def _subscribed(self) -> None:
        """Subscribe to the bus's ``tasks`` topic once (every caller waits for it)."""
        self._current_loop()
        if self._subscribing is None:
            self._subscribing = asyncio.get_running_loop().create_future()
            try:
                self._unsubscribe = await self.stores.bus.subscribe("tasks", self._on_bus)
            except BaseException as exc:
                self._subscribing.set_exception(exc)
                self._subscribing = None
                raise
            self._subscribing.set_result(None)
        await asyncio.shield(self._subscribing)

    def _on_bus(self, topic: str, message: bytes) -> None:
        try:
            note = json.loads(message)
            op, task_id = note["op"], note["taskId"]
            if not isinstance(op, str) or not isinstance(task_id, str):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            log.warning("a malformed message on the bus's tasks topic was ignored")
            return
        if op == "stored":
            event = self._changed.get(task_id)
            if event is not None:
                event.set()
        elif self.ledger is not None:
            self.ledger.receive(task_id, op, note)  # (thread-safe: common/tasks.py)

    async def aclose(self) -> None:
        """Finish the queued writes and leave the bus (the server stops). A server started
        again later subscribes and writes afresh, on its new loop."""
        writer = self._writer
        if writer is not None and not writer.done():
            with contextlib.suppress(Exception):
                await writer
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            with contextlib.suppress(Exception):
                await unsubscribe()
        self._loop, self._writer, self._subscribing = None, None, None
        self._changed.clear()


async def close_sharing(server: Any) -> None:
    """Close the task sharing of ``server`` (a high-level Server), if it has one: what a
    shared server's shutdown calls before its stores close."""
    sharing = getattr(getattr(server, "tasks", None), "sharing", None)
    if isinstance(sharing, SharedTasks):
        await sharing.aclose()
