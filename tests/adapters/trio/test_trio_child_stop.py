"""The trio stdio client's stop of its server process ends even when the task watching the
process is gone: a Ctrl-C that trio raises in one of the client's tasks cancels the others,
the watcher with them, and the shielded stop must still close stdin, signal and reap."""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Any

import pytest

trio = pytest.importorskip("trio")

from mcp_sansio.adapters.trio.session import TrioChild  # noqa: E402  (needs trio)

#: A bound on the whole stop, far above what it takes (two 0.2 s waits): not a timing
#: assertion, a guard against the hang this test is about.
SAFETY = 30.0


class _Client:
    transport_detail: str | None = None
    returncode: int | None = None
    closed: Any = None


class _Runtime:
    async def flush(self, timeout: float) -> None:
        return None

    def stop_tasks(self) -> None:
        return None


def test_the_stop_ends_without_the_watcher() -> None:
    async def main() -> tuple[int | None, TrioChild]:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-c", "import time; time.sleep(120)"], stdin=subprocess.PIPE,
            start_new_session=True)
        client = _Client()
        child = TrioChild(client, _Runtime(), process)  # type: ignore[arg-type]
        with trio.fail_after(SAFETY):  # no watch task runs, as after a Ctrl-C
            await child.aclose(0.2)
        return process.returncode, child

    returncode, child = trio.run(main)
    assert returncode == -signal.SIGTERM  # it ignored its closed stdin; SIGTERM ended it
    assert child.returncode == child.client.returncode == returncode
    assert child.client.transport_detail == f"the server process exited with status {returncode}"
