"""The human-wait clock: while the server waits on the client for elicitation or sampling
(handshake era), no request timeout runs on either side (``HUMAN_WAIT_METHODS``).

Driven on a virtual clock through the runtime-free sessions, then end to end on asyncio and
threads with a request timeout shorter than the time the "human" takes."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import pytest
from mcp_sansio.adapters import asyncio as aio
from mcp_sansio.adapters import threading as thr

from mcp_sansio import Era, RequestTimedOut, Response
from mcp_sansio.app.server import Server
from tests.virtual_sessions import Pair

TIMEOUT = 5.0
FORM = ("elicitation/create", {"mode": "form", "message": "name?",
                               "requestedSchema": {"type": "object", "properties": {}}})


def make_pair() -> Pair:
    app = Server("virtual")
    app.add_tool(lambda: "unused", name="ask")
    return Pair(client_options={"request_timeout": TIMEOUT},
                server_options={"request_timeout": TIMEOUT},
                elicitation=lambda params: {"action": "accept", "content": {}},
                sampling=lambda params: {}, roots=[], server_app=app)


def start_tool_call(pair: Pair) -> Any:
    call = pair.client._start_call("tools/call", {"name": "ask", "arguments": {}})
    pair.pump()
    (request,) = pair.server.incoming
    return call, request


SAMPLE = ("sampling/createMessage", {"messages": [], "maxTokens": 10})


@pytest.mark.parametrize("question", [FORM, SAMPLE], ids=["elicitation", "sampling"])
def test_elicitation_slower_than_the_timeout_succeeds_on_both_sides(
        question: tuple[str, dict[str, Any]]) -> None:
    pair = make_pair()
    pair.connect(Era.HANDSHAKE)
    call, request = start_tool_call(pair)
    asked = pair.server._start_call(*question, related_request_id=request.request_id)
    pair.pump()
    (elicit,) = pair.client.incoming
    pair.client._human_wait(elicit, True)  # the client's callback starts: a human thinks
    pair.advance(TIMEOUT * 10)
    assert not asked.done and not call.done  # neither clock ran
    answer = ({"action": "accept", "content": {}} if question is FORM else
              {"role": "assistant", "content": {"type": "text", "text": "ok"},
               "model": "m"})
    pair.client._finish_request(elicit.request_id, answer, method=elicit.method)
    pair.client._human_wait(elicit, False)
    pair.pump()
    assert isinstance(asked.event, Response)
    assert asked.event.result == answer
    # The client's clock resumed with the time it had left: it still runs out later.
    pair.advance(TIMEOUT / 2)
    assert not call.done
    pair.advance(TIMEOUT)
    assert isinstance(call.event, RequestTimedOut)


def test_roots_list_keeps_its_clock() -> None:
    pair = make_pair()
    pair.connect(Era.HANDSHAKE)
    call, request = start_tool_call(pair)
    asked = pair.server._start_call("roots/list", {}, related_request_id=request.request_id)
    pair.pump()
    pair.advance(TIMEOUT * 2)
    assert isinstance(asked.event, RequestTimedOut)
    assert isinstance(call.event, RequestTimedOut)


def test_overlapping_waits_resume_once_the_last_ends() -> None:
    pair = make_pair()
    pair.connect(Era.HANDSHAKE)
    call, request = start_tool_call(pair)
    for _ in range(2):
        pair.server._start_call(*FORM, related_request_id=request.request_id)
    pair.pump()
    first, second = pair.client.incoming
    pair.client._human_wait(first, True)
    pair.client._human_wait(second, True)
    pair.client._human_wait(first, False)
    pair.advance(TIMEOUT * 3)
    assert not call.done  # still one human thinking
    pair.client._human_wait(second, False)
    pair.advance(TIMEOUT * 3)
    assert isinstance(call.event, RequestTimedOut)


# -- end to end ------------------------------------------------------------------------------

#: The tools/call's timeout (the client side) and the server's request timeout: the
#: "human" below takes three times as long, which would time both sides out without the
#: pause. The handshake keeps the default timeout (a loaded machine may start the server
#: slowly). The test asserts outcomes, never durations.
SHORT = 1.0
HUMAN = 3.0

SERVER = f"""
import sys
from mcp_sansio.adapters import threading as thr
from mcp_sansio.app.server import Server
server = thr.Server("slow-human")

@server.tool()
def ask(ctx: thr.Context) -> str:
    answer = ctx.elicit("name?", {{"type": "object", "properties": {{}}}})
    return answer["action"]

thr.run_stdio(server, request_timeout={SHORT})
"""


def test_asyncio_client_and_threads_server() -> None:
    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(HUMAN)
        return {"action": "accept", "content": {}}

    async def main() -> Any:
        async with aio.connect_stdio([sys.executable, "-c", SERVER], era=Era.HANDSHAKE,
                                     elicitation=elicitation) as client:
            return await client.call_tool("ask", {}, timeout=SHORT)

    result = asyncio.run(main())
    assert result["content"][0]["text"] == "accept"


def test_threads_client() -> None:
    def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        time.sleep(HUMAN)
        return {"action": "decline"}

    with thr.connect_stdio([sys.executable, "-c", SERVER], era=Era.HANDSHAKE,
                           elicitation=elicitation) as client:
        result = client.call_tool("ask", {}, timeout=SHORT)
    assert result["content"][0]["text"] == "decline"
