"""The HTTP hardening corpus (tests/engine_corpus.py: the hostile requests of
tests/adapters/common/test_http_isolation.py and the cases only a parser decides -- bodies over the
limit, ``Expect``, ``Host``, chunk extensions, trailers, absolute-form, HTTP/1.0) against our own
servers, ``mcp-sansio serve-example --runtime R --transport http``, on every runtime
(asyncio, trio, threads), over TCP and over a Unix domain socket (``--uds PATH``): each case
gets the same answer over both, the answer the engine table of docs/deploying.rst gives
for our servers (its "our servers" column is read from the same table). One server per
runtime and transport serves the module.

Over the socket the requests name ``Host: localhost``, the host a client of a Unix socket
sends (``http://localhost/mcp``); over TCP, ``127.0.0.1``. The engines get the same corpus
over TCP in tests/asgi/test_asgi_engine_hardening.py and over their ``--uds`` in
tests/asgi/test_asgi_uds.py; the fuzzers' seeds and found inputs over a Unix socket are in
fuzz/test_http_raw_uds.py."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine_corpus import CASES, HOST, exchange, sse_call
from tests.http_stories import serve_example
from tests.paths import ROOT
from tests.processes import stop_group

RUNTIMES = ["asyncio", "trio", "threading"]
TRANSPORTS = ["tcp", "uds"]
START = 60.0  # seconds for a server to print its URL: a hang, not a measurement
#: Where a server on a Unix socket is reached: the Host its clients send.
UDS_HOST = b"localhost"


def over(transport: str, data: bytes) -> bytes:
    """``data`` (a case's bytes, naming ``127.0.0.1``) as sent over ``transport``."""
    return data if transport == "tcp" else data.replace(HOST, UDS_HOST)


@contextlib.contextmanager
def serving(runtime: str, transport: str, path: Path) -> Iterator[int | Path]:
    """``serve-example`` on ``runtime`` over ``transport`` while the block runs: the port,
    or the socket's path; then its process group is stopped."""
    more = ["--uds", str(path)] if transport == "uds" else []
    proc = subprocess.Popen(serve_example(*more, runtime=runtime), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            cwd=ROOT)
    err: list[str] = []
    threading.Thread(target=lambda: err.extend(proc.stderr or ()), daemon=True).start()
    try:
        got: list[str] = []
        reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()),  # type: ignore[union-attr]
                                  daemon=True)
        reader.start()
        reader.join(START)
        assert got and got[0].startswith("http://"), (got, "".join(err))
        url = got[0].strip()
        if transport == "uds":
            assert url == "http://localhost/mcp", url
            yield path
        else:
            yield int(url.rsplit(":", 1)[1].split("/")[0])
        assert proc.poll() is None, "".join(err)  # the corpus ended no server
    finally:
        stop_group(proc)


SERVERS = [(runtime, transport) for runtime in RUNTIMES for transport in TRANSPORTS]


@pytest.fixture(scope="module", params=SERVERS, ids=[f"{r}-{t}" for r, t in SERVERS])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[str, int | Path]]:
    runtime, transport = request.param
    if runtime == "trio":
        pytest.importorskip("trio")
    path = tmp_path_factory.mktemp("uds") / "mcp.sock"
    with serving(runtime, transport, path) as address:
        yield transport, address


@pytest.mark.parametrize("case", list(CASES))
def test_the_hardening_corpus(served: tuple[str, int | Path], case: str) -> None:
    transport, address = served
    data, methods, statuses, closes = CASES[case]
    finals = len([s for s in statuses if s >= 200])
    replies, closed = exchange(address, over(transport, data), methods, count=finals,
                               until_closed=closes)
    got = [getattr(r, "status", r) for r in replies]
    assert (got, closed) == (statuses, closes), (case, replies)


def test_a_stream_for_an_http10_client_has_no_chunked_coding(
        served: tuple[str, int | Path]) -> None:
    transport, address = served
    replies, closed = exchange(address, over(transport, sse_call(b"HTTP/1.0")), [], count=1,
                               until_closed=True, idle=30.0)
    (reply,) = replies
    assert reply.status == 200 and closed  # type: ignore[attr-defined]
    assert reply.header("transfer-encoding") is None  # type: ignore[attr-defined]
    events = [json.loads(line[5:]) for line in reply.body.decode().splitlines()  # type: ignore[attr-defined]
              if line.startswith("data:")]
    assert events[-1]["result"]["content"][0]["text"].startswith("Tool with progress")
