"""stdio plumbing shared by the runtimes: the child's argv and environment, its process
group, the shutdown sequence's signals, keeping stray output off a server's stdout, and
the child's stderr forwarded to ``logging`` line by line (:class:`LineLogger`)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "STDERR_LOGGER",
    "LineLogger",
    "ProtectedStdio",
    "argv_of",
    "env_of",
    "spawn_args",
    "pollable",
    "read_all",
    "signal_group",
    "stdio_ends",
]

#: How long each step of the stdio shutdown sequence waits (after closing stdin, after
#: SIGTERM) before the next, in seconds (``basic/transports.mdx``: "wait for the server to
#: exit"; the official SDKs wait about two seconds).
DEFAULT_SHUTDOWN_TIMEOUT = 2.0


def argv_of(command: str | Sequence[str], args: Sequence[str]) -> list[str]:
    """``command`` is a program (then ``args`` follow it) or a whole argv list."""
    argv = [command] if isinstance(command, str) else list(command)
    argv.extend(args)
    if not argv:
        raise ValueError("no command to run")
    return argv


def env_of(env: Mapping[str, str] | None, inherit: bool = True) -> dict[str, str] | None:
    """The child's environment: ours plus ``env`` (or ``env`` alone when not inheriting)."""
    if env is None:
        return None
    base = dict(os.environ) if inherit else {}
    base.update(env)
    return base


def spawn_args(command: str | Sequence[str], args: Sequence[str], env: Mapping[str, str] | None,
               inherit_env: bool, cwd: str | os.PathLike[str] | None
               ) -> tuple[list[str], dict[str, Any]]:
    """How every runtime starts a server: its argv and the keywords of the spawn (its
    environment, its directory, and a new session, so a process group of its own)."""
    return argv_of(command, args), {"env": env_of(env, inherit_env), "cwd": cwd,
                                    "start_new_session": True}


def signal_group(pid: int, sig: int) -> bool:
    """Send ``sig`` to the process group the child leads (it was started in a new session,
    so its group id is its pid). False when nobody is left in it."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def kill_leftovers(pid: int) -> None:
    """After the child exited: SIGKILL whatever it left in its group, so no orphan survives."""
    signal_group(pid, signal.SIGKILL)


class ProtectedStdio:
    """While serving on the process's own stdin/stdout, stdout belongs to the protocol.

    ``sys.stdout`` is pointed at stderr and file descriptor 1 is made a copy of 2, so a
    stray ``print()`` (or a child process, or C code writing to fd 1) lands on stderr. The
    protocol writes to :attr:`out_fd`, a private copy of the real stdout. Everything is put
    back on :meth:`restore`, and the descriptors' blocking mode too (event loops make them
    non-blocking, which would otherwise leak to the parent's terminal)."""

    def __init__(self, in_fd: int = 0, out_fd: int = 1) -> None:
        self.in_fd = in_fd
        self._real_out = out_fd
        self._in_blocking = os.get_blocking(in_fd)
        self._saved_out = os.dup(out_fd)
        self.out_fd = os.dup(out_fd)
        self._saved_sys_stdout = sys.stdout
        sys.stdout.flush()
        os.dup2(sys.stderr.fileno(), out_fd)
        sys.stdout = sys.stderr

    def restore(self) -> None:
        sys.stdout = self._saved_sys_stdout
        with contextlib.suppress(OSError):
            os.dup2(self._saved_out, self._real_out)
        with contextlib.suppress(OSError):
            os.close(self._saved_out)
        with contextlib.suppress(OSError):
            os.set_blocking(self.in_fd, self._in_blocking)

    def close_out(self) -> None:
        """Close the protocol's copy of stdout (when the adapter did not hand it to a
        transport that closes it)."""
        with contextlib.suppress(OSError):
            os.close(self.out_fd)


def stdio_ends(stdin_fd: int | None, stdout_fd: int | None
               ) -> tuple[ProtectedStdio | None, int, int]:
    """A stdio server's descriptors ``(guard, in, out)``: the given ones, else this process's
    own stdin and stdout behind a :class:`ProtectedStdio` (``guard``; restore it after)."""
    guard = ProtectedStdio() if stdin_fd is None and stdout_fd is None else None
    in_fd = guard.in_fd if guard else (stdin_fd if stdin_fd is not None else 0)
    out_fd = guard.out_fd if guard else (stdout_fd if stdout_fd is not None else 1)
    return guard, in_fd, out_fd


@contextlib.contextmanager
def served_ends(stdin_fd: int | None, stdout_fd: int | None) -> Iterator[tuple[int, int]]:
    """A stdio server's descriptors ``(in, out)`` (:func:`stdio_ends`) while it serves; on
    leaving, this process's own stdout is closed and its stdio restored (when they were
    the ones served)."""
    guard, in_fd, out_fd = stdio_ends(stdin_fd, stdout_fd)
    try:
        yield in_fd, out_fd
    finally:
        if guard is not None:
            guard.close_out()
            guard.restore()


@contextlib.contextmanager
def protected_stdio(enabled: bool = True) -> Iterator[ProtectedStdio | None]:
    if not enabled:
        yield None
        return
    guard = ProtectedStdio()
    try:
        yield guard
    finally:
        guard.restore()


def write_all(fd: int, data: bytes) -> None:
    """Blocking write of everything (threads; fallbacks for regular files)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def pollable(fd: int) -> bool:
    """Whether an event loop can wait on ``fd`` (a pipe, a socket or a terminal). Regular
    files and ``/dev/null`` cannot be polled (epoll refuses them): adapters read those whole
    and write them with plain blocking writes."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


def read_all(fd: int) -> bytes:
    """Everything left in a (non-pollable) file, blocking."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


class LineLogger:
    """Forwards a child's stderr to ``logging``, one record per line. Never blocks: the
    adapter feeds whatever it read; a line longer than ``max_line`` is cut and logged in
    pieces rather than buffered without bound."""

    def __init__(self, logger: logging.Logger, level: int = logging.INFO,
                 max_line: int = 64 * 1024) -> None:
        self.logger = logger
        self.level = level
        self.max_line = max_line
        self._partial = b""

    def feed(self, data: bytes) -> None:
        if not data:
            self.flush()
            return
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            self._emit(line)
        if len(self._partial) > self.max_line:
            self.flush()

    def flush(self) -> None:
        partial, self._partial = self._partial, b""
        if partial:
            self._emit(partial)

    def _emit(self, line: bytes) -> None:
        if not self.logger.isEnabledFor(self.level):
            return
        line = line.rstrip(b"\r")
        for start in range(0, max(len(line), 1), self.max_line):
            piece = line[start:start + self.max_line]
            self.logger.log(self.level, "%s", piece.decode("utf-8", "replace"))


#: Where a stdio client logs its server's stderr unless told otherwise.
STDERR_LOGGER = logging.getLogger("mcp_sansio.stdio.stderr")
