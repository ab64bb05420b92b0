"""The HTTP server's shared state as effects: what the adapter stores, looks up and answers.

Theory of operation
-------------------
A server whose sessions and SSE events live in a store shared by several workers
(:mod:`mcp_sansio.stores`) cannot call that store: it is asynchronous (a network round trip
must not block the loop) and the core does no I/O. So an :class:`~mcp_sansio.http.HTTPServer`
built with ``shared=True`` says what it needs as *effects*, which the adapter takes with
:meth:`HTTPServer.shared_effects` and carries out in order.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import attrs

__all__ = [
    "DEFAULT_HEARTBEAT_INTERVAL",
    "DEFAULT_WORKER_TIMEOUT",
    "STREAM_END",
    "DropSession",
    "ForgetStream",
    "ForwardAnswer",
    "Lookup",
    "NumberedEvents",
    "SaveSession",
    "SharedEffect",
    "StoreEvent",
    "WorkerLiveness",
    "new_stream_id",
    "stream_writer",
]


#: The data of the last event a finished stream stores: not a JSON-RPC message (no JSON text
#: starts with NUL), never sent to a client. A worker relaying the stream (a client resumed
#: it there, ``HTTPServer.relay_event``) ends its response on it, and a replay that holds it
#: ends after the events before it.
STREAM_END = b"\x00end"


@attrs.frozen
class StoreEvent:
    """Keep ``data`` as event ``event_id`` (``EventLog.append``)."""

    event_id: str
    data: bytes = attrs.field(repr=False)  # a message: not for logs


@attrs.frozen
class ForgetStream:
    """Drop what is kept for ``stream_id`` (``EventLog.forget``)."""

    stream_id: str


@attrs.frozen
class SaveSession:
    """Keep ``record`` for ``session_id`` (``SessionTable.put``), its deadline the session
    idle timeout from now on the wall clock. The answers to the requests that changed the
    record (``initialize``, ``notifications/initialized``, ``logging/setLevel``...) wait on
    ``channels`` until the adapter calls :meth:`HTTPServer.stored`: a client that has an
    answer may send its next request to any worker at once, and that worker must find what
    this one did."""

    session_id: str = attrs.field(repr=lambda s: f"{s[:8]!r}...")
    #: ``{"session": snapshot_session(...), "principal": [subject, issuer] or None}``: the
    #: negotiated state, and who the session is bound to (servers with ``auth``).
    record: dict[str, Any] = attrs.field(repr=False)
    channels: tuple[Any, ...] = attrs.field(default=(), repr=False, eq=False)
    #: The record did not change here; only its deadline is due to move
    #: (``SessionTable.touch``: nothing is written over the record, nobody is told). A
    #: copy adopted from the table, or one that went a quarter of the idle timeout without
    #: a save, may be behind a newer record another worker saved meanwhile -- written
    #: whole, it would undo that change -- and a session another worker deleted
    #: stays deleted.
    refresh: bool = False


@attrs.frozen
class DropSession:
    """The session ended for good (``SessionTable.delete``); the answer to its ``DELETE``
    waits on ``channels`` until :meth:`HTTPServer.stored`."""

    session_id: str = attrs.field(repr=lambda s: f"{s[:8]!r}...")
    channels: tuple[Any, ...] = attrs.field(default=(), repr=False, eq=False)


@attrs.define(eq=False)
class Lookup:
    """A request waiting on the store: ``kind`` is ``"session"`` (``key`` a session id:
    answer with its record or None) or ``"replay"`` (``key`` a ``Last-Event-ID``: answer with
    ``EventLog.replay``'s result). Answer with :meth:`HTTPServer.resolve` (or
    :meth:`HTTPServer.decide` with ``handle``): it is a parked exchange (:mod:`._park`), so
    the first answer counts, and none within the server's ``decision_timeout`` counts as
    "not found"."""

    kind: str
    key: str = attrs.field(repr=lambda s: f"{s[:8]!r}...")
    channel: Any = attrs.field(repr=False)
    request: Any = attrs.field(repr=False)
    #: The parked exchange's handle (:class:`~mcp_sansio.http._park.DecisionNeeded`).
    handle: int = 0


@attrs.frozen
class ForwardAnswer:
    """A client's answer to a request another worker sent (its id carries that worker's
    tag: ``<worker>-<n>``): publish it on the bus's ``answers`` topic for ``worker``, which
    hands it to the session's connection there (:meth:`HTTPServer.deliver_answer`). No
    answer to wait for: the POST that carried it was answered 202, as every answer is."""

    session_id: str = attrs.field(repr=lambda s: f"{s[:8]!r}...")
    worker: str
    message: dict[str, Any] = attrs.field(repr=False)  # the client's data: not for logs


def answer_worker(request_id: Any) -> str | None:
    """The worker tag in the id of a request a shared server sent (``<tag>-<n>``), or None
    for an id of another form (the client's answer is then the local connection's)."""
    if type(request_id) is not str:
        return None
    tag, sep, number = request_id.partition("-")
    if not sep or not tag.isalnum() or not number.isdigit():
        return None
    return tag


#: Everything :meth:`HTTPServer.shared_effects` hands out.
SharedEffect = StoreEvent | ForgetStream | SaveSession | DropSession | Lookup | ForwardAnswer


class NumberedEvents:
    """The event store of a ``shared`` server: numbers each stream's events and queues a
    :class:`StoreEvent` for each; :meth:`replay` is never answered here (it is a
    :class:`Lookup`)."""

    def __init__(self, effects: list[SharedEffect]) -> None:
        self._effects = effects
        self._next: dict[str, int] = {}

    def store(self, stream_id: str, data: bytes) -> str:
        seq = self._next.get(stream_id, 0)
        self._next[stream_id] = seq + 1
        event_id = f"{stream_id}:{seq}"
        self._effects.append(StoreEvent(event_id, data))
        return event_id

    def replay(self, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        raise AssertionError("a shared server replays through a Lookup")  # pragma: no cover

    def forget(self, stream_id: str) -> None:
        self._next.pop(stream_id, None)
        self._effects.append(ForgetStream(stream_id))


# -- which writers are alive (a host that dies ends its relayed streams) --------------------------

#: Seconds between two heartbeats of a shared worker on the bus: 5. A heartbeat is a few
#: dozen bytes to every worker, so this costs nothing; it sets how soon a dead writer is
#: noticed (with the timeout below), against a client whose first resumption comes after
#: one second and whose last (of five, doubling) after about thirty.
DEFAULT_HEARTBEAT_INTERVAL = 5.0
#: Seconds without a heartbeat after which a worker counts as gone: 15, three intervals. The
#: bus delivers in milliseconds, so only a dead worker -- or one whose loop stalled for most
#: of that time, or a broken bus, where no live event could be relayed either -- misses
#: three; one lost or late heartbeat must not end streams that are still being written. A
#: relay of a dead writer ends within the timeout and one interval: about 20 s.
DEFAULT_WORKER_TIMEOUT = 15.0
#: Writers remembered as gone by a server: 1,024 (the oldest forgotten first). Each dead or
#: stopped worker is one entry; a forgotten one is judged again by :class:`WorkerLiveness`
#: at the next check (never heard: gone), so the bound only caps memory.
MAX_GONE_WORKERS = 1024


def new_stream_id(session_prefix: str, tag: str, number: int) -> str:
    """A stream's id: the session's prefix, the writing worker's tag (when it has one), the
    stream's number, dash-separated -- a tag is letters and digits and the prefix hex, so
    the writer reads back unambiguously (tag ``w0`` stream 12 is not tag ``w01`` stream 2)."""
    return f"{session_prefix}-{tag}-{number}" if tag else f"{session_prefix}-{number}"


def stream_writer(stream: str) -> str | None:
    """The tag of the worker that writes ``stream`` (an id made by :func:`new_stream_id`), or
    None for an untagged one or anything else (a ``Last-Event-ID`` is the client's input)."""
    parts = stream.split("-")
    if len(parts) != 3 or not parts[1].isalnum() or not parts[2].isdigit():
        return None
    return parts[1]


class WorkerLiveness:
    """Which shared workers are alive, from their heartbeats (sans-IO: ``now`` is the
    receiving worker's own monotonic clock, so no two hosts' clocks are ever compared --
    a heartbeat counts when it *arrives*).

    :param timeout: seconds without a heartbeat after which a worker counts as gone.
    :param started: when this worker began listening: a writer never heard from counts as
        gone only once ``timeout`` has passed since (every live worker spoke by then).
    """

    def __init__(self, *, timeout: float = DEFAULT_WORKER_TIMEOUT, started: float) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.timeout = timeout
        self.started = started
        self._heard: dict[str, float] = {}
        # Workers that said they are gone (a clean shutdown), most recent last; bounded.
        self._left: OrderedDict[str, None] = OrderedDict()

    def heard(self, tag: str, now: float) -> bool:
        """A heartbeat of ``tag`` arrived at ``now``; True if it was counted gone before
        (it is back: a late heartbeat, or a bus that came back)."""
        back = tag in self._left or self.is_gone(tag, now)
        self._left.pop(tag, None)
        self._heard[tag] = now
        return back

    def left(self, tag: str) -> None:
        """``tag`` announced a clean shutdown: gone at once."""
        self._heard.pop(tag, None)
        self._left[tag] = None
        self._left.move_to_end(tag)
        while len(self._left) > MAX_GONE_WORKERS:
            self._left.popitem(last=False)

    def is_gone(self, tag: str, now: float) -> bool:
        """Whether the writer ``tag`` counts as gone at ``now``."""
        if tag in self._left:
            return True
        last = self._heard.get(tag)
        if last is None:
            return now - self.started > self.timeout
        return now - last > self.timeout

    def gone(self, writers: Iterable[str], now: float) -> list[str]:
        """Of ``writers`` (the tags whose streams are relayed here), those gone at ``now``;
        also forgets heartbeats so old they say nothing (their workers count as gone)."""
        for tag, last in list(self._heard.items()):
            if now - last > self.timeout:
                del self._heard[tag]
        return sorted({tag for tag in writers if self.is_gone(tag, now)})
