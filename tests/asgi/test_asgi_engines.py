"""The ASGI application under the real engines, as server processes on loopback ports:
``mcp-sansio serve-example --engine`` on uvicorn, hypercorn (asyncio and trio workers) and
granian, a Starlette mount under uvicorn, four uvicorn workers sharing the requestState
key, and the official SDK's client against uvicorn. Clients of both eras (ours) initialize,
call a tool, get a streamed SSE answer and have a bad request answered."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_sansio.adapters.asyncio import connect_http

from mcp_sansio import Era
from tests.adapters.common.test_http_interop import check_sdk_client_story, sdk_story
from tests.paths import ROOT
from tests.processes import stop_group

START = 120.0  # seconds for an engine to come up: generous, the machine is shared
SAFETY = 120.0
ENGINES = [("uvicorn", "asyncio"), ("hypercorn", "asyncio"), ("hypercorn", "trio"),
           ("granian", "asyncio")]


@contextlib.contextmanager
def process(argv: list[str], *, url: str | None = None,
            env: dict[str, str] | None = None) -> Iterator[str]:
    """A server process: the URL it prints first (or ``url``, once its port accepts) while
    the block runs; then its process group is stopped (SIGTERM, SIGKILL if it lingers)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=ROOT, env={**os.environ, **(env or {})})
    err: list[str] = []
    drain = threading.Thread(target=lambda: err.extend(proc.stderr or ()), daemon=True)
    drain.start()
    try:
        if url is None:
            got: list[str] = []
            reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()),  # type: ignore[union-attr]
                                      daemon=True)
            reader.start()
            reader.join(START)
            assert got and got[0].startswith("http://127.0.0.1:"), (got, "".join(err))
            url = got[0].strip()
        else:
            wait_for_port(url, proc, err)
        yield url
    finally:
        stop_group(proc)


def wait_for_port(url: str, proc: subprocess.Popen[str], err: list[str]) -> None:
    port = int(url.split(":")[2].split("/", maxsplit=1)[0])
    for _ in range(int(START / 0.1)):
        assert proc.poll() is None, "".join(err)
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        threading.Event().wait(0.1)
    raise AssertionError(f"nothing listens on {port}: {''.join(err)}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_example(engine: str, runtime: str, *more: str) -> list[str]:
    return [sys.executable, "-m", "mcp_sansio", "serve-example", "--transport", "http",
            "--engine", engine, "--runtime", runtime, *more]


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


async def our_story(url: str) -> dict[str, Any]:
    """Our client of each era: initialize, a tool call, a streamed (SSE) answer with
    progress, a tool call round that needs requestState (2026-07-28)."""
    got: dict[str, Any] = {}
    def confirm(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"ok": True}}

    for era in (Era.HANDSHAKE, Era.STATELESS):
        async with connect_http(url, era=era, elicitation=confirm) as client:
            progress: list[float] = []

            def on_progress(value: float, total: float | None, message: str | None,
                            sink: list[float] = progress) -> None:
                sink.append(value)

            got[era, "version"] = client.protocol_version
            got[era, "echo"] = text(await client.call_tool("echo", {"text": "hi"}))
            result = await client.call_tool("test_tool_with_progress", {},
                                            progress=on_progress)
            got[era, "streamed"] = text(result)
            got[era, "progress"] = len(progress)
            if era is Era.STATELESS:
                got[era, "state"] = text(await client.call_tool(
                    "test_input_required_result_request_state", {}))
    return got


def check_our_story(got: dict[str, Any]) -> None:
    assert got[Era.HANDSHAKE, "version"] == "2025-11-25"
    assert got[Era.STATELESS, "version"] == "2026-07-28"
    for era in (Era.HANDSHAKE, Era.STATELESS):
        assert got[era, "echo"] == "hi"
        assert got[era, "streamed"] == "Tool with progress executed successfully"
        assert got[era, "progress"] == 3  # each progress notification on the SSE stream
    assert got[Era.STATELESS, "state"] == "state-ok: confirmation received"


def bad_request(url: str) -> tuple[int, str]:
    """A POST that is not JSON: answered 400 by the MCP server, not by the engine."""
    request = urllib.request.Request(url, data=b"{not json", method="POST", headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.mark.parametrize(("engine", "runtime"), ENGINES,
                         ids=[f"{e}-{r}" for e, r in ENGINES])
def test_serve_example_on_an_engine(engine: str, runtime: str) -> None:
    with process(serve_example(engine, runtime)) as url:
        assert url.endswith("/mcp")
        check_our_story(asyncio.run(asyncio.wait_for(our_story(url), SAFETY)))
        status, body = bad_request(url)
        assert status == 400 and json.loads(body)["error"]["code"] == -32700


def test_the_sdk_client_against_uvicorn() -> None:
    with process(serve_example("uvicorn", "asyncio")) as url:
        for mode in ("legacy", "auto"):
            got = asyncio.run(asyncio.wait_for(sdk_story(url, mode, None), SAFETY))
            check_sdk_client_story(got, mode, "sse", with_block=False)


STARLETTE = """
import anyio
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from mcp_sansio.adapters import asgi
from mcp_sansio.adapters.tools import _example_server

mcp = asgi.app(_example_server.build(anyio.sleep))

async def hello(request):
    return PlainTextResponse("hello")

app = Starlette(routes=[Route("/hello", hello), Mount("/tools", app=mcp)])
"""


def test_a_starlette_mount_under_uvicorn(tmp_path: Path) -> None:
    (tmp_path / "site_app.py").write_text(STARLETTE)
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", "--app-dir", str(tmp_path), "--port", str(port),
            "--log-level", "warning", "site_app:app"]
    with process(argv, url=f"http://127.0.0.1:{port}/tools/mcp") as url:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/hello", timeout=30) as r:
            assert r.read() == b"hello"  # the rest of the site is still the site's
        check_our_story(asyncio.run(asyncio.wait_for(our_story(url), SAFETY)))
        assert bad_request(url)[0] == 400
        assert bad_request(f"http://127.0.0.1:{port}/tools/other")[0] == 404


def post_2026(url: str, params: dict[str, Any]) -> dict[str, Any]:
    """One 2026-07-28 tools/call on a connection of its own (urllib closes each)."""
    params = {**params, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    request = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
        "mcp-name": params["name"], "connection": "close"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read().decode()
            kind = response.headers["content-type"]
    except urllib.error.HTTPError as error:  # a refusal in this era is an HTTP 400
        raw, kind = error.read().decode(), error.headers["content-type"]
    if kind.startswith("text/event-stream"):
        raw = [line[5:] for line in raw.splitlines() if line.startswith("data:")][-1]
    return dict(json.loads(raw))


async def sealed_elsewhere(key: bytes, name: str) -> dict[str, Any]:
    """The first (input_required) round of ``name``, answered by an application in this
    process whose requestState key is ``key``."""
    from mcp_sansio.adapters import asgi
    from mcp_sansio.adapters.tools import _example_server

    from tests.asgi.test_asgi import post, stateless

    app = asgi.app(_example_server.build(asyncio.sleep), request_state_key=key)
    body, headers = stateless("tools/call", {"arguments": {}}, name=name)
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"elicitation": {}}
    call = await post(app, body, headers).run()
    await app.aclose()
    sse = call.headers["content-type"] == "text/event-stream"
    return dict((call.sse()[-1] if sse else call.json())["result"])


def test_every_worker_opens_requeststate_with_the_shared_key() -> None:
    """Four uvicorn workers given one key (the environment variable the parent passes on,
    and generates when unset): a requestState sealed with that key -- here by an application
    in this process -- opens on whichever worker gets the retry, over and over on new
    connections; one sealed with another key is refused."""
    name = "test_input_required_result_request_state"
    key = bytes(range(32))
    env = {"MCP_SANSIO_STATE_KEYS": base64.urlsafe_b64encode(key).decode()}
    ours = asyncio.run(sealed_elsewhere(key, name))
    other = asyncio.run(sealed_elsewhere(bytes(32), name))
    assert ours["resultType"] == other["resultType"] == "input_required"
    (input_key,) = ours["inputRequests"]
    answers = {input_key: {"action": "accept", "content": {"ok": True}}}
    with process(serve_example("uvicorn", "asyncio", "--workers", "4"), env=env) as url:
        for _ in range(8):
            answer = post_2026(url, {"name": name, "arguments": {}, "inputResponses": answers,
                                     "requestState": ours["requestState"]})
            assert "error" not in answer, answer
            assert answer["result"]["content"][0]["text"] == "state-ok: confirmation received"
        refused = post_2026(url, {"name": name, "arguments": {}, "inputResponses": answers,
                                  "requestState": other["requestState"]})
        assert refused["error"]["code"] == -32602, refused
        # Several workers and no store: handshake-era clients are served sessionless (no
        # Mcp-Session-Id), so any worker serves the next request.
        init = urllib.request.Request(url, method="POST", data=json.dumps({
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}).encode(), headers={
            "content-type": "application/json", "accept": "application/json, text/event-stream",
            "connection": "close"})
        with urllib.request.urlopen(init, timeout=30) as response:
            assert response.status == 200
            assert response.headers.get("mcp-session-id") is None
        for _ in range(4):  # calls with no session, each on a fresh connection
            call = urllib.request.Request(url, method="POST", data=json.dumps({
                "jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(), headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2025-11-25", "connection": "close"})
            with urllib.request.urlopen(call, timeout=30) as response:
                assert response.status == 200
