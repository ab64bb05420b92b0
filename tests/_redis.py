"""A real Redis for tests: Debian's ``redis-server``, started on a Unix socket in a
temporary directory with persistence off, stopped at the end of the session.

One server serves the whole test session; tests keep apart by key prefix (each test's stores
get a fresh one) rather than flushing, so nothing waits on a FLUSHALL. Where
``redis-server`` is missing the tests that need it are skipped with one reason -- unless
``CI`` is set: ``.ci/run`` installs it, and there its absence is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REDIS_SERVER = shutil.which("redis-server") or (
    "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None)


class RedisServer:
    """A running ``redis-server``: :attr:`url` reaches it (``unix://``)."""

    def __init__(self, directory: Path) -> None:
        assert REDIS_SERVER is not None
        self.socket = directory / "redis.sock"
        self.url = f"unix://{self.socket}"
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", "0", "--unixsocket", str(self.socket),
             "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
             "--dir", str(directory), "--logfile", str(directory / "redis.log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30  # generous: the machine is shared
        while not self.socket.exists():
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.process.stderr!r}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("redis-server did not open its socket within 30 s")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    if REDIS_SERVER is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is missing (.ci/run installs it with apt-get)")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    pytest.importorskip("redis", reason="redis-py is not installed (pip install '.[redis]')")
    with tempfile.TemporaryDirectory(prefix="mcp-redis-") as directory:
        server = RedisServer(Path(directory))
        try:
            yield server
        finally:
            server.stop()
