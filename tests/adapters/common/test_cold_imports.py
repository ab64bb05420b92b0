"""Cold start: what ``serve-example`` imports before its first answer.

The speed aim is spawn -> first answer <= 100 ms (issue 6); every module imported on the way
is paid by every server start. These tests pin the lazy imports: the threading adapter does
without asyncio until an ``async def`` handler runs, and without ``subprocess`` and
``concurrent.futures`` (its handler pool is made when a plain ``def`` handler first runs);
nothing on the way imports hashlib (OpenSSL) unless a ``requestState`` is sealed or a task
is created.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}})


def _modules_after_first_answer(runtime: str) -> set[str]:
    """Serve one ``initialize`` in a child and list the modules it holds once answered."""
    code = textwrap.dedent(f"""
        import json, sys
        from mcp_sansio.adapters.tools import _example_server
        _example_server.run({runtime!r})  # until stdin ends, after the answer
        print(json.dumps(sorted(sys.modules)), file=sys.stderr)
    """)
    proc = subprocess.run([sys.executable, "-c", code], input=INITIALIZE + "\n",
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert '"result"' in proc.stdout, proc.stdout
    modules: list[str] = json.loads(proc.stderr.strip().splitlines()[-1])
    return set(modules)


def test_threading_server_starts_without_asyncio_or_hashlib() -> None:
    modules = _modules_after_first_answer("threading")
    assert "mcp_sansio.adapters.threading" in modules
    assert "asyncio" not in modules
    assert "hashlib" not in modules and "secrets" not in modules
    # A server spawns nothing and, until a plain def handler runs, needs no handler pool.
    assert "subprocess" not in modules and "concurrent.futures" not in modules


def test_core_import_leaves_hashlib_out() -> None:
    code = ("import sys, mcp_sansio\n"
            "assert 'hashlib' not in sys.modules and 'hmac' not in sys.modules\n"
            "k = b'k'\n"
            "s = mcp_sansio.seal_state(k, 'x', method='m', name=None, expires_at=2.0)\n"
            "assert mcp_sansio.open_state(k, s, method='m', name=None, now=1.0) == 'x'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr


def test_lazy_module_rebinds_its_global() -> None:
    from mcp_sansio.adapters.common.lazy import LazyModule

    namespace: dict[str, object] = {}
    namespace["json_mod"] = LazyModule("json", namespace)
    assert "not imported yet" in repr(namespace["json_mod"])
    dumps = namespace["json_mod"].dumps  # type: ignore[attr-defined]
    assert dumps([1]) == "[1]"
    assert namespace["json_mod"] is json
