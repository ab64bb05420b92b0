"""A requestState sealed by one HTTP server opens on another that shares its key ring --
two asyncio servers in one process with the ring from the environment or a key file, and a
server process whose monotonic clock is shifted (a Linux time namespace) against one that is
not. The retry of a stateless-era ``tools/call`` is sent to the other server each time."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_sansio.adapters.asyncio import start_http
from mcp_sansio.adapters.keys import ENV_KEYS, ENV_KEYS_FILE
from mcp_sansio.adapters.tools import _example_server

from mcp_sansio import ErrorCode, KeyRing, Request, ServerConnection
from mcp_sansio.auth import ProtectedResource
from tests.adapters.asyncio.test_http_asyncio import Conn
from tests.auth.test_auth_server_sansio import ISSUER, RESOURCE, Tokens, bearer
from tests.http_stories import tool_call, url_process
from tests.http_util import SERVER_INFO, Harness, stateless_meta

TOOL = "test_input_required_result_request_state"
CAPS = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
ANSWER = {"confirm": {"action": "accept", "content": {"ok": True}}}
RING = "\n".join(base64.b64encode(bytes([n]) * 32).decode() for n in (1, 2))
#: How far the shifted server's monotonic clock is moved: over a day, far beyond any TTL.
SHIFT = 100_000


async def call(port: int, request_id: int, **params: Any) -> dict[str, Any]:
    """One stateless-era call of the example server's state tool on a fresh connection."""
    conn = await Conn.open(port)
    try:
        body, headers = tool_call(TOOL, {}, request_id, **CAPS)
        body["params"].update(params)
        status, _, messages = await conn.request("POST", body, headers)
        assert status in (200, 400), status
        reply: dict[str, Any] = messages[-1]
        return reply
    finally:
        await conn.close()


async def seal_on(port: int) -> str:
    first = await call(port, 1)
    assert first["result"]["resultType"] == "input_required", first
    sealed = first["result"]["requestState"]
    assert isinstance(sealed, str) and sealed != "awaiting-confirmation"
    return sealed


async def retry_on(port: int, sealed: str) -> dict[str, Any]:
    return await call(port, 2, requestState=sealed, inputResponses=ANSWER)


def example() -> Any:
    return _example_server.build(_example_server._sleep_for("asyncio"))


def assert_opened(reply: dict[str, Any]) -> None:
    assert reply["result"]["content"][0]["text"].startswith("state-ok"), reply


@pytest.mark.parametrize("where", ["variable", "file"])
def test_a_state_sealed_by_one_server_opens_on_another_sharing_the_ring(
        where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_KEYS, raising=False)
    monkeypatch.delenv(ENV_KEYS_FILE, raising=False)
    if where == "variable":
        monkeypatch.setenv(ENV_KEYS, RING)
    else:
        (tmp_path / "keys").write_text(f"# the ring\n{RING}\n")
        monkeypatch.setenv(ENV_KEYS_FILE, str(tmp_path / "keys"))

    async def main() -> None:
        async with start_http(example()) as a, start_http(example()) as b:
            assert_opened(await retry_on(b.port, await seal_on(a.port)))
            assert_opened(await retry_on(a.port, await seal_on(b.port)))
    asyncio.run(main())


def test_servers_with_keys_of_their_own_refuse_each_others_states(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_KEYS, raising=False)
    monkeypatch.delenv(ENV_KEYS_FILE, raising=False)

    async def main() -> None:
        async with start_http(example()) as a, start_http(example()) as b:
            sealed = await seal_on(a.port)
            refused = await retry_on(b.port, sealed)
            assert refused["error"]["code"] == ErrorCode.INVALID_PARAMS
            assert_opened(await retry_on(a.port, sealed))
    asyncio.run(main())


def _shifted_monotonic() -> list[str] | None:
    """The command prefix that runs a child under a monotonic clock moved by SHIFT seconds,
    or None where this system cannot (no unshare, not root, no time namespaces)."""
    unshare = shutil.which("unshare")
    if unshare is None or sys.platform != "linux":
        return None
    # (--kill-child: the server goes with unshare when the test stops it, not orphaned)
    prefix = [unshare, "--time", "--fork", "--kill-child", f"--monotonic={SHIFT}"]
    try:
        probe = subprocess.run([*prefix, sys.executable, "-c",
                                "import time; print(time.monotonic())"],
                               capture_output=True, text=True, timeout=60, check=False)
        shifted = float(probe.stdout.strip()) if probe.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        shifted = None
    if shifted is None or shifted < time.monotonic() + SHIFT / 2:
        return None
    return prefix


def test_a_state_sealed_under_a_shifted_monotonic_clock_opens_on_an_unshifted_server(
        monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = _shifted_monotonic()
    if prefix is None:
        pytest.skip("needs a Linux time namespace (unshare --time, as root)")
    monkeypatch.delenv(ENV_KEYS_FILE, raising=False)
    monkeypatch.setenv(ENV_KEYS, RING)  # the child inherits it
    argv = [*prefix, sys.executable, "-P", "-m", "mcp_sansio", "serve-example",
            "--transport", "http", "--port", "0"]
    with url_process(argv) as url:
        shifted_port = int(url.rsplit(":", 1)[1].split("/", 1)[0])

        async def main() -> None:
            async with start_http(example()) as plain:
                assert_opened(await retry_on(plain.port, await seal_on(shifted_port)))
                assert_opened(await retry_on(shifted_port, await seal_on(plain.port)))
        asyncio.run(main())


# -- the principal, through the sans-IO HTTP server with auth ----------------------------------


def test_the_http_server_binds_a_state_to_the_token_s_principal() -> None:
    ring = KeyRing([bytes([5]) * 32])

    def app(session: Any, event: Any) -> None:
        if not isinstance(event, Request):
            return
        state = (event.params or {}).get("requestState")
        if state is None:
            session.connection.send_input_required(event.request_id, None, "step-1")
        else:
            session.connection.send_response(
                event.request_id, {"content": [{"type": "text", "text": state}]})

    h = Harness(
        handler=app, connection=lambda: ServerConnection(
            info=SERVER_INFO, capabilities={"tools": {}}, versions=["2026-07-28"],
            request_state_key=ring),
        auth=ProtectedResource(RESOURCE, [ISSUER], Tokens(), required_scopes=["mcp:read"]))

    def post(token: str, request_id: int, **params: Any) -> dict[str, Any]:
        body, headers = tool_call("t", {}, request_id)
        body["params"].update(params)
        got = h.conn().send(body=body, headers=[*headers.items(), *bearer(token)])
        assert got.status in (200, 400), got
        reply: dict[str, Any] = got.messages[-1]
        return reply

    sealed = post("ada", 1)["result"]["requestState"]
    assert post("ada", 2, requestState=sealed)["result"]["content"][0]["text"] == "step-1"
    # Same subject, a token with more scopes: the same principal.
    assert post("ada-again", 3, requestState=sealed)["result"]["content"][0]["text"] == (
        "step-1")
    for other in ("bob", "ada-elsewhere"):  # another subject; the same name, another issuer
        refused = post(other, 4, requestState=sealed)
        assert refused["error"]["code"] == ErrorCode.INVALID_PARAMS
        assert "another principal" in refused["error"]["message"]


# -- stdio: the same ring from the environment, the wall clock ------------------------------------


def _stdio_call(runtime: str, request_id: int, **params: Any) -> dict[str, Any]:
    """One stateless-era call of the state tool on a fresh stdio server process."""
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {
        "name": TOOL, "arguments": {}, **params,
        "_meta": {**stateless_meta(), **CAPS}}}
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "mcp_sansio", "serve-example", "--runtime", runtime],
        input=json.dumps(message) + "\n", capture_output=True, text=True, timeout=120,
        check=False)
    replies = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert replies, proc.stderr
    reply: dict[str, Any] = replies[-1]
    return reply


@pytest.mark.parametrize(("sealer", "opener"), [("asyncio", "threading"),
                                                 ("threading", "trio"), ("trio", "asyncio")])
def test_stdio_servers_seal_on_the_wall_clock_with_the_configured_ring(
        sealer: str, opener: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_KEYS_FILE, raising=False)
    monkeypatch.setenv(ENV_KEYS, RING)
    before = time.time()
    first = _stdio_call(sealer, 1)
    sealed = first["result"]["requestState"]
    fields = json.loads(base64.urlsafe_b64decode(sealed.split(".")[1] + "=="))
    assert fields["c"] == "w" and before <= fields["i"] <= time.time()
    reply = _stdio_call(opener, 2, requestState=sealed, inputResponses=ANSWER)
    assert_opened(reply)
