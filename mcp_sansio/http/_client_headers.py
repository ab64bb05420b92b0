"""The headers of the HTTP client's requests.

Every request names the host and what it accepts (``basic/transports.mdx``: a POST accepts
``application/json`` and ``text/event-stream``, a GET the stream). In the handshake era a
request after ``initialize`` carries the session's ``Mcp-Session-Id`` and the negotiated
``MCP-Protocol-Version``, and a resumption its ``Last-Event-ID``. In the stateless era
(2026-07-28) every request carries its own version, ``Mcp-Method``, ``Mcp-Name`` (the
method table's subject column, :func:`~mcp_sansio._capabilities.lookup`) and, for
``tools/call``, the ``Mcp-Param-*`` headers that the tool's input schema asks for with
``x-mcp-header``: :class:`RequestHeaders` learns those from each ``tools/list`` answer and
leaves out the tools whose annotations are invalid, as clients MUST. The application's own
headers come last (``extra_headers``, and ``request_headers`` made anew per request, e.g.
a DPoP proof).
"""

from __future__ import annotations

from typing import Any

from .._capabilities import SESSION_OPENERS, lookup
from .._stateless import META_PROTOCOL_VERSION
from ._client_state import ClientHost, Exchange, Kind
from ._headers import encode_header_value, param_header_text, param_headers, param_value

__all__ = ["RequestHeaders"]

_ACCEPT = "application/json, text/event-stream"


class RequestHeaders:
    """One client's request headers (``client._headers``)."""

    def __init__(self, client: ClientHost) -> None:
        self._client = client
        #: Tool name -> its ``Mcp-Param-*`` headers: header name -> the argument's path.
        self._tools: dict[str, dict[str, tuple[str, ...]]] = {}

    def of(self, exchange: Exchange, *, legacy: bool) -> list[tuple[str, str]]:
        """The headers of ``exchange``'s request (``legacy``: on HTTP+SSE, which knows no
        session header)."""
        client = self._client
        headers = [("host", client._authority)]
        kind = exchange.kind
        if exchange.method == "POST":
            headers.append(("accept", _ACCEPT))
            headers.append(("content-type", "application/json"))
        elif kind is not Kind.DELETE:
            headers.append(("accept", "text/event-stream"))
        message = exchange.message
        if exchange.stateless and type(message) is dict:
            self._stateless(headers, message)
        elif not legacy and kind not in (Kind.REINIT, Kind.LEGACY_GET):
            if exchange.session_id is None and kind is not Kind.DELETE:
                exchange.session_id = client.session_id
            if exchange.session_id is not None:
                headers.append(("mcp-session-id", exchange.session_id))
            version = client.connection.protocol_version
            if version is not None and not (
                type(message) is dict and message.get("method") in SESSION_OPENERS
            ):
                headers.append(("mcp-protocol-version", version))
            if kind in (Kind.RESUME, Kind.STANDALONE) and exchange.last_event_id is not None:
                headers.append(("last-event-id", exchange.last_event_id))
        headers.extend(client.extra_headers)
        if client.request_headers is not None:
            url = f"{client.scheme}://{client._authority}{exchange.target}"
            headers.extend(client.request_headers(exchange.method, url))
        return headers

    def _stateless(self, headers: list[tuple[str, str]], message: dict[str, Any]) -> None:
        params = message.get("params") or {}
        meta = params.get("_meta") or {}
        version = meta.get(META_PROTOCOL_VERSION)
        method = message["method"]
        if isinstance(version, str):
            headers.append(("mcp-protocol-version", version))
        headers.append(("mcp-method", method))
        # Mcp-Name mirrors the method table's subject column (the tasks extension's methods
        # mirror taskId: SEP-2663, "Routing Headers"; servers refuse them -32020 without).
        rule = lookup(method, version) if isinstance(version, str) else None
        field = rule.subject if rule is not None else None
        value = params.get(field) if field else None
        if isinstance(value, str):
            headers.append(("mcp-name", encode_header_value(value)))
        if method == "tools/call" and isinstance(params.get("name"), str):
            annotated = self._tools.get(params["name"], {})
            arguments = params.get("arguments")
            for name, path in annotated.items():
                text = param_header_text(param_value(arguments, path))
                if text is not None:
                    headers.append((f"mcp-param-{name}", encode_header_value(text)))

    def learn_tools(self, result: dict[str, Any]) -> None:
        """Read the ``x-mcp-header`` annotations of listed tools (2026-07-28), and leave out
        the tools whose annotations are invalid, as clients MUST."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return
        kept = []
        for tool in tools:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                kept.append(tool)
                continue
            schema = tool.get("inputSchema")
            try:
                annotated = param_headers(schema) if isinstance(schema, dict) else {}
            except ValueError:
                self._tools.pop(tool["name"], None)
                continue
            if annotated:
                self._tools[tool["name"]] = annotated
            else:
                self._tools.pop(tool["name"], None)
            kept.append(tool)
        if len(kept) != len(tools):
            result["tools"] = kept
