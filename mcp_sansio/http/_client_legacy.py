"""The HTTP client's fallback to the legacy HTTP+SSE transport (2024-11-05).

``basic/transports.mdx`` (2025-03-26 onwards), "Backwards Compatibility": a client that
wants to reach old servers POSTs ``initialize`` to the URL and, when that is answered 4xx,
GETs the URL instead, expecting an SSE stream whose first event, ``endpoint``, names where
to POST messages. :class:`LegacyFallback` is that part of the client: it decides whether a
refusal allows the fallback (not an authorization challenge, not a stateless-era error),
holds the POSTs that wait for the endpoint, checks that the endpoint is on the same origin,
and, when neither transport works, answers ``initialize`` with the first refusal.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin, urlsplit

from ._client_state import ClientHost, Exchange, Kind, is_auth_challenge, is_stateless_error

__all__ = ["LegacyFallback"]


class LegacyFallback:
    """The legacy transport's state in one client (``client._legacy``)."""

    def __init__(self, client: ClientHost, *, allowed: bool) -> None:
        self._client = client
        #: Whether the client may fall back (its transport is ``AUTO``).
        self.allowed = allowed
        #: Where to POST, from the ``endpoint`` event (None: not known yet).
        self.endpoint: str | None = None
        #: POSTs waiting for the endpoint event.
        self.pending: list[Exchange] = []
        self.tried = False
        #: initialize's 4xx (status, body, JSON-RPC or not), kept for a failed fallback.
        self.init_refusal: tuple[int, bytes, bool] | None = None

    def allows(self, exchange: Exchange, status: int, body: Any) -> bool:
        """Whether ``initialize`` answered ``status`` (``body``: its decoded JSON, if any)
        is a reason to try the legacy transport."""
        return (
            self.allowed and not self.tried
            and 400 <= status < 500 and self._client.session_id is None
            and not (body is not None and is_stateless_error(body))
            and not is_auth_challenge(exchange, status)
        )

    def start(self) -> None:
        """Try the 2024-11-05 transport: GET the URL, expect an ``endpoint`` event."""
        client = self._client
        self.tried = True
        init = client._by_id.get(client._init_id) if client._init_id is not None else None
        if init is not None and init not in self.pending:
            init.done = False
            init.answered = set()
            self.pending.append(init)
        client._start(Exchange(Kind.LEGACY_GET, "GET", client._target))

    def on_endpoint(self, exchange: Exchange, data: bytes) -> None:
        client = self._client
        endpoint = urljoin(client.url, data.decode("utf-8", "replace").strip())
        parts = urlsplit(endpoint)
        if (parts.scheme, parts.hostname, parts.port or client.port) != (
            client.scheme, client.host, client.port
        ):
            self.failed(exchange, exchange.status, "the endpoint is on another origin")
            return
        self.endpoint = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        pending, self.pending = self.pending, []
        for post in pending:
            post.target = self.endpoint
            post.done = False
            client._start(post)

    def failed(self, exchange: Exchange, status: int | None,
               detail: str = "no endpoint event") -> None:
        client = self._client
        exchange.done = True
        pending, self.pending = self.pending, []
        for post in pending:
            refusal = self.init_refusal
            if refusal is not None and post.ids and post.ids[0] == client._init_id:
                # Neither transport worked: the initialize refusal is the answer (one not JSON-RPC,
                # a parser's 400, says why by its status and text as any refusal does).
                if refusal[2]:
                    post.done = True
                    client._on_message(post, refusal[1])
                else:
                    client._refused(post, refusal[0], refusal[1])
                continue
            client._fail(post, status, f"legacy HTTP+SSE: {detail}")
        channel = exchange.channel
        if channel is not None:
            client._drop_channel(channel)
