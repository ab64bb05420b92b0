"""``mcp-sansio serve-example --transport http --wire httptools`` on each runtime: the
example server on the llhttp wire answers a session's requests and a 2026-07-28 call over
real sockets; ``--wire`` outside HTTP, and the wire without its package, are one clear line
on stderr and exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.http_stories import SyncConn, serve_example, url_process
from tests.http_util import init_body

RUNTIMES = ["asyncio", "trio", "threading"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_serve_example_on_the_httptools_wire(runtime: str) -> None:
    with url_process(serve_example("--wire", "httptools", runtime=runtime)) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        conn = SyncConn(port)
        try:
            status, headers, messages = conn.request("POST", init_body())
            assert status == 200 and messages[-1]["result"]["serverInfo"]["name"] == (
                "mcp-sansio-example")
            names = {"mcp-session-id": headers["mcp-session-id"],
                     "mcp-protocol-version": "2025-11-25"}
            assert conn.request("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                names)[0] == 202
            status, _, messages = conn.request(
                "POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}, names)
            assert status == 200 and messages[-1]["result"]["content"][0]["text"] == (
                "{\"sum\": 5}")
        finally:
            conn.close()


def _serve_example(*args: str, env_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = None if env_path is None else {**os.environ, "PYTHONPATH": str(env_path)}
    return subprocess.run([sys.executable, "-m", "mcp_sansio", "serve-example", *args],
                          capture_output=True, text=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL, env=env)


def test_wire_applies_to_http_only() -> None:
    result = _serve_example("--wire", "httptools")
    assert result.returncode == 2
    assert result.stderr == "mcp-sansio serve-example: --wire applies to --transport http\n"


def test_a_missing_httptools_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    # A stand-in that fails to import, first on the path: as if httptools were not installed.
    (tmp_path / "httptools.py").write_text("raise ImportError('not installed')\n")
    result = _serve_example("--transport", "http", "--wire", "httptools", env_path=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "pip install 'mcp-sansio[fast]'" in lines[0], result.stderr
