"""What every runtime's HTTP server adapter shares: the lingering close's bounds, the
``tool_param_headers`` option derived from a :class:`~mcp_sansio.app.server.Server`, and
the Unix socket listener.

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

Unix domain sockets
-------------------
``start_http(..., uds=PATH)`` listens on a Unix socket instead of a TCP port
(:func:`unix_listener`): the file is made mode :data:`UDS_MODE`, a stale one (nobody
listens on it) is replaced, a live one or a file that is not a socket is refused.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_sansio.http import param_headers

from .listen_error import ListenError

if TYPE_CHECKING:
    from mcp_sansio.app.server import Server

__all__ = ["DEFAULT_LINGER_BYTES", "DEFAULT_LINGER_TIME", "HIGH_WATER", "UDS_HOST", "UDS_MODE",
           "claim_socket_path", "tool_param_headers", "unix_listener"]

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
#: The mode of a Unix socket file the server listens on: its owner's alone (a local proxy
#: or sidecar runs as the same user, or is given access by the directory it is made in).
UDS_MODE = 0o600
#: The host a server on a Unix socket names in its URL (``http://localhost/mcp``): what a
#: client sends as ``Host``, which the default DNS-rebinding check accepts.
UDS_HOST = "localhost"
#: Unsent output (bytes) above which a connection is not read from until it drains: 256 KiB,
#: asyncio's write-buffer high-water mark, which the asyncio adapter relies on.
HIGH_WATER = 256 * 1024


def claim_socket_path(path: str) -> str | None:
    """Make ``path`` free for a Unix socket to listen on, or say why not (one line): a
    socket file nobody listens on (a server that died leaves it behind) is removed; one
    a server listens on, or a file that is not a socket, is left alone and refused."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if not stat.S_ISSOCK(mode):
        return f"{path} exists and is not a socket"
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        os.unlink(path)  # stale: its server is gone
        return None
    except OSError as exc:
        return f"cannot tell whether a server listens on {path}: {exc}"
    finally:
        probe.close()
    return f"a server already listens on {path}"


def unix_listener(path: str, backlog: int = 128) -> socket.socket:
    """A listening Unix stream socket at ``path`` (mode :data:`UDS_MODE`), blocking; a
    :class:`~mcp_sansio.adapters.common.listen_error.ListenError` saying why when it
    cannot be made. The mode is set before ``listen``: until then nobody can connect."""
    refused = claim_socket_path(path)
    if refused is not None:
        raise ListenError(errno.EADDRINUSE, f"cannot listen on {path}: {refused}", path, 0)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        os.chmod(path, UDS_MODE)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        reason = os.strerror(exc.errno) if isinstance(exc.errno, int) else str(exc)
        raise ListenError(exc.errno, f"cannot listen on {path}: {reason[:1].lower()}"
                          f"{reason[1:]}", path, 0) from exc
    return sock


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
