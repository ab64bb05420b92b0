"""Streams and SSE: where each message a session's connection sends goes, and how.

Theory of operation
-------------------
Whatever a session's connection queues is *routed* (:meth:`Streams._route`): each outgoing
message carries the id of the client request it relates to
(``Connection.encoded_messages_to_send``), which names the stream it goes on -- that
request's POST stream, else the session's standalone GET stream (a legacy HTTP+SSE session
has only that one). Every message goes on exactly one stream. A stream becomes a JSON
response (when the final response is its first message; a stateless-era error then gets
its own HTTP status) or an SSE stream, written event by event; a 2026-07-28 stream's head
waits for its first message or one keep-alive interval (:meth:`Streams._defer_sse`).
Resumable streams (handshake era) give their events ids through the event store and are
replayed on ``Last-Event-ID`` (:meth:`Streams._resume`). A stream outlives the response
carrying it when that breaks (:meth:`Streams._detach`): the handshake era waits for
resumption; in the stateless era and sessionless mode the break cancels the request; a
legacy session ends. Open SSE streams get keep-alive comments.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from .._errors import ErrorCode
from .._events import RequestId
from .._versions import FEATURES, Era
from ._config import ResponseMode
from ._hub import _JSON, Hub, ServerChannel, Session, SessionEnd, _Kind, _Stream
from ._shared import STREAM_END
from ._sse import encode_comment, encode_event
from ._stranded import is_opening, opening_record

__all__ = ["SSE_HEADERS", "Streams"]

SSE_HEADERS = (
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
)
_SSE_HEADERS = SSE_HEADERS
#: JSON-RPC errors answered as JSON before any stream started, in the stateless era, get an
#: HTTP status of their own (``2026-07-28/basic/transports/streamable-http.mdx``): 404 for an
#: unknown method, 400 for a request that is malformed or cannot be served as sent.
_STATELESS_STATUS = {
    ErrorCode.METHOD_NOT_FOUND: 404,
    ErrorCode.PARSE_ERROR: 400,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.INVALID_PARAMS: 400,
    ErrorCode.HEADER_MISMATCH: 400,
    ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    ErrorCode.UNSUPPORTED_PROTOCOL_VERSION: 400,
}


class Streams:
    """The streams of one server's sessions (see the module docstring)."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.config = hub.config  # (the server hands a replaced one to every part)
        # The hub's queues, under names of their own (read on every request).
        self._writable = hub._writable
        self._dirty = hub._dirty
        self._pending_channels = hub._pending_channels
        self._sse: dict[_Stream, None] = {}  # SSE streams open on a channel (keep-alives)
        self._keepalive_at: float | None = None

    def _keepalive(self, now: float) -> None:
        self._keepalive_at = None
        comment = encode_comment()
        for stream in list(self._sse):
            channel = stream.channel
            if channel is None or not stream.started or stream.finished:
                self._sse.pop(stream, None)
                continue
            channel.wire.send_body(comment)
            self._writable[channel] = None
        self._arm_keepalive()

    def _arm_keepalive(self) -> None:
        interval = self.config.keepalive_interval
        if interval is None or self._keepalive_at is not None or not self._sse:
            return
        self._keepalive_at = self.hub._now + interval
        self.hub._schedule(self._keepalive_at, None, "keepalive")

    def _open_post_stream(
        self, session: Session, channel: ServerChannel, ids: Iterable[RequestId],
        kind: _Kind = _Kind.POST,
    ) -> _Stream:
        stream = session._new_stream(kind)
        stream.pending.update(dict.fromkeys(ids))
        for request_id in stream.pending:
            session._routes[request_id] = stream
        stream.channel = channel
        stream.resumable = (
            self.hub.event_store is not None and session.era is Era.HANDSHAKE
            and not session.legacy and not session.connection.sessionless
        )
        channel.stream = stream
        session._unprocessed.append(stream)
        return stream

    def _flush_dirty(self) -> None:
        dirty = self._dirty
        while dirty:
            for session in dirty:  # the oldest (a loop costs no iter()/next() calls)
                del dirty[session]
                break  # before the loop would notice the dict changed
            self._route(session)

    def _route(self, session: Session) -> None:
        for message, related, data in session.connection.encoded_messages_to_send():
            stream = self._stream_for(session, message, related)
            if stream is not None:
                self._deliver(stream, message, data)
        if self.config.response_mode is ResponseMode.SSE and session._streams:
            for stream in list(session._streams.values()):
                if (stream.processed and not stream.started and not stream.finished
                        and stream.channel is not None and stream.kind is _Kind.POST):
                    if session.era is Era.STATELESS:
                        self._defer_sse(stream)
                    else:
                        self._start_sse(stream)
        if session.era is Era.HANDSHAKE:
            self.hub._update_timer(session)
            if self.config.shared and not session.legacy:
                self.hub.owner._save(session)

    def _stream_for(self, session: Session, message: Any, related: RequestId | None) -> (
        _Stream | None
    ):
        if session.legacy:  # HTTP+SSE: one stream carries everything
            return session._standalone
        routes = session._routes
        if type(message) is list:  # 2025-03-26 batch replies
            for item in message:
                found = _lookup(routes, item.get("id"))
                if found is not None:
                    return found
            return None
        if "method" not in message:  # a response: only ever on its request's stream
            key = message.get("id")
            return routes.get(key) if type(key) is str or type(key) is int else None
        found = _lookup(routes, related) if related is not None else None
        return found if found is not None else session._standalone

    def _deliver(self, stream: _Stream, message: Any, data: bytes) -> None:
        session = stream.session
        final = False
        if stream.kind is not _Kind.STANDALONE:
            answered = _response_ids(message)
            if answered:
                for request_id in answered:
                    stream.pending.pop(request_id, None)
                    if session._routes.get(request_id) is stream:
                        del session._routes[request_id]
                if not session._routes:  # gives back its table (an idle session keeps none)
                    session._routes.clear()
                final = not stream.pending
        if stream.finished:
            return
        if stream.kind is _Kind.STANDALONE:
            self._deliver_standalone(stream, data)
            return
        channel = stream.channel
        if stream.started:
            self._write(stream, data)
            if final:
                self._finish(stream)
            return
        if channel is None:
            # The client left before anything was written: there is nothing to resume. The
            # answer is lost; what else relates to the request goes where the client can
            # still get it (handshake era: the standalone stream).
            if final:
                self._finish(stream)
            elif session.era is Era.HANDSHAKE and session._standalone is not None:
                self._deliver_standalone(session._standalone, data)
            return
        if final and not stream.sent:
            status = 200
            if session.era is Era.STATELESS and "error" in message:
                status = _STATELESS_STATUS.get(message["error"].get("code"), 200)
            headers = [_JSON]
            init_ok = stream.init and "result" in message
            if init_ok and session.id is not None:
                headers.append(("mcp-session-id", session.id))
            stream.sent = True
            stream.channel = None
            channel.stream = None
            if init_ok and channel._held:
                # (shared) written once the session's record is stored: _relay.stored
                channel._deferred = (status, headers, data, message.get("id"))
            else:
                self.hub._respond(channel, status, headers, data)
            self._pending_channels[channel] = None
            self._finish(stream)
            if stream.init and not init_ok:
                self.hub.owner._discard_session(session)
            return
        if self.config.response_mode is ResponseMode.JSON and stream.kind is _Kind.POST:
            if session.era is Era.HANDSHAKE and session._standalone is not None:
                self._deliver_standalone(session._standalone, data)
            return
        self._start_sse(stream)
        self._write(stream, data)
        if final:
            self._finish(stream)

    def _deliver_standalone(self, stream: _Stream, data: bytes) -> None:
        if stream.channel is not None and stream.started:
            self._write(stream, data)
            return
        session = stream.session
        backlog = session._backlog
        if backlog is None:
            backlog = session._backlog = deque()
        backlog.append(data)
        while len(backlog) > self.config.max_pending_messages:
            backlog.popleft()

    def _drain_backlog(self, session: Session) -> None:
        standalone = session._standalone
        assert standalone is not None
        backlog = session._backlog
        if backlog is None:
            return
        while backlog and standalone.channel is not None:
            self._write(standalone, backlog.popleft())
        if not backlog:
            session._backlog = None

    def _start_sse(self, stream: _Stream) -> None:
        channel = stream.channel
        assert channel is not None
        session = stream.session
        headers = list(_SSE_HEADERS)
        if stream.init and session.id is not None:
            headers.append(("mcp-session-id", session.id))
        channel.wire.start_response(200, headers)
        stream.started = True
        stream.sent = True
        if stream.resumable and self.hub.event_store is not None:
            version = session.connection.protocol_version
            if version is not None and FEATURES[version].sse_priming:
                # (shared: the record of the stream's requests, for a worker that finishes
                # it if this one dies: _stranded.py; the client gets empty data all the same)
                event_id = self.hub.event_store.store(
                    stream.id, opening_record(stream.pending) if self.hub.config.shared
                    else b"")
                channel.wire.send_body(
                    encode_event(b"", id=event_id, retry=self.config.retry_ms))
            elif self.config.retry_ms is not None:
                channel.wire.send_body(encode_event(None, retry=self.config.retry_ms))
        self._sse[stream] = None
        self._arm_keepalive()
        self._writable[channel] = None

    def _defer_sse(self, stream: _Stream) -> None:
        """A 2026-07-28 request processed with no answer yet (its handler runs on): its
        SSE head waits for the first message. If that is the final answer -- a refusal
        such as -32021, whose HTTP status MUST be 400 (2026-07-28 ``schema.json``,
        ``MissingRequiredClientCapabilityError``), from a handler that answers from a
        thread pool or after an await -- it goes out as JSON with its status, whatever
        kind of handler made it; once an SSE stream has started, the status is 200 for
        good. (Handshake-era streams start at once: their priming event gives the client
        an id to resume from, which 2026-07-28 does not have.) A request that stays silent
        gets its head after one keep-alive interval anyway, so that proxies and clients
        that time out an idle response see bytes as they would on any SSE stream."""
        if stream.open_at is not None or self.config.keepalive_interval is None:
            return
        stream.open_at = self.hub._now + self.config.keepalive_interval
        self.hub._schedule(stream.open_at, stream.session, "open")

    def _open_deferred(self, session: Session, now: float) -> None:
        for stream in list(session._streams.values()):
            if (stream.open_at is not None and stream.open_at <= now and not stream.started
                    and not stream.finished and stream.channel is not None):
                self._start_sse(stream)

    def _attach(self, stream: _Stream, channel: ServerChannel) -> None:
        stream.channel = channel
        channel.stream = stream
        self._start_sse(stream)

    def _write(self, stream: _Stream, data: bytes) -> None:
        stream.sent = True
        event_id = None
        if stream.resumable and self.hub.event_store is not None:
            event_id = self.hub.event_store.store(stream.id, data)
        channel = stream.channel
        if channel is not None:
            channel.wire.send_body(encode_event(data, id=event_id))
            self._writable[channel] = None

    def _close_response(self, stream: _Stream) -> None:
        """End the HTTP response carrying ``stream`` (the stream itself may go on)."""
        channel = stream.channel
        if channel is None:
            return
        stream.channel = None
        channel.stream = None
        self._sse.pop(stream, None)
        if stream.started:
            channel.wire.end_response()
        else:
            # Nothing was said for it: an empty event stream ends the response.
            channel.wire.start_response(200, _SSE_HEADERS)
            channel.wire.end_response()
        self._writable[channel] = None
        self._pending_channels[channel] = None

    def _finish(self, stream: _Stream) -> None:
        if stream.finished:
            return
        if (self.config.shared and stream.resumable and stream.sent and stream.relayed is None
                and self.hub.event_store is not None):
            # Its end, for a worker relaying it (a client resumed it there): the marker
            # goes to the log and the bus like any event (_shared.STREAM_END).
            self.hub.event_store.store(stream.id, STREAM_END)
        stream.finished = True
        session = stream.session
        session._streams.pop(stream.id, None)
        if not session._streams:  # gives back its table (an idle session keeps none)
            session._streams.clear()
        if stream.kind is _Kind.LISTEN:
            self.hub._listening.pop(session, None)
        if stream.pending:
            for request_id in stream.pending:
                if session._routes.get(request_id) is stream:
                    del session._routes[request_id]
            if not session._routes:
                session._routes.clear()
            stream.pending.clear()
        if stream.channel is not None:
            self._close_response(stream)
        self.hub._touch(session)

    def _detach(self, stream: _Stream) -> None:
        """The HTTP response carrying ``stream`` is gone (the client closed or the socket
        broke). Handshake era: the stream waits for resumption (a disconnect is not a
        cancellation). Stateless era: closing the stream cancels its request. Legacy: the
        session ends."""
        channel = stream.channel
        if channel is None:
            return
        stream.channel = None
        channel.stream = None
        self._sse.pop(stream, None)
        session = stream.session
        if stream.relayed is not None:  # the client left a relay: nothing is left to send
            self.hub.owner._end_relay(stream)
            return
        if session.legacy:
            if session.ended is None:
                self.hub.owner._end_session(session, SessionEnd.DISCONNECTED)
            return
        if (session.era is Era.STATELESS or session.connection.sessionless) and (
                not stream.finished):
            # (Sessionless mode too: with no resumption, no one could ever read the answer.)
            for request_id in list(stream.pending):
                session.connection.receive_message(
                    {"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": request_id,
                                "reason": "the client closed the stream"}},
                    now=self.hub._now,
                )
            self.hub._mark_ready(session)
            return
        self.hub._touch(session)

    def _stream_conflict(self, channel: ServerChannel) -> None:
        self.hub._error(channel, 409, ErrorCode.INVALID_REQUEST,
                    "Conflict: this session's standalone stream is already open")

    def _unknown_event_id(self, channel: ServerChannel) -> None:
        self.hub._error(channel, 400, ErrorCode.INVALID_REQUEST,
                    "Bad Request: unknown Last-Event-ID (events may have expired)")

    def _replay(self, session: Session, last_event_id: str,
                channel: ServerChannel | None = None,
                ) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The events after ``last_event_id`` if it names a stream of ``session``: an id of
        another session's stream is unknown here, whoever sends it -- a session replays its
        own streams only (stream ids start with the session's prefix)."""
        assert self.hub.event_store is not None
        found = (channel._answers.get(("replay", last_event_id))
                 if self.config.shared and channel is not None
                 else self.hub.event_store.replay(last_event_id))
        if found is None or not found[0].startswith(f"{session._prefix}-"):
            return None
        return found

    def _resume(self, channel: ServerChannel, session: Session, last_event_id: str) -> None:
        found = self._replay(session, last_event_id, channel)
        if found is None:
            self._unknown_event_id(channel)
            return
        stream_id, events = found
        standalone = session._standalone
        assert standalone is not None
        stream = standalone if stream_id == standalone.id else session._streams.get(stream_id)
        if self.config.shared and stream is None:
            self.hub.owner._resume_relay(channel, session, last_event_id, stream_id, events)
            return
        if stream is not None and stream.channel is not None:
            # The client resumed while we still write to the old connection: hand over.
            old = stream.channel
            stream.channel = None
            old.stream = None
            old.wire.abort()
            self._writable[old] = None
        channel.wire.start_response(200, _SSE_HEADERS)
        for event_id, data in events:
            if data and data != STREAM_END and not is_opening(data):
                channel.wire.send_body(encode_event(data, id=event_id))
        self._writable[channel] = None
        if stream is None or stream.finished:
            channel.wire.end_response()
            return
        stream.channel = channel
        channel.stream = stream
        stream.started = True
        self._sse[stream] = None
        self._arm_keepalive()
        if stream is standalone:
            self._drain_backlog(session)
        self.hub._touch(session)



def _lookup(routes: dict[RequestId, _Stream], key: Any) -> _Stream | None:
    if type(key) is str or type(key) is int:
        return routes.get(key)
    return None


def _response_ids(message: Any) -> list[RequestId]:
    """The request ids a message answers (none for requests and notifications)."""
    if type(message) is list:
        return [item["id"] for item in message
                if type(item) is dict and "method" not in item
                and (type(item.get("id")) is int or type(item.get("id")) is str)]
    if "method" in message:
        return []
    request_id = message.get("id")
    return [request_id] if type(request_id) is int or type(request_id) is str else []

