"""Helpers for the HTTP tests: a raw HTTP/1.1 client on h11 wired to a server channel in
memory, an application loop for the server side, a virtual clock, and schema validation of
everything the server emits."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from typing import Any

from mcp_sansio import (
    NEED_DATA,
    Event,
    Request,
    ServerConnection,
)
from mcp_sansio.http import HTTPServer, ServerChannel, Session, SSEEvent, SSEParser
from mcp_sansio.http._wire import ClientWire, ResponseBody, ResponseEnd, ResponseHead, WireClosed
from tests import schemas

SERVER_INFO = {"name": "test-server", "version": "1.0"}
CLIENT_INFO = {"name": "test-client", "version": "1.0"}
ACCEPT_BOTH = "application/json, text/event-stream"
HOST = "localhost:8000"
#: The server wire every Harness builds unless told (``wire=``); tests/conftest.py's
#: ``server_wire`` fixture sets it to run a test on each wire.
DEFAULT_WIRE = "h11"


def init_body(version: str = "2025-11-25", request_id: int | str = 0) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": CLIENT_INFO}}


def stateless_meta(version: str = "2026-07-28", **extra: Any) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO, **extra}


class Response:
    """What came back for one request, as it came (possibly still streaming)."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.body = b""
        self.events: list[SSEEvent] = []
        self.done = False
        self.broken = False
        self._sse: SSEParser | None = None

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def messages(self) -> list[Any]:
        """The JSON-RPC messages carried (SSE events with data, or the JSON body)."""
        if self._sse is not None:
            return [json.loads(e.data) for e in self.events
                    if e.data and e.event == "message"]
        return [self.json] if self.body else []

    @property
    def is_sse(self) -> bool:
        return self._sse is not None

    def feed(self, event: Any) -> None:
        if isinstance(event, ResponseHead):
            self.status = event.status
            self.headers = {k.lower(): v for k, v in event.headers.items()}
            if self.headers.get("content-type", "").startswith("text/event-stream"):
                self._sse = SSEParser()
        elif isinstance(event, ResponseBody):
            if self._sse is not None:
                self.events.extend(self._sse.feed(event.data))
            else:
                self.body += event.data
        elif isinstance(event, ResponseEnd):
            self.done = True
        elif isinstance(event, WireClosed):
            self.broken = True

    def __repr__(self) -> str:
        return (f"<Response {self.status} {self.headers.get('content-type')} "
                f"done={self.done} body={self.body[:200]!r} events={len(self.events)}>")


class RawConn:
    """One client TCP connection: an h11 client on a server channel."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.channel: ServerChannel = harness.server.new_channel(now=harness.now)
        self.wire = ClientWire()
        self.responses: list[Response] = []
        self.closed = False
        self.raw = bytearray()  # every byte the server wrote to this connection
        harness.conns[self.channel] = self

    def send(
        self, method: str = "POST", body: Any = None, *, headers: Iterable[tuple[str, str]] = (),
        target: str = "/mcp", raw: bytes | None = None, defaults: bool = True,
    ) -> Response:
        hdrs = [("host", HOST)] if defaults else []
        if defaults and method == "POST":
            hdrs += [("accept", ACCEPT_BOTH), ("content-type", "application/json")]
        elif defaults and method == "GET":
            hdrs += [("accept", "text/event-stream")]
        hdrs += list(headers)
        data = raw if raw is not None else (
            json.dumps(body).encode() if body is not None else b"")
        self.wire.send_request(method, target, hdrs, data)
        response = Response()
        self.responses.append(response)
        self.push(self.wire.data_to_send())
        return response

    def push(self, data: bytes) -> None:
        """Bytes to the server, then run the server loop."""
        self.channel.receive_data(data, now=self.harness.now)
        self.harness.run()

    def close(self) -> None:
        """The client closes the connection."""
        self.closed = True
        self.channel.receive_data(b"", now=self.harness.now)
        self.harness.run()

    def receive(self, data: bytes) -> None:
        if self.closed:
            return
        self.raw += data
        self.wire.receive_data(data)
        while (event := self.wire.next_event()) is not None:
            pending = [r for r in self.responses if not r.done and not r.broken]
            if pending:
                pending[0].feed(event)
            if isinstance(event, WireClosed):
                for r in pending:
                    r.broken = True

    def server_closed(self) -> None:
        self.closed = True
        for r in self.responses:
            if not r.done:
                r.broken = True


Handler = Callable[[Session, Event], None]


def answer_everything(session: Session, event: Event) -> None:
    """Default application: answer each request at once with a plausible result."""
    if isinstance(event, Request):
        session.connection.send_response(event.request_id, result_for(event.method))


def result_for(method: str) -> dict[str, Any]:
    return {
        "tools/list": {"tools": []},
        "tools/call": {"content": [{"type": "text", "text": "ok"}], "isError": False},
        "prompts/list": {"prompts": []},
        "resources/list": {"resources": []},
        "subscriptions/listen": {},
    }.get(method, {})


class Harness:
    """A server, a virtual clock, an application and raw client connections."""

    def __init__(
        self, *, handler: Handler | None = answer_everything,
        connection: Callable[[], ServerConnection] | None = None,
        validate: bool = True, **options: Any,
    ) -> None:
        self.now = 0.0
        ids = itertools.count(1)
        self.connection_kwargs: dict[str, Any] = {}
        factory = connection or (lambda: ServerConnection(
            info=SERVER_INFO, capabilities={"tools": {"listChanged": True}, "logging": {},
                                            "prompts": {}, "resources": {}}))
        options.setdefault("new_session_id", lambda: f"session-{next(ids)}")
        options.setdefault("wire", DEFAULT_WIRE)
        self.server = HTTPServer(factory, **options)
        self.handler = handler
        self.events: list[tuple[Session, Event]] = []
        self.conns: dict[ServerChannel, RawConn] = {}
        self.validate = validate
        #: client request ids -> method, per session id (for validating results)
        self.closed_channels: list[ServerChannel] = []
        #: bytes written to channels that have no RawConn (tests feeding raw bytes)
        self.raw_out: dict[ServerChannel, bytearray] = {}

    def conn(self) -> RawConn:
        return RawConn(self)

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.server.handle_timeout(self.now)
        self.run()

    def run(self) -> None:
        server = self.server
        while True:
            progressed = False
            while (item := server.next_event()) is not NEED_DATA:
                progressed = True
                session, event = item
                self.events.append((session, event))
                if self.handler is not None:
                    self.handler(session, event)
            for channel, data in server.data_to_send():
                progressed = True
                conn = self.conns.get(channel)
                if conn is None:
                    self.raw_out.setdefault(channel, bytearray()).extend(data)
                    continue
                if data:
                    conn.receive(data)
                if channel.closed:
                    self.closed_channels.append(channel)
                    conn.server_closed()
            if not progressed:
                return

    def events_of(self, kind: type[Event]) -> list[Any]:
        return [e for _, e in self.events if isinstance(e, kind)]

    def initialize(self, conn: RawConn | None = None, version: str = "2025-11-25") -> str:
        """Run the handshake; return the session id."""
        conn = conn or self.conn()
        r = conn.send(body=init_body(version))
        assert r.status == 200, r
        session_id = r.headers["mcp-session-id"]
        r2 = conn.send(body={"jsonrpc": "2.0", "method": "notifications/initialized"},
                       headers=self.session_headers(session_id, version))
        assert r2.status == 202, r2
        return session_id

    @staticmethod
    def session_headers(session_id: str, version: str = "2025-11-25") -> list[tuple[str, str]]:
        return [("mcp-session-id", session_id), ("mcp-protocol-version", version)]


def validate_messages(revision: str, messages: list[Any], methods: dict[Any, str]) -> None:
    for message in messages:
        schemas.validate_message(revision, message, methods)


# -- client and server wired together --------------------------------------------------------


class RecordingServerConnection(ServerConnection):
    """A server connection that records (and validates) every message it emits."""

    sent: list[Any]

    def encoded_messages_to_send(self) -> list[Any]:
        out = super().encoded_messages_to_send()
        self.__dict__.setdefault("sent", []).extend(m for m, _, _ in out)
        return out


class Network:
    """An :class:`HTTPClient` and an :class:`HTTPServer` wired back to back in memory: each
    client channel gets a server channel, bytes go through h11 on both sides, and a virtual
    clock drives both."""

    def __init__(
        self, server: HTTPServer, client: Any, *,
        server_handler: Handler | None = answer_everything,
        client_handler: Callable[[Event], None] | None = None,
    ) -> None:
        self.server = server
        self.client = client
        self.server_handler = server_handler
        self.client_handler = client_handler
        self.now = 0.0
        self.pairs: dict[Any, ServerChannel] = {}
        self.reverse: dict[ServerChannel, Any] = {}
        self.client_events: list[Event] = []
        self.server_events: list[tuple[Session, Event]] = []
        self.opened = 0  # TCP connections opened by the client
        #: raw bytes written by the server to each client channel
        self.down: dict[Any, bytearray] = {}
        self.up: dict[Any, bytearray] = {}
        self.refuse_connections = False

    def run(self, limit: int = 1000) -> None:
        client, server = self.client, self.server
        for _ in range(limit):
            progressed = False
            while (event := client.next_event()) is not NEED_DATA:
                progressed = True
                self.client_events.append(event)
                if self.client_handler is not None:
                    self.client_handler(event)
            for channel, data in client.data_to_send():
                progressed = True
                peer = self.pairs.get(channel)
                if peer is None:
                    if self.refuse_connections:
                        channel.connection_lost(now=self.now)
                        continue
                    peer = server.new_channel(now=self.now)
                    self.pairs[channel] = peer
                    self.reverse[peer] = channel
                    self.opened += 1
                if data:
                    self.up.setdefault(channel, bytearray()).extend(data)
                    peer.receive_data(data, now=self.now)
                if channel.closed:
                    peer.receive_data(b"", now=self.now)
            while (item := server.next_event()) is not NEED_DATA:
                progressed = True
                self.server_events.append(item)
                if self.server_handler is not None:
                    self.server_handler(*item)
            for peer, data in server.data_to_send():
                progressed = True
                channel = self.reverse.get(peer)
                if channel is None:
                    continue
                if data:
                    self.down.setdefault(channel, bytearray()).extend(data)
                    channel.receive_data(data, now=self.now)
                if peer.closed:
                    channel.receive_data(b"", now=self.now)
            if not progressed:
                return
        raise AssertionError("the network did not settle")

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.client.handle_timeout(self.now)
        self.server.handle_timeout(self.now)
        self.run()

    def drop(self, client_channel: Any) -> None:
        """The network drops one TCP connection (both ends see it break)."""
        peer = self.pairs.get(client_channel)
        if peer is not None:
            peer.connection_lost(now=self.now)
        client_channel.connection_lost(now=self.now)
        self.run()

    def events_of(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.client_events if isinstance(e, kind)]

    def server_events_of(self, kind: type[Event]) -> list[Any]:
        return [e for _, e in self.server_events if isinstance(e, kind)]
