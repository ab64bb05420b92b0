"""The kit against real third-party servers, installed from their registries: the
TypeScript reference servers from npm (cached under ``.cache/npm-peers``) and the official
Python SDK's server (a test dependency). Each expected finding below was read against the
specification text; the table in docs/checking.rst is this one.

Bounded: one sweep per server (every rule once per revision), no random sessions.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_sansio.adapters.testing_stdio import StdioTransport

from mcp_sansio import HANDSHAKE_REVISIONS, KNOWN_REVISIONS
from mcp_sansio import testing as kit
from tests.paths import ROOT

CACHE = ROOT / ".cache" / "npm-peers"
#: Pinned, so that the table stays true until someone updates it on purpose.
NPM_PACKAGES = ("@modelcontextprotocol/server-everything@2026.8.31",
                "@modelcontextprotocol/server-filesystem@2026.8.31",
                "@modelcontextprotocol/server-memory@2026.8.31")

ALL = set(KNOWN_REVISIONS) - {"2026-07-28"}  # none of them speaks the stateless era
NO_BATCHES = ALL - {"2025-03-26"}

#: What every TypeScript reference server does (their SDK's JSON-RPC layer): malformed input
#: is dropped without the -32700/-32600 JSON-RPC 2.0 s. 5 asks for; a 2025-03-26 batch is
#: dropped where that revision's basic/index.mdx says receivers MUST accept batches; a
#: request that also carries "result" is served; a second initialize is accepted; invalid
#: tools/call params are -32603 instead of -32602; an unknown tool is a result with isError
#: (server/tools.mdx lists unknown tools among the protocol errors, -32602).
TS_COMMON: dict[str, set[str]] = {
    "not-json": ALL, "not-an-object": ALL, "empty-batch": ALL, "id-type": ALL,
    "jsonrpc-version": ALL, "method-type": ALL, "params-type": ALL, "params-array": ALL,
    "batch-not-supported": NO_BATCHES, "batch": {"2025-03-26"},
    "request-with-result": ALL, "second-initialize": ALL, "missing-param": ALL,
    "wrong-param-type": ALL, "unknown-tool": ALL,
}

EXPECTED: dict[str, dict[str, set[str]]] = {
    "server-filesystem": TS_COMMON,
    "server-memory": TS_COMMON,
    "server-everything": TS_COMMON | {
        # logging/setLevel with an unknown level: -32603 instead of -32602.
        "bad-log-level": ALL,
        # resource_link content (new in 2025-06-18) sent to 2024-11-05/2025-03-26 clients,
        # whose CallToolResult schema has no such content.
        "result-schema": {"2024-11-05", "2025-03-26"},
        # A cancelled long-running tool keeps sending progress after the barrier that
        # shows the cancellation was processed (cancellation.mdx: SHOULD stop).
        "response-after-cancel": ALL,
    },
}


@pytest.fixture(scope="module")
def npm_bin() -> Iterator[Path]:
    binaries = CACHE / "node_modules" / ".bin"
    if not (binaries / "mcp-server-everything").exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: the TypeScript reference servers come from npm")
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE),
                        *NPM_PACKAGES], check=True, capture_output=True, timeout=600)
    yield binaries


def _found(report: kit.Report) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for finding in report:
        assert finding.revision is not None
        found.setdefault(finding.rule, set()).add(finding.revision)
    return found


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_typescript_reference_server(name: str, npm_bin: Path, tmp_path: Path) -> None:
    command = [str(npm_bin / f"mcp-{name}")]
    env = None
    if name == "server-filesystem":
        (tmp_path / "hello.txt").write_text("hello\n")
        command.append(str(tmp_path))
    elif name == "server-everything":
        command.append("stdio")
    elif name == "server-memory":
        env = {**os.environ, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    # The clock bounds every wait: server-everything sends notifications every few seconds,
    # so it is never silent for long.
    report = kit.sweep(lambda: StdioTransport(command, env=env, cwd=tmp_path),
                       reply_timeout=5.0, settle_time=0.3, clock=time.monotonic,
                       call_timeout=10.0)
    assert _found(report) == EXPECTED[name], report.summary()
    assert report.sessions == dict.fromkeys(sorted(ALL), 1)
    # The stateless era is not spoken: a note, not a finding.
    assert any("does not speak 2026-07-28" in note for note in report.notes)
    if name in ("server-filesystem", "server-memory"):
        assert any("annotated destructive: not called" in note for note in report.notes)


def test_the_official_python_sdk_server_is_in_the_table() -> None:
    # The official SDK's server (tests/peers/sdk_kit_server.py, written with MCPServer --
    # the SDK's FastMCP, renamed in mcp 2.x) is swept in tests/check/test_testing_kit.py; the
    # docs table lists the same deviations.
    from tests.check.test_testing_kit import SDK_DEVIATIONS

    page = (ROOT / "docs" / "checking.rst").read_text()
    for rule in SDK_DEVIATIONS:
        assert f"``{rule}``" in page, rule
    assert set(HANDSHAKE_REVISIONS) <= set(KNOWN_REVISIONS)
    assert sys.executable
