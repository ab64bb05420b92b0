"""``mcp-sansio call``: the ``$`` lines of docs/cli.rst's call section run against the example
server and print what the page shows; arguments are read by the tool's schema; failures exit 1
with the reason (a tool's error result, a JSON-RPC error), usage errors 2; progress shows on a
terminal; over HTTP it takes headers and the server's refusal says why."""

from __future__ import annotations

import io
import json
import re
import shlex
import subprocess
import sys
from typing import Any

import pytest
from mcp_sansio.adapters.tools import _call_cli, _cli
from mcp_sansio.adapters.tools._call_cli import coerce, parse_arguments

from tests.paths import ROOT

CLI = [sys.executable, "-P", "-m", "mcp_sansio"]
SERVER = [*CLI, "serve-example"]
TIMEOUT = 120


def documented() -> list[tuple[list[str], str]]:
    """Each ``$ mcp-sansio call ...`` line of docs/cli.rst and the output below it."""
    text = (ROOT / "docs" / "cli.rst").read_text()
    section = text[text.index(".. _cli-call:"):text.index("``mcp-sansio check``")]
    found: list[tuple[list[str], str]] = []
    for block in re.findall(r"\.\. code-block:: text\n\n((?:   .*\n|\n)+)", section):
        lines = [line[3:] for line in block.rstrip("\n").split("\n")]
        current: list[str] | None = None
        output: list[str] = []
        for line in [*lines, "$ end"]:
            if line.startswith("$ "):
                if current is not None:
                    found.append((current, "\n".join(output) + "\n"))
                current, output = shlex.split(line[2:]), []
            elif current is not None:
                output.append(line)
    return [(argv, out) for argv, out in found if argv[:2] == ["mcp-sansio", "call"]]


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT,
                          check=False)


def test_the_page_shows_the_calls() -> None:
    assert len(documented()) >= 5


@pytest.mark.parametrize(("argv", "expected"), documented(),
                         ids=[" ".join(a[2:a.index("--")]) for a, _ in documented()])
def test_a_documented_call_prints_what_the_page_shows(argv: list[str], expected: str) -> None:
    at = argv.index("--")
    assert argv[at + 1:] == ["mcp-sansio", "serve-example"]
    done = run([*CLI, *argv[1:at + 1], *SERVER])
    assert (done.returncode, done.stdout) == (0, expected), done.stderr


@pytest.mark.parametrize(("argv", "said"), [
    (["test_error_handling"], "test_error_handling: the tool failed: This tool intentionally"),
    (["--resource", "test://nope"], "Resource not found (code -32602)"),
    (["nope"], "no tool named 'nope' (tools: add,"),
])
def test_a_failed_call_exits_1_with_the_reason(argv: list[str], said: str) -> None:
    done = run([*CLI, "call", *argv, "--", *SERVER])
    assert done.returncode == 1
    assert said in done.stderr and "Traceback" not in done.stderr


def test_json_errors_are_printed_as_json_too() -> None:
    done = run([*CLI, "call", "--json", "--resource", "test://nope", "--", *SERVER])
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == -32602


@pytest.mark.parametrize("argv", [
    ["add", "a=1", "b=x"], ["echo", "text"], ["echo", "text=a", "text=b"], [],
    ["--resource", "x", "echo"],
])
def test_usage_errors_exit_2(argv: list[str]) -> None:
    done = run([*CLI, "call", *argv, "--", *SERVER])
    assert done.returncode == 2 and done.stderr.startswith("mcp-sansio call: "), done.stderr


SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "n": {"type": "integer"}, "x": {"type": "number"}, "flag": {"type": "boolean"},
    "tags": {"type": "array"}, "opt": {"type": ["integer", "null"]},
    "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "s": {"type": "string"}}}


def test_pairs_are_read_as_the_schema_types_them() -> None:
    got = parse_arguments(["n=3", "x=0.5", "flag=yes", 'tags=["a"]', "opt=null", "either=7",
                           "s=42", "free=1"], SCHEMA)
    assert got == {"n": 3, "x": 0.5, "flag": True, "tags": ["a"], "opt": None, "either": 7,
                   "s": "42", "free": "1"}
    assert parse_arguments(['{"n": "as given"}'], SCHEMA) == {"n": "as given"}
    with pytest.raises(ValueError, match="expected integer or null"):
        coerce("opt", "x", SCHEMA["properties"]["opt"])


def test_progress_is_shown_on_a_terminal(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(_cli, "_isatty", lambda stream: True)
    out = io.StringIO()
    assert _call_cli.main(["sleep", "seconds=0.3", "--", *SERVER], out) == 0
    assert out.getvalue() == "slept 0.3 s\n"
    assert "progress 3/3: slept 0.3 s" in capsys.readouterr().err


def test_over_http_a_header_is_sent_and_a_refusal_says_why() -> None:
    from tests.adapters.common.test_errors_say_why import scoped
    from tests.auth.test_auth_server import protected, serving, token

    with serving("threading", scoped(), auth=protected()) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        good = run([*CLI, "call", "--url", url, "--header",
                    f"Authorization: Bearer {token(scope='mcp:read mcp:admin')}", "wipe"])
        expired = run([*CLI, "call", "--url", url, "--no-login", "--header",
                       f"Authorization: Bearer {token(exp=1)}", "wipe"])
    assert (good.returncode, good.stdout) == (0, "wiped\n"), good.stderr
    assert expired.returncode == 1
    assert "HTTP 401" in expired.stderr and "bad claim 'exp'" in expired.stderr
