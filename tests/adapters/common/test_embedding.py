"""The public helpers for embedders: the stdio child-process lifecycle
(``adapters/stdio.py``) and the client pump on a loop of one's own (``adapters/pump.py``)."""

from __future__ import annotations

import os
import selectors
import signal
import sys
import time
from typing import Any

import pytest
from mcp_sansio.adapters.errors import McpError
from mcp_sansio.adapters.pump import ClientPump
from mcp_sansio.adapters.stdio import spawn_server, stop_server

from mcp_sansio import Era

#: Generous: the machine may be loaded; the tests never measure time.
PATIENCE = 60.0


def test_a_cooperating_server_exits_when_its_stdin_closes() -> None:
    server = spawn_server([sys.executable, "-c", "import sys; sys.stdin.read()"])
    assert os.getpgid(server.pid) == server.pid  # it leads its own group
    assert stop_server(server, PATIENCE) == 0


def test_a_stubborn_server_and_its_children_are_killed() -> None:
    # Ignores stdin's end and SIGTERM, and leaves a child that would outlive it.
    script = ("import signal, subprocess, sys, time\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
              "print(child.pid, flush=True)\n"
              "time.sleep(600)\n")
    server = spawn_server([sys.executable, "-c", script])
    assert server.stdout is not None
    child = int(server.stdout.readline())
    assert stop_server(server, 0.5) == -signal.SIGKILL
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        # a zombie until init reaps it: check its state
        with open(f"/proc/{child}/stat") as stat:
            if stat.read().split()[2] == "Z":
                break
        time.sleep(0.05)
    else:
        raise AssertionError("the server's child survived")
    server.stdout.close()
    assert server.stderr is not None
    server.stderr.close()


SERVER = """
from mcp_sansio.adapters import threading as thr
server = thr.Server("ask")

@server.tool()
def ask(ctx: thr.Context) -> str:
    return ctx.elicit("name?", {"type": "object", "properties": {}})["action"]

thr.run_stdio(server)
"""


def drive(era: Era) -> tuple[str, Any]:
    server = spawn_server([sys.executable, "-c", SERVER])
    assert server.stdin is not None and server.stdout is not None
    stdin = server.stdin

    pump = ClientPump(write=lambda data: os.write(stdin.fileno(), data), now=time.monotonic,
                      elicitation=lambda params: {"action": "accept", "content": {}})
    loop = selectors.DefaultSelector()
    loop.register(server.stdout, selectors.EVENT_READ)

    def run_until(finished: Any) -> None:
        give_up = time.monotonic() + PATIENCE
        while not finished() and pump.closed is None:
            assert time.monotonic() < give_up
            wait = 0.5 if pump.deadline is None else max(0.0, pump.deadline - time.monotonic())
            for key, _ in loop.select(min(wait, 0.5)):
                pump.feed(os.read(key.fd, 65536))
            if pump.deadline is not None and time.monotonic() >= pump.deadline:
                pump.on_timer()

    try:
        pump.connect(era=era)
        run_until(lambda: pump.initialized is not None)
        call = pump.send("tools/call", {"name": "ask", "arguments": {}})
        run_until(lambda: call.done)
        text = call.result()["content"][0]["text"]
        missing = pump.send("tools/call", {"name": "nope", "arguments": {}})
        run_until(lambda: missing.done)
        try:
            outcome: Any = missing.result()
        except McpError as error:
            outcome = error.code
        return text, outcome
    finally:
        loop.close()
        stop_server(server, PATIENCE)
        server.stdout.close()


@pytest.mark.parametrize("era", [Era.HANDSHAKE, Era.STATELESS])
def test_the_pump_on_a_selectors_loop_answers_the_servers_questions(era: Era) -> None:
    # Handshake era: a real elicitation request answered on the loop; stateless era: the
    # input_required answered by the same callback and the call retried.
    text, missing = drive(era)
    assert text == "accept"
    assert missing is not None  # an error result or a JSON-RPC error, either way an answer


def test_the_pump_only_does_what_it_is_told() -> None:
    written: list[bytes] = []
    pump = ClientPump(write=written.append, now=lambda: 100.0, request_timeout=5.0)
    assert written == [] and pump.deadline is None
    pump.connect(era=Era.HANDSHAKE)
    assert b'"initialize"' in written[0]
    assert pump.deadline == 105.0  # initialize's timeout, on the clock handed in
