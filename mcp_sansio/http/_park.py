"""An exchange that waits on an asynchronous answer: the record, and the need handed out.

Theory of operation
-------------------
Sometimes the HTTP server cannot go on with a request until something outside the core
answers a question -- an access token only the authorization server can judge (RFC 7662
introspection, a JWKS refresh; :mod:`mcp_sansio.auth._deferred`), a session record or a
replay a shared store holds (:class:`~mcp_sansio.http._shared.Lookup`). The core never does
I/O, so it *parks* the exchange instead of waiting. This is the server's one waiting
mechanism: one slot on the channel (``_parked``), one table of handles, one timeout, one
release on the client leaving, whatever the question.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

import attrs

#: The channel a parked exchange belongs to (the server's ``ServerChannel``).
ChannelT = TypeVar("ChannelT")

__all__ = ["DEFAULT_DECISION_TIMEOUT", "DecisionNeeded", "Parked"]

#: Seconds an exchange waits for an asynchronous decision before it is answered without
#: one: 10. A token introspection or a JWKS fetch takes milliseconds when the authorization
#: server is well; ten seconds rides out a slow one while answering (503 for a token) well
#: before clients give up on a request (the official SDKs wait 30 s or more) and before
#: the 30-60 s idle timeouts of common proxies cut the connection without an answer.
DEFAULT_DECISION_TIMEOUT = 10.0


@attrs.frozen(eq=False)
class DecisionNeeded:
    """An exchange is parked until the adapter answers ``question``: call
    :meth:`HTTPServer.decide <mcp_sansio.http.HTTPServer.decide>` with ``handle`` and the
    answer (a value or an exception) before ``deadline`` (the server's ``now`` clock)."""

    handle: int
    question: Any
    deadline: float


@attrs.define(eq=False)
class Parked(Generic[ChannelT]):
    """The server's record of a parked exchange, on its channel."""

    channel: ChannelT
    need: DecisionNeeded
    #: Goes on with the exchange once the answer came (called by ``decide``).
    resume: Callable[[Any], None]
    #: Answers the exchange when no answer came in time.
    expire: Callable[[], None]
