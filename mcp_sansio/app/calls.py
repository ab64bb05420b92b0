"""The client's named calls, written once as data: which method, which params, what result.

Theory of operation
-------------------
``list_tools()``, ``call_tool(name, arguments)`` and the other named calls of the high-level
client are the same on every runtime and in both colours (``async`` on asyncio and trio,
blocking on threads). Each function here turns a call's arguments into a
:class:`NamedCall`: the JSON-RPC method, its params, and -- for the list methods -- the
result key whose pages the client gathers (following ``nextCursor`` until the server gives
none or repeats one). The runtime's client methods are thin wrappers: they add the options
of the colour (timeouts, progress, a cancel token on threads) and send the call; no wrapper
builds params or knows a method name of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = [
    "NamedCall",
    "call_tool",
    "complete",
    "discover",
    "get_prompt",
    "list_prompts",
    "list_resource_templates",
    "list_resources",
    "list_tools",
    "ping",
    "read_resource",
    "set_logging_level",
    "subscribe",
    "unsubscribe",
]


class NamedCall(NamedTuple):
    """One named call: ``method`` with ``params``; ``pages`` names the list in the result
    when every page is gathered (None: the result is returned as it is)."""

    method: str
    params: dict[str, Any] | None
    pages: str | None = None


def list_tools() -> NamedCall:
    return NamedCall("tools/list", None, "tools")


def call_tool(name: str, arguments: Mapping[str, Any] | None = None) -> NamedCall:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = dict(arguments)
    return NamedCall("tools/call", params)


def list_resources() -> NamedCall:
    return NamedCall("resources/list", None, "resources")


def list_resource_templates() -> NamedCall:
    return NamedCall("resources/templates/list", None, "resourceTemplates")


def read_resource(uri: str) -> NamedCall:
    return NamedCall("resources/read", {"uri": uri})


def subscribe(uri: str) -> NamedCall:
    return NamedCall("resources/subscribe", {"uri": uri})


def unsubscribe(uri: str) -> NamedCall:
    return NamedCall("resources/unsubscribe", {"uri": uri})


def list_prompts() -> NamedCall:
    return NamedCall("prompts/list", None, "prompts")


def get_prompt(name: str, arguments: Mapping[str, str] | None = None) -> NamedCall:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = dict(arguments)
    return NamedCall("prompts/get", params)


def complete(ref: Mapping[str, Any], argument: Mapping[str, Any],
             context: Mapping[str, Any] | None = None) -> NamedCall:
    params: dict[str, Any] = {"ref": dict(ref), "argument": dict(argument)}
    if context is not None:
        params["context"] = dict(context)
    return NamedCall("completion/complete", params)


def set_logging_level(level: str) -> NamedCall:
    return NamedCall("logging/setLevel", {"level": level})


def ping() -> NamedCall:
    return NamedCall("ping", None)


def discover() -> NamedCall:
    return NamedCall("server/discover", {})
