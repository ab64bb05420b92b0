"""``ConnectionPair``: a client and a server connection wired back to back.

It shuttles each side's output (as stdio bytes, so framing is exercised too) into the other,
runs a virtual clock that can jump to the next deadline, records every event per side, and
validates every emitted message against the official schema of the revision in force.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_sansio import (
    NEED_DATA,
    ClientConnection,
    Connection,
    Event,
    Initialized,
    ServerConnection,
)
from tests import schemas

CLIENT_INFO = {"name": "test-client", "version": "1.0"}
SERVER_INFO = {"name": "test-server", "version": "1.0"}


class ConnectionPair:
    def __init__(
        self,
        client: ClientConnection | None = None,
        server: ServerConnection | None = None,
        *,
        validate: bool = True,
    ) -> None:
        self.client = client or ClientConnection(info=CLIENT_INFO)
        self.server = server or ServerConnection(info=SERVER_INFO)
        self.now = 0.0
        self.validate = validate
        self.client_events: list[Event] = []
        self.server_events: list[Event] = []
        #: Every message each side emitted, decoded, in order.
        self.client_sent: list[Any] = []
        self.server_sent: list[Any] = []
        # ids of requests each side sent -> method (to find result types when validating)
        self._client_methods: dict[Any, str] = {}
        self._server_methods: dict[Any, str] = {}

    # -- driving -----------------------------------------------------------------------------

    def _drain(self, conn: Connection, sink: list[Event]) -> list[Event]:
        new: list[Event] = []
        while (event := conn.next_event()) is not NEED_DATA:
            new.append(event)
        sink.extend(new)
        return new

    def _collect(self, conn: Connection, sent: list[Any], own: dict[Any, str],
                 other: dict[Any, str]) -> bytes:
        data = conn.data_to_send()
        for line in data.splitlines():
            message = json.loads(line)
            sent.append(message)
            items = message if isinstance(message, list) else [message]
            for item in items:
                if "method" in item and "id" in item:
                    own[item["id"]] = item["method"]
            if self.validate:
                schemas.validate_message(conn.revision, message, other)
        return data

    def pump(self, max_rounds: int = 100) -> None:
        """Shuttle output both ways until neither side has anything to say."""
        for _ in range(max_rounds):
            self._drain(self.client, self.client_events)
            self._drain(self.server, self.server_events)
            to_server = self._collect(self.client, self.client_sent, self._client_methods,
                                      self._server_methods)
            to_client = self._collect(self.server, self.server_sent, self._server_methods,
                                      self._client_methods)
            if not to_server and not to_client:
                return
            if to_server:
                self.server.receive_data(to_server, now=self.now)
            if to_client:
                self.client.receive_data(to_client, now=self.now)
        raise AssertionError("the connections did not go quiet")

    def handshake(self) -> None:
        self.client.initialize(now=self.now)
        self.pump()
        assert any(isinstance(e, Initialized) for e in self.client_events)
        assert any(isinstance(e, Initialized) for e in self.server_events)

    def connect(self) -> None:
        """``client.connect()`` (era probe or handshake) and pump until both are ready."""
        self.client.connect(now=self.now)
        self.pump()
        assert any(isinstance(e, Initialized) for e in self.client_events)

    def advance(self, seconds: float) -> None:
        """Move the virtual clock and fire both sides' timers."""
        self.now += seconds
        self.client.handle_timeout(self.now)
        self.server.handle_timeout(self.now)
        self.pump()

    def jump_to_next_deadline(self) -> bool:
        deadlines = [d for d in (self.client.next_deadline(), self.server.next_deadline())
                     if d is not None]
        if not deadlines:
            return False
        self.advance(max(0.0, min(deadlines) - self.now))
        return True

    def take(self, side: str) -> list[Event]:
        """Return and forget the events recorded for ``side`` ("client" or "server")."""
        events = self.client_events if side == "client" else self.server_events
        out = list(events)
        events.clear()
        return out
