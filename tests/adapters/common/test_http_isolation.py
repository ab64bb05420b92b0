"""One connection cannot end the server or disturb another, on every runtime's real HTTP
server (asyncio, trio, threads) over loopback: an unexpected exception while handling one
connection is logged once and ends that connection alone (500 first, as nothing was sent
yet) while a client already connected and a new one are served; hostile requests (HEAD,
conflicting framing, obs-fold, every request-target form, odd methods, invalid bytes, huge
heads, HTTP/1.0, ``Expect``) are answered as the sans-IO server answers them in memory
(tests/http/test_http_rfc9112.py) and the server goes on; pipelined requests are answered in order;
``Connection: close`` and HTTP/1.0 end the connection after one response. The asyncio and
trio servers run in a thread of their own."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from mcp_sansio.adapters import threading as threading_adapter

from mcp_sansio.app.server import Server
from mcp_sansio.http import HTTPServer, ServerChannel, _server
from mcp_sansio.http._wire import ServerWire
from mcp_sansio.http._wire_httptools import DIFFERENCES
from tests import http_util
from tests.http_raw import Reply, chunked, parse, ping, post
from tests.http_stories import (
    GUARD,
    SyncConn,
    asyncio_service,
    no_leaked_threads,  # noqa: F401 - a fixture
    trio_service,
)
from tests.http_util import init_body

RUNTIMES = ["asyncio", "trio", "threading"]
HOST = b"127.0.0.1"

pytestmark = pytest.mark.usefixtures("no_leaked_threads")


def example_server() -> Server:
    server = Server("http-isolation")

    @server.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    return server


@contextlib.contextmanager
def serving(runtime: str) -> Iterator[int]:
    """An example server over HTTP on ``runtime`` while the block runs: its port."""
    server = example_server()
    wire = http_util.DEFAULT_WIRE  # both wires where a test asks for server_wire
    if runtime == "threading":
        with threading_adapter.start_http(server, wire=wire) as service:
            yield service.port
        return
    with (asyncio_service if runtime == "asyncio" else trio_service)(server, wire=wire) as url:
        yield int(url.rsplit(":", 1)[1].split("/")[0])


def raw_exchange(port: int, data: bytes, methods: list[str] | None = None,
                 until_closed: bool = True, count: int = 1) -> tuple[list[Reply], bool]:
    """Send ``data`` on a new connection; read until the server closes (or, with
    ``until_closed`` False, until ``count`` final responses came); the responses, and
    whether the server closed."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
    try:
        sock.sendall(data)
        out = b""
        closed = False
        while True:
            if not until_closed:
                with contextlib.suppress(ValueError, IndexError):
                    if len([r for r in parse(out, methods or []) if r.status >= 200]) >= count:
                        break
            chunk = sock.recv(65536)
            if not chunk:
                closed = True
                break
            out += chunk
        return parse(out, methods or []), closed
    finally:
        sock.close()


def raw_post(body: bytes = json.dumps(init_body()).encode(), **kwargs: Any) -> bytes:
    return post(body, **kwargs).replace(b"localhost:8000", HOST)


def session_names(port: int) -> tuple[SyncConn, bytes]:
    """A keep-alive client with a live session, and the header lines naming the session."""
    conn = SyncConn(port)
    status, headers, _ = conn.request("POST", init_body())
    assert status == 200
    session_id = headers["mcp-session-id"]
    names = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    assert conn.request("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                        names)[0] == 202
    return conn, (b"Mcp-Session-Id: " + session_id.encode()
                  + b"\r\nMCP-Protocol-Version: 2025-11-25\r\n")


def still_served(conn: SyncConn, port: int) -> None:
    """The already-connected client (on its same connection) and a new one are answered."""
    status, _, messages = conn.request("POST", init_body(request_id=7))
    assert status == 200 and messages[-1]["id"] == 7
    fresh = SyncConn(port)
    try:
        assert fresh.request("POST", init_body())[0] == 200
    finally:
        fresh.close()


#: A compiled class's methods cannot be patched: the tests that patch one to raise where nothing
#: else would run on the pure build (the reference) only.
pure_only = pytest.mark.skipif(not str(_server.__file__).endswith(".py"),
                               reason="patches a method of a class the compiled build compiles")


@pure_only
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_exception_in_one_connection_ends_that_connection_only(
        runtime: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    original = HTTPServer._post

    def boom(self: HTTPServer, channel: ServerChannel, request: Any) -> None:
        if "x-boom" in request.headers:
            raise RuntimeError("an unexpected failure, secret detail")
        original(self, channel, request)

    monkeypatch.setattr(HTTPServer, "_post", boom)
    caplog.set_level(logging.ERROR, logger="mcp_sansio")
    with serving(runtime) as port:
        conn = SyncConn(port)
        assert conn.request("POST", init_body())[0] == 200  # connected before, kept alive
        # the failing request, with a pipelined one behind it that must not be served
        replies, closed = raw_exchange(port, raw_post(extra=b"X-Boom: 1\r\n") + raw_post())
        assert [r.status for r in replies] == [500] and closed
        assert replies[0].header("connection") == "close"
        assert b"secret detail" not in replies[0].body  # logged, never sent
        still_served(conn, port)
        conn.close()
    failures = [r for r in caplog.records if r.exc_info and "secret detail" in str(r.exc_info[1])]
    assert len(failures) == 1, caplog.records  # logged once


@pure_only
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_exception_in_the_pump_ends_the_connection_and_the_server_goes_on(
        runtime: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # A failure outside the sans-IO channel's own handling of its input (in the pump, as
    # the answer goes out): the adapter contains it, the connection ends, the server goes on.
    original = ServerWire.data_to_send
    fail = {"armed": False}

    def boom(self: ServerWire) -> bytes:
        data = original(self)
        if fail["armed"] and b"HTTP/1.1 200" in data:
            fail["armed"] = False
            raise RuntimeError("a failure on the way out")
        return data

    caplog.set_level(logging.ERROR, logger="mcp_sansio")
    with serving(runtime) as port:
        conn = SyncConn(port)
        assert conn.request("POST", init_body())[0] == 200
        monkeypatch.setattr(ServerWire, "data_to_send", boom)
        fail["armed"] = True
        _, closed = raw_exchange(port, raw_post())
        assert closed and not fail["armed"]
        monkeypatch.undo()
        still_served(conn, port)
        conn.close()
    assert any(r.exc_info and "on the way out" in str(r.exc_info[1]) for r in caplog.records)


#: Hostile requests and what each gets (the sans-IO server's answers, in memory, are checked
#: rule by rule in tests/http/test_http_rfc9112.py): (raw request, method of each request, the
#: statuses, whether the server closes the connection after them).
HOSTILE: dict[str, tuple[bytes, list[str], list[int], bool]] = {
    "HEAD": (b"HEAD /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n",
             ["HEAD"], [400], False),
    "both framings": (raw_post(b"", length=False, extra=b"Content-Length: 3\r\n"
                               b"Transfer-Encoding: chunked\r\n") + chunked(b"abc"),
                      [], [400], True),
    "coding not chunked": (raw_post(b"", length=False, extra=b"Transfer-Encoding: chunked, x"
                                    b"\r\n") + chunked(b"abc"), [], [400], True),
    "bad chunk size": (raw_post(b"", length=False, extra=b"Transfer-Encoding: chunked\r\n")
                       + b"zz\r\nabc\r\n", [], [400], True),
    "obs-fold": (raw_post(extra=b"X-A: a\r\n b\r\n"), [], [400], True),
    "space before colon": (raw_post(extra=b"X-A : a\r\n"), [], [400], True),
    "NUL in a value": (raw_post(extra=b"X-A: a\x00b\r\n"), [], [400], True),
    "many fields": (raw_post(extra=b"".join(b"X-%d: a\r\n" % n for n in range(500))),
                    [], [431], True),
    "huge head": (raw_post(extra=b"X-A: " + b"a" * 70_000 + b"\r\n"), [], [431], True),
    "long target": (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", [], [414], True),
    "absolute-form": (raw_post(target=b"http://127.0.0.1/mcp"), [], [200], False),
    "absolute-form, foreign host": (raw_post(target=b"http://evil.example/mcp"), [], [403],
                                    False),
    "CONNECT": (b"CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n", [], [501], False),
    "OPTIONS *": (b"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", [], [200], False),
    "GET *": (b"GET * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", [], [400], False),
    "odd method": (b"BREW /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", [], [405], False),
    "invalid method byte": (b"G\xffT /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", [], [400], True),
    "not HTTP": (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(range(256)),
                 [], [400], True),
    "HTTP/1.0": (raw_post(version=b"HTTP/1.0"), [], [200], True),
    "Expect: 100-continue": (raw_post(extra=b"Expect: 100-continue\r\n"), [], [100, 200], False),
    "a body on GET": (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                      b"Content-Length: 3\r\n\r\nabc", [], [400], False),
}


#: Where the httptools wire answers a HOSTILE request otherwise, the entry of its documented
#: differences (mcp_sansio/http/_wire_httptools.py DIFFERENCES) that allows it, and its
#: answer: (statuses, whether it closes).
ON_LLHTTP: dict[str, tuple[str, list[int], bool]] = {
    "odd method": ("a method llhttp does not know (any token is a method for h11)", [400], True),
}


@pytest.mark.usefixtures("server_wire")
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_hostile_requests_are_answered_and_the_server_goes_on(runtime: str) -> None:
    with serving(runtime) as port:
        conn = SyncConn(port)
        assert conn.request("POST", init_body())[0] == 200
        for name, entry in HOSTILE.items():
            data, methods, statuses, closes = entry
            if http_util.DEFAULT_WIRE == "httptools" and name in ON_LLHTTP:
                why, statuses, closes = ON_LLHTTP[name]
                assert why in DIFFERENCES
            replies, closed = raw_exchange(port, data, methods, until_closed=closes,
                                           count=len([s for s in statuses if s >= 200]))
            assert [r.status for r in replies] == statuses, (name, replies)
            assert closed is closes, name
            assert all(r.body == b"" for r in replies if r.status < 200 or methods), name
        still_served(conn, port)
        conn.close()


@pytest.mark.usefixtures("server_wire")
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_pipelined_requests_are_answered_in_order(runtime: str) -> None:
    # RFC 9112 section 9.3.2: responses in the order the requests were received, here
    # written in one segment, and split at every byte.
    with serving(runtime) as port:
        conn, names = session_names(port)
        data = b"".join(raw_post(ping(n), extra=names) for n in range(1, 6))
        replies, closed = raw_exchange(port, data, until_closed=False, count=5)
        assert [json.loads(r.body)["id"] for r in replies] == [1, 2, 3, 4, 5] and not closed
        sock = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        data = raw_post(ping(1), extra=names) + raw_post(ping(2), extra=names)
        for i in range(len(data)):
            sock.sendall(data[i:i + 1])
        out = b""
        while len(parse(out, [])) < 2 or not out.endswith(b"}"):
            out += sock.recv(65536)
        assert [json.loads(r.body)["id"] for r in parse(out, [])] == [1, 2]
        sock.close()
        conn.close()


@pytest.mark.usefixtures("server_wire")
@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("how", ["connection-close", "http/1.0"])
def test_one_response_then_close(runtime: str, how: str) -> None:
    # RFC 9112 section 9.6 (Connection: close) and 9.3 (HTTP/1.0 without keep-alive): the
    # server closes after the response; the request pipelined behind it is not served.
    with serving(runtime) as port:
        conn, names = session_names(port)
        first = (raw_post(ping(1), extra=names + b"Connection: close\r\n")
                 if how == "connection-close" else raw_post(ping(1), extra=names,
                                                            version=b"HTTP/1.0"))
        replies, closed = raw_exchange(port, first + raw_post(ping(2), extra=names))
        assert [json.loads(r.body)["id"] for r in replies] == [1] and closed
        assert replies[0].header("connection") == "close"
        conn.close()
