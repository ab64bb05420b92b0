"""The running half of the ASGI application: one HTTP service per worker, on its event loop.

Theory of operation
-------------------
An ASGI server (uvicorn, hypercorn, granian) parses HTTP and calls the application once per
request. The MCP side is the same as on our own sockets: one sans-IO
:class:`~mcp_sansio.http.HTTPServer` for the whole worker, drained by one pump that hands
every ``(session, event)`` pair to the session logic of its HTTP session and arms one timer
for :meth:`~mcp_sansio.http.HTTPServer.next_deadline`. That pump, the timer and the handler
tasks are the runtime's own HTTP service's (``adapters/asyncio/http_server.py`` on asyncio,
``adapters/trio/http_server.py`` on trio): the classes here subclass them and change only where
output goes. Instead of a socket, each ASGI request has an :class:`Exchange` -- the queue of
:mod:`~mcp_sansio.http._exchange` output events the request's coroutine sends as
``http.response.*`` messages -- and each request's input is fed to a channel of its own on
the exchange seam (as :meth:`HTTPServer.new_exchange
<mcp_sansio.http.HTTPServer.new_exchange>` makes, with a :class:`SignallingWire`; keep-alive
is the engine's business, so one request is one channel).

Which runtime: the one the ASGI server runs the application on (asyncio under uvicorn,
granian and hypercorn's asyncio worker; trio under hypercorn's trio worker), read with
:mod:`sniffio` when the service is first needed. On trio the service's nursery (its pump
task and the handlers) is hosted by a system task, since an application mounted in another
framework is not always given a ``lifespan`` to host it.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable

import anyio

from mcp_sansio import Event
from mcp_sansio.app.server import Server
from mcp_sansio.http import HTTPServer, ServerChannel, Session
from mcp_sansio.http._exchange import (
    ExchangeInput,
    ExchangeOutput,
    ResponseData,
)
from mcp_sansio.http._exchange_wire import ExchangeWire

from ..common.deciders import asyncio_decider, trio_decider

__all__ = ["Exchange", "Routing", "SignallingWire", "new_service"]

log = logging.getLogger("mcp_sansio.adapters.asgi")

#: A handler for a bare :class:`~mcp_sansio.http.HTTPServer`: each ``(session, event)``.
EventHandler = Callable[[Session, Event], None]


class Exchange:
    """One ASGI request: the output events waiting for its coroutine to send them."""

    __slots__ = ("_scope", "channel", "gone", "out", "queued", "wake")

    def __init__(self, channel: ServerChannel) -> None:
        self.channel = channel
        self.out: deque[ExchangeOutput] = deque()
        #: Body bytes queued and not yet handed to the ASGI server.
        self.queued = 0
        #: The client is gone (or reads too slowly): nothing more is queued.
        self.gone = False
        # Made only when the request's coroutine waits (most JSON answers are queued whole
        # before it looks): an anyio.Event costs an async-library lookup per request.
        self.wake: anyio.Event | None = None
        # Where the request's coroutine waits for and sends an answer still being made (see
        # scope); none for an answer queued whole before it is sent.
        self._scope: anyio.CancelScope | None = None

    @property
    def scope(self) -> anyio.CancelScope:
        """Where the request's coroutine sends an answer still being made: cancelled when it
        is dropped (a client that does not read has its ``send`` waiting for ever)."""
        if self._scope is None:
            self._scope = anyio.CancelScope()
            if self.gone:
                self._scope.cancel()
        return self._scope

    def idle(self) -> bool:
        """Nothing holds the channel: no stream on it (a session's, a resumable one's), no
        request handed out and unanswered -- the client leaving would change nothing."""
        wire = self.channel.wire
        return (self.channel.stream is None and isinstance(wire, ExchangeWire)
                and not wire.busy)

    def drop(self) -> None:
        """Give up on the answer: nothing more is queued or sent."""
        self.gone = True
        if self._scope is not None:
            self._scope.cancel()

    def push(self, events: list[ExchangeOutput]) -> None:
        if not events:
            return
        self.out.extend(events)
        for event in events:
            if isinstance(event, ResponseData):
                self.queued += len(event.data)
        if self.wake is not None:
            self.wake.set()

    async def wait(self) -> None:
        """Until something is queued."""
        while not self.out:
            self.wake = wake = anyio.Event()
            try:
                await wake.wait()
            finally:
                self.wake = None


class SignallingWire(ExchangeWire):
    """An exchange wire whose ``data_to_send`` is a one-byte marker while output events
    wait: the HTTP server's ``data_to_send`` lists a channel that has bytes to write (or has
    closed), so a request with new events is listed -- and routed by ``_write`` -- without
    the service polling every open request after every drain."""

    def data_to_send(self) -> bytes:
        return b"." if self._out else b""


class Routing:
    """Mixed in before a runtime's HTTP service: output goes to the ASGI requests'
    :class:`Exchange` queues instead of sockets, and a bare HTTP server's events go to the
    user's handler instead of a high-level ``Server``'s session logic."""

    http: HTTPServer
    max_write_buffer: int
    _exchanges: dict[ServerChannel, Exchange]
    _on_event: EventHandler | None = None

    def _now(self) -> float:
        raise NotImplementedError

    async def feed(self, channel: ServerChannel, *events: ExchangeInput) -> None:
        """Input events of an ASGI request (those after its channel closed are dropped),
        then the pump once."""
        raise NotImplementedError

    def _write(self, channel: ServerChannel, data: bytes) -> None:
        # A request's channel is listed by the HTTP server's data_to_send when it has output
        # (the marker of SignallingWire) or closed: move its events to the request's queue.
        self._route(channel)

    def new_channel(self) -> ServerChannel:
        """The channel of one ASGI request (on the exchange seam)."""
        return ServerChannel(self.http, SignallingWire(max_body_size=self.http.max_body_size))

    def _route(self, channel: ServerChannel) -> None:
        exchange = self._exchanges.get(channel)
        events = channel.events_to_send()
        if exchange is None or exchange.gone:
            if not channel.closed:  # its request is over: nothing can be sent any more
                channel.connection_lost(now=self._now())  # the drain sees it (needs_drain)
            return
        if not events:
            return
        exchange.push(events)
        if not channel.closed and exchange.queued > self.max_write_buffer:
            log.info("dropping an HTTP response: %d bytes unread by its client",
                     exchange.queued)
            exchange.drop()
            channel.connection_lost(now=self._now())

    def _dispatch(self, session: Session, event: Event) -> None:
        if self._on_event is not None:
            self._on_event(session, event)
            return
        super()._dispatch(session, event)  # type: ignore[misc]

    def wake(self) -> None:
        """Route what was sent outside a dispatch (the runtime's pump)."""
        self._kick()  # type: ignore[attr-defined]

    async def start(self) -> None:
        """Start what the service runs besides requests (trio: its nursery)."""

    async def aclose(self) -> None:
        raise NotImplementedError


def _take(channel: ServerChannel, events: tuple[ExchangeInput, ...], now: float,
          wall: float) -> None:
    """Give ``events`` to ``channel`` (none once it closed): all but the last
    to its wire alone (a request's head and body pieces only gather there), the last
    through the channel, which then serves what the wire holds -- one pass of the server
    over the channel per feed rather than one per event."""
    if not events or channel.closed:
        return
    wire: ExchangeWire = channel.wire  # type: ignore[assignment]  # (new_channel's)
    for event in events[:-1]:
        wire.receive_event(event)  # (one that closes the wire -- 413 -- leaves the rest unread)
    channel.receive_event(events[-1], now=now, wall_time=wall)


def _asyncio_service(server: Server | None, http: HTTPServer, max_write_buffer: int,
                     on_event: EventHandler | None) -> Routing:
    import asyncio  # lazy: that runtime only: the others never load asyncio

    from ..asyncio.http_server import HTTPService  # lazy: the chosen runtime only

    class AsyncioService(Routing, HTTPService):
        def _now(self) -> float:
            return self._loop.time()

        async def feed(self, channel: ServerChannel, *events: ExchangeInput) -> None:
            try:
                _take(channel, events, self._loop.time(), time.time())
                self._pump()
            except Exception:  # a bug: this request alone ends (common/http_server.py)
                self._contain(channel)
                self._loop.call_soon(self._safe_pump)

        async def aclose(self) -> None:
            await HTTPService.aclose(self)

    service = AsyncioService(server, http, max_write_buffer=max_write_buffer)  # type: ignore[arg-type]
    service._exchanges = {}
    service._on_event = on_event
    assert service._loop is asyncio.get_running_loop()
    if http.on_decision_needed is None:  # parked exchanges (tokens to ask about: common.deciders)
        http.on_decision_needed = asyncio_decider(service)
    return service


def _trio_service(server: Server | None, http: HTTPServer, max_write_buffer: int,
                  on_event: EventHandler | None) -> Routing:
    import trio  # lazy: trio is optional

    from ..trio.http_server import HTTPService  # lazy: the chosen runtime only (trio is optional)

    class TrioService(Routing, HTTPService):
        def _now(self) -> float:
            return trio.current_time()

        async def feed(self, channel: ServerChannel, *events: ExchangeInput) -> None:
            try:
                _take(channel, events, trio.current_time(), time.time())
                await self._pump_after_read()
            except Exception:  # a bug: this request alone ends (common/http_server.py)
                self._contain(channel)
                self._safe_wake()

        async def start(self) -> None:
            ready = trio.Event()
            trio.lowlevel.spawn_system_task(self._host, ready, name="mcp-sansio asgi service")
            await ready.wait()

        async def _host(self, ready: trio.Event) -> None:
            # A system task (module docstring): an exception escaping it would end the whole
            # run, so whatever escapes is logged here instead.
            try:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    nursery.start_soon(self._pump)
                    ready.set()
                    await trio.sleep_forever()
            except Exception:
                log.exception("the ASGI application's service failed")
            finally:
                self._detach_logics()
                self._closed.set()
                ready.set()

        async def aclose(self) -> None:
            await HTTPService.aclose(self)

    service = TrioService(server, http, max_write_buffer=max_write_buffer)  # type: ignore[arg-type]
    service._exchanges = {}
    service._on_event = on_event
    if http.on_decision_needed is None:  # parked exchanges, asked in the service's nursery
        http.on_decision_needed = trio_decider(service)
    return service


def new_service(library: str, server: Server | None, http: HTTPServer, *,
                max_write_buffer: int, on_event: EventHandler | None) -> Routing:
    """The service for the running async library (``"asyncio"`` or ``"trio"``)."""
    if library == "asyncio":
        return _asyncio_service(server, http, max_write_buffer, on_event)
    if library == "trio":
        return _trio_service(server, http, max_write_buffer, on_event)
    raise RuntimeError(f"the MCP ASGI application runs on asyncio or trio, not {library}")

