"""Rules of the sessionless mode: the handshake era served with no session kept.

Theory of operation
-------------------
A handshake-era (2025-03-26 .. 2025-11-25) Streamable HTTP server MAY assign a session id
("Session Management" in ``basic/transports.mdx`` of those revisions): it may also not.
Without one, nothing ties a client's requests together, so any process behind a round-robin
load balancer can serve any of them with no shared store. The HTTP server
(``HTTPServer(sessionless=True)``) then serves every POST with a fresh
:class:`~mcp_sansio.ServerConnection` put in this mode by
:meth:`~mcp_sansio.ServerConnection.serve_sessionless`: ``initialize`` is answered as usual
(and nothing is kept); any other request is served as if the handshake had happened, at the
revision its ``MCP-Protocol-Version`` header names (2025-03-26 without it, as the 2025-06-18
transport says a server SHOULD assume).

What needs a session is given up, and said so, never left to hang.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._errors import LocalProtocolError

__all__ = [
    "MODE",
    "REFUSED_REQUESTS",
    "UNVERSIONED_REVISION",
    "WITHDRAWN_CAPABILITIES",
    "SessionlessError",
    "request_refusal",
    "withdraw",
]

#: How errors and logs name the mode.
MODE = "sessionless mode (HTTPServer(sessionless=True))"

#: The revision of a request with no ``MCP-Protocol-Version`` header. 2025-06-18 and
#: 2025-11-25 ``basic/transports.mdx`` ("Protocol Version Header"): "If the server does not
#: receive an MCP-Protocol-Version header, and has no other way to identify the version [...]
#: the server SHOULD assume protocol version 2025-03-26" -- the one revision whose clients do
#: not send it.
UNVERSIONED_REVISION = "2025-03-26"

#: Capability (dotted path) -> why the mode cannot honour it. Citations are to the 2025-11-25
#: revision; the earlier handshake revisions say the same.
WITHDRAWN_CAPABILITIES: dict[str, str] = {
    # server/resources.mdx "Subscriptions": updates are notifications sent whenever the
    # resource changes, i.e. outside any request: on the standalone GET stream
    # (basic/transports.mdx "Listening for Messages from the Server"), which is 405 here.
    "resources.subscribe": "resource updates travel on the session's GET stream",
    # server/{tools,prompts,resources}.mdx "List Changed Notification": same stream.
    "tools.listChanged": "list-changed notifications travel on the session's GET stream",
    "prompts.listChanged": "list-changed notifications travel on the session's GET stream",
    "resources.listChanged": "list-changed notifications travel on the session's GET stream",
    # basic/utilities/tasks.mdx: a task outlives the request that created it and is polled
    # with tasks/get, which may reach another process than the one running it.
    "tasks": "a task outlives its request; tasks/get may reach another process",
}

#: Client request -> why it is refused in the mode (code -32600, with this reason).
REFUSED_REQUESTS: dict[str, str] = {
    # server/utilities/logging.mdx: the level applies to the session's later messages; the
    # next request is served by a fresh connection, so it would apply to nothing. Every
    # request is served with no level set: a handler's log messages all go on its stream.
    "logging/setLevel": "the log level is kept by no one (the next request may reach "
                        "another process); every request is served with no level set",
}


class SessionlessError(LocalProtocolError):
    """What the server cannot do in the sessionless mode was asked of it: a request to the
    client (its answer could reach any process, where nothing waits for it)."""


def request_refusal(method: str) -> SessionlessError:
    """The error for a server-to-client request attempted in the mode."""
    return SessionlessError(
        f"{method} cannot be sent: the server runs in {MODE}, where a request to the client "
        "could never be answered (the answer would be a new POST, served by a fresh "
        "connection, possibly in another process). Serve this client with sessions, or let "
        "it speak 2026-07-28, whose input_required results carry the answers in the retry")


#: The table read once, as :func:`withdraw` applies it: whole capabilities to drop, and
#: per capability the sub-capabilities to drop from it.
_DROPPED = frozenset(path for path in WITHDRAWN_CAPABILITIES if "." not in path)
_LEAVES: dict[str, frozenset[str]] = {
    head: frozenset(p.partition(".")[2] for p in WITHDRAWN_CAPABILITIES
                    if p.partition(".")[0] == head and "." in p)
    for head in {p.partition(".")[0] for p in WITHDRAWN_CAPABILITIES if "." in p}
}


def withdraw(capabilities: Mapping[str, Any]) -> dict[str, Any]:
    """``capabilities`` without the :data:`WITHDRAWN_CAPABILITIES` (a copy; the input is not
    changed). Run for every sessionless POST, so it reads the table's precomputed form and
    copies only what it changes."""
    result: dict[str, Any] = {}
    for key, value in capabilities.items():
        if key in _DROPPED:
            continue
        leaves = _LEAVES.get(key)
        if leaves is not None and (type(value) is dict or isinstance(value, Mapping)) and (
                not leaves.isdisjoint(value)):
            result[key] = {k: v for k, v in value.items() if k not in leaves}
        else:
            result[key] = value
    return result
