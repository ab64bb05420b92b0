"""The optional compiled build (docs/compiled.rst): the modules it lists are the ones loaded.

Under ``.ci/compiled.py`` (``MCP_SANSIO_EXPECT_COMPILED=1``) every module of
``COMPILED_MODULES`` must come from a compiled extension, not its ``.py``; a partly compiled
tree fails in either build. The rest holds in both builds: the list names real modules and
is the one ``setup.py`` compiles, it holds the HTTP server's request path, and a Python
class can still subclass a connection.
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


#: The HTTP server's request path: both wires, the head rules, the exchange seam, the hub, the
#: server and the parts a request goes through (docs/compiled.rst).
HTTP_REQUEST_PATH = ("_checks", "_exchange", "_exchange_wire", "_gate", "_head_rules",
                     "_headers", "_hub", "_oneshot", "_park", "_parking", "_server", "_sessions",
                     "_stranded", "_streams", "_wire", "_wire_httptools")


def test_the_http_request_path_is_listed_and_what_must_stay_python_does() -> None:
    listed = set(_compiled.COMPILED_MODULES)
    assert {f"mcp_sansio/http/{name}.py" for name in HTTP_REQUEST_PATH} <= listed
    # attrs fields with defaults (docs/compiled.rst): the shared server's effects stay Python
    assert "mcp_sansio/http/_shared.py" not in listed
    # the SSE parser takes any bytes-like chunk (callers feed bytearrays): it stays Python
    assert "mcp_sansio/http/_sse.py" not in listed
    from mcp_sansio.http._hub import Session
    from mcp_sansio.http._wire_httptools import MissingParser

    assert Session.__weakrefoffset__ != 0  # the app keys its state by session, weakly
    assert issubclass(MissingParser, ImportError)


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
