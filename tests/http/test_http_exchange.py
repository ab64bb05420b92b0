"""The exchange seam: the HTTP server driven with parsed requests as events, no bytes and no
h11 -- what any parser (an ASGI server, another HTTP/1.1 parser) hands over and takes back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from mcp_sansio import NEED_DATA, CancelRequested, Request, ServerConnection
from mcp_sansio.http import SSEParser
from mcp_sansio.http._exchange import (
    CloseConnection,
    ExchangeOutput,
    PeerClosed,
    RequestData,
    RequestEnded,
    RequestStarted,
    ResponseData,
    ResponseEnded,
    ResponseStarted,
)
from mcp_sansio.http._exchange_wire import ExchangeWire
from mcp_sansio.http._headers import Headers
from mcp_sansio.http._server import HTTPServer, ServerChannel, Session
from mcp_sansio.http._wire import ServerWire
from tests.http_util import ACCEPT_BOTH, HOST, SERVER_INFO, init_body, result_for, stateless_meta

V = "2025-11-25"


class Exchange:
    """One connection of a parser that is not h11: requests in as events, events out."""

    def __init__(self, server: HTTPServer) -> None:
        self.server = server
        self.channel: ServerChannel = server.new_exchange(now=0.0)
        self.out: list[ExchangeOutput] = []

    def request(self, method: str, body: Any = None, headers: Sequence[tuple[str, str]] = (),
                *, pieces: int = 1, end: bool = True) -> None:
        raw = [("host", HOST), ("accept", ACCEPT_BOTH), *headers]
        data = b""
        if body is not None:
            data = json.dumps(body).encode()
            raw.append(("content-type", "application/json"))
        self.channel.receive_event(RequestStarted(
            method=method, target="/mcp",
            headers=Headers.from_raw([(k.encode(), v.encode()) for k, v in raw])), now=0.0)
        step = max(1, -(-len(data) // pieces))
        for i in range(0, len(data), step):  # the body as the parser got it, in pieces
            self.channel.receive_event(RequestData(data[i:i + step]), now=0.0)
        if end:
            self.channel.receive_event(RequestEnded(), now=0.0)

    def pump(self, answer: bool = True) -> list[tuple[Session, Any]]:
        """Run the application (answering every request when ``answer``); collect output."""
        seen = []
        while (item := self.server.next_event()) is not NEED_DATA:
            session, event = item
            seen.append(item)
            if answer and isinstance(event, Request):
                session.connection.send_response(event.request_id, result_for(event.method))
                session.flush()
        self.server.data_to_send()
        self.out.extend(self.channel.events_to_send())
        return seen

    def response(self) -> tuple[ResponseStarted, bytes, bool]:
        """The first response in the output (head, body so far, ended), taken off."""
        head = self.out.pop(0)
        assert isinstance(head, ResponseStarted), head
        body = b""
        while self.out and isinstance(self.out[0], ResponseData):
            body += self.out.pop(0).data  # type: ignore[union-attr]
        ended = bool(self.out) and isinstance(self.out[0], ResponseEnded)
        if ended:
            self.out.pop(0)
        return head, body, ended


def new_server(**options: Any) -> HTTPServer:
    return HTTPServer(
        lambda: ServerConnection(info=SERVER_INFO, capabilities={"tools": {"listChanged": True}}),
        new_session_id=lambda: "session-1", **options)


def handshake(x: Exchange) -> str:
    x.request("POST", init_body(V), pieces=3)
    x.pump()
    head, body, ended = x.response()
    assert head.status == 200 and ended
    headers = dict(head.headers)
    assert headers["content-type"] == "application/json"
    assert head.content_length == len(body)
    assert json.loads(body)["result"]["protocolVersion"] == V
    sid = headers["mcp-session-id"]
    x.request("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"},
              [("mcp-session-id", sid), ("mcp-protocol-version", V)])
    x.pump()
    head, body, ended = x.response()
    assert (head.status, body, ended) == (202, b"", True)
    return sid


def test_post_initialize_gets_a_json_answer_and_a_session() -> None:
    x = Exchange(new_server())
    assert handshake(x) == "session-1"
    assert "session-1" in x.server.sessions
    # The exchange is kept alive between requests: a second request is served on it.
    x.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
              [("mcp-session-id", "session-1"), ("mcp-protocol-version", V)])
    x.pump()
    head, body, ended = x.response()
    assert head.status == 200 and ended and json.loads(body)["result"] == {"tools": []}
    assert not x.channel.closed


def test_an_sse_stream_carries_two_events_then_ends() -> None:
    x = Exchange(new_server())
    sid = handshake(x)
    x.request("POST", {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {},
                                  "_meta": {"progressToken": "p"}}},
              [("mcp-session-id", sid), ("mcp-protocol-version", V)])
    ((session, request),) = [item for item in x.pump(answer=False)
                             if isinstance(item[1], Request)]
    session.connection.send_progress(request.request_id, 1, 2, "half")
    session.connection.send_response(request.request_id, {"content": [], "isError": False})
    session.flush()
    x.pump()
    head, body, ended = x.response()
    assert head.status == 200 and head.content_length is None and ended
    assert dict(head.headers)["content-type"] == "text/event-stream"
    events = [e for e in SSEParser().feed(body) if e.data]
    messages = [json.loads(e.data) for e in events]
    assert [m.get("method") for m in messages] == ["notifications/progress", None]
    assert messages[1]["id"] == 7


def test_a_get_listen_stream_gets_unrelated_messages() -> None:
    server = new_server()
    x = Exchange(server)
    sid = handshake(x)
    listen = Exchange(server)
    listen.request("GET", None, [("mcp-session-id", sid), ("mcp-protocol-version", V)])
    listen.pump()
    head = listen.out[0]
    assert isinstance(head, ResponseStarted) and head.status == 200
    assert dict(head.headers)["content-type"] == "text/event-stream"
    assert server.broadcast("notifications/tools/list_changed") == 1
    listen.pump()
    data = b"".join(e.data for e in listen.out if isinstance(e, ResponseData))
    methods = [json.loads(e.data)["method"] for e in SSEParser().feed(data) if e.data]
    assert methods == ["notifications/tools/list_changed"]
    assert not any(isinstance(e, ResponseEnded) for e in listen.out)  # still open


def test_delete_ends_the_session() -> None:
    x = Exchange(new_server())
    sid = handshake(x)
    x.request("DELETE", None, [("mcp-session-id", sid), ("mcp-protocol-version", V)])
    x.pump()
    head, _, ended = x.response()
    assert head.status == 200 and ended
    assert sid not in x.server.sessions


def test_the_peer_closing_mid_stream_cancels_a_stateless_request() -> None:
    x = Exchange(new_server())
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "slow", "arguments": {}, "_meta": stateless_meta()}}
    x.request("POST", call, [("mcp-protocol-version", "2026-07-28"),
                             ("mcp-method", "tools/call"), ("mcp-name", "slow")])
    seen = x.pump(answer=False)
    assert any(isinstance(e, Request) for _, e in seen)
    x.channel.receive_event(PeerClosed(), now=0.0)
    seen = x.pump(answer=False)
    assert [e.request_id for _, e in seen if isinstance(e, CancelRequested)] == [3]
    assert x.channel.closed


def test_head_gets_get_headers_and_no_content() -> None:
    x = Exchange(new_server())
    x.request("HEAD", None)  # no session: answered with an error whose length is kept
    x.pump()
    head, body, ended = x.response()
    assert head.status == 400 and body == b"" and ended and head.content_length


def test_an_oversized_body_is_413_and_closes() -> None:
    x = Exchange(new_server(max_body_size=100))
    x.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "x" * 200},
              pieces=4)
    x.pump()
    head, body, ended = x.response()
    assert head.status == 413 and ended and b"100 bytes" in body
    assert x.out == [CloseConnection()] and x.channel.closed


def test_requests_handed_over_together_are_answered_in_order() -> None:
    x = Exchange(new_server())
    for i in (1, 2):
        x.request("POST", {"jsonrpc": "2.0", "id": i, "method": "ping"})  # no session: 400
    x.pump()
    first, second = x.response(), x.response()
    assert first[0].status == second[0].status == 400 and first[2] and second[2]


def test_an_h11_channel_takes_no_exchange_events() -> None:
    server = new_server()
    channel = server.new_channel(now=0.0)
    with pytest.raises(TypeError):
        channel.receive_event(PeerClosed())
    assert channel.events_to_send() == []


# -- the h11 wire as one producer and consumer of the same events ------------------------------


def test_the_h11_wire_produces_exchange_events() -> None:
    wire = ServerWire(max_body_size=1000)
    wire.receive_data(b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      b"3\r\nabc\r\n")
    started = wire.next_event()
    assert isinstance(started, RequestStarted)
    assert (started.method, started.target, started.http_version) == ("POST", "/mcp", "1.1")
    assert started.headers.get("host") == "x"
    assert wire.next_event() == RequestData(b"abc")
    assert wire.next_event() is None  # the rest of the body has not come
    wire.receive_data(b"2\r\nde\r\n0\r\n\r\n")
    assert wire.next_event() == RequestData(b"de")
    assert wire.next_event() == RequestEnded()
    assert wire.busy and wire.next_event() is None  # nothing more until the answer
    wire.send(ResponseStarted(status=200, headers=(("content-type", "text/plain"),),
                              content_length=2))
    wire.send(ResponseData(b"ok"))
    wire.send(ResponseEnded())
    assert not wire.busy and wire.data_to_send().endswith(b"\r\n\r\nok")
    wire.receive_data(b"")
    assert wire.peer_closed and wire.closed and wire.next_event() is None


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_exchange_output_through_the_h11_wire_is_what_the_wire_writes_itself(
        method: str) -> None:
    """The same two answers (whole, then streamed), given to the h11 wire as calls and as an
    exchange's output events, are the same bytes; HEAD's without content."""
    request = f"{method} /mcp HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    direct = ServerWire(max_body_size=100)
    direct.receive_data(request * 2)
    exchange = ExchangeWire(max_body_size=100)
    translated = ServerWire(max_body_size=100)
    translated.receive_data(request * 2)
    for target in (direct, exchange):
        for turn in range(2):
            if target is exchange:
                exchange.receive_event(RequestStarted(
                    method=method, target="/mcp", headers=Headers.from_pairs([("host", "x")])))
                exchange.receive_event(RequestEnded())
                assert translated.next_request() is not None
            assert target.next_request() is not None
            if turn == 0:
                target.respond(404, [("content-type", "application/json")], b'{"a": 1}')
            else:
                target.start_response(200, [("content-type", "text/event-stream")])
                target.send_body(b"data: 1\n\n")
                target.end_response()
            if target is exchange:
                for event in exchange.events_to_send():
                    translated.send(event)
    written = direct.data_to_send()
    assert translated.data_to_send() == written
    assert (b"data: 1" in written) == (method == "GET")
    assert not translated.closed and not translated.busy
