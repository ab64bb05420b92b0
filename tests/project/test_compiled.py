"""The optional compiled build (docs/compiled.rst): the modules it lists are the ones loaded.

Under ``.ci/compiled.py`` (``MCP_SANSIO_EXPECT_COMPILED=1``) every module of
``COMPILED_MODULES`` must come from a compiled extension, not its ``.py``; a partly compiled
tree fails in either build. The rest holds in both builds: the list names real modules and
is the one ``setup.py`` compiles, and a Python class can still subclass a connection.
"""

from __future__ import annotations

import os

import pytest

import mcp_sansio
from mcp_sansio import _compiled
from tests.paths import ROOT

EXPECT = os.environ.get("MCP_SANSIO_EXPECT_COMPILED", "") not in ("", "0")


def test_the_listed_modules_are_the_compiled_ones_when_built() -> None:
    loaded = _compiled.compiled_modules()
    files = {name: __import__(name, fromlist=["_"]).__file__ for name in loaded}
    if EXPECT:
        assert all(loaded.values()), {n: files[n] for n, c in loaded.items() if not c}
        assert all(str(f).endswith(".so") or str(f).endswith(".pyd") for f in files.values())
        return
    assert not any(loaded.values()) or all(loaded.values()), f"partly compiled: {files}"
    if not any(loaded.values()):
        pytest.skip("pure-Python build: run .ci/compiled.py (or MCP_SANSIO_COMPILE=1 "
                    "pip install .) to check the compiled modules are loaded")


def test_the_list_names_the_modules_setup_py_compiles() -> None:
    for path in _compiled.COMPILED_MODULES:
        assert (ROOT / path).is_file(), path
    source = (ROOT / "setup.py").read_text(encoding="utf-8")
    assert "mcp_sansio\" / \"_compiled.py\"" in source  # setup.py reads this very list
    assert "mcp_sansio/_events.py" not in _compiled.COMPILED_MODULES  # attrs validators


def test_a_python_subclass_of_a_connection_works_in_both_builds() -> None:
    class Counting(mcp_sansio.ServerConnection):
        def __init__(self, **kwargs: object) -> None:
            super().__init__(**kwargs)
            self.sent = 0

        def send_response(self, request_id: mcp_sansio.RequestId, result: dict) -> None:
            self.sent += 1
            super().send_response(request_id, result)

    server = Counting(info={"name": "s", "version": "1"}, capabilities={"tools": {}},
                      instructions="hi")
    client = mcp_sansio.ClientConnection(info={"name": "c", "version": "1"})
    client.initialize()
    server.receive_data(client.data_to_send())
    assert server.events() == []  # the core answers initialize itself
    client.receive_data(server.data_to_send())
    assert isinstance(client.next_event(), mcp_sansio.Initialized)
    assert client.instructions == "hi"
    server.receive_data(client.data_to_send())
    assert isinstance(server.next_event(), mcp_sansio.Initialized)
    client.send_request("tools/call", {"name": "echo", "arguments": {}})
    server.receive_data(client.data_to_send())
    request = server.next_event()
    assert isinstance(request, mcp_sansio.Request) and request.method == "tools/call"
    server.send_response(request.request_id, {"content": []})  # the override runs
    assert server.sent == 1 and server.role is mcp_sansio.Role.SERVER
    client.receive_data(server.data_to_send())
    response = client.next_event()
    assert isinstance(response, mcp_sansio.Response) and response.result == {"content": []}
