"""Deliberately broken HTTP servers: our example server behind a proxy that breaks one
Streamable HTTP rule.

:class:`BreakingProxy` listens on 127.0.0.1, forwards every request to the real server
(streaming SSE answers through as they come) and, depending on ``mode`` -- the name of the
check it should trip -- changes one thing on the way:

=========================  =========================================================
mode                       what the proxy does
=========================  =========================================================
``http-origin``            drops the ``Origin`` header (the server never sees it)
``http-protocol-version``  replaces an unknown ``MCP-Protocol-Version`` by the last good one
``http-session``           adds the session id to a request that lacks it
``http-delete``            answers DELETE 200 itself (the session goes on)
``http-get``               answers GET 200 with ``text/plain``
``http-status``            answers an accepted notification 200 with a body
``http-headers``           sets ``Mcp-Method`` from the body (missing or wrong: fixed)
``http-sse``               answers a tools/list request with SSE whose first event is
                           not JSON
``http-session-id``        gives out the session id with a space in it (and takes it back)
=========================  =========================================================
"""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

MODES = ("http-origin", "http-protocol-version", "http-session", "http-delete", "http-get",
         "http-status", "http-headers", "http-sse", "http-session-id")
_HOP = {"host", "content-length", "connection", "transfer-encoding", "keep-alive"}
_SPACE = " kit"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: BreakingProxy

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_POST(self) -> None:
        self._forward("POST")

    def do_GET(self) -> None:
        self._forward("GET")

    def do_DELETE(self) -> None:
        self._forward("DELETE")

    def _local(self, status: int, body: bytes = b"", kind: str = "text/plain") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _forward(self, method: str) -> None:
        proxy = self.server
        mode = proxy.mode
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        lowered = {k.lower(): k for k in headers}
        try:
            message = json.loads(body) if body else None
        except ValueError:
            message = None
        session_key = lowered.get("mcp-session-id")
        if mode == "http-session-id" and session_key is not None:
            headers[session_key] = headers[session_key].removesuffix(_SPACE)
        if mode == "http-origin" and "origin" in lowered:
            del headers[lowered["origin"]]
        if mode == "http-protocol-version" and "mcp-protocol-version" in lowered:
            key = lowered["mcp-protocol-version"]
            if headers[key] == "1999-01-01" and proxy.version is not None:
                headers[key] = proxy.version
            else:
                proxy.version = headers[key]
        if mode == "http-session":
            if session_key is not None:
                proxy.session = headers[session_key]
            elif proxy.session is not None and isinstance(message, dict) and message.get(
                    "method") != "initialize":
                headers["Mcp-Session-Id"] = proxy.session
        if mode == "http-delete" and method == "DELETE":
            self._local(200)
            return
        if mode == "http-get" and method == "GET":
            self._local(200, b"hello")
            return
        if mode == "http-headers" and isinstance(message, dict) and isinstance(
                message.get("method"), str):
            for key in [k for k in headers if k.lower() == "mcp-method"]:
                del headers[key]
            headers["Mcp-Method"] = message["method"]
        conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port,
                                          timeout=60)
        try:
            conn.request(method, self.path, body=body, headers=headers)
            response = conn.getresponse()
            self._relay(response, message)
        finally:
            conn.close()

    def _relay(self, response: http.client.HTTPResponse, message: Any) -> None:
        mode = self.server.mode
        kind = response.getheader("content-type") or ""
        out_headers = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP]
        if mode == "http-session-id":
            out_headers = [(k, v + _SPACE if k.lower() == "mcp-session-id" else v)
                           for k, v in out_headers]
        if "text/event-stream" in kind:
            self.send_response(response.status)
            for k, v in out_headers:
                self.send_header(k, v)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            while chunk := response.read1(65536):
                self.wfile.write(chunk)
                self.wfile.flush()
            return
        data = response.read()
        status = response.status
        is_notification = isinstance(message, dict) and "method" in message and (
            "id" not in message)
        if mode == "http-status" and is_notification and status == 202:
            status, data = 200, b"{}"
            out_headers = [(k, v) for k, v in out_headers if k.lower() != "content-type"]
            out_headers.append(("Content-Type", "application/json"))
        if (mode == "http-sse" and isinstance(message, dict)
                and message.get("method") == "tools/list" and status == 200):
            data = b"data: not json\n\ndata: " + data + b"\n\n"
            out_headers = [(k, v) for k, v in out_headers if k.lower() != "content-type"]
            out_headers.append(("Content-Type", "text/event-stream"))
        self.send_response(status)
        for k, v in out_headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class BreakingProxy(ThreadingHTTPServer):
    """A proxy to ``upstream`` (an MCP endpoint URL) that breaks ``mode``; :attr:`url` is
    where to point the kit. Use as a context manager."""

    daemon_threads = True

    def __init__(self, upstream: str, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(mode)
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = urlsplit(upstream)
        self.mode = mode
        self.version: str | None = None
        self.session: str | None = None
        self.url = f"http://127.0.0.1:{self.server_address[1]}{self.upstream.path}"
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def __enter__(self) -> BreakingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
