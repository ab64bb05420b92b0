"""Cold start: a stdio server loads only what stdio needs, on every runtime.

Every module imported before the first answer is paid by every server start (the aim is
spawn -> first answer <= 100 ms; the figures live in ``benchmarks/stdio.py``). These tests
pin *what* is loaded, not how long it takes: ``serve-example`` answers ``initialize`` over
stdio, then lists its modules. Nothing of HTTP (our layer, h11, httptools), of OAuth, of the
typed models or of cattrs may be among them, and attrs neither: the core's events and tables
are plain classes, and attrs is imported only by whoever asks ``attrs.fields`` of an event
(trio itself depends on attrs, so that runtime is exempt from the last rule only).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}})

#: Module prefixes a stdio server must not load.
NOT_FOR_STDIO = (
    "mcp_sansio.http", "mcp_sansio.auth", "mcp_sansio.types", "mcp_sansio.testing",
    "mcp_sansio.adapters.asgi", "mcp_sansio.adapters.auth", "mcp_sansio.app.http_service",
    "mcp_sansio.app.http_client", "h11", "httptools", "cattrs",
)


def _loaded(code: str) -> set[str]:
    """Run ``code`` in a child fed one ``initialize`` line; the modules it held at the end."""
    code += "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    proc = subprocess.run([sys.executable, "-c", code], input=INITIALIZE + "\n",
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert '"result"' in proc.stdout, proc.stdout
    modules: list[str] = json.loads(proc.stderr.strip().splitlines()[-1])
    return set(modules)


def _offending(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize("runtime", ["asyncio", "trio", "threading"])
def test_stdio_server_loads_nothing_of_http_auth_or_attrs(runtime: str) -> None:
    modules = _loaded(textwrap.dedent(f"""
        from mcp_sansio.adapters.tools import _example_server
        _example_server.run({runtime!r})  # until stdin ends, after the answer
    """))
    assert f"mcp_sansio.adapters.{'threading' if runtime == 'threading' else runtime}" \
        in modules
    banned = NOT_FOR_STDIO if runtime == "trio" else (*NOT_FOR_STDIO, "attr", "attrs")
    assert _offending(modules, banned) == []


def test_serve_example_command_loads_no_more() -> None:
    # The command line on the way: argparse is given the terminal width, so building its
    # parsers does not import shutil (and with it bz2 and lzma).
    modules = _loaded(textwrap.dedent("""
        import runpy, sys
        sys.argv = ["mcp-sansio", "serve-example", "--runtime", "threading"]
        try:
            runpy.run_module("mcp_sansio", run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            assert not exc.code, exc.code
    """))
    assert "mcp_sansio.adapters.threading" in modules
    assert _offending(modules, (*NOT_FOR_STDIO, "attr", "attrs", "shutil", "bz2", "lzma")) == []


def test_core_import_leaves_attrs_out_until_asked() -> None:
    # The core alone: a server connection answers initialize without attrs;
    # asking attrs about an event imports it then, and the answer is an attrs field tuple.
    code = textwrap.dedent("""
        import sys
        import mcp_sansio
        from mcp_sansio import NEED_DATA, ServerConnection
        server = ServerConnection(info={"name": "s", "version": "1"})
        server.receive_data(sys.stdin.buffer.readline())
        while server.next_event() is not NEED_DATA:
            pass
        sys.stdout.buffer.write(server.data_to_send())
        assert "attrs" not in sys.modules and "attr" not in sys.modules, "attrs loaded"
        import attrs
        fields = [f.name for f in attrs.fields(mcp_sansio.Request)]
        assert fields == ["request_id", "method", "params"], fields
        ping = mcp_sansio.Request(request_id=1, method="ping")
        assert attrs.evolve(ping, method="x") == mcp_sansio.Request(request_id=1, method="x")
    """)
    _loaded(code)


def test_events_keep_the_attrs_field_protocol() -> None:
    # Events are plain classes; attrs.fields / evolve / has answer for each of them, also
    # after attrs has made subclasses of Event (the HTTP client's events) and asked about
    # the base, and for a subclass an application makes.
    import inspect
    import pickle

    import attrs

    import mcp_sansio._events as events
    from mcp_sansio.http._client import TransportFailed

    assert attrs.fields(events.Event) == ()
    assert [f.name for f in attrs.fields(TransportFailed)][:2] == ["status", "detail"]
    classes = [c for c in vars(events).values()
               if inspect.isclass(c) and issubclass(c, events.Event) and c is not events.Event]
    assert len(classes) == 17
    for cls in classes:
        assert attrs.has(cls)
        names = [f.name for f in attrs.fields(cls)]
        assert names == list(cls._FIELDS) and names, cls
        assert all(f.kw_only for f in attrs.fields(cls))
    request = events.Request(request_id=1, method="m", params={"a": 1})
    assert attrs.evolve(request, method="n") == events.Request(request_id=1, method="n",
                                                               params={"a": 1})
    assert attrs.asdict(request) == {"request_id": 1, "method": "m", "params": {"a": 1}}
    assert pickle.loads(pickle.dumps(request)) == request
    assert attrs.fields(events.InputRequired).input_requests.default == attrs.Factory(dict)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        request.method = "x"  # type: ignore[misc]

    class Mine(events.Request):
        __slots__ = ()

    mine = Mine(request_id=2, method="m")
    assert repr(mine) == "Mine(request_id=2, method='m', params=None)"
    assert [f.name for f in attrs.fields(Mine)] == ["request_id", "method", "params"]
    assert mine != events.Request(request_id=2, method="m")
