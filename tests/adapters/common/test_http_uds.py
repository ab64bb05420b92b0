"""Our own HTTP servers and clients over a Unix domain socket: ``mcp-sansio serve-example
--runtime R --transport http --uds PATH`` (``run_http(..., uds=PATH)``) on every runtime,
started once per runtime for the module over a *stale* socket file (replaced), answers
every runtime's ``connect_http(url, uds=PATH)`` in both eras; the socket file's mode is 0600;
a second server on a path a server listens on, or on a file that is not a socket, is
refused in one line with exit status 1 (``start_http`` raises a ``ListenError`` saying why).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_sansio.adapters.common.listen_error import ListenError

from mcp_sansio import Era
from mcp_sansio.app.server import Server
from tests.paths import ROOT
from tests.processes import stop_group

trio = pytest.importorskip("trio")

RUNTIMES = ["asyncio", "trio", "threading"]
URL = "http://localhost/mcp"  # the path and the Host; the socket is the connection
GUARD = 60.0  # a hang, not a measurement (the machine is shared)


def serve_example(runtime: str, *more: str) -> list[str]:
    return [sys.executable, "-m", "mcp_sansio", "serve-example", "--runtime", runtime,
            "--transport", "http", *more]


@contextlib.contextmanager
def serving(argv: list[str]) -> Iterator[None]:
    """The server process while the block runs (its URL line checked); then its process
    group is stopped."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=ROOT)
    err: list[str] = []
    threading.Thread(target=lambda: err.extend(proc.stderr or ()), daemon=True).start()
    try:
        got: list[str] = []
        reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()),  # type: ignore[union-attr]
                                  daemon=True)
        reader.start()
        reader.join(GUARD)
        assert got and got[0].strip() == URL, (got, "".join(err))
        yield
    finally:
        stop_group(proc)


@pytest.fixture(scope="module", params=RUNTIMES)
def uds(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[tuple[str, Path]]:
    runtime = request.param
    path = tmp_path_factory.mktemp("uds") / "mcp.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))  # a socket file nobody listens on: what a dead server leaves
    stale.close()
    with serving(serve_example(runtime, "--uds", str(path))):
        yield runtime, path


def _text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def call(client_runtime: str, path: Path, era: Era | None) -> tuple[Era | None, str]:
    """One ``echo`` call from ``client_runtime``'s client over the socket at ``path``
    (``era``: as ``connect_http`` takes it); the era spoken and the answer."""
    args = {"text": "over a unix socket"}
    if client_runtime == "threading":
        from mcp_sansio.adapters import threading as sync

        with sync.connect_http(URL, uds=path, era=era) as client:
            return client.era, _text(client.call_tool("echo", args, timeout=GUARD))

    async def main() -> tuple[Era | None, str]:
        adapter: Any
        if client_runtime == "asyncio":
            from mcp_sansio.adapters import asyncio as adapter
        else:
            from mcp_sansio.adapters import trio as adapter
        async with adapter.connect_http(URL, uds=str(path), era=era) as client:
            return client.era, _text(await client.call_tool("echo", args, timeout=GUARD))

    if client_runtime == "asyncio":
        return asyncio.run(asyncio.wait_for(main(), GUARD))

    async def guarded() -> tuple[Era | None, str]:
        with trio.fail_after(GUARD):
            return await main()
    result: tuple[Era | None, str] = trio.run(guarded)
    return result


def test_the_socket_file_is_its_owners_alone(uds: tuple[str, Path]) -> None:
    _, path = uds
    mode = path.stat().st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600


@pytest.mark.parametrize("client_runtime", RUNTIMES)
@pytest.mark.parametrize("era", [Era.HANDSHAKE, None], ids=["handshake", "2026-07-28"])
def test_every_client_in_both_eras(uds: tuple[str, Path], client_runtime: str,
                                   era: Era | None) -> None:
    _, path = uds
    spoken, text = call(client_runtime, path, era)
    assert text == "over a unix socket"
    assert spoken is (Era.HANDSHAKE if era is Era.HANDSHAKE else Era.STATELESS)


def test_a_socket_a_server_listens_on_is_refused(uds: tuple[str, Path]) -> None:
    runtime, path = uds
    done = subprocess.run(serve_example(runtime, "--uds", str(path)), check=False,
                          capture_output=True, text=True, timeout=GUARD, cwd=ROOT)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "already listens" in lines[0] and str(path) in lines[0], lines
    assert stat.S_ISSOCK(path.stat().st_mode)  # and the running server's socket is left alone


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_file_that_is_not_a_socket_is_refused(runtime: str, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("keep me")
    server = Server("uds")
    with pytest.raises(ListenError, match="exists and is not a socket") as raised:
        if runtime == "threading":
            from mcp_sansio.adapters import threading as sync

            with sync.start_http(server, uds=str(path)):
                pass
        elif runtime == "asyncio":
            from mcp_sansio.adapters import asyncio as aio

            async def main() -> None:
                async with aio.start_http(server, uds=str(path)):
                    pass
            asyncio.run(main())
        else:
            from mcp_sansio.adapters import trio as tri

            async def main_trio() -> None:
                async with tri.start_http(server, uds=str(path)):
                    pass
            trio.run(main_trio)
    assert str(path) in str(raised.value)
    assert path.read_text() == "keep me"
