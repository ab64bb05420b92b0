"""The HTTP hardening corpus against the ASGI application under the real engines: uvicorn,
hypercorn (asyncio and trio workers) and granian, each started once for the module by
``mcp-sansio serve-example --engine`` (with the options it passes: ENGINE_OPTIONS).

Every case of tests/engine_corpus.py gets our own servers' answer -- the application
enforces the rules it can see (adapters/asgi/guard.py) -- or is a row of the engine table
(``ENGINE_ANSWERS``, shown in docs/deploying.rst) where the engine's parser decides before
the application runs. Beyond the corpus: an HTTP/1.0 client of a streamed answer gets it
without chunked coding, a body over the limit is answered 413 that the client reads, and
the session cap is answered 503 with Retry-After."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
from collections.abc import Iterator

import pytest

from tests.asgi.test_asgi_engines import ENGINES, process, serve_example
from tests.engine_corpus import (
    ANY_REFUSAL,
    BIG,
    CASES,
    ENGINE_ANSWERS,
    exchange,
    raw_post,
    render_table,
    sse_call,
)
from tests.paths import ROOT


@pytest.fixture(scope="module", params=ENGINES, ids=[f"{e}-{r}" for e, r in ENGINES])
def engine(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    name, runtime = request.param
    pytest.importorskip(name)
    with process(serve_example(name, runtime)) as url:
        yield name, int(url.split(":")[2].split("/")[0])


@pytest.mark.parametrize("case", list(CASES))
def test_the_hardening_corpus(engine: tuple[str, int], case: str) -> None:
    name, port = engine
    data, methods, statuses, closes = CASES[case]
    expected = (statuses, closes)
    row = ENGINE_ANSWERS.get(case, {}).get(name)
    if row is not None:
        expected = (row[0], row[1])
    finals = len([s for s in expected[0] if s >= 200])
    replies, closed = exchange(port, data, methods, count=finals,
                               until_closed=expected[1])
    got = [getattr(r, "status", r) for r in replies]
    if case in ANY_REFUSAL and row is None:
        assert len(got) == 1 and 400 <= got[0] < 500 and closed is True, (case, got, closed)  # type: ignore[operator]
        return
    assert (got, closed) == expected, (case, replies)


def test_an_http10_client_gets_a_stream_without_chunked_coding(
        engine: tuple[str, int]) -> None:
    _, port = engine
    replies, closed = exchange(port, sse_call(b"HTTP/1.0"), [], count=1, until_closed=True,
                               idle=30.0)
    (reply,) = replies
    assert reply.status == 200 and closed  # type: ignore[union-attr]
    assert reply.header("transfer-encoding") is None  # type: ignore[union-attr]
    events = [json.loads(line[5:]) for line in reply.body.decode().splitlines()  # type: ignore[union-attr]
              if line.startswith("data:")]
    assert events[-1]["result"]["content"][0]["text"].startswith("Tool with progress")
    assert len(events) == 4  # three progress notifications, then the result


def test_a_body_over_the_limit_is_refused_before_it_is_read(engine: tuple[str, int]) -> None:
    # The 413 comes from Content-Length, while the client is still sending: it reads the
    # answer after sending the whole body, as a blocking client does, not a reset.
    _, port = engine
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        data = raw_post(b"x" * BIG)
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            sock.sendall(data)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    finally:
        sock.close()
    assert out.startswith(b"HTTP/1.1 413 "), out[:200]
    assert b"larger than" in out


CAPPED = {"max_sessions": 2}


@contextlib.contextmanager
def capped(name: str, runtime: str) -> Iterator[int]:
    """The example application on ``name`` with a session cap of 2, from the engine's own
    command line (what a user's launch command looks like)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    target = "mcp_sansio.adapters.tools._asgi_serve:example_app"
    if name == "uvicorn":
        argv = ["-m", "uvicorn", "--factory", target, "--port", str(port), "--log-level",
                "warning"]
    elif name == "hypercorn":
        argv = ["-m", "hypercorn", "-k", runtime, "-b", f"127.0.0.1:{port}", target + "()"]
    else:
        argv = ["-m", "granian", "--interface", "asgi", "--factory", "--port", str(port),
                "--log-level", "warning", target]
    env = {"MCP_SANSIO_EXAMPLE_HTTP_OPTIONS": json.dumps(CAPPED)}
    with process([sys.executable, *argv], url=f"http://127.0.0.1:{port}/mcp", env=env):
        yield port


@pytest.mark.parametrize(("name", "runtime"), ENGINES, ids=[f"{e}-{r}" for e, r in ENGINES])
def test_the_session_cap_is_answered_503_with_retry_after(name: str, runtime: str) -> None:
    pytest.importorskip(name)
    with capped(name, runtime) as port:
        statuses = []
        for _ in range(3):
            (reply,), _closed = exchange(port, raw_post(extra=b"Connection: close\r\n"), [],
                                         count=1, until_closed=True, idle=30.0)
            statuses.append(reply.status)  # type: ignore[union-attr]
        assert statuses == [200, 200, 503]
        assert reply.header("retry-after") == "1"  # type: ignore[union-attr]


def test_the_deploying_page_shows_the_engine_table() -> None:
    page = (ROOT / "docs" / "deploying.rst").read_text()
    assert render_table() in page
