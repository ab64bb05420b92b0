"""The shared-store relay: one worker among several that share sessions and SSE events.

Theory of operation
-------------------
With ``shared=True`` (:mod:`mcp_sansio.http._shared`), sessions and SSE events live in
stores several workers share, reached through effects the adapter carries out
(:meth:`SharedRelay.shared_effects`). A lookup -- a session record this worker lacks, the
events a ``Last-Event-ID`` resumes from -- parks its exchange like a token decision
(:mod:`mcp_sansio.http._parking`); the request is handled again with the answer in hand
(:meth:`SharedRelay._looked_up`). A request that may change the session's record holds its
answer until the record is stored (:meth:`SharedRelay._hold`, :meth:`SharedRelay._save`).
A stream resumed here that another worker writes is relayed from the bus
(:meth:`SharedRelay.relay_event`) until that worker ends it or is said to be gone
(:meth:`SharedRelay.worker_gone`); a client's answer to another worker's request goes there
(:class:`~mcp_sansio.http._shared.ForwardAnswer`); requests to the client carry this
worker's tag in their ids.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._codec import MessageKind
from .._errors import ErrorCode
from .._events import RequestId
from .._snapshot import refresh_session, restore_session, snapshot_session
from .._versions import Era
from ..stores import parse_event_id
from ._hub import Hub, ServerChannel, Session, SessionEnd, _Kind, _Stream
from ._parking import Parking
from ._shared import (
    MAX_GONE_WORKERS,
    STREAM_END,
    DropSession,
    ForwardAnswer,
    Lookup,
    SaveSession,
    SharedEffect,
    answer_worker,
    new_stream_id,
    stream_writer,
)
from ._sse import encode_event
from ._stranded import is_opening
from ._streams import SSE_HEADERS as _SSE_HEADERS
from ._streams import Streams

if TYPE_CHECKING:
    from ..auth._access import AccessInfo

__all__ = ["SharedRelay"]


class SharedRelay:
    """A shared server's dealings with the stores and the other workers (module
    docstring); a server that is not shared has one too, which stays idle."""

    def __init__(self, hub: Hub, streams: Streams, parking: Parking) -> None:
        self.hub = hub
        self.config = hub.config  # (the server hands a replaced one to every part)
        self.streams = streams
        self.parking = parking
        self._effects: list[SharedEffect] = []
        # Relays (streams another worker writes, resumed here), by stream id; and the
        # events the bus brought for a stream whose replay is being read, by stream id and
        # waiting channel (see relay_event).
        self._relays: dict[str, _Stream] = {}
        self._following: dict[str, dict[ServerChannel, list[tuple[int, bytes]]]] = {}
        # Writers the adapter said are gone (worker_gone), most recent last: their streams
        # are replayed, never relayed live (nothing more will come). Bounded.
        self._gone_workers: OrderedDict[str, None] = OrderedDict()

    def shared_effects(self) -> list[SharedEffect]:
        """What to store, drop and look up in the shared stores, in order (``shared``
        servers; empty otherwise). Each :class:`~mcp_sansio.http._shared.Lookup` must be
        answered with :meth:`resolve`; the others need no answer."""
        effects = self._effects[:]
        self._effects.clear()
        return effects

    def resolve(self, lookup: Lookup, answer: Any, *, now: float | None = None) -> bool:
        """The store's answer to ``lookup``: a session record (or None: unknown) or a
        replay (``EventLog.replay``'s result). The waiting request is handled with it and
        its connection read on; drain :meth:`next_event` and :meth:`data_to_send` after.
        A lookup is a parked exchange like any other (:meth:`decide` with its ``handle``
        does the same): False when it no longer waits (answered already, timed out -- it
        was then answered 503 -- or its client left)."""
        return self.parking.decide(lookup.handle, answer, now=now)

    def _looked_up(self, lookup: Lookup, answer: Any) -> None:
        """The store's answer to ``lookup`` (an exception when it failed, or none came in
        time: answered 503 with Retry-After): handle the request again with it in hand."""
        channel = lookup.channel
        if lookup.kind == "replay":
            channel._answers[("follow", lookup.key)] = self._unfollow(channel, lookup.key)
        if isinstance(answer, BaseException) and (
                lookup.kind == "session" and lookup.key in self.hub._sessions):
            answer = None  # the store failed: this worker's own copy serves, as it is
        elif isinstance(answer, BaseException):
            # The store failed or was too slow: nothing is known and nothing is lost, so
            # the client is asked to try again rather than told its session is gone.
            self.hub._error(channel, 503, ErrorCode.INTERNAL_ERROR,
                            f"Service Unavailable: the shared store did not answer ({answer})",
                            headers=[("retry-after", "1")])
            return
        if lookup.kind == "session" and answer is not None:
            if lookup.key in self.hub._sessions:  # a copy in doubt (_session_for): update it
                self.refresh_session(lookup.key, answer)
            else:
                try:
                    self._adopt(lookup.key, answer)
                except ValueError:  # a record this server cannot serve: an unknown session
                    answer = None
        channel._answers[(lookup.kind, lookup.key)] = answer
        if not channel.wire.closed and channel.stream is None:
            self.hub.owner._handle(channel, lookup.request)
            if channel._parked is None:
                channel._answers.clear()

    def stored(self, effect: SaveSession | DropSession, *, now: float | None = None,
               failure: BaseException | None = None) -> None:
        """``effect`` is done in the table, or the store failed it (``failure``): release the
        answers it held; drain :meth:`data_to_send` after. A failed change of a session
        the table has leaves the session's state on this worker only; a failed record of a
        *new* session ends it here and answers its ``initialize`` 503 with Retry-After (no
        other worker could find it: its client would be told 404 there)."""
        self.hub._clock(now)
        for channel in effect.channels:
            if (failure is not None and channel is not None
                    and channel._deferred is not None):
                self._unsaved(effect.session_id, channel, failure)
            else:
                self._release(channel)

    def _unsaved(self, session_id: str, channel: ServerChannel,
                 failure: BaseException) -> None:
        request_id = channel._deferred[3] if channel._deferred is not None else None
        channel._deferred = None
        channel._held = False
        session = self.hub._sessions.get(session_id)
        if session is not None and session.ended is None:
            holding, session._holding = session._holding, ()
            for other in holding:
                self._release(other)
            session._quiet = True  # not in the table: nothing to drop there
            self.hub.owner._end_session(session, SessionEnd.CLOSED)
        self.hub._error(channel, 503, ErrorCode.INTERNAL_ERROR,
                        f"Service Unavailable: the shared store could not record the new "
                        f"session ({failure or type(failure).__name__})", request_id,
                        headers=[("retry-after", "1")])

    def _release(self, channel: ServerChannel | None) -> None:
        if channel is not None and channel._held:
            channel._held = False
            deferred, channel._deferred = channel._deferred, None
            if deferred is not None:
                self.hub._respond(channel, deferred[0], deferred[1], deferred[2])
            self.hub._writable[channel] = None

    def forget_session(self, session_id: str, *, now: float | None = None) -> None:
        """Another worker ended ``session_id`` (the event bus said so): end this worker's
        copy, without telling the store again."""
        self.hub._clock(now)
        session = self.hub._sessions.get(session_id)
        if session is not None and session.ended is None:
            session._quiet = True
            self.hub.owner._end_session(session, SessionEnd.CLOSED)

    def refresh_session(self, session_id: str, record: Any, *,
                        now: float | None = None) -> None:
        """Another worker saved a newer record of ``session_id`` (the event bus said so):
        bring this worker's copy, if any, up to date (log level, subscriptions,
        initialized). A record that does not fit the copy ends the copy here."""
        self.hub._clock(now)
        session = self.hub._sessions.get(session_id)
        if session is None or session.ended is not None or session.legacy:
            return
        try:
            if type(record) is not dict or record.get("principal") != _principal(session.auth):
                raise ValueError("the record is of another principal's session")
            refresh_session(session.connection, record.get("session", {}))
        except ValueError:
            self.forget_session(session_id)
            return
        session._saved = record

    def relay_event(self, event_id: str, data: bytes, *, now: float | None = None) -> bool:
        """An event another worker stored (the bus's ``events`` topic): if this worker
        relays that stream -- a client resumed it here with ``Last-Event-ID`` -- send it on
        (in sequence order, each once: the event ids order them), or keep it for a replay
        being read. True when it was wanted here. Drain :meth:`data_to_send` after."""
        self.hub._clock(now)
        parsed = parse_event_id(event_id)
        if parsed is None:
            return False
        stream_id, seq = parsed
        waiting = self._following.get(stream_id)
        if waiting:
            for buffer in waiting.values():
                if len(buffer) < self.config.max_pending_messages:  # bounded, like a backlog
                    buffer.append((seq, data))
        relay = self._relays.get(stream_id)
        if relay is not None:
            self._relay(relay, [(seq, data)])
        return bool(waiting) or relay is not None

    def worker_gone(self, tag: str, *, now: float | None = None) -> int:
        """The worker ``tag`` is gone (it said so, or fell silent: the adapter judges with
        :class:`~mcp_sansio.http._shared.WorkerLiveness`). Only the writer ends its streams,
        so each relay of one of them ends here -- the client resumes and gets what the log
        holds -- and from now on a resumption of them replays the log and ends. Returns how
        many relays ended; drain :meth:`data_to_send` after."""
        self.hub._clock(now)
        if not tag or tag == self.config.stream_tag:
            return 0
        self._gone_workers[tag] = None
        self._gone_workers.move_to_end(tag)
        while len(self._gone_workers) > MAX_GONE_WORKERS:
            self._gone_workers.popitem(last=False)
        ended = [relay for relay in self._relays.values() if stream_writer(relay.id) == tag]
        for relay in ended:
            self._end_relay(relay)
        return len(ended)

    def worker_back(self, tag: str) -> None:
        """A worker counted gone was heard again (a late heartbeat): its streams are relayed
        live again."""
        self._gone_workers.pop(tag, None)

    def relayed_writers(self) -> set[str]:
        """The tags of the workers whose streams are relayed here now (what the adapter
        checks for liveness)."""
        return {tag for tag in map(stream_writer, self._relays) if tag is not None}

    def _unfollow(self, channel: ServerChannel, last_event_id: str
                  ) -> list[tuple[int, bytes]]:
        parsed = parse_event_id(last_event_id)
        if parsed is None:
            return []
        waiting = self._following.get(parsed[0], {})
        buffer = waiting.pop(channel, [])
        if not waiting:
            self._following.pop(parsed[0], None)
        return buffer

    def _relay(self, relay: _Stream, events: Iterable[tuple[int, bytes]]) -> None:
        """Send on a relay the events past the last it sent, in order; the end marker
        ends it (the stream was finished by the worker writing it)."""
        channel = relay.channel
        for seq, data in sorted(events, key=lambda event: event[0]):
            assert relay.relayed is not None
            if seq <= relay.relayed or channel is None:
                continue
            relay.relayed = seq
            if data == STREAM_END:
                self._end_relay(relay)
                return
            if data and not is_opening(data):
                channel.wire.send_body(encode_event(data, id=f"{relay.id}:{seq}"))
                self.hub._writable[channel] = None

    def _end_relay(self, relay: _Stream) -> None:
        self._relays.pop(relay.id, None)
        relay.session._streams.pop(relay.id, None)
        relay.finished = True
        self.streams._close_response(relay)
        self.hub._touch(relay.session)

    def _tag_requests(self, session: Session) -> None:
        """A shared server's requests to the client carry this worker's tag in their ids
        (``<stream_tag>-<n>``): unique across the copies of one session, and the worker an
        answer landing elsewhere goes to (ForwardAnswer)."""
        if self.config.shared and self.config.stream_tag and not session.legacy:
            session.connection.request_id_prefix = f"{self.config.stream_tag}-"

    def deliver_answer(self, session_id: str, message: Any, *,
                       now: float | None = None) -> bool:
        """A client's answer to one of this worker's requests, posted on another worker
        (the bus's ``answers`` topic, :class:`~mcp_sansio.http._shared.ForwardAnswer`):
        handed to the session's connection, which matches it to the request waiting (an id
        it does not know is an ``UnexpectedResponse`` event, as on one server). False when
        this worker has no live copy of the session."""
        self.hub._clock(now)
        session = self.hub._sessions.get(session_id)
        if session is None or session.ended is not None or type(message) is not dict:
            return False
        session.connection.receive_message(message, now=self.hub._now)
        self.hub._mark_ready(session)
        return True

    def _forward_answers(self, session: Session, value: Any,
                         items: list[tuple[MessageKind, RequestId | None, str | None, Any]],
                         ) -> tuple[Any, list[tuple[MessageKind, RequestId | None, str | None,
                                                    Any]]]:
        """A shared server: answers to requests another worker sent go there (a
        ForwardAnswer each); what is left is this worker's."""
        raw = value if type(value) is list else [value]
        kept_raw, kept = [], []
        for message, item in zip(raw, items, strict=True):
            worker = (answer_worker(item[1])
                      if item[0] in (MessageKind.RESULT, MessageKind.ERROR) else None)
            if (worker is not None and worker != self.config.stream_tag
                    and session.id is not None):
                self._effects.append(ForwardAnswer(session.id, worker, message))
            else:
                kept_raw.append(message)
                kept.append(item)
        if type(value) is not list:
            return (kept_raw[0] if kept_raw else None), kept
        return kept_raw, kept

    def _wait_for(self, channel: ServerChannel, kind: str, key: str) -> bool:
        """A shared server without the answer to (kind, key) for this request: ask the
        adapter (a Lookup) and hold the channel; True when it now waits."""
        if not self.config.shared or (kind, key) in channel._answers:
            return False
        assert channel._request is not None
        lookup = Lookup(kind, key, channel, channel._request)
        # Bounded like every parked exchange: a store that never answers is 503 (try again).
        need = self.parking._park(channel, lookup, lambda answer: self._looked_up(lookup, answer),
                          lambda: self._looked_up(lookup, TimeoutError(
                              f"no answer within {self.hub.config.decision_timeout:g} s")),
                          announce=False)
        lookup.handle = need.handle
        self._effects.append(lookup)
        if kind == "replay":
            # From now on, what the bus brings for that stream is kept for this channel: an
            # event written after the store is read is then not lost (relay_event).
            parsed = parse_event_id(key)
            if parsed is not None:
                self._following.setdefault(parsed[0], {})[channel] = []
        return True

    def _adopt(self, session_id: str, record: Any) -> Session:
        """Serve here a session another worker opened (its record from the table: the
        connection's snapshot and the principal the session is bound to)."""
        if len(self.hub._sessions) >= self.config.max_sessions:
            raise ValueError("too many sessions")
        if type(record) is not dict or set(record) != {"session", "principal"}:
            raise ValueError("not a session table record")
        principal = record["principal"]
        if principal is not None and (
                type(principal) is not list or len(principal) != 2
                or type(principal[0]) is not str
                or (principal[1] is not None and type(principal[1]) is not str)):
            raise ValueError("not a principal")
        if (principal is None) != (self.config.auth is None):
            raise ValueError("a session of a server with other authorization")
        connection = restore_session(self.hub.connection_factory(), record["session"])
        session = Session(self.hub, session_id, connection, Era.HANDSHAKE)
        self._tag_requests(session)
        if principal is not None:
            from ..auth._access import AccessInfo

            claims = {"iss": principal[1]} if principal[1] is not None else {}
            session.auth = AccessInfo(subject=principal[0], claims=claims)
        session._standalone = _Stream(session, _Kind.STANDALONE,
                                      new_stream_id(session._prefix, self.config.stream_tag, 0))
        session._standalone.resumable = self.hub.event_store is not None
        # The record's age is unknown here (another worker saved it, at a time on its own
        # clocks), so the copy counts as due for a save: the request that adopted it
        # refreshes the table's deadline. Counted as fresh, a session the client kept
        # using here could expire on the worker that saved it long ago (the
        # skewed-hosts tests).
        session._saved, session._saved_at = record, -math.inf
        self.hub._sessions[session_id] = session
        return session

    def _hold(self, session: Session, channel: ServerChannel) -> None:
        """A request that may change the session's record: its answer waits until the
        change is stored (released at once by :meth:`_save` when nothing changed). A client
        that has an answer may send its next request to any worker, which must then find
        what this one did -- the session itself after initialize, the initialized state,
        the log level."""
        channel._held = True
        session._holding += (channel,)

    def _save(self, session: Session) -> None:
        """Queue the session's record when it changed, or when a quarter of the idle timeout
        passed since the last save: the table's deadline (the idle timeout after a save)
        then falls between 3/4 and all of the timeout after the session's last activity."""
        channels, session._holding = session._holding, ()
        record = None
        if session.id is not None and session.ended is None:
            try:
                record = {"session": snapshot_session(session.connection),
                          "principal": _principal(session.auth)}
            except ValueError:  # not (or no longer) a negotiated session
                record = None
        timeout = self.config.session_idle_timeout
        stale = timeout is not None and self.hub._now - session._saved_at >= timeout / 4
        if session.id is None or record is None or (record == session._saved and not stale):
            for channel in channels:
                self._release(channel)
            return
        changed = record != session._saved
        session._saved, session._saved_at = record, self.hub._now
        if not changed:  # a refresh of the deadline: nobody needs to wait for it
            for channel in channels:
                self._release(channel)
            channels = ()
        self._effects.append(SaveSession(session.id, record, channels,
                                         refresh=not changed))

    def _resume_relay(self, channel: ServerChannel, session: Session, last_event_id: str,
                      stream_id: str, events: list[tuple[str, bytes]]) -> None:
        """A shared server resumes a stream another worker writes (or wrote): what the
        store holds, then what that worker stores after -- the bus brings it, and the
        events that came while the store was read were kept -- until the stream's end
        marker, or the client leaves."""
        parsed = parse_event_id(last_event_id)
        assert parsed is not None  # the store answered for it
        relay = _Stream(session, _Kind.POST, stream_id)
        relay.relayed = parsed[1]
        relay.resumable = True
        relay.channel = channel
        channel.stream = relay
        relay.started = relay.sent = True
        channel.wire.start_response(200, _SSE_HEADERS)
        self.hub._writable[channel] = None
        old = self._relays.get(stream_id)
        if old is not None:  # resumed again here: the newer connection takes the stream
            self._end_relay(old)
        self._relays[stream_id] = relay
        session._streams[stream_id] = relay
        self.streams._sse[relay] = None
        self.streams._arm_keepalive()
        replayed: list[tuple[int, bytes]] = []
        for event_id, data in events:
            found = parse_event_id(event_id)
            if found is not None:
                replayed.append((found[1], data))
        kept = channel._answers.get(("follow", last_event_id), [])
        self._relay(relay, [*replayed, *kept])
        if self._relays.get(stream_id) is relay and stream_writer(stream_id) in (
                self._gone_workers):
            # Its writer is gone: the log holds all there will ever be. The
            # response ends after it instead of waiting for live events that cannot come.
            self._end_relay(relay)
            return
        if len(kept) >= self.config.max_pending_messages and relay.relayed is not None:
            # More came while the store was read than was kept: what was dropped is in the
            # log, so the response ends here and the client resumes from its last id
            # (basic/transports.mdx, "Resumability and Redelivery") rather than miss it.
            self._end_relay(relay)
            return
        self.hub._touch(session)



def _principal(auth: AccessInfo | None) -> list[str | None] | None:
    """Who a session is bound to, as a session table record keeps it: what
    ``ProtectedResource.same_principal`` compares (the subject and its issuer)."""
    if auth is None:
        return None
    issuer = auth.claims.get("iss")
    return [auth.subject, issuer if isinstance(issuer, str) else None]
