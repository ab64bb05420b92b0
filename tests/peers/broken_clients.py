"""A plain MCP client (JSON lines or Streamable HTTP, no library) with one fault switched on.

    python broken_clients.py FAULT [--era stateless] -- SERVER ARGV...   (stdio)
    python broken_clients.py FAULT [--era stateless] --http URL          (HTTP)
    python broken_clients.py FAULT --sse URL                             (legacy HTTP+SSE)

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
    "url-content": "answers a URL-mode elicitation with form content",
    "task-get-no-status": "answers tasks/get with a task without its status",
    # HTTP
    "no-session-id": "drops Mcp-Session-Id",
    "no-version-header": "drops MCP-Protocol-Version",
    "no-reinitialize": "gives up on 404 instead of initializing again",
    "no-resume": "does not resume a dropped SSE stream",
    "no-delete": "exits without ending its session with DELETE",
    # legacy HTTP+SSE
    "wrong-endpoint": "POSTs to the endpoint's path without its query",
    # stateless era
    "no-meta": "a request without the _meta envelope",
    "no-method-header": "HTTP: no Mcp-Method header",
    "no-param-header": "HTTP: no Mcp-Param-Text for kit_echo's x-mcp-header parameter",
    "retry-same-id": "retries an input_required call with the same id",
    "listen-cancel-post": "HTTP: ends its listen stream with a POSTed notifications/cancelled",
    "task-ignored": "takes the task its tools/call got for the result: never polls it",
    "task-poll-eager": "polls its task with tasks/get without waiting pollIntervalMs",
    "task-update-stray": "answers an input request its task never asked, with tasks/update",
}

#: The stateless-era runs that also open a listen stream and declare the tasks extension
#: (the plain client does both the right way).
LISTENING = {"none", "listen-cancel-post", "task-ignored", "task-poll-eager",
             "task-update-stray"}
TASKS = "io.modelcontextprotocol/tasks"

REVISION = "2025-11-25"
SAMPLED = {"role": "assistant", "model": "broken", "content": {"type": "text", "text": "hi"}}
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
        #: The open SSE responses, by request id (a listen stream is ended by closing it).
        self.streams: dict[Any, Any] = {}

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
        sock = conn.sock  # kept: a "Connection: close" response lets go of it
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
            self.streams[message.get("id")] = sock
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

    def close_stream(self, request_id: Any) -> None:
        """End a request's SSE stream by closing its connection (2026-07-28: the
        cancellation)."""
        sock = self.streams.pop(request_id, None)
        if sock is not None:
            sock.shutdown(2)  # SHUT_RDWR
            sock.close()

    def close(self) -> None:
        """End the session with DELETE (2025-03-26+ transports: a SHOULD)."""
        if self.session is None or self.version == STATELESS or self.fault == "no-delete":
            return
        conn = self._conn()
        conn.request("DELETE", self.path, headers=self._headers())
        conn.getresponse().read()


class Legacy:
    """The 2024-11-05 HTTP+SSE transport: GET the SSE URL, POST to its endpoint event's URI."""

    def __init__(self, url: str, fault: str) -> None:
        parts = urllib.parse.urlsplit(url)
        assert parts.hostname is not None
        self.url, self.fault = url, fault
        self.inbox: queue.Queue[Any] = queue.Queue()
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        conn.request("GET", parts.path, headers={"Accept": "text/event-stream"})
        self.stream = conn.getresponse()
        event, data = self._event()
        assert event == "endpoint", event
        self.endpoint = urllib.parse.urljoin(url, data)
        threading.Thread(target=self._read, daemon=True).start()

    def _event(self) -> tuple[str | None, str]:
        event, data = None, []
        while True:
            line = self.stream.readline()
            if not line:
                raise EOFError
            text = line.decode().rstrip("\r\n")
            if text.startswith("event:"):
                event = text[6:].strip()
            elif text.startswith("data:"):
                data.append(text[5:].lstrip())
            elif text == "" and (data or event):
                return event, "\n".join(data)

    def _read(self) -> None:
        try:
            while True:
                _, data = self._event()
                self.inbox.put(data.encode())
        except (EOFError, OSError):
            self.inbox.put(None)

    def send(self, message: Any, raw: bytes | None = None) -> None:
        parts = urllib.parse.urlsplit(self.endpoint)
        assert parts.hostname is not None
        target = parts.path if self.fault == "wrong-endpoint" else (
            parts.path + (f"?{parts.query}" if parts.query else ""))
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        body = raw if raw is not None else json.dumps(message).encode()
        conn.request("POST", target, body=body, headers={"Content-Type": "application/json"})
        conn.getresponse().read()

    def close(self) -> None:
        pass


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
        caps: dict[str, Any] = {"sampling": {}, "elicitation": {"form": {}, "url": {}}}
        if not self.stateless:  # 2025-11-25 tasks: sampling may be task-augmented
            caps["tasks"] = {"requests": {"sampling": {"createMessage": {}}}}
        elif self.fault in LISTENING:  # 2026-07-28: the tasks extension
            caps["extensions"] = {TASKS: {}}
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

    @staticmethod
    def task() -> dict[str, Any]:
        """The one task this client runs: its sampling, done at once."""
        return {"taskId": "broken-task-1", "status": "completed", "ttl": 60000,
                "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z"}

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
            if "task" in (message.get("params") or {}):
                self.reply(request_id, {"task": self.task()})
                return
            self.reply(request_id, SAMPLED)
        elif method == "tasks/get":
            task = self.task()
            if self.fault == "task-get-no-status":
                del task["status"]
            self.reply(request_id, task)
        elif method == "tasks/result":
            self.reply(request_id, SAMPLED)
        elif method == "elicitation/create":
            if (message.get("params") or {}).get("mode") != "url":
                self.reply(request_id, {"action": "decline"})
            elif self.fault == "url-content":
                self.reply(request_id, {"action": "accept", "content": {"answer": "yes"}})
            else:
                self.reply(request_id, {"action": "accept"})
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

    def wait_for(self, method: str) -> None:
        """Read until the server's notification ``method`` arrives."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                item = self.t.inbox.get(timeout=0.5)
            except queue.Empty:
                continue
            if item is None or isinstance(item, tuple):
                break
            with_method = item if isinstance(item, bytes) else b""
            if f'"{method}"'.encode() in with_method:
                return
            self.handle(item)
        sys.exit(4)

    def listen(self) -> None:
        """A listen stream for tools/list_changed: opened, one notification taken, ended."""
        listen_id = self.new_id()
        message = {"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen",
                   "params": {"_meta": self.meta(),
                              "notifications": {"toolsListChanged": True}}}
        if isinstance(self.t, Http):
            threading.Thread(target=self.t.send, args=(message,), daemon=True).start()
        else:
            self.t.send(message)
        self.wait_for("notifications/tools/list_changed")
        if isinstance(self.t, Http) and self.fault != "listen-cancel-post":
            self.t.close_stream(listen_id)
        else:
            self.notify("notifications/cancelled", {"requestId": listen_id})

    def follow(self, result: dict[str, Any]) -> None:
        """Poll a task (resultType "task") with tasks/get until it is terminal, waiting its
        pollIntervalMs between polls."""
        if result.get("resultType") != "task" or self.fault == "task-ignored":
            return
        body = result
        if self.fault == "task-update-stray":
            self.request("tasks/update", {"_meta": self.meta(), "taskId": result["taskId"],
                                          "inputResponses": {"confirm": {"action": "accept"}}})
        while body.get("status") not in ("completed", "failed", "cancelled"):
            if self.fault != "task-poll-eager":
                time.sleep((body.get("pollIntervalMs") or 100) / 1000)
            body = self.request("tasks/get", {"_meta": self.meta(),
                                              "taskId": result["taskId"]})["result"]

    def run_stateless(self) -> None:
        if isinstance(self.t, Http):
            self.t.version = STATELESS
        self.request("server/discover", {"_meta": self.meta()})
        if self.fault in LISTENING:
            self.listen()
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
            response = self.request("tools/call", retry,
                                    first_id if self.fault == "retry-same-id" else None)
        self.follow(response.get("result") or {})
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
    elif rest[0] == "--sse":
        transport = Legacy(rest[1], fault)
    else:
        transport = Stdio(rest[1:])
    Client(transport, fault, stateless).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
