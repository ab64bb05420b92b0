"""Property-based testing of MCP peers: hypothesis strategies and a peer state machine.

Needs the ``testing`` extra (``pip install 'mcp-sansio[testing]'``: hypothesis and
jsonschema); ``import mcp_sansio`` alone never imports this package.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from hypothesis.strategies import SearchStrategy

from ._client_machine import ClientMachine
from ._findings import CHECKS, CheckFailed, Finding, PeerDeviation, Report
from ._from_schema import SchemaStrategies, UnsupportedSchema, json_values
from ._invalid import RULES, Invalid, Rule, invalid_messages
from ._machine import SLOW_NOTE, PeerMachine, check_peer, shrink, sweep
from ._schemas import Schemas
from ._strategies import (
    error_codes,
    errors,
    messages,
    method_names,
    notifications,
    params,
    request_ids,
    requests,
    responses,
    results,
)
from ._transport import ConnectionTransport, Transport
from .auth_server import AuthorizationServer

__all__ = [
    "CHECKS",
    "AuthorizationServer",
    "RULES",
    "SLOW_NOTE",
    "CheckFailed",
    "ClientMachine",
    "ConnectionTransport",
    "Finding",
    "Invalid",
    "PeerDeviation",
    "PeerMachine",
    "Report",
    "Rule",
    "SchemaStrategies",
    "Schemas",
    "Transport",
    "UnsupportedSchema",
    "check_peer",
    "error_codes",
    "errors",
    "invalid_messages",
    "json_values",
    "messages",
    "method_names",
    "notifications",
    "params",
    "request_ids",
    "requests",
    "responses",
    "results",
    "shrink",
    "sweep",
    "typed",
    "typed_strategies",
]


def _typed_module() -> ModuleType:
    return importlib.import_module("mcp_sansio.types._strategies")


def typed(tp: Any) -> SearchStrategy[Any]:
    """Instances of a typed model of :mod:`mcp_sansio.types` (a model class, or one of its
    type aliases): delegates to ``mcp_sansio.types``' own strategies, imported on first use.

    :raises ImportError: ``mcp_sansio.types`` is not available.
    """
    strategy: SearchStrategy[Any] = _typed_module().strategy_for(tp)
    return strategy


def typed_strategies(revision: str) -> dict[str, SearchStrategy[Any]]:
    """A strategy for every typed model of ``revision``, by name (delegates like
    :func:`typed`)."""
    found: dict[str, SearchStrategy[Any]] = _typed_module().strategies(revision)
    return found
