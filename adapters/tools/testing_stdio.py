"""The testing kit's I/O: a stdio transport to a server command, and schema files on disk.

:mod:`mcp_sansio.testing` does no I/O; this module is where it happens for its users.

* :class:`StdioTransport` spawns a server command and speaks newline-delimited JSON over
  its stdin and stdout -- the :class:`~mcp_sansio.testing.Transport` the peer machine needs.
  It closes the way the stdio transport says a client should: stdin first, then SIGTERM,
  then SIGKILL, each after a grace period.
* :func:`load_schemas` reads the official ``<revision>/schema.json`` files from a directory,
  for validating against the files themselves rather than the copy distilled into the
  package.

Example::

    from mcp_sansio.adapters.testing_stdio import StdioTransport
    from mcp_sansio.testing import check_peer

    report = check_peer(lambda: StdioTransport(["python", "my_server.py"]))
    print(report.summary())
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from mcp_sansio.testing import Schemas

__all__ = ["DEFAULT_SCHEMA_DIR", "StdioTransport", "load_schemas"]

#: Where a checkout of this repository finds the official schemas (``../shared/mcp-schema``
#: next to it); :func:`load_schemas` uses it when present and no directory is given.
DEFAULT_SCHEMA_DIR = Path(__file__).resolve().parents[2] / "shared" / "mcp-schema"

_CHUNK = 65536


class StdioTransport:
    """A server process, spoken to over its stdin and stdout.

    :param argv: the command and its arguments.
    :param cwd: the working directory of the process.
    :param env: its environment (default: this process's).
    :param stderr: where its stderr goes: a file object, ``subprocess.DEVNULL`` (the default)
        or ``None`` to share this process's stderr.
    :param grace: seconds to wait at each step of the shutdown (close stdin, SIGTERM,
        SIGKILL).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        stderr: IO[Any] | int | None = subprocess.DEVNULL,
        grace: float = 2.0,
    ) -> None:
        self.argv = list(argv)
        self.grace = grace
        self.process = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
            cwd=cwd, env=dict(env) if env is not None else None, bufsize=0,
            start_new_session=os.name == "posix",
        )
        self._chunks: queue.Queue[bytes] = queue.Queue()
        self._eof = False
        # A reader thread makes "wait up to timeout for output" portable (no select() on
        # Windows pipes); it only moves bytes into the queue.
        self._reader = threading.Thread(target=self._read_stdout, daemon=True,
                                        name=f"stdio-reader-{self.process.pid}")
        self._reader.start()

    def _read_stdout(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while True:
                chunk = os.read(stdout.fileno(), _CHUNK)
                if not chunk:
                    break
                self._chunks.put(chunk)
        except (OSError, ValueError):
            pass
        finally:
            self._chunks.put(b"")  # end of stream

    def send(self, data: bytes) -> None:
        stdin = self.process.stdin
        if stdin is None or stdin.closed:
            raise BrokenPipeError("the server's stdin is closed")
        stdin.write(data)
        stdin.flush()

    def receive(self, timeout: float) -> bytes:
        if self._eof and self._chunks.empty():
            raise EOFError("the server closed its stdout")
        try:
            first = self._chunks.get(timeout=max(timeout, 0.0)) if timeout > 0 else (
                self._chunks.get_nowait())
        except queue.Empty:
            return b""
        out = bytearray(first)
        if not first:
            self._eof = True
        while not self._eof:
            try:
                more = self._chunks.get_nowait()
            except queue.Empty:
                break
            if not more:
                self._eof = True
                break
            out += more
        if not out and self._eof:
            raise EOFError("the server closed its stdout")
        return bytes(out)

    def close(self) -> None:
        """Close stdin, wait; SIGTERM, wait; SIGKILL (the process group, on POSIX)."""
        process = self.process
        if process.stdin is not None and not process.stdin.closed:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(self.grace)
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                process.wait(self.grace)
            except subprocess.TimeoutExpired:
                self._kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()
        self._reader.join(self.grace)

    def _kill(self) -> None:
        if os.name == "posix":
            try:
                os.killpg(self.process.pid, 9)
                return
            except OSError:
                pass
        self.process.kill()

    @property
    def returncode(self) -> int | None:
        """The process's exit status, once it has exited."""
        return self.process.poll()


def load_schemas(directory: str | os.PathLike[str] | None = None) -> Schemas:
    """The official schemas read from ``directory/<revision>/schema.json``.

    With no directory, :data:`DEFAULT_SCHEMA_DIR` is used when it exists, else the copy
    distilled into the package (which validates the same way).
    """
    if directory is None:
        if not DEFAULT_SCHEMA_DIR.is_dir():
            return Schemas()
        directory = DEFAULT_SCHEMA_DIR
    root = Path(directory)
    documents: dict[str, dict[str, Any]] = {}
    for path in sorted(root.glob("*/schema.json")):
        documents[path.parent.name] = json.loads(path.read_text(encoding="utf-8"))
    if not documents:
        raise FileNotFoundError(f"no <revision>/schema.json under {root}")
    return Schemas(documents)
