"""The stdio child-process lifecycle, public for embedders: spawn an MCP server in its own
process group, and stop it the way the spec asks.

Theory of operation
-------------------
2025-11-25 basic/transports (stdio, "Shutdown"): the client closes the server's stdin,
waits for it to exit, sends SIGTERM if it does not within a reasonable time, and SIGKILL if
it still does not. :func:`spawn_server` starts the server with ``start_new_session=True`` so
that it leads a process group of its own: the signals go to the whole group (a server
started through a shell or ``npx`` has children that must stop too), and a Ctrl-C meant for
the client's terminal does not reach it. :func:`stop_server` runs the sequence, each step
waiting ``shutdown_timeout`` seconds (:data:`DEFAULT_SHUTDOWN_TIMEOUT`), then SIGKILLs what
the server left in its group so that no orphan survives.

The threads client uses these two functions; the asyncio and trio clients run the same
sequence on their own process objects. They block: on an event loop, run them in a thread.
POSIX only (process groups and signals).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence

from .common.stdio import DEFAULT_SHUTDOWN_TIMEOUT, kill_leftovers, signal_group, spawn_args

__all__ = ["DEFAULT_SHUTDOWN_TIMEOUT", "signal_group", "spawn_server", "stop_server"]


def spawn_server(
    command: str | Sequence[str], args: Sequence[str] = (), *,
    env: Mapping[str, str] | None = None, inherit_env: bool = True,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start an MCP server with pipes on its stdin, stdout and stderr (unbuffered), in a new
    session and so a process group of its own.

    ``command`` is a program (``args`` follow it) or a whole argv list; ``env`` is added to
    our environment (or replaces it with ``inherit_env=False``). Read the server's stderr
    (its log) as well as its stdout, or a chatty server blocks once the pipe is full."""
    argv, spawn = spawn_args(command, args, env, inherit_env, cwd)
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, bufsize=0, **spawn)


def stop_server(process: subprocess.Popen[bytes],
                shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT) -> int:
    """Stop a server :func:`spawn_server` started: close its stdin, wait; SIGTERM its group,
    wait; SIGKILL its group. Then SIGKILL whatever it left in its group. Returns its exit
    status (negative: the signal that ended it). Its stdout and stderr are left open for
    the caller to drain and close."""
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    try:
        process.wait(shutdown_timeout)
    except subprocess.TimeoutExpired:
        signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(shutdown_timeout)
        except subprocess.TimeoutExpired:
            signal_group(process.pid, signal.SIGKILL)
            process.wait()
    kill_leftovers(process.pid)
    return process.returncode
