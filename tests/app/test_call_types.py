"""The client's named calls stay typed at the call site: ``mypy --strict`` passes the call
sites of both colours (``tests/typing_client_calls.py``) and fails wrong ones.

The colours' methods are made from one definition each (``mcp_sansio/app/calls.py`` and
``adapters/common/plans.py``); what mypy sees of them comes from descriptor protocols with a
``ParamSpec``. These tests run mypy's API from the source tree's root (where the
``adapters`` package is visible to mypy, as in CI's ``mypy --strict mcp_sansio adapters``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.paths import ROOT

api = pytest.importorskip("mypy.api")  # the [test] extra has it; CI always runs this

TYPED_USES = ROOT / "tests" / "typing_client_calls.py"

#: Wrong call sites, each with the error mypy must report on its line.
WRONG = '''\
from adapters.common.async_session import AsyncClient
from adapters.threading.session import CancelToken, SyncClient


async def wrong(client: AsyncClient, blocking: SyncClient) -> None:
    await client.call_tool(1)  # arg-type
    await client.call_tool("t", cancel=CancelToken())  # arg-type
    await client.list_tools(timeout="soon")  # arg-type
    await client.read_resource()  # call-arg
    blocking.call_tool("t", nonsense=1)  # call-arg
    count: int = blocking.ping()  # assignment
    items: list[int] = await client.list_prompts()  # assignment
    await blocking.ping()  # misc
'''


def _mypy(*paths: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    monkeypatch.chdir(ROOT)
    out, err, status = api.run(["--strict", "--no-error-summary", "--show-error-codes",
                                *map(str, paths)])
    return out + err, status


def test_the_call_sites_of_both_colours_type_check(monkeypatch: pytest.MonkeyPatch) -> None:
    out, status = _mypy(TYPED_USES, monkeypatch=monkeypatch)
    assert status == 0, out


def test_a_wrong_call_is_a_type_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "wrong_calls.py"
    path.write_text(WRONG)
    out, status = _mypy(path, monkeypatch=monkeypatch)
    assert status == 1, out
    found = {(int(line), code) for line, code in
             re.findall(r"wrong_calls\.py:(\d+): error: .*\[([\w-]+)\]", out)}
    expected = {(number, line.rpartition("# ")[2])
                for number, line in enumerate(WRONG.splitlines(), 1) if "  # " in line}
    assert expected <= found, out
    # The async colour has no ``cancel`` (an async caller cancels its task).
    assert re.search(r':7: error: Argument "cancel" .* "Never"', out), out
