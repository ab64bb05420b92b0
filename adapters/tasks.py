"""The client's view of tasks, given one public home: ``mcp_sansio.adapters.tasks``.

Theory of operation: the logic lives in the runtime-free ``_client_tasks`` module (plans
of requests that every client runs, see its docstring); this module only re-exports what a
user touches -- the :class:`ClientTask` that ``call_tool_as_task`` returns, and the
extension identifier a 2026-07-28 client declares to be offered tasks
(``capabilities={"extensions": {TASKS_EXTENSION: {}}}``).
"""

from __future__ import annotations

from mcp_sansio.app.client_tasks import FORM_EXTENSION, FORM_V1, TASKS_EXTENSION, ClientTask

__all__ = ["FORM_EXTENSION", "FORM_V1", "TASKS_EXTENSION", "ClientTask"]
