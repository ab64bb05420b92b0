"""Streamable HTTP (both eras) and legacy HTTP+SSE for MCP, sans I/O, on h11.

:class:`HTTPServer` and :class:`HTTPClient` turn bytes into MCP connection input and MCP
connection output into bytes, keeping every transport rule in between (status codes,
sessions, headers, streams, resumption). They never touch a socket or a clock: an adapter
feeds them what it reads, writes what they give, and passes ``now``. See the documentation
page "HTTP" for the call order and the deployment notes.
"""

from __future__ import annotations

from ._client import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_RECONNECT_DELAY,
    DEFAULT_MAX_RECONNECTS,
    DEFAULT_RECONNECT_DELAY,
    ClientChannel,
    HTTPClient,
    SessionRenewed,
    Transport,
    TransportFailed,
)
from ._config import (
    DEFAULT_KEEPALIVE_INTERVAL,
    DEFAULT_MAX_BODY_SIZE,
    DEFAULT_MAX_PENDING_MESSAGES,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_RETRY_MS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    MAX_SESSION_ID_PREFIX,
    ResponseMode,
    ServerConfig,
)
from ._headers import (
    LOCAL_HOSTS,
    LOCAL_ORIGINS,
    Headers,
    decode_header_value,
    encode_header_value,
    param_headers,
)
from ._hub import ServerChannel, Session, SessionEnd
from ._server import HTTPServer
from ._sse import (
    DEFAULT_MAX_EVENT_SIZE,
    SSEError,
    SSEEvent,
    SSEParser,
    encode_comment,
    encode_event,
)
from ._store import DEFAULT_MAX_STORED_EVENTS, EventStore, InMemoryEventStore
from ._wire import DEFAULT_MAX_HEADER_SIZE, HTTPRequest

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_RECONNECTS",
    "DEFAULT_MAX_RECONNECT_DELAY",
    "DEFAULT_RECONNECT_DELAY",
    "ClientChannel",
    "HTTPClient",
    "SessionRenewed",
    "Transport",
    "TransportFailed",
    "DEFAULT_KEEPALIVE_INTERVAL",
    "DEFAULT_MAX_BODY_SIZE",
    "DEFAULT_MAX_EVENT_SIZE",
    "DEFAULT_MAX_HEADER_SIZE",
    "DEFAULT_MAX_PENDING_MESSAGES",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_MAX_STORED_EVENTS",
    "DEFAULT_RETRY_MS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "MAX_SESSION_ID_PREFIX",
    "LOCAL_HOSTS",
    "LOCAL_ORIGINS",
    "EventStore",
    "HTTPRequest",
    "HTTPServer",
    "Headers",
    "InMemoryEventStore",
    "ResponseMode",
    "SSEError",
    "SSEEvent",
    "SSEParser",
    "ServerChannel",
    "ServerConfig",
    "Session",
    "SessionEnd",
    "decode_header_value",
    "encode_comment",
    "encode_event",
    "encode_header_value",
    "param_headers",
]
