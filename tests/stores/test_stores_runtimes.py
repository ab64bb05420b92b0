"""The many-workers scenarios on trio and threads servers: the scenarios of
``tests/stores/test_two_hosts.py`` (sessions, a server request answered on the other host,
resumption with ``Last-Event-ID``, DELETE, ``requestState``, listen fan-out, key rotation,
tasks, a host killed), each run here against two ``mcp-sansio serve-example --runtime R
--store`` processes on one real Redis (tests/_redis.py), for R in trio and threading.

The scenario functions are imported from that module; this module gives them its own
``hosts``/``own_hosts`` fixtures (pytest looks a test's fixtures up in the module it is
collected in), so each scenario is written once and runs on every runtime. Host A runs
under a shifted monotonic clock where the system allows (``_shifted_monotonic``), as on
asyncio; elsewhere both hosts share the clock (the sharing is still under test). The store
side of these servers: ``adapters/stores/home.py``.

One scenario is weaker here, and has a variant of its own: after a DELETE on B, the host
that deleted refuses the session at once, but A -- which holds a copy -- refuses it once
the bus's news has crossed from its store thread to its server, which a request racing the
DELETE can beat (docs/stores.rst, "On every runtime"); on asyncio the news and the request
meet on one loop, the news first.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

from tests._redis import RedisServer, redis_server  # noqa: F401  (the fixture, by name)
from tests.http_stories import SyncConn, serve_example, url_process
from tests.stores.test_two_hosts import (  # the scenarios, collected here again (module docstring)
    TIMEOUT,
    Client,
    Host,
    Pair,
    _rotate,
    _shifted_monotonic,
    test_2026_calls_alternate_between_the_hosts,
    test_a_2026_task_on_a_is_polled_on_b_until_done,
    test_a_handshake_era_task_on_a_is_polled_listed_and_fetched_on_b,
    test_a_list_change_on_a_reaches_a_get_stream_on_b,
    test_a_list_change_on_a_reaches_a_listen_stream_on_b,
    test_a_server_request_from_a_is_answered_on_b,
    test_a_session_opened_on_a_is_served_by_both,
    test_a_stream_a_writes_is_resumed_on_b_and_carries_on_live,
    test_host_killed_while_writing_a_stream_the_resumed_stream_on_the_other_ends,
    test_key_rotation_while_the_client_alternates_loses_nothing,
    test_request_state_sealed_on_one_host_opens_on_the_other,
    test_when_a_host_dies_its_sessions_carry_on_at_the_other,
    text,
    tool,
)

__all__ = [
    "test_2026_calls_alternate_between_the_hosts",
    "test_a_2026_task_on_a_is_polled_on_b_until_done",
    "test_a_handshake_era_task_on_a_is_polled_listed_and_fetched_on_b",
    "test_a_list_change_on_a_reaches_a_get_stream_on_b",
    "test_a_list_change_on_a_reaches_a_listen_stream_on_b",
    "test_a_server_request_from_a_is_answered_on_b",
    "test_a_session_opened_on_a_is_served_by_both",
    "test_a_stream_a_writes_is_resumed_on_b_and_carries_on_live",
    "test_delete_on_b_ends_the_session_on_a_once_the_bus_reaches_it",
    "test_host_killed_while_writing_a_stream_the_resumed_stream_on_the_other_ends",
    "test_key_rotation_while_the_client_alternates_loses_nothing",
    "test_request_state_sealed_on_one_host_opens_on_the_other",
    "test_when_a_host_dies_its_sessions_carry_on_at_the_other",
]

#: The runtimes whose servers share stores through a store thread (adapters/stores/home.py).
RUNTIMES = ("threading", "trio")


def _launch(stack: contextlib.ExitStack, request: pytest.FixtureRequest, runtime: str) -> Pair:
    """Two ``serve-example --runtime RUNTIME --store`` processes on one real Redis."""
    if runtime == "trio":
        pytest.importorskip("trio")
    redis: RedisServer = request.getfixturevalue("redis_server")
    argv = serve_example("--store", redis.url, runtime=runtime)
    hosts = []
    for prefix in (_shifted_monotonic() or [], []):
        inner = contextlib.ExitStack()
        url = inner.enter_context(url_process([*prefix, *argv], kill=True))
        stack.callback(inner.close)
        hosts.append(Host(url, inner.close))
    pair = Pair(hosts)
    pair.rotate = lambda: _rotate(redis.url)
    return pair


@pytest.fixture(scope="module", params=RUNTIMES)
def hosts(request: pytest.FixtureRequest) -> Iterator[Pair]:
    """Hosts A and B of one runtime, sharing their stores, for the module."""
    with contextlib.ExitStack() as stack:
        yield _launch(stack, request, request.param)


@pytest.fixture(params=RUNTIMES)
def own_hosts(request: pytest.FixtureRequest) -> Iterator[Pair]:
    """A pair of hosts for one test alone (one that kills a host)."""
    with contextlib.ExitStack() as stack:
        yield _launch(stack, request, request.param)


def test_delete_on_b_ends_the_session_on_a_once_the_bus_reaches_it(hosts: Pair) -> None:
    a, b = hosts
    client = Client(a, b)
    client.initialize()
    assert text(client.call("tools/call", tool("echo", {"text": "x"}), a)) == "x"
    assert client.post({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}, client.headers(),
                       b)[0] == 200  # B holds a copy too
    conn = SyncConn(b.port)
    assert conn.request("DELETE", None, client.headers())[0] == 200
    conn.close()

    def status_on(host: Host) -> int:
        return client.post({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                            "params": tool("echo", {"text": "y"})}, client.headers(), host)[0]

    assert status_on(b) == 404  # the worker that deleted: at once
    deadline = time.monotonic() + TIMEOUT  # (a bound on waiting, not a speed)
    while (status := status_on(a)) == 200 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert status == 404
