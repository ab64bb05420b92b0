"""The default server wire follows what is installed: httptools (llhttp) where the ``fast``
extra put it, h11 -- the reference, the core's own dependency -- otherwise (docs/wires.rst).
An explicit ``wire=`` wins either way."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from mcp_sansio import ServerConnection
from mcp_sansio.http import HTTPServer, ServerConfig
from mcp_sansio.http._wire_httptools import HttptoolsWire

INFO = {"name": "s", "version": "1"}


def _ids() -> str:
    return "s1"


def test_default_is_httptools_when_installed() -> None:
    # httptools is in the test extra.
    assert ServerConfig().wire == "httptools"
    server = HTTPServer(lambda: ServerConnection(info=INFO), new_session_id=_ids)
    assert server.wire == "httptools"
    assert server._new_wire is HttptoolsWire
    h11 = HTTPServer(lambda: ServerConnection(info=INFO), new_session_id=_ids, wire="h11")
    assert h11.wire == "h11"
    assert ServerConfig().replace(wire="h11").wire == "h11"


def test_default_falls_back_to_h11_without_httptools() -> None:
    # A child where ``import httptools`` fails, as in an install without the extra.
    code = textwrap.dedent("""
        import sys
        sys.modules["httptools"] = None  # import httptools -> ImportError
        from mcp_sansio import ServerConnection
        from mcp_sansio.http import HTTPServer, ServerConfig
        assert ServerConfig().wire == "h11", ServerConfig().wire
        server = HTTPServer(lambda: ServerConnection(info={"name": "s", "version": "1"}),
                            new_session_id=lambda: "s1")
        assert server.wire == "h11" and server._new_wire is None
        try:
            ServerConfig(wire="httptools")
            HTTPServer(lambda: ServerConnection(info={"name": "s", "version": "1"}),
                       new_session_id=lambda: "s1", wire="httptools")
        except ImportError as exc:
            assert "pip install 'mcp-sansio[fast]'" in str(exc), exc
        else:
            raise AssertionError("wire='httptools' built without httptools")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
