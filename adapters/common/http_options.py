"""What every runtime's HTTP server adapter shares: the lingering close's bounds and the
``tool_param_headers`` option derived from a :class:`~mcp_sansio.app.server.Server`.

The lingering close
-------------------
A server that answers early -- 413 for a body over ``max_body_size``, 400 for malformed
HTTP -- while the client is still sending must not simply close its socket: closing with
unread bytes in the receive queue (or bytes arriving after the close) makes the kernel send a
TCP reset, and a reset makes the client's kernel drop what it had received and not yet read
-- the very answer that explains the close. RFC 9112 section 9.6 ("Tear-down") describes the
remedy robust servers use: close in stages. After the final response the adapters
half-close (``shutdown(SHUT_WR)``: the client sees the end of the response and the end of
the stream), then go on reading and discarding what the client still sends, until it closes
its side, or :data:`DEFAULT_LINGER_TIME` seconds pass, or :data:`DEFAULT_LINGER_BYTES`
bytes were discarded -- whichever comes first -- and only then close. A blocking client that
sends its whole body before reading (``urllib``, ``http.client``, ``requests``) thus
finishes its send and reads the 413 instead of hanging in ``send`` or reading a reset.
A client that already closed its side (an end of file was read) needs no lingering.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_sansio.http import param_headers

if TYPE_CHECKING:
    from mcp_sansio.app.server import Server

__all__ = ["DEFAULT_LINGER_BYTES", "DEFAULT_LINGER_TIME", "tool_param_headers"]

#: Seconds a closing connection keeps reading (and discarding) what its client still sends:
#: 5 s, nginx's ``lingering_timeout``. Long enough for a client to finish sending a body of
#: several megabytes over an ordinary link and read the answer; on loopback a 16 MB body
#: drains in well under a second. The bound is per connection and costs no memory.
DEFAULT_LINGER_TIME = 5.0
#: Bytes a closing connection reads and discards at most: 64 MiB, 16 times the default
#: ``max_body_size`` -- room for any body a client would plausibly send before reading, and
#: a cap on the work a client that streams without end can cause (the time bound cuts it
#: off as well).
DEFAULT_LINGER_BYTES = 64 * 1024 * 1024


def tool_param_headers(server: Server) -> Callable[[str], dict[str, tuple[str, ...]] | None]:
    """The ``tool_param_headers`` option of :class:`~mcp_sansio.http.HTTPServer` for
    ``server``: each tool's ``x-mcp-header`` annotations (2026-07-28), so that its
    ``Mcp-Param-*`` headers are checked. Looked up in ``server.tools`` at each call, so it
    follows tools added, replaced or removed while the server runs; each tool's annotations
    are read from its ``inputSchema`` once per registration (the entry is the cache key). A
    tool whose annotations are invalid has none checked (clients drop such tools)."""
    cache: dict[str, tuple[Any, dict[str, tuple[str, ...]] | None]] = {}

    def lookup(name: str) -> dict[str, tuple[str, ...]] | None:
        entry = server.tools.get(name)
        if entry is None:
            cache.pop(name, None)
            return None
        cached = cache.get(name)
        if cached is not None and cached[0] is entry:
            return cached[1]
        schema = entry.definition.get("inputSchema")
        try:
            found = (param_headers(schema) or None) if isinstance(schema, dict) else None
        except ValueError:
            found = None
        cache[name] = (entry, found)
        return found

    return lookup
