"""The example server on a Unix domain socket under every engine: ``mcp-sansio serve-example
--engine E --uds PATH`` (uvicorn, hypercorn's asyncio and trio workers, granian), started
once per engine for the module over a *stale* socket file (what a server that died leaves
behind: replaced). The socket file's mode is 0600; clients of both eras are served over it
(the URL names the path and ``Host``: ``http://localhost/mcp``); the hardening corpus gets
the answers it gets over TCP (tests/asgi/test_asgi_engine_hardening.py); a second server on the
same path, while the first listens, is refused in one line with exit status 1."""

from __future__ import annotations

import contextlib
import json
import socket
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.asgi.test_asgi_engines import ENGINES, START, serve_example
from tests.engine_corpus import ANY_REFUSAL, CASES, ENGINE_ANSWERS, exchange, raw_post, sse_call
from tests.paths import ROOT
from tests.processes import stop_group


@contextlib.contextmanager
def serving(argv: list[str]) -> Iterator[list[str]]:
    """The server process while the block runs (its first stdout line checked); then its
    process group is stopped."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=ROOT)
    err: list[str] = []
    threading.Thread(target=lambda: err.extend(proc.stderr or ()), daemon=True).start()
    try:
        got: list[str] = []
        reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()),  # type: ignore[union-attr]
                                  daemon=True)
        reader.start()
        reader.join(START)
        assert got and got[0].strip() == "http://localhost/mcp", (got, "".join(err))
        yield err
    finally:
        stop_group(proc)


@pytest.fixture(scope="module", params=ENGINES, ids=[f"{e}-{r}" for e, r in ENGINES])
def uds(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[tuple[str, str, Path]]:
    name, runtime = request.param
    pytest.importorskip(name)
    path = tmp_path_factory.mktemp("uds") / "mcp.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))  # a socket file nobody listens on
    stale.close()
    with serving(serve_example(name, runtime, "--uds", str(path))):
        yield name, runtime, path


def test_the_socket_file_is_its_owners_alone(uds: tuple[str, str, Path]) -> None:
    _, _, path = uds
    mode = path.stat().st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600


def test_both_eras_are_served_over_the_socket(uds: tuple[str, str, Path]) -> None:
    _, _, path = uds
    (reply,), _ = exchange(path, raw_post(extra=b"Connection: close\r\n"), [], count=1,
                           until_closed=True, idle=30.0)
    assert reply.status == 200  # type: ignore[union-attr]
    assert json.loads(reply.body)["result"]["protocolVersion"] == "2025-11-25"  # type: ignore[union-attr]
    (reply,), _ = exchange(path, sse_call().replace(b"\r\n\r\n", b"\r\nConnection: close"
                                                    b"\r\n\r\n", 1), [], count=1,
                           until_closed=True, idle=30.0)
    events = [json.loads(line[5:]) for line in reply.body.decode().splitlines()  # type: ignore[union-attr]
              if line.startswith("data:")]
    assert events[-1]["result"]["content"][0]["text"].startswith("Tool with progress")


@pytest.mark.parametrize("case", list(CASES))
def test_the_hardening_corpus_over_the_socket(uds: tuple[str, str, Path], case: str) -> None:
    name, _, path = uds
    data, methods, statuses, closes = CASES[case]
    row = ENGINE_ANSWERS.get(case, {}).get(name)
    expected = (row[0], row[1]) if row is not None else (statuses, closes)
    finals = len([s for s in expected[0] if s >= 200])
    replies, closed = exchange(path, data, methods, count=finals, until_closed=expected[1])
    got = [getattr(r, "status", r) for r in replies]
    if case in ANY_REFUSAL and row is None:
        assert len(got) == 1 and 400 <= got[0] < 500 and closed is True, (case, got)  # type: ignore[operator]
        return
    assert (got, closed) == expected, (case, replies)


def test_a_socket_a_server_listens_on_is_refused(uds: tuple[str, str, Path]) -> None:
    name, runtime, path = uds
    done = subprocess.run(serve_example(name, runtime, "--uds", str(path)), check=False,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "already listens" in lines[0] and str(path) in lines[0], lines
    assert path.exists()  # and the running server's socket is left alone

