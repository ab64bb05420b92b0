"""The command line's manners, each tried on a real ``mcp-sansio`` subprocess: an ordinary
mistake (a port in use or out of range, a URL nobody answers, a zero timeout, Ctrl-C) is one
line on stderr and a documented exit status, never a traceback; ``probe`` tells what it is
doing while it waits (on a terminal or with ``--verbose``), bounds the whole connect by
``--timeout`` and says what happened in HTTP terms; ``serve-example`` run by hand on a
terminal says it is waiting for a client on stdin. The statuses are those of docs/cli.rst:
0 done, 1 failed, 2 usage error, 130 interrupted."""

from __future__ import annotations

import contextlib
import http.server
import importlib.util
import os
import pty
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from tests.paths import ROOT

CLI = [sys.executable, "-m", "mcp_sansio"]
#: Generous: the machine is shared and loaded; nothing here measures time.
WAIT = 60.0
RUNTIMES = ["asyncio", "threading"] + (
    ["trio"] if importlib.util.find_spec("trio") is not None else [])


class Running:
    """A CLI subprocess whose stderr is read line by line as it comes."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen([*CLI, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace")
            self.stderr.append(line)
            self.lines.put(line)
        self.lines.put("")

    def wait_for_line(self, fragment: str) -> str:
        while True:
            line = self.lines.get(timeout=WAIT)
            assert line, f"stderr ended before {fragment!r}: {''.join(self.stderr)!r}"
            if fragment in line:
                return line

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.finish()

    def finish(self) -> int:
        try:
            code = self.proc.wait(timeout=WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        return code

    def all_stderr(self) -> str:
        """Everything the process wrote on stderr, once the reader has seen its end."""
        while True:
            line = self.lines.get(timeout=WAIT)
            if not line:
                return "".join(self.stderr)


def cli(*args: str, stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=WAIT * 2,
                          check=False, stdin=stdin)


def assert_one_line(stderr: str, expected: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert stderr == expected + "\n", stderr


@contextlib.contextmanager
def bound_socket(listen: bool) -> Iterator[int]:
    """A loopback port held by the test: listening (taken, or accepting but never
    answering), or only bound (nobody accepts: connections are refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    if listen:
        sock.listen(16)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


@contextlib.contextmanager
def http_status_server(status: int) -> Iterator[str]:
    """A plain HTTP server that answers every request with ``status`` and no body."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_GET = do_DELETE = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


# -- numbers are checked when the arguments are parsed ------------------------------------


@pytest.mark.parametrize("value", ["0", "-1", "-0.5", "nan", "inf", "soon"])
def test_probe_refuses_a_timeout_that_is_not_a_positive_number(value: str) -> None:
    result = cli("probe", f"--timeout={value}", "--", sys.executable, "-c", "pass")
    assert result.returncode == 2
    assert "usage: mcp-sansio probe" in result.stderr
    assert "argument --timeout" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["-1", "65536", "99999", "http"])
def test_serve_example_refuses_a_port_out_of_range(value: str) -> None:
    result = cli("serve-example", "--transport", "http", f"--port={value}")
    assert result.returncode == 2
    assert "argument --port" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


# -- a port in use ---------------------------------------------------------------------------


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_serve_example_on_a_port_in_use_is_one_line(runtime: str) -> None:
    with bound_socket(listen=True) as port:
        result = cli("serve-example", "--transport", "http", "--runtime", runtime,
                     "--port", str(port))
    assert result.returncode == 1
    assert_one_line(result.stderr, f"mcp-sansio serve-example: cannot listen on "
                    f"127.0.0.1:{port}: address already in use")
    assert result.stdout == ""  # no URL printed for a server that is not there


# -- probe: HTTP failures in HTTP terms ---------------------------------------------------------


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_probe_of_a_port_nobody_listens_on_says_connection_refused(runtime: str) -> None:
    with bound_socket(listen=False) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        result = cli("probe", "--runtime", runtime, "--url", url)
    assert result.returncode == 1
    assert_one_line(result.stderr, f"mcp-sansio probe: connection refused ({url})")


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_probe_of_an_http_server_that_is_not_mcp_names_the_status(runtime: str) -> None:
    with http_status_server(501) as url:
        result = cli("probe", "--runtime", runtime, "--url", url)
    assert result.returncode == 1
    assert_one_line(result.stderr, f"mcp-sansio probe: HTTP 501 from {url}: not an MCP "
                    "endpoint")
    assert "-32000" not in result.stderr


def test_probe_names_a_status_the_table_does_not_know_by_its_phrase() -> None:
    with http_status_server(503) as url:
        result = cli("probe", "--url", url)
    assert result.returncode == 1
    assert_one_line(result.stderr, f"mcp-sansio probe: HTTP 503 from {url}: server error "
                    "(service unavailable)")


# -- probe: what it is doing while it waits ---------------------------------------------------


def test_probe_of_a_server_that_echoes_its_input_says_so() -> None:
    result = cli("probe", "--", sys.executable, "-c",
                 "import sys\nfor line in sys.stdin: sys.stdout.write(line); sys.stdout.flush()")
    assert result.returncode == 1
    assert_one_line(result.stderr, "mcp-sansio probe: "
                    f"{sys.executable} -c import sys\\nfor line in sys.stdin: sys.stdout.write"
                    "(line); sys.stdout.flush(): could not connect: the server sent our own "
                    "server/discover request back (it echoes its input: not an MCP server)")


#: A stdio "server" that prints a line of text first, then answers nothing.
CHATTY = "print('starting up...', flush=True); import time; time.sleep(120)"


def test_probe_verbose_tells_each_step_and_the_non_json_line() -> None:
    result = cli("probe", "--verbose", "--timeout", "5", "--", sys.executable, "-c", CHATTY)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == f"mcp-sansio probe: starting {sys.executable} -c {CHATTY}"
    assert "mcp-sansio probe: trying discovery (server/discover, the 2026-07-28 era)..." in lines
    assert any("is not JSON" in line and "servers log on stderr" in line for line in lines)
    # The probe's own idle timeout ends at about the same time as the whole-connect bound:
    # which of the two steps was last is not asserted.
    assert "no connection within 5 s; last step: trying " in lines[-1]
    assert "Traceback" not in result.stderr


def test_probe_is_quiet_about_its_steps_when_stderr_is_not_a_terminal() -> None:
    result = cli("probe", "--timeout", "5", "--", sys.executable, "-c", CHATTY)
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "no connection within 5 s" in result.stderr


def test_probe_tells_its_steps_when_stderr_is_a_terminal() -> None:
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*CLI, "probe", "--timeout", "5", "--", sys.executable, "-c", CHATTY],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=secondary)
        os.close(secondary)
        seen = b""
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait(timeout=WAIT) == 1
        proc.stdout.close()  # type: ignore[union-attr]
    finally:
        os.close(primary)
    text = seen.decode().replace("\r\n", "\n")
    assert "mcp-sansio probe: trying discovery" in text
    assert "mcp-sansio probe: the server sent something that is not JSON" in text


#: A stdio server that takes its time over each step of the connect (2.5 s for the era probe,
#: 2.5 s for initialize): each step alone is within a 4 s timeout, the whole is not.
SLOW = r"""
import json, sys, time
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "server/discover":
        time.sleep(2.5)
        answer = {"error": {"code": -32601, "message": "Method not found"}}
    elif message.get("method") == "initialize":
        time.sleep(2.5)
        answer = {"result": {"protocolVersion": "2025-11-25", "capabilities": {},
                             "serverInfo": {"name": "slow", "version": "1"}}}
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **answer}), flush=True)
"""


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_probe_timeout_bounds_the_whole_connect(runtime: str) -> None:
    result = cli("probe", "--runtime", runtime, "--timeout", "4", "--", sys.executable,
                 "-c", SLOW)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    # Not a request's idle timeout (each step answers within 4 s): the connect's own bound.
    # (Which step it stopped in depends on how fast the server started: not asserted.)
    [line] = result.stderr.splitlines()
    assert line.startswith("mcp-sansio probe: ")
    assert ": no connection within 4 s; last step: trying " in line


# -- Ctrl-C ------------------------------------------------------------------------------------


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_ctrl_c_during_probe_of_a_silent_server(runtime: str) -> None:
    run = Running(["probe", "--verbose", "--runtime", runtime, "--", sys.executable, "-c",
                   "import time; time.sleep(120)"])
    run.wait_for_line("trying discovery")
    assert run.interrupt() == 130
    stderr = run.all_stderr()
    assert stderr.endswith("mcp-sansio probe: interrupted\n"), stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_ctrl_c_during_probe_of_a_url_that_never_answers(runtime: str) -> None:
    with bound_socket(listen=True) as port:  # connections are accepted, never answered
        run = Running(["probe", "--verbose", "--runtime", runtime, "--url",
                       f"http://127.0.0.1:{port}/mcp"])
        run.wait_for_line("trying discovery")
        assert run.interrupt() == 130
    stderr = run.all_stderr()
    assert stderr.endswith("mcp-sansio probe: interrupted\n"), stderr
    assert "Traceback" not in stderr


DISCOVER = (b'{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{'
            b'"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}\n')


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_ctrl_c_stops_serve_example_on_stdio(runtime: str) -> None:
    run = Running(["serve-example", "--runtime", runtime])
    assert run.proc.stdin is not None and run.proc.stdout is not None
    run.proc.stdin.write(DISCOVER)  # serving: it answers (then it is interrupted mid-wait)
    run.proc.stdin.flush()
    assert b'"id":1' in run.proc.stdout.readline()
    assert run.interrupt() == 130
    assert_one_line(run.all_stderr(), "mcp-sansio serve-example: interrupted")


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_ctrl_c_stops_serve_example_over_http(runtime: str) -> None:
    run = Running(["serve-example", "--runtime", runtime, "--transport", "http"])
    assert run.proc.stdout is not None
    assert run.proc.stdout.readline().startswith(b"http://127.0.0.1:")  # listening
    assert run.interrupt() == 130
    assert run.all_stderr().endswith("mcp-sansio serve-example: interrupted\n")


# -- serve-example run by hand --------------------------------------------------------------


def test_serve_example_on_a_terminal_says_it_waits_on_stdin() -> None:
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.Popen([*CLI, "serve-example"], stdin=secondary,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(secondary)
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        os.write(primary, b"\x04")  # Ctrl-D: end of input, the server exits
        out, rest = proc.communicate(timeout=WAIT)
    finally:
        os.close(primary)
    assert proc.returncode == 0
    assert line == ("mcp-sansio serve-example: serving MCP on stdio (asyncio); waiting for a "
                    "client on stdin (an MCP client spawns this command; Ctrl-D or Ctrl-C "
                    "ends it)\n")
    assert out == b""  # stdout is the protocol's alone
    assert b"Traceback" not in rest


def test_serve_example_on_a_pipe_says_nothing() -> None:
    result = subprocess.run([*CLI, "serve-example"], input=b"", capture_output=True,
                            timeout=WAIT, check=False)
    assert result.returncode == 0
    assert result.stdout == b"" and b"waiting for a client" not in result.stderr


def test_the_docs_http_failure_lines_are_what_probe_prints() -> None:
    import re

    from mcp_sansio.adapters.tools._cli import explain_http_failure

    from mcp_sansio.app.http_client import HTTPTransportError

    text = (ROOT / "docs" / "cli.rst").read_text()
    lines = re.findall(r"^   mcp-sansio probe: (HTTP (\d+) from (\S+): .*)$", text, re.M)
    assert len(lines) >= 3
    for line, status, url in lines:
        error = HTTPTransportError("connect", f"HTTP {status}", int(status), url=url)
        assert explain_http_failure(error) == line
    refused = HTTPTransportError("connect", "refused", None, url="http://127.0.0.1:8000/mcp",
                                 cause=ConnectionRefusedError(111, "Connection refused"))
    assert f"   mcp-sansio probe: {explain_http_failure(refused)}\n" in text


@pytest.mark.skipif("trio" not in RUNTIMES, reason="the trio extra is not installed")
def test_trio_run_stdio_returns_quietly_on_ctrl_c() -> None:
    """The library's own promise (``run_stdio``: Ctrl-C exits quietly), kept on trio too,
    where the interrupt arrives wrapped in a nursery's exception group."""
    script = ("from mcp_sansio.adapters.trio import Server, run_stdio\n"
              "run_stdio(Server('quiet'))\nprint('returned', flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(DISCOVER)
    proc.stdin.flush()
    assert b'"id":1' in proc.stdout.readline()  # serving
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 0, err
    assert out == b"returned\n" and b"Traceback" not in err


def test_the_requests_a_server_never_sends_come_from_the_method_table() -> None:
    from mcp_sansio.app.session import SERVER_NEVER_SENDS

    assert {"initialize", "server/discover", "tools/call", "tools/list"} <= SERVER_NEVER_SENDS
    # Requests a server does send (either way, or to the client) are not echoes.
    assert not {"ping", "sampling/createMessage", "elicitation/create", "roots/list",
                "tasks/get"} & SERVER_NEVER_SENDS
