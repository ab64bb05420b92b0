"""The release artifacts, as a user gets them: build, check, install the wheel, run it.

1. ``python -m build`` makes the sdist and the wheel (in a temporary folder), and ``twine
   check`` must accept both (the metadata and the README render).
2. A fresh virtual environment gets the built wheel -- not the source tree, not editable --
   with the extras the smoke tests need, and pytest.
3. There, ``mcp-sansio --version`` must name the project's version, ``mcp-sansio demo`` must
   succeed, and a smoke subset of the tests (:data:`SMOKE`) runs from the *sdist*, unpacked
   with its ``mcp_sansio/`` and ``adapters/`` removed: so the tests import the installed
   wheel, and the sdist is shown to hold what testing needs.

Prints the artifacts' sizes and the wheel's contents by top-level package (the release
notes quote them). Exit status 0 when every step passed.
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

#: Tests run against the installed wheel: the core, the stdio and HTTP adapters, the CLI's
#: call and the development authorization server with our OAuth client.
SMOKE = ["tests/core/test_codec.py", "tests/core/test_lifecycle.py",
         "tests/adapters/common/test_errors_say_why.py", "tests/auth/test_dev_auth_server.py"]
#: The extras those tests need, on top of pytest.
EXTRAS = "testing,auth,trio"


def run(cmd: list[str], **options: object) -> None:
    print("$", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True, **options)  # type: ignore[call-overload]


def summary(wheel: Path) -> None:
    sizes: collections.Counter[str] = collections.Counter()
    counts: collections.Counter[str] = collections.Counter()
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            parts = info.filename.split("/")
            top = "/".join(parts[:2]) if len(parts) > 2 else parts[0]
            counts[top] += 1
            sizes[top] += info.file_size
    print(f"{wheel.name}: {wheel.stat().st_size / 1024:.0f} KiB compressed, "
          f"{sum(counts.values())} files, {sum(sizes.values()) / 1024:.0f} KiB unpacked")
    for top in sorted(counts, key=lambda t: -sizes[t]):
        if counts[top] > 1:
            print(f"  {top:36} {counts[top]:4} files {sizes[top] / 1024:8.0f} KiB")


def main() -> int:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    with tempfile.TemporaryDirectory(prefix="mcp-sansio-wheel-") as tmp:
        work = Path(tmp)
        dist = work / "dist"
        run([PY, "-m", "build", "--outdir", str(dist), str(ROOT)],
            stdout=subprocess.DEVNULL)
        shutil.rmtree(ROOT / "build", ignore_errors=True)  # setuptools' scratch folder
        wheel = next(dist.glob("*.whl"))
        sdist = next(dist.glob("*.tar.gz"))
        run([PY, "-m", "twine", "check", "--strict", str(wheel), str(sdist)])
        summary(wheel)
        print(f"{sdist.name}: {sdist.stat().st_size / 1024:.0f} KiB")

        venv = work / "venv"
        run([PY, "-m", "venv", str(venv)])
        bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
        vpy = bin_dir / "python"
        run([str(vpy), "-m", "pip", "install", "-q", f"{wheel}[{EXTRAS}]", "pytest"])

        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
        # The smoke tests run from the unpacked sdist, where ../shared is not beside them:
        # they read the schemas from where this checkout's tests do (tests/schemas.py).
        schemas = Path(os.environ.get("MCP_SCHEMA_DIR") or ROOT.parent / "shared" / "mcp-schema")
        if schemas.is_dir():
            env["MCP_SCHEMA_DIR"] = str(schemas.resolve())
        out = subprocess.run([str(bin_dir / "mcp-sansio"), "--version"], check=True,
                             capture_output=True, text=True, env=env, cwd=work).stdout
        if out.strip() != f"mcp-sansio {version}":
            print(f"--version said {out.strip()!r}, not mcp-sansio {version}")
            return 1
        print(out.strip())
        run([str(bin_dir / "mcp-sansio"), "demo"], env=env, cwd=work,
            stdout=subprocess.DEVNULL)

        with tarfile.open(sdist) as archive:
            archive.extractall(work / "sdist", filter="data")
        source = next((work / "sdist").iterdir())
        for package in ("mcp_sansio", "adapters"):
            shutil.rmtree(source / package)  # the tests import the installed wheel
        where = subprocess.run([str(vpy), "-c", "import mcp_sansio; print(mcp_sansio.__file__)"],
                               check=True, capture_output=True, text=True, cwd=source,
                               env=env).stdout.strip()
        if not where.startswith(str(venv)):
            print(f"the tests would import {where}, not the installed wheel")
            return 1
        run([str(vpy), "-m", "pytest", "-q", "-p", "no:cacheprovider", *SMOKE], cwd=source,
            env=env)
    print("the wheel installs and runs")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as exc:
        print(f"failed: {exc}")
        sys.exit(1)
