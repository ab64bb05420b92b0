"""One connection's session logic, for both roles: the pump's bookkeeping, the client logic,
and the mapping between core events and application outcomes.

Theory of operation
-------------------
A runtime (``mcp_sansio.adapters``: asyncio, trio, threads -- or an embedder's own loop)
owns the I/O: it reads bytes and hands them to :meth:`Session.feed`, and writes what
:meth:`Session.service` hands to it. The session *holds* the runtime's primitives as one
object (``session.runtime``, a :class:`Runtime`: its clock, its one timer, its output) and
its hooks (``_now``, ``_arm``, ``_write``) delegate to it, here and only here; the role
classes start jobs (``_spawn_incoming``) and wake waiters (``Call.wake``). Classes stack
on two axes only: :class:`Session` (the pump), then the role (:class:`ClientLogic`,
:class:`~.server.ServerLogic`), then the colour (the async or blocking API, in
``mcp_sansio.adapters``) -- three classes at most. Everything else is here, written once and
free of any runtime.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager, suppress
from typing import TYPE_CHECKING, Any, Protocol, Self

from mcp_sansio import (
    HANDSHAKE_REVISIONS,
    NEED_DATA,
    STATELESS_REVISIONS,
    CancelRequested,
    ClientConnection,
    Connection,
    ConnectionClosed,
    Era,
    ErrorCode,
    ErrorResponse,
    Event,
    Initialized,
    InputRequired,
    LateResponse,
    LocalProtocolError,
    MessageRejected,
    NeedData,
    Notification,
    Progress,
    Request,
    RequestId,
    RequestTimedOut,
    Response,
    ServerConnection,
    State,
    SubscriptionAcknowledged,
    UnexpectedResponse,
    _capabilities,
)

from .client_capabilities import declare, for_revision
from .errors import (
    Call,
    ConnectionClosedError,
    InputRequiredSignal,
    McpError,
    MissingCapability,
    ProgressCallback,
    _nothing,
)
from .keepalive import DEFAULT_MAX_MISSED, Keepalive

if TYPE_CHECKING:
    # Types only: a stdio client (or server) does not load the HTTP stack.
    from mcp_sansio.http import HTTPClient, Transport

    from .client_tasks import ClientTask

__all__ = [
    "DEFAULT",
    "HUMAN_WAIT_METHODS",
    "INPUT_METHODS",
    "NO_LOCK",
    "SERVER_NEVER_SENDS",
    "default_client_info",
    "next_cursor",
    "page_params",
    "Answering",
    "ClientLink",
    "ClientLogic",
    "Link",
    "Listener",
    "Runtime",
    "Session",
]

#: The high-level layer logs under the adapters' logger name (``mcp_sansio.adapters``):
#: applications (and tests) configure that name to see handler failures.
log = logging.getLogger("mcp_sansio.adapters")


#: "use the connection's default" for timeout options.
DEFAULT: Any = object()

#: Requests a server may make of a client (handshake era: real requests; stateless era:
#: embedded in input_required), with the client capability each needs and the name of the
#: client callback that answers it.
INPUT_METHODS: dict[str, tuple[str, str]] = {
    "sampling/createMessage": ("sampling", "sampling"),
    "elicitation/create": ("elicitation", "elicitation"),
    "roots/list": ("roots", "roots"),
}

#: Requests a server makes of a client that wait on a human, so no request timeout runs
#: while one is open (the "human-wait clock"): on the server, the request's own clock; on
#: the client, the clocks of the client's own requests in flight (one of them is what the
#: server works on). Spec 2025-11-25 client/elicitation ("Elicitation ... requests
#: additional information from users") and client/sampling ("there SHOULD always be a
#: human in the loop with the ability to deny"): a person may take longer than any sensible
#: request timeout. ``roots/list`` is answered by software and keeps its clock. Handshake
#: era only: in the stateless era (2026-07-28 basic/patterns/mrtr) the input travels in
#: ``input_required`` and the retry, and no request is open while the human thinks.
HUMAN_WAIT_METHODS: frozenset[str] = frozenset({"elicitation/create", "sampling/createMessage"})



class _NoLock:
    """The lock of a session driven from one thread (asyncio, trio): does nothing."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


NO_LOCK: AbstractContextManager[Any] = _NoLock()


# -- the session: pump bookkeeping shared by both roles ----------------------------------------


class Runtime(Protocol):
    """What the pump asks of a runtime object (``session.runtime``): the clocks, the one
    timer, the output, and stepping the handlers started while dispatching (``_eager``).
    Each runtime's object offers more (jobs, waiters: docs/architecture.rst); the role and
    colour classes ask for that through their own annotation of ``runtime``."""

    def now(self) -> float: ...
    def wall_now(self) -> float | None: ...
    def arm(self, deadline: float | None) -> None: ...
    def write(self, data: bytes) -> None: ...
    def run_eager(self) -> None: ...


class Link(Protocol):
    """What ties a session to the transport that drains its connection itself, held as
    ``session.link``: the HTTP server (:class:`~.http_service.HTTPLink`) or, for a client,
    the HTTP client (:class:`ClientLink`). ``service()`` hands over to it; a server-wide
    notification a handler sends is broadcast through it; ``auth`` is who the latest
    request spoke for (a server's notion: None on a client's link)."""

    @property
    def auth(self) -> Any: ...
    def service(self) -> None: ...
    def broadcast(self, method: str, params: Mapping[str, Any] | None) -> bool: ...


class ClientLink(Link, Protocol):
    """What ties a client to the transport that drains its connection itself (over HTTP:
    :class:`~.http_client.HTTPClientLink`), held as ``client.link``: besides ``service()``,
    the timer, the keepalive's close, the connect's transport failure, and the events the
    client does not know (the HTTP client's own); the HTTP facts the client shows."""

    http: HTTPClient
    session_renewals: int
    connections_opened: int

    def on_timer(self) -> None: ...
    def keepalive_close(self) -> None: ...
    def check_connect(self) -> None: ...
    def on_event(self, event: Event) -> None: ...


class _NoRuntime:
    """The runtime of a session that overrides the hooks instead of holding one (an
    embedder's pump, a test's virtual session): no wall clock, and nothing else."""

    __slots__ = ()

    def wall_now(self) -> float | None:
        return None

    def now(self) -> float:  # pragma: no cover - a hook left neither held nor overridden
        raise NotImplementedError("this session holds no runtime: override _now")

    def arm(self, deadline: float | None) -> None:  # pragma: no cover - as above
        raise NotImplementedError("this session holds no runtime: override _arm")

    def write(self, data: bytes) -> None:  # pragma: no cover - as above
        raise NotImplementedError("this session holds no runtime: override _write")

    def run_eager(self) -> None:  # pragma: no cover - only runtimes that fill _eager
        raise NotImplementedError("this session holds no runtime: override _run_eager")


_NO_RUNTIME = _NoRuntime()


class Session:
    """The runtime-independent half of one connection's pump.

    The runtime's primitives come from the runtime object the session holds
    (``runtime``: a :class:`Runtime`); the role classes implement
    ``_spawn_incoming(request)`` and ``_cancel_incoming(request_id)``.
    """

    conn: Connection
    #: The runtime object, set by the colour class before ``__init__`` (a session that
    #: overrides the hooks instead holds a stand-in with no wall clock).
    runtime: Runtime

    def __init__(self, conn: Connection, *, keepalive: float | None = None,
                 keepalive_misses: int = DEFAULT_MAX_MISSED, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if getattr(self, "runtime", None) is None:
            # Not a class default: ``runtime`` stays out of the public names of the class.
            self.runtime = _NO_RUNTIME
        self.conn = conn
        #: What drains this connection itself (HTTP, either role), or None: see :class:`Link`.
        self.link: Link | None = None
        #: The ping schedule (:mod:`._keepalive`), when ``keepalive`` (seconds) was given.
        self.keepalive: Keepalive | None = (
            Keepalive(keepalive, keepalive_misses) if keepalive is not None else None)
        self._calls: dict[RequestId, Call] = {}
        self._servicing = False
        #: Handlers started while dispatching, first stepped once the events are drained
        #: (so a cancellation read in the same chunk still stops one before it runs).
        self._eager: dict[RequestId, Any] = {}
        self.closed: ConnectionClosed | None = None
        #: Set by the adapter when the transport says why it ended (e.g. an exit status).
        self.transport_detail: str | None = None
        #: Called once the session has closed (a tuple, replaced on change: the empty one is
        #: shared by every session, an empty list is not).
        self._on_closed: tuple[Callable[[], None], ...] = ()
        #: Held around every use of the connection (a real lock only on threads).
        self.lock: AbstractContextManager[Any] = NO_LOCK

    # -- hooks: the runtime object's primitives ---------------------------------------------
    #
    # Each delegates once, here, to ``self.runtime`` (one attribute hop on the hot path). A
    # session driven without a runtime object (``mcp_sansio.adapters.pump``), or whose
    # connection is drained by an HTTP server, overrides the hook instead.

    def _write(self, data: bytes) -> None:
        self.runtime.write(data)

    def _arm(self, deadline: float | None) -> None:
        self.runtime.arm(deadline)

    def _now(self) -> float:
        return self.runtime.now()

    def _wall_now(self) -> float | None:
        """The wall clock (seconds since the epoch) for what the connection writes down for
        another process to read -- a sealed ``requestState``'s expiry (docs/keys.rst); None
        where the runtime gives none (the connection then uses ``now``, one host only)."""
        return self.runtime.wall_now()

    def _run_eager(self) -> None:
        self.runtime.run_eager()

    def _spawn_incoming(self, request: Request) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _cancel_incoming(self, request_id: RequestId) -> None:  # pragma: no cover
        raise NotImplementedError

    # -- the pump ----------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Bytes from the peer (``b""``: end of file)."""
        with self.lock:
            now = self._now()
            self.conn.receive_data(data, now=now, wall_now=self._wall_now())
            self.conn.handle_timeout(now)
            self.service()

    def on_timer(self) -> None:
        """The deadline the adapter armed has passed."""
        with self.lock:
            self.conn.handle_timeout(self._now())
            self.service()

    def service(self) -> None:
        """Drain events (dispatching each), then the outbox, then re-arm the timer."""
        if self._servicing:
            return  # the outer call's loop picks up whatever we were called for
        link = self.link
        if link is not None:
            # The HTTP server drains the connection (and owns every timer): hand over.
            link.service()
            return
        self._servicing = True
        conn = self.conn
        try:
            self._drain(conn.next_event)
            if self.keepalive is not None:  # after the events: the handshake may be done
                self._keepalive_step()
            data = conn.data_to_send()
        finally:
            self._servicing = False
        if data:
            self._write(data)
        if self.keepalive is None:  # the hot path: one attribute test, no extra call
            self._arm(None if self.closed else conn.next_deadline())
        else:
            self._arm(None if self.closed else self._next_deadline())

    def _drain(self, next_event: Callable[[], Event | NeedData]) -> None:
        """Dispatch every event ``next_event`` gives (the connection's, or the HTTP
        client's), running eager handlers whenever it runs dry: they may send, which may
        make more events. The one drain loop of both pumps."""
        while True:
            event = next_event()
            if event is NEED_DATA:
                if not self._eager:
                    return
                self._run_eager()  # may send: drain again, then write once
                continue
            self._dispatch(event)

    def _next_deadline(self) -> float | None:
        """The core's next deadline, or the next keepalive ping's if that is sooner."""
        deadline = self.conn.next_deadline()
        if self.keepalive is not None:
            ping = self.keepalive.deadline()
            if ping is not None and (deadline is None or ping < deadline):
                return ping
        return deadline

    # -- keepalive ---------------------------------------------------------------------------

    def _keepalive_step(self) -> None:
        """Send the keepalive ping when it is due (see :mod:`._keepalive`). Handshake era,
        once operating: 2026-07-28 has no ping."""
        keepalive = self.keepalive
        conn = self.conn
        assert keepalive is not None
        if self.closed is not None or conn.state is not State.OPERATING or (
                conn.era is not Era.HANDSHAKE):
            return
        now = self._now()
        keepalive.start(now)
        if not keepalive.due(now):
            return
        request_id = conn.send_request("ping", None, now=now, timeout=keepalive.interval,
                                       max_total=None)
        call = Call("ping", request_id, None)
        call.wake = lambda: self._keepalive_ended(call)
        self._calls[request_id] = call
        keepalive.sent(now)

    def _keepalive_ended(self, call: Call) -> None:
        """The keepalive ping ended: an answer (even an error) means the peer is alive."""
        keepalive = self.keepalive
        assert keepalive is not None
        if isinstance(call.event, RequestTimedOut):
            if keepalive.missed():
                self.transport_detail = (
                    f"the peer left {keepalive.misses} keepalive pings in a row unanswered")
                log.warning("closing: %s", self.transport_detail)
                self._keepalive_close()
        elif isinstance(call.event, (Response, ErrorResponse)):
            keepalive.answered()
        else:  # aborted by the close, cancelled: no verdict on the peer
            keepalive.in_flight = False

    def _keepalive_close(self) -> None:
        """Close after too many missed pings (the HTTP client also ends its streams)."""
        self.conn.close(now=self._now())

    # -- events ------------------------------------------------------------------------------

    def _dispatch(self, event: Event) -> None:
        if type(event) is Request:  # (the common event: one exact-type test)
            self._spawn_incoming(event)
            return
        request_id = getattr(event, "request_id", None)
        if isinstance(event, Progress):
            call = self._calls.get(event.request_id)
            if call is not None and call.on_progress is not None:
                self._callback(call.on_progress, event.progress, event.total, event.message)
        elif isinstance(event, Request):
            self._spawn_incoming(event)
        elif isinstance(event, CancelRequested):
            self._cancel_incoming(event.request_id)
        elif event.TERMINAL:  # the one event ending a request we sent (core's marker)
            call = self._calls.pop(request_id, None) if request_id is not None else None
            if call is not None:
                call.event = event
                call.wake()
        elif isinstance(event, ConnectionClosed):
            self.closed = event
            self._on_connection_closed(event)
            for callback in self._on_closed:
                callback()
        elif isinstance(event, MessageRejected):
            self._on_rejected(event)
        elif isinstance(event, (LateResponse, UnexpectedResponse)):
            log.debug("%r", event)
        else:
            self._on_event(event)

    def _on_rejected(self, event: MessageRejected) -> None:
        """The core answered (or dropped) something the peer broke a rule with."""
        log.debug("%r", event)

    def _on_event(self, event: Event) -> None:
        """Role-specific events (Initialized, Notification, SubscriptionAcknowledged)."""

    def _on_connection_closed(self, event: ConnectionClosed) -> None:
        """Role-specific reaction to the close."""

    def _callback(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run a user callback from the pump; an async one is handed to the runtime."""
        try:
            result = fn(*args)
        except Exception:
            log.exception("a callback raised")
            return
        if inspect.isawaitable(result):
            self._spawn_awaitable(result)

    def _spawn_awaitable(self, awaitable: Awaitable[Any]) -> None:  # pragma: no cover
        raise TypeError("this runtime does not run async callbacks")

    # -- requests we send --------------------------------------------------------------------

    def _closed_detail(self) -> str:
        """Why the connection is closed, in words, for the errors pending calls raise."""
        parts = []
        if self.closed is not None:
            parts.append(self.closed.detail or self.closed.reason.value)
        if self.transport_detail:
            parts.append(self.transport_detail)
        return "; ".join(parts) or "the connection is closed"

    def _start_call(
        self, method: str, params: Mapping[str, Any] | None, *, timeout: Any = DEFAULT,
        max_total: Any = DEFAULT, on_progress: ProgressCallback | None = None,
        related_request_id: RequestId | None = None,
    ) -> Call:
        """Send a request and register the call that will receive its terminal event."""
        options: dict[str, Any] = {}
        if timeout is not DEFAULT:
            options["timeout"] = timeout
        if max_total is not DEFAULT:
            options["max_total"] = max_total
        with self.lock:
            if self.closed is not None:
                raise ConnectionClosedError(f"{method}: {self._closed_detail()}")
            request_id = self.conn.send_request(
                method, params, now=self._now(), progress=on_progress is not None,
                related_request_id=related_request_id, **options)
            call = Call(method, request_id, on_progress)
            self._calls[request_id] = call
            if method in HUMAN_WAIT_METHODS:
                # The human-wait clock (see HUMAN_WAIT_METHODS): the core keeps the time
                # left; nothing resumes it, the answer (or the close) ends the request.
                self.conn.pause_timeout(request_id, now=self._now())
            self.service()
        return call

    def _retry_call(self, call: Call, responses: Mapping[str, Any]) -> Call:
        """Answer an ``InputRequired`` and go on under the retry's id."""
        assert isinstance(call.event, InputRequired)
        conn = self.conn
        assert isinstance(conn, ClientConnection)
        with self.lock:
            if self.closed is not None:
                raise ConnectionClosedError(f"{call.method}: {self._closed_detail()}")
            request_id = conn.retry_with_input(call.request_id, responses, now=self._now())
            retry = Call(call.method, request_id, call.on_progress)
            self._calls[request_id] = retry
            self.service()
        return retry

    def _cancel_call(self, call: Call, reason: str = "cancelled by the caller") -> None:
        """The waiting caller gave up: cancel the request (``notifications/cancelled``)."""
        with self.lock:
            if call.done or self.closed is not None:
                self._calls.pop(call.request_id, None)
                return
            try:
                self.conn.cancel(call.request_id, reason, now=self._now())
            except LocalProtocolError:  # already ended (initialize, or a race with close)
                self._calls.pop(call.request_id, None)
            self.service()

    # -- requests we answer ------------------------------------------------------------------

    def _finish_request(
        self, request_id: RequestId, result: dict[str, Any] | None = None,
        error: BaseException | None = None, method: str = "",
    ) -> None:
        """Send the outcome of a handler (or a callback answering the server)."""
        with self.lock:
            if self.closed is None:
                self._finish_incoming(request_id, result, error, method)
                self.service()

    def _finish_incoming(
        self, request_id: RequestId, result: dict[str, Any] | None,
        error: BaseException | None, method: str,
    ) -> None:
        conn = self.conn
        try:
            if error is None:
                conn.send_response(request_id, result or {})
            elif isinstance(error, McpError):
                conn.send_error(request_id, error.code, error.message, error.data)
            elif isinstance(error, InputRequiredSignal):
                assert isinstance(conn, ServerConnection)
                conn.send_input_required(request_id, error.input_requests,
                                         error.request_state)
            elif isinstance(error, MissingCapability):
                assert isinstance(conn, ServerConnection)
                if conn.era is Era.STATELESS:
                    conn.require_client_capabilities(request_id, error.required)
                else:
                    conn.send_error(request_id, ErrorCode.INVALID_REQUEST,
                                    f"Invalid Request: {error}")
            else:
                # DESIGN.md, Errors: generic message, never the exception text; logged.
                log.error("handler for %s (request %r) failed", method or "?", request_id,
                          exc_info=error)
                conn.send_error(request_id, ErrorCode.INTERNAL_ERROR, "Internal error")
        except LocalProtocolError:
            # e.g. a result JSON cannot carry, or one the core refuses: answer generically.
            log.exception("could not send the answer to %s (request %r)", method, request_id)
            with suppress(LocalProtocolError):
                conn.send_error(request_id, ErrorCode.INTERNAL_ERROR, "Internal error")


# -- the client logic --------------------------------------------------------------------------


#: Requests only a client sends in every revision (the core's method table): one arriving
#: at a client is its own request sent back by a peer that echoes its input.
SERVER_NEVER_SENDS: frozenset[str] = frozenset(
    rule.method for rule in _capabilities.METHODS
    if rule.kind is _capabilities.Kind.REQUEST and rule.method not in {
        r.method for r in _capabilities.METHODS if r.sender is not _capabilities.Sender.CLIENT})

#: What :attr:`ClientLogic.on_step` is told when the connect enters a state.
_CONNECT_STEPS: dict[State, str] = {
    # 2026-07-28 basic/lifecycle: a client that does not know the server's era asks
    # server/discover first; a handshake-era server answers it with an error.
    State.PROBING: "trying discovery (server/discover, the 2026-07-28 era)",
    State.INITIALIZING: "trying initialize (the handshake era)",
}


class Answering:
    """A callback answering one of the server's requests (handshake era: sampling,
    elicitation, roots) as a ``with`` block whose body sets :attr:`value`: our requests'
    clocks pause around it (:meth:`ClientLogic._human_wait`) and leaving it answers the
    request -- with the value, or with the :class:`Exception` the body raised."""

    __slots__ = ("logic", "request", "value")

    def __init__(self, logic: ClientLogic, request: Request) -> None:
        self.logic = logic
        self.request = request
        self.value: Any = None

    def __enter__(self) -> Answering:
        self.logic._human_wait(self.request, True)
        return self

    def __exit__(self, kind: object, exc: BaseException | None, trace: object) -> bool:
        logic, request = self.logic, self.request
        if isinstance(exc, Exception):
            logic._finish_request(request.request_id, error=exc, method=request.method)
        logic._human_wait(request, False)
        if exc is None:
            logic._finish_request(request.request_id, self.value, method=request.method)
        return isinstance(exc, Exception)


class ClientLogic(Session):
    """Client behaviour shared by every runtime: handshake outcome, notifications, listen
    streams, and answering the server's input requests with the user's callbacks."""

    conn: ClientConnection
    #: The transport that drains the connection itself (HTTP), or None (stdio, a pump).
    link: ClientLink | None

    def __init__(
        self, conn: ClientConnection, *,
        sampling: Callable[[dict[str, Any]], Any] | None = None,
        elicitation: Callable[[dict[str, Any]], Any] | None = None,
        roots: Callable[[dict[str, Any]], Any] | list[dict[str, Any]] | None = None,
        on_notification: Callable[[Notification], Any] | None = None,
        on_log: Callable[[dict[str, Any]], Any] | None = None,
        capabilities: Mapping[str, Any] | None = None, **kwargs: Any,
    ) -> None:
        super().__init__(conn, **kwargs)
        self.callbacks: dict[str, Any] = {
            "sampling": sampling, "elicitation": elicitation, "roots": roots}
        #: What this client declared it offers (``capabilities=`` merged with what the
        #: callbacks imply, checked: :mod:`._client_capabilities`), or None when the
        #: connection's own ``capabilities`` are sent as they are (a connection built by
        #: hand). Each message carries it as the revision in force can express it.
        self.declared_capabilities: dict[str, Any] | None = None
        if capabilities is not None:
            self.declared_capabilities = declare(conn.capabilities, capabilities,
                                                 self.callbacks)
            self._offer_capabilities(self._first_offer(None))
        self.on_notification = on_notification
        self.on_log = on_log
        self.initialized: Initialized | None = None
        self._ready_wakers: list[Callable[[], None]] = []
        self._listeners: dict[RequestId, Listener] = {}
        #: Called with a short sentence at each step of the connect (the era probe, the
        #: fallback to ``initialize``) and when the server sends something telling (not
        #: JSON; our own requests echoed back): what a command line shows while it waits.
        self.on_step: Callable[[str], None] | None = None
        #: The method of our own request the server sent back to us, if it did.
        self.echoed: str | None = None
        self._stepped: State | None = None
        #: How many of the server's human-wait requests (HUMAN_WAIT_METHODS) our callbacks
        #: are answering now; while above zero, our own requests' clocks are paused.
        self._human_waits = 0
        #: Tasks we follow, by id, until terminal (``notifications/tasks/status`` updates
        #: them: 2025-11-25 basic/utilities/tasks).
        self._client_tasks: dict[str, ClientTask] = {}
        self._on_transport_event: Callable[[Event], Any] | None = None
        self._auth: Any = None

    # -- what the server told in the handshake -------------------------------------------

    @property
    def era(self) -> Era | None:
        """The era the connection negotiated (None before :meth:`connect`)."""
        return self.conn.era

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol revision, e.g. ``"2026-07-28"``."""
        return self.conn.protocol_version

    @property
    def server_info(self) -> dict[str, Any]:
        """The server's ``serverInfo`` (name, version, ...)."""
        return self.conn.peer_info

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The capabilities the server declared."""
        return self.conn.peer_capabilities

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions``, if it gave any."""
        return self.conn.instructions

    # -- the HTTP facts: meaningful over HTTP (``link``), neutral otherwise ------------------

    @property
    def http(self) -> HTTPClient | None:
        """The sans-IO :class:`~mcp_sansio.http.HTTPClient` carrying the connection (None
        when not over HTTP)."""
        link = self.link
        return link.http if link is not None else None

    @property
    def transport(self) -> Transport | None:
        """The HTTP transport in use once known (streamable, or legacy HTTP+SSE); None when
        not over HTTP."""
        link = self.link
        return link.http.transport if link is not None else None

    @property
    def session_id(self) -> str | None:
        """The handshake era's ``Mcp-Session-Id`` over HTTP (None in the stateless era,
        and when not over HTTP)."""
        link = self.link
        return link.http.session_id if link is not None else None

    @property
    def session_renewals(self) -> int:
        """How many times the HTTP server forgot the session and a new one was made (0
        when not over HTTP)."""
        link = self.link
        return link.session_renewals if link is not None else 0

    @property
    def connections_opened(self) -> int:
        """TCP connections opened so far over HTTP (keep-alive reuses them; 0 when not
        over HTTP)."""
        link = self.link
        return link.connections_opened if link is not None else 0

    @property
    def on_transport_event(self) -> Callable[[Event], Any] | None:
        """Called with each :class:`~mcp_sansio.http.SessionRenewed` and
        :class:`~mcp_sansio.http.TransportFailed` of an HTTP client (a plain or async
        function; settable; None: nobody is told, and never called when not over HTTP)."""
        return self._on_transport_event

    @on_transport_event.setter
    def on_transport_event(self, callback: Callable[[Event], Any] | None) -> None:
        self._on_transport_event = callback

    @property
    def auth(self) -> Any:
        """The authorization hook of an HTTP client made with ``connect_http(auth=...)``
        (its token, its flow; see ``mcp_sansio.adapters.auth``), else None."""
        return self._auth

    @auth.setter
    def auth(self, auth: Any) -> None:
        self._auth = auth

    @classmethod
    def _create(
        cls, *, sampling: Callable[[dict[str, Any]], Any] | None = None,
        elicitation: Callable[[dict[str, Any]], Any] | None = None,
        roots: Callable[[dict[str, Any]], Any] | list[dict[str, Any]] | None = None,
        on_notification: Callable[[Notification], Any] | None = None,
        on_log: Callable[[dict[str, Any]], Any] | None = None,
        info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None, keepalive: float | None = None,
        keepalive_misses: int = DEFAULT_MAX_MISSED, **connection_options: Any,
    ) -> Self:
        """A client on a fresh :class:`ClientConnection` that declares what the callbacks
        make true, plus ``capabilities`` (see :func:`._client_capabilities.declare`);
        ``keepalive`` pings the server every so many seconds (handshake era; see
        :mod:`._keepalive`), closing after ``keepalive_misses`` unanswered in a row;
        ``connection_options`` go to the connection."""
        conn = ClientConnection(
            info=info or default_client_info(),
            capabilities=cls._capabilities_for(sampling, elicitation, roots),
            **connection_options,
        )
        return cls(conn, sampling=sampling, elicitation=elicitation, roots=roots,
                   on_notification=on_notification, on_log=on_log,
                   capabilities=capabilities or {}, keepalive=keepalive,
                   keepalive_misses=keepalive_misses)

    def _first_offer(self, era: Era | None) -> str:
        """The revision the connect's first message offers: the newest stateless one when
        it probes (``server/discover``), else the newest handshake one (``initialize``)."""
        conn = self.conn
        stateless = [v for v in conn.versions if v in STATELESS_REVISIONS]
        handshake = [v for v in conn.versions if v in HANDSHAKE_REVISIONS]
        if stateless and (era is not Era.HANDSHAKE or not handshake):
            return max(stateless)  # revisions are dates: the newest sorts last
        return max(handshake or list(conn.versions))

    def _offer_capabilities(self, revision: str | None) -> None:
        """Put on the connection what we declared, as ``revision`` can express it (a new
        dict: a message already queued keeps the one it was built with)."""
        if self.declared_capabilities is not None and revision is not None:
            self.conn.capabilities = for_revision(self.declared_capabilities, revision)

    @staticmethod
    def _capabilities_for(
        sampling: object, elicitation: object, roots: object,
    ) -> dict[str, Any]:
        """The client capabilities the given callbacks make true."""
        caps: dict[str, Any] = {}
        if sampling is not None:
            caps["sampling"] = {}
        if elicitation is not None:
            caps["elicitation"] = {"form": {}}
        if roots is not None:
            caps["roots"] = {"listChanged": False}
        return caps

    def service(self) -> None:
        super().service()  # over HTTP: the link's pump
        if self.on_step is not None:
            self._note_step()

    def on_timer(self) -> None:
        """The deadline the runtime armed has passed."""
        link = self.link
        if link is not None:
            link.on_timer()  # the HTTP client's timeouts as well as the connection's
        else:
            super().on_timer()

    def _keepalive_close(self) -> None:
        link = self.link
        if link is not None:
            link.keepalive_close()  # its streams end too, and a DELETE goes out
        else:
            super()._keepalive_close()

    def _note_step(self) -> None:
        """Tell :attr:`on_step` when the connect moved on (the state is compared after each
        pump turn: the fallback from the probe to ``initialize`` raises no event)."""
        state = self.conn.state
        if state is not self._stepped:
            self._stepped = state
            note = _CONNECT_STEPS.get(state)
            if note is not None and self.on_step is not None:
                self.on_step(note)

    def _on_rejected(self, event: MessageRejected) -> None:
        super()._on_rejected(event)
        # A request only clients send, arriving at a client, is refused by the core (the
        # method table) and lands here: it can only be one of ours sent back to us.
        method = event.method
        if method in SERVER_NEVER_SENDS and self.echoed is None:
            self.echoed = method  # `cat`, or any program that echoes its input
            if self.on_step is not None:
                self.on_step(f"the server sent our own {method} request back to us: it "
                             "echoes its input instead of answering")
        elif self.on_step is not None and event.code == ErrorCode.PARSE_ERROR:
            self.on_step("the server sent something that is not JSON (on stdio: a line on "
                         "its stdout that is not a message; servers log on stderr)")

    def _on_event(self, event: Event) -> None:
        if isinstance(event, Initialized):
            # The revision is settled: from now on we declare what it can express.
            self._offer_capabilities(self.conn.protocol_version)
            self.initialized = event
            self._wake_ready()
        elif isinstance(event, SubscriptionAcknowledged):
            listener = self._listeners.get(event.request_id)
            if listener is not None:
                listener.acknowledged = event.notifications
                listener.wake()
        elif isinstance(event, Notification):
            self._on_notification(event)
        elif self.link is not None:
            self.link.on_event(event)  # the HTTP client's own (TransportFailed, ...)

    def _follow_task(self, task: ClientTask) -> ClientTask:
        """Follow a task just created: status changes call its ``on_status`` (on this
        runtime) and notifications about it update it."""
        if task.on_status is not None:
            callback = task.on_status
            task._emit = lambda: self._callback(callback, task)
            if task.task_id:
                self._callback(callback, task)  # its first status
        if task.task_id and not task.terminal:
            self._client_tasks[task.task_id] = task
        return task

    def _task_notified(self, params: Mapping[str, Any]) -> None:
        """``notifications/tasks/status`` (2025-11-25): the Task of a status change."""
        task_id = params.get("taskId")
        task = self._client_tasks.get(task_id) if isinstance(task_id, str) else None
        if task is not None:
            task.update(params)
            if task.terminal:
                del self._client_tasks[task.task_id]

    def _on_notification(self, event: Notification) -> None:
        if event.method == "notifications/tasks/status":
            self._task_notified(event.params or {})
        meta = (event.params or {}).get("_meta")
        sub_id = meta.get("io.modelcontextprotocol/subscriptionId") if isinstance(
            meta, dict) else None
        listener = self._listeners.get(sub_id) if isinstance(sub_id, str | int) else None
        if listener is not None:
            listener.items.append(event)
            listener.wake()
            return
        if event.method == "notifications/message" and self.on_log is None:
            params = event.params or {}
            level = _PY_LEVELS.get(str(params.get("level")), logging.INFO)
            logging.getLogger(f"mcp_sansio.peer.{params.get('logger') or 'server'}").log(
                level, "%s", params.get("data"))
        elif event.method == "notifications/message" and self.on_log is not None:
            self._callback(self.on_log, event.params or {})
        if self.on_notification is not None:
            self._callback(self.on_notification, event)

    def _on_connection_closed(self, event: ConnectionClosed) -> None:
        self._wake_ready()
        for listener in self._listeners.values():
            listener.wake()
        self._listeners.clear()

    def _wake_ready(self) -> None:
        wakers, self._ready_wakers = self._ready_wakers, []
        for wake in wakers:
            wake()

    def _start_connect(self, era: Era | None) -> bool:
        """Send initialize or the era probe; True when already connected."""
        with self.lock:
            if self.initialized is not None:
                return True
            if self.closed is not None:
                raise ConnectionClosedError(f"could not connect: {self._closed_detail()}")
            conn = self.conn
            if conn.state is State.IDLE:
                self._offer_capabilities(self._first_offer(era))
                conn.connect(now=self._now(), era=era)
                if self._probing():
                    # The probe went out; if it fails the core falls back to initialize,
                    # which then offers the newest handshake revision.
                    handshake = [v for v in conn.versions if v in HANDSHAKE_REVISIONS]
                    if handshake:
                        self._offer_capabilities(max(handshake))
                self.service()
        return False

    def _probing(self) -> bool:
        # A method, not an inline test: the state changed under a call that type checkers
        # cannot see into.
        return self.conn.state is State.PROBING

    def _connect_outcome(self) -> Initialized:
        if self.initialized is not None:
            return self.initialized
        if self.link is not None:
            self.link.check_connect()  # an HTTP failure is told as one
        if self.echoed is not None:
            raise ConnectionClosedError(
                f"could not connect: the server sent our own {self.echoed} request back "
                "(it echoes its input: not an MCP server)")
        raise ConnectionClosedError(f"could not connect: {self._closed_detail()}")

    def _human_wait(self, request: Request, begin: bool) -> None:
        """Pause (``begin``) or resume the clocks of our requests in flight around a
        callback answering one of the server's human-wait requests (``HUMAN_WAIT_METHODS``).

        The server's request does not say which of ours it serves (the handshake era has no
        such field on stdio), so every request of ours still in flight pauses; they resume
        with the time they had left once the last such callback has answered. A request we
        send meanwhile keeps its clock: it does not wait on this human."""
        if request.method not in HUMAN_WAIT_METHODS:
            return
        with self.lock:
            if self.closed is not None:
                return
            self._human_waits += 1 if begin else -1
            if self._human_waits != (1 if begin else 0):
                return  # only the first to begin pauses, only the last to end resumes
            now = self._now()
            step = self.conn.pause_timeout if begin else self.conn.resume_timeout
            for request_id, call in list(self._calls.items()):
                if call.method == "ping":
                    continue  # a keepalive ping is answered by software, not the human
                with suppress(LocalProtocolError):  # ended meanwhile: nothing to pause
                    step(request_id, now=now)
            self.service()  # the next deadline moved: re-arm

    def _input_callback(self, method: str) -> Callable[[dict[str, Any]], Any]:
        """The user callback that answers a server's ``method`` request."""
        entry = INPUT_METHODS.get(method)
        callback = self.callbacks.get(entry[1]) if entry else None
        if callback is None:
            raise McpError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}")
        if isinstance(callback, list):
            roots = list(callback)
            return lambda _params: {"roots": roots}
        return callback  # type: ignore[no-any-return]

    @staticmethod
    def _input_items(event: InputRequired) -> Iterator[tuple[str, str, dict[str, Any]]]:
        for key, item in event.input_requests.items():
            method = item.get("method") if isinstance(item, dict) else None
            params = item.get("params") if isinstance(item, dict) else None
            yield key, str(method), params if isinstance(params, dict) else {}

    def _start_listen(self, notifications: Mapping[str, Any], timeout: Any = None) -> Listener:
        """Open a ``subscriptions/listen`` stream (stateless era)."""
        with self.lock:
            if self.closed is not None:
                raise ConnectionClosedError(f"subscriptions/listen: {self._closed_detail()}")
            request_id = self.conn.listen(notifications, now=self._now(), timeout=timeout)
            call = Call("subscriptions/listen", request_id, None)
            listener = Listener(call)
            call.wake = listener.on_wake
            self._calls[request_id] = call
            self._listeners[request_id] = listener
            self.service()
        return listener


class Listener:
    """A ``subscriptions/listen`` stream on the client: the acknowledged filter, then the
    notifications that arrive on it, until its call ends. The runtime wraps it in an
    iterator; ``wake`` is its waiter."""

    __slots__ = ("acknowledged", "call", "items", "wake")

    def __init__(self, call: Call) -> None:
        self.call = call
        self.acknowledged: dict[str, Any] | None = None
        self.items: deque[Notification] = deque()
        self.wake: Callable[[], None] = _nothing

    def on_wake(self) -> None:
        self.wake()

    @property
    def ended(self) -> bool:
        return self.call.done


_PY_LEVELS = {
    "debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO,
    "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
    "alert": logging.CRITICAL, "emergency": logging.CRITICAL,
}


def page_params(cursor: str | None) -> dict[str, Any] | None:
    return {"cursor": cursor} if cursor else None


def next_cursor(result: Mapping[str, Any], seen: set[str]) -> str | None:
    """The cursor of the next page, or None (also when a server repeats a cursor)."""
    cursor = result.get("nextCursor")
    if not isinstance(cursor, str) or not cursor or cursor in seen:
        return None
    seen.add(cursor)
    return cursor


def default_client_info() -> dict[str, Any]:
    from mcp_sansio import __version__
    return {"name": "mcp-sansio", "version": __version__}
