"""The testing kit's HTTP transports: the peer machine against an HTTP server.

:mod:`mcp_sansio.testing` speaks newline-delimited JSON through a
:class:`~mcp_sansio.testing.Transport`; the two classes here carry those lines over HTTP and
look at every raw response on the way, so that transport rules can be judged too.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import queue
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping
from typing import Any

from mcp_sansio import FEATURES
from mcp_sansio.http import SSEParser, encode_header_value, param_headers
from mcp_sansio.http._headers import param_header_text, param_value

__all__ = ["LegacySSETransport", "StreamableHTTPTransport", "detect_transport"]

logger = logging.getLogger(__name__)

_ACCEPT = "application/json, text/event-stream"
#: Revisions that send ``MCP-Protocol-Version`` on every request after initialize
#: (2025-06-18 basic/transports.mdx, "Protocol Version Header").
_VERSION_HEADER_FROM = "2025-06-18"
_STATELESS = "2026-07-28"
#: 2026-07-28 streamable-http.mdx, "Request Metadata": methods whose ``Mcp-Name`` mirrors a
#: body field.
_NAME_FIELD = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
#: The Origin the probes claim: a site no local server trusts (DNS rebinding, the
#: transports page's security warning).
_FOREIGN_ORIGIN = "http://kit-untrusted.example"
_BODY_SHOWN = 2000


def _short_body(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        text = body[:_BODY_SHOWN].decode("utf-8", "replace")
        return text + ("..." if len(body) > _BODY_SHOWN else "")


def _visible_ascii(value: str) -> bool:
    return bool(value) and all(0x21 <= ord(c) <= 0x7E for c in value)


class _Exchange:
    """One HTTP request and what came back, for findings."""

    def __init__(self, method: str, path: str, headers: Mapping[str, str],
                 body: bytes | None) -> None:
        self.request: dict[str, Any] = {"http": f"{method} {path}", "headers": dict(headers)}
        if body is not None:
            self.request["body"] = _short_body(body)
        self.response: dict[str, Any] | None = None

    def answered(self, status: int, headers: Mapping[str, str], body: bytes | None) -> None:
        self.response = {"status": status, "headers": dict(headers)}
        if body:
            self.response["body"] = _short_body(body)


class _HTTPBase:
    """What both transports share: the line queue, findings, connections."""

    def __init__(self, url: str, *, timeout: float, headers: Mapping[str, str] | None) -> None:
        self.url = url
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self._parts = parts
        self.timeout = timeout
        self.extra_headers = dict(headers or {})
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._findings: list[tuple[str, str, Any, Any, str | None]] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._connections: list[http.client.HTTPConnection] = []
        self._sockets: list[socket.socket] = []

    @property
    def path(self) -> str:
        return self._parts.path or "/"

    def _connect(self, parts: urllib.parse.SplitResult | None = None
                 ) -> http.client.HTTPConnection:
        parts = parts or self._parts
        cls = http.client.HTTPSConnection if parts.scheme == "https" else (
            http.client.HTTPConnection)
        conn = cls(parts.hostname or "127.0.0.1", parts.port, timeout=self.timeout)
        with self._lock:
            self._connections.append(conn)
        return conn

    def _track(self, conn: http.client.HTTPConnection) -> None:
        """Remember the socket of a request just sent: http.client drops the connection's
        reference to it when the response says ``Connection: close`` (the response reads
        it on), and closing must still be able to wake the thread reading it."""
        if conn.sock is not None:
            with self._lock:
                self._sockets.append(conn.sock)

    def found(self, check: str, detail: str, exchange: _Exchange | None = None,
              requirement: str | None = None) -> None:
        with self._lock:
            self._findings.append((check, detail, exchange.request if exchange else None,
                                   exchange.response if exchange else None, requirement))

    def drain_findings(self) -> list[tuple[str, str, Any, Any, str | None]]:
        """The transport's findings since the last call."""
        with self._lock:
            out, self._findings = self._findings, []
        return out

    def _give(self, body: bytes) -> None:
        """Hand one JSON-RPC message (or batch) to the machine, as one line."""
        self._lines.put(body.replace(b"\r", b"").replace(b"\n", b"") + b"\n")

    def receive(self, timeout: float) -> bytes:
        try:
            first = self._lines.get(timeout=timeout) if timeout > 0 else (
                self._lines.get_nowait())
        except queue.Empty:
            if self._closed:
                raise EOFError("the transport is closed") from None
            return b""
        out = bytearray(first)
        while True:
            try:
                out += self._lines.get_nowait()
            except queue.Empty:
                return bytes(out)

    def _spawn(self, target: Any, *args: Any) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, daemon=True,
                                  name=f"kit-http-{len(self._threads)}")
        self._threads.append(thread)
        thread.start()
        return thread

    def _shut(self) -> None:
        self._closed = True
        with self._lock:
            connections = list(self._connections)
            sockets = list(self._sockets)
        for sock in sockets:
            # shutdown() wakes a thread blocked reading the socket (close() alone does not).
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.close()
        for thread in self._threads:
            thread.join(self.timeout)


class StreamableHTTPTransport(_HTTPBase):
    """The peer machine's transport to a Streamable HTTP server (see the module docstring).

    :param url: the MCP endpoint (``http://127.0.0.1:PORT/mcp``).
    :param timeout: socket timeout of each HTTP exchange, in seconds; an SSE stream silent
        for longer is dropped. 60 s: above the machine's call_timeout (30 s), so that the
        machine, not the socket, decides that an answer is late.
    :param order_wait: how long ``send`` waits for a response's head (see above). 2 s: a
        server takes a POST in within milliseconds; what takes longer is work, not
        reading.
    :param probes: make the closing probes (Origin, version, session id, GET, DELETE).
    :param headers: extra headers for every request (``Authorization``...).
    """

    #: A request before initialize has no session to belong to: a server that needs
    #: sessions answers it 400 (basic/transports.mdx, Session Management), so the machine
    #: skips its early ping over this transport.
    requests_before_initialize = False
    #: Over HTTP, ``initialize`` starts a session: a second one is a new session (the
    #: server may accept it), so the machine does not judge it as a repeated handshake.
    unjudged_rules = frozenset({"second-initialize"})

    def __init__(self, url: str, *, timeout: float = 60.0, order_wait: float = 2.0,
                 probes: bool = True, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(url, timeout=timeout, headers=headers)
        self.order_wait = order_wait
        self.probes = probes
        #: The session id the server gave, if any.
        self.session_id: str | None = None
        #: The negotiated revision (handshake era) or the last one a request named.
        self.revision: str | None = None
        self._initialize_ids: set[Any] = set()
        self._tool_headers: dict[str, dict[str, tuple[str, ...]]] = {}
        self._tools_list_ids: set[Any] = set()
        self._probe_id = 0

    # -- headers ----------------------------------------------------------------------------

    def _headers_for(self, message: Any) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": _ACCEPT,
                   **self.extra_headers}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        meta_version = None
        if isinstance(message, dict) and isinstance(message.get("params"), dict):
            meta = message["params"].get("_meta")
            if isinstance(meta, dict):
                meta_version = meta.get("io.modelcontextprotocol/protocolVersion")
        if isinstance(meta_version, str):
            self.revision = meta_version
            headers["MCP-Protocol-Version"] = meta_version
        elif self.revision is not None and self.revision >= _VERSION_HEADER_FROM:
            headers["MCP-Protocol-Version"] = self.revision
        if self.revision == _STATELESS and isinstance(message, dict):
            self._mirror(message, headers)
        return headers

    def _mirror(self, message: dict[str, Any], headers: dict[str, str]) -> None:
        """2026-07-28 "Request Metadata": Mcp-Method, Mcp-Name, Mcp-Param-*."""
        method = message.get("method")
        if not isinstance(method, str):
            return
        headers["Mcp-Method"] = encode_header_value(method)
        params = message.get("params")
        field = _NAME_FIELD.get(method)
        if field is not None and isinstance(params, dict) and isinstance(params.get(field), str):
            headers["Mcp-Name"] = encode_header_value(params[field])
        if method == "tools/call" and isinstance(params, dict):
            wanted = self._tool_headers.get(str(params.get("name")), {})
            for name, path in wanted.items():
                text = param_header_text(param_value(params.get("arguments"), path))
                if text is not None:
                    headers[f"Mcp-Param-{name}"] = encode_header_value(text)

    def _learn(self, message: Any) -> None:
        """Take what later headers need from a response: the negotiated revision, the
        tools' ``x-mcp-header`` annotations."""
        items = message if isinstance(message, list) else [message]
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("result"), dict):
                continue
            result = item["result"]
            if item.get("id") in self._initialize_ids and isinstance(
                    result.get("protocolVersion"), str):
                self.revision = result["protocolVersion"]
            if item.get("id") in self._tools_list_ids:
                for tool in result.get("tools") or []:
                    if isinstance(tool, dict) and isinstance(tool.get("inputSchema"), dict):
                        with contextlib.suppress(ValueError):
                            self._tool_headers[str(tool.get("name"))] = param_headers(
                                tool["inputSchema"])

    # -- sending ----------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        if self._closed:
            raise BrokenPipeError("the transport is closed")
        for line in data.split(b"\n"):
            if line.strip():
                self._post_line(line)

    def _post_line(self, line: bytes) -> None:
        try:
            message: Any = json.loads(line)
        except ValueError:
            message = None
        is_request = isinstance(message, dict) and "method" in message and "id" in message
        if isinstance(message, list):
            is_request = any(isinstance(m, dict) and "method" in m and "id" in m
                             for m in message)
        if isinstance(message, dict) and is_request:
            if message.get("method") == "initialize":
                self._initialize_ids.add(message.get("id"))
            elif message.get("method") == "tools/list":
                self._tools_list_ids.add(message.get("id"))
        headers = self._headers_for(message)
        head = threading.Event()
        self._spawn(self._exchange, line, headers, is_request, message, head)
        # initialize: the session id comes in the answer's head, and everything after needs it.
        wait = self.timeout if isinstance(message, dict) and message.get(
            "method") == "initialize" else self.order_wait
        head.wait(wait)

    def _exchange(self, body: bytes, headers: dict[str, str], is_request: bool,
                  message: Any, head: threading.Event) -> None:
        exchange = _Exchange("POST", self.path, headers, body)
        try:
            conn = self._connect()
            conn.request("POST", self.path, body=body, headers=headers)
            self._track(conn)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            head.set()
            if not self._closed:
                logger.debug("POST failed: %s", exc)
            return
        try:
            self._on_response(response, exchange, is_request, message, head)
        except (OSError, http.client.HTTPException) as exc:
            if not self._closed:
                logger.debug("reading the response failed: %s", exc)
        finally:
            head.set()
            conn.close()

    def _on_response(self, response: http.client.HTTPResponse, exchange: _Exchange,
                     is_request: bool, message: Any, head: threading.Event) -> None:
        status = response.status
        headers = {k: v for k, v in response.getheaders()}
        lowered = {k.lower(): v for k, v in headers.items()}
        session = lowered.get("mcp-session-id")
        if session is not None and self.session_id is None and isinstance(
                message, dict) and message.get("method") == "initialize" and (
                self.revision != _STATELESS):
            # Only the first initialize opens the session: a second one is the machine
            # testing that it is refused, not a new session.
            if not _visible_ascii(session):
                exchange.answered(status, headers, None)
                self.found("http-session-id", "the Mcp-Session-Id holds characters outside "
                           "visible ASCII 0x21-0x7E", exchange)
            self.session_id = session
        kind = (lowered.get("content-type") or "").split(";")[0].strip().lower()
        head.set()
        if kind == "text/event-stream" and status == 200:
            exchange.answered(status, headers, None)
            if not is_request:
                self.found("http-status", "a notification or response was answered with an "
                           "SSE stream, not 202 Accepted", exchange)
            self._read_sse(response, exchange, message)
            return
        body = response.read()
        exchange.answered(status, headers, body)
        if not is_request:
            if 200 <= status < 300 and (status != 202 or body.strip()):
                self.found("http-status", f"a notification or response was answered "
                           f"{status} with {len(body)} bytes of body, not 202 Accepted with "
                           "none", exchange)
            # A notification or response the server cannot accept is refused with a 4xx
            # whose body MAY hold an id-less error (basic/transports.mdx, "Sending Messages
            # to the Server"): that is the HTTP answer, not a JSON-RPC reply to judge. A
            # body that is no such message (unparseable, not an object...) is judged.
            if status >= 400 and body.strip() and not _notification_or_response(message):
                self._give_json(body, exchange)
            return
        if status == 200 and kind != "application/json":
            self.found("http-status", f"a request was answered 200 with Content-Type "
                       f"{kind or 'none'!r}, neither application/json nor text/event-stream",
                       exchange)
        if status == 202:
            self.found("http-status", "a request was answered 202 Accepted: it needs a JSON "
                       "or SSE response", exchange)
            return
        if body.strip():
            self._give_json(body, exchange)

    def _give_json(self, body: bytes, exchange: _Exchange) -> None:
        try:
            parsed = json.loads(body)
        except ValueError:
            if exchange.response is not None and exchange.response["status"] == 200:
                self.found("http-status", "a 200 response body is not JSON", exchange)
            return
        if isinstance(parsed, dict | list):
            self._learn(parsed)
            self._give(json.dumps(parsed, separators=(",", ":"), ensure_ascii=False).encode())

    def _read_sse(self, response: http.client.HTTPResponse, exchange: _Exchange,
                  message: Any, *, resumed: int = 0) -> None:
        parser = SSEParser()
        wanted = _request_ids(message)
        last_id: str | None = None
        while True:
            try:
                chunk = response.read1(65536)
            except (OSError, ValueError, AttributeError, http.client.HTTPException):
                # the stream ended or close() cut it (mid-chunk: ValueError; AttributeError:
                # http.client once its socket is gone)
                chunk = b""
            if not chunk:
                break
            for event in parser.feed(chunk):
                last_id = event.id if event.id is not None else last_id
                if not event.data.strip():
                    continue  # a priming event (id, empty data), 2025-11-25
                try:
                    parsed = json.loads(event.data)
                except ValueError:
                    self.found("http-sse", f"an SSE event's data is not JSON: "
                               f"{event.data[:120]!r}", exchange)
                    continue
                for item in parsed if isinstance(parsed, list) else [parsed]:
                    if isinstance(item, dict) and "method" not in item:
                        wanted.discard(item.get("id"))
                self._learn(parsed)
                self._give(event.data)
            if not wanted:
                return  # the stream SHOULD end after the response; we stop reading anyway
        if wanted and last_id is not None and not self._closed and resumed < 3 and (
                self.revision != _STATELESS):
            self._resume(last_id, message, exchange, resumed + 1)

    def _resume(self, last_id: str, message: Any, exchange: _Exchange, attempt: int) -> None:
        """basic/transports.mdx, "Resumability and Redelivery": GET with Last-Event-ID."""
        headers = {"Accept": "text/event-stream", "Last-Event-ID": last_id,
                   **self.extra_headers}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.revision is not None and self.revision >= _VERSION_HEADER_FROM:
            headers["MCP-Protocol-Version"] = self.revision
        again = _Exchange("GET", self.path, headers, None)
        try:
            conn = self._connect()
            conn.request("GET", self.path, headers=headers)
            self._track(conn)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException):
            return
        kind = (response.getheader("content-type") or "").split(";")[0].strip().lower()
        again.answered(response.status, dict(response.getheaders()), None)
        if response.status != 200 or kind != "text/event-stream":
            self.found("http-sse", f"a request's SSE stream ended before its response, "
                       f"having given event id {last_id!r}, and GET with Last-Event-ID was "
                       f"answered {response.status} {kind!r}", again)
            conn.close()
            return
        try:
            self._read_sse(response, again, message, resumed=attempt)
        finally:
            conn.close()

    # -- closing: probes, DELETE ------------------------------------------------------------

    def _probe(self, method: str, headers: dict[str, str], message: Any = None
               ) -> tuple[int, dict[str, str], bytes, _Exchange]:
        body = None if message is None else json.dumps(message).encode()
        exchange = _Exchange(method, self.path, headers, body)
        conn = self._connect()
        try:
            conn.request(method, self.path, body=body, headers=headers)
            response = conn.getresponse()
            kind = (response.getheader("content-type") or "").lower()
            data = b"" if "text/event-stream" in kind else response.read()
            out_headers = dict(response.getheaders())
            exchange.answered(response.status, out_headers, data)
            return response.status, out_headers, data, exchange
        finally:
            conn.close()

    def _probe_request(self) -> dict[str, Any]:
        """A request for probes: ping, or server/discover in 2026-07-28, with an id the
        machine never sees."""
        self._probe_id += 1
        if self.revision == _STATELESS:
            return {"jsonrpc": "2.0", "id": f"kit-probe-{self._probe_id}",
                    "method": "server/discover", "params": {"_meta": {
                        "io.modelcontextprotocol/protocolVersion": _STATELESS,
                        "io.modelcontextprotocol/clientCapabilities": {},
                        "io.modelcontextprotocol/clientInfo": {"name": "mcp-sansio-check",
                                                               "version": "0"}}}}
        return {"jsonrpc": "2.0", "id": f"kit-probe-{self._probe_id}", "method": "ping"}

    def run_probes(self) -> None:
        """The closing probes (see the module docstring)."""
        revision = self.revision
        if revision is None:
            return
        base = self._headers_for(self._probe_request())
        # Origin: 2025-11-25 says 403; before, "MUST validate" without a status: any 4xx.
        status, *_, exchange = self._probe("POST", {**base, "Origin": _FOREIGN_ORIGIN},
                                           self._probe_request())
        features = FEATURES.get(revision)
        if not (status == 403 if features is not None and features.origin_403
                else 400 <= status < 500):
            self.found("http-origin", f"a request from Origin {_FOREIGN_ORIGIN} was "
                       f"answered {status}", exchange)
        if revision >= _VERSION_HEADER_FROM:
            status, *_, exchange = self._probe(
                "POST", {**base, "MCP-Protocol-Version": "1999-01-01"}, self._probe_request())
            if status != 400:
                self.found("http-protocol-version", "a request with MCP-Protocol-Version "
                           f"1999-01-01 was answered {status}, not 400", exchange)
        status, headers, _, exchange = self._probe("GET", {
            k: v for k, v in base.items() if k.lower() not in ("content-type", "mcp-method")
        } | {"Accept": "text/event-stream"})
        kind = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
        if revision == _STATELESS:
            if status != 405:
                self.found("http-get", f"GET was answered {status}, not 405", exchange)
        elif not (status == 405 or (status == 200 and "text/event-stream" in kind.lower())):
            self.found("http-get", f"GET was answered {status} {kind!r}: neither an SSE "
                       "stream nor 405", exchange)
        if revision == _STATELESS:
            self._probe_mirror(base)
            return
        if self.session_id is None:
            return
        status, *_, exchange = self._probe(
            "POST", {k: v for k, v in base.items() if k.lower() != "mcp-session-id"},
            self._probe_request())
        if status != 400:
            self.found("http-session", f"a request without the session's Mcp-Session-Id "
                       f"was answered {status}, not 400", exchange, requirement="should")
        status, *_, exchange = self._probe("DELETE", {
            k: v for k, v in base.items() if k.lower() != "content-type"})
        if status == 405:
            return
        if not 200 <= status < 300:
            self.found("http-delete", f"DELETE of the session was answered {status}: "
                       "neither 2xx nor 405", exchange)
            return
        status, *_, exchange = self._probe("POST", base, self._probe_request())
        if status != 404:
            self.found("http-delete", f"after DELETE ended the session, a request in it was "
                       f"answered {status}, not 404", exchange)

    def _probe_mirror(self, base: dict[str, str]) -> None:
        """2026-07-28: missing and contradicting Mcp-Method are refused with 400."""
        request = self._probe_request()
        without = {k: v for k, v in base.items() if k.lower() != "mcp-method"}
        status, *_, exchange = self._probe("POST", without, request)
        if status != 400:
            self.found("http-headers", f"a request without Mcp-Method was answered {status}, "
                       "not 400", exchange)
        status, *_, exchange = self._probe("POST", {**without, "Mcp-Method": "tools/list"},
                                           self._probe_request())
        if status != 400:
            self.found("http-headers", "a server/discover request with Mcp-Method: "
                       f"tools/list was answered {status}, not 400", exchange)

    def close(self) -> None:
        if self._closed:
            return
        # Answers still on their way get half a second in all; long-lived streams (a
        # listen) are cut by _shut.
        deadline = time.monotonic() + 0.5
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        if self.probes:
            try:
                self.run_probes()
            except (OSError, http.client.HTTPException) as exc:
                logger.debug("probes failed: %s", exc)
        self._shut()


def _notification_or_response(message: Any) -> bool:
    if not isinstance(message, dict):
        return False
    if "method" in message:
        return "id" not in message
    return "id" in message and ("result" in message or "error" in message)


def _request_ids(message: Any) -> set[Any]:
    items = message if isinstance(message, list) else [message]
    return {m.get("id") for m in items
            if isinstance(m, dict) and "method" in m and "id" in m}


class LegacySSETransport(_HTTPBase):
    """The peer machine's transport to a 2024-11-05 HTTP+SSE server.

    :param url: the SSE endpoint (``http://127.0.0.1:PORT/sse``).
    :param timeout: as for :class:`StreamableHTTPTransport`.
    """

    def __init__(self, url: str, *, timeout: float = 60.0,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(url, timeout=timeout, headers=headers)
        self._endpoint: str | None = None
        self._ready = threading.Event()
        self._stream_conn: http.client.HTTPConnection | None = None
        self._spawn(self._listen)
        self._ready.wait(timeout)

    def _listen(self) -> None:
        headers = {"Accept": "text/event-stream", **self.extra_headers}
        exchange = _Exchange("GET", self.path, headers, None)
        try:
            conn = self._connect()
            self._stream_conn = conn
            conn.request("GET", self.path, headers=headers)
            self._track(conn)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException):
            self._ready.set()
            self._closed = True
            return
        exchange.answered(response.status, dict(response.getheaders()), None)
        parser = SSEParser()
        first = True
        try:
            while not self._closed:
                chunk = response.read1(65536)
                if not chunk:
                    break
                for event in parser.feed(chunk):
                    if first:
                        first = False
                        if event.event != "endpoint":
                            self.found("http-endpoint", f"the SSE stream opened with a "
                                       f"{event.event!r} event, not endpoint", exchange)
                            self._ready.set()
                            return
                        self._endpoint = urllib.parse.urljoin(
                            self.url, event.data.decode("utf-8", "replace").strip())
                        self._ready.set()
                        continue
                    if event.event == "message" and event.data.strip():
                        self._give(event.data)
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            pass  # the stream ended or close() cut it (mid-chunk: ValueError)
        finally:
            self._ready.set()
            self._closed = True

    def send(self, data: bytes) -> None:
        if self._endpoint is None:
            raise BrokenPipeError("no endpoint event came")
        parts = urllib.parse.urlsplit(self._endpoint)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            headers = {"Content-Type": "application/json", **self.extra_headers}
            exchange = _Exchange("POST", target, headers, line)
            try:
                conn = self._connect(parts)
                conn.request("POST", target, body=line, headers=headers)
                response = conn.getresponse()
                body = response.read()
                conn.close()
            except (OSError, http.client.HTTPException) as exc:
                raise BrokenPipeError(str(exc)) from exc
            exchange.answered(response.status, dict(response.getheaders()), body)
            try:
                message: Any = json.loads(line)
            except ValueError:
                message = None
            # A message the server cannot take is refused on the POST itself (4xx), with
            # the JSON-RPC error in its body: that is its answer, as on Streamable HTTP.
            if response.status >= 400 and body.strip() and not _notification_or_response(
                    message):
                try:
                    parsed = json.loads(body)
                except ValueError:
                    parsed = None
                if isinstance(parsed, dict | list):
                    self._give(json.dumps(parsed, separators=(",", ":")).encode())
            if response.status >= 500:
                self.found("http-status", f"a POST to the endpoint was answered "
                           f"{response.status}", exchange)

    def close(self) -> None:
        self._shut()


def detect_transport(url: str, *, timeout: float = 10.0) -> str:
    """``"streamable"`` or ``"sse"``: what the server at ``url`` speaks, found the way the
    2025-03-26 transports page tells clients to (POST ``initialize``; a 4xx, then a GET whose
    first event is ``endpoint``, means HTTP+SSE)."""
    parts = urllib.parse.urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "mcp-sansio-check", "version": "0"}}}).encode()
    conn = cls(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        conn.request("POST", parts.path or "/", body=body, headers={
            "Content-Type": "application/json", "Accept": _ACCEPT})
        response = conn.getresponse()
        status = response.status
        session = response.getheader("mcp-session-id")
    finally:
        conn.close()
    if status < 400:
        if session:
            # End the session the detection opened (DELETE; a 405 is fine).
            conn = cls(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
            with contextlib.suppress(OSError, http.client.HTTPException):
                conn.request("DELETE", parts.path or "/", headers={"Mcp-Session-Id": session})
                conn.getresponse().read()
            conn.close()
        return "streamable"
    return "sse"
