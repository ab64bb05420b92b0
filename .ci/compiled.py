"""The suite's compiled leg: build the mypyc extensions, run the tests on them, remove them.

The pure-Python source is the reference and every other CI step runs it; this step proves
the compiled build (docs/compiled.rst) behaves the same. It

1. copies ``setup.py`` and ``mcp_sansio/`` to a temporary directory and compiles there with
   ``MCP_SANSIO_COMPILE=1 python setup.py build_ext --inplace`` (a directory without
   pyproject.toml, so the venv's own setuptools builds the extensions, whatever its age);
2. puts the extensions beside their source in this checkout (Python loads an extension
   before a ``.py`` of the same name), the compiler's shared runtime among them
   (``mcp_sansio/_native__mypyc``), so that the tests' child processes load them too;
3. runs pytest with ``MCP_SANSIO_EXPECT_COMPILED=1`` (tests/project/test_compiled.py then fails
   unless every listed module is the compiled one);
4. removes every file it added, whatever happened, so the checkout is pure again.

Which tests: ``-m quick`` (the contributor's run) by default; ``--all`` for the whole suite.
Run: ``python .ci/compiled.py [--all] [pytest args...]``.

``--tree DIR`` only builds, into ``DIR`` laid out as installed (``DIR/mcp_sansio`` with the
adapters as ``DIR/mcp_sansio/adapters``): the tree the
benchmarks take for the compiled build (``stdio_ab.py``, ``load.py --compiled-tree``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def build(workdir: Path) -> list[tuple[Path, Path]]:
    """Compile in ``workdir``; return (built file, where it goes in the checkout) pairs."""
    shutil.copy2(ROOT / "setup.py", workdir / "setup.py")
    shutil.copytree(ROOT / "mcp_sansio", workdir / "mcp_sansio",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    env = dict(os.environ, MCP_SANSIO_COMPILE="1")
    subprocess.run([PY, "setup.py", "-q", "build_ext", "--inplace"], cwd=workdir, env=env,
                   check=True, stdout=subprocess.DEVNULL)
    built = sorted(workdir.glob("*.so")) + sorted((workdir / "mcp_sansio").rglob("*.so"))
    if not built:
        raise SystemExit("the compiled build produced no extension module")
    return [(path, ROOT / path.relative_to(workdir)) for path in built]


def make_tree(tree: Path) -> int:
    """Build the compiled tree in ``tree`` (which must not exist yet)."""
    tree.mkdir(parents=True)
    start = time.monotonic()
    pairs = build(tree)
    shutil.copytree(ROOT / "adapters", tree / "mcp_sansio" / "adapters",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "setup.py").unlink()
    shutil.rmtree(tree / "build", ignore_errors=True)
    print(f"compiled {len(pairs)} files into {tree} in {time.monotonic() - start:.1f} s")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--tree"] and len(argv) == 2:
        return make_tree(Path(argv[1]).resolve())
    run_all = "--all" in argv
    extra = [a for a in argv if a != "--all"]
    placed: list[Path] = []
    try:
        with tempfile.TemporaryDirectory(prefix="mcp-sansio-compiled-") as tmp:
            start = time.monotonic()
            pairs = build(Path(tmp))
            for source, target in pairs:
                if target.exists():
                    raise SystemExit(f"{target} exists already: remove it and run again")
                shutil.copy2(source, target)
                placed.append(target)
            print(f"compiled {len(pairs)} files in {time.monotonic() - start:.1f} s", flush=True)
        env = dict(os.environ, MCP_SANSIO_EXPECT_COMPILED="1")
        selection = [] if run_all else ["-m", "quick"]
        cmd = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection, *extra]
        return subprocess.call(cmd, cwd=ROOT, env=env)
    finally:
        for target in placed:
            target.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
