"""Checking an MCP *client*: the kit plays the server over stdio or Streamable HTTP.

:class:`~mcp_sansio.testing._client_machine.ClientMachine` decides what to send and judges
what comes back; this module does the I/O around it, with threads (one reader per
connection and one loop that feeds the machine, keeps its clock and delivers its output).

stdio (``http=False``)
    The client under test spawns its server itself, so the kit's "server" is a relay:
    ``python -m mcp_sansio.adapters.testing_client relay 127.0.0.1:PORT`` pipes its stdin to
    a loopback socket the checker listens on, and the socket to its stdout. The command
    must name it with a ``{server}`` placeholder: an argument that is exactly ``{server}``
    is replaced by the relay's several arguments (``my-client --server {server}`` becomes
    ``my-client --server python -m ... relay 127.0.0.1:PORT``); ``{server}`` inside a larger
    argument is replaced by the relay command shell-quoted (for a client that takes its
    server as one string: ``my-client "--command={server}"``).

HTTP (``http=True``)
    The kit serves Streamable HTTP on ``127.0.0.1`` (a free port) and runs the command with
    the endpoint URL appended as its last argument, as the official conformance harness
    does. A request answered at once gets plain JSON; one with anything before its answer
    (the kit's requests, hostile output) gets an SSE stream, so a client meets both forms;
    a GET opens the standalone stream, or resumes a dropped one with ``Last-Event-ID``;
    a DELETE ends the session it names (a client that exits cleanly without one is found).

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mcp_sansio import FEATURES
from mcp_sansio.testing import Report
from mcp_sansio.testing._client_machine import ClientMachine, Out

__all__ = ["PLACEHOLDER", "check_client", "relay", "relay_command", "substitute"]

log = logging.getLogger("mcp_sansio.testing.client")

#: The placeholder of the stdio form's command.
PLACEHOLDER = "{server}"

#: How long the client has to exit after it stopped talking to the kit (seconds), and each
#: step of killing it (SIGTERM, then SIGKILL): the shutdown grace of the stdio transport.
GRACE = 2.0

_LINE_LIMIT = 64 << 20  # a client's line longer than 64 MiB is cut: the kit's memory bound


def relay_command(address: str) -> list[str]:
    """The kit's server command on stdio: a relay to the checker at ``address``."""
    return [sys.executable, "-m", "mcp_sansio.adapters.testing_client", "relay", address]


def substitute(command: Sequence[str], server: Sequence[str]) -> list[str]:
    """``command`` with its ``{server}`` placeholder filled (see the module docstring).

    :raises ValueError: no argument holds the placeholder.
    """
    out: list[str] = []
    found = False
    for arg in command:
        if arg == PLACEHOLDER:
            out.extend(server)
            found = True
        elif PLACEHOLDER in arg:
            out.append(arg.replace(PLACEHOLDER, shlex.join(server)))
            found = True
        else:
            out.append(arg)
    if not found:
        raise ValueError(f"the client command has no {PLACEHOLDER} placeholder for the "
                         "kit's server command")
    return out


def relay(address: str) -> int:
    """Pipe stdin to a TCP connection to ``address`` and the connection to stdout, until
    either side ends (``python -m mcp_sansio.adapters.testing_client relay HOST:PORT``)."""
    host, _, port = address.rpartition(":")
    sock = socket.create_connection((host, int(port)))
    def upstream() -> None:
        with contextlib.suppress(OSError):
            while chunk := os.read(0, 65536):
                sock.sendall(chunk)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, daemon=True).start()
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            view = memoryview(chunk)
            while view:  # os.write may write part of a large chunk
                view = view[os.write(1, view):]
    sock.close()
    return 0


def _extras(revision: str | None, examples: int, seed: int | None = None) -> list[Any]:
    """``examples`` generated server notifications (progress, log messages, cancellations)
    for the hostile phase: valid in shape, unsolicited in fact."""
    if examples <= 0 or revision is None:
        return []
    from hypothesis import HealthCheck, given, settings  # lazy: the testing extra
    from hypothesis import seed as hypothesis_seed  # lazy: the testing extra

    from mcp_sansio.testing import notifications  # lazy: the testing extra

    methods = ["notifications/progress", "notifications/message", "notifications/cancelled"]
    found: list[Any] = []

    @settings(max_examples=examples, database=None, derandomize=seed is None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(notifications(revision, sender="server", methods=methods))
    def collect(message: Any) -> None:
        found.append(message)

    (collect if seed is None else hypothesis_seed(seed)(collect))()
    return found[:examples]


class _Check:
    """One check's shared state: the machine under a lock, the client process, the
    streams' queues."""

    def __init__(self, machine: ClientMachine, budget: float) -> None:
        self.machine = machine
        self.lock = threading.Condition()
        self.start = time.monotonic()
        self.budget = budget
        self.queues: dict[str, list[Out]] = {}
        self.process: subprocess.Popen[bytes] | None = None
        self.stderr_tail: list[str] = []
        self.over = False

    def now(self) -> float:
        return time.monotonic() - self.start

    def flush(self) -> None:
        """Move the machine's output to the streams' queues (lock held)."""
        for out in self.machine.take():
            self.queues.setdefault(out.stream, []).append(out)
        self.lock.notify_all()

    def pop(self, stream: str, timeout: float) -> Out | None:
        """The next item of ``stream`` (lock held), waiting up to ``timeout``."""
        end = time.monotonic() + timeout
        while not self.queues.get(stream) and not self.over:
            left = end - time.monotonic()
            if left <= 0:
                return None
            self.lock.wait(min(left, 0.2))
        items = self.queues.get(stream)
        return items.pop(0) if items else None

    def spawn(self, argv: list[str]) -> None:
        self.process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, start_new_session=os.name == "posix")
        threading.Thread(target=self._stderr, daemon=True).start()

    def _stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        for raw in self.process.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            log.debug("client stderr: %s", line)
            self.stderr_tail = [*self.stderr_tail, line][-5:]

    def kill(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(OSError):
                if os.name == "posix":
                    os.killpg(process.pid, sig)
                else:
                    process.kill()
            try:
                process.wait(GRACE)
                return
            except subprocess.TimeoutExpired:
                continue

    def loop(self, alive: Callable[[], bool]) -> None:
        """Tick the machine until ``alive()`` turns false or the budget is spent."""
        while True:
            with self.lock:
                self.machine.tick(self.now())
                self.flush()
                if not alive():
                    return
                if self.now() > self.budget:
                    self.machine.mark_cut_short()
                    self.machine.report.note(f"the run was cut short: the budget of "
                                             f"{self.budget:g} s was spent")
                    return
                self.lock.wait(0.05)

    def finish(self) -> Report:
        exit_code = self.process.poll() if self.process is not None else None
        if self.process is not None and exit_code is None:
            try:
                exit_code = self.process.wait(GRACE)
            except subprocess.TimeoutExpired:
                self.kill()
                exit_code = self.process.poll()
        with self.lock:
            self.over = True
            self.machine.close(self.now(), exit_code=exit_code)
            self.lock.notify_all()
        if self.machine.steps:
            self.machine.report.note("steps: " + ", ".join(self.machine.steps))
        if exit_code not in (0, None) and self.stderr_tail:
            self.machine.report.note("the client's last stderr lines: "
                                     + " | ".join(self.stderr_tail))
        return self.machine.report


# -- stdio ---------------------------------------------------------------------------------------


def _check_stdio(check: _Check, command: list[str]) -> Report:
    listener = socket.create_server(("127.0.0.1", 0))
    address = f"127.0.0.1:{listener.getsockname()[1]}"
    check.spawn(substitute(command, relay_command(address)))
    assert check.process is not None
    listener.settimeout(0.2)
    conn: socket.socket | None = None
    while conn is None and check.process.poll() is None and check.now() < check.budget:
        with contextlib.suppress(TimeoutError):
            conn, _ = listener.accept()
    listener.close()
    if conn is None:
        if check.now() >= check.budget:
            check.machine.mark_cut_short()
        check.machine.report.note("the client never started the kit's server command")
        check.kill()
        return check.finish()
    conn.settimeout(None)
    closed = threading.Event()
    sock = conn

    def reader() -> None:
        buffer = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                if len(buffer) > _LINE_LIMIT:
                    lines.append(buffer)
                    buffer = b""
                with check.lock:
                    for line in lines:
                        _feed(check, line.strip())
                    check.flush()
        with check.lock:
            if buffer.strip():
                _feed(check, buffer.strip())
                check.flush()
        closed.set()

    def writer() -> None:
        with contextlib.suppress(OSError):
            while not closed.is_set():
                with check.lock:
                    out = check.pop("main", 0.2)
                if out is None:
                    if check.over:
                        return
                    continue
                data = out.raw if out.raw is not None else json.dumps(
                    out.message, separators=(",", ":")).encode()
                sock.sendall(data + b"\n")

    threads = [threading.Thread(target=reader, daemon=True),
               threading.Thread(target=writer, daemon=True)]
    for thread in threads:
        thread.start()
    check.loop(lambda: not closed.is_set() and check.process is not None
               and check.process.poll() is None)
    # The client closed the relay (or exited): close our end, so that the relay exits and
    # the client's own shutdown of its server completes; then give it the grace to exit.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    report = check.finish()
    with contextlib.suppress(OSError):
        sock.close()
    for thread in threads:
        thread.join(GRACE)
    return report


def _feed(check: _Check, line: bytes) -> None:
    if not line:
        return
    try:
        message = json.loads(line)
    except ValueError:
        check.machine.receive_garbage(line, check.now())
        return
    check.machine.receive(message, check.now())


# -- HTTP ----------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    check: _Check

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http: " + format, *args)

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _open_event_stream(self) -> None:
        """Answer 200 with an SSE stream, the connection closing after it."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _plain(self, status: int, body: bytes = b"", ctype: str = "application/json",
               extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        if body:
            self.send_header("Content-Type", ctype)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_DELETE(self) -> None:
        check = self.check
        if check.machine.transport == "sse":
            self._plain(405)
            return
        with check.lock:
            status = check.machine.http_delete(self._headers(), check.now())
        self._plain(status)

    def do_POST(self) -> None:
        check = self.check
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        try:
            message: Any = json.loads(body)
        except ValueError:
            message = None
        if check.machine.transport == "sse":
            self._legacy_post(body, message)
            return
        if message is None and body.strip() != b"null":
            with check.lock:
                check.machine.receive_garbage(body, check.now())
            self._plain(400)
            return
        with check.lock:
            status = check.machine.receive(message, check.now(), headers=self._headers())
            check.flush()
            session = check.machine.session_id
        if status is not None:
            self._plain(status)
            return
        if not (isinstance(message, dict) and "method" in message and "id" in message):
            self._plain(202)
            return
        stream = ClientMachine.stream_key(message["id"])
        extra = {"Mcp-Session-Id": session} if session else {}
        with check.lock:
            queued = check.queues.get(stream) or []
            whole = len(queued) == 1 and queued[0].end and queued[0].message is not None
            out = queued.pop(0) if whole else None
        if out is not None:
            # Answered at once and nothing else for this request: plain JSON. Anything
            # before the answer (the kit's requests, hostile output) needs SSE.
            self._plain(200, json.dumps(out.message).encode(), extra=extra)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.close_connection = True
        self._stream(stream)

    def _legacy_post(self, body: bytes, message: Any) -> None:
        check = self.check
        with check.lock:
            status = check.machine.sse_post(self.path, message, check.now())
            if status is None:
                if message is None and body.strip() != b"null":
                    check.machine.receive_garbage(body, check.now())
                else:
                    check.machine.receive(message, check.now())
                check.flush()
        self._plain(202 if status is None else status)

    def do_GET(self) -> None:
        check = self.check
        if check.machine.transport == "sse":
            with check.lock:
                endpoint = (check.machine.sse_endpoint(check.now())
                            if self.path == "/sse" else None)
            if endpoint is None:
                self._plain(404 if self.path != "/sse" else 409)
                return
            self._open_event_stream()
            with contextlib.suppress(OSError):
                self.wfile.write(f"event: endpoint\ndata: {endpoint}\n\n".encode())
            self._stream("main", endless=True)
            return
        with check.lock:
            stream = check.machine.http_get(self._headers(), check.now())
            check.flush()
        if stream is None:
            self._plain(405)
            return
        self._open_event_stream()
        self._stream(stream)

    def _stream(self, stream: str, *, endless: bool = False) -> None:
        """Write ``stream``'s items as SSE events until its last (``endless``: the legacy
        transport's one stream, which carries every answer, lasts until the run is over)."""
        check = self.check
        with contextlib.suppress(OSError):
            self.wfile.flush()
            while True:
                with check.lock:
                    out = check.pop(stream, 0.1)
                    over = check.over
                if out is None:
                    if over:
                        return
                    if self._peer_closed():
                        # The client closed a stream still open (2026-07-28: how it ends a
                        # listen stream).
                        with check.lock:
                            check.machine.stream_closed(stream, check.now())
                            check.flush()
                        return
                    continue
                if out.drop:
                    # Drop the connection without ending the stream (resumption check).
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                lines = []
                if out.event_id is not None:
                    lines.append(f"id: {out.event_id}")
                if out.retry is not None:
                    lines.append(f"retry: {out.retry}")
                data = (out.raw.decode("utf-8", "replace") if out.raw is not None
                        else json.dumps(out.message, separators=(",", ":")))
                lines.append("event: message" if out.message is not None else "")
                lines.append(f"data: {data}")
                self.wfile.write(("\n".join(x for x in lines if x) + "\n\n").encode())
                self.wfile.flush()
                if out.end and not endless:
                    return


    def _peer_closed(self) -> bool:
        """Whether the client has closed this connection (nothing more comes on it from a
        client that sent its one request: readable means the end of it)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and not self.connection.recv(1, socket.MSG_PEEK)
        except (OSError, ValueError):
            return True


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-request (a reset keep-alive connection) is no finding,
        # and its traceback is no part of the report.
        log.debug("http: the connection from %s failed", client_address, exc_info=True)


def _check_http(check: _Check, command: list[str]) -> Report:
    handler = type("_BoundHandler", (_Handler,), {"check": check})
    server = _Server(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    path = "/sse" if check.machine.transport == "sse" else "/mcp"
    url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                               daemon=True)
    serving.start()
    try:
        check.spawn([*command, url])
        assert check.process is not None
        process = check.process
        check.loop(lambda: process.poll() is None)
        return check.finish()
    finally:
        server.shutdown()
        server.server_close()


# -- the entry point -----------------------------------------------------------------------------


def check_client(command: list[str], *, http: bool, revision: str | None = None,
                 era: str | None = None, budget: float = 60.0, call_timeout: float = 10.0,
                 examples: int = 50, seed: int | None = None,
                 legacy_sse: bool = False) -> Report:
    """Run the client ``command`` against the kit's server and judge it.

    :param command: the client's argv. stdio: with a ``{server}`` placeholder (see the
        module docstring); HTTP: the URL is appended.
    :param http: serve Streamable HTTP instead of stdio.
    :param legacy_sse: with ``http``, serve the legacy HTTP+SSE transport instead (handshake
        era only).
    :param revision: the revision the kit speaks (``None``: the one the client asks for).
    :param era: ``"handshake"`` or ``"stateless"`` to serve one era only (``None``: both).
    :param budget: wall-time budget of the whole run, seconds; past it the client is killed
        and the report notes the run was cut short.
    :param call_timeout: seconds the client has for each step it owes (an answer, a retry,
        a resumption).
    :param examples: how many generated server notifications join the hostile output
        (the default, 50, covers the shapes of the three methods' params -- optional
        members present or not, numbers and strings at their edges -- in well under a second
        of output; 0 sends none).
    :param seed: the seed of the generated notifications (in the report; None: a fixed one).
    :raises ValueError: a stdio command without the placeholder, or a bad revision/era.
    :raises OSError: the command could not be started (not found, not executable).
    """
    if not http:
        substitute(command, ["x"])  # fail early on a command without the placeholder
    if legacy_sse and not http:
        raise ValueError("legacy_sse needs http=True")
    machine = ClientMachine(revision=revision, era=era, call_timeout=call_timeout,
                            transport=("sse" if legacy_sse else "http") if http else "stdio")
    extra_revision = revision or "2025-11-25"
    features = FEATURES.get(extra_revision)
    if machine.era_now == "handshake" and features is not None and features.handshake:
        machine.extra = _extras(extra_revision, examples, seed)
    check = _Check(machine, budget)
    try:
        report = _check_http(check, command) if http else _check_stdio(check, command)
        report.seed = seed
        return report
    finally:
        check.kill()


def _main(argv: Sequence[str]) -> int:
    if len(argv) == 2 and argv[0] == "relay":
        return relay(argv[1])
    sys.stderr.write("usage: python -m mcp_sansio.adapters.testing_client relay HOST:PORT\n")
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
