"""What the two event-loop runtimes' session primitives (asyncio's and trio's) share: the
wall clock, and the question of where a server's tasks run (each answers with its runner
in :mod:`.tasks`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_sansio.app.tasks import TaskRuntime

__all__ = ["LoopRuntime"]


class LoopRuntime:
    """The part of a loop runtime that does not depend on the loop."""

    __slots__ = ()

    def wall_now(self) -> float | None:
        return time.time()

    def task_runtime(self) -> TaskRuntime:
        """Where this runtime runs a server's tasks (the ledger asks through the session:
        :class:`mcp_sansio.app.tasks.TaskHost`): its runner in :mod:`.tasks`, imported on
        first use (a cold start does without tasks)."""
        raise NotImplementedError
