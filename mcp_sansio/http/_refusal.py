"""Why a server refused: the reason read from an HTTP error response, bounded and printable.

Theory of operation
-------------------
A status alone ("HTTP 401") does not tell a user what to fix; the server usually says more,
in one of three places, which :func:`explain` reads in this order:

* the ``WWW-Authenticate`` challenge's ``error`` and ``error_description`` (RFC 6750 §3;
  MCP ``basic/authorization.mdx`` 2025-06-18 onwards);
* a JSON body: a JSON-RPC error object's ``message`` (and ``code``; JSON-RPC 2.0 §5.1,
  which MCP servers send even with ``id: null``), or an OAuth error document's ``error`` and
  ``error_description`` (OAuth 2.1 §3.2.4);
* otherwise the body as text.

Everything taken from the peer is untrusted: it is cut to :data:`MAX_REASON` characters
and its control characters are replaced, so that a hostile server cannot flood a log or
forge terminal output through an exception's message. Nothing here raises.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

#: The most characters of peer-supplied text kept in a reason (each piece).
MAX_REASON = 300
#: The most body bytes looked at (the rest is not needed to say why).
MAX_BODY = 16 * 1024


def printable(text: str, limit: int = MAX_REASON) -> str:
    """``text`` with control characters replaced by ``?``, cut to ``limit`` characters
    (an ellipsis marks the cut)."""
    cleaned = "".join(c if c.isprintable() else ("?" if c not in "\r\n\t" else " ")
                      for c in text[: limit + 1]).strip()
    return cleaned if len(cleaned) <= limit else cleaned[:limit] + "..."


@attrs.frozen
class Reason:
    """What a refusing response said (each field None when it did not say it)."""

    #: The ``WWW-Authenticate`` Bearer challenge's ``error`` (``invalid_token``, ...).
    error: str | None = None
    #: Its ``error_description``, or an OAuth error body's.
    error_description: str | None = None
    #: The JSON-RPC error in the body, as (code, message).
    rpc_error: tuple[int, str] | None = None
    #: The body as text, when it was neither JSON-RPC nor an OAuth error document.
    text: str | None = None

    def summary(self) -> str:
        """One line: what a message should show after the status (may be empty)."""
        parts: list[str] = []
        if self.error:
            parts.append(self.error + (f" ({self.error_description})"
                                       if self.error_description else ""))
        elif self.error_description:
            parts.append(self.error_description)
        if self.rpc_error is not None:
            code, message = self.rpc_error
            parts.append(f"{message} [{code}]")
        if self.text:
            parts.append(repr(self.text) if not parts else f"body {self.text!r}")
        return "; ".join(parts)


def explain(headers: tuple[tuple[str, str], ...] | list[tuple[str, str]],
            body: bytes) -> Reason:
    """The :class:`Reason` of a refusal with these response headers and body."""
    error = description = None
    challenges = [v for k, v in headers if k.lower() == "www-authenticate"]
    if challenges:
        from ..auth._challenge import bearer_params

        params = bearer_params(challenges) or {}
        error = _piece(params.get("error"))
        description = _piece(params.get("error_description"))
    rpc_error = None
    text = None
    body = body[:MAX_BODY]
    doc: Any = None
    if body.strip():
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError):
            doc = None
            text = printable(body.decode("utf-8", "replace"))
    if isinstance(doc, dict):
        err = doc.get("error")
        if isinstance(err, dict):
            code = err.get("code")
            message = err.get("message")
            if isinstance(message, str):
                rpc_error = (code if type(code) is int else 0, printable(message))
        elif isinstance(err, str):  # an OAuth error document
            error = error or _piece(err)
            description = description or _piece(doc.get("error_description"))
        else:
            text = printable(body.decode("utf-8", "replace"))
    elif doc is not None:
        text = printable(body.decode("utf-8", "replace"))
    return Reason(error, description, rpc_error, text or None)


def _piece(value: object) -> str | None:
    return printable(value) if isinstance(value, str) and value else None
