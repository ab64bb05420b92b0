"""A plain MCP client (JSON lines or Streamable HTTP, no library) with one fault switched on.

    python broken_clients.py FAULT [--era stateless] -- SERVER ARGV...   (stdio)
    python broken_clients.py FAULT [--era stateless] --http URL          (HTTP)

``FAULT`` is ``none`` or one of :data:`FAULTS`; each breaks exactly one rule the client
checker judges. The client initializes (or, with ``--era stateless``, sends 2026-07-28
requests with ``_meta``), lists the tools, calls ``kit_echo`` and exits 0, answering the
server's requests on the way.
"""

from __future__ import annotations

import http.client
import json
import queue
import subprocess
import sys
import threading
import time
import urllib.parse
from typing import Any

FAULTS = {
    "garbage-output": "writes a line that is not JSON",
    "bad-envelope": "sends a notification with jsonrpc 1.0",
    "request-before-initialize": "lists the tools before initialize",
    "bad-initialize": "initialize without clientInfo",
    "no-initialized": "never sends notifications/initialized",
    "unknown-method": "sends a request no client sends",
    "ungated": "lists resources the server did not declare",
    "bad-request": "tools/call without a name",
    "reuse-id": "reuses the initialize request's id",
    "unknown-notification": "sends a notification no client sends",
    "cancel-initialize": "cancels initialize",
    "cancel-unknown": "cancels a request it never sent",
    "progress-unknown": "reports progress for a token it was never given",
    "progress-decreasing": "reports decreasing progress",
    "no-ping": "never answers ping",
    "bad-ping": "answers ping with a non-empty result",
    "duplicate-response": "answers ping twice",
    "undeclared-roots": "answers roots/list with a result without declaring roots",
    "bad-roots": "answers roots/list with an invalid result",
    "crash-on-garbage": "exits when the server writes a line that is not JSON",
    "stateless-initialize": "offers 2026-07-28, a revision without initialize, in initialize",
    "roots-changed-undeclared": "sends roots/list_changed without roots.listChanged",
    "no-sampling-answer": "never answers sampling/createMessage",
    # HTTP
    "no-session-id": "drops Mcp-Session-Id",
    "no-version-header": "drops MCP-Protocol-Version",
    "no-reinitialize": "gives up on 404 instead of initializing again",
    "no-resume": "does not resume a dropped SSE stream",
    "no-delete": "exits without ending its session with DELETE",
    # stateless era
    "no-meta": "a request without the _meta envelope",
    "no-method-header": "HTTP: no Mcp-Method header",
    "no-param-header": "HTTP: no Mcp-Param-Text for kit_echo's x-mcp-header parameter",
    "retry-same-id": "retries an input_required call with the same id",
}

REVISION = "2025-11-25"
STATELESS = "2026-07-28"


class Stdio:
    def __init__(self, argv: list[str]) -> None:
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.inbox: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.inbox.put(line)
        self.inbox.put(None)

    def send(self, message: Any, raw: bytes | None = None) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(raw if raw is not None else json.dumps(message).encode()
                                 + b"\n")
        self.process.stdin.flush()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(10)


class Http:
    def __init__(self, url: str, fault: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port, self.path = parts.hostname, parts.port, parts.path
        self.fault = fault
        self.session: str | None = None
        self.version: str | None = None
        self.inbox: queue.Queue[Any] = queue.Queue()
        self.expired = False

    def _conn(self) -> http.client.HTTPConnection:
        assert self.host is not None
        return http.client.HTTPConnection(self.host, self.port, timeout=30)

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json"}
        if self.session and self.fault != "no-session-id":
            headers["Mcp-Session-Id"] = self.session
        if self.version and self.fault != "no-version-header":
            headers["MCP-Protocol-Version"] = self.version
        return headers

    def _stateless_headers(self, message: Any, headers: dict[str, str]) -> None:
        """2026-07-28: Mcp-Method, and Mcp-Name for the calls that name something."""
        if self.version != STATELESS or not isinstance(message, dict):
            return
        if "method" in message and self.fault != "no-method-header":
            headers["Mcp-Method"] = message["method"]
        params = message.get("params") or {}
        name = params.get("name", params.get("uri"))
        if message.get("method") in ("tools/call", "prompts/get", "resources/read") and (
                isinstance(name, str)):
            headers["Mcp-Name"] = name
        text = (params.get("arguments") or {}).get("text")
        if (message.get("method") == "tools/call" and isinstance(text, str)
                and self.fault != "no-param-header"):
            headers["Mcp-Param-Text"] = text  # kit_echo's x-mcp-header parameter

    def send(self, message: Any, raw: bytes | None = None) -> None:
        conn = self._conn()
        body = raw if raw is not None else json.dumps(message).encode()
        headers = self._headers()
        self._stateless_headers(message, headers)
        conn.request("POST", self.path, body=body, headers=headers)
        response = conn.getresponse()
        if response.status == 404:
            self.expired = True
            self.inbox.put(("404", message))
            return
        sid = response.getheader("Mcp-Session-Id")
        if sid:
            self.session = sid
        ctype = response.getheader("Content-Type") or ""
        if ctype.startswith("application/json"):
            self.inbox.put(response.read())
        elif ctype.startswith("text/event-stream"):
            threading.Thread(target=self._events, args=(conn, response, message),
                             daemon=True).start()
        else:
            response.read()

    def _events(self, conn: Any, response: Any, request: Any) -> None:
        last, retry, answered = None, 0, False
        data: list[str] = []
        try:
            while True:
                line = response.readline()
                if not line:
                    break
                text = line.decode().rstrip("\r\n")
                if text.startswith("id:"):
                    last = text[3:].strip()
                elif text.startswith("retry:"):
                    retry = int(text[6:].strip())
                elif text.startswith("data:"):
                    data.append(text[5:].lstrip())
                elif text == "":
                    payload = "\n".join(data)
                    data = []
                    if payload:
                        try:
                            message = json.loads(payload)
                        except ValueError:
                            self.inbox.put(payload.encode())
                            continue
                        if isinstance(message, dict) and message.get("id") == request.get(
                                "id") and "method" not in message:
                            answered = True
                        self.inbox.put(json.dumps(message).encode())
        except OSError:
            pass
        if answered or last is None or request.get("id") is None:
            return
        if self.fault == "no-resume":
            self.inbox.put(None)
            return
        time.sleep(retry / 1000)
        conn = self._conn()
        headers = self._headers()
        headers["Accept"] = "text/event-stream"
        headers["Last-Event-ID"] = last
        conn.request("GET", self.path, headers=headers)
        self._events(conn, conn.getresponse(), request)

    def close(self) -> None:
        """End the session with DELETE (2025-03-26+ transports: a SHOULD)."""
        if self.session is None or self.version == STATELESS or self.fault == "no-delete":
            return
        conn = self._conn()
        conn.request("DELETE", self.path, headers=self._headers())
        conn.getresponse().read()


class Client:
    def __init__(self, transport: Any, fault: str, stateless: bool) -> None:
        self.t = transport
        self.fault = fault
        self.stateless = stateless
        self.next_id = 10
        self.results: dict[Any, Any] = {}
        self.token: Any = None
        self.pings = 0

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def caps(self) -> dict[str, Any]:
        caps: dict[str, Any] = {"sampling": {}, "elicitation": {}}
        if self.fault == "roots-changed-undeclared":
            caps["roots"] = {}
        elif self.fault != "undeclared-roots":
            caps["roots"] = {"listChanged": True}
        return caps

    def meta(self) -> dict[str, Any]:
        return {"io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientCapabilities": self.caps()}

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.t.send(message)

    def request(self, method: str, params: Any = None, request_id: Any = None) -> Any:
        request_id = self.new_id() if request_id is None else request_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        if isinstance(self.t, Http):
            threading.Thread(target=self.t.send, args=(message,), daemon=True).start()
        else:
            self.t.send(message)
        return self.wait(request_id, message)

    def wait(self, request_id: Any, message: Any) -> Any:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if request_id in self.results:
                return self.results.pop(request_id)
            try:
                item = self.t.inbox.get(timeout=0.5)
            except queue.Empty:
                continue
            if item is None:  # gave up on the request: still ends the session
                self.t.close()
                sys.exit(0)
            if isinstance(item, tuple):  # HTTP 404
                if self.fault == "no-reinitialize":
                    sys.exit(0)
                self.t.session = None
                self.t.version = None
                self.initialize()
                return self.request(message["method"], message.get("params"))
            self.handle(item)
        sys.exit(4)

    def handle(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            if self.fault == "crash-on-garbage":
                sys.exit(3)
            return
        if not isinstance(message, dict):
            return
        if "method" in message and "id" in message:
            self.answer(message)
        elif "id" in message:
            self.results[message["id"]] = message

    def reply(self, request_id: Any, result: Any) -> None:
        self.t.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def answer(self, message: dict[str, Any]) -> None:
        method, request_id = message["method"], message["id"]
        if method == "ping":
            self.pings += 1
            if self.fault == "no-ping":
                return
            self.reply(request_id, {"x": 1} if self.fault == "bad-ping" else {})
            if self.fault == "duplicate-response":
                self.reply(request_id, {})
        elif method == "roots/list":
            token = (message.get("params") or {}).get("_meta", {}).get("progressToken")
            if self.fault == "progress-unknown":
                self.notify("notifications/progress", {"progressToken": "nope",
                                                       "progress": 1})
            if self.fault == "progress-decreasing" and token is not None:
                self.notify("notifications/progress", {"progressToken": token,
                                                       "progress": 2})
                self.notify("notifications/progress", {"progressToken": token,
                                                       "progress": 1})
            self.reply(request_id, {"rootz": []} if self.fault == "bad-roots" else {
                "roots": [{"uri": "file:///tmp", "name": "tmp"}]})
        elif method == "sampling/createMessage":
            if self.fault == "no-sampling-answer":
                return
            self.reply(request_id, {"role": "assistant", "model": "broken",
                                    "content": {"type": "text", "text": "hi"}})
        elif method == "elicitation/create":
            self.reply(request_id, {"action": "decline"})
        else:
            self.t.send({"jsonrpc": "2.0", "id": request_id,
                         "error": {"code": -32601, "message": "Method not found"}})

    def initialize(self) -> None:
        version = STATELESS if self.fault == "stateless-initialize" else REVISION
        params: dict[str, Any] = {"protocolVersion": version, "capabilities": self.caps(),
                                  "clientInfo": {"name": "broken", "version": "1"}}
        if self.fault == "bad-initialize":
            del params["clientInfo"]
        request_id = self.new_id()
        response = self.request("initialize", params, request_id)
        if isinstance(self.t, Http):
            self.t.version = response["result"]["protocolVersion"]
        if self.fault == "cancel-initialize":
            self.notify("notifications/cancelled", {"requestId": request_id})
        if self.fault != "no-initialized":
            self.notify("notifications/initialized")
        self.init_id = request_id

    def run(self) -> None:
        if self.stateless:
            self.run_stateless()
            return
        if self.fault == "request-before-initialize":
            self.request("tools/list")
        self.initialize()
        if self.fault == "garbage-output":
            self.t.send(None, raw=b"hello, not json\n")
        if self.fault == "bad-envelope":
            self.t.send({"jsonrpc": "1.0", "method": "notifications/initialized"})
        if self.fault == "unknown-notification":
            self.notify("notifications/kit/bogus")
        if self.fault == "cancel-unknown":
            self.notify("notifications/cancelled", {"requestId": 999})
        if self.fault == "roots-changed-undeclared":
            self.notify("notifications/roots/list_changed")
        if self.fault == "unknown-method":
            self.request("kit/bogus")
        if self.fault == "ungated":
            self.request("resources/list")
        if self.fault == "bad-request":
            self.request("tools/call", {"arguments": {}})
        if self.fault == "reuse-id":
            self.request("tools/list", None, self.init_id)
        else:
            self.request("tools/list")
        self.request("tools/call", {"name": "kit_echo", "arguments": {"text": "hi"}})
        self.t.close()

    def run_stateless(self) -> None:
        if isinstance(self.t, Http):
            self.t.version = STATELESS
        self.request("server/discover", {"_meta": self.meta()})
        self.request("tools/list", {} if self.fault == "no-meta" else {"_meta": self.meta()})
        first_id = self.new_id()
        params: dict[str, Any] = {"_meta": self.meta(), "name": "kit_echo",
                                  "arguments": {"text": "hi"}}
        response = self.request("tools/call", params, first_id)
        result = response.get("result") or {}
        if result.get("resultType") == "input_required":
            answers = {}
            for key, req in (result.get("inputRequests") or {}).items():
                answers[key] = {
                    "roots/list": {"roots": []},
                    "elicitation/create": {"action": "decline"},
                    "sampling/createMessage": {"role": "assistant", "model": "broken",
                                               "content": {"type": "text", "text": "hi"}},
                }[req["method"]]
            retry = dict(params, inputResponses=answers)
            if "requestState" in result:
                retry["requestState"] = result["requestState"]
            self.request("tools/call", retry,
                         first_id if self.fault == "retry-same-id" else None)
        self.t.close()


def main(argv: list[str]) -> int:
    fault = argv[0]
    if fault != "none" and fault not in FAULTS:
        sys.stderr.write(f"unknown fault {fault}\n")
        return 2
    rest = argv[1:]
    stateless = False
    if rest[:2] == ["--era", "stateless"]:
        stateless = True
        rest = rest[2:]
    if rest[0] == "--http":
        transport: Any = Http(rest[1], fault)
    else:
        transport = Stdio(rest[1:])
    Client(transport, fault, stateless).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
