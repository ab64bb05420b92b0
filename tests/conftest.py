"""Suite-wide set-up: the JSON backend fixture, the official schemas' setting, the markers.

* ``json_backend`` runs a test once per JSON backend.
* ``server_wire`` runs a test once per HTTP server wire (h11, httptools): the servers that
  ``tests/http_util.Harness`` builds use it (``pytestmark = pytest.mark.usefixtures(...)``
  in the hardening modules).
* The official schemas (``tests/schemas.py``) live outside the repository. When they are
  absent, each test that reaches for them is skipped with one reason, and this file prints a
  single summary line (how many, why, how to enable them) instead of one ``-ra`` line per
  place -- a bare clone's run then reads as what it is. With ``MCP_REQUIRE_SCHEMAS=1`` (CI,
  ``.ci/run``) a missing schema stops the run before any test instead.
* Markers (registered in pyproject.toml): the slow, interop and harness modules (and a few
  single slow tests) are marked here from the tables below (keyed by the module's path under
  tests/) rather than in each file, and every other test is marked ``quick``: ``pytest -m
  quick`` is the contributor's fast run (under a minute; docs/contributing.rst).
  fuzz/conftest.py marks the fuzzers ``harness``.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from mcp_sansio import _json
from mcp_sansio.types import _generate

from . import schemas
from .paths import TESTS

# Hypothesis's timing checks judge the machine, not the code: on a loaded 2-core machine (CI,
# or a contributor's laptop running other work) a slow first draw or a slow example is noise.
# Tests never assert wall-clock time (see docs/contributing.rst), so the default profile drops
# the too_slow health check and the per-example deadline; every other setting is hypothesis's.
settings.register_profile("mcp-sansio", suppress_health_check=[HealthCheck.too_slow],
                          deadline=None)
settings.load_profile("mcp-sansio")

# The model generator reads the same schemas (tests/core/test_types.py builds its parameters from
# them while collecting): the setting applies to it too, and a missing folder skips or fails
# its caller like any other use instead of ending the whole run (it raises SystemExit, a
# command's way, which pytest reports as an INTERNALERROR).
_generate.SCHEMA_ROOT = schemas.configured_root()
_load_schema = _generate.load_schema


def _load_schema_or_skip(revision: str) -> dict[str, Any]:
    schemas.schema_root()
    return _load_schema(revision)


_generate.load_schema = _load_schema_or_skip


@pytest.fixture(params=_json.available_backends())
def json_backend(request: pytest.FixtureRequest):
    """Run a test once per JSON backend (stdlib, and orjson when installed)."""
    previous = _json.backend
    _json.use_backend(request.param)
    yield request.param
    _json.use_backend(previous)


#: Modules of tests/ that leave the quick run, and why (times: one run on the project's 2-core
#: machine while other work ran; a module's total, collection excluded).
MODULE_MARKERS: dict[str, tuple[str, str]] = {
    "core/test_types.py":
        ("slow", "every type of every revision, ~700 cases: ~35 s"),
    "adapters/common/test_adapter_runtimes.py":
        ("slow", "every runtime against every runtime over stdio subprocesses: ~20 s"),
    "adapters/threading/test_http_threading.py":
        ("slow", "threads over loopback sockets, timeouts: ~11 s"),
    "adapters/common/test_http_client_runtimes.py":
        ("slow", "each async runtime's client and server: ~8 s"),
    "tools/test_example_server.py":
        ("slow", "serve-example on each runtime, tasks that sleep: ~8 s"),
    "adapters/common/test_http_wires_served.py":
        ("slow", "serve-example --wire httptools on each runtime"),
    "adapters/common/test_http_reliability.py":
        ("slow", "many concurrent connections, slow and broken peers"),
    "adapters/common/test_http_processes.py":
        ("slow", "three server processes per launcher: ~5 s"),
    "stores/test_http_shared_processes.py":
        ("slow", "serve-example processes sharing a redis-server"),
    "stores/test_stores_runtimes.py":
        ("slow", "trio and threads serve-example processes sharing a redis-server, a key "
         "rotation, hosts killed: ~80 s"),
    "benchmarks/test_benchmark_http_smoke.py":
        ("slow", "runs a benchmark script"),
    "benchmarks/test_benchmark_load_smoke.py":
        ("slow", "runs a benchmark script"),
    "benchmarks/test_benchmark_per_request_smoke.py":
        ("slow", "runs a benchmark script"),
    "benchmarks/test_benchmark_asgi_smoke.py":
        ("slow", "runs a benchmark script"),
    "benchmarks/test_benchmark_wires_smoke.py":
        ("slow", "runs a benchmark script"),
    "benchmarks/test_benchmark_stdio_ab_smoke.py":
        ("slow", "runs a benchmark script"),
    "benchmarks/test_benchmark_stdio_smoke.py":
        ("slow", "runs a benchmark script"),
    "benchmarks/test_benchmarks_smoke.py":
        ("slow", "runs the benchmark scripts"),
    "benchmarks/test_types_benchmark_smoke.py":
        ("slow", "runs a benchmark script"),
    "project/test_fresh_clone.py":
        ("slow", "clones the repository and runs pytest there: ~10 s"),
    "asgi/test_asgi_engines.py":
        ("slow", "uvicorn, hypercorn and granian server processes: ~10 s"),
    "asgi/test_asgi_shared_engines.py":
        ("slow", "uvicorn, granian and hypercorn workers sharing a redis-server, a key rotation, "
         "a worker killed: ~60 s"),
    "asgi/test_asgi_engine_hardening.py":
        ("slow", "the hardening corpus against every engine: ~45 s"),
    "asgi/test_asgi_uds.py":
        ("slow", "every engine on a Unix socket, the corpus over it: ~45 s"),
    "asgi/test_asgi_killed_call.py":
        ("slow", "uvicorn and granian workers on redis-server, one killed per client: ~90 s"),
    "stores/test_shared_store_faults.py":
        ("slow", "redis-server restarted and stopped under load: ~55 s"),
    "check/test_check_proof.py":
        ("slow", "mcp-sansio check on our peers and the SDK's, one seed each: ~4 min"),
    "adapters/common/test_interop.py":
        ("interop", "the official SDK over stdio"),
    "adapters/common/test_http_interop.py":
        ("interop", "the official SDK over Streamable HTTP"),
    "tools/test_call_cli.py":
        ("slow", "mcp-sansio call subprocesses, each spawning serve-example: ~45 s"),
    "adapters/common/test_graceful_shutdown.py":
        ("slow", "SIGTERM under traffic and a few hundred SIGINTs on each runtime: ~90 s"),
    "asgi/test_graceful_engines.py":
        ("slow", "SIGTERM under traffic on each ASGI engine: ~11 s"),
    "check/test_testing_kit.py":
        ("harness", "the kit's strategies and peer machine: ~40 s"),
}
#: Single tests (module, function name) that leave the quick run although their module stays.
TEST_MARKERS: dict[tuple[str, str], tuple[str, str]] = {
    ("asgi/test_asgi_engines.py", "test_the_sdk_client_against_uvicorn"):
        ("interop", "the official SDK's client against the ASGI app under uvicorn"),
    ("core/test_capabilities.py", "test_random_capabilities_incoming"):
        ("slow", "random capability sets per revision: ~9 s"),
    ("core/test_capabilities.py", "test_random_capabilities_outgoing"):
        ("slow", "random capability sets per revision: ~9 s"),
}
#: The markers that leave an item out of ``-m quick``.
NOT_QUICK = ("slow", "interop", "harness")


def marker_for(module: str, function: str) -> str | None:
    """The marker (slow/interop/harness) of the test ``function`` of ``module`` (its path
    under tests/, as ``http/test_churn.py``), or None: it is quick."""
    entry = TEST_MARKERS.get((module, function)) or MODULE_MARKERS.get(module)
    return entry[0] if entry else None


def pytest_itemcollected(item: pytest.Item) -> None:
    # At collection (before `-m` selects): the items of tests/ and its folders only; the
    # fuzzers are marked by fuzz/conftest.py and never quick.
    if TESTS not in item.path.parents:
        return
    name = getattr(item, "originalname", None) or item.name
    marker = marker_for(item.path.relative_to(TESTS).as_posix(), name)
    item.add_marker(marker or "quick")


def pytest_configure(config: pytest.Config) -> None:
    if schemas.required() and schemas.missing():
        raise pytest.UsageError(f"{schemas.REQUIRE_ENV} is set, but {schemas.absent_reason()}")


def _is_schema_skip(report: pytest.TestReport | pytest.CollectReport) -> bool:
    longrepr = report.longrepr
    return (isinstance(longrepr, tuple) and len(longrepr) == 3
            and str(longrepr[2]).startswith(f"Skipped: {schemas.SKIP_PREFIX}"))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> Generator[None]:
    """One line for every schema skip, in place of ``-ra``'s per-location lines."""
    if not schemas.missing():
        return (yield)
    stats = terminalreporter.stats
    skipped = stats.get("skipped", [])
    ours = [r for r in skipped if _is_schema_skip(r)]
    # Hidden from the short summary (which runs inside this wrapper) and put back before the
    # final counts, so "N skipped" still counts them.
    if ours:
        stats["skipped"] = [r for r in skipped if not _is_schema_skip(r)]
    try:
        return (yield)
    finally:
        if ours:
            stats["skipped"] = skipped
        tests = sum(isinstance(r, pytest.TestReport) for r in ours)
        modules = len(ours) - tests
        counts = [f"{n} {what}{'s' * (n != 1)}"
                  for n, what in ((tests, "test"), (modules, "module")) if n]
        said = [f"{' and '.join(counts)} skipped"] if counts else []
        if terminalreporter.config.option.collectonly or not ours:
            said.append("the tests that validate against them will be skipped when run")
        terminalreporter.write_line(
            f"SCHEMAS: {', and '.join(said)}: {schemas.absent_reason()}",
            yellow=True, bold=True)


@pytest.fixture(params=["h11", "httptools"])
def server_wire(request: pytest.FixtureRequest):
    """Run a test once per HTTP server wire: the ``wire=`` of every server the harness
    builds (tests/http_util.py). httptools is in the test extra, so both always run."""
    from . import http_util

    previous = http_util.DEFAULT_WIRE
    http_util.DEFAULT_WIRE = request.param
    yield request.param
    http_util.DEFAULT_WIRE = previous
