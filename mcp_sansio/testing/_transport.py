"""How the peer machine talks to the peer: a :class:`Transport`, and the in-process one.

Theory of operation
-------------------
The machine speaks newline-delimited JSON, as on stdio, through any object with three
methods (:class:`Transport`): ``send(data)`` writes bytes, ``receive(timeout)`` returns
what the peer wrote within ``timeout`` seconds (``b""`` if nothing came), ``close()`` ends
the session. A real peer's transport does I/O and reads a clock; it lives outside this
package (:mod:`mcp_sansio.adapters.testing_stdio` spawns a server command).

:class:`ConnectionTransport` is the I/O-free one: it feeds an in-process connection (a
:class:`~mcp_sansio.ServerConnection`) and hands each of its events to an application
callback, on a virtual clock. ``receive(timeout)`` with nothing to read moves that clock
forward by ``timeout`` and fires the connection's timers and the application's ``tick``,
so a server that answers later (a slow tool) is tested in no real time at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from .._connection import Connection
from .._errors import NEED_DATA
from .._events import Event

__all__ = ["ConnectionTransport", "Transport"]


@runtime_checkable
class Transport(Protocol):
    """A newline-delimited JSON byte stream to one peer (one session)."""

    def send(self, data: bytes) -> None:
        """Write ``data`` (whole lines) to the peer."""

    def receive(self, timeout: float) -> bytes:
        """What the peer wrote, waiting up to ``timeout`` seconds for something;
        ``b""`` if nothing came. Raises :class:`EOFError` once the peer has closed its
        side and everything it wrote has been returned."""

    def close(self) -> None:
        """End the session (for a process: close its stdin, then make sure it exits)."""


#: Called with the connection and each event it produces; answers requests through the
#: connection (``send_response``, ``send_error``, ``send_progress``...).
Handler = Callable[[Connection, Event], None]
#: Called with the connection and the virtual time whenever that time moves.
Tick = Callable[[Connection, float], None]


class ConnectionTransport:
    """A :class:`Transport` to an in-process connection, on a virtual clock.

    :param connection: the peer under test, usually a :class:`~mcp_sansio.ServerConnection`.
    :param handler: the application: called with ``(connection, event)`` for every event.
    :param tick: optional; called with ``(connection, now)`` when the virtual clock moves,
        for work the application does later (answering a slow request).
    """

    def __init__(self, connection: Connection, handler: Handler, *,
                 tick: Tick | None = None) -> None:
        self.connection = connection
        self.handler = handler
        self.tick = tick
        #: The virtual clock, in seconds.
        self.now = 0.0
        self._buffer = bytearray()
        self._closed = False

    def _pump(self) -> None:
        conn = self.connection
        while (event := conn.next_event()) is not NEED_DATA:
            self.handler(conn, event)
            self._buffer += conn.data_to_send()
        self._buffer += conn.data_to_send()

    def send(self, data: bytes) -> None:
        if self._closed:
            raise BrokenPipeError("the transport is closed")
        self.connection.receive_data(data, now=self.now)
        self._pump()

    def receive(self, timeout: float) -> bytes:
        if not self._buffer:
            self.now += max(timeout, 0.0)
            self.connection.handle_timeout(self.now)
            if self.tick is not None:
                self.tick(self.connection, self.now)
            self._pump()
        if not self._buffer and self._closed:
            raise EOFError("the connection is closed")
        out = bytes(self._buffer)
        self._buffer.clear()
        return out

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.connection.receive_eof(now=self.now)
            self._pump()
