"""The error a server raises when it cannot listen, in words.

Theory of operation: binding a listening socket fails with the operating system's
``OSError`` (``[Errno 98] Address already in use``), which names neither the address nor
what was being done. Each runtime's HTTP server wraps the bind in :func:`listening`, which
re-raises it as a :class:`ListenError` -- still an ``OSError`` with the same ``errno``, so
``except OSError`` and errno checks keep working -- whose message says what failed:
``cannot listen on 127.0.0.1:8000: address already in use``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


class ListenError(OSError):
    """A server could not listen on its address (``errno`` is the operating system's)."""

    def __init__(self, errno: int | None, message: str, host: str, port: int) -> None:
        super().__init__(errno, message)
        #: The address asked for.
        self.host = host
        self.port = port

    def __str__(self) -> str:
        return str(self.strerror)


@contextmanager
def listening(host: str | None, port: int) -> Iterator[None]:
    """Turn an ``OSError`` raised inside into a :class:`ListenError` naming the address."""
    try:
        yield
    except ListenError:
        raise
    except OSError as exc:
        where = host or "*"
        where = f"[{where}]:{port}" if ":" in where else f"{where}:{port}"
        if isinstance(exc.errno, int) and exc.errno > 0:
            reason = os.strerror(exc.errno)
            reason = reason[:1].lower() + reason[1:]
        else:
            reason = str(exc) or type(exc).__name__
        raise ListenError(exc.errno, f"cannot listen on {where}: {reason}", host or "",
                          port) from exc
