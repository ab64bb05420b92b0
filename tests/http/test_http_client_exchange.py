"""The client side of the exchange seam: the HTTP client driven with exchange events only, no
bytes and no h11 -- what an application with its own HTTP library (httpx, aiohttp) sends and
hands back -- against hand-made responses and against the HTTP server's own exchange side;
and the h11 client wire as a producer and consumer of the same events."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio import (
    NEED_DATA,
    ClientConnection,
    Era,
    Event,
    Initialized,
    Progress,
    Request,
    RequestCancelled,
    Response,
    ServerConnection,
)
from mcp_sansio.http import HTTPClient, HTTPServer, Session
from mcp_sansio.http._client import SessionRenewed, Transport, TransportFailed
from mcp_sansio.http._client_exchange import ClientExchangeWire
from mcp_sansio.http._exchange import (
    ClientExchangeInput,
    ClientExchangeOutput,
    CloseConnection,
    PeerClosed,
    RequestData,
    RequestEnded,
    RequestStarted,
    ResponseData,
    ResponseEnded,
    ResponseStarted,
)
from mcp_sansio.http._headers import Headers
from mcp_sansio.http._server import ServerChannel
from mcp_sansio.http._wire import ClientWire
from tests.http_util import CLIENT_INFO, SERVER_INFO, result_for

URL = "http://localhost:8000/mcp"
SL = "2026-07-28"
HS = "2025-11-25"


# -- the client against the server, both on the seam ---------------------------------------


class EventNetwork:
    """An events-only :class:`HTTPClient` and an :class:`HTTPServer` whose channels are
    exchanges: each client channel gets a server exchange, and only exchange events cross."""

    def __init__(self, *, client_versions: list[str], handler: Any = None, url: str = URL,
                 server_options: dict[str, Any] | None = None,
                 **client_options: Any) -> None:
        ids = itertools.count(1)
        self.server = HTTPServer(
            lambda: ServerConnection(info=SERVER_INFO, capabilities={"tools": {}}),
            new_session_id=lambda: f"session-{next(ids)}", **(server_options or {}))
        self.client = HTTPClient(
            ClientConnection(info=CLIENT_INFO, versions=client_versions), url, events=True,
            **client_options)
        self.handler = handler if handler is not None else self.answer
        self.now = 0.0
        self.pairs: dict[Any, ServerChannel] = {}
        self.reverse: dict[ServerChannel, Any] = {}
        self.client_events: list[Event] = []
        self.sent: list[tuple[Any, ClientExchangeOutput]] = []  # what the client sent
        self.heads: list[ResponseStarted] = []  # the response heads it received
        self.requests: list[tuple[Session, Request]] = []

    def answer(self, session: Session, event: Any) -> None:
        if isinstance(event, Request):
            self.requests.append((session, event))
            session.connection.send_response(event.request_id, result_for(event.method))

    def run(self, limit: int = 1000) -> None:
        client, server = self.client, self.server
        for _ in range(limit):
            progressed = False
            while (event := client.next_event()) is not NEED_DATA:
                progressed = True
                self.client_events.append(event)
            for channel, events in client.events_to_send():
                progressed = True
                peer = self.pairs.get(channel)
                if peer is None:
                    peer = server.new_exchange(now=self.now)
                    self.pairs[channel] = peer
                    self.reverse[peer] = channel
                for sent in events:
                    self.sent.append((channel, sent))
                    if isinstance(sent, CloseConnection):
                        peer.receive_event(PeerClosed(), now=self.now)
                    else:
                        peer.receive_event(sent, now=self.now)
            while (item := server.next_event()) is not NEED_DATA:
                progressed = True
                self.handler(*item)
            assert all(not data for _, data in server.data_to_send())  # no bytes, ever
            for peer, channel in list(self.reverse.items()):
                for out in peer.events_to_send():
                    progressed = True
                    if isinstance(out, CloseConnection):
                        channel.receive_event(PeerClosed(), now=self.now)
                        continue
                    if isinstance(out, ResponseStarted):
                        self.heads.append(out)
                    channel.receive_event(out, now=self.now)
            if not progressed:
                return
        raise AssertionError("the network did not settle")

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.client_events if isinstance(e, kind)]


def test_a_handshake_era_session_runs_on_events_only() -> None:
    net = EventNetwork(client_versions=[HS])
    net.client.connect(now=0)
    net.run()
    (init,) = net.of(Initialized)
    assert init.protocol_version == HS and net.client.session_id == "session-1"
    conn = net.client.connection
    rid = conn.send_request("tools/call", {"name": "echo", "arguments": {}}, now=net.now)
    net.run()
    (response,) = [e for e in net.of(Response) if e.request_id == rid]
    assert response.result["content"][0]["text"] == "ok"
    # What the client sent: whole requests as head, body, end -- the standalone GET included.
    heads = [e for _, e in net.sent if isinstance(e, RequestStarted)]
    assert [(h.method, h.target) for h in heads] == [
        ("POST", "/mcp"), ("POST", "/mcp"), ("GET", "/mcp"), ("POST", "/mcp")]
    assert heads[2].content_length is None and heads[2].headers.get("accept") == \
        "text/event-stream"
    post = heads[3]
    body = [e.data for c, e in net.sent if isinstance(e, RequestData)][-1]
    assert post.content_length == len(body) and json.loads(body)["method"] == "tools/call"
    assert post.headers.get("mcp-session-id") == "session-1"
    assert post.headers.get("mcp-protocol-version") == HS
    assert all(isinstance(c.wire, ClientExchangeWire) for c in net.pairs)
    # The end of the session: DELETE, and every connection is dropped.
    net.client.close(now=net.now)
    net.run()
    assert [e.method for _, e in net.sent if isinstance(e, RequestStarted)][-1] == "DELETE"
    assert "session-1" not in net.server.sessions
    assert all(c.closed for c in net.pairs)


def test_a_forgotten_session_is_renewed_over_events() -> None:
    net = EventNetwork(client_versions=[HS])
    net.client.connect(now=0)
    net.run()
    net.server.end_session("session-1")
    net.run()
    rid = net.client.connection.send_request("tools/list", now=net.now)
    net.run()
    assert net.of(SessionRenewed) == [SessionRenewed(previous_session_id="session-1",
                                                     session_id="session-2")]
    assert [e.request_id for e in net.of(Response)] == [rid]


def test_the_legacy_http_sse_fallback_runs_over_events() -> None:
    net = EventNetwork(client_versions=["2024-11-05"], url="http://localhost:8000/sse",
                       server_options={"legacy_sse_path": "/sse"})
    net.client.connect(now=0)
    net.run()
    assert net.client.transport is Transport.LEGACY
    assert net.of(Initialized)[0].protocol_version == "2024-11-05"
    rid = net.client.connection.send_request("tools/list", now=net.now)
    net.run()
    assert [e.request_id for e in net.of(Response)] == [rid]
    assert next(iter(net.server.sessions.values())).legacy


def test_a_stateless_call_with_progress_streams_over_events() -> None:
    def handler(session: Session, event: Any) -> None:
        if isinstance(event, Request) and event.method == "tools/call":
            session.connection.send_progress(event.request_id, 1, total=2)
            session.connection.send_response(event.request_id, result_for("tools/call"))

    net = EventNetwork(client_versions=[SL], handler=handler)
    net.client.connect(now=0)
    net.run()
    assert net.client.connection.era is Era.STATELESS
    rid = net.client.connection.send_request("tools/call", {"name": "echo", "arguments": {}},
                                             progress=True, now=net.now)
    net.run()
    assert [e.progress for e in net.of(Progress)] == [1]
    assert [e.request_id for e in net.of(Response)] == [rid]
    # The answer came on an SSE stream (progress first), read as it streamed.
    assert ("content-type", "text/event-stream") in net.heads[-1].headers
    assert net.heads[-1].content_length is None
    head = [e for _, e in net.sent if isinstance(e, RequestStarted)][-1]
    assert head.headers.get("mcp-method") == "tools/call"
    assert head.headers.get("mcp-name") == "echo"


# -- hand-made responses ---------------------------------------------------------------------


def discover_result(request_id: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {
        "resultType": "complete", "supportedVersions": [SL], "capabilities": {"tools": {}},
        "ttlMs": 0, "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}}}).encode()


def drain(client: HTTPClient) -> list[Event]:
    out = []
    while (event := client.next_event()) is not NEED_DATA:
        out.append(event)
    return out


def answer(channel: Any, events: list[ClientExchangeInput]) -> None:
    for event in events:
        channel.receive_event(event, now=0)


def json_answer(body: bytes, status: int = 200) -> list[ClientExchangeInput]:
    return [ResponseStarted(status=status, headers=(("Content-Type", "application/json"),),
                            content_length=len(body)),
            ResponseData(body), ResponseEnded()]


def sse_head() -> ResponseStarted:
    return ResponseStarted(status=200, headers=(("Content-Type", "text/event-stream"),
                                                ("Cache-Control", "no-cache")))


def stateless_client() -> HTTPClient:
    """A client settled in 2026-07-28 by a hand-made answer to its probe."""
    client = HTTPClient(ClientConnection(info=CLIENT_INFO, versions=[SL]), URL, events=True)
    probe = client.connect(now=0)
    ((channel, events),) = client.events_to_send()
    assert isinstance(events[0], RequestStarted) and isinstance(events[-1], RequestEnded)
    assert json.loads(events[1].data)["method"] == "server/discover"  # type: ignore[union-attr]
    answer(channel, json_answer(discover_result(probe)))
    (init,) = drain(client)
    assert isinstance(init, Initialized) and client.connection.era is Era.STATELESS
    return client


def call(client: HTTPClient) -> tuple[Any, Any]:
    rid = client.connection.send_request("tools/call", {"name": "echo", "arguments": {}},
                                         progress=True, now=0)
    ((channel, events),) = client.events_to_send()
    head = events[0]
    assert isinstance(head, RequestStarted) and head.method == "POST"
    assert head.headers.get("mcp-method") == "tools/call"
    assert head.content_length == len(events[1].data)  # type: ignore[union-attr]
    return rid, channel


def sse_body(rid: Any, token: Any) -> bytes:
    progress = {"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 1}}
    response = {"jsonrpc": "2.0", "id": rid, "result": result_for("tools/call")}
    return (b": keep-alive\n\n"
            b"event: message\ndata: " + json.dumps(progress).encode() + b"\n\n"
            b"event: message\r\ndata: " + json.dumps(response).encode() + b"\r\n\r\n")


def token_of(client: HTTPClient, rid: Any) -> Any:
    exchange = client._by_id[rid]
    return exchange.message["params"]["_meta"]["progressToken"]


def test_a_stateless_call_answered_with_hand_made_sse_events() -> None:
    client = stateless_client()
    rid, channel = call(client)
    answer(channel, [sse_head(), ResponseData(sse_body(rid, token_of(client, rid))),
                     ResponseEnded()])
    events = drain(client)
    assert [type(e).__name__ for e in events] == ["Progress", "Response"]
    assert isinstance(events[1], Response) and events[1].request_id == rid
    assert events[1].result["content"][0]["text"] == "ok"
    # The connection is kept for the next request (keep-alive is the library's business).
    rid2, again = call(client)
    assert again is channel
    answer(channel, json_answer(json.dumps(
        {"jsonrpc": "2.0", "id": rid2, "result": result_for("tools/call")}).encode()))
    assert [e.request_id for e in drain(client) if isinstance(e, Response)] == [rid2]


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


def _summary(events: list[Event]) -> list[tuple[str, Any]]:
    return [(type(e).__name__, getattr(e, "result", None) or getattr(e, "progress", None))
            for e in events]


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
       sse=st.booleans())
def test_a_body_cut_anywhere_gives_the_same_events_as_whole(cuts: list[int],
                                                            sse: bool) -> None:
    results = []
    for pieces in (None, cuts):
        client = stateless_client()
        rid, channel = call(client)
        if sse:
            body = sse_body(rid, token_of(client, rid))
            head = sse_head()
        else:
            body = json.dumps({"jsonrpc": "2.0", "id": rid,
                               "result": result_for("tools/call")}).encode()
            head = json_answer(body)[0]  # type: ignore[assignment]
        chunks = [body] if pieces is None else _split(body, pieces)
        answer(channel, [head, *(ResponseData(c) for c in chunks), ResponseEnded()])
        results.append(_summary(drain(client)))
    assert results[0] == results[1]
    assert results[0][-1][0] == "Response"


def test_the_peer_closing_mid_sse_ends_a_stateless_request() -> None:
    client = stateless_client()
    rid, channel = call(client)
    body = sse_body(rid, token_of(client, rid))
    cut = body.index(b"event: message\r\n")  # the progress arrived, the answer did not
    answer(channel, [sse_head(), ResponseData(body[:cut + 20])])
    assert [type(e).__name__ for e in drain(client)] == ["Progress"]
    answer(channel, [PeerClosed()])
    events = drain(client)
    assert [type(e).__name__ for e in events] == ["TransportFailed", "RequestCancelled"]
    assert isinstance(events[1], RequestCancelled) and events[1].request_id == rid
    assert "broken" in (events[1].reason or "")
    assert channel.closed
    # Nothing is sent for it (the stream's end is the cancellation); the closed connection is
    # reported once, and the next call takes a new one.
    assert client.events_to_send() == [(channel, [])]
    _, fresh = call(client)
    assert fresh is not channel


def test_the_peer_closing_mid_sse_resumes_a_handshake_stream_with_last_event_id() -> None:
    net = EventNetwork(client_versions=[HS], standalone_stream=False)
    net.client.connect(now=0)
    net.run()
    client = net.client
    rid = client.connection.send_request("tools/call", {"name": "slow", "arguments": {}},
                                         now=0)
    ((channel, events),) = client.events_to_send()
    assert isinstance(events[0], RequestStarted)
    # The server (hand-made from here) opens a stream, sends one event with an id, breaks.
    answer(channel, [sse_head(), ResponseData(b"id: s-1\nretry: 500\ndata: \n\n"),
                     PeerClosed()])
    assert drain(client) == []
    assert client.events_to_send() == [(channel, [])]  # closed: dropped, once
    assert client.events_to_send() == [] and client.next_deadline() == 0.5
    client.handle_timeout(0.5)
    ((resume, events),) = client.events_to_send()
    head = events[0]
    assert isinstance(head, RequestStarted) and head.method == "GET"
    assert head.headers.get("last-event-id") == "s-1"
    assert head.headers.get("mcp-session-id") == "session-1"
    response = {"jsonrpc": "2.0", "id": rid, "result": result_for("tools/call")}
    answer(resume, [sse_head(), ResponseData(
        b"id: s-2\nevent: message\ndata: " + json.dumps(response).encode() + b"\n\n"),
        ResponseEnded()])
    assert [e.request_id for e in drain(client) if isinstance(e, Response)] == [rid]


def test_a_stateless_cancel_closes_the_request_connection() -> None:
    client = stateless_client()
    rid, channel = call(client)
    answer(channel, [sse_head()])
    client.connection.cancel(rid, reason="no longer needed", now=0)
    drain(client)
    out = client.events_to_send()
    assert out == [(channel, [CloseConnection()])] and channel.closed


@pytest.mark.parametrize("events", [
    [ResponseData(b"{}"), ResponseEnded()],
    [ResponseEnded()],
    [sse_head(), sse_head()],
], ids=["body-before-head", "end-before-head", "two-heads"])
def test_events_out_of_order_fail_the_request_and_raise_nothing(
        events: list[ClientExchangeInput]) -> None:
    client = stateless_client()
    rid, channel = call(client)
    answer(channel, events)
    got = drain(client)
    assert any(isinstance(e, RequestCancelled) and e.request_id == rid for e in got)
    assert channel.closed
    channel.receive_event(ResponseEnded(), now=0)  # after the end: ignored


def test_an_informational_head_is_skipped() -> None:
    client = stateless_client()
    rid, channel = call(client)
    body = json.dumps({"jsonrpc": "2.0", "id": rid,
                       "result": result_for("tools/call")}).encode()
    answer(channel, [ResponseStarted(status=103, headers=()), *json_answer(body)])
    assert [e.request_id for e in drain(client) if isinstance(e, Response)] == [rid]


def test_a_refusal_reaches_the_application_with_lower_case_headers() -> None:
    client = stateless_client()
    rid, channel = call(client)
    answer(channel, [ResponseStarted(status=503, headers=(("Retry-After", "1"),
                                                          ("Content-Type", "text/plain"))),
                     ResponseData(b"busy"), ResponseEnded()])
    events = drain(client)
    (failed,) = [e for e in events if isinstance(e, TransportFailed)]
    assert failed.status == 503 and ("retry-after", "1") in failed.headers
    assert failed.request_ids == (rid,)


def test_the_two_ways_in_and_out_do_not_mix() -> None:
    client = stateless_client()
    with pytest.raises(TypeError):
        client.data_to_send()
    plain = HTTPClient(ClientConnection(info=CLIENT_INFO, versions=[SL]), URL)
    plain.connect(now=0)
    ((channel, data),) = plain.data_to_send()
    assert data.startswith(b"POST /mcp HTTP/1.1\r\n")
    assert channel.events_to_send() == []
    with pytest.raises(TypeError):
        plain.events_to_send()
    with pytest.raises(TypeError):
        channel.receive_event(ResponseEnded(), now=0)


# -- the h11 client wire on the seam ---------------------------------------------------------


def test_the_h11_wire_writes_request_events_as_send_request_does() -> None:
    headers = [("host", "localhost:8000"), ("accept", "application/json, text/event-stream"),
               ("content-type", "application/json")]
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    direct = ClientWire()
    direct.send_request("POST", "/mcp", headers, body)
    by_events = ClientWire()
    for event in (RequestStarted(method="POST", target="/mcp",
                                 headers=Headers.from_pairs(headers),
                                 content_length=len(body)),
                  RequestData(body[:10]), RequestData(body[10:]), RequestEnded()):
        by_events.send(event)
    assert by_events.data_to_send() == direct.data_to_send()
    assert by_events.busy
    get = ClientWire()
    get.send(RequestStarted(method="GET", target="/mcp", headers=Headers.from_pairs(
        [("host", "h")])))
    get.send(RequestEnded())
    assert get.data_to_send() == b"GET /mcp HTTP/1.1\r\nhost: h\r\n\r\n"
    get.send(CloseConnection())
    assert get.closed


def test_the_h11_wire_reads_a_response_as_exchange_events() -> None:
    wire = ClientWire()
    wire.send_request("POST", "/mcp", [("host", "h")], b"{}")
    wire.data_to_send()
    wire.receive_data(b"HTTP/1.1 100 Continue\r\n\r\n"
                      b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n5\r\ndata:\r\n")
    head = wire.next_exchange_event()
    assert head == ResponseStarted(status=200, headers=(
        ("content-type", "text/event-stream"), ("transfer-encoding", "chunked")))
    assert wire.next_exchange_event() == ResponseData(b"data:")
    assert wire.next_exchange_event() is None
    wire.receive_data(b"")
    assert wire.next_exchange_event() == PeerClosed() and wire.closed
    sized = ClientWire()
    sized.send_request("GET", "/mcp", [("host", "h")])
    sized.receive_data(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    assert sized.next_exchange_event() == ResponseStarted(
        status=200, headers=(("content-length", "2"),), content_length=2)
    assert [sized.next_exchange_event(), sized.next_exchange_event()] == [
        ResponseData(b"ok"), ResponseEnded()]
    assert not sized.busy and not sized.closed
