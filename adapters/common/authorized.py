"""The OAuth retry of an HTTP client, written once as a plan that each colour runs.

Theory of operation: a client session given ``auth`` makes each attempt (a request, or a
connect on a new connection) as usual; when the server refuses it with a challenge (401,
or 403 ``insufficient_scope``: MCP basic/authorization.mdx) the session runs the OAuth
flow and makes the attempt again, until it succeeds or the flow fails (its own bounds end
the loop). :func:`authorized` is that loop as a generator *plan* (as
:mod:`mcp_sansio.app.calls` writes the client calls): it yields :data:`ATTEMPT` (make the
attempt; its result or exception is sent back in) and :class:`Authorize` (run the flow),
and decides alone what is a challenge: an :class:`~mcp_sansio.app.http_client.HTTPTransportError`
that :func:`~mcp_sansio.adapters.auth.session.challenge_of` reads as one. A runner
(:func:`run_async`, :func:`run_blocking`) takes the steps with the runtime's primitives;
``authorize`` is the runtime's (it serializes concurrent flows and runs the blocking parts
where that runtime runs them; ``generation`` lets a call that waited for another call's flow
skip its own).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, NamedTuple, TypeVar

from mcp_sansio.app.http_client import HTTPTransportError

from ..auth.session import SessionAuth, challenge_of
from .plans import Stepper

__all__ = ["ATTEMPT", "AsyncAuthorizing", "Authorize", "authorized", "run_async", "run_blocking"]

T = TypeVar("T")

#: The step that makes the attempt.
ATTEMPT = "attempt"


class Authorize(NamedTuple):
    """The step that runs the OAuth flow: for ``challenge`` (None: a token is due before
    the first attempt), unless the flow ran since ``generation``."""

    challenge: Any
    generation: int


Plan = Generator[Authorize | str, Any, Any]


def authorized(auth: SessionAuth) -> Plan:
    """Attempt, authorizing first when a token is due and again after each challenge."""
    if auth.due():
        yield Authorize(None, auth.generation)
    while True:
        generation = auth.generation
        try:
            result = yield ATTEMPT
        except HTTPTransportError as exc:
            challenge = challenge_of(exc)
            if challenge is None:
                raise
            yield Authorize(challenge, generation)
            continue
        auth.succeeded()
        return result


def _attempts(step: Any) -> bool:
    return not isinstance(step, Authorize)


async def run_async(auth: SessionAuth, attempt: Callable[[], Awaitable[T]],
                    authorize: Callable[[SessionAuth, Any, int], Awaitable[None]]) -> T:
    """Run :func:`authorized` for an ``async`` client."""
    stepper = Stepper(authorized(auth), _attempts)
    while stepper.advance():
        with stepper:
            step = stepper.step
            if isinstance(step, Authorize):
                await authorize(auth, step.challenge, step.generation)
            else:
                stepper.value = await attempt()
    return stepper.result  # type: ignore[no-any-return]


def run_blocking(auth: SessionAuth, attempt: Callable[[], T],
                 authorize: Callable[[SessionAuth, Any, int], None]) -> T:
    """:func:`run_async`, blocking (threads)."""
    stepper = Stepper(authorized(auth), _attempts)
    while stepper.advance():
        with stepper:
            step = stepper.step
            if isinstance(step, Authorize):
                authorize(auth, step.challenge, step.generation)
            else:
                stepper.value = attempt()
    return stepper.result  # type: ignore[no-any-return]


class AsyncAuthorizing:
    """The OAuth retry of an ``async`` runtime's client sockets (asyncio, trio): one flow at
    a time under the runtime's own lock (``_auth_lock``); ``_run_flow`` is the runtime's
    way to run it (its blocking parts in worker threads)."""

    __slots__ = ()
    _auth_lock: Any

    async def _run_flow(self, auth: SessionAuth, challenge: Any, generation: int) -> None:
        raise NotImplementedError

    async def authorized(self, auth: SessionAuth,
                         send: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        """``send()`` under the OAuth retry (:mod:`~mcp_sansio.adapters.common.authorized`)."""
        return await run_async(auth, send, self.authorize)

    async def authorize(self, auth: SessionAuth, challenge: Any, generation: int) -> None:
        """Run the OAuth flow (its blocking parts in worker threads), one at a time."""
        async with self._auth_lock:
            await self._run_flow(auth, challenge, generation)
