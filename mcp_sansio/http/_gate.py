"""Authorization at the HTTP endpoint: the token of each request, and whose session it is.

Theory of operation
-------------------
With ``auth`` (a :class:`~mcp_sansio.auth.ProtectedResource`; MCP 2025-06-18 and later,
basic/authorization.mdx), :class:`AuthGate` serves the protected-resource metadata document
(RFC 9728 section 3) and decides every request on the endpoint with the configuration's
synchronous verifier before anything else is looked at: refused 401 with the
``WWW-Authenticate`` challenge, 403 ``insufficient_scope`` (also for a ``tools/call`` whose
tool needs scopes the token lacks: ``tool_scopes``), or 400 for a token in the query string.
The verifier judges at the channel's ``wall_time``. A verifier that must ask someone first
raises :class:`~mcp_sansio.auth._deferred.VerificationPending`: the request is parked
(:mod:`mcp_sansio.http._parking`) and handled again from the start with the answer. A
session is bound to the principal that opened it; a request for it on anyone else's behalf
is answered 404, as for an unknown session (security best practices "Session Hijacking").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _codec
from .._codec import MessageKind
from .._errors import ErrorCode
from .._events import RequestId
from ._checks import RequestChecks
from ._hub import _JSON, Hub, ServerChannel, Session
from ._parking import Parking
from ._wire import HTTPRequest

if TYPE_CHECKING:
    from ..auth._deferred import VerificationPending

__all__ = ["AuthGate"]

#: The reason phrase opening the message of an authorization refusal's JSON-RPC error.
_AUTH_REASONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
                 503: "Service Unavailable"}


class AuthGate:
    """The authorization of one server's requests (see the module docstring)."""

    def __init__(self, hub: Hub, checks: RequestChecks, parking: Parking) -> None:
        self.hub = hub
        self.config = hub.config  # (the server hands a replaced one to every part)
        self.checks = checks
        self.parking = parking
        auth = hub.config.auth
        self._metadata_body = _codec.encode(auth.document()) if auth is not None else b""
        self._metadata_paths = auth.metadata_paths if auth is not None else ()

    def _metadata(self, channel: ServerChannel, request: HTTPRequest) -> None:
        """The protected-resource metadata document (RFC 9728 section 3.2): public, so
        only the ``Host`` check applies, and any origin may read it (browser-based clients
        discover the authorization server too)."""
        if self.checks._hosts is not None:
            host = request.authority or request.headers.get("host")
            if host is None or not self.checks._hosts.allows(host):
                self.hub._error(channel, 403, ErrorCode.INVALID_REQUEST,
                            f"Forbidden: Host {host!r} is not allowed")
                return
        if request.method not in ("GET", "HEAD"):
            self.hub._error(channel, 405, ErrorCode.INVALID_REQUEST, "Method Not Allowed",
                        headers=[("allow", "GET, HEAD")])
            return
        self.hub._respond(channel, 200, [_JSON, ("access-control-allow-origin", "*")],
                      self._metadata_body)

    def _authorized(self, channel: ServerChannel, request: HTTPRequest) -> bool:
        """Decide the request's token (servers with ``auth``): True to go on, with
        ``channel.auth`` set; False when it was refused or parked until its verifier's
        question is answered (then :meth:`_verified` handles it again)."""
        from ..auth._deferred import VerificationPending
        from ..auth._verdict import Refusal as AuthRefusal

        auth = self.config.auth
        assert auth is not None
        decision = channel._answers.pop(("token", ""), None)
        if decision is None:
            try:
                decision = auth.authorize(
                    request.headers.raw, request.target,
                    channel._wall if channel._wall is not None else self.hub._now,
                    method=request.method)
            except VerificationPending as pending:
                self._park_verification(channel, request, pending)
                return False
        if isinstance(decision, AuthRefusal):
            self.hub._error(channel, decision.status, ErrorCode.INVALID_REQUEST,
                        f"{_AUTH_REASONS[decision.status]}: {decision.reason}",
                        headers=decision.headers)
            return False
        channel.auth = decision
        return True

    def _park_verification(self, channel: ServerChannel, request: HTTPRequest,
                           pending: VerificationPending) -> None:
        timeout = TimeoutError(f"no answer within {self.config.decision_timeout:g} s")
        self.parking._park(channel, pending,
                   lambda answer: self._verified(channel, request, pending, answer),
                   lambda: self._verified(channel, request, pending, timeout))

    def _verified(self, channel: ServerChannel, request: HTTPRequest,
                  pending: VerificationPending, answer: Any) -> None:
        """The answer to a parked request's token question came (or the timeout did): its
        decision, then the request handled from the start (the checks before the token's
        are cheap and unchanged)."""
        auth = self.config.auth
        assert auth is not None
        wall = channel._wall if channel._wall is not None else self.hub._now
        if not isinstance(answer, BaseException) and not _is_response(answer):
            answer = TypeError(f"not an answer to a token question: {type(answer).__name__}")
        channel._answers[("token", "")] = auth.conclude(pending, answer, wall)
        try:
            self.hub.owner._handle(channel, request)
        finally:
            # used by that request, or by none: never by the next
            channel._answers.pop(("token", ""), None)

    def _tool_scope_refused(
        self, channel: ServerChannel,
        items: list[tuple[MessageKind, RequestId | None, str | None, Any]],
    ) -> bool:
        """A ``tools/call`` whose tool needs scopes the token lacks: answered 403 (the whole
        POST, a batch included: nothing of it is served). True when refused."""
        auth, info, lookup = self.config.auth, channel.auth, self.config.tool_scopes
        if auth is None or info is None or lookup is None:
            return False
        for kind, request_id, method, params in items:
            if kind is not MessageKind.REQUEST or method != "tools/call":
                continue
            tool = params.get("name") if isinstance(params, dict) else None
            needed = lookup(tool) if isinstance(tool, str) else None
            refusal = auth.scope_refusal(info, needed) if needed else None
            if refusal is not None:
                self.hub._error(channel, refusal.status, ErrorCode.INVALID_REQUEST,
                            f"{_AUTH_REASONS[refusal.status]}: {refusal.reason}",
                            request_id if len(items) == 1 else None,
                            headers=refusal.headers)
                return True
        return False

    def _bound_elsewhere(self, channel: ServerChannel, session: Session) -> bool:
        """A session opened by another principal: answered 404 like an unknown one (it is
        not this principal's to know about)."""
        auth = self.config.auth
        if auth is None or auth.same_principal(session.auth, channel.auth):
            if auth is not None:
                session.auth = channel.auth
            return False
        self.hub._error(channel, 404, ErrorCode.INVALID_REQUEST,
                    "Not Found: unknown or terminated session")
        return True



def _is_response(value: Any) -> bool:
    from ..auth._http import HTTPResponse

    return isinstance(value, HTTPResponse)
