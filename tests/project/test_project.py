"""Project promises: sans-IO purity, the README's commands and example, the CLI."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mcp_sansio
from mcp_sansio.__main__ import main
from tests.paths import ROOT

#: Modules the core must never import (DESIGN.md, principle 1): I/O, clocks, randomness.
FORBIDDEN = {
    "socket", "subprocess", "threading", "asyncio", "trio", "anyio", "time", "random",
    "secrets", "select", "selectors", "os", "multiprocessing", "concurrent",
}


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__":
            found.add("__import__")
    return found


def core_modules() -> list[Path]:
    return sorted((ROOT / "mcp_sansio").rglob("*.py"))


@pytest.mark.parametrize("path", core_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_imports_no_io_clock_or_randomness(path: Path) -> None:
    if path.name == "__main__.py":
        # The command line is an application of the core, not part of it: it may print.
        allowed = {"sys"}
        assert not (_imported_modules(path) & (FORBIDDEN - allowed))
        return
    bad = _imported_modules(path) & (FORBIDDEN | {"__import__"})
    assert not bad, f"{path.name} imports {sorted(bad)}"


def test_the_purity_test_covers_the_app_layer() -> None:
    app = [p for p in core_modules() if p.parent.name == "app"]
    assert {p.stem for p in app} >= {"__init__", "errors", "session", "context", "server"}


def test_purity_check_catches_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("import os.path\nfrom time import monotonic\nimport json\n")
    assert _imported_modules(sample) & FORBIDDEN == {"os", "time"}


def test_no_print_in_the_library() -> None:
    for path in core_modules():
        if path.name == "__main__.py":
            continue
        tree = ast.parse(path.read_text())
        calls = [n for n in ast.walk(tree)
                 if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print"]
        assert not calls, f"print() in {path.name}"


def _readme() -> str:
    return (ROOT / "README.md").read_text()


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one() -> None:
    section = _readme().split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)\n\s*```", section, re.S)
    assert len(commands) == 2
    demo, test = (c.strip() for c in commands)
    assert demo.endswith("mcp-sansio demo")
    ci = (ROOT / ".ci" / "run").read_text()
    assert test in ci.splitlines(), "the README's test command must be what .ci/run runs"


def test_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = re.search(r"```python\n(.*?)\n```", _readme(), re.S)
    assert code is not None
    exec(compile(code.group(1), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "Initialized(protocol_version='2025-11-25'" in out
    assert "Response(request_id=2" in out


def test_demo_in_process_prints_the_handshake_a_ping_and_one_request(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--in-process"]) == 0
    out = capsys.readouterr().out
    sent = [line for line in out.splitlines() if line.startswith(("C->S", "S->C"))]
    methods = [re.search(r'"method":"([^"]+)"', line) for line in sent]
    assert [m.group(1) for m in methods if m] == [
        "initialize", "notifications/initialized", "ping", "tools/call",
    ]
    assert sum(1 for line in sent if line.startswith("S->C")) == 3  # three responses
    assert "hello, MCP" in sent[-1]
    assert "client state: operating, server state: operating" in out


@pytest.mark.parametrize("revision", mcp_sansio.HANDSHAKE_REVISIONS)
def test_demo_each_revision(revision: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--in-process", "--revision", revision]) == 0
    assert f'"protocolVersion":"{revision}"' in capsys.readouterr().out


def test_demo_runs_the_example_server_as_a_subprocess() -> None:
    result = subprocess.run([sys.executable, "-m", "mcp_sansio", "demo"], capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "1. handshake: 2025-11-25 (handshake era) with mcp-sansio-example" in out
    assert "2. tools/list:" in out and "progress 5/5" in out
    assert "-> 'slept 0.5 s'" in out
    assert "the task was cancelled" in out and "ping afterwards: {}" in out
    assert "negotiated 2026-07-28 (stateless era)" in out and "'Hello, Ada!'" in out
    assert "the server exited with status 0" in out


def test_probe_prints_tables_of_a_real_server() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mcp_sansio", "probe", "--", sys.executable, "-m", "mcp_sansio",
         "serve-example"], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "era       stateless" in out and "version   2026-07-28" in out
    assert "mcp-sansio-example" in out
    for heading in ("tools (38)", "resources (3)", "resource templates (1)", "prompts (5)"):
        assert heading in out
    assert re.search(r"test_prompt_with_arguments +arg1, arg2 +A prompt", out)


@pytest.mark.parametrize("command", [["no-such-command-here"], [sys.executable, "-c", "pass"]])
def test_probe_fails_with_a_clear_message(command: list[str]) -> None:
    result = subprocess.run([sys.executable, "-m", "mcp_sansio", "probe", "--", *command],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("mcp-sansio probe: ")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [["--help"], ["demo", "--help"], ["serve-example", "--help"],
                                  ["probe", "--help"]])
def test_help_on_every_subcommand(args: list[str]) -> None:
    result = subprocess.run([sys.executable, "-m", "mcp_sansio", *args],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0
    assert "usage: mcp-sansio" in result.stdout


def test_adapters_install_as_a_subpackage() -> None:
    import mcp_sansio.adapters as adapters

    assert Path(adapters.__file__).parent == ROOT / "adapters"


def test_py_typed_is_shipped() -> None:
    assert (ROOT / "mcp_sansio" / "py.typed").exists()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'mcp_sansio = ["py.typed"]' in pyproject


def test_a_missing_runtime_is_a_clear_message(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "trio" else real(name, *a))
    assert main(["serve-example", "--runtime", "trio"]) == 2
    assert "pip install 'mcp-sansio[trio]'" in capsys.readouterr().err
    assert main(["probe", "--runtime", "trio", "--", "true"]) == 2


def test_the_example_server_is_spawned_without_the_current_directory_on_sys_path() -> None:
    # Run from a source checkout (the README's first command), `python -m mcp_sansio` would
    # import the checkout's mcp_sansio/, which has no adapters subpackage until installed.
    from mcp_sansio.adapters.tools._cli import EXAMPLE_COMMAND

    assert EXAMPLE_COMMAND[1] == "-P"
