"""Raw bytes against each runtime's real HTTP server over loopback.

One ``mcp-sansio serve-example --transport http`` process per runtime and wire (asyncio, trio,
threads) serves the whole module. Hypothesis draws one TCP connection's bytes from
:mod:`fuzz.http_grammar`, writes them in the drawn pieces to a new socket (each ``sendall``
one write; TCP may merge or split them again), optionally half-closes, and reads what comes
back until the server closes, every request framed has been answered, or the connection has
been idle for :data:`IDLE` seconds (the server waiting for bytes that will not come). Then:

* the process lives (``poll()`` is None) and has logged no traceback;
* what was read is well-formed HTTP/1.1 (a client-side h11 connection reads it, expecting
  one response per request in order: RFC 9112 section 9.3.2);
* the MCP layer answered no more requests than RFC 9112 section 6 frames whole and
  unambiguously in the bytes sent (:func:`fuzz.http_target.frame`);
* the first responses answer the requests framed, one each, with any status (a refusal of a
  request framed whole may keep the connection open); beyond them at most one, the wire's
  refusal (an error with ``Connection: close``: RFC 9112 section 6.3 rules 4-5); after any
  response with ``Connection: close`` nothing follows and the server closes the connection
  (RFC 9112 section 9.6) -- :func:`fuzz.http_target.check_answers`;
* a fresh connection's well-formed ``initialize`` is answered 200, both while the fuzzed
  connection is still open and after it is closed.

The read timeouts bound the test, not the server: an idle timeout is not a failure.
``MCP_SANSIO_FUZZ_SERVER_EXAMPLES`` sets the examples per runtime (default 20).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import IO

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sansio.http import DEFAULT_MAX_BODY_SIZE
from tests.http_stories import GUARD, serve_example

from .http_grammar import connections, cuts
from .http_target import (
    INIT,
    Outcome,
    check_answers,
    closes,
    frame,
    read_responses,
    well_formed,
)

EXAMPLES = int(os.environ.get("MCP_SANSIO_FUZZ_SERVER_EXAMPLES", "20"))
#: Seconds without a byte after which the server is taken to be waiting for more input: far
#: above a loopback answer's time even on a loaded machine, and short enough for CI.
IDLE = 1.0
RUNTIMES = ["asyncio", "trio", "threading"]
#: The example server keeps the default body limit, so the strict reading uses it too.
BODY = DEFAULT_MAX_BODY_SIZE


class Served:
    """A server process, its port and its log."""

    def __init__(self, proc: subprocess.Popen[str], port: int, log: IO[str]) -> None:
        self.proc = proc
        self.port = port
        self.log = log

    def tracebacks(self) -> str:
        self.log.flush()
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            text = f.read()
        return text if "Traceback" in text else ""


#: Each runtime's server on each wire (h11, the reference, and httptools: docs/wires.rst).
SERVERS = [(runtime, wire) for runtime in RUNTIMES for wire in ("h11", "httptools")]


@pytest.fixture(scope="module", params=SERVERS, ids=[f"{r}-{w}" for r, w in SERVERS])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    runtime, wire = request.param
    if runtime == "trio":
        pytest.importorskip("trio")
    with tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False) as log:
        proc = subprocess.Popen(serve_example("--wire", wire, runtime=runtime),
                                stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), url
            yield Served(proc, int(url.rsplit(":", 1)[1].split("/")[0]), log)
        finally:
            proc.terminate()
            try:
                proc.wait(GUARD)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
    os.unlink(log.name)


def _methods(data: bytes) -> list[bytes]:
    """The request methods the server can have seen, in order (for reading the answers)."""
    framed, _, stop = frame(data, BODY)
    methods = [f.method for f in framed]
    methods.append(data[stop:].split(b" ", 1)[0])
    return methods


def connect(address: int | str) -> tuple[socket.socket, bytes]:
    """A new connection to ``address`` (a port on loopback, or a Unix socket's path) and
    the ``Host`` its clients name."""
    if isinstance(address, int):
        return (socket.create_connection(("127.0.0.1", address), timeout=GUARD),
                f"127.0.0.1:{address}".encode())
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(GUARD)
    sock.connect(address)
    return sock, b"localhost"


def exchange(port: int | str, chunks: list[bytes], eof: bool, expected: int | None
             ) -> Outcome:
    sock, _ = connect(port)
    out = bytearray()
    closed = reset = False
    methods = _methods(b"".join(chunks))
    with contextlib.closing(sock):
        try:
            for chunk in chunks:
                sock.sendall(chunk)
            if eof:
                sock.shutdown(socket.SHUT_WR)
        except OSError:  # the server refused and closed while we were still writing
            pass
        sock.settimeout(IDLE)
        deadline = time.monotonic() + GUARD
        while time.monotonic() < deadline:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                break
            except OSError:  # reset: the server closed with our bytes unread, and the
                closed = reset = True  # kernel may have dropped the end of its answer
                break
            if not data:
                closed = True
                break
            out += data
            if expected is not None:
                outcome = Outcome(out=bytes(out), closed=False, eof=eof, heads=methods,
                                  handed=[], max_held=0, largest=0, fresh_status=None)
                answers = read_responses(outcome)
                done = [a for a in answers if a.complete]
                # (After a "Connection: close" the server's close is awaited: it is checked.)
                if len(done) >= expected and not any(closes(a) for a in answers):
                    break
        # While this connection is still open (mid-request, perhaps): another is served.
        fresh = fresh_initialize(port)
    return Outcome(out=bytes(out), closed=closed, eof=eof or reset, heads=methods,
                   handed=[], max_held=0, largest=0, fresh_status=fresh)


def fresh_initialize(port: int | str) -> int:
    sock, host = connect(port)
    with contextlib.closing(sock) as s:
        s.sendall(well_formed(INIT).replace(b"localhost:8000", host))
        data = b""
        while b"\r\n" not in data:
            piece = s.recv(65536)
            if not piece:
                break
            data += piece
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(reqs=connections(), data=st.data(), eof=st.booleans())
def test_any_connection(served: Served, reqs: list[bytes], data: st.DataObject,
                        eof: bool) -> None:
    stream = b"".join(reqs)
    chunks = data.draw(cuts(stream))
    framed, why, _ = frame(stream, BODY)
    expected = len(framed) if why == "end" else None
    outcome = exchange(served.port, chunks, eof, expected)
    # The process lives, and contained nothing that needed a traceback.
    assert served.proc.poll() is None, "the server process ended"
    assert not served.tracebacks(), served.tracebacks()[-3000:]
    answers = read_responses(outcome)  # well-formed HTTP/1.1 (raises otherwise)
    if outcome.out:
        assert outcome.out.startswith(b"HTTP/1.1 "), outcome.out[:100]
    # RFC 9112 sections 6, 9.3.2 and 9.6: one answer per request framed whole and
    # unambiguously, in order (any status); beyond them only the wire's refusal; after a
    # "Connection: close" nothing, and the connection closes (check_answers).
    check_answers(answers, len(framed), outcome.closed, why)
    # A fresh connection is served, while the fuzzed one is still open and after it closed.
    assert outcome.fresh_status == 200
    assert fresh_initialize(served.port) == 200


def test_the_servers_answer_the_seeds_and_the_found_inputs(served: Served) -> None:
    """The coverage-guided run's seeds and findings, each once, on every runtime."""
    from .http_seeds import SEEDS
    from .test_http_raw import FOUND

    for data in SEEDS + FOUND:
        framed, why, _ = frame(data, BODY)
        outcome = exchange(served.port, [data], False, len(framed) if why == "end" else None)
        assert served.proc.poll() is None, data
        check_answers(read_responses(outcome), len(framed), outcome.closed, why)
    assert not served.tracebacks(), served.tracebacks()[-3000:]
    assert fresh_initialize(served.port) == 200
