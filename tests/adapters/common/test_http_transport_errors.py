"""What an HTTP client's caller is told when HTTP itself fails, and what its logs keep of a
session id.

* ``connect`` to a URL that answers 501 or that nobody listens on raises
  :class:`HTTPTransportError` (a :class:`ConnectionClosedError`, never an ``McpError``
  carrying the made-up -32000 the core judges the probe with), with the status, the URL and
  the socket error -- on every runtime; so does a call whose server went away.
* A session id is a credential: no log line, at any level, client or server, carries more
  than a short prefix of one (the renewal after a server forgot the session is the warning
  that used to print both ids whole).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import importlib
import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_sansio import Era
from mcp_sansio.app.errors import McpError, secret_prefix
from tests.tools.test_cli_manners import RUNTIMES

#: A hang, not a measurement.
GUARD = 60.0


@contextlib.contextmanager
def status_server(status: int) -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_GET = do_DELETE = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


def refused_url() -> str:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


def connect_error(runtime: str, url: str) -> BaseException:
    """What ``connect_http(url)`` raised on ``runtime``."""
    adapter: Any = importlib.import_module(f"mcp_sansio.adapters.{runtime}")
    if runtime == "threading":
        try:
            with adapter.connect_http(url):
                pass
        except Exception as exc:
            return exc
        raise AssertionError("connected")

    async def main() -> BaseException:
        try:
            async with adapter.connect_http(url):
                pass
        except Exception as exc:
            return exc
        raise AssertionError("connected")

    if runtime == "asyncio":
        return asyncio.run(asyncio.wait_for(main(), GUARD))
    trio: Any = importlib.import_module("trio")
    return trio.run(main)  # type: ignore[no-any-return]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_connect_to_an_endpoint_that_answers_501_raises_an_http_transport_error(
        runtime: str) -> None:
    adapter: Any = importlib.import_module(f"mcp_sansio.adapters.{runtime}")
    with status_server(501) as url:
        error = connect_error(runtime, url)
    assert isinstance(error, adapter.HTTPTransportError), error
    assert isinstance(error, adapter.ConnectionClosedError)
    assert not isinstance(error, McpError)
    assert (error.status, error.url, error.cause) == (501, url, None)
    assert "-32000" not in str(error)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_connect_to_a_port_nobody_listens_on_raises_an_http_transport_error(
        runtime: str) -> None:
    adapter: Any = importlib.import_module(f"mcp_sansio.adapters.{runtime}")
    url = refused_url()
    error = connect_error(runtime, url)
    assert isinstance(error, adapter.HTTPTransportError), error
    assert error.status is None and error.url == url
    assert isinstance(error.cause, OSError)
    assert "cannot connect to 127.0.0.1" in str(error)


def test_a_call_whose_server_went_away_names_the_url() -> None:
    from mcp_sansio.adapters.threading import HTTPTransportError, Server, connect_http, start_http

    server = Server("gone")

    @server.tool()
    def echo(text: str) -> str:
        return text

    with start_http(server) as service, connect_http(service.url) as client:
        service.close()
        with pytest.raises(HTTPTransportError) as info:
            client.call_tool("echo", {"text": "x"})
    assert info.value.url == service.url and info.value.method == "tools/call"


# -- session ids in logs ---------------------------------------------------------------------


@pytest.mark.parametrize(("value", "shown"), [
    ("0123456789abcdef0123456789abcdef", "01234567…"),  # at most 8 characters
    ("abcdefgh", "ab…"),  # at most a quarter
    ("abc", "…"),
    (None, "None"),
])
def test_secret_prefix(value: str | None, shown: str) -> None:
    assert secret_prefix(value) == shown


def test_no_log_carries_a_whole_session_id(caplog: pytest.LogCaptureFixture) -> None:
    """Client and server in this process, every logger at DEBUG: a session made, forgotten
    by the server (a new one on the same port), renewed by the client, then deleted."""
    from mcp_sansio.adapters.threading import Server, connect_http, start_http

    server = Server("ids")

    @server.tool()
    def echo(text: str) -> str:
        return text

    caplog.set_level(logging.DEBUG)
    with start_http(server) as service:
        port = service.port
        with connect_http(service.url, era=Era.HANDSHAKE) as client:
            first = client.session_id
            service.close()
            with start_http(server, port=port):
                assert client.call_tool("echo", {"text": "x"})["content"][0]["text"] == "x"
                second = client.session_id
                assert client.session_renewals == 1
    assert first and second and first != second
    renewal = [r for r in caplog.records if "forgot session" in r.getMessage()]
    assert [r.levelno for r in renewal] == [logging.WARNING]
    assert secret_prefix(first) in renewal[0].getMessage()
    for record in caplog.records:
        text = record.getMessage() + (str(record.exc_info) if record.exc_info else "")
        assert first not in text and second not in text, text


def test_a_refused_initialize_after_a_failed_probe_is_not_an_http_failure() -> None:
    """server/discover fails in HTTP (400, no body: a handshake-era server), then the
    server answers initialize with a JSON-RPC error: that error is why the connect failed,
    not the probe's HTTP status."""
    import json

    from mcp_sansio.adapters.threading import ConnectionClosedError, HTTPTransportError

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if message.get("method") != "initialize":
                self.send_response(400)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": -32602, "message": "Unsupported protocol version"}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        from mcp_sansio.adapters.threading import connect_http

        url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
        with pytest.raises(ConnectionClosedError) as info, connect_http(url):
            pass  # pragma: no cover
    finally:
        server.shutdown()
        server.server_close()
    assert not isinstance(info.value, HTTPTransportError), info.value
    assert "Unsupported protocol version" in str(info.value)
