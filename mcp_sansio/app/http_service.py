"""What the HTTP server adapters (asyncio, trio, threads) do the same way, none of it I/O.

Theory of operation
-------------------
Each runtime's ``HTTPService`` subclasses :class:`HTTPServiceBase`, which holds the sans-IO
:class:`~mcp_sansio.http.HTTPServer`, the address it listens on (:attr:`~HTTPServiceBase.port`,
:attr:`~HTTPServiceBase.url`) and the session logic of each HTTP session, made when the
session's first event arrives and dropped when it closes (:meth:`~HTTPServiceBase._dispatch`).
The runtime supplies how to make that logic, how to stop what a closed session still runs,
and ``_kick``: route what a session logic just sent (flush and run the pump, or wake it).
A runtime whose pump runs from synchronous code (asyncio's callbacks, threads under the
service's lock) drains with :meth:`~HTTPServiceBase._sync_drain`, in one direction: events
out of the HTTP server to the session logics, bytes out to the runtime's ``_write``, until
the server says nothing is left (``HTTPServer.needs_drain``) -- what a handler sends during
the dispatch, or a failed write the runtime reports to its channel, is seen there.
Each HTTP session's logic is the plain server session of its runtime's colour holding an
:class:`HTTPLink` (``session.link``): its connection is drained by the HTTP server, which
also owns every timer, and a handler context broadcasts the server-wide list changes
through it. How a runtime starts the handlers of such a session (stepped at once, during
the dispatch) is its runtime object's business. :func:`http_server_for` is
what every ``start_http`` builds: the HTTP server with its connection factory and options --
the ``requestState`` key and the session-id source handed in (the runtime glue draws them
from :mod:`secrets`).

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from mcp_sansio import NEED_DATA, ConnectionClosed, Event, KeyRing, ServerConnection
from mcp_sansio._capabilities import SERVER_WIDE_NOTIFICATIONS
from mcp_sansio.http import HTTPServer, ServerChannel, ServerConfig, Session

from .server import Server, ServerLogic

if TYPE_CHECKING:
    from mcp_sansio.auth import AccessInfo

__all__ = ["SERVER_WIDE", "HTTPLink", "HTTPServiceBase", "broadcast_server_wide",
           "http_server_for"]

#: Logged under the adapters' HTTP logger name, as before this logic moved here.
log = logging.getLogger("mcp_sansio.adapters.http")

#: Notifications about the server as a whole: every session and listen stream hears them
#: (a list change is the server's, not the session's whose handler caused it).
SERVER_WIDE = SERVER_WIDE_NOTIFICATIONS  # the method table's server_wide column


def http_server_for(
    server: Server, *, request_state_key: bytes | KeyRing, new_session_id: Callable[[], str],
    connection_options: Mapping[str, Any] | None, http_options: dict[str, Any],
) -> HTTPServer:
    """The :class:`~mcp_sansio.http.HTTPServer` that serves ``server``: each session's
    connection from ``server.connection`` with ``connection_options`` and
    ``request_state_key``; session ids from ``new_session_id``; ``http_options`` as given."""
    options = dict(connection_options or {})

    def connection() -> ServerConnection:
        return server.connection(request_state_key=request_state_key, **options)

    return HTTPServer(connection, ServerConfig(**http_options), new_session_id=new_session_id)


LogicT = TypeVar("LogicT", bound=ServerLogic)


class HTTPServiceBase(Generic[LogicT]):
    """The runtime-free part of a running HTTP server (see the module docstring)."""

    server: Server
    #: The sans-IO HTTP server.
    http: HTTPServer
    #: ``(host, port)`` the server listens on.
    address: tuple[str, int]
    _stateless: weakref.WeakKeyDictionary[Session, LogicT]
    _pumping = False  # a drain is under way

    def __init__(self, server: Server, http: HTTPServer) -> None:
        self.server = server
        self.http = http
        # Each HTTP session's logic is made on its first event (:meth:`_dispatch`) and kept
        # on the session (``Session.attached``: a table of weak references cost ~200 bytes
        # an idle session). Sessions with no id (stateless-era requests, sessionless mode)
        # are in no table of the HTTP server: they are also listed here, for _logics().
        self._stateless = weakref.WeakKeyDictionary()

    def _logic_of(self, session: Session) -> LogicT | None:
        """The logic this service made for ``session`` (None: none yet). A logic another
        service made (an application served again on another loop, whose HTTP server
        outlived the old service) is not this one's."""
        logic = session.attached
        if logic is None:
            return None
        link = logic.link
        if not isinstance(link, HTTPLink) or link.service_base is not self:
            return None
        return cast("LogicT", logic)

    def _logics(self) -> list[LogicT]:
        """The logic of every live session: the HTTP server's sessions, and the requests
        served with no session id."""
        live: list[LogicT] = []
        for session in self.http.sessions.values():
            logic = self._logic_of(session)
            if logic is not None:
                live.append(logic)
        live.extend(self._stateless.values())
        return live

    def _detach_logics(self) -> list[LogicT]:
        """The service closes: every live session's logic, each forgotten by its session."""
        logics = self._logics()
        for session in self.http.sessions.values():
            if self._logic_of(session) is not None:
                session.attached = None
        self._stateless.clear()
        return logics

    @property
    def port(self) -> int:
        """The port the server listens on (the one picked, when asked for port 0)."""
        return self.address[1]

    @property
    def url(self) -> str:
        """The MCP endpoint's URL, e.g. ``http://127.0.0.1:8000/mcp``."""
        host = self.address[0]
        host = f"[{host}]" if ":" in host else host
        port = "" if self.port == 80 else f":{self.port}"  # http's default (a Unix socket's)
        return f"http://{host}{port}{self.http.path}"

    def _contain(self, channel: ServerChannel) -> None:
        """An exception escaped while handling ``channel`` (call from an ``except`` block):
        log it once and end that connection alone -- ``500`` when no response had started
        (the sans-IO channel already did so when the exception came out of its
        ``receive_data``); the caller then writes what the channel has and closes it."""
        log.exception("an HTTP connection failed unexpectedly; it is closed, the server goes on")
        if not channel.closed:
            try:
                channel.fail()
            except Exception:  # pragma: no cover - the channel's own cleanup failed too
                log.exception("ending the failed HTTP connection failed as well")

    def _work_failed(self) -> None:
        """An exception escaped work that is no one connection's -- the timers, a pump run
        for no reader (call from an ``except`` block): logged, and the server goes on
        (``handle_timeout`` took the failing entry off its heap before it failed)."""
        log.exception("the HTTP server's work failed unexpectedly; the server goes on")

    def _kick(self) -> None:
        """Route what a session logic just sent (the runtime's pump)."""
        raise NotImplementedError

    def _write(self, channel: ServerChannel, data: bytes) -> None:
        """Write what the HTTP server has for ``channel`` (closed: then close it)."""
        raise NotImplementedError

    def _new_logic(self, session: Session) -> LogicT:
        """The session logic of a new HTTP session."""
        raise NotImplementedError

    def _ended(self, logic: LogicT) -> None:
        """A session closed: stop the handlers it still runs."""
        raise NotImplementedError

    def _broadcast(self, method: str, params: Mapping[str, Any] | None) -> None:
        """Send a server-wide notification to every session and listen stream for it."""
        self.http.broadcast(method, params)
        self._kick()

    def _sync_drain(self) -> bool:
        """Hand every event of the HTTP server to its session's logic and write what it has
        to send, until the server has nothing more (a pump run from synchronous code:
        asyncio, threads under the service's lock). One drain at a time: one asked for
        while another runs (a handler answering during the dispatch) returns False at
        once -- the running one sees what was sent, since it drains until
        ``HTTPServer.needs_drain`` is False."""
        if self._pumping:
            return False
        self._pumping = True
        http = self.http
        try:
            while True:
                while (item := http.next_event()) is not NEED_DATA:
                    session, event = item
                    self._dispatch(session, event)
                for channel, data in http.data_to_send():
                    self._write(channel, data)
                if not http.needs_drain:
                    return True
        finally:
            self._pumping = False

    def _dispatch(self, session: Session, event: Event) -> None:
        """Hand one event of the HTTP server to its session's logic."""
        logic = self._logic_of(session)
        if logic is None:
            logic = self._new_logic(session)
            session.attached = logic
            if session.id is None:
                self._stateless[session] = logic
        logic._dispatch(event)
        if isinstance(event, ConnectionClosed):
            session.attached = None
            if session.id is None:
                self._stateless.pop(session, None)
            self._ended(logic)


class HTTPLink:
    """The tie between one session logic (a handshake-era HTTP session, or one
    stateless-era request) and the HTTP server that drains its connection, held by the
    session as ``session.link`` (:class:`~.session.Link`): the session's ``service()``
    flushes the HTTP session and kicks the service's pump instead of draining (the HTTP
    server also owns every timer); a handler's server-wide notification is broadcast; the
    HTTP session says who its latest request spoke for. Composed, not mixed in: the session
    is the plain server session of its runtime's colour."""

    __slots__ = ("_http_session", "service_base")

    def __init__(self, service: HTTPServiceBase[Any], http_session: Session) -> None:
        #: The running HTTP service (named apart from :meth:`service`, the session's hook).
        self.service_base = service
        self._http_session = weakref.ref(http_session)

    @property
    def http_session(self) -> Session | None:
        """The sans-IO HTTP session (None once it is gone)."""
        return self._http_session()

    def service(self) -> None:
        http_session = self._http_session()
        if http_session is not None:
            http_session.flush()
        self.service_base._kick()

    def broadcast(self, method: str, params: Mapping[str, Any] | None) -> bool:
        """Broadcast ``method`` to every session if it is a server-wide notification (True
        when done); else the caller sends it on its own session."""
        if method not in SERVER_WIDE:
            return False
        self.service_base._broadcast(method, params)
        return True

    @property
    def auth(self) -> AccessInfo | None:
        """Who the HTTP session's latest request spoke for (servers with ``auth``)."""
        http_session = self._http_session()
        return http_session.auth if http_session is not None else None


def broadcast_server_wide(session: object, method: str,
                          params: Mapping[str, Any] | None) -> bool:
    """Broadcast ``method`` if it is a server-wide notification sent from an HTTP session's
    handler (True when done); else the caller sends it on its own session."""
    link = getattr(session, "link", None)
    return link is not None and bool(link.broadcast(method, params))
