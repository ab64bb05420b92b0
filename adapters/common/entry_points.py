"""The client entry points every runtime offers, defined once: ``connect_stdio`` and
``connect_http`` -- their parameters, defaults and documentation.

Theory of operation: a definition here is a plain function whose body only gathers its
arguments into a record (:class:`StdioClientCall`, :class:`HTTPClientCall`). :func:`runs`
makes a runtime's entry point of a definition and that runtime's implementation, which takes
the record: the entry point shows the definition's signature and docstring (plus the
runtime's note) to a type checker (``ParamSpec``) and to ``inspect`` and Sphinx
(``__signature__``). What the caller may pass and what it means is written here only; how
a runtime spawns, connects and closes is its own (``asyncio/``, ``trio/``, ``threading/``).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, ParamSpec, TypeVar

from mcp_sansio import Era, KeyRing, Notification
from mcp_sansio.app.keepalive import DEFAULT_MAX_MISSED

from ..keys import request_state_keys
from .stdio import DEFAULT_SHUTDOWN_TIMEOUT, STDERR_LOGGER, spawn_args

if TYPE_CHECKING:
    from mcp_sansio.app.server import Server

    from ..auth.session import AuthOption

__all__ = ["RUNTIME_NAMES", "HTTPClientCall", "StdioClientCall", "StdioServeCall", "connect_http",
           "connect_stdio", "documented", "load_http", "runs", "serve_stdio"]

P = ParamSpec("P")
C = TypeVar("C")
R = TypeVar("R")
S = TypeVar("S")
F = TypeVar("F", bound=Callable[..., Any])


class StdioClientCall(NamedTuple):
    """The arguments of a ``connect_stdio`` call."""

    command: str | Sequence[str]
    args: Sequence[str]
    env: Mapping[str, str] | None
    inherit_env: bool
    cwd: str | os.PathLike[str] | None
    connect: bool
    era: Era | None
    #: The callbacks and the connection's options: ``Client._create``'s keywords.
    client: dict[str, Any]
    shutdown_timeout: float
    stderr_logger: logging.Logger

    def spawn(self) -> tuple[list[str], dict[str, Any]]:
        """The server's argv and the spawn's keywords (:func:`.stdio.spawn_args`)."""
        return spawn_args(self.command, self.args, self.env, self.inherit_env, self.cwd)


class HTTPClientCall(NamedTuple):
    """The arguments of a ``connect_http`` call."""

    url: str
    connect: bool
    era: Era | None
    #: The callbacks and the connection's options: ``Client._create``'s keywords.
    client: dict[str, Any]
    headers: Iterable[tuple[str, str]] | Mapping[str, str] | None
    http_options: Mapping[str, Any] | None
    auth: AuthOption | None
    #: A Unix socket's path to connect to instead of the URL's host and port.
    uds: str | None


class StdioServeCall(NamedTuple):
    """The arguments of a ``serve_stdio`` call."""

    server: Server
    stdin_fd: int | None
    stdout_fd: int | None
    request_state_key: bytes | KeyRing | None
    keepalive: float | None
    keepalive_misses: int
    #: The options for each session's :class:`~mcp_sansio.ServerConnection`.
    connection_options: dict[str, Any]

    def session(self, session_class: Callable[..., S]) -> S:
        """The served connection's session: a ``session_class`` over a new connection of
        the server (with the request-state keys and connection options), keeping alive as
        asked."""
        conn = self.server.connection(
            request_state_key=request_state_keys(self.request_state_key),
            **self.connection_options)
        return session_class(conn, self.server, keepalive=self.keepalive,
                             keepalive_misses=self.keepalive_misses)


def runs(definition: Callable[P, C], note: str = ""
         ) -> Callable[[Callable[[C], R]], Callable[P, R]]:
    """Make a runtime's entry point of ``definition`` and the runtime's implementation
    (which takes the definition's record); ``note`` adds what holds on that runtime only."""

    def make(implementation: Callable[[C], R]) -> Callable[P, R]:
        def entry(*args: P.args, **kwargs: P.kwargs) -> R:
            return implementation(definition(*args, **kwargs))

        entry.__name__ = entry.__qualname__ = definition.__name__
        entry.__module__ = implementation.__module__
        entry.__doc__ = "\n\n".join(inspect.cleandoc(text) for text in (
            definition.__doc__ or "", note) if text)
        returns = inspect.signature(implementation).return_annotation
        entry.__signature__ = inspect.signature(  # type: ignore[attr-defined]
            definition).replace(return_annotation=returns)
        return entry
    return make


def documented(definition: Callable[..., Any], note: str) -> Callable[[F], F]:
    """Give a runtime's entry point that keeps a signature of its own (parameters only it
    has) the documentation of ``definition``, and ``note`` after it."""

    def document(function: F) -> F:
        function.__doc__ = "\n\n".join(
            inspect.cleandoc(text) for text in (definition.__doc__ or "", note))
        return function
    return document


def connect_stdio(
    command: str | Sequence[str], args: Sequence[str] = (), *,
    env: Mapping[str, str] | None = None, inherit_env: bool = True,
    cwd: str | os.PathLike[str] | None = None, connect: bool = True, era: Era | None = None,
    sampling: Callable[[dict[str, Any]], Any] | None = None,
    elicitation: Callable[[dict[str, Any]], Any] | None = None,
    roots: Callable[[dict[str, Any]], Any] | list[dict[str, Any]] | None = None,
    on_notification: Callable[[Notification], Any] | None = None,
    on_log: Callable[[dict[str, Any]], Any] | None = None,
    info: Mapping[str, Any] | None = None,
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
    stderr_logger: logging.Logger = STDERR_LOGGER,
    **connection_options: Any,
) -> StdioClientCall:
    """Spawn an MCP server (in its own process group) and yield a connected ``Client``.

    ``command`` is a program or a whole argv; ``env`` is added to ours (replaces it with
    ``inherit_env=False``). The server's stderr goes to ``stderr_logger`` line by line. The
    callbacks answer the server's requests -- and the stateless era's ``input_required``
    -- and declare the matching client capabilities. ``connection_options`` go to
    :class:`~mcp_sansio.ClientConnection` (``versions``, ``request_timeout``,
    ``max_request_time``, ``probe_timeout``, ...). ``connect=False`` yields the client
    before the handshake (call ``connect`` yourself); ``era`` is a cached verdict of the
    era probe. On exit the server is shut down (the client's ``aclose``/``close``, waiting
    at most ``shutdown_timeout`` seconds at each step)."""
    return StdioClientCall(
        command, args, env, inherit_env, cwd, connect, era, dict(
            sampling=sampling, elicitation=elicitation, roots=roots,
            on_notification=on_notification, on_log=on_log, info=info,
            **connection_options), shutdown_timeout, stderr_logger)


def connect_http(
    url: str, *, connect: bool = True, era: Era | None = None,
    sampling: Callable[[dict[str, Any]], Any] | None = None,
    elicitation: Callable[[dict[str, Any]], Any] | None = None,
    roots: Callable[[dict[str, Any]], Any] | list[dict[str, Any]] | None = None,
    on_notification: Callable[[Notification], Any] | None = None,
    on_log: Callable[[dict[str, Any]], Any] | None = None,
    info: Mapping[str, Any] | None = None,
    headers: Iterable[tuple[str, str]] | Mapping[str, str] | None = None,
    http_options: Mapping[str, Any] | None = None, auth: AuthOption | None = None,
    uds: str | os.PathLike[str] | None = None,
    **connection_options: Any,
) -> HTTPClientCall:
    """Connect to the MCP server at ``url`` (its endpoint, e.g. ``http://127.0.0.1:8000/mcp``)
    and yield a connected ``HTTPClientSession`` (the runtime's client over HTTP).

    The era is probed as on stdio (``server/discover`` first, then ``initialize``; ``era``
    is a cached verdict), and a server that refuses ``initialize`` with 4xx is tried with
    the legacy HTTP+SSE transport. ``headers`` go on every request (e.g.
    ``Authorization``). ``http_options`` go to :class:`~mcp_sansio.http.HTTPClient`
    (``transport``, ``standalone_stream``, ``max_connections``, ``max_body_size``,
    reconnection settings), except three that are the adapter's: ``connect_timeout``,
    ``max_write_buffer`` and ``ssl_context`` (for ``https``; default:
    :func:`ssl.create_default_context`). The callbacks and ``connection_options`` are as
    for ``connect_stdio``. ``auth`` (:class:`~mcp_sansio.adapters.auth.OAuth`): run the
    OAuth flow when the server answers 401 (or 403 ``insufficient_scope``), then retry
    with the token. ``uds``: connect to the Unix domain socket at that path instead of the
    URL's host and port (the URL still gives the path and the ``Host`` header, e.g.
    ``http://localhost/mcp``; a server started with ``start_http(..., uds=PATH)``). On exit
    the session is ended (``DELETE``) and every socket closed."""
    return HTTPClientCall(url, connect, era, dict(
        sampling=sampling, elicitation=elicitation, roots=roots,
        on_notification=on_notification, on_log=on_log, info=info, **connection_options),
        headers, http_options, auth, os.fspath(uds) if uds is not None else None)


def serve_stdio(
    server: Server, *, stdin_fd: int | None = None, stdout_fd: int | None = None,
    request_state_key: bytes | KeyRing | None = None, keepalive: float | None = None,
    keepalive_misses: int = DEFAULT_MAX_MISSED, **connection_options: Any,
) -> StdioServeCall:
    """Serve one MCP connection on this process's stdin/stdout (or the given descriptors)
    until the client closes stdin. While serving, ``sys.stdout`` and descriptor 1 point at
    stderr, so stray ``print()`` output cannot corrupt the protocol stream.

    ``request_state_key`` seals stateless-era ``requestState`` (by default the ring the
    environment configures, :doc:`/keys`, else a random key, in which case
    state is valid for this process only).

    ``keepalive`` (seconds) pings the client that often (handshake era; spec 2025-11-25
    basic/utilities/ping) and ends the session after ``keepalive_misses`` unanswered in a
    row (``mcp_sansio.app.keepalive``); off by default."""
    return StdioServeCall(server, stdin_fd, stdout_fd, request_state_key, keepalive,
                          keepalive_misses, connection_options)


#: The HTTP names of every runtime package, loaded on first use from its ``http_client`` or
#: ``http_server`` module, so that a stdio process does not pay for importing h11 and
#: :mod:`mcp_sansio.http` at start-up (15-48 ms of a cold start, measured).
HTTP_CLIENT_NAMES = ("HTTPClientSession", "HTTPTransportError", "connect_http")
HTTP_SERVER_NAMES = ("HTTPService", "run_http", "serve_http", "start_http")
#: The public names of every runtime package (``asyncio``, ``trio``, ``threading``): its
#: ``__all__`` is these and what only that runtime has.
RUNTIME_NAMES = ("Client", "ConnectionClosedError", "Context", "McpError", "RequestTimeout",
                 "Server", "ServerSession", "ToolError", "connect_stdio", "run_stdio",
                 "serve_stdio", *HTTP_CLIENT_NAMES, *HTTP_SERVER_NAMES)


def load_http(package: str) -> Callable[[str], Any]:
    """The module ``__getattr__`` of runtime package ``package``: its HTTP names."""

    def __getattr__(name: str) -> Any:
        for names, module in ((HTTP_CLIENT_NAMES, "http_client"),
                              (HTTP_SERVER_NAMES, "http_server")):
            if name in names:
                if name == "HTTPTransportError":  # the app layer's, for every runtime
                    module_name = "mcp_sansio.app.http_client"
                else:
                    module_name = f"{package}.{module}"
                return getattr(importlib.import_module(module_name), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__
