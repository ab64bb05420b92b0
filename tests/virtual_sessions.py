"""A client session and a server session of the runtime-free adapter layer
(``ClientLogic`` / ``ServerLogic``) wired back to back on a virtual clock: no sockets, no
threads, no sleeping. Requests that arrive are recorded (``incoming``) for the test to
answer by hand; the armed deadline is recorded and ``advance`` fires it."""

from __future__ import annotations

from typing import Any

from mcp_sansio import Era, Request, RequestId
from mcp_sansio.app.server import Server, ServerLogic
from mcp_sansio.app.session import ClientLogic


class Clock:
    def __init__(self) -> None:
        self.now = 0.0


class _Virtual:
    clock: Clock
    peer: Any

    def _setup(self, clock: Clock) -> None:
        self.clock = clock
        self.outbox: list[bytes] = []
        #: Every chunk this side wrote, in order (the outbox is emptied by ``pump``).
        self.written: list[bytes] = []
        self.incoming: list[Request] = []
        self.cancelled: list[RequestId] = []
        self.deadline: float | None = None

    def _now(self) -> float:
        return self.clock.now

    def _write(self, data: bytes) -> None:
        self.outbox.append(data)
        self.written.append(data)

    def _arm(self, deadline: float | None) -> None:
        self.deadline = deadline

    def _spawn_incoming(self, request: Request) -> None:
        self.incoming.append(request)

    def _cancel_incoming(self, request_id: RequestId) -> None:
        self.cancelled.append(request_id)


class VClient(_Virtual, ClientLogic):
    pass


class VServer(_Virtual, ServerLogic):
    pass


class Pair:
    """``client`` and ``server`` sessions sharing ``clock``."""

    def __init__(self, *, client_options: dict[str, Any] | None = None,
                 server_options: dict[str, Any] | None = None,
                 elicitation: Any = None, sampling: Any = None, roots: Any = None,
                 server_app: Server | None = None,
                 server_session_options: dict[str, Any] | None = None) -> None:
        self.clock = Clock()
        self.client = VClient._create(elicitation=elicitation, sampling=sampling, roots=roots,
                                      **(client_options or {}))
        self.client._setup(self.clock)
        self.server_app = server_app or Server("virtual")
        self.server = VServer(self.server_app.connection(**(server_options or {})),
                              self.server_app, **(server_session_options or {}))
        self.server._setup(self.clock)

    def pump(self) -> None:
        for _ in range(100):
            moved = False
            for side, other in ((self.client, self.server), (self.server, self.client)):
                while side.outbox:
                    other.feed(side.outbox.pop(0))
                    moved = True
            if not moved:
                return
        raise AssertionError("the sessions never went quiet")

    def advance(self, seconds: float) -> None:
        """Move the clock, firing each side's armed deadline that has passed."""
        self.clock.now += seconds
        for side in (self.client, self.server):
            if side.deadline is not None and side.deadline <= self.clock.now:
                side.on_timer()
        self.pump()

    def connect(self, era: Era | None = None) -> None:
        assert not self.client._start_connect(era)
        self.pump()
        assert self.client.initialized is not None
