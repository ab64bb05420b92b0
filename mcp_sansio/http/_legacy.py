"""Legacy HTTP+SSE (2024-11-05): one SSE stream per session, POSTs answered 202.

Theory of operation
-------------------
When ``legacy_sse_path`` is set, ``GET`` on it opens a session (in the session table, with
its limit) whose one SSE stream starts with an ``endpoint`` event naming the URL to POST
messages to (``legacy_post_path?session_id=...``); every message of the session goes on
that stream (:meth:`~mcp_sansio.http._streams.Streams._stream_for`) and every POST is
answered ``202``. The client closing the stream ends the session
(:attr:`~mcp_sansio.http.SessionEnd.DISCONNECTED`).
"""

from __future__ import annotations

from urllib.parse import parse_qs, quote

from .._errors import ErrorCode
from .._versions import Era
from ._checks import RequestChecks
from ._gate import AuthGate
from ._headers import accepts, media_type
from ._hub import Hub, ServerChannel
from ._sessions import SessionTable
from ._sse import encode_event
from ._streams import SSE_HEADERS as _SSE_HEADERS
from ._streams import Streams
from ._wire import HTTPRequest

__all__ = ["LegacySSE"]


class LegacySSE:
    """The legacy HTTP+SSE endpoints of one server (see the module docstring)."""

    def __init__(self, hub: Hub, checks: RequestChecks, gate: AuthGate, streams: Streams,
                 table: SessionTable) -> None:
        self.hub = hub
        self.config = hub.config  # (the server hands a replaced one to every part)
        self.checks = checks
        self.gate = gate
        self.streams = streams
        self.table = table

    def _legacy_get(self, channel: ServerChannel, request: HTTPRequest) -> None:
        if not accepts(request.headers.get("accept"), "text/event-stream"):
            self.hub._error(channel, 406, ErrorCode.INVALID_REQUEST,
                        "Not Acceptable: Accept must list text/event-stream")
            return
        if len(self.hub._sessions) >= self.config.max_sessions:
            self.hub._error(channel, 503, ErrorCode.TOO_MANY_REQUESTS,
                        "Service Unavailable: too many sessions", headers=[("retry-after", "1")])
            return
        session = self.table._open_session(Era.HANDSHAKE, legacy=True)
        session.auth = channel.auth
        standalone = session._standalone
        assert standalone is not None and session.id is not None
        channel.wire.start_response(200, _SSE_HEADERS)
        endpoint = f"{self.config.legacy_post_path}?session_id={quote(session.id, safe='')}"
        channel.wire.send_body(encode_event(endpoint.encode("ascii"), event="endpoint"))
        standalone.channel = channel
        standalone.started = True
        channel.stream = standalone
        self.streams._sse[standalone] = None
        self.streams._arm_keepalive()
        self.hub._writable[channel] = None

    def _legacy_post(self, channel: ServerChannel, request: HTTPRequest) -> None:
        ids = parse_qs(request.query).get("session_id")
        if not ids:
            self.hub._error(channel, 400, ErrorCode.INVALID_REQUEST,
                        "Bad Request: the session_id query parameter is required")
            return
        session = self.hub._sessions.get(ids[0])
        if session is None or not session.legacy or session.ended is not None:
            self.hub._error(channel, 404, ErrorCode.INVALID_REQUEST, "Not Found: unknown session")
            return
        if self.gate._bound_elsewhere(channel, session):
            return
        if media_type(request.headers.get("content-type")) != "application/json":
            self.hub._error(channel, 415, ErrorCode.INVALID_REQUEST,
                        "Unsupported Media Type: the body must be application/json")
            return
        parsed = self.checks._parse_body(channel, request.body)
        if parsed is None:
            return
        self.hub._respond(channel, 202)
        session.connection.receive_message(parsed[0], now=self.hub._now)
        self.hub._mark_ready(session)

