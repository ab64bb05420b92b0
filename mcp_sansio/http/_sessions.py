"""The handshake-era session table: sessions from ``initialize`` to their end.

Theory of operation
-------------------
Sessions of the handshake era (2025-03-26 .. 2025-11-25) live from ``initialize`` to
``DELETE``, expiry (``session_idle_timeout`` without a request or an open stream), or
:meth:`SessionTable.end_session`; their id comes from the caller's ``new_session_id`` (the
adapter uses :mod:`secrets`), behind the configured routing prefix. :class:`SessionTable`
opens them (503 beyond ``max_sessions``), finds the one a request names (400 without
``Mcp-Session-Id``, 404 for an unknown, ended or other principal's one; on a shared server
the store is asked first), serves their POSTs (a request id already in flight is 400),
their GET stream (one at a time: 409; ``Last-Event-ID`` resumes) and their DELETE, and ends
them: every stream closed, the connection told, the ``ConnectionClosed`` event delivered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._admission import batch_refusal
from .._codec import MessageKind
from .._errors import ErrorCode, LocalProtocolError
from .._events import CancelRequested, ConnectionClosed, Event, RequestId
from .._state import State
from .._versions import Era
from ._checks import RequestChecks
from ._gate import AuthGate
from ._headers import Headers, accepts
from ._hub import Hub, ServerChannel, Session, SessionEnd, _Kind, _Stream
from ._relay import SharedRelay
from ._shared import DropSession, new_stream_id
from ._streams import SSE_HEADERS as _SSE_HEADERS
from ._streams import Streams
from ._wire import HTTPRequest

__all__ = ["SessionTable"]


class SessionTable:
    """The handshake-era sessions of one server (see the module docstring)."""

    def __init__(self, hub: Hub, checks: RequestChecks, gate: AuthGate, streams: Streams,
                 relay: SharedRelay) -> None:
        self.hub = hub
        self.config = hub.config  # (the server hands a replaced one to every part)
        self.checks = checks
        self.gate = gate
        self.streams = streams
        self.relay = relay

    def end_session(self, session: Session | str, *, now: float | None = None) -> None:
        """End a session on the server's initiative: later requests for it get 404."""
        self.hub._clock(now)
        if isinstance(session, str):
            found = self.hub._sessions.get(session)
            if found is None:
                return
            session = found
        if session.ended is None:
            self._end_session(session, SessionEnd.CLOSED)

    def broadcast(self, method: str, params: Mapping[str, Any] | None = None) -> int:
        """Send a notification to every session that may receive it (e.g.
        ``notifications/tools/list_changed``): handshake sessions that are operating, and
        stateless ``subscriptions/listen`` streams that asked for it. Returns how many
        sessions it was offered to."""
        count = 0
        targets = [s for s in self.hub._sessions.values() if s.connection.state is State.OPERATING]
        targets.extend(self.hub._listening)
        for session in targets:
            try:
                session.connection.send_notification(method, params)
            except LocalProtocolError:  # not allowed on this session: skip it
                continue
            count += 1
            self.hub._dirty[session] = None
        return count

    def _session_for(self, channel: ServerChannel, headers: Headers,
                     request_id: RequestId | None = None) -> Session | None:
        """The session a request names, or None after answering 400 (no id) or 404.
        ``request_id``: a lone request's, which the error carries (JSON-RPC 2.0 s. 5: null
        only when the id could not be read)."""
        session_id = headers.decoded().get("mcp-session-id")
        if session_id is None:
            self.hub._error(channel, 400, ErrorCode.INVALID_REQUEST,
                        "Bad Request: the Mcp-Session-Id header is required", request_id)
            return None
        session = self.hub._sessions.get(session_id)
        if session is None and self.relay._wait_for(channel, "session", session_id):
            return None  # the store is asked; the request is handled again with its answer
        if (session is not None and self.config.shared and session.ended is None
                and session.connection.state is State.INITIALIZING
                and self.relay._wait_for(channel, "session", session_id)):
            # Its initialized notification may have gone to another worker, whose record
            # says so before the bus does: read the table again.
            return None
        if session is None or session.ended is not None or session.legacy:
            self.hub._error(channel, 404, ErrorCode.INVALID_REQUEST,
                        "Not Found: unknown or terminated session")
            return None
        if self.gate._bound_elsewhere(channel, session):
            return None
        return session

    def _post_initialize(self, channel: ServerChannel, value: Any, request_id: RequestId) -> None:
        if len(self.hub._sessions) >= self.config.max_sessions:
            self.hub._error(channel, 503, ErrorCode.TOO_MANY_REQUESTS,
                        "Service Unavailable: too many sessions", request_id,
                        headers=[("retry-after", "1")])
            return
        session = self._open_session(Era.HANDSHAKE)
        session.auth = channel.auth
        stream = self.streams._open_post_stream(session, channel, [request_id])
        stream.init = True
        if self.config.shared:  # released once the record is stored, or when initialize fails
            self.relay._hold(session, channel)
        session.connection.receive_message(value, now=self.hub._now)
        self.hub._mark_ready(session)

    def _open_session(self, era: Era, *, legacy: bool = False) -> Session:
        assert self.hub.new_session_id is not None
        session_id = self.hub.new_session_id()
        if not session_id:
            raise ValueError("a session id must be non-empty visible ASCII (0x21-0x7E)")
        session_id = self.config.session_id_prefix + session_id
        if any(not 0x21 <= ord(c) <= 0x7E for c in session_id):
            raise ValueError("a session id must be non-empty visible ASCII (0x21-0x7E)")
        if session_id in self.hub._sessions:
            raise ValueError("new_session_id returned an id that is in use")
        session = Session(self.hub, session_id, self.hub.connection_factory(), era, legacy=legacy)
        self.relay._tag_requests(session)
        self.hub._sessions[session_id] = session
        session._standalone = _Stream(session, _Kind.STANDALONE,
                                      new_stream_id(session._prefix, self.config.stream_tag, 0))
        session._standalone.resumable = self.hub.event_store is not None and not legacy
        return session

    def _post_to_session(
        self, channel: ServerChannel, session: Session, value: Any,
        items: list[tuple[MessageKind, RequestId | None, str | None, Any]],
    ) -> None:
        conn = session.connection
        if self.config.shared and session.id is not None:
            value, items = self.relay._forward_answers(session, value, items)
        if type(value) is dict:  # (one message: no list comprehension)
            ids = [items[0][1]] if items and items[0][0] is MessageKind.REQUEST else []
        else:
            ids = [item[1] for item in items if item[0] is MessageKind.REQUEST]
        if type(value) is list:
            refusal = batch_refusal(conn.protocol_version, conn.revision)
            if refusal is not None:
                self.hub._error(channel, 400, refusal.code, refusal.message)
                return
        for request_id in ids:
            if request_id in session._routes or ids.count(request_id) > 1:
                self.hub._error(channel, 400, ErrorCode.INVALID_REQUEST,
                            f"Invalid Request: id {request_id!r} is already in use by a "
                            "request in flight", request_id if len(items) == 1 else None)
                return
        if ids:
            self.streams._open_post_stream(session, channel, ids)  # type: ignore[arg-type]
        else:
            self.hub._respond(channel, 202)
        if self.config.shared:
            self.relay._hold(session, channel)
        if type(value) is dict and items:
            # One message, parsed already: the connection does not parse it again.
            conn._receive_parsed(value, items[0], now=self.hub._now)
        elif items:  # (all of it may have been forwarded to other workers)
            conn.receive_message(value, now=self.hub._now)
        self.hub._mark_ready(session)
        self.hub._touch(session)

    def _get(self, channel: ServerChannel, request: HTTPRequest) -> None:
        headers = request.headers
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in self.hub._handshake_versions:
            self.checks._unsupported_version(channel, version, None)
            return
        if not accepts(headers.get("accept"), "text/event-stream"):
            self.hub._error(channel, 406, ErrorCode.INVALID_REQUEST,
                        "Not Acceptable: Accept must list text/event-stream")
            return
        session = self._session_for(channel, headers)
        if session is None:
            return
        last_event_id = headers.get("last-event-id")
        resuming = last_event_id is not None and self.hub.event_store is not None
        if resuming and self.relay._wait_for(channel, "replay", last_event_id or ""):
            return
        if request.method == "HEAD":
            # RFC 9110 section 9.3.2: the status and header fields a GET would get, no
            # content -- and none of a GET's effects (HEAD is safe, section 9.2.1): no
            # stream is opened, resumed or taken over.
            if resuming and self.streams._replay(session, last_event_id or "", channel) is None:
                self.streams._unknown_event_id(channel)
            elif (not resuming and session._standalone is not None
                  and session._standalone.channel is not None):
                self.streams._stream_conflict(channel)
            else:
                channel.wire.start_response(200, _SSE_HEADERS)
                channel.wire.end_response()
                self.hub._writable[channel] = None
            return
        if resuming:
            self.streams._resume(channel, session, last_event_id or "")
            return
        standalone = session._standalone
        assert standalone is not None
        if standalone.channel is not None:
            self.streams._stream_conflict(channel)
            return
        self.streams._attach(standalone, channel)
        self.streams._drain_backlog(session)
        self.hub._touch(session)

    def _delete(self, channel: ServerChannel, request: HTTPRequest) -> None:
        version = request.headers.get("mcp-protocol-version")
        if version is not None and version not in self.hub._handshake_versions:
            self.checks._unsupported_version(channel, version, None)
            return
        session = self._session_for(channel, request.headers)
        if session is None:
            return
        if self.config.shared:  # the 200 waits until the drop is stored: no one serves it
            self.relay._hold(session, channel)
        self._end_session(session, SessionEnd.DELETED)
        self.hub._respond(channel, 200)

    def _end_session(self, session: Session, reason: SessionEnd) -> None:
        session.ended = reason
        if session.id is not None:
            self.hub._sessions.pop(session.id, None)
            if (self.config.shared and not session.legacy and not session._quiet
                    and reason in (SessionEnd.DELETED, SessionEnd.CLOSED)):
                # Ended for everyone; one that idled out here may live on elsewhere.
                channels, session._holding = session._holding, ()
                self.relay._effects.append(DropSession(session.id, tuple(channels)))
        for stream in [*session._streams.values(), session._standalone]:
            if stream is None:
                continue
            channel = stream.channel
            if channel is not None and not stream.finished:
                if stream.started:
                    self.streams._close_response(stream)
                else:
                    stream.channel = None
                    channel.stream = None
                    self.hub._error(channel, 404, ErrorCode.INVALID_REQUEST,
                                "Not Found: the session has ended")
                    self.hub._pending_channels[channel] = None
            stream.finished = True
            if stream.relayed is not None:  # another worker's stream: not ours to forget
                self.relay._relays.pop(stream.id, None)
            elif self.hub.event_store is not None and stream.resumable and stream.sent:
                self.hub.event_store.forget(stream.id)
        session._streams.clear()
        session._routes.clear()
        session._backlog = None
        if reason is SessionEnd.DELETED or reason is SessionEnd.DISCONNECTED:
            session.connection.receive_eof(now=self.hub._now)
        else:
            session.connection.close(now=self.hub._now)
        self.hub._mark_ready(session)

    def _observe(self, session: Session, event: Event) -> None:
        """Keep streams in step with what the connection reports."""
        if type(event) is CancelRequested:
            stream = session._routes.pop(event.request_id, None)
            if stream is not None:
                stream.pending.pop(event.request_id, None)
                if not stream.pending and stream.kind is not _Kind.STANDALONE:
                    self.streams._finish(stream)
        elif type(event) is ConnectionClosed:
            session._done = True
            self.hub._listening.pop(session, None)
            self.hub._retire_timers(session)

    def _discard_session(self, session: Session) -> None:
        """initialize failed: the session never existed for the client."""
        channels, session._holding = session._holding, ()
        for channel in channels:
            self.relay._release(channel)
        if session.id is not None and self.hub._sessions.get(session.id) is session:
            del self.hub._sessions[session.id]
        session.ended = SessionEnd.CLOSED
        session._done = True
        self.hub._retire_timers(session)

    def _check_expiry(self, session: Session, now: float) -> None:
        timeout = self.config.session_idle_timeout
        if timeout is None or session.ended is not None or not session._idle():
            return
        due = session._last_active + timeout
        if due <= now:
            self._end_session(session, SessionEnd.EXPIRED)
        else:
            session._expiry_at = due
            self.hub._schedule(due, session, "expiry")

