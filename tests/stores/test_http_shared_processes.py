"""Two ``mcp-sansio serve-example --store`` processes sharing a real Redis: a handshake-era
session opened on one is served by the other, carries on there after the first is killed,
and a DELETE on either ends it; a 2026-07-28 request works on both (it needs nothing
shared). Each request goes on a fresh connection, to the other process in turn, as a
round-robin load balancer without sticky sessions would send it."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from typing import Any

from tests._redis import RedisServer, redis_server  # noqa: F401  (the fixture)
from tests.http_stories import SyncConn, serve_example, tool_call, url_process
from tests.http_util import init_body


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


def post(port: int, body: Any, headers: dict[str, str] | None = None
         ) -> tuple[int, dict[str, str], list[Any]]:
    conn = SyncConn(port)
    try:
        return conn.request("POST", body, headers)
    finally:
        conn.close()


def session_headers(sid: str) -> dict[str, str]:
    return {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}


def echo(n: int, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}}}


def test_two_processes_share_sessions_through_redis(redis_server: RedisServer  # noqa: F811
                                                    ) -> None:
    argv = serve_example("--store", redis_server.url)
    with contextlib.ExitStack() as stack:
        a = port_of(stack.enter_context(url_process(argv, kill=True)))
        with url_process(argv) as b_url:
            b = port_of(b_url)
            status, got, _ = post(a, init_body())
            assert status == 200
            sid = got["mcp-session-id"]
            assert post(b, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                        session_headers(sid))[0] == 202
            for n, port in enumerate([a, b, a, b], start=1):
                status, _, messages = post(port, echo(n, f"hop {n}"), session_headers(sid))
                assert status == 200, messages
                assert messages[-1]["result"]["content"][0]["text"] == f"hop {n}"
            # the stateless era works on both, and needs nothing shared
            for port in (a, b):
                body, headers = tool_call("echo", {"text": "2026"})
                status, _, messages = post(port, body, headers)
                assert status == 200 and messages[-1]["result"]["content"][0]["text"] == "2026"
            # DELETE on b; a never answers for it again
            conn = SyncConn(b)
            assert conn.request("DELETE", None, session_headers(sid))[0] == 200
            conn.close()
            second_sid = post(a, init_body())[1]["mcp-session-id"]
            assert post(a, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                        session_headers(second_sid))[0] == 202
            stack.close()  # a is killed
            # the session a opened carries on at b
            status, _, messages = post(b, echo(9, "after a died"), session_headers(second_sid))
            assert status == 200, messages
            assert messages[-1]["result"]["content"][0]["text"] == "after a died"
            assert post(b, echo(10, "x"), session_headers(sid))[0] == 404


def test_store_needs_http_and_a_redis_url() -> None:
    for extra in (["--store", "redis://127.0.0.1:1/0"],
                  ["--transport", "http", "--runtime", "threading", "--store", "memcached://x"],
                  ["--transport", "http", "--store", "memcached://x"]):
        done = subprocess.run([sys.executable, "-m", "mcp_sansio", "serve-example", *extra],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 2
        assert "--store" in done.stderr and len(done.stderr.splitlines()) == 1
