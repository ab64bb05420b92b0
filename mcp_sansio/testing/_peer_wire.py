"""The peer machine's wire: what it writes to the server and how it waits for what comes
back.

Theory of operation
-------------------
:class:`Wire` writes one JSON value per line through the machine's
:class:`~mcp_sansio.testing.Transport`, numbering every message it writes (the
:class:`~._peer_ledger.Ledger`'s sequence numbers), and builds requests with the ``_meta``
the session's era wants. Reading is asking the transport for data with a timeout -- the
machine never reads a clock to wait -- splitting it into lines and handing each whole line
to ``on_line`` (the judge). :meth:`Wire.wait_until` and :meth:`Wire.settle` read until a
condition holds or the peer falls silent, bounded (with a clock) by the budgets. A
transport that judges too (``drain_findings()``) is drained after every read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ._peer_ledger import (
    META_CAPS,
    META_INFO,
    META_LEVEL,
    META_VERSION,
    MachineView,
    Pending,
)

#: How many messages one wait may read before giving up (a peer that never stops talking).
MAX_READS = 10_000


def _ignore(line: bytes) -> None:
    """No reader yet."""


class Wire:
    """Sends and reads for one :class:`~mcp_sansio.testing.PeerMachine`."""

    def __init__(self, machine: MachineView) -> None:
        self.machine = machine
        #: Where every whole line read goes (the judge).
        self.on_line: Callable[[bytes], None] = _ignore
        self._buffer = b""

    # -- sending -------------------------------------------------------------------------------

    def send(self, message: Any) -> int:
        """Write one message (a JSON value, or raw bytes for one line); return its sequence
        number."""
        machine = self.machine
        assert machine.transport is not None
        line = message if isinstance(message, bytes) else json.dumps(
            message, separators=(",", ":"), ensure_ascii=False).encode()
        ledger = machine.ledger
        ledger.seq += 1
        ledger.last_sent = message
        try:
            machine.transport.send(line + b"\n")
        except (BrokenPipeError, ConnectionError, EOFError, OSError):
            self.peer_gone()
        return ledger.seq

    def params(self, body: Mapping[str, Any] | None = None, *, token: str | int | None = None,
               level: str | None = None) -> dict[str, Any] | None:
        machine = self.machine
        out = dict(body or {})
        meta = dict(out.get("_meta") or {})
        if token is not None:
            meta["progressToken"] = token
        if machine.stateless:
            meta[META_VERSION] = machine.revision
            meta[META_CAPS] = dict(type(machine).client_capabilities)
            meta[META_INFO] = dict(type(machine).client_info)
            if level is not None:
                meta[META_LEVEL] = level
        if meta:
            out["_meta"] = meta
        return out or None

    def request(self, method: str, body: Mapping[str, Any] | None = None, *,
                progress: bool = False, level: str | None = None, **kw: Any) -> Pending:
        ledger = self.machine.ledger
        request_id = ledger.new_id()
        token: str | int | None = None
        if progress:
            token = f"kit-progress-{request_id}" if request_id % 2 else request_id + 1_000_000
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        params = self.params(body, token=token, level=level)
        if params is not None:
            message["params"] = params
        pending = Pending(request_id=request_id, method=method, message=message, seq=0,
                          token=token, log_level=level, **kw)
        ledger.pending[request_id] = pending
        if token is not None:
            ledger.tokens[token] = request_id
        pending.seq = self.send(message)
        return pending

    def notify(self, method: str, body: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if body is not None:
            message["params"] = dict(body)
        self.send(message)

    # -- receiving -----------------------------------------------------------------------------

    def peer_gone(self) -> None:
        machine = self.machine
        if not machine.ledger.eof:
            machine.ledger.eof = True
            if machine.alive:
                machine.finding("peer-closed", "the peer closed the connection in the middle "
                                "of the session (after the last message we sent)",
                                sent=machine.ledger.last_sent)
            machine.alive = False

    def read(self, timeout: float) -> bool:
        """Read once (waiting up to ``timeout``); handle every whole line. False when
        nothing came."""
        transport = self.machine.transport
        if transport is None or self.machine.ledger.eof:
            return False
        try:
            data = transport.receive(timeout)
        except EOFError:
            self.peer_gone()
            return False
        finally:
            self.transport_findings()
        if not data:
            return False
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if line.strip():
                self.on_line(line)
        return True

    def transport_findings(self) -> None:
        drain = getattr(self.machine.transport, "drain_findings", None)
        if drain is None:
            return
        for rule_name, detail, sent, received, *level in drain():
            self.machine.finding(rule_name, detail, sent=sent, received=received,
                                 requirement=level[0] if level else None)

    def poll(self) -> None:
        for _ in range(MAX_READS):
            if not self.read(0.0):
                return

    def wait_until(self, done: Callable[[], bool], timeout: float | None = None, *,
                   within: float | None = None) -> bool:
        machine = self.machine
        reply_timeout = type(machine).reply_timeout
        timeout = reply_timeout if timeout is None else timeout
        start = machine._now()
        if within is None and start is not None:
            # A peer that never falls silent (periodic notifications) must not hold a wait
            # for ever: with a clock, an answer due "at once" gets twice the reply timeout.
            within = 2 * reply_timeout
        for _ in range(MAX_READS):
            if done():
                return True
            if machine.over_budget():
                return done()
            now = machine._now()
            if within is not None and now is not None and start is not None:
                left = within - (now - start)
                if left <= 0:
                    return done()
                if not self.read(min(timeout, left)):
                    return done()  # silent for timeout, or the time is up
                continue
            if not self.read(timeout):
                return done()
        return done()

    def settle(self, quiet: float, *, within: float | None = None) -> None:
        machine = self.machine
        start = machine._now()
        for _ in range(MAX_READS):
            if machine.over_budget():
                return
            now = machine._now()
            if within is not None and now is not None and start is not None and (
                    now - start >= within):
                return
            if not self.read(quiet):
                return


class Part:
    """What every part of the machine that judges or scripts holds: the machine (through
    its view), the ledger, the wire, the schemas and the configuration; and the session's
    revision and era, read from the machine each time (they change as a session opens)."""

    def __init__(self, machine: MachineView, wire: Wire) -> None:
        self.machine = machine
        self.wire = wire
        self.ledger = machine.ledger
        self.schemas = machine._schemas
        #: The machine's configuration (its class attributes).
        self.config = type(machine)

    @property
    def revision(self) -> str:
        return self.machine.revision

    def finding(self, rule_name: str, detail: str, *, sent: Any = None, received: Any = None,
                requirement: str | None = None) -> None:
        self.machine.finding(rule_name, detail, sent=sent, received=received,
                             requirement=requirement)

    @property
    def stateless(self) -> bool:
        return self.machine.stateless

    def note(self, text: str) -> None:
        self.machine.note(text)
