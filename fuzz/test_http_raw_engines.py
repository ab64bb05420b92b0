"""Raw bytes against the ASGI application under each engine (uvicorn, hypercorn's asyncio
and trio workers, granian), one ``mcp-sansio serve-example --engine`` process per engine for
the module: the grammar of fuzz/test_http_raw_servers.py, drawn and cut the same way.

What must hold whatever the engine's parser decides (its decisions are its own: the engine
table in docs/deploying.rst): the process lives; nothing logged a traceback (an exception
in the application -- a body the engine could not frame answered 500, say -- is one); each
answer the engine wrote starts with a status line; and a fresh connection's well-formed
``initialize`` is answered 200, while the fuzzed connection is still open and after it
closed. ``MCP_SANSIO_FUZZ_SERVER_EXAMPLES`` sets the examples per engine (default 20)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.asgi.test_asgi_engines import ENGINES, serve_example

from .http_grammar import connections, cuts
from .http_target import frame
from .test_http_raw_servers import BODY, GUARD, Served, exchange, fresh_initialize

EXAMPLES = int(os.environ.get("MCP_SANSIO_FUZZ_SERVER_EXAMPLES", "20"))


@pytest.fixture(scope="module", params=ENGINES, ids=[f"{e}-{r}" for e, r in ENGINES])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    name, runtime = request.param
    pytest.importorskip(name)
    with tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False) as log:
        proc = subprocess.Popen(serve_example(name, runtime), stdout=subprocess.PIPE,
                                stderr=log, text=True, start_new_session=True)
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), url
            yield Served(proc, int(url.rsplit(":", 1)[1].split("/")[0]), log)
        finally:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(GUARD)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
    os.unlink(log.name)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(reqs=connections(), data=st.data(), eof=st.booleans())
def test_any_connection(served: Served, reqs: list[bytes], data: st.DataObject,
                        eof: bool) -> None:
    stream = b"".join(reqs)
    chunks = data.draw(cuts(stream))
    framed, why, _ = frame(stream, BODY)
    outcome = exchange(served.port, chunks, eof, len(framed) if why == "end" else None)
    assert served.proc.poll() is None, "the engine's process ended"
    assert not served.tracebacks(), served.tracebacks()[-3000:]
    if outcome.out:
        assert outcome.out[:9] in (b"HTTP/1.1 ", b"HTTP/1.0 "), outcome.out[:100]
    assert outcome.fresh_status == 200
    assert fresh_initialize(served.port) == 200
