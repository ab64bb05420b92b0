"""The HTTP server's options, in one frozen object: each with its default and why.

Theory of operation
-------------------
:class:`ServerConfig` holds every option of :class:`~mcp_sansio.http.HTTPServer` that is a
value (the connection factory and the session-id source are the server's arguments). It is
validated once, when it is built, so that a server never starts with options that
contradict each other; the parts of the server read it and never change it. The runtimes'
``start_http``/``run_http``, the ASGI app and ``serve-example`` keep their keyword
parameters and build one of these; ``HTTPServer(factory, path=..., ...)`` builds one from
its keywords too. Each default is a named constant here, documented where it is defined.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from ._headers import LOCAL_HOSTS, LOCAL_ORIGINS
from ._park import DEFAULT_DECISION_TIMEOUT
from ._store import EventStore
from ._wire import DEFAULT_MAX_HEADER_COUNT, DEFAULT_MAX_HEADER_SIZE, DEFAULT_MAX_TARGET_LENGTH
from ._wires import WIRES, default_wire

if TYPE_CHECKING:
    from ..auth._resource import ProtectedResource

__all__ = [
    "DEFAULT_KEEPALIVE_INTERVAL",
    "DEFAULT_MAX_BODY_SIZE",
    "DEFAULT_MAX_PENDING_MESSAGES",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_RETRY_MS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "MAX_SESSION_ID_PREFIX",
    "ResponseMode",
    "ServerConfig",
]

#: Largest request body accepted: 4 MiB. Clients send requests, notifications and answers to
#: server requests; 4 MiB holds tool arguments and a sampling result with an image, and is
#: what the official SDKs accept. Larger bodies are refused with 413 before they are read.
DEFAULT_MAX_BODY_SIZE = 4 * 1024 * 1024
#: Live sessions at once: 10,000. An idle session costs a few kilobytes (its connection and
#: stream bookkeeping), so the cap bounds memory at tens of megabytes while staying far above
#: what one server process serves; initialize beyond it is answered 503.
DEFAULT_MAX_SESSIONS = 10_000
#: A session with no request and no open stream for this long ends (one hour). Clients are
#: required to re-initialize when their session is gone (404), so expiry is always safe.
DEFAULT_SESSION_IDLE_TIMEOUT: float | None = 3600.0
#: Longest routing tag in front of a session id: 64 characters. A tag names a worker or a
#: host (a few characters); the bound keeps ids short enough for any header limit, since
#: the unguessable part (43 characters from ``secrets.token_urlsafe(32)``) follows it.
MAX_SESSION_ID_PREFIX = 64
#: The SSE ``retry`` field (milliseconds) sent at the start of resumable streams: how long a
#: client waits before resuming a broken stream. One second: quick recovery, no hammering.
DEFAULT_RETRY_MS: int | None = 1000
#: Seconds between keep-alive comments on open SSE streams: 20 s, below the 30-60 s idle
#: timeouts of common proxies and load balancers.
DEFAULT_KEEPALIVE_INTERVAL: float | None = 20.0
#: Messages held for a session's standalone stream while no GET is open: 1,000. Beyond it the
#: oldest are dropped.
DEFAULT_MAX_PENDING_MESSAGES = 1000


class ResponseMode(enum.Enum):
    """How the server answers a request POST."""

    #: An SSE stream, unless the response is ready as soon as the request is processed
    #: (then one JSON object). Messages about the request go on its stream. A 2026-07-28
    #: stream opens at its first message (a final answer then is JSON, with its status) or
    #: after one keep-alive interval of silence.
    SSE = "sse"
    #: One JSON object. Messages about the request that come before the response go on the
    #: standalone GET stream (handshake era) or are dropped (stateless era); a
    #: ``subscriptions/listen`` stream is always SSE.
    JSON = "json"
    #: JSON if the response is the first message for the request, else an SSE stream (so
    #: progress, logs and server requests still travel with their request).
    AUTO = "auto"


def _allow_list(value: Iterable[str] | None) -> tuple[str, ...] | None:
    return tuple(value) if value is not None else None


def _check_stream_tag(_: object, __: object, tag: str) -> None:
    if tag and not tag.isalnum():
        raise ValueError("stream_tag must be letters and digits")


def _check_prefix(_: object, __: object, prefix: str) -> None:
    if (len(prefix) > MAX_SESSION_ID_PREFIX
            or any(not 0x21 <= ord(c) <= 0x7E for c in prefix)):
        raise ValueError("session_id_prefix must be visible ASCII (0x21-0x7E), at most "
                         f"{MAX_SESSION_ID_PREFIX} characters")


def _check_wire(_: object, __: object, wire: str) -> None:
    if wire not in WIRES:
        raise ValueError(f"unknown wire {wire!r}: one of {', '.join(sorted(WIRES))}")


@attrs.frozen(eq=False)
class ServerConfig:
    """The options of an :class:`~mcp_sansio.http.HTTPServer` (see :doc:`/http`).

    Each default is chosen as said here, or at the constant it names.

    :param path: the MCP endpoint's path. Default ``/mcp``: what the specification's
        examples and the official SDKs use.
    :param response_mode: how requests are answered (:class:`ResponseMode`). Default SSE:
        progress, logs and requests to the client travel with their request.
    :param enable_get: offer the standalone GET stream (else GET is answered 405). Default
        on: server-initiated messages need it in the handshake era.
    :param enable_delete: let clients end sessions with DELETE (else 405). Default on:
        a client that ends its session frees it at once instead of at expiry.
    :param allowed_hosts: ``Host`` values accepted (``"name"``, ``"name:port"``, ``"name:*"``
        for any port, ``"*"``); None accepts any. Default: localhost only, the safe choice
        against DNS rebinding for a local server (transports.mdx, "Security Warning").
    :param allowed_origins: ``Origin`` values accepted when the header is present (same
        forms, e.g. ``"https://app.example:*"``); None accepts any. Default: localhost
        only, for the same reason.
    :param max_body_size: largest request body (413 beyond): :data:`DEFAULT_MAX_BODY_SIZE`.
    :param max_header_size: largest request head (431 beyond): the wire's
        ``DEFAULT_MAX_HEADER_SIZE``.
    :param max_header_count: most header fields in a request (431 beyond): the wire's
        ``DEFAULT_MAX_HEADER_COUNT``.
    :param max_target_length: longest request-target (414 beyond): the wire's
        ``DEFAULT_MAX_TARGET_LENGTH``.
    :param max_sessions: live sessions at once (503 beyond): :data:`DEFAULT_MAX_SESSIONS`.
    :param session_idle_timeout: seconds without request or open stream before a session
        ends (None: never): :data:`DEFAULT_SESSION_IDLE_TIMEOUT`.
    :param resumable: give SSE events ids, prime streams and replay them on
        ``Last-Event-ID`` (handshake era). False: no ids, no event store. Default on: a
        client whose connection broke gets what it missed.
    :param event_store: where SSE events wait for resumption (default: a bounded
        :class:`~mcp_sansio.http.InMemoryEventStore`).
    :param retry_ms: the SSE ``retry`` field for resumable streams (None: not sent):
        :data:`DEFAULT_RETRY_MS`.
    :param keepalive_interval: seconds between keep-alive comments on open SSE streams
        (None: none): :data:`DEFAULT_KEEPALIVE_INTERVAL`.
    :param max_pending_messages: messages held for a standalone stream no GET is reading:
        :data:`DEFAULT_MAX_PENDING_MESSAGES`.
    :param tool_param_headers: 2026-07-28 ``x-mcp-header`` support: tool name -> ``{header
        name: property path}`` (see :func:`~mcp_sansio.http.param_headers`), to check
        ``Mcp-Param-*`` headers.
    :param legacy_sse_path: serve the 2024-11-05 HTTP+SSE transport too: its SSE path.
        Default None: a deprecated transport is served only when asked for.
    :param legacy_post_path: the legacy transport's POST path (``/messages``, the
        2024-11-05 SDKs' own).
    :param auth: make the endpoint a protected resource (a
        :class:`~mcp_sansio.auth.ProtectedResource`); None serves everyone.
    :param decision_timeout: seconds a request waits on an asynchronous decision (a token
        its verifier must ask about) before it is answered without one
        (:data:`~mcp_sansio.http._park.DEFAULT_DECISION_TIMEOUT`: 503 for a token).
    :param tool_scopes: with ``auth``, tool name -> the scopes calling it needs beyond
        ``auth.required_scopes`` (None or empty: none); a ``tools/call`` whose token lacks
        them is answered 403 ``insufficient_scope`` naming them.
    :param sessionless: serve the handshake era with no session kept (see
        :mod:`mcp_sansio._sessionless` and "Sessionless mode" in :doc:`/http`): no
        ``Mcp-Session-Id`` is issued, every POST is served by a fresh connection at the
        revision its ``MCP-Protocol-Version`` header names, GET and DELETE are 405. Not
        with ``legacy_sse_path`` (HTTP+SSE is a session by construction).
    :param shared: sessions and SSE events live in a store several workers share
        (:mod:`mcp_sansio.http._shared`): the server says what to store and look up as
        effects instead of keeping events itself.
    :param stream_tag: this worker's mark in its stream ids (letters and digits), unique
        among the workers sharing a store, so that two workers never number one stream.
    :param session_id_prefix: put in front of every session id this server issues
        (visible ASCII, at most :data:`MAX_SESSION_ID_PREFIX` characters): the routing tag
        a gateway that routes by ``Mcp-Session-Id`` reads (see "Routing by session id" in
        :doc:`/stores`). The id stays unguessable: the prefix is added to what
        ``new_session_id`` returns.
    :param wire: the HTTP/1.1 parser of the server's connections, a key of
        :data:`~mcp_sansio.http._wires.WIRES`: ``"httptools"`` (llhttp, faster; the
        default when the ``fast`` extra is installed) or ``"h11"`` (the reference and the
        core's own dependency; the default otherwise). See :doc:`/wires`.
    """

    path: str = "/mcp"
    response_mode: ResponseMode = ResponseMode.SSE
    enable_get: bool = True
    enable_delete: bool = True
    allowed_hosts: tuple[str, ...] | None = attrs.field(default=LOCAL_HOSTS,
                                                        converter=_allow_list)
    allowed_origins: tuple[str, ...] | None = attrs.field(default=LOCAL_ORIGINS,
                                                          converter=_allow_list)
    max_body_size: int = DEFAULT_MAX_BODY_SIZE
    max_header_size: int = DEFAULT_MAX_HEADER_SIZE
    max_header_count: int = DEFAULT_MAX_HEADER_COUNT
    max_target_length: int = DEFAULT_MAX_TARGET_LENGTH
    max_sessions: int = DEFAULT_MAX_SESSIONS
    session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT
    resumable: bool = True
    event_store: EventStore | None = None
    retry_ms: int | None = DEFAULT_RETRY_MS
    keepalive_interval: float | None = DEFAULT_KEEPALIVE_INTERVAL
    max_pending_messages: int = DEFAULT_MAX_PENDING_MESSAGES
    tool_param_headers: Callable[[str], Mapping[str, Sequence[str]] | None] | None = None
    legacy_sse_path: str | None = None
    legacy_post_path: str = "/messages"
    auth: ProtectedResource | None = None
    decision_timeout: float = DEFAULT_DECISION_TIMEOUT
    tool_scopes: Callable[[str], Iterable[str] | None] | None = None
    sessionless: bool = False
    shared: bool = False
    stream_tag: str = attrs.field(default="", validator=_check_stream_tag)
    session_id_prefix: str = attrs.field(default="", validator=_check_prefix)
    wire: str = attrs.field(factory=default_wire, validator=_check_wire)

    def __attrs_post_init__(self) -> None:
        if self.sessionless and self.legacy_sse_path is not None:
            raise ValueError("the legacy HTTP+SSE transport needs sessions: "
                             "sessionless=True cannot serve it")

    def replace(self, **changes: Any) -> ServerConfig:
        """A copy with ``changes`` (validated again)."""
        return attrs.evolve(self, **changes)
