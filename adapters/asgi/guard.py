"""The ASGI application's HTTP hardening: what it refuses before the MCP server sees a
request, and how it answers so that the client can read the answer, whatever the engine.

Theory of operation
-------------------
An engine (uvicorn, hypercorn, granian) parses HTTP/1.1 with rules of its own; the
application sees the head it accepted (the ``scope``) and the body it framed (``receive``).
:func:`refusal` judges the head with our wires' rule rows
(:func:`mcp_sansio.http._head_rules.judge_head`): header section size and field count,
target length, ``Host`` missing or repeated, ``Transfer-Encoding`` with ``Content-Length``
or not ending in one ``chunked``, and ``413`` from ``Content-Length``. It runs before the
first ``receive()``, so an engine that answers ``Expect: 100-continue`` on the first
``receive()`` sends no ``100 Continue`` for a body that will be refused.

:func:`answer` sends such a refusal as our wires do (plain text, ``Connection: close``, no
content for ``HEAD``) and then reads and discards what the client still sends, bounded in
bytes and time as our own servers' lingering close (``adapters/_http_common.py``), before it
ends the response: an engine closes the connection when the response ends, and closing
with the client's bytes unread makes the kernel reset the connection and the client lose
the answer. A client that sent ``Expect: 100-continue`` has sent no body: nothing is read
(a ``receive()`` would make the engine send ``100 Continue``).

A body the engine failed to frame (a bad chunk size) surfaces as an exception from
``receive()`` on some engines: :class:`Unframed` carries it to the application, which
answers ``400`` as our wires do, never ``500``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

from mcp_sansio.http import HTTPServer
from mcp_sansio.http._head_rules import HeadRefusal, judge_head

from ..common.http_options import DEFAULT_LINGER_BYTES, DEFAULT_LINGER_TIME

__all__ = ["UNFRAMED", "Unframed", "answer", "drain", "refusal"]

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class Unframed(Exception):
    """The engine's ``receive()`` failed while the body was read: its framing is broken."""


#: The answer to a body the engine could not frame (RFC 9112 section 6.3 item 7: "the
#: server MUST respond with a 400 (Bad Request) status code and then close the connection").
UNFRAMED = HeadRefusal(400, "a body whose framing is invalid", "RFC 9112 section 6.3")


def refusal(http: HTTPServer, scope: MutableMapping[str, Any]) -> HeadRefusal | None:
    """The rule the request head of ``scope`` breaks, with the server's limits (None: none)."""
    raw = scope.get("raw_path") or scope.get("path", "/").encode("utf-8", "replace")
    query = scope.get("query_string") or b""
    target = raw.decode("latin-1") + ("?" + query.decode("latin-1") if query else "")
    limits = http.config
    return judge_head(
        scope.get("method", "GET"), target, scope.get("http_version", "1.1"),
        scope.get("headers") or (), max_header_size=limits.max_header_size,
        max_header_count=limits.max_header_count,
        max_target_length=limits.max_target_length, max_body_size=limits.max_body_size)


def _expects_continue(scope: MutableMapping[str, Any]) -> bool:
    for name, value in scope.get("headers") or ():
        if name.lower() == b"expect" and b"100-continue" in value.lower():
            return True
    return False


async def answer(refused: HeadRefusal, scope: MutableMapping[str, Any], receive: Receive,
                 send: Send, *, linger: bool = True, linger_time: float = DEFAULT_LINGER_TIME,
                 linger_bytes: int = DEFAULT_LINGER_BYTES) -> None:
    """Send ``refused``'s answer, then (``drain``) read and discard what the client still
    sends before ending it (module docstring); ``linger`` False: nothing is read."""
    body = refused.detail.encode("utf-8", "replace")
    http1 = str(scope.get("http_version", "1.1")).startswith("1")
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"content-length", str(len(body)).encode())]
    if http1:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    if scope.get("method") == "HEAD":
        body = b""
    if not linger or _expects_continue(scope):
        await send({"type": "http.response.body", "body": body, "more_body": False})
        return
    await send({"type": "http.response.body", "body": body, "more_body": True})
    await drain(receive, linger_time=linger_time, linger_bytes=linger_bytes)
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def drain(receive: Receive, *, linger_time: float = DEFAULT_LINGER_TIME,
                linger_bytes: int = DEFAULT_LINGER_BYTES) -> None:
    """Read and discard the rest of the request body, up to the lingering close's bounds."""
    read = 0
    with anyio.move_on_after(linger_time):
        while read <= linger_bytes:
            try:
                message = await receive()
            except Exception:  # the engine gave up on the body: nothing more to read
                return
            if message.get("type") != "http.request":
                return
            read += len(message.get("body") or b"")
            if not message.get("more_body", False):
                return
