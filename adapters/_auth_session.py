"""An asyncio HTTP client session that authorizes itself: the flow run on 401 and 403.

Theory of operation
-------------------
:class:`Authorizer` ties one MCP server URL to an :class:`~mcp_sansio.auth.OAuthClientFlow`
and keeps the ``Authorization`` header the session sends. Two moments need it:

* before connecting, :meth:`Authorizer.preflight` POSTs the session's first message without
  credentials; a 401 starts the flow, and the session is then opened with the token;
* during the session, a call that fails with HTTP 401, or 403 ``insufficient_scope``, is
  answered by :class:`AuthRetrying`: it asks the server for its challenge again (the HTTP
  client does not yet hand a refused response's headers up to the adapters, so the request
  is repeated -- with the same method and the current token -- through
  :func:`~._auth_flow.fetch`), runs the flow from that challenge (refresh, re-authorization
  or step-up), swaps the header on the open session and retries the call. The flow's own
  bound (:data:`~mcp_sansio.auth._rules.MAX_CONSECUTIVE_CHALLENGES`) ends a server that
  never accepts: the call then fails with the flow's error.

This is the stopgap the conformance client uses until the HTTP client adapters run the flow
themselves (issue 15, second part).
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from mcp_sansio.auth import (
    AuthFlowError,
    HTTPRequest,
    HTTPResponse,
    OAuthClientFlow,
    Tokens,
)

from ._auth_flow import Authorize, Fetch, fetch, run_flow
from ._http_client_logic import HTTPTransportError

__all__ = ["AuthRetrying", "Authorizer"]

log = logging.getLogger("mcp_sansio.auth")

_POST_HEADERS = (("Content-Type", "application/json"),
                 ("Accept", "application/json, text/event-stream"))


class Authorizer:
    """The credentials of one session: run the flow when the server challenges."""

    def __init__(self, url: str, flow: OAuthClientFlow, authorize: Authorize, *,
                 fetcher: Fetch = fetch) -> None:
        self.url = url
        self.flow = flow
        self.authorize = authorize
        self.fetcher = fetcher
        self.tokens: Tokens | None = None
        self.session: Any = None  # the HTTP client session whose header to keep current

    def headers(self) -> list[tuple[str, str]]:
        return [self.tokens.authorization_header()] if self.tokens is not None else []

    async def _post(self, message: dict[str, Any]) -> HTTPResponse:
        return await self.fetcher(HTTPRequest(
            "POST", self.url, (*_POST_HEADERS, *self.headers()),
            json.dumps(message).encode()))

    async def preflight(self, message: dict[str, Any]) -> None:
        """POST ``message`` (the session's first) and authorize if it is refused. Stored
        tokens that are still fresh go on the pre-flight already."""
        if self.tokens is None:
            self.tokens = self.flow.current_tokens(time.time())
        response = await self._post(message)
        if response.status in (401, 403):
            await self._authorize(response)

    async def challenged(self, method: str) -> None:
        """A ``method`` call was refused 401/403: get the challenge and authorize again."""
        response = await self._post({"jsonrpc": "2.0", "id": "mcp-sansio-auth-challenge",
                                     "method": method, "params": {}})
        if response.status not in (401, 403):
            raise AuthFlowError("challenge", self.url, f"{method} was refused, but asked "
                                f"again the server answers {response.status}")
        await self._authorize(response)

    async def _authorize(self, challenge: HTTPResponse) -> None:
        self.tokens = await run_flow(self.flow, challenge, self.authorize,
                                     fetcher=self.fetcher)
        self._sync()

    def attach(self, session: Any) -> None:
        """Keep ``session``'s ``Authorization`` header current from now on."""
        self.session = session
        self._sync()

    def _sync(self) -> None:
        if self.session is not None:
            http = self.session.http
            http.extra_headers = [(k, v) for k, v in http.extra_headers
                                  if k.lower() != "authorization"] + self.headers()

    def succeeded(self) -> None:
        self.flow.request_succeeded()


class AuthRetrying:
    """A proxy for a client session whose calls are retried after re-authorization."""

    def __init__(self, client: Any, authorizer: Authorizer) -> None:
        self._client = client
        self._auth = authorizer
        authorizer.attach(client)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not inspect.iscoroutinefunction(attr):
            return attr
        call: Callable[..., Any] = attr

        async def retrying(*args: Any, **kwargs: Any) -> Any:
            while True:
                try:
                    result = await call(*args, **kwargs)
                except HTTPTransportError as exc:
                    if exc.status not in (401, 403):
                        raise
                    log.info("auth: %s refused with %s; authorizing", exc.method, exc.status)
                    await self._auth.challenged(exc.method)
                    continue
                self._auth.succeeded()
                return result

        return retrying
