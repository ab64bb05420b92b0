"""The asyncio HTTP client adapter (connect_http) against the asyncio HTTP server adapter
(start_http) over loopback sockets: cancelling the task that awaits a call; and the CLI's
probe --url and --allow-host. (Both eras, JSON and SSE responses, progress, the server's
requests, timeouts, listen streams, input_required, the server going away, session renewal,
legacy HTTP+SSE, DELETE on close, many sessions and HTTPS:
tests/adapters/common/test_http_client_runtimes.py, for asyncio and trio alike.)"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mcp_sansio.adapters.asyncio import (
    Server,
    connect_http,
    start_http,
)

from tests.http_stories import (
    ERAS,
    GUARD,
    block_tool,
    serve_example,
    url_process,
)


class Probe:
    """What the test server's handlers saw."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.methods: list[str] = []


def make_server(probe: Probe) -> Server:
    server = Server("client-test")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    server.add_tool(block_tool(probe))
    return server


def run(main: Callable[[], Any]) -> None:
    async def guarded() -> None:
        await asyncio.wait_for(main(), GUARD)
    asyncio.run(guarded())


@pytest.mark.parametrize("era", ERAS)
def test_cancelling_the_waiting_task_cancels_the_handler(era: str) -> None:
    async def main() -> None:
        probe = Probe()
        async with start_http(make_server(probe)) as service, \
                connect_http(service.url, era=ERAS[era]) as client:
            call = asyncio.ensure_future(client.call_tool("block", {}))
            await probe.started.wait()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await probe.cancelled.wait()  # notifications/cancelled, or the stream closed
            result = await client.call_tool("echo", {"text": "after"})
            assert result["content"][0]["text"] == "after"
    run(main)


# -- the CLI -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _serving(*args: str, runtime: str = "asyncio") -> Iterator[str]:
    """``serve-example --transport http`` in a subprocess while the block runs: its URL."""
    with url_process(serve_example(*args, runtime=runtime), "http://") as url:
        yield url


@pytest.mark.parametrize(("runtime", "era"), [("asyncio", "handshake"), ("asyncio", "stateless"),
                                           ("threading", "handshake"), ("trio", "stateless")])
def test_cli_probe_url(runtime: str, era: str) -> None:
    with _serving() as url:
        result = subprocess.run(
            [sys.executable, "-m", "mcp_sansio", "probe", "--url", url, "--era", era,
             "--runtime", runtime], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("transport Streamable HTTP\n")
    assert f"era       {era}\n" in out
    assert "server    mcp-sansio-example" in out
    assert "\ntools (" in out and "echo" in out
    assert "\nprompts (" in out and "\nresources (" in out


@pytest.mark.parametrize("runtime", ["trio", "threading"])
def test_cli_serve_example_over_http_on_other_runtimes(runtime: str) -> None:
    with _serving(runtime=runtime) as url:
        result = subprocess.run([sys.executable, "-m", "mcp_sansio", "probe", "--url", url],
                                capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "server    mcp-sansio-example" in result.stdout


def test_cli_probe_url_names_the_legacy_transport(capsys: pytest.CaptureFixture[str]) -> None:
    import threading

    from mcp_sansio.__main__ import main

    ready: list[str] = []
    started, stop = threading.Event(), threading.Event()

    async def serve() -> None:
        async with start_http(make_server(Probe()), path="/streamable", legacy_sse_path="/sse",
                              connection_options={"versions": ["2024-11-05"]}) as service:
            ready.append(f"http://127.0.0.1:{service.port}/sse")
            started.set()
            while not stop.is_set():
                await asyncio.sleep(0.01)

    thread = threading.Thread(target=asyncio.run, args=(serve(),))
    thread.start()
    try:
        assert started.wait(GUARD)
        code = main(["probe", "--url", ready[0]])
        assert code == 0, capsys.readouterr().err
    finally:
        stop.set()
        thread.join(GUARD)
    out = capsys.readouterr().out
    assert out.startswith("transport HTTP+SSE (2024-11-05, legacy)\n")
    assert "version   2024-11-05" in out and "server    client-test" in out


def test_cli_probe_url_failure_exits_1() -> None:
    with _serving() as url:
        pass  # gone again: nothing listens at the URL
    result = subprocess.run([sys.executable, "-m", "mcp_sansio", "probe", "--url", url],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    assert result.stderr == f"mcp-sansio probe: connection refused ({url})\n"
    assert result.stdout == ""


def test_cli_probe_needs_exactly_one_server() -> None:
    from mcp_sansio.__main__ import main
    assert main(["probe"]) == 2
    assert main(["probe", "--url", "http://127.0.0.1:9/mcp", "--", "true"]) == 2
    assert main(["probe", "--url", "ftp://example/mcp"]) == 2


def test_cli_serve_example_refuses_a_public_host_without_an_allow_list(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mcp_sansio.__main__ import main
    assert main(["serve-example", "--transport", "http", "--host", "0.0.0.0"]) == 2
    assert "--allow-host" in capsys.readouterr().err


def test_cli_allow_host_list() -> None:
    from mcp_sansio.adapters.tools._cli import host_allow_list, is_loopback
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("::")
    assert not is_loopback("example.com")
    allowed = host_allow_list(["mcp.example.com", "10.0.0.5:8000", "[fe80::1]"])
    assert "localhost:*" in allowed
    assert "mcp.example.com:*" in allowed and "10.0.0.5:8000" in allowed
    assert "[fe80::1]:*" in allowed


def test_cli_serve_example_on_a_public_host_checks_the_host_header() -> None:
    with _serving("--host", "0.0.0.0", "--allow-host", "mcp.example.com") as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])

        def status(host: str) -> int:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=GUARD)
            try:
                conn.request("POST", "/mcp", body=b"{}", headers={
                    "Host": host, "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream"})
                return conn.getresponse().status
            finally:
                conn.close()

        assert status("evil.example") == 403  # not on the list: DNS rebinding refused
        assert status(f"evil.example:{port}") == 403
        assert status(f"mcp.example.com:{port}") != 403  # on the list (any port)
        assert status(f"localhost:{port}") != 403  # loopback names stay allowed
