"""What every runtime adapter shares: the pump's bookkeeping, the high-level Client and
Server logic, and the mapping between core events and application outcomes.

Theory of operation
-------------------
A runtime adapter (``asyncio``, ``trio``, ``threading``) owns the I/O: it reads bytes, hands
them to :meth:`Session.feed`, and writes what :meth:`Session.service` gives to its
``_write``. It also arms one timer (``_arm``) for the core's next deadline, starts tasks
(``_spawn``) and wakes waiters (``Call.wake``). Everything else is here, written once and
free of any runtime:

* :meth:`Session.service` is the pump's middle: drain ``next_event()`` until ``NEED_DATA``,
  dispatch each event, then drain the outbox into one write and re-arm the timer. It is
  re-entrant safe (a send made while dispatching is picked up by the same loop).
* Requests we send are :class:`Call` objects keyed by request id. Their terminal event is
  stored on the call and the waiter is woken; :func:`outcome` turns it into a result or an
  exception. An ``InputRequired`` terminal is answered by the same user callbacks that answer
  a handshake-era server's requests, and the call goes on under the retry's id.
* The :class:`Server` is a registry (tools, resources, templates, prompts, completions) and a
  router: :meth:`Server._route` turns a ``Request`` event into a :class:`Job` (the function to
  run, its arguments, and how to shape its return value into a result). Runtimes only run the
  job and hand the outcome to :meth:`Session._finish_request`.

No protocol decision is made here either: lifecycle, gating, timeouts, cancellation and MRTR
state all live in the core. This module decides application matters only (which handler, how
a Python return value becomes a result).
"""

from __future__ import annotations

import base64
import inspect
import json
import logging
import re
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager, suppress
from typing import TYPE_CHECKING, Any, NoReturn, Self, cast

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

__all__ = [
    "DEFAULT",
    "HUMAN_WAIT_METHODS",
    "INPUT_METHODS",
    "Call",
    "ConnectionClosedError",
    "Context",
    "InputRequiredSignal",
    "Job",
    "McpError",
    "MissingCapability",
    "ProgressCallback",
    "RequestCancelledError",
    "RequestTimeout",
    "ResultRejected",
    "Server",
    "Session",
    "ToolError",
    "outcome",
    "secret_prefix",
]

from mcp_sansio.app.errors import (
    Call,
    ConnectionClosedError,
    InputRequiredSignal,
    McpError,
    MissingCapability,
    ProgressCallback,
    RequestCancelledError,
    RequestTimeout,
    ResultRejected,
    ToolError,
    _nothing,
    outcome,
    secret_prefix,
)

from ._client_capabilities import declare, for_revision
from ._keepalive import DEFAULT_MAX_MISSED, Keepalive

if TYPE_CHECKING:
    from mcp_sansio.auth import AccessInfo

    from ._client_tasks import ClientTask
    from ._tasks import Tasks

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


class Session:
    """The runtime-independent half of one connection's pump.

    Subclasses (one per runtime) implement ``_write(data)``, ``_arm(deadline)``,
    ``_now()``, ``_spawn_incoming(request, job_or_none)`` and ``_cancel_incoming(rid)``.
    """

    conn: Connection

    def __init__(self, conn: Connection, *, keepalive: float | None = None,
                 keepalive_misses: int = DEFAULT_MAX_MISSED, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.conn = conn
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
        self._on_closed: list[Callable[[], None]] = []
        #: Held around every use of the connection (a real lock only on threads).
        self.lock: AbstractContextManager[Any] = NO_LOCK

    # -- hooks the runtime implements ------------------------------------------------------

    def _write(self, data: bytes) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _arm(self, deadline: float | None) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _now(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def _spawn_incoming(self, request: Request) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _cancel_incoming(self, request_id: RequestId) -> None:  # pragma: no cover
        raise NotImplementedError

    def _run_eager(self) -> None:  # pragma: no cover - only runtimes that fill _eager
        raise NotImplementedError

    # -- the pump ----------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Bytes from the peer (``b""``: end of file)."""
        with self.lock:
            now = self._now()
            self.conn.receive_data(data, now=now)
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
        self._servicing = True
        conn = self.conn
        try:
            while True:
                event = conn.next_event()
                if event is NEED_DATA:
                    if not self._eager:
                        break
                    self._run_eager()  # may send: drain again, then write once
                    continue
                self._dispatch(event)
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


class ClientLogic(Session):
    """Client behaviour shared by every runtime: handshake outcome, notifications, listen
    streams, and answering the server's input requests with the user's callbacks."""

    conn: ClientConnection

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
        super().service()
        if self.on_step is not None:
            self._note_step()

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


# -- the server: registry and router -----------------------------------------------------------


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
               dict: "object", list: "array"}


def _schema_from_signature(fn: Callable[..., Any]) -> dict[str, Any]:
    """A plain JSON Schema for a handler's keyword arguments (``ctx`` excluded)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except Exception:  # unresolvable annotations: fall back to untyped properties
        hints = {}
    for name, param in inspect.signature(fn).parameters.items():
        if name == "ctx" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        json_type = _JSON_TYPES.get(hints.get(name))  # type: ignore[arg-type]
        properties[name] = {"type": json_type} if json_type else {}
        if param.default is param.empty:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


class _Signature:
    """What binding needs to know of a handler's signature, worked out once per handler
    (``inspect.signature`` is far too slow for every request)."""

    __slots__ = ("names", "required", "var_keyword", "wants_ctx")

    def __init__(self, fn: Callable[..., Any]) -> None:
        params = inspect.signature(fn).parameters
        named = [p for p in params.values()
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "ctx"]
        self.wants_ctx = "ctx" in params
        self.var_keyword = any(p.kind is p.VAR_KEYWORD for p in params.values())
        self.names = frozenset(p.name for p in named)
        self.required = tuple(p.name for p in named if p.default is p.empty)


_SIGNATURES: dict[Callable[..., Any], _Signature] = {}


def _bind(fn: Callable[..., Any], arguments: Mapping[str, Any], ctx: Context | None
          ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Bind untrusted arguments to a handler's keyword parameters; TypeError when they do
    not fit (unknown names, missing required ones)."""
    signature = _SIGNATURES.get(fn)
    if signature is None:
        signature = _SIGNATURES[fn] = _Signature(fn)
    kwargs = {str(k): v for k, v in arguments.items() if k != "ctx"}
    if not signature.var_keyword and not signature.names.issuperset(kwargs):
        unknown = sorted(set(kwargs) - signature.names)
        raise TypeError(f"unexpected argument(s): {', '.join(unknown)}")
    missing = [name for name in signature.required if name not in kwargs]
    if missing:
        raise TypeError(f"missing required argument(s): {', '.join(missing)}")
    if ctx is not None and signature.wants_ctx:
        kwargs["ctx"] = ctx
    return (), kwargs


def _is_integer(value: Any) -> bool:
    # 2020-12 validation 6.1.1: "integer" is any number with a zero fractional part (1.0 too).
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer())


#: JSON Schema's primitive type names (2020-12 validation, section 6.1.1) and the test each
#: makes of a decoded JSON value. A Python bool is an int, but true is not a JSON number.
_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}

#: The article for a type's name in a message ("an integer", "a string").
_A = {"integer": "an integer", "array": "an array", "object": "an object"}


def _argument_types(schema: Any) -> dict[str, tuple[str, ...]]:
    """The ``type`` each top-level property of a tool's input schema requires, for the
    argument check (only the ``type`` keyword: what :func:`_schema_from_signature` emits; a
    schema given by hand may say more, which the handler checks itself). A property without
    a ``type``, or with a name this does not know, is not checked."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    types: dict[str, tuple[str, ...]] = {}
    if not isinstance(properties, dict):
        return types
    for name, spec in properties.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        names = (kind,) if isinstance(kind, str) else tuple(kind) if isinstance(
            kind, list) else ()
        if names and all(isinstance(n, str) and n in _TYPE_TESTS for n in names):
            types[str(name)] = names
    return types


def _wrong_type(types: Mapping[str, tuple[str, ...]], arguments: Mapping[str, Any]
                ) -> str | None:
    """The first argument whose value is not of its declared type, in words, or None."""
    for name, value in arguments.items():
        allowed = types.get(name)
        if allowed is not None and not any(_TYPE_TESTS[t](value) for t in allowed):
            want = " or ".join(_A.get(t, f"a {t}") if t != "null" else "null"
                               for t in allowed)
            got = _json_type_name(value)
            return f"argument {name!r} must be {want}, not {got}"
    return None


def _json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    for name in ("boolean", "integer", "number", "string", "array", "object"):
        if _TYPE_TESTS[name](value):
            return _A.get(name, f"a {name}")
    return type(value).__name__  # pragma: no cover - decoded JSON is one of the above


#: How a ``tools/call`` whose arguments do not fit the tool (unknown or missing names, a
#: value of the wrong type) is answered, by revision. Each revision's server/tools.mdx,
#: "Error Handling": up to 2025-06-18 "Invalid arguments" is listed among the *protocol*
#: errors (a JSON-RPC error; -32602 Invalid params, JSON-RPC 2.0 section 5.1); from
#: 2025-11-25 (SEP-1303) on, "Input validation errors" are *tool execution* errors, a result
#: with ``isError: true``, so that the model can read the message and call again.
INVALID_ARGUMENTS_ANSWER: dict[str, str] = {
    "2024-11-05": "protocol-error",
    "2025-03-26": "protocol-error",
    "2025-06-18": "protocol-error",
    "2025-11-25": "tool-error",
    "2026-07-28": "tool-error",
}


class Entry:
    """One registered tool, resource, template or prompt."""

    __slots__ = ("arg_types", "definition", "fn", "pattern")

    def __init__(self, fn: Callable[..., Any], definition: dict[str, Any],
                 pattern: re.Pattern[str] | None = None) -> None:
        self.fn = fn
        self.definition = definition
        self.pattern = pattern
        #: A tool's argument types (from its input schema), worked out once.
        self.arg_types = _argument_types(definition.get("inputSchema"))


class Job:
    """What to run for one incoming request: ``fn(*args, **kwargs)`` (sync or async), then
    ``shape(value)`` to build the result. ``fn`` None means the result is ``shape(None)``."""

    __slots__ = ("args", "fn", "kwargs", "shape")

    def __init__(self, fn: Callable[..., Any] | None, args: tuple[Any, ...] = (),
                 kwargs: dict[str, Any] | None = None,
                 shape: Callable[[Any], dict[str, Any]] = lambda v: dict(v or {})) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs or {}
        self.shape = shape


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _uri_pattern(template: str) -> re.Pattern[str]:
    """``test://template/{id}/data`` -> a regex with one named group per variable (RFC 6570
    level 1: each variable matches one path segment)."""
    out, pos = [], 0
    for match in re.finditer(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", template):
        out.append(re.escape(template[pos:match.start()]))
        out.append(f"(?P<{match.group(1)}>[^/?#]+)")
        pos = match.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out) + r"\Z")


class Server:
    """A server definition: what it offers and the handlers behind it. Runtime-independent:
    one definition serves stdio on any adapter, in both eras.

    Handlers are plain functions (``async def`` on asyncio and trio; ``def`` on any runtime,
    the only kind on threads). A parameter named ``ctx`` receives the request's
    :class:`Context`; every other parameter is bound from the request's arguments.
    """

    def __init__(
        self, name: str, version: str = "0.1.0", *, title: str | None = None,
        instructions: str | None = None, page_size: int | None = None,
        list_changed: bool = True,
    ) -> None:
        self.info: dict[str, Any] = {"name": name, "version": version}
        if title is not None:
            self.info["title"] = title
        self.instructions = instructions
        self.page_size = page_size
        self.list_changed = list_changed
        self.tools: dict[str, Entry] = {}
        self.resources: dict[str, Entry] = {}
        self.templates: dict[str, Entry] = {}
        self.prompts: dict[str, Entry] = {}
        self.completion_handler: Callable[..., Any] | None = None
        #: The task store (:meth:`enable_tasks`), or None: no tool runs as a task.
        self.tasks: Tasks | None = None

    # -- registration -------------------------------------------------------------------------

    def add_tool(
        self, fn: Callable[..., Any], *, name: str | None = None,
        description: str | None = None, input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None, title: str | None = None,
        annotations: Mapping[str, Any] | None = None, task_support: str | None = None,
    ) -> Callable[..., Any]:
        """A tool. ``task_support`` (``"optional"``, ``"required"``) lets it run as a task
        (:meth:`enable_tasks`); it is declared as ``execution.taskSupport``."""
        tool_name = name or fn.__name__
        definition: dict[str, Any] = {
            "name": tool_name,
            "description": description or inspect.getdoc(fn) or tool_name,
            "inputSchema": dict(input_schema) if input_schema is not None
            else _schema_from_signature(fn),
        }
        if title is not None:
            definition["title"] = title
        if output_schema is not None:
            definition["outputSchema"] = dict(output_schema)
        if annotations is not None:
            definition["annotations"] = dict(annotations)
        if task_support not in (None, "forbidden", "optional", "required"):
            raise ValueError(f"task_support {task_support!r}: forbidden, optional or required")
        if task_support is not None:
            definition["execution"] = {"taskSupport": task_support}
        self.tools[tool_name] = Entry(fn, definition)
        return fn

    def tool(self, name: str | None = None, **options: Any
             ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator form of :meth:`add_tool`."""
        return lambda fn: self.add_tool(fn, name=name, **options)

    def add_resource(
        self, uri: str, fn: Callable[..., Any], *, name: str | None = None,
        description: str | None = None, mime_type: str | None = None,
    ) -> Callable[..., Any]:
        """A direct resource; ``fn()`` returns ``str`` (text), ``bytes`` (blob), a list of
        contents or a whole ``ReadResourceResult``. A URI with ``{var}`` parts registers a
        resource template instead, whose handler receives the variables."""
        definition: dict[str, Any] = {
            "name": name or fn.__name__,
            "description": description or inspect.getdoc(fn) or (name or fn.__name__),
        }
        if mime_type is not None:
            definition["mimeType"] = mime_type
        if "{" in uri:
            definition["uriTemplate"] = uri
            self.templates[uri] = Entry(fn, definition, _uri_pattern(uri))
        else:
            definition["uri"] = uri
            self.resources[uri] = Entry(fn, definition)
        return fn

    def resource(self, uri: str, **options: Any
                 ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator form of :meth:`add_resource` (same options)."""
        return lambda fn: self.add_resource(uri, fn, **options)

    def add_prompt(
        self, fn: Callable[..., Any], *, name: str | None = None,
        description: str | None = None, arguments: list[dict[str, Any]] | None = None,
        title: str | None = None,
    ) -> Callable[..., Any]:
        """A prompt; ``fn(**arguments)`` returns ``str`` (one user message), a list of
        messages, or a whole ``GetPromptResult``."""
        prompt_name = name or fn.__name__
        if arguments is None:
            arguments = [
                {"name": p.name, "required": p.default is p.empty}
                for p in inspect.signature(fn).parameters.values()
                if p.name != "ctx" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            ]
        definition: dict[str, Any] = {
            "name": prompt_name,
            "description": description or inspect.getdoc(fn) or prompt_name,
            "arguments": arguments,
        }
        if title is not None:
            definition["title"] = title
        self.prompts[prompt_name] = Entry(fn, definition)
        return fn

    def prompt(self, name: str | None = None, **options: Any
               ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator form of :meth:`add_prompt` (same options)."""
        return lambda fn: self.add_prompt(fn, name=name, **options)

    def set_completion(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn(ref, argument, context)`` returns a list of values or a ``completion``
        object, for ``completion/complete``."""
        self.completion_handler = fn
        return fn

    def completion(self) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator form of :meth:`set_completion`."""
        return self.set_completion

    def enable_tasks(self, **options: Any) -> Tasks:
        """Let tools registered with ``task_support`` run as tasks (the 2026-07-28 tasks
        extension, see :mod:`._tasks`); ``options`` go to :class:`~._tasks.Tasks`."""
        from ._tasks import Tasks

        self.tasks = Tasks(**options)
        return self.tasks

    # -- what the connection declares -----------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """The server capabilities this definition declares (from what is registered)."""
        changed = {"listChanged": True} if self.list_changed else {}
        caps: dict[str, Any] = {"logging": {}}
        if self.tools:
            caps["tools"] = dict(changed)
        if self.resources or self.templates:
            caps["resources"] = {"subscribe": True, **changed}
        if self.prompts:
            caps["prompts"] = dict(changed)
        if self.completion_handler is not None:
            caps["completions"] = {}
        if self.tasks is not None:
            caps.update(self.tasks.capabilities())
        return caps

    def connection(self, **options: Any) -> ServerConnection:
        """A fresh core connection declaring this server's info and capabilities."""
        return ServerConnection(info=self.info, capabilities=self.capabilities(),
                                instructions=self.instructions, **options)

    # -- routing ------------------------------------------------------------------------------

    def _page(self, key: str, items: list[dict[str, Any]], params: Mapping[str, Any]
              ) -> dict[str, Any]:
        start = 0
        cursor = params.get("cursor")
        if cursor is not None:
            if not isinstance(cursor, str) or not cursor.isdigit() or int(cursor) > len(items):
                raise McpError(ErrorCode.INVALID_PARAMS, "Invalid params: unknown cursor")
            start = int(cursor)
        if self.page_size is None:
            return {key: items[start:]}
        end = start + self.page_size
        result: dict[str, Any] = {key: items[start:end]}
        if end < len(items):
            result["nextCursor"] = str(end)
        return result

    def _route(self, request: Request, ctx: Context) -> Job:
        """The job for one request, or McpError for a request this server cannot serve."""
        method = request.method
        params = request.params or {}
        if self.tasks is not None:
            job = self.tasks._route(self, request, ctx)
            if job is not None:
                return job
        if method == "tools/list":
            page = self._page("tools", [e.definition for e in self.tools.values()], params)
            return Job(None, shape=lambda _: page)
        if method == "tools/call":
            return self._route_tool(params, ctx)
        if method == "resources/list":
            page = self._page("resources", [e.definition for e in self.resources.values()],
                              params)
            return Job(None, shape=lambda _: page)
        if method == "resources/templates/list":
            page = self._page("resourceTemplates",
                              [e.definition for e in self.templates.values()], params)
            return Job(None, shape=lambda _: page)
        if method == "resources/read":
            return self._route_resource(params, ctx)
        if method in ("resources/subscribe", "resources/unsubscribe"):
            return Job(None)  # the core keeps the subscription set
        if method == "prompts/list":
            page = self._page("prompts", [e.definition for e in self.prompts.values()], params)
            return Job(None, shape=lambda _: page)
        if method == "prompts/get":
            return self._route_prompt(params, ctx)
        if method == "completion/complete" and self.completion_handler is not None:
            ref, argument = params.get("ref"), params.get("argument")
            # CompleteRequest (schema): ref and argument are required objects.
            if not isinstance(ref, dict) or not isinstance(argument, dict):
                raise McpError(ErrorCode.INVALID_PARAMS, "Invalid params: completion/complete "
                               "needs the objects ref and argument")
            fn = self.completion_handler
            args, kwargs = _bind(fn, {"ref": params.get("ref"),
                                      "argument": params.get("argument"),
                                      "context": params.get("context")}, ctx)
            return Job(fn, args, kwargs, _completion_result)
        raise McpError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}")

    def _route_tool(self, params: Mapping[str, Any], ctx: Context) -> Job:
        name = params.get("name")
        entry = self.tools.get(name) if isinstance(name, str) else None
        if entry is None:
            raise McpError(ErrorCode.INVALID_PARAMS, f"Unknown tool: {name!r}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        structured = "outputSchema" in entry.definition
        try:
            if not isinstance(arguments, dict):
                raise TypeError("arguments must be an object")
            args, kwargs = _bind(entry.fn, arguments, ctx)
            wrong = _wrong_type(entry.arg_types, arguments) if entry.arg_types else None
            if wrong is not None:
                raise TypeError(wrong)
        except TypeError as exc:
            message = f"Invalid arguments for tool {name}: {exc}"
            # Visible with Python's default logging (WARNING): the server's author learns
            # that clients call this tool wrongly. The arguments are not logged (they may
            # carry secrets); the message names only the argument and the types.
            log.warning("tools/call (request %r): %s", ctx.request_id, message)
            if INVALID_ARGUMENTS_ANSWER.get(_revision(ctx) or "") == "protocol-error":
                raise McpError(ErrorCode.INVALID_PARAMS, f"Invalid params: {message}") \
                    from None
            return Job(None, shape=lambda _: tool_error_result(message))
        return Job(entry.fn, args, kwargs, lambda value: _tool_result(value, structured))

    def _route_resource(self, params: Mapping[str, Any], ctx: Context) -> Job:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise McpError(ErrorCode.INVALID_PARAMS, "Invalid params: uri must be a string")
        entry = self.resources.get(uri)
        variables: dict[str, Any] = {}
        if entry is None:
            for template in self.templates.values():
                assert template.pattern is not None
                match = template.pattern.match(uri)
                if match:
                    entry, variables = template, match.groupdict()
                    break
        if entry is None:
            # SEP-2164: -32602 with the uri in data, never an empty contents array.
            raise McpError(ErrorCode.INVALID_PARAMS, "Resource not found", {"uri": uri})
        args, kwargs = _bind(entry.fn, variables, ctx)
        mime = entry.definition.get("mimeType")
        return Job(entry.fn, args, kwargs, lambda value: _resource_result(uri, mime, value))

    def _route_prompt(self, params: Mapping[str, Any], ctx: Context) -> Job:
        name = params.get("name")
        entry = self.prompts.get(name) if isinstance(name, str) else None
        if entry is None:
            raise McpError(ErrorCode.INVALID_PARAMS, f"Unknown prompt: {name!r}")
        arguments = params.get("arguments") or {}
        try:
            if not isinstance(arguments, dict):
                raise TypeError("arguments must be an object")
            args, kwargs = _bind(entry.fn, arguments, ctx)
        except TypeError as exc:
            raise McpError(ErrorCode.INVALID_PARAMS, f"Invalid params: {exc}") from None
        return Job(entry.fn, args, kwargs, _prompt_result)


def _revision(ctx: Context) -> str | None:
    """The revision a request is served under: the handshake's, or (stateless era) the one
    the request names in its ``_meta``."""
    if ctx.era is Era.STATELESS:
        meta = ctx.params.get("_meta")
        version = meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(
            meta, dict) else None
        return version if isinstance(version, str) else None
    return ctx.session.conn.protocol_version


def tool_error_result(message: str) -> dict[str, Any]:
    return {"content": [_text(message)], "isError": True}


def _tool_result(value: Any, structured: bool) -> dict[str, Any]:
    if isinstance(value, dict) and ("content" in value or "structuredContent" in value):
        return value
    if structured:
        return {"content": [_text(json.dumps(value))], "structuredContent": value}
    if value is None:
        return {"content": []}
    if isinstance(value, str):
        return {"content": [_text(value)]}
    if isinstance(value, list):
        return {"content": [_text(v) if isinstance(v, str) else v for v in value]}
    if isinstance(value, dict):
        return {"content": [value]}
    return {"content": [_text(str(value))]}


def _resource_result(uri: str, mime: Any, value: Any) -> dict[str, Any]:
    if isinstance(value, dict) and "contents" in value:
        return value
    if isinstance(value, list):
        return {"contents": value}
    item: dict[str, Any] = {"uri": uri}
    if mime is not None:
        item["mimeType"] = mime
    if isinstance(value, bytes | bytearray):
        item["blob"] = base64.b64encode(value).decode("ascii")
    else:
        item["text"] = value if isinstance(value, str) else json.dumps(value)
    return {"contents": [item]}


def _prompt_result(value: Any) -> dict[str, Any]:
    if isinstance(value, dict) and "messages" in value:
        return value
    if isinstance(value, str):
        return {"messages": [{"role": "user", "content": _text(value)}]}
    return {"messages": list(value)}


def _completion_result(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {"completion": value} if "values" in value else value
    values = [str(v) for v in (value or [])][:100]  # the spec caps one page at 100
    return {"completion": {"values": values, "hasMore": False}}


# -- the handler's context ---------------------------------------------------------------------


class Context:
    """What a handler can do about its request. The runtime subclass adds the awaiting
    (or blocking) ``ask`` family: ``ask``, ``sample``, ``elicit``, ``list_roots``."""

    def __init__(self, session: Session, request: Request) -> None:
        self.session = session
        self.request_id = request.request_id
        self.method = request.method
        self.params: dict[str, Any] = request.params or {}
        #: Set by the runtime when the client cancelled the request (threads poll it).
        self.cancelled = False

    @property
    def era(self) -> Era | None:
        return self.session.conn.era

    @property
    def auth(self) -> AccessInfo | None:
        """Who the request's access token speaks for -- principal (``subject``), scopes,
        client id, claims -- on an HTTP server protected with ``auth=``; None otherwise
        (stdio servers take credentials from the environment, MCP basic/authorization.mdx)."""
        return cast("AccessInfo | None", getattr(self.session, "auth", None))

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declared: this request's ``_meta`` (stateless era) or the
        handshake's."""
        if self.era is Era.STATELESS:
            meta = self.params.get("_meta") or {}
            caps = meta.get("io.modelcontextprotocol/clientCapabilities")
            return caps if isinstance(caps, dict) else {}
        return self.session.conn.peer_capabilities

    @property
    def input_responses(self) -> dict[str, Any]:
        """Stateless era: the answers a retry brought (``{}`` on the first round, and when the
        client sent something that is not an object)."""
        value = self.params.get("inputResponses")
        return value if isinstance(value, dict) else {}

    @property
    def request_state(self) -> str | None:
        """Stateless era: the state the retry echoed (already verified and opened by the core
        when the connection seals state)."""
        value = self.params.get("requestState")
        return value if isinstance(value, str) else None

    def progress(self, progress: float, total: float | None = None,
                 message: str | None = None) -> None:
        """Report progress, if the client asked for it (otherwise nothing is sent)."""
        meta = self.params.get("_meta")
        if not isinstance(meta, dict) or meta.get("progressToken") is None:
            return
        session = self.session
        with session.lock:
            if self.cancelled or session.closed is not None:
                return
            session.conn.send_progress(self.request_id, progress, total, message)
            session.service()

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message about this request (dropped by the core below the level the
        client asked for, and in the stateless era when the request asked for none)."""
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        session = self.session
        with session.lock:
            if self.cancelled or session.closed is not None:
                return
            session.conn.send_notification("notifications/message", params,
                                           related_request_id=self.request_id)
            session.service()

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a server notification (e.g. ``notifications/tools/list_changed``); in the
        stateless era the core puts it on the listen streams that asked for it."""
        session = self.session
        with session.lock:
            if session.closed is not None:
                return
            session.conn.send_notification(method, params)
            session.service()

    def notify_list_changed(self, kind: str) -> None:
        """``kind`` is ``"tools"``, ``"prompts"`` or ``"resources"``."""
        self.notify(f"notifications/{kind}/list_changed")

    def input_required(self, input_requests: Mapping[str, Any] | None = None,
                       request_state: str | None = None) -> NoReturn:
        """Stateless era: answer this request with ``input_required`` (the client retries with
        ``inputResponses`` under the same keys and ``requestState`` echoed)."""
        raise InputRequiredSignal(input_requests or {}, request_state)

    def _plan_ask(self, requests: Mapping[str, tuple[str, Mapping[str, Any]]],
                 request_state: str | None = None) -> dict[str, Any] | None:
        """The runtime-independent half of ``ask``: check the client declared what each input
        needs; in the stateless era return the answers the retry carries or raise
        :class:`InputRequiredSignal` for the missing ones. None: the handshake era, where the
        runtime sends real requests."""
        caps = self.client_capabilities
        missing: dict[str, Any] = {INPUT_METHODS[m][0]: {} for m, _ in requests.values()
                   if m in INPUT_METHODS and INPUT_METHODS[m][0] not in caps}
        if missing:
            raise MissingCapability(missing)
        if self.era is not Era.STATELESS:
            return None
        answers = self.input_responses
        if all(isinstance(answers.get(key), dict) for key in requests):
            return {key: answers[key] for key in requests}
        raise InputRequiredSignal(
            {key: {"method": method, "params": dict(params)}
             for key, (method, params) in requests.items()},
            request_state if request_state is not None else self.request_state,
        )


def elicit_request(message: str, schema: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return "elicitation/create", {"message": message, "requestedSchema": dict(schema)}


def sampling_request(params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return "sampling/createMessage", dict(params)


class ServerLogic(Session):
    """Server behaviour shared by every runtime: route requests to the registry."""

    conn: ServerConnection

    def __init__(self, conn: ServerConnection, server: Server, **kwargs: Any) -> None:
        super().__init__(conn, **kwargs)
        self.server = server

    def _make_job(self, request: Request, ctx: Context) -> Job | None:
        """Route a request; answer at once (and return None) when it cannot be served or
        needs no handler. ``subscriptions/listen`` stays open until the client cancels."""
        if request.method == "subscriptions/listen":
            return None
        try:
            job = self.server._route(request, ctx)
        except McpError as exc:
            self._finish_request(request.request_id, error=exc, method=request.method)
            return None
        except TypeError as exc:  # arguments that do not fit a resource/completion handler
            self._finish_request(request.request_id, error=McpError(
                ErrorCode.INVALID_PARAMS, f"Invalid params: {exc}"), method=request.method)
            return None
        if job.fn is None:
            self._finish_request(request.request_id, job.shape(None), method=request.method)
            return None
        return job

    def _job_failed(self, request: Request, error: BaseException) -> None:
        """A handler raised: a ToolError is a tool result; the rest go to finish_incoming."""
        if isinstance(error, ToolError) and request.method == "tools/call":
            self._finish_request(request.request_id, tool_error_result(str(error)),
                                 method=request.method)
        else:
            self._finish_request(request.request_id, error=error, method=request.method)


# -- the child's stderr ------------------------------------------------------------------------


class LineLogger:
    """Forwards a child's stderr to ``logging``, one record per line. Never blocks: the
    adapter feeds whatever it read; a line longer than ``max_line`` is cut and logged in
    pieces rather than buffered without bound."""

    def __init__(self, logger: logging.Logger, level: int = logging.INFO,
                 max_line: int = 64 * 1024) -> None:
        self.logger = logger
        self.level = level
        self.max_line = max_line
        self._partial = b""

    def feed(self, data: bytes) -> None:
        if not data:
            self.flush()
            return
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            self._emit(line)
        if len(self._partial) > self.max_line:
            self.flush()

    def flush(self) -> None:
        partial, self._partial = self._partial, b""
        if partial:
            self._emit(partial)

    def _emit(self, line: bytes) -> None:
        if not self.logger.isEnabledFor(self.level):
            return
        line = line.rstrip(b"\r")
        for start in range(0, max(len(line), 1), self.max_line):
            piece = line[start:start + self.max_line]
            self.logger.log(self.level, "%s", piece.decode("utf-8", "replace"))


#: Where a stdio client logs its server's stderr unless told otherwise.
STDERR_LOGGER = logging.getLogger("mcp_sansio.stdio.stderr")


def default_client_info() -> dict[str, Any]:
    from mcp_sansio import __version__
    return {"name": "mcp-sansio", "version": __version__}
