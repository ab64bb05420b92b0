"""A clone with nothing beside it passes its own test command (issue 11).

The official schemas live outside the repository (``../shared/mcp-schema`` in CI, or
``$MCP_SCHEMA_DIR``), so a contributor's bare ``git clone`` has none. These tests clone this
repository into an empty temporary directory -- HEAD, plus the working tree's uncommitted
changes to tracked files and its new untracked files, so that a local run judges what is
about to be committed -- and run pytest there with this interpreter:

* collection succeeds with no error and says, in one line, that the schema tests will be
  skipped and how to enable them;
* a module that validates against the schemas runs: its other tests pass, the schema ones
  are skipped and counted in that one line;
* with ``MCP_REQUIRE_SCHEMAS=1`` (what ``.ci/run`` sets) the missing schemas stop the run;
* pointed at the schemas with ``MCP_SCHEMA_DIR``, nothing is skipped for want of them.

The clone's own sources are what the runs import: this interpreter has the project installed
in editable mode from *this* checkout, so a small bootstrap puts a finder in front that maps
the packages to the clone the way ``[tool.setuptools] package-dir`` of the clone's
``pyproject.toml`` does (``adapters/`` installs as ``mcp_sansio.adapters``), and the first
test checks where they came from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import schemas
from tests.paths import ROOT

#: Generous: the machine may be loaded; a run here takes a few seconds.
TIMEOUT = 600

#: Runs pytest (or reports where the packages come from) with the clone's packages mapped
#: as pyproject.toml's package-dir maps them, ahead of any installed copy.
BOOTSTRAP = '''
import importlib.util, os, sys, tomllib
root = os.getcwd()
with open(os.path.join(root, "pyproject.toml"), "rb") as f:
    package_dir = tomllib.load(f)["tool"]["setuptools"]["package-dir"]

class CloneFinder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in package_dir:
            return None
        where = os.path.join(root, package_dir[name])
        return importlib.util.spec_from_file_location(
            name, os.path.join(where, "__init__.py"), submodule_search_locations=[where])

sys.meta_path.insert(0, CloneFinder)
sys.path.insert(0, root)  # as `python -m pytest` does
if sys.argv[1:] == ["which"]:
    import mcp_sansio, mcp_sansio.adapters.asyncio
    print(mcp_sansio.__file__)
    print(mcp_sansio.adapters.asyncio.__file__)
else:
    import pytest
    sys.exit(pytest.main(sys.argv[1:]))
'''


def _git(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True,
                          timeout=TIMEOUT)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository cloned into an empty directory (so no ``../shared`` beside it)."""
    base = tmp_path_factory.mktemp("fresh")
    dest = base / "mcp-sansio"
    _git("clone", "-q", str(ROOT), str(dest))
    diff = _git("diff", "HEAD", "--binary").stdout
    if diff:
        subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], input=diff, cwd=dest,
                       check=True, timeout=TIMEOUT)
    untracked = _git("ls-files", "--others", "--exclude-standard", "-z").stdout
    for name in filter(None, untracked.decode().split("\0")):
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    (base / "bootstrap.py").write_text(BOOTSTRAP)
    assert sorted(p.name for p in base.iterdir()) == ["bootstrap.py", "mcp-sansio"]
    return dest


def _run(clone: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("MCP_SCHEMA_DIR", "MCP_REQUIRE_SCHEMAS", "PYTHONPATH")}
    environ.update(env)
    return subprocess.run([sys.executable, str(clone.parent / "bootstrap.py"), *args],
                          cwd=clone, env=environ, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)


def _schema_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("SCHEMAS:")]


def test_the_clone_imports_its_own_sources(clone: Path) -> None:
    proc = _run(clone, "which")
    assert proc.returncode == 0, proc.stderr
    core, adapter = proc.stdout.split()
    assert Path(core).is_relative_to(clone / "mcp_sansio")
    assert Path(adapter).is_relative_to(clone / "adapters")


def test_collection_on_a_bare_clone_succeeds_and_says_why_schema_tests_skip(
        clone: Path) -> None:
    proc = _run(clone, "--collect-only", "-q", "-p", "no:cacheprovider")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "INTERNALERROR" not in out and "error" not in out.splitlines()[-1].lower()
    assert " tests collected" in out.splitlines()[-1]
    [line] = _schema_lines(out)
    assert "will be skipped" in line
    assert "official MCP schemas not found" in line
    assert "MCP_SCHEMA_DIR" in line and "../shared/mcp-schema" in line


def test_a_schema_module_runs_on_a_bare_clone_with_one_summary_line(clone: Path) -> None:
    proc = _run(clone, "-q", "-p", "no:cacheprovider", "tests/core/test_stateless.py")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    [line] = _schema_lines(out)
    skipped = int(line.split()[1])
    assert line.startswith(f"SCHEMAS: {skipped} tests skipped: official MCP schemas not found")
    last = out.splitlines()[-1]
    assert f"{skipped} skipped" in last and " passed" in last and "failed" not in last
    # -ra lists each other skip; the schema ones are only in the one line above.
    assert not [x for x in out.splitlines()
                if x.startswith("SKIPPED") and "schemas not found" in x]


def test_ci_requires_the_schemas(clone: Path) -> None:
    proc = _run(clone, "--collect-only", "-q", "-p", "no:cacheprovider",
                MCP_REQUIRE_SCHEMAS="1")
    out = proc.stdout + proc.stderr
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "MCP_REQUIRE_SCHEMAS is set, but official MCP schemas not found" in out


def test_the_schema_dir_setting_is_read(clone: Path) -> None:
    root = schemas.schema_root()  # skipped (or failed, in CI) without the schemas here
    proc = _run(clone, "-q", "-p", "no:cacheprovider", "tests/core/test_stateless.py",
                MCP_SCHEMA_DIR=str(root), MCP_REQUIRE_SCHEMAS="1")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert not _schema_lines(out)
    assert "skipped" not in out.splitlines()[-1]
