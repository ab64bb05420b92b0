"""The HTTP-level checks every request passes before a part serves it.

Theory of operation
-------------------
:class:`RequestChecks` answers what can be said of a request without any session: its
request-target's form (RFC 9112 section 3.2: absolute-form is routed on its path, CONNECT
is 501, ``OPTIONS *`` 200, a form the method may not use 400), ``Host`` and ``Origin``
against the allow-lists (DNS rebinding), which methods the endpoint has (``Allow``), whether
a body is JSON-RPC, and how an unsupported ``MCP-Protocol-Version`` is refused in the terms
of the eras the server speaks. Each check answers the channel itself (through the hub) and
says whether the request goes on.
"""

from __future__ import annotations

from typing import Any

from .. import _codec
from .._admission import unsupported_version
from .._codec import InvalidMessage, MessageKind
from .._errors import ErrorCode
from .._events import RequestId
from ._headers import AllowList, Headers
from ._hub import Hub, ServerChannel
from ._wire import HTTPRequest, target_allowed

__all__ = ["RequestChecks"]


class RequestChecks:
    """The request checks of one server (see the module docstring)."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.config = hub.config  # (the server hands a replaced one to every part)
        config = hub.config
        self._hosts = AllowList(config.allowed_hosts) if config.allowed_hosts is not None else None
        self._origins = (AllowList(config.allowed_origins)
                         if config.allowed_origins is not None else None)

    def _other_target(self, channel: ServerChannel, request: HTTPRequest) -> bool:
        """A request-target that is not in origin-form (RFC 9112 section 3.2): True when the
        request goes on to be routed (absolute-form, on its path); else it was answered."""
        method = request.method
        form = request.form
        if not target_allowed(method, form):
            self.hub._respond(channel, 400, [("content-type", "text/plain; charset=utf-8")],
                          b"Bad Request: this request-target form is not allowed here"
                          b" (RFC 9112 section 3.2)")
            return False
        if form == "absolute":
            return True
        if form == "authority":
            # CONNECT asks for a tunnel (RFC 9110 section 9.3.6); an MCP endpoint tunnels to
            # nowhere: "not capable of supporting it for any resource" (section 15.6.2).
            self.hub._respond(channel, 501, [("content-type", "text/plain; charset=utf-8")],
                          b"Not Implemented: CONNECT")
            return False
        # OPTIONS * asks about the server in general (RFC 9110 section 9.3.7): nothing to
        # say beyond a success, with "Content-Length" 0 as that section requires.
        self.hub._respond(channel, 200)
        return False

    def _sessions_allowed(self, enabled: bool, request: HTTPRequest) -> bool:
        """GET and DELETE exist only with handshake-era sessions (2026-07-28 answers 405)."""
        if not enabled or not self.hub._handshake_versions or self.config.sessionless:
            return False
        version = request.headers.get("mcp-protocol-version")
        return version is None or version not in self.hub._stateless_versions

    def _allow(self) -> str:
        methods = ["POST"]
        if self.hub._handshake_versions and not self.config.sessionless:
            if self.config.enable_get:
                methods.append("GET")
                methods.append("HEAD")  # wherever GET is (RFC 9110 section 9.3.2)
            if self.config.enable_delete:
                methods.append("DELETE")
        return ", ".join(methods)

    def _check_host_origin(self, headers: Headers, authority: str | None = None) -> str | None:
        """Why a request fails the DNS-rebinding checks (None: it passes). ``authority``: an
        absolute-form target's, which replaces ``Host`` (RFC 9112 section 3.2.2)."""
        fields = headers.decoded()  # (lower-case names: one dict access each)
        if self._hosts is not None:
            host = authority if authority is not None else fields.get("host")
            if host is None or not self._hosts.allows(host):
                return f"Forbidden: Host {host!r} is not allowed"
        if self._origins is not None:
            origin = fields.get("origin")
            if origin is not None and not self._origins.allows(origin):
                return f"Forbidden: Origin {origin!r} is not allowed"
        return None

    def _parse_body(
        self, channel: ServerChannel, body: bytes,
    ) -> tuple[Any, list[tuple[MessageKind, RequestId | None, str | None, Any]]] | None:
        """Decode and classify a POST body; answer 400 and return None when it is not JSON or
        not JSON-RPC."""
        try:
            value = _codec.decode(body, self.hub._max_depth)
        except InvalidMessage as exc:
            self.hub._error(channel, 400, exc.code, exc.message)
            return None
        raw = value if type(value) is list else [value]
        if not raw:
            self.hub._error(channel, 400, ErrorCode.INVALID_REQUEST, "Invalid Request: empty batch")
            return None
        items = []
        for item in raw:
            try:
                items.append(_codec.parse(item))
            except InvalidMessage as exc:
                self.hub._error(channel, 400, exc.code, exc.message,
                            exc.request_id if type(value) is dict else None)
                return None
        return value, items

    def _unsupported_version(
        self, channel: ServerChannel, version: str, request_id: RequestId | None,
    ) -> None:
        supported = [*self.hub._handshake_versions, *self.hub._stateless_versions]
        if self.hub._stateless_versions:
            refusal = unsupported_version(version, supported)
            self.hub._error(channel, 400, refusal.code, refusal.message, request_id, refusal.data)
        else:
            # A handshake-only server answers in the old era's terms, so that a dual-era
            # client probing it falls back to initialize (versioning.mdx).
            self.hub._error(channel, 400, ErrorCode.INVALID_REQUEST,
                        f"Bad Request: unsupported MCP-Protocol-Version {version!r} "
                        f"(supported: {', '.join(supported)})", request_id)

