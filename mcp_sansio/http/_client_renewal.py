"""The HTTP client's renewal of a session the server forgot (handshake era).

``basic/transports.mdx`` (2025-03-26 onwards), "Session Management": a server that no
longer knows a session answers 404 to a request carrying its ``Mcp-Session-Id``, and the
client MUST start a new session by initializing again. :class:`SessionRenewal` does that
once per failed exchange: a hidden ``initialize`` with the first one's parameters (its
answer must keep the protocol version and give a session id), then its
``notifications/initialized``; what failed meanwhile is retried behind that note, as after
the first handshake. A request sent before the last renewal (a stale session id) is simply
sent again. The application learns of it through ``SessionRenewed``; what the old session
held on the server (subscriptions, the log level) is gone.
"""

from __future__ import annotations

import itertools
from typing import Any

from .. import _codec
from .._state import State
from ._client_state import ClientHost, Exchange, Kind

__all__ = ["SessionRenewal"]


class SessionRenewal:
    """One client's session renewals (``client._renewal``)."""

    def __init__(self, client: ClientHost) -> None:
        self._client = client
        #: The hidden initialize in flight (None: no renewal under way).
        self.renewing: Exchange | None = None
        self._waiting: list[Exchange] = []
        self._counter = itertools.count(1)

    def session_gone(self, exchange: Exchange) -> None:
        """A 404 for our session id: initialize again (once per exchange) and retry."""
        client = self._client
        stale = exchange.session_id != client.session_id  # sent before the last renewal
        if exchange.kind is Kind.STANDALONE:
            exchange.done = True
            client._standalone = None  # reopened by the pump once there is a session again
            if not stale:
                self.renew()
            return
        if exchange.retried or client._init_params is None or exchange.kind is Kind.RESUME:
            client._fail(exchange, 404, "the session is gone")
            return
        exchange.retried = True
        exchange.session_id = None
        if stale and self.renewing is None:
            exchange.answered = set()
            client._start(exchange)
            return
        self._waiting.append(exchange)
        self.renew()

    def renew(self) -> None:
        client = self._client
        if self.renewing is not None or client.session_id is None or client._init_params is None:
            return
        renew = Exchange(Kind.REINIT, "POST", client._target)
        request_id = f"mcp-sansio-reinitialize-{next(self._counter)}"
        renew.message = {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
                         "params": client._init_params}
        renew.body = _codec.encode(renew.message)
        renew.ids = (request_id,)
        self.renewing = renew
        standalone = client._standalone
        if standalone is not None:
            standalone.done = True
            if standalone.channel is not None:
                client._drop_channel(standalone.channel)
            client._standalone = None
        client._start(renew)

    def on_answer(self, exchange: Exchange, value: Any) -> None:
        """The hidden initialize's answer (``value``: its decoded JSON, None if unreadable)."""
        client = self._client
        exchange.done = True
        exchange.answered.update(exchange.ids)
        result = value.get("result") if type(value) is dict else None
        version = result.get("protocolVersion") if type(result) is dict else None
        if version != client.connection.protocol_version or exchange.session_id is None:
            self.failed("the new session does not match the old one")
            return
        previous = client.session_id or ""
        client.session_id = exchange.session_id
        self.renewing = None
        note = Exchange(Kind.REINIT_NOTE, "POST", client._target)
        note.message = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        note.body = _codec.encode(note.message)
        note.session_id = client.session_id
        client._start(note)
        client._renewed(previous)
        waiting, self._waiting = self._waiting, []
        # As after the first handshake: the retries wait for the note's 202 (the gate).
        client._gate = note
        for retry in waiting:
            retry.session_id = client.session_id
            retry.answered = set()
            client._gated.append(retry)

    def failed(self, detail: str) -> None:
        client = self._client
        self.renewing = None
        waiting, self._waiting = self._waiting, []
        for exchange in waiting:
            client._fail(exchange, 404, f"the session is gone and could not be renewed: {detail}")
        if client.connection.state is not State.CLOSED:
            client.connection.receive_eof(now=client._now)
