"""Requests served by a connection of their own: the stateless era and sessionless mode.

Theory of operation
-------------------
A stateless-era (2026-07-28) request gets a session of its own with ``id`` None and a fresh
connection, which lives as long as its stream: the response ends it, and a stream the
client closes is that request's cancellation (fed to the connection as
``notifications/cancelled``). :class:`OneShot` admits such a request first: one message, a
request (a notification is accepted and dropped; no ``initialize``: 404), the core's
envelope rows, then the mirrored headers (``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``,
the version) against the body (-32020 on a mismatch). A sealed ``requestState`` is bound to
the request's principal. In sessionless mode (``sessionless=True``,
:mod:`mcp_sansio._sessionless`) the handshake era keeps no session either: ``initialize`` is
answered with no ``Mcp-Session-Id``, and every other POST is served by a fresh connection
at the revision its ``MCP-Protocol-Version`` header names.
"""

from __future__ import annotations

from typing import Any, cast

from .._admission import ENVELOPE_ONLY, Admitted, Refusal, admit_stateless, batch_refusal
from .._capabilities import SESSION_OPENERS, lookup
from .._codec import MessageKind, Parsed
from .._connection import ServerConnection
from .._errors import ErrorCode
from .._events import RequestId
from .._sessionless import UNVERSIONED_REVISION
from .._stateless import META_PROTOCOL_VERSION, principal_key
from .._versions import Era
from ._headers import Headers, decode_header_value, param_matches, param_value
from ._hub import Hub, ServerChannel, Session, _Kind
from ._sessions import SessionTable
from ._streams import Streams
from ._wire import HTTPRequest

__all__ = ["OneShot"]


class OneShot:
    """Stateless-era and sessionless admission of one server (see the module docstring)."""

    def __init__(self, hub: Hub, streams: Streams, table: SessionTable) -> None:
        self.hub = hub
        self.config = hub.config  # (the server hands a replaced one to every part)
        self.streams = streams
        self.table = table

    def _sessionless_initialize(
        self, channel: ServerChannel, value: Any, request_id: RequestId,
    ) -> None:
        """initialize, answered by a fresh connection that is then forgotten: no session id
        goes out (the handshake era's transports.mdx: a server MAY assign one), so no
        session limit applies either."""
        session = Session(self.hub, None, self.hub.connection_factory(), Era.HANDSHAKE)
        session.connection.serve_sessionless()
        session.auth = channel.auth
        stream = self.streams._open_post_stream(session, channel, [request_id])
        stream.init = True
        session.connection.receive_message(value, now=self.hub._now)
        self.hub._mark_ready(session)

    def _post_sessionless(
        self, channel: ServerChannel, headers: Headers, value: Any,
        items: list[tuple[MessageKind, RequestId | None, str | None, Any]],
        version: str | None,
    ) -> None:
        """Any other handshake-era POST: its requests are served by a fresh connection
        operating at the header's revision; a POST of notifications or responses only is
        accepted (202) and dropped -- what they could refer to (a request in flight, a
        request to the client) lives in no one's memory here, perhaps in another process."""
        if headers.get("mcp-session-id") is not None:
            # Not one of ours (we issue none): a client of an earlier, stateful deployment.
            # 404 makes it start again with initialize (basic/transports.mdx, "Session
            # Management": "MUST start a new session").
            self.hub._error(channel, 404, ErrorCode.INVALID_REQUEST,
                        "Not Found: this server keeps no sessions; initialize again")
            return
        if not any(item[0] is MessageKind.REQUEST for item in items):
            self.hub._respond(channel, 202)
            return
        revision = version if version is not None else UNVERSIONED_REVISION
        if revision not in self.hub._handshake_versions:
            first = items[0]
            self.hub._error(channel, 400, ErrorCode.INVALID_REQUEST,
                        "Bad Request: the MCP-Protocol-Version header is required",
                        first[1] if type(value) is dict else None)
            return
        session = Session(self.hub, None, self.hub.connection_factory(), Era.HANDSHAKE)
        session.connection.serve_sessionless(revision)
        session.auth = channel.auth
        self.table._post_to_session(channel, session, value, items)

    def _post_stateless(
        self, channel: ServerChannel, request: HTTPRequest, value: Any,
        items: list[tuple[MessageKind, RequestId | None, str | None, Any]], version: str,
    ) -> None:
        kind, request_id, method, params = items[0]
        if type(value) is list:
            refusal = cast("Refusal", batch_refusal(None, version))
            self.hub._error(channel, 400, refusal.code, refusal.message)
            return
        if kind is MessageKind.NOTIFICATION:
            # No client notification is defined for 2026-07-28 HTTP (cancellation is closing
            # the stream): accepted and ignored.
            self.hub._respond(channel, 202)
            return
        if kind is not MessageKind.REQUEST:
            self.hub._error(channel, 400, ErrorCode.INVALID_REQUEST,
                        "Invalid Request: clients do not send responses in 2026-07-28")
            return
        assert request_id is not None and method is not None
        if method in SESSION_OPENERS:
            # 2026-07-28 has no sessions, so no request that opens one (the method table's
            # in_session column: initialize): an unknown method, 404 (streamable-http.mdx).
            self.hub._error(channel, 404, ErrorCode.METHOD_NOT_FOUND,
                        f"Method not found: {method} (not in 2026-07-28)", request_id)
            return
        # The core's admission rows up to the version, which the mirrored headers are
        # compared with first (a mismatch is -32020); the connection checks the version.
        admitted = admit_stateless(params, self.hub._stateless_versions, only=ENVELOPE_ONLY)
        if isinstance(admitted, Refusal):
            self.hub._error(channel, 400, admitted.code, admitted.message, request_id)
            return
        mismatch = self._check_mirrored_headers(request.headers, method, params, version)
        if mismatch is not None:
            self.hub._error(channel, 400, ErrorCode.HEADER_MISMATCH, f"Header mismatch: {mismatch}",
                        request_id)
            return
        # The connection is handed the message parsed and its envelope admitted: it does
        # neither again (_connection.py ``_receive_parsed``).
        self._serve_stateless(channel, value, request_id, method, items[0], admitted)

    def _serve_stateless(
        self, channel: ServerChannel, value: Any, request_id: RequestId, method: str,
        parsed: Parsed | None = None, envelope: Admitted | None = None,
    ) -> None:
        session = Session(self.hub, None, self.hub.connection_factory(), Era.STATELESS)
        session.auth = channel.auth
        kind = _Kind.LISTEN if method == "subscriptions/listen" else _Kind.POST
        self.streams._open_post_stream(session, channel, [request_id], kind)
        if kind is _Kind.LISTEN:
            self.hub._listening[session] = None
        self._bind_request_state(session.connection, channel)
        if parsed is None:
            session.connection.receive_message(value, now=self.hub._now, wall_now=channel._wall)
        else:
            session.connection._receive_parsed(value, parsed, envelope, now=self.hub._now,
                                               wall_now=channel._wall)
        self.hub._mark_ready(session)

    @staticmethod
    def _bind_request_state(conn: ServerConnection, channel: ServerChannel) -> None:
        """A sealed ``requestState`` is bound to the request's principal when it was
        authenticated (2026-07-28 ``basic/patterns/mrtr.mdx``, server requirement 5: "the
        authenticated principal, rejecting state presented by a different principal"). The
        caller hands the connection the channel's wall clock as well, which the state is
        sealed and judged on (see :mod:`mcp_sansio._stateless`)."""
        auth = channel.auth
        if auth is not None:
            conn.request_state_principal = principal_key(
                auth.subject, auth.client_id, auth.claims.get("iss"))

    def _check_mirrored_headers(
        self, headers: Headers, method: str, params: dict[str, Any] | None, version: str,
    ) -> str | None:
        """What is wrong with the 2026-07-28 mirrored headers (None: they match the body)."""
        meta = (params or {}).get("_meta")
        body_version = meta.get(META_PROTOCOL_VERSION) if type(meta) is dict else None
        if body_version is not None and body_version != version:
            return (f"MCP-Protocol-Version header {version!r} does not match the body's "
                    f"{body_version!r}")
        fields = headers.decoded()  # (lower-case names: one dict access each)
        header_method = fields.get("mcp-method")
        if header_method is None:
            return "the Mcp-Method header is required"
        if header_method != method:
            return f"Mcp-Method header {header_method!r} does not match the body's {method!r}"
        # The method table's subject column: what Mcp-Name mirrors (SEP-2663 for taskId).
        rule = lookup(method, version)
        field = rule.subject if rule is not None else None
        if field is not None:
            body_name = (params or {}).get(field)
            raw = fields.get("mcp-name")
            if raw is None:
                if isinstance(body_name, str):
                    return "the Mcp-Name header is required"
            else:
                name = decode_header_value(raw)
                if name is None:
                    return "the Mcp-Name header holds invalid characters"
                if name != body_name:
                    return f"Mcp-Name header {name!r} does not match the body's {body_name!r}"
        if method == "tools/call" and self.config.tool_param_headers is not None:
            tool = (params or {}).get("name")
            annotated = (self.config.tool_param_headers(tool)
                         if type(tool) is str or isinstance(tool, str) else None)
            if not annotated:  # (most tools: no parameter is mirrored)
                return None
            arguments = (params or {}).get("arguments")
            for header, path in annotated.items():
                raw = headers.get(f"mcp-param-{header}")
                value = param_value(arguments, path)
                if value is None:
                    if raw is not None:
                        return f"Mcp-Param-{header} is present but the argument is not"
                    continue
                if raw is None:
                    return f"the Mcp-Param-{header} header is required"
                text = decode_header_value(raw)
                if text is None:
                    return f"the Mcp-Param-{header} header holds invalid characters"
                if not param_matches(text, value):
                    return f"Mcp-Param-{header} header does not match the argument"
        return None

