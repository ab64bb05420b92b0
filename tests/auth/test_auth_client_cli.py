"""``mcp-sansio probe --url`` against a protected server (the official Python SDK's
authorization server and protected MCP server, tests/peers/sdk_auth_server.py): the login
through the loopback redirect, tokens kept in the cache directory and reused, ``--no-store``
and ``--no-login``.

The "browser" is the ``BROWSER`` command the standard library's :mod:`webbrowser` honours:
a script that loads the authorization URL and follows its redirect back to the CLI's
loopback listener, as a browser does once the user approves (the SDK's test server
approves at once).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paths import PEERS

PEER = PEERS / "sdk_auth_server.py"
WAIT = 120.0  # generous: the machine is shared
BROWSER = """\
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=60).read()
"""


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, str(PEER)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def probe(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    browser = tmp_path / "browser.py"
    browser.write_text(BROWSER)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"),
               BROWSER=f"{sys.executable} {browser} %s")
    return subprocess.run([sys.executable, "-m", "mcp_sansio", "probe", *args],
                          capture_output=True, text=True, timeout=WAIT * 2, check=False,
                          env=env, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("runtime", ["asyncio", "trio", "threading"])
def test_probe_logs_in_keeps_the_tokens_and_reuses_them(
        sdk_url: str, tmp_path: Path, runtime: str) -> None:
    first = probe(tmp_path, "--runtime", runtime, "--url", sdk_url)
    assert first.returncode == 0, first.stderr
    assert "whoami" in first.stdout
    assert "log in" in first.stderr and "/authorize?" in first.stderr
    tokens = tmp_path / "cache" / "mcp-sansio" / "tokens.json"
    assert tokens.stat().st_mode & 0o777 == 0o600
    assert "access_token" in tokens.read_text()

    again = probe(tmp_path, "--runtime", runtime, "--url", sdk_url)
    assert again.returncode == 0, again.stderr
    assert "whoami" in again.stdout
    assert "log in" not in again.stderr  # the stored token was enough


def test_probe_no_store_logs_in_without_writing_tokens(sdk_url: str, tmp_path: Path) -> None:
    result = probe(tmp_path, "--no-store", "--url", sdk_url)
    assert result.returncode == 0, result.stderr
    assert "whoami" in result.stdout
    assert not (tmp_path / "cache").exists()


def test_probe_token_file_option(sdk_url: str, tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    result = probe(tmp_path, "--token-file", str(path), "--url", sdk_url)
    assert result.returncode == 0, result.stderr
    assert "access_token" in path.read_text()


def test_probe_no_login_reports_the_401(sdk_url: str, tmp_path: Path) -> None:
    result = probe(tmp_path, "--no-login", "--url", sdk_url)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"HTTP 401 from {sdk_url}" in result.stderr
    assert "log in" not in result.stderr


def test_probe_login_failure_names_the_step(tmp_path: Path) -> None:
    # A server whose challenge names metadata nobody serves: the login fails with the
    # step and the URL, exit 1, no traceback.
    import http.server
    import socket
    import threading

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/.well-known/oauth-protected-resource"

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(401)
            self.send_header("WWW-Authenticate", f'Bearer resource_metadata="{dead}"')
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
        result = probe(tmp_path, "--url", url)
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"login failed: transport ({dead})" in result.stderr
