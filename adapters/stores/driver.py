"""The asyncio side of a shared HTTP server: carries out its store effects and listens on the
event bus.

Theory of operation
-------------------
An :class:`~mcp_sansio.http.HTTPServer` built with ``shared=True`` never calls a store; it
queues effects (:mod:`mcp_sansio.http._shared`). :class:`SharedDriver` takes them after every
pump (:meth:`SharedDriver.kick`) and carries them out in order, in one task, against the
stores given to ``start_http(stores=...)`` (:class:`mcp_sansio.stores.MemoryStores`, or
:class:`mcp_sansio.adapters.redis.RedisStores` for several workers):

* ``StoreEvent``/``ForgetStream`` -> the event log; ``SaveSession`` -> the session table,
  its deadline the idle timeout from now on the **wall clock** (``time.time()``: the store
  is read by other processes, maybe other hosts) -- for a ``refresh``, only the deadline
  (``touch``: an unchanged copy never writes over a newer record, nor brings back one
  another worker deleted) -- and otherwise a message on the bus's ``sessions``
  topic so that a worker holding a copy of the session brings it up to date (a
  ``logging/setLevel`` on one worker holds on every worker); ``DropSession`` -> the table,
  and a message there so that every other worker ends its copy. Only then does
  :meth:`HTTPServer.stored` let out the answers that waited for the change: the client's
  next request may go to any worker the moment it has the answer;
* a ``Lookup`` -> the table or the log, then :meth:`HTTPServer.resolve` and a pump. A store
  that fails (Redis unreachable) is logged and answered as "not found" -- the client is
  told 404 or 400 and starts afresh -- so a request never hangs on a store;
* a ``ForwardAnswer`` (a client answered, here, a request another worker sent) -> the
  bus's ``answers`` topic; the worker the answer is for (its tag is in the request id)
  hands it to its copy of the session (:meth:`HTTPServer.deliver_answer`);
* every stored event is also published on the bus's ``events`` topic (after the append);
  each worker hands it to :meth:`HTTPServer.relay_event`, which sends it on if a client
  resumed that stream on this worker (``Last-Event-ID``) and drops it otherwise;
* the bus's ``broadcast`` topic: a server-wide notification (a list changed) published by
  any worker is offered to this worker's sessions and listen streams.

* liveness: every ``heartbeat_interval`` seconds the driver says on the bus's
  ``workers`` topic that this worker is alive, and at :meth:`SharedDriver.aclose` that it
  is gone (at once, before anything else stops). It hears the others' heartbeats into a
  :class:`~mcp_sansio.http._shared.WorkerLiveness` (arrival times on this process's
  monotonic clock: no other host's clock is read) and, at each beat, tells the server
  which writers of streams relayed here are gone (:meth:`HTTPServer.worker_gone`): only
  the writer ends its streams, so a dead one's relays would otherwise hang for ever. A
  worker that dies sends no notice; its relays end within ``worker_timeout`` and a beat.

One task, in order: an event is appended before a later replay on this worker reads the
log, and the record of a session is saved before its DELETE drops it.

:mod:`.stores.keys` gives a shared server its ``requestState`` key ring from the store's;
the driver keeps it current (a read every ``refresh_interval``, and one at once on the bus's
``keys`` topic).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from mcp_sansio.http import HTTPServer
from mcp_sansio.http._shared import (
    DEFAULT_HEARTBEAT_INTERVAL,
    DEFAULT_WORKER_TIMEOUT,
    STREAM_END,
    DropSession,
    ForgetStream,
    ForwardAnswer,
    Lookup,
    SaveSession,
    SharedEffect,
    StoreEvent,
    WorkerLiveness,
    stream_writer,
)
from mcp_sansio.http._stranded import stranded_answers
from mcp_sansio.stores import parse_event_id

from .keys import StoreKeys

__all__ = ["DEFAULT_STORE_TIMEOUT", "Enter", "SharedDriver"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

#: How the driver reaches the HTTP server: ``enter(fn)`` calls ``fn(now)`` where the server
#: may be touched (its thread, its lock), ``now`` on the server's clock, and returns what
#: ``fn`` returns. On asyncio the server is on the driver's own loop: a plain call.
Enter = Callable[[Callable[[float], Any]], Any]

#: Seconds a store effect (a read, an append, a publish) may take: 5, half the server's
#: decision timeout (10 s), so that a request waiting on a lookup is answered 503 with
#: Retry-After by the store's failure rather than by its own timeout.
DEFAULT_STORE_TIMEOUT = 5.0
#: Seconds between two checks of the relayed streams' writers: 1 (heartbeats go out every
#: ``heartbeat_interval``; the check is a look at a few timestamps).
_WRITER_CHECK_INTERVAL = 1.0
#: Seconds finishing a dead writer's stream may take at most (a read and a few appends).
_FINISH_TIMEOUT = 5.0
#: How far past the writer's last event the events that finish its stream are numbered.
_FINISH_GAP = 1_000_000

#: The session idle deadline a record gets when the server has no idle timeout: a day. The
#: table must forget a session some time; a client idle for longer re-initializes (404).
_NO_TIMEOUT_DEADLINE = 86_400.0


class SharedDriver:
    """Carries out ``http``'s shared effects against ``stores`` (an object with
    ``sessions``, ``events`` and ``bus``); ``pump`` runs the service's pump."""

    def __init__(self, http: HTTPServer, stores: Any, pump: Callable[[], None], *,
                 keys: StoreKeys | None = None,
                 heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL,
                 worker_timeout: float = DEFAULT_WORKER_TIMEOUT,
                 store_timeout: float = DEFAULT_STORE_TIMEOUT,
                 enter: Enter | None = None) -> None:
        if heartbeat_interval <= 0 or worker_timeout <= heartbeat_interval:
            raise ValueError("the heartbeat interval must be positive and shorter than the "
                             "worker timeout")
        self.http = http
        #: Seconds one store effect may take (a Redis that is down or stopped answers
        #: nothing): beyond it the effect fails as if the store had refused it.
        self.store_timeout = store_timeout
        #: The key ring's source to keep current (None: the keys were given, not stored).
        self.keys = keys
        self._key_tasks: set[asyncio.Task[None]] = set()
        self.stores = stores
        self._pump = pump
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        #: The server's side (stores.home): a plain call when it runs on this loop.
        self._enter: Enter = enter if enter is not None else self._here
        #: Effects taken from the server, not yet carried out (in order).
        self._queue: deque[SharedEffect] = deque()
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: list[Callable[[], Awaitable[None]]] = []
        self._closed = False
        # Liveness: this worker's heartbeats, and the others' as heard here.
        self.heartbeat_interval = heartbeat_interval
        self.liveness = WorkerLiveness(timeout=worker_timeout, started=self._loop.time())
        self._heartbeat: asyncio.Task[None] | None = None
        # Set to stop beating. An event, not Task.cancel: redis-py may swallow a
        # cancellation that lands in a publish, and the loop would then beat on for ever.
        self._stop_beat = asyncio.Event()

    async def start(self) -> None:
        """Subscribe to the bus topics every worker listens on."""
        bus = self.stores.bus
        self._unsubscribe.append(await bus.subscribe("sessions", self._on_sessions))
        self._unsubscribe.append(await bus.subscribe("broadcast", self._on_broadcast))
        self._unsubscribe.append(await bus.subscribe("events", self._on_event))
        self._unsubscribe.append(await bus.subscribe("answers", self._on_answer))
        if self.keys is not None:
            self._unsubscribe.append(await bus.subscribe("keys", self._on_keys))
            self._spawn(self._refresh_keys_forever())
        await self._start_liveness()

    def _here(self, fn: Callable[[float], _T]) -> _T:
        return fn(self._loop.time())

    def kick(self) -> None:
        """After a pump, where the server runs: take what it queued and have the driver's
        task carry it out (started if it is not already at it)."""
        if self._closed:
            return
        effects = self.http.shared_effects()
        if not effects:
            return
        if threading.get_ident() == self._thread:
            self._accept(effects)
        else:  # a trio or threads server: the driver's loop is on a thread of its own
            with contextlib.suppress(RuntimeError):  # (that loop closed: shutting down)
                self._loop.call_soon_threadsafe(self._accept, effects)

    def _accept(self, effects: list[SharedEffect]) -> None:
        self._queue.extend(effects)
        if not self._closed and (self._task is None or self._task.done()):
            self._task = self._loop.create_task(self._run())

    async def broadcast(self, method: str, params: Mapping[str, Any] | None) -> None:
        """Offer a notification to every session of every worker (through the bus)."""
        message = {"method": method, "params": dict(params) if params is not None else None}
        await self.stores.bus.publish("broadcast", json.dumps(message).encode())

    def broadcast_soon(self, method: str, params: Mapping[str, Any] | None) -> None:
        """:meth:`broadcast` from the server's thread (trio, threads): published by the
        driver's loop; a bus that fails is logged."""
        async def publish() -> None:
            try:
                async with asyncio.timeout(self.store_timeout):
                    await self.broadcast(method, params)
            except Exception:
                log.warning("a server-wide notification could not be published", exc_info=True)

        def spawn() -> None:
            self._spawn(publish())
        with contextlib.suppress(RuntimeError):  # (the loop closed: shutting down)
            self._loop.call_soon_threadsafe(spawn)

    async def aclose(self) -> None:
        await self._stop_liveness()  # first: the others end their relays of our streams now
        self._closed = True
        for key_task in list(self._key_tasks):
            key_task.cancel()
        for unsubscribe in self._unsubscribe:
            with contextlib.suppress(Exception):
                await unsubscribe()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 5.0)
            except (TimeoutError, Exception):
                task.cancel()

    # -- effects --------------------------------------------------------------------------

    async def _run(self) -> None:
        while self._queue:
            effect = self._queue.popleft()
            try:
                async with asyncio.timeout(self.store_timeout):
                    await self._carry_out(effect)
            except Exception as exc:  # (TimeoutError included: a store that hangs)
                log.warning("a shared store failed on %r", effect,
                            exc_info=not isinstance(exc, TimeoutError))
                # Nothing is left hanging: a lookup is answered 503 with Retry-After
                # (the server: nothing known, nothing lost), so is an initialize whose
                # new session could not be recorded; another held answer goes (the
                # session's change then lives on this worker only).
                self._failed(effect, exc)

    def _failed(self, effect: SharedEffect, exc: Exception) -> None:
        failure = exc if str(exc) else TimeoutError(
            f"no answer within {self.store_timeout:g} s")

        def tell(now: float) -> None:
            if isinstance(effect, Lookup):
                self.http.resolve(effect, failure, now=now)
            elif isinstance(effect, SaveSession | DropSession):
                self.http.stored(effect, now=now, failure=failure)
            self._safe_pump()
        self._server(tell)

    def _server(self, fn: Callable[[float], _T]) -> _T | None:
        """``fn(now)`` where the server runs (None if it is gone: a trio run that ended)."""
        try:
            result: _T = self._enter(fn)
        except Exception:
            log.exception("a call into the HTTP server from its store driver failed")
            return None
        return result

    async def _carry_out(self, effect: SharedEffect) -> None:
        stores = self.stores
        wall = time.time()
        if isinstance(effect, StoreEvent):
            await stores.events.append(effect.event_id, effect.data, wall_time=wall)
            # After the append: a worker that read the log before it gets the event here,
            # one that read it after sees it twice and drops the copy (by its sequence).
            event = {"id": effect.event_id, "data": effect.data.decode("latin-1")}
            await stores.bus.publish("events", json.dumps(event).encode())
        elif isinstance(effect, ForgetStream):
            await stores.events.forget(effect.stream_id)
        elif isinstance(effect, SaveSession):
            timeout = self.http.session_idle_timeout
            deadline = wall + (timeout if timeout is not None else _NO_TIMEOUT_DEADLINE)
            if effect.refresh:  # only the deadline moves (see SaveSession.refresh)
                if not await stores.sessions.touch(effect.session_id, expires_at=deadline,
                                                   wall_time=wall):
                    log.debug("session %s... is gone from the table; not written again",
                              effect.session_id[:8])
                self._release(effect)
                return
            await stores.sessions.put(effect.session_id, effect.record, expires_at=deadline,
                                      wall_time=wall)
            note: dict[str, Any] = {"saved": effect.session_id, "by": self.http.stream_tag,
                                    "record": effect.record}
            await self._tell_then_release("sessions", note, effect)
        elif isinstance(effect, ForwardAnswer):
            note = {"session": effect.session_id, "to": effect.worker,
                    "message": effect.message}
            await stores.bus.publish("answers", json.dumps(note).encode())
        elif isinstance(effect, DropSession):
            await stores.sessions.delete(effect.session_id)
            note = {"ended": effect.session_id, "by": self.http.stream_tag}
            await self._tell_then_release("sessions", note, effect)
        else:
            if effect.kind == "session":
                found = await stores.sessions.get(effect.key, wall_time=wall)
            else:
                parsed = parse_event_id(effect.key)
                writer = stream_writer(parsed[0]) if parsed is not None else None
                if (parsed is not None and writer is not None
                        and writer != self.http.stream_tag
                        and self.liveness.is_gone(writer, self._loop.time())):  # (own clock)
                    await self._finish_stream(parsed[0])  # the replay then holds its end
                found = await stores.events.replay(effect.key, wall_time=wall)
                self._judge_writer(effect.key)

            def resolve(now: float) -> None:
                self.http.resolve(effect, found, now=now)
                self._safe_pump()
            self._server(resolve)

    async def _tell_then_release(self, topic: str, note: dict[str, Any],
                                 effect: SaveSession | DropSession) -> None:
        """Publish the change, then let out the answers that waited for it. In that order:
        the client may send its next request to another worker (another host) the moment
        it has the answer, and that worker must have been told first -- a DELETE answered
        before the news left let the other host serve the ended session (the
        two-host test). A bus that fails raises to :meth:`_run`, which releases them."""
        await self.stores.bus.publish(topic, json.dumps(note).encode())
        self._release(effect)

    def _release(self, effect: SaveSession | DropSession) -> None:
        """The table has it: the answers waiting for it may go."""
        if effect.channels:
            def release(now: float) -> None:
                self.http.stored(effect, now=now)
                self._safe_pump()
            self._server(release)

    def _safe_pump(self) -> None:
        try:
            self._pump()
        except Exception:
            log.exception("the HTTP server's pump failed after a store answer")

    # -- the bus ----------------------------------------------------------------------------

    def _on_sessions(self, topic: str, message: bytes) -> None:
        """Another worker ended a session (``ended``) or saved a newer record of it
        (``saved``): this worker's copy, if it has one, follows."""
        try:
            note = json.loads(message)
            by = note["by"]
            ended, saved = note.get("ended"), note.get("saved")
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("a malformed message on the bus's sessions topic was ignored")
            return
        if by == self.http.stream_tag:
            return

        def follow(now: float) -> None:
            if isinstance(ended, str):
                self.http.forget_session(ended, now=now)
            elif isinstance(saved, str):
                self.http.refresh_session(saved, note.get("record"), now=now)
            self._safe_pump()
        self._server(follow)

    # -- liveness -----------------------------------------------------------------------------

    async def _start_liveness(self) -> None:
        self.liveness.started = self._loop.time()
        self._unsubscribe.append(await self.stores.bus.subscribe("workers", self._on_workers))
        self._heartbeat = self._loop.create_task(self._beat_forever())

    async def _stop_liveness(self) -> None:
        """A clean shutdown: stop beating and say "gone" (bounded: a bus that is down
        leaves the others to notice the silence)."""
        beat, self._heartbeat = self._heartbeat, None
        if beat is None:
            return
        self._stop_beat.set()
        try:  # a beat under way finishes first (bounded), so "gone" is the last word
            await asyncio.wait_for(asyncio.shield(beat), 2.0)
        except (TimeoutError, Exception):
            beat.cancel()
        note = json.dumps({"worker": self.http.stream_tag, "gone": True}).encode()
        try:
            await asyncio.wait_for(self.stores.bus.publish("workers", note), 2.0)
        except (TimeoutError, Exception):
            log.warning("the shutdown notice could not be published; the other workers "
                        "will notice the silence")

    async def _beat_forever(self) -> None:
        alive = json.dumps({"worker": self.http.stream_tag, "alive": True}).encode()
        # The relayed writers are judged more often than a beat goes out (a second at
        # most): a client waiting on a dead writer's stream is told soon after the timeout.
        tick = min(self.heartbeat_interval, _WRITER_CHECK_INTERVAL)
        next_beat = self._loop.time()
        while not self._stop_beat.is_set():
            if self._loop.time() >= next_beat:
                next_beat = self._loop.time() + self.heartbeat_interval
                try:
                    await self.stores.bus.publish("workers", alive)
                except Exception:  # a bus that is down: the next beat tries again
                    log.warning("a heartbeat could not be published on the bus")
            await self._check_writers()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop_beat.wait(), tick)

    async def _check_writers(self) -> None:
        """End the relays of writers that went silent (or were never heard): each of their
        streams is finished first (_finish_stream), so its relays send the errors and end."""
        relayed = self._server(lambda now: self.http.relayed_writers()) or set()
        for tag in self.liveness.gone(relayed, self._loop.time()):
            log.info("worker %s is gone: its relayed streams end here", tag)
            await self._writer_gone(tag)

    async def _writer_gone(self, tag: str) -> None:
        """Finish the streams of ``tag`` relayed here, then tell the server it is gone."""
        # (the server's relays by stream id: which streams of that writer are followed)
        followed = self._server(lambda now: list(self.http._relays)) or []
        for stream_id in [s for s in followed if stream_writer(s) == tag]:
            await self._finish_stream(stream_id)

        def gone(now: float) -> None:
            if self.http.worker_gone(tag, now=now):
                self._safe_pump()
        self._server(gone)

    async def _finish_stream(self, stream_id: str) -> None:
        """Finish, in its writer's place, the stream of a writer that is gone: an error for
        each of its requests whose answer the log does not hold, then the end marker --
        appended to the log, published to the relays of every worker and handed to this
        one's (mcp_sansio/http/_stranded.py). Bounded: a store that fails or hangs leaves
        the stream as it was (its relays end all the same)."""
        kept_of = getattr(self.stores.events, "kept", None)
        if kept_of is None:
            return
        try:
            async with asyncio.timeout(_FINISH_TIMEOUT):
                wall = time.time()
                kept = await kept_of(stream_id, wall_time=wall)
                answers = stranded_answers(kept)
                if answers is None or not kept:
                    return
                # Numbered far past the writer's last: a writer judged gone that was only
                # late goes on numbering its own events, and the two must not collide.
                seq = max(number for number, _ in kept) + _FINISH_GAP
                for data in [*answers, STREAM_END]:
                    seq += 1
                    event_id = f"{stream_id}:{seq}"
                    await self.stores.events.append(event_id, data, wall_time=wall)
                    note = {"id": event_id, "data": data.decode("latin-1")}
                    await self.stores.bus.publish("events", json.dumps(note).encode())
                    self._server(functools.partial(self._relay_at, event_id, data))
                log.info("stream %s... of a stopped worker finished: %d request(s) answered "
                         "with an error", stream_id[:12], len(answers))
        except Exception:  # (TimeoutError included)
            log.warning("the stream of a stopped worker could not be finished", exc_info=True)
        self._server(lambda now: self._safe_pump())

    def _relay_at(self, event_id: str, data: bytes, now: float) -> None:
        self.http.relay_event(event_id, data, now=now)

    def _judge_writer(self, last_event_id: str) -> None:
        """Before a resumption is answered: if the stream's writer is gone, the server is
        told now, so the replay ends at once rather than relaying until the next beat."""
        parsed = parse_event_id(last_event_id)
        tag = stream_writer(parsed[0]) if parsed is not None else None
        if (tag is not None and tag != self.http.stream_tag
                and self.liveness.is_gone(tag, self._loop.time())):
            self._server(lambda now: self.http.worker_gone(tag, now=now))

    def _on_workers(self, topic: str, message: bytes) -> None:
        """Another worker's heartbeat, or its notice that it is gone."""
        try:
            note = json.loads(message)
            tag = note["worker"]
        except (ValueError, KeyError, TypeError):
            log.warning("a malformed message on the bus's workers topic was ignored")
            return
        if not isinstance(tag, str) or not tag or tag == self.http.stream_tag:
            return
        now = self._loop.time()
        if note.get("gone") is True:
            self.liveness.left(tag)
            self._spawn(self._writer_gone(tag))
        elif self.liveness.heard(tag, now):
            self._server(lambda _: self.http.worker_back(tag))

    # -- the key ring ------------------------------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        task = self._loop.create_task(coro)
        self._key_tasks.add(task)
        task.add_done_callback(self._key_tasks.discard)

    async def _refresh_keys(self) -> None:
        assert self.keys is not None
        try:
            await self.keys.refresh()
        except Exception:  # the keys in hand stay; the next refresh tries again
            log.exception("reading the shared key store failed")

    async def _refresh_keys_forever(self) -> None:
        assert self.keys is not None
        while not self._closed:
            await asyncio.sleep(self.keys.refresh_interval)
            await self._refresh_keys()

    def _on_keys(self, topic: str, message: bytes) -> None:
        """A key was added to the store (``rotate_key``): read the ring now, not at the next
        refresh, so that this worker opens with it as early as possible."""
        if not self._closed:
            self._spawn(self._refresh_keys())

    def _on_answer(self, topic: str, message: bytes) -> None:
        """A client's answer to one of this worker's requests, posted on another worker."""
        try:
            note = json.loads(message)
            session_id, to, answer = note["session"], note["to"], note["message"]
        except (ValueError, KeyError, TypeError):
            log.warning("a malformed message on the bus's answers topic was ignored")
            return
        if to != self.http.stream_tag or not isinstance(session_id, str):
            return

        def deliver(now: float) -> bool:
            delivered = self.http.deliver_answer(session_id, answer, now=now)
            if delivered:
                self._safe_pump()
            return delivered
        if self._server(deliver) is False:  # as on one server, an answer nobody waits for
            log.warning("an answer forwarded for session %s... found no copy of it here",
                        session_id[:8])

    def _on_event(self, topic: str, message: bytes) -> None:
        """An event another worker stored: relayed if a client resumed its stream here."""
        try:
            note = json.loads(message)
            event_id, data = note["id"], note["data"].encode("latin-1")
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeEncodeError):
            log.warning("a malformed message on the bus's events topic was ignored")
            return
        def relay(now: float) -> None:
            if self.http.relay_event(event_id, data, now=now):
                self._safe_pump()
        if isinstance(event_id, str):
            self._server(relay)

    def _on_broadcast(self, topic: str, message: bytes) -> None:
        try:
            note = json.loads(message)
            method, params = note["method"], note["params"]
        except (ValueError, KeyError, TypeError):
            log.warning("a malformed message on the bus's broadcast topic was ignored")
            return
        if isinstance(method, str) and (params is None or isinstance(params, dict)):
            def offer(now: float) -> None:
                self.http.broadcast(method, params)
                self._safe_pump()
            self._server(offer)

