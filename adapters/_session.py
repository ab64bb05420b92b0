"""The old home of the session logic, kept so that existing imports go on working.

Theory of operation: the runtime-independent session logic moved into the sans-IO layer
(:mod:`mcp_sansio.app`: :mod:`~mcp_sansio.app.errors`, :mod:`~mcp_sansio.app.session`,
:mod:`~mcp_sansio.app.context`, :mod:`~mcp_sansio.app.server`); this module only re-exports
those names (the same objects) under their old path. Only the tools (the CLI, the example
server, the conformance client, edited on other branches meanwhile) still import it; new
code imports from :mod:`mcp_sansio.app`.
"""

from __future__ import annotations

from mcp_sansio.app.context import Context, Job, elicit_request, sampling_request, tool_error_result
from mcp_sansio.app.errors import (
    Call,
    ConnectionClosedError,
    InputRequiredSignal,
    McpError,
    MissingCapability,
    ProgressCallback,
    RequestCancelledError,
    RequestTimeout,
    ResultRejected,
    ToolError,
    outcome,
    secret_prefix,
)
from mcp_sansio.app.server import (
    _TYPE_TESTS,
    INVALID_ARGUMENTS_ANSWER,
    Entry,
    Server,
    ServerLogic,
    _argument_types,
    _wrong_type,
)
from mcp_sansio.app.session import (
    DEFAULT,
    HUMAN_WAIT_METHODS,
    INPUT_METHODS,
    NO_LOCK,
    SERVER_NEVER_SENDS,
    ClientLogic,
    Listener,
    Session,
    default_client_info,
    next_cursor,
    page_params,
)

from .common.stdio import STDERR_LOGGER, LineLogger

__all__ = [
    "DEFAULT",
    "HUMAN_WAIT_METHODS",
    "INPUT_METHODS",
    "INVALID_ARGUMENTS_ANSWER",
    "NO_LOCK",
    "SERVER_NEVER_SENDS",
    "STDERR_LOGGER",
    "_TYPE_TESTS",
    "Call",
    "ClientLogic",
    "ConnectionClosedError",
    "Context",
    "Entry",
    "InputRequiredSignal",
    "Job",
    "LineLogger",
    "Listener",
    "McpError",
    "MissingCapability",
    "ProgressCallback",
    "RequestCancelledError",
    "RequestTimeout",
    "ResultRejected",
    "Server",
    "ServerLogic",
    "Session",
    "ToolError",
    "_argument_types",
    "_wrong_type",
    "default_client_info",
    "elicit_request",
    "next_cursor",
    "outcome",
    "page_params",
    "sampling_request",
    "secret_prefix",
    "tool_error_result",
]
