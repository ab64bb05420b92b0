"""Raw bytes over a Unix domain socket: the fuzzers' grammar, seeds and found inputs against
``mcp-sansio serve-example --transport http --uds PATH`` on every runtime (asyncio, trio,
threads: our own servers, judged as strictly as over TCP in fuzz/test_http_raw_servers.py)
and under every engine (``--engine E --uds PATH``: uvicorn, hypercorn's asyncio and trio
workers, granian, judged as in fuzz/test_http_raw_engines.py -- the engine's parser decides
what it refuses). One server per runtime or engine serves the module.

What is different over a Unix socket is how connections are accepted, not how their bytes
are read, so this is the lean share of the corpus: every seed and found input once, and
``MCP_SANSIO_FUZZ_UDS_EXAMPLES`` drawn connections per server (default 10; TCP draws 20).

hypercorn's trio worker is not among them: over a Unix socket a client that closes in the
middle of a request is an end of input (over TCP, a reset), and hypercorn's trio server
answers it with an error response that collides with its own closing of the connection
(``trio.BusyResourceError``), which ends the worker process, and hypercorn with it (the
engine's, reported upstream as pgjones/hypercorn issue 203; docs/deploying.rst's engine
notes). Its asyncio worker, the same h11 parser and application, is fuzzed here; the trio
worker gets the hardening corpus over its socket (tests/asgi/test_asgi_uds.py)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.asgi import test_asgi_engines
from tests.http_stories import GUARD, serve_example
from tests.processes import stop_group

from .http_grammar import connections, cuts
from .http_seeds import SEEDS
from .http_target import Outcome, check_answers, frame, read_responses
from .test_http_raw import FOUND
from .test_http_raw_servers import BODY, exchange, fresh_initialize

EXAMPLES = int(os.environ.get("MCP_SANSIO_FUZZ_UDS_EXAMPLES", "10"))
#: Our servers (strict: RFC 9112's framing judged) and the engines (their parsers' own).
SERVERS = ([("ours", runtime) for runtime in ("asyncio", "trio", "threading")]
           + [e for e in test_asgi_engines.ENGINES if e != ("hypercorn", "trio")])


class OnSocket:
    """A server process on a Unix socket: its path, whether it is ours, and its log."""

    def __init__(self, proc: subprocess.Popen[str], path: str, ours: bool, log: str) -> None:
        self.proc = proc
        self.path = path
        self.ours = ours
        self.log = log

    def tracebacks(self) -> str:
        text = Path(self.log).read_text(encoding="utf-8", errors="replace")
        return text if "Traceback" in text else ""


@pytest.fixture(scope="module", params=SERVERS, ids=[f"{s}-{r}" for s, r in SERVERS])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[OnSocket]:
    name, runtime = request.param
    if name != "ours":
        pytest.importorskip(name)
    if runtime == "trio":
        pytest.importorskip("trio")
    path = str(tmp_path_factory.mktemp("uds") / "mcp.sock")
    argv = (serve_example("--uds", path, runtime=runtime) if name == "ours"
            else test_asgi_engines.serve_example(name, runtime, "--uds", path))
    with tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False) as log:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True,
                                start_new_session=True)
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url == "http://localhost/mcp", (url, Path(log.name).read_text())
            yield OnSocket(proc, path, name == "ours", log.name)
        finally:
            stop_group(proc, GUARD)
    os.unlink(log.name)


def judge(served: OnSocket, data: bytes, outcome: Outcome) -> None:
    """What must hold after one connection's ``data`` (module doc)."""
    assert served.proc.poll() is None, "the server process ended"
    assert not served.tracebacks(), served.tracebacks()[-3000:]
    if served.ours:
        framed, why, _ = frame(data, BODY)
        answers = read_responses(outcome)  # well-formed HTTP/1.1 (raises otherwise)
        if outcome.out:
            assert outcome.out.startswith(b"HTTP/1.1 "), outcome.out[:100]
        check_answers(answers, len(framed), outcome.closed, why)
    elif outcome.out:
        assert outcome.out[:9] in (b"HTTP/1.1 ", b"HTTP/1.0 "), outcome.out[:100]
    assert outcome.fresh_status == 200
    assert fresh_initialize(served.path) == 200


def test_the_seeds_and_the_found_inputs(served: OnSocket) -> None:
    for data in SEEDS + FOUND:
        framed, why, _ = frame(data, BODY)
        outcome = exchange(served.path, [data], False, len(framed) if why == "end" else None)
        judge(served, data, outcome)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(reqs=connections(), data=st.data(), eof=st.booleans())
def test_any_connection(served: OnSocket, reqs: list[bytes], data: st.DataObject,
                        eof: bool) -> None:
    stream = b"".join(reqs)
    chunks = data.draw(cuts(stream))
    framed, why, _ = frame(stream, BODY)
    outcome = exchange(served.path, chunks, eof, len(framed) if why == "end" else None)
    judge(served, stream, outcome)
