"""One authorized request on an HTTP client: the OAuth retry written once for asyncio and
trio, and its blocking twin for threads.

Theory of operation: a client session given ``auth`` sends each request as usual; when the
server refuses it with a challenge (401, or 403 ``insufficient_scope``: MCP
basic/authorization.mdx) the session runs the OAuth flow and sends the request again,
until it succeeds or the flow fails (its own bounds end the loop). ``authorize`` is the
runtime's: it serializes concurrent flows behind the session's lock and runs the flow's
blocking parts where that runtime runs them; ``generation`` lets a call that waited for
another call's flow skip its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp_sansio.app.http_client import HTTPTransportError

from ..auth.session import SessionAuth, challenge_of

__all__ = ["authorized_request", "authorized_request_sync"]


async def authorized_request(
    auth: SessionAuth, send: Callable[[], Awaitable[dict[str, Any]]],
    authorize: Callable[[SessionAuth, Any, int], Awaitable[None]],
) -> dict[str, Any]:
    """``send()``, authorizing first when a token is due and again after each challenge."""
    if auth.due():
        await authorize(auth, None, auth.generation)
    while True:
        generation = auth.generation
        try:
            result = await send()
        except HTTPTransportError as exc:
            challenge = challenge_of(exc)
            if challenge is None:
                raise
            await authorize(auth, challenge, generation)
            continue
        auth.succeeded()
        return result


def authorized_request_sync(
    auth: SessionAuth, send: Callable[[], dict[str, Any]],
    authorize: Callable[[SessionAuth, Any, int], None],
) -> dict[str, Any]:
    """:func:`authorized_request` for a blocking client (threads)."""
    if auth.due():
        authorize(auth, None, auth.generation)
    while True:
        generation = auth.generation
        try:
            result = send()
        except HTTPTransportError as exc:
            challenge = challenge_of(exc)
            if challenge is None:
                raise
            authorize(auth, challenge, generation)
            continue
        auth.succeeded()
        return result
