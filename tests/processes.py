"""Child processes of the tests: servers started in a process group of their own (so that an
engine's workers go with their supervisor) and stopped the way a supervisor stops them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from typing import Any


def stop_group(proc: subprocess.Popen[Any], grace: float = 20.0) -> None:
    """SIGTERM the child's process group (a graceful stop), SIGKILL it if it is not gone
    within ``grace`` seconds, then close the child's stdout pipe."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
