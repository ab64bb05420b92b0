"""The HTTP client's authorization hook, shared by the asyncio, trio and threads adapters.

Theory of operation
-------------------
:class:`OAuth` is what an application passes as ``connect_http(url, auth=...)``: the token
storage, how the client presents itself (:class:`~mcp_sansio.auth.ClientConfig`) and the
*user step* -- a callable that gets the :class:`~mcp_sansio.auth.UserAuthorization` (the URL
to send the user to) and returns the URL the browser came back with (``code``, ``state``,
``iss``). It makes one :class:`~mcp_sansio.auth.OAuthClientFlow` per MCP server URL, which
remembers what it discovered and registered across sessions.

:class:`SessionAuth` is one client session's share of it, and holds no I/O.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import inspect
import secrets
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from mcp_sansio.app.http_client import HTTPTransportError
from mcp_sansio.auth import (
    ClientConfig,
    ClientCredentials,
    ClientCredentialsGrant,
    HTTPResponse,
    IdentityAssertionGrant,
    JWTBearerGrant,
    OAuthClientFlow,
    Tokens,
    TokenStorage,
    UserAuthorization,
    bearer_params,
)
from mcp_sansio.auth._errors import AuthFlowError
from mcp_sansio.auth._grants import MachineGrant
from mcp_sansio.auth._http import b64url

from .flow import (
    DEFAULT_FETCH_TIMEOUT,
    fetch,
    fetch_sync,
    new_dpop_key,
    run_flow,
    run_flow_sync,
)

__all__ = ["AuthOption", "OAuth", "SessionAuth", "as_oauth", "challenge_of"]

#: The user step: the authorization to show the user -> the URL the browser came back with.
#: A plain function is called in a worker thread on asyncio and trio (it may block, as
#: :class:`~.flow.LoopbackListener` does); a coroutine function is awaited.
UserStep = Callable[[UserAuthorization], "str | Awaitable[str]"]


class OAuth:
    """Authorization for ``connect_http(url, auth=OAuth(...))`` on any runtime.

    :param authorize: the user step (see :data:`UserStep`); e.g. a
        :class:`~mcp_sansio.adapters.auth.LoopbackListener`, whose ``redirect_uri`` is then
        used when ``redirect_uri`` is left out.
    :param redirect_uri: where the authorization server sends the browser back.
    :param storage: a :class:`~mcp_sansio.auth.TokenStorage` (default: in memory, for this
        process only; :class:`~mcp_sansio.adapters.auth.FileStorage` keeps tokens on disk).
    :param config: the rest of :class:`~mcp_sansio.auth.ClientConfig` (client name,
        pre-registered credentials, client ID metadata document URL...); its
        ``redirect_uri`` is replaced by the one above when given.
    :param fetch_timeout: seconds each of the flow's HTTP requests may take (30 s, see
        :data:`~mcp_sansio.adapters.auth.flow.DEFAULT_FETCH_TIMEOUT`).
    :param ssl_context: TLS for the authorization server (default: the system's).
    :param grant: a grant without a browser (client credentials, workload identity,
        ID-JAG: :mod:`mcp_sansio.auth._grants`); then ``authorize`` is not needed.
    :param dpop: ask for DPoP-bound tokens where the authorization server supports them
        (RFC 9449); each request then carries a fresh proof.
    """

    def __init__(self, authorize: UserStep | None = None, *,
                 redirect_uri: str | None = None,
                 storage: TokenStorage | None = None, config: ClientConfig | None = None,
                 fetch_timeout: float = DEFAULT_FETCH_TIMEOUT,
                 ssl_context: ssl.SSLContext | None = None,
                 entropy: Callable[[int], bytes] = secrets.token_bytes,
                 clock: Callable[[], float] = time.time,
                 grant: MachineGrant | None = None, dpop: bool | None = None,
                 dpop_keys: Callable[[], Any] = new_dpop_key) -> None:
        if redirect_uri is None and authorize is not None:
            redirect_uri = getattr(authorize, "redirect_uri", None)
        if grant is None and (config is None or config.grant is None):
            if authorize is None:
                raise ValueError("OAuth needs a user step (authorize) or a grant")
            if redirect_uri is None and config is None:
                raise ValueError("OAuth needs a redirect_uri (or a ClientConfig, or an "
                                 "authorize callable with a redirect_uri)")
        if config is None:
            config = ClientConfig(redirect_uri=str(redirect_uri or ""))
        elif redirect_uri is not None:
            config = attrs.evolve(config, redirect_uri=redirect_uri)
        if grant is not None:
            config = attrs.evolve(config, grant=grant)
        if dpop is not None:
            config = attrs.evolve(config, dpop=dpop)
        self.authorize: UserStep = authorize if authorize is not None else _no_user
        self.dpop_keys = dpop_keys
        self.config = config
        self.storage = storage
        self.fetch_timeout = fetch_timeout
        self.ssl_context = ssl_context
        self.entropy = entropy
        self.clock = clock
        self._flows: dict[str, OAuthClientFlow] = {}

    def flow(self, url: str) -> OAuthClientFlow:
        """The flow for the MCP server at ``url`` (one per URL, kept across sessions)."""
        flow = self._flows.get(url)
        if flow is None:
            flow = self._flows[url] = OAuthClientFlow(url, self.config, entropy=self.entropy,
                                                      storage=self.storage,
                                                      dpop_keys=self.dpop_keys)
        return flow


def _no_user(action: UserAuthorization) -> str:
    raise AuthFlowError("authorization", action.url.split("?", 1)[0],
                        "this client has no user step (a grant without a browser)")


def as_oauth(auth: Any) -> OAuth:
    """What ``connect_http(auth=...)`` accepts, as an :class:`OAuth`: an :class:`OAuth`;
    :class:`~mcp_sansio.auth.ClientCredentials` (the client-credentials grant with them);
    or a grant (:class:`~mcp_sansio.auth.ClientCredentialsGrant`,
    :class:`~mcp_sansio.auth.JWTBearerGrant`,
    :class:`~mcp_sansio.auth.IdentityAssertionGrant`)."""
    if isinstance(auth, OAuth):
        return auth
    if isinstance(auth, ClientCredentials):
        return OAuth(grant=ClientCredentialsGrant(auth))
    if isinstance(auth, ClientCredentialsGrant | JWTBearerGrant | IdentityAssertionGrant):
        return OAuth(grant=auth)
    raise TypeError(f"auth must be OAuth, ClientCredentials or a grant, not "
                    f"{type(auth).__name__}")


#: What ``connect_http(url, auth=...)`` takes (see :func:`as_oauth`).
AuthOption = OAuth | ClientCredentials | MachineGrant


def challenge_of(error: BaseException) -> HTTPResponse | None:
    """The 401 or 403 ``insufficient_scope`` response behind ``error``, or None when it is
    not an authorization challenge (then it is raised as it is)."""
    if not isinstance(error, HTTPTransportError) or error.status not in (401, 403):
        return None
    response = HTTPResponse(error.status, error.headers, getattr(error, "body", b""))
    if error.status == 403:
        # Only insufficient_scope is a challenge (step-up); any other 403 is a refusal the
        # flow cannot fix (2025-11-25 "Scope Challenge Handling", RFC 6750 §3.1). Read as
        # the flow reads it: the error parameter of the Bearer challenge.
        params = bearer_params(response.header_values("WWW-Authenticate")) or {}
        if params.get("error") != "insufficient_scope":
            return None
    return response


class SessionAuth:
    """One session's authorization state (no I/O: the runtime's adapter carries the flow
    with :meth:`run_async` or :meth:`run_sync`)."""

    def __init__(self, oauth: Any, url: str) -> None:
        self.oauth: OAuth = as_oauth(oauth)
        self.flow = self.oauth.flow(url)
        self.tokens: Tokens | None = self._stored()
        #: Bumped each time the tokens change: a call refused with older tokens retries
        #: without running the flow again.
        self.generation = 0
        self._http: Any = None

    def _stored(self) -> Tokens | None:
        # Stored tokens, fresh or not: stale ones are refreshed before the first request
        # (due()), rather than sent to collect a 401 first.
        flow = self.flow
        issuer = flow.storage.get_issuer(flow.resource)
        return None if issuer is None else flow.storage.get_tokens(issuer, flow.resource)

    def install(self, http: Any) -> None:
        """Keep ``http``'s (a :class:`~mcp_sansio.http.HTTPClient`) ``Authorization`` header
        current from now on."""
        self._http = http
        http.request_headers = self._request_headers
        self._apply()

    def _request_headers(self, method: str, url: str) -> list[tuple[str, str]]:
        """Per request: a DPoP-bound token's proof (RFC 9449 §7.1), else nothing."""
        return self.flow.proof_headers(self.tokens, method, url, now=self.oauth.clock(),
                                       jti=b64url(self.oauth.entropy(16)))

    def _apply(self) -> None:
        http = self._http
        if http is None:
            return
        headers = [(k, v) for k, v in http.extra_headers if k.lower() != "authorization"]
        if self.tokens is not None:
            headers.append(self.tokens.authorization_header())
        http.extra_headers = headers

    def due(self) -> bool:
        """The tokens in hand are about to expire: refresh before the next request."""
        tokens = self.tokens
        return tokens is not None and not tokens.usable(self.oauth.clock(),
                                                        self.flow.config.refresh_margin)

    def _got(self, tokens: Tokens) -> None:
        self.tokens = tokens
        self.generation += 1
        self._apply()

    def succeeded(self) -> None:
        """A request went through with the current tokens (resets the challenge count)."""
        self.flow.request_succeeded()

    async def run_async(self, challenge: HTTPResponse | None,
                        in_thread: Callable[..., Awaitable[Any]], *,
                        native_fetch: bool) -> None:
        """Run the flow on an event loop. ``in_thread(fn, *args)`` runs blocking code in a
        worker thread (``asyncio.to_thread``, ``trio.to_thread.run_sync``);
        ``native_fetch``: the loop is asyncio, whose own :func:`~.flow.fetch` is
        used (else the blocking one, in a thread)."""
        oauth = self.oauth

        async def fetcher(request: Any) -> HTTPResponse:
            if native_fetch:
                return await fetch(request, timeout=oauth.fetch_timeout,
                                   ssl_context=oauth.ssl_context)
            result: HTTPResponse = await in_thread(
                lambda: fetch_sync(request, timeout=oauth.fetch_timeout,
                                   ssl_context=oauth.ssl_context))
            return result

        async def authorize(action: UserAuthorization) -> str:
            step = oauth.authorize
            if inspect.iscoroutinefunction(step) or inspect.iscoroutinefunction(
                    type(step).__call__):
                return str(await step(action))  # type: ignore[misc]
            result = await in_thread(step, action)
            if inspect.isawaitable(result):
                result = await result
            return str(result)

        self._got(await run_flow(self.flow, challenge, authorize, fetcher=fetcher,
                                 clock=oauth.clock))

    def run_sync(self, challenge: HTTPResponse | None) -> None:
        """Run the flow blocking (the threads adapter); the user step must be a plain
        function."""
        oauth = self.oauth

        def authorize(action: UserAuthorization) -> str:
            result = oauth.authorize(action)
            if inspect.isawaitable(result):
                raise TypeError("on threads the OAuth user step must be a plain function")
            return str(result)

        self._got(run_flow_sync(
            self.flow, challenge, authorize, clock=oauth.clock,
            fetcher=lambda request: fetch_sync(request, timeout=oauth.fetch_timeout,
                                               ssl_context=oauth.ssl_context)))
