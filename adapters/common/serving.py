"""The HTTP server entry points every runtime offers, defined once: ``start_http`` and
``run_http`` -- their parameters, defaults and documentation -- and what starting a server
does before the runtime's sockets take over.

Theory of operation: as in :mod:`.entry_points`, a definition here is a plain function
that gathers its arguments into a record (:class:`HTTPServeCall`), and
:func:`~.entry_points.runs` makes each runtime's entry point of it and the runtime's
implementation, which takes the record. :func:`http_server_of` builds the sans-IO server a
record asks for; :func:`print_url` is what ``run_http`` does once the socket listens. The
threads runtime's ``start_http`` has parameters of its own (a thread pool, a connection
cap): it keeps its own signature and takes this documentation
(:func:`~.entry_points.documented`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from mcp_sansio import KeyRing
from mcp_sansio.app.server import Server
from mcp_sansio.http import HTTPServer

from .graceful import serve_until_signal
from .http_options import DEFAULT_LINGER_BYTES, DEFAULT_LINGER_TIME
from .http_server import new_http_server

if TYPE_CHECKING:
    from ..stores.driver import SharedDriver

__all__ = ["DEFAULT_MAX_WRITE_BUFFER", "HTTPServeCall", "ServeCall", "ServiceState",
           "http_runner", "http_server_of", "print_url", "run_http", "start_http"]

#: Unread output (bytes) a socket may hold before its connection is dropped: 16 MiB -- room
#: for many large SSE events to a slow reader, a bound for one that never reads.
DEFAULT_MAX_WRITE_BUFFER = 16 * 1024 * 1024


class ServiceState:
    """What each runtime's ``HTTPService`` adds to the app layer's part, the same on every
    runtime: where it listens, the bounds of a served connection's lingering close
    (:mod:`.http_options`) and the driver of its shared stores (which ``start_http`` sets),
    and the end of a closed session's handlers (its runtime's ``end``). Listed first among
    the service's bases, so that its ``_ended`` is the one that runs."""

    #: ``(host, port)`` the server listens on.
    address: tuple[str, int] = ("", 0)
    #: Carries out the store effects of a server started with ``stores``
    #: (:mod:`~mcp_sansio.adapters.stores.driver`); None: this process's sessions only.
    _shared: SharedDriver | None = None

    def _ended(self, logic: Any) -> None:
        """A session closed: its runtime (the service's own kind) stops the handlers it
        still runs."""
        logic.runtime.end()

    #: Seconds a closed connection lingers at most.
    linger_time: float = DEFAULT_LINGER_TIME
    #: Bytes a closed connection discards at most while it lingers.
    linger_bytes: int = DEFAULT_LINGER_BYTES


class HTTPServeCall(NamedTuple):
    """The arguments of a ``start_http`` call."""

    server: Server
    host: str
    port: int
    request_state_key: bytes | KeyRing | None
    connection_options: Mapping[str, Any] | None
    max_write_buffer: int
    new_session_id: Callable[[], str] | None
    linger_time: float
    linger_bytes: int
    #: The options for :class:`~mcp_sansio.http.HTTPServer`, and the adapter's own
    #: (``uds``, ``stores``, ...), which the runtime takes out first.
    http_options: dict[str, Any]


class ServeCall(NamedTuple):
    """The arguments of a ``run_http`` call."""

    server: Server
    host: str
    port: int
    options: dict[str, Any]


def start_http(
    server: Server, host: str = "127.0.0.1", port: int = 0, *,
    request_state_key: bytes | KeyRing | None = None,
    connection_options: Mapping[str, Any] | None = None,
    max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER,
    new_session_id: Callable[[], str] | None = None,
    linger_time: float = DEFAULT_LINGER_TIME,
    linger_bytes: int = DEFAULT_LINGER_BYTES,
    **http_options: Any,
) -> HTTPServeCall:
    """Serve ``server`` over Streamable HTTP (both eras) on ``host``:``port`` (0: any free
    port, see :attr:`HTTPService.port`) while the block runs.
    ``uds=PATH`` listens on that Unix domain socket instead (the URL is then
    ``http://localhost/mcp``; the socket file's mode, a stale file: :ref:`unix-sockets`).

    ``http_options`` go to :class:`~mcp_sansio.http.HTTPServer` (``path``,
    ``response_mode``, ``allowed_hosts``, ``legacy_sse_path``, limits, ...;
    ``tool_param_headers`` defaults to the ``x-mcp-header`` annotations of ``server``'s
    tools, kept current as tools come and go);
    ``connection_options`` to each session's :class:`~mcp_sansio.ServerConnection`.
    Session ids come from :mod:`secrets`; ``request_state_key`` seals stateless-era
    ``requestState`` (a key or a :class:`~mcp_sansio.KeyRing`; by default the ring the
    environment configures, else a random key valid for this process only: :doc:`/keys`).
    A connection the
    server closes lingers (half-closed, reading and discarding) for at most
    ``linger_time`` seconds and ``linger_bytes`` bytes, so that an early answer (413, 400)
    reaches a client that is still sending."""
    return HTTPServeCall(server, host, port, request_state_key, connection_options,
                         max_write_buffer, new_session_id, linger_time, linger_bytes,
                         http_options)


def run_http(server: Server, host: str = "127.0.0.1", port: int = 0,
             **options: Any) -> ServeCall:
    """Serve ``server`` over HTTP, printing its URL on stdout once it listens, until SIGTERM
    or Ctrl-C; then stop gracefully and return: no new connections, the requests in flight
    finish (at most ``shutdown_timeout`` seconds, 10 by default; a second signal stops
    waiting), the rest is closed, a shared worker leaves cleanly (adapters/common/graceful.py).
    Other options as for :func:`start_http`."""
    return ServeCall(server, host, port, options)


def http_server_of(call: HTTPServeCall, request_state_key: bytes | KeyRing | None = None
                   ) -> HTTPServer:
    """The :class:`~mcp_sansio.http.HTTPServer` that ``call`` serves (``request_state_key``,
    if given, in place of the call's: a shared server's store ring)."""
    return new_http_server(
        call.server, request_state_key=(
            call.request_state_key if request_state_key is None else request_state_key),
        connection_options=call.connection_options, new_session_id=call.new_session_id,
        http_options=call.http_options)


def print_url(service: Any) -> None:
    """``run_http``'s ``on_ready``: the served URL on stdout, a line of its own."""
    sys.stdout.write(f"{service.url}\n")
    sys.stdout.flush()


def http_runner(runtime: str, module: str) -> Callable[[ServeCall], None]:
    """A runtime's ``run_http`` (made with ``runs(serving.run_http)``): its ``start_http``
    (of ``module``) served until a stop signal, the URL printed once it listens."""

    def run_http(call: ServeCall) -> None:
        serve_until_signal(runtime, sys.modules[module], *call[:3], on_ready=print_url,
                           **call.options)
    run_http.__module__ = module
    return run_http
