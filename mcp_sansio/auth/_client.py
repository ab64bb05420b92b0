"""The OAuth 2.1 authorization-code flow of an MCP client, as a state machine without I/O.

Theory of operation
-------------------
An MCP server answers a request 401 (no or bad token) or 403 ``insufficient_scope``. The
application hands that response to :meth:`OAuthClientFlow.start`, and from then on the flow
tells it what to do next, one *action* at a time:

* :class:`HTTPRequest` -- make this request and hand the response to
  :meth:`~OAuthClientFlow.receive_response`;
* :class:`UserAuthorization` -- send the user to ``url`` and hand the URL the browser was
  redirected to (with ``code``, ``state`` and perhaps ``iss``) to
  :meth:`~OAuthClientFlow.receive_redirect`;
* :class:`Authorized` -- done: retry the MCP request with ``tokens.authorization_header()``.

Anything wrong raises an :class:`~mcp_sansio.auth.AuthFlowError` that names the step and
the URL; the flow is then over (a later :meth:`~OAuthClientFlow.start` begins again).
With :attr:`ClientConfig.grant` the same discovery leads to a grant without a browser
instead (:mod:`mcp_sansio.auth._grants`); with :attr:`ClientConfig.dpop` token requests
carry DPoP proofs and the tokens are bound to a key (:meth:`OAuthClientFlow.proof_headers`
then makes each MCP request's proof; RFC 9449).

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Generator, Mapping
from typing import Any, TypeAlias
from urllib.parse import parse_qs, urljoin, urlsplit, urlunsplit

import attrs

from . import _rules as rules
from ._answers import describe_answer, oauth_error
from ._challenge import auth_params, scheme_params
from ._errors import (
    AuthFlowError,
    AuthorizationDenied,
    IssuerMismatch,
    LimitExceeded,
    MetadataError,
    PKCENotSupported,
    RegistrationError,
    TokenError,
)
from ._grants import (
    CLIENT_ASSERTION_TYPE,
    ID_JAG_TYPE,
    ID_TOKEN_TYPE,
    JWT_BEARER,
    TOKEN_EXCHANGE,
    ClientCredentialsGrant,
    IdentityAssertionGrant,
    JWTBearerGrant,
    MachineGrant,
    client_assertion,
    current,
)
from ._http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    HTTPRequest,
    HTTPResponse,
    b64url,
    basic_credentials,
    canonical_resource,
    form_body,
    is_http_url,
)
from ._storage import ClientCredentials, MemoryStorage, Tokens, TokenStorage

_JSON_HEADERS = (("Accept", "application/json"),)
#: The authorization response's parameters the flow reads (OAuth 2.1 §4.1.2, RFC 9207 §2).
_RESPONSE_PARAMS = frozenset({"code", "state", "iss", "error", "error_description"})
_FORM = "application/x-www-form-urlencoded"


@attrs.frozen
class UserAuthorization:
    """Send the user to ``url``; answer with the redirect URL the browser comes back to."""

    url: str
    state: str
    redirect_uri: str


@attrs.frozen
class Authorized:
    """The flow is done: these tokens authorize requests to the resource."""

    tokens: Tokens


Action: TypeAlias = HTTPRequest | UserAuthorization | Authorized
_Answer: TypeAlias = HTTPResponse | str
_Gen: TypeAlias = Generator[HTTPRequest | UserAuthorization, _Answer, Tokens]


@attrs.frozen
class ClientConfig:
    """How this client presents itself to authorization servers."""

    #: Where the authorization server sends the browser back (OAuth 2.1 §2.3.1); unused
    #: (and may be left empty) with a :attr:`grant`.
    redirect_uri: str = ""
    client_name: str = "mcp-sansio"
    #: An HTTPS URL hosting this client's metadata document, used as its ``client_id`` where
    #: the server supports it (MCP 2025-11-25 "Client ID Metadata Documents").
    client_id_metadata_url: str | None = None
    #: Credentials registered out of band, by issuer (MCP 2025-11-25 "Pre-registration").
    pre_registered: Mapping[str, ClientCredentials] = attrs.field(factory=dict)
    #: ``native`` or ``web`` for dynamic registration; None derives it from the redirect URI
    #: (MCP 2026-07-28 "Application Type and Redirect URI Constraints").
    application_type: str | None = None
    #: Accept plain-HTTP authorization servers beyond loopback. Only for tests: MCP
    #: 2025-11-25 "Communication Security" requires HTTPS.
    allow_insecure_http: bool = False
    #: Ask for ``offline_access`` (a refresh token) where the authorization server lists
    #: it in ``scopes_supported`` -- and only there (MCP 2026-07-28 "Refresh Tokens").
    request_offline_access: bool = True
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_requests: int = rules.MAX_REQUESTS
    max_redirects: int = rules.MAX_REDIRECTS
    max_consecutive_challenges: int = rules.MAX_CONSECUTIVE_CHALLENGES
    refresh_margin: float = rules.REFRESH_MARGIN
    #: A grant without a browser (:mod:`mcp_sansio.auth._grants`): client credentials,
    #: JWT bearer (workload identity) or ID-JAG; None: the authorization-code flow.
    grant: MachineGrant | None = None
    #: Ask for DPoP-bound tokens (RFC 9449) where the authorization server advertises
    #: ``dpop_signing_alg_values_supported`` with the key's algorithm; the flow then needs
    #: ``dpop_keys`` (a key generator) and the requests a proof each
    #: (:meth:`OAuthClientFlow.proof_headers`).
    dpop: bool = False

    def __attrs_post_init__(self) -> None:
        url = self.client_id_metadata_url
        if url is not None:
            parts = urlsplit(url)
            if parts.scheme != "https" or parts.path in ("", "/") or parts.fragment:
                # MCP 2025-11-25 "Client ID Metadata Documents": an https URL with a path.
                raise ValueError(f"client_id_metadata_url must be an https URL with a path: "
                                 f"{url!r}")

    def derived_application_type(self) -> str:
        if self.application_type is not None:
            return self.application_type
        host = (urlsplit(self.redirect_uri).hostname or "").lower()
        scheme = urlsplit(self.redirect_uri).scheme
        native = host in rules.LOOPBACK_HOSTS or scheme not in ("http", "https")
        return "native" if native else "web"


@attrs.frozen
class ResourceMetadata:
    """The parts of an RFC 9728 document the flow uses."""

    url: str
    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None


@attrs.frozen
class ServerMetadata:
    """The parts of an RFC 8414 / OpenID Connect discovery document the flow uses."""

    url: str
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None
    code_challenge_methods_supported: tuple[str, ...]
    token_endpoint_auth_methods_supported: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None
    client_id_metadata_document_supported: bool
    iss_parameter_supported: bool
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None


class OAuthClientFlow:
    """The authorization flow of one MCP client for one MCP server (see the module doc)."""

    def __init__(
        self,
        server_url: str,
        config: ClientConfig,
        *,
        entropy: Callable[[int], bytes],
        storage: TokenStorage | None = None,
        dpop_keys: Callable[[], Mapping[str, Any]] | None = None,
    ) -> None:
        if not is_http_url(server_url):
            raise ValueError(f"not an absolute http(s) URL: {server_url!r}")
        self.server_url = server_url
        self.resource = canonical_resource(server_url)
        self.config = config
        self.storage: TokenStorage = storage if storage is not None else MemoryStorage()
        self._entropy = entropy
        self._gen: _Gen | None = None
        self._pending: HTTPRequest | UserAuthorization | None = None
        self._now = 0.0
        self._requests = 0
        self._challenges = 0
        #: Scopes asked for so far, for the step-up union (MCP 2026-07-28 step-up, step 2).
        self._requested_scopes: tuple[str, ...] = ()
        #: The last response the flow was handed, described (for the errors that give up).
        self._last_answer: str | None = None
        #: Makes a fresh private JWK for DPoP (the adapters draw it; the core has no RNG).
        self._dpop_keys = dpop_keys
        #: The DPoP key of the run in progress (None: bearer tokens).
        self._dpop_key: Any = None
        #: The last ``DPoP-Nonce`` each server gave (RFC 9449 §8 token endpoint, §9 the
        #: resource server), by the URL it applies to.
        self.dpop_nonces: dict[str, str] = {}

    # -- the application's calls -------------------------------------------------------

    def current_tokens(self, now: float) -> Tokens | None:
        """Stored tokens for this server that are still fresh, without any request."""
        issuer = self.storage.get_issuer(self.resource)
        if issuer is None:
            return None
        tokens = self.storage.get_tokens(issuer, self.resource)
        if tokens is not None and tokens.usable(now, self.config.refresh_margin):
            return tokens
        return None

    def start(self, now: float, response: HTTPResponse | None = None) -> Action:
        """Begin a run: before a request (``response`` None: use or refresh stored tokens,
        or authorize from scratch), or after the server answered 401/403 (``response``)."""
        self._now = now
        self._requests = 0
        if response is not None:
            self._challenges += 1
            if self._challenges > self.config.max_consecutive_challenges:
                self._gen = None
                raise LimitExceeded(
                    "challenge", self.server_url,
                    f"{self._challenges} challenges in a row without a successful request; "
                    "treating the authorization failure as permanent; the last answer: "
                    + describe_answer(self.server_url, response))
        self._gen = self._run(response)
        return self._advance(None)

    def receive_response(self, response: HTTPResponse, now: float) -> Action:
        """The response to the :class:`HTTPRequest` the flow asked for last."""
        if not isinstance(self._pending, HTTPRequest):
            raise RuntimeError("the flow is not waiting for an HTTP response")
        self._now = now
        self._last_answer = describe_answer(self._pending.url, response)
        return self._advance(response)

    def receive_redirect(self, redirect_url: str, now: float) -> Action:
        """The URL the user's browser was sent back to after :class:`UserAuthorization`."""
        if not isinstance(self._pending, UserAuthorization):
            raise RuntimeError("the flow is not waiting for the authorization redirect")
        self._now = now
        return self._advance(redirect_url)

    def request_succeeded(self) -> None:
        """The MCP request retried with the tokens went through: reset the challenge count."""
        self._challenges = 0

    def proof_headers(self, tokens: Tokens | None, method: str, url: str, *, now: float,
                      jti: str) -> list[tuple[str, str]]:
        """The per-request headers ``tokens`` need besides ``Authorization``: for a
        DPoP-bound token, its proof for this method and URL (RFC 9449 §7.1), with the
        resource server's nonce when it gave one (§9); else none."""
        if tokens is None or not tokens.dpop_bound:
            return []
        from .dpop import DPoPKey

        assert tokens.dpop_jwk is not None
        key = DPoPKey(tokens.dpop_jwk)
        return [("DPoP", key.proof(method, url, now=now, jti=jti,
                                   access_token=tokens.access_token,
                                   nonce=self.dpop_nonces.get(self.resource)))]

    def note_response(self, response: HTTPResponse) -> None:
        """A resource-server response passed by: keep its ``DPoP-Nonce`` (RFC 9449 §9:
        a server may hand out the next nonce on any response)."""
        nonce = response.header("DPoP-Nonce")
        if nonce:
            self.dpop_nonces[self.resource] = nonce

    # -- driving the generator -----------------------------------------------------------

    def _advance(self, answer: _Answer | None) -> Action:
        gen = self._gen
        if gen is None:
            raise RuntimeError("no run in progress; call start()")
        try:
            action = gen.send(answer) if answer is not None else next(gen)
        except StopIteration as done:
            self._gen = self._pending = None
            return Authorized(done.value)
        except AuthFlowError:
            self._gen = self._pending = None
            raise
        if isinstance(action, HTTPRequest):
            self._requests += 1
            if self._requests > self.config.max_requests:
                self._gen = self._pending = None
                raise LimitExceeded(
                    "challenge", action.url,
                    f"more than {self.config.max_requests} requests in one authorization"
                    + (f"; the last answer: {self._last_answer}" if self._last_answer else ""))
        self._pending = action
        return action

    # -- the protocol --------------------------------------------------------------------

    def _run(self, challenge: HTTPResponse | None) -> _Gen:
        params: dict[str, str] = {}
        if challenge is not None:
            values = challenge.header_values("WWW-Authenticate")
            params = auth_params(values) or {}
            nonce = challenge.header("DPoP-Nonce")
            dpop = scheme_params(values, "dpop") or {}
            if challenge.status == 401 and nonce and dpop.get("error") == "use_dpop_nonce":
                # RFC 9449 §9: the resource server wants its nonce in the proof; the token
                # is fine. (The challenge count bounds a server that keeps asking.)
                self.dpop_nonces[self.resource] = nonce
                held = self.current_tokens(self._now)
                if held is not None and held.dpop_bound:
                    return held
            if challenge.status not in (401, 403) or (
                    challenge.status == 403 and params.get("error") != "insufficient_scope"):
                # RFC 6750 §3.1: only 401, and 403 insufficient_scope, ask for (more)
                # authorization; another 403 is a refusal no token will change.
                raise AuthFlowError("challenge", self.server_url, f"a {challenge.status} "
                                    f"({params.get('error') or 'no error code'}) is not an "
                                    "authorization challenge")
        step_up = params.get("error") == "insufficient_scope"
        if challenge is None:
            fresh = self.current_tokens(self._now)
            if fresh is not None:
                return fresh
        prm = yield from self._discover_resource(params.get("resource_metadata"))
        asm = yield from self._discover_server(prm.authorization_servers[0])
        # MCP 2026-07-28 "Authorization Server Binding": credentials are per issuer.
        self.storage.set_issuer(self.resource, asm.issuer)
        tokens = self.storage.get_tokens(asm.issuer, self.resource)
        self._dpop_key = self._choose_dpop_key(asm, tokens)
        grant = self.config.grant
        if grant is not None:
            # A machine grant: re-requested, never refreshed (RFC 6749 §4.4.3).
            if (tokens is not None and challenge is None and not step_up
                    and tokens.usable(self._now, self.config.refresh_margin)):
                return tokens
            self.storage.set_tokens(asm.issuer, self.resource, None)
            scopes = self._select_scopes(params, prm, tokens if step_up else None)
            return (yield from self._machine(grant, asm, prm, scopes))
        if tokens is not None and not step_up:
            if challenge is None and tokens.usable(self._now, self.config.refresh_margin):
                return tokens
            if tokens.refresh_token:
                client = self._known_client(asm)
                if client is not None:
                    refreshed = yield from self._refresh(asm, client, tokens, prm.resource)
                    if refreshed is not None:
                        return refreshed
        self.storage.set_tokens(asm.issuer, self.resource, None)
        if not self.config.redirect_uri:
            raise AuthFlowError("authorization", asm.authorization_endpoint,
                                "no redirect_uri configured, and no grant without a browser")
        client = yield from self._client(asm)
        scopes = self._select_scopes(params, prm, tokens if step_up else None)
        return (yield from self._authorize(asm, prm, client, scopes))

    # RFC 9728 ------------------------------------------------------------------------

    def _prm_candidates(self, from_challenge: str | None) -> list[tuple[str, str]]:
        parts = urlsplit(self.server_url)
        path = parts.path.rstrip("/")
        out: list[tuple[str, str]] = []
        for source in rules.PRM_DISCOVERY_ORDER:
            if source == "challenge":
                if from_challenge is not None and is_http_url(from_challenge):
                    out.append((source, from_challenge))
            elif source == "path":
                if path:
                    out.append((source, urlunsplit(
                        (parts.scheme, parts.netloc, rules.PRM_WELL_KNOWN + path, "", ""))))
            else:
                out.append((source, urlunsplit(
                    (parts.scheme, parts.netloc, rules.PRM_WELL_KNOWN, "", ""))))
        return out

    def _discover_resource(
        self, from_challenge: str | None,
    ) -> Generator[HTTPRequest | UserAuthorization, _Answer, ResourceMetadata]:
        step = "protected-resource-metadata"
        tried: list[str] = []
        for _source, url in self._prm_candidates(from_challenge):
            response, final = yield from self._get(step, url)
            tried.append(f"{url} -> {response.status}")
            if response.status != 200:
                continue  # try the next place (MCP 2025-11-25: fall back to well-known)
            doc = self._json_object(step, final, response)
            resource = doc.get("resource")
            servers = doc.get("authorization_servers")
            if not isinstance(resource, str) or not is_http_url(resource):
                raise MetadataError(step, final, "no valid 'resource' (RFC 9728 §2)")
            if (not isinstance(servers, list) or not servers
                    or not all(is_http_url(s) for s in servers)):
                raise MetadataError(step, final, "'authorization_servers' must list at least "
                                    "one http(s) URL (MCP 2025-11-25 Authorization Server "
                                    "Location)")
            if not self._secure(servers[0]):
                raise MetadataError(step, final, f"authorization server {servers[0]!r} is not "
                                    "https (MCP 2025-11-25 Communication Security)")
            # RFC 9728 §3.3 / §7.3: the metadata must be about this resource. MCP servers
            # often name their origin or a parent path, so accept a canonical prefix.
            declared = canonical_resource(resource)
            if not _covers(declared, self.resource):
                raise MetadataError(step, final, f"resource {resource!r} does not identify "
                                    f"{self.server_url} (RFC 9728 §3.3)")
            scopes = _str_list(doc.get("scopes_supported"))
            return ResourceMetadata(final, resource, tuple(servers), scopes)
        raise MetadataError(step, self.server_url,
                            "no protected-resource metadata found; tried " + "; ".join(tried))

    # RFC 8414 / OIDC discovery ------------------------------------------------------

    def _discover_server(
        self, issuer: str,
    ) -> Generator[HTTPRequest | UserAuthorization, _Answer, ServerMetadata]:
        step = "authorization-server-metadata"
        tried: list[str] = []
        for url in as_metadata_urls(issuer):
            response, final = yield from self._get(step, url)
            tried.append(f"{url} -> {response.status}")
            if response.status != 200:
                continue
            doc = self._json_object(step, final, response)
            # RFC 8414 §3.3 / OIDC Discovery §4.3: the issuer must be the one the URL was
            # built from, character for character.
            if doc.get("issuer") != issuer:
                raise IssuerMismatch(step, final, f"document says issuer "
                                     f"{doc.get('issuer')!r}, expected {issuer!r}")
            metadata = _server_metadata(step, final, doc)
            for endpoint in (metadata.authorization_endpoint, metadata.token_endpoint,
                             metadata.registration_endpoint):
                if endpoint is not None and not self._secure(endpoint):
                    raise MetadataError(step, final, f"endpoint {endpoint!r} is not https "
                                        "(MCP 2025-11-25 Communication Security)")
            return metadata
        raise MetadataError(step, issuer, "no authorization-server metadata found; tried "
                            + "; ".join(tried))

    def _secure(self, url: str) -> bool:
        """HTTPS, or plain HTTP to this machine (MCP 2025-11-25 "Communication Security":
        authorization-server endpoints MUST be HTTPS; OAuth 2.1 §1.5 and RFC 8252 §8.3 leave
        loopback to the local machine's own protection)."""
        parts = urlsplit(url)
        if parts.scheme == "https" or self.config.allow_insecure_http:
            return True
        return (parts.hostname or "").lower() in rules.LOOPBACK_HOSTS

    # Client identity --------------------------------------------------------------

    def _known_client(self, asm: ServerMetadata) -> ClientCredentials | None:
        pre = self.config.pre_registered.get(asm.issuer)
        if pre is not None:
            return pre
        stored = self.storage.get_client(asm.issuer)
        if stored is not None and not stored.expired(self._now):
            return stored
        url = self.config.client_id_metadata_url
        if url and asm.client_id_metadata_document_supported:
            return ClientCredentials(url, token_endpoint_auth_method="none")
        return None

    def _client(
        self, asm: ServerMetadata,
    ) -> Generator[HTTPRequest | UserAuthorization, _Answer, ClientCredentials]:
        known = self._known_client(asm)
        if known is not None:
            return known
        step = "registration"
        if asm.registration_endpoint is None:
            other = sorted(set(self.config.pre_registered) - {asm.issuer})
            hint = (f"; pre-registered credentials exist only for {other} (MCP 2026-07-28: "
                    "never reuse them with another authorization server)" if other else "")
            raise RegistrationError(step, asm.issuer, "no pre-registered credentials, no "
                                    "client ID metadata document support and no "
                                    "registration_endpoint" + hint)
        body = {
            "client_name": self.config.client_name,
            "redirect_uris": [self.config.redirect_uri],
            "grant_types": list(rules.GRANT_TYPES),
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": self.config.derived_application_type(),
        }
        request = HTTPRequest(
            "POST", asm.registration_endpoint,
            (("Content-Type", "application/json"), *_JSON_HEADERS),
            json.dumps(body).encode(), self.config.max_response_bytes)
        response = yield from self._exchange(step, request)
        if response.status not in (200, 201):
            raise RegistrationError(step, request.url, f"answered {response.status}: "
                                    f"{oauth_error(response, described=True)}")
        doc = self._json_object(step, request.url, response)
        client_id = doc.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise RegistrationError(step, request.url, "no client_id (RFC 7591 §3.2.1)")
        secret = doc.get("client_secret")
        method = doc.get("token_endpoint_auth_method")
        expires = doc.get("client_secret_expires_at")
        credentials = ClientCredentials(
            client_id, secret if isinstance(secret, str) else None,
            method if isinstance(method, str) else None,
            float(expires) if isinstance(expires, int | float) and not isinstance(
                expires, bool) else None)
        self.storage.set_client(asm.issuer, credentials)
        return credentials

    # Authorization code + PKCE -------------------------------------------------------

    def _select_scopes(self, params: dict[str, str], prm: ResourceMetadata,
                       previous: Tokens | None) -> tuple[str, ...]:
        challenged = tuple(params.get("scope", "").split())
        if challenged:
            chosen = challenged
        elif prm.scopes_supported:
            chosen = prm.scopes_supported
        else:
            chosen = ()
        if previous is not None or self._requested_scopes:
            before = list(self._requested_scopes)
            if previous is not None and previous.scope:
                before += previous.scope.split()
            chosen = tuple(dict.fromkeys([*before, *chosen]))
        return chosen

    def _authorize(
        self, asm: ServerMetadata, prm: ResourceMetadata, client: ClientCredentials,
        scopes: tuple[str, ...],
    ) -> _Gen:
        if rules.PKCE_METHOD not in asm.code_challenge_methods_supported:
            raise PKCENotSupported("authorization", asm.url, "code_challenge_methods_supported "
                                   f"is {list(asm.code_challenge_methods_supported)}; MCP "
                                   "requires S256 and refuses to proceed without it")
        verifier = b64url(self._entropy(rules.VERIFIER_BYTES))
        state = b64url(self._entropy(rules.STATE_BYTES))
        challenge = b64url(hashlib.sha256(verifier.encode("ascii")).digest())
        resource = prm.resource
        query = [
            ("response_type", "code"),
            ("client_id", client.client_id),
            ("redirect_uri", self.config.redirect_uri),
            ("code_challenge", challenge),
            ("code_challenge_method", rules.PKCE_METHOD),
            ("state", state),
            ("resource", resource),  # RFC 8707 §2.1
        ]
        self._requested_scopes = scopes
        if (scopes and self.config.request_offline_access and asm.scopes_supported
                and rules.OFFLINE_ACCESS in asm.scopes_supported
                and rules.OFFLINE_ACCESS not in scopes):
            scopes = (*scopes, rules.OFFLINE_ACCESS)
        if scopes:
            query.append(("scope", " ".join(scopes)))
        url = _with_query(asm.authorization_endpoint, form_body(query).decode("ascii"))
        answer = yield UserAuthorization(url, state, self.config.redirect_uri)
        code = self._check_redirect(asm, answer, state)
        fields = [("grant_type", "authorization_code"), ("code", code),
                  ("redirect_uri", self.config.redirect_uri), ("code_verifier", verifier),
                  ("resource", resource)]
        tokens = yield from self._token_request("token", asm, client, fields, None,
                                                " ".join(scopes) or None)
        assert tokens is not None  # the token step raises rather than answer None
        return tokens

    def _check_redirect(self, asm: ServerMetadata, answer: _Answer, state: str) -> str:
        step = "authorization-response"
        if not isinstance(answer, str):
            raise AuthorizationDenied(step, None, "expected the redirect URL")
        try:
            query = parse_qs(urlsplit(answer).query, keep_blank_values=True)
        except ValueError:
            query = {}
        repeated = sorted(k for k, v in query.items() if len(v) > 1 and k in _RESPONSE_PARAMS)
        if repeated:
            # OAuth 2.1 §4.1.2 / RFC 6749 §3.1: a parameter appears at most once; which copy
            # to believe is exactly what an attacker would like to choose.
            raise AuthorizationDenied(step, asm.authorization_endpoint,
                                      f"parameter(s) {', '.join(repeated)} repeated")
        got: dict[str, str] = {k: v[0] for k, v in query.items()}
        # RFC 9207 §2.4 first (MCP 2026-07-28: before acting on or showing any error).
        action = rules.ISS_CHECK[(asm.iss_parameter_supported, "iss" in got)]
        if action == "reject":
            raise IssuerMismatch(step, asm.issuer, "the server advertises "
                                 "authorization_response_iss_parameter_supported but the "
                                 "redirect carries no iss (RFC 9207 §2.4)")
        if action == "compare" and got["iss"] != asm.issuer:
            raise IssuerMismatch(step, asm.issuer, f"redirect iss {got['iss']!r} is not the "
                                 "issuer the request went to (RFC 9207 §2.4)")
        if got.get("state") != state:
            raise AuthorizationDenied(step, asm.authorization_endpoint,
                                      "state does not match the request (OAuth 2.1 §7.12)")
        if "error" in got:
            raise AuthorizationDenied(step, asm.authorization_endpoint,
                                      f"{got['error']}: {got.get('error_description', '')}",
                                      got["error"])
        code = got.get("code")
        if not code:
            raise AuthorizationDenied(step, asm.authorization_endpoint, "no code in redirect")
        return code

    # Grants without a browser (mcp_sansio.auth._grants) -------------------------------

    def _machine(self, grant: MachineGrant, asm: ServerMetadata, prm: ResourceMetadata,
                 scopes: tuple[str, ...]) -> _Gen:
        scope = grant.scope if grant.scope is not None else (" ".join(scopes) or None)
        self._requested_scopes = tuple((scope or "").split())
        resource = prm.resource
        fields: list[tuple[str, str]]
        client: ClientCredentials | None
        if isinstance(grant, ClientCredentialsGrant):
            fields = [("grant_type", "client_credentials")]
            client = grant.credentials
        elif isinstance(grant, JWTBearerGrant):
            fields = [("grant_type", JWT_BEARER),
                      ("assertion", current(grant.assertion, self._now))]
            client = grant.client
            if client is None and grant.client_id is not None:
                client = ClientCredentials(grant.client_id, token_endpoint_auth_method="none")
        else:
            jag = yield from self._identity_assertion(grant, asm, resource)
            fields = [("grant_type", JWT_BEARER), ("assertion", jag)]
            client = grant.client
        if scope:
            fields.append(("scope", scope))
        fields.append(("resource", resource))  # RFC 8707 §2.1
        tokens = yield from self._token_request("token", asm, client, fields, None, scope)
        assert tokens is not None
        return tokens

    def _identity_assertion(
        self, grant: IdentityAssertionGrant, asm: ServerMetadata, resource: str,
    ) -> Generator[HTTPRequest | UserAuthorization, _Answer, str]:
        """RFC 8693 §2.1 at the enterprise IdP: the ID token for an ID-JAG naming this
        authorization server (``audience``) and this resource."""
        step = "token-exchange"
        url = grant.idp_token_endpoint
        if not is_http_url(url) or not self._secure(url):
            raise TokenError(step, url, "the IdP token endpoint must be an https URL")
        fields = [("grant_type", TOKEN_EXCHANGE),
                  ("requested_token_type", ID_JAG_TYPE),
                  ("subject_token", current(grant.id_token, self._now)),
                  ("subject_token_type", ID_TOKEN_TYPE),
                  ("audience", asm.issuer), ("resource", resource)]
        headers = [("Content-Type", _FORM), *_JSON_HEADERS]
        idp = grant.idp_client
        if idp.client_secret is not None:
            headers.append(("Authorization", basic_credentials(idp.client_id,
                                                               idp.client_secret)))
        else:
            fields.append(("client_id", idp.client_id))
        request = HTTPRequest("POST", url, tuple(headers), form_body(fields),
                              self.config.max_response_bytes)
        response = yield from self._exchange(step, request)
        if response.status != 200:
            raise TokenError(step, url, f"answered {response.status}: "
                             f"{oauth_error(response, described=True)}", oauth_error(response))
        doc = self._json_object(step, url, response)
        jag = doc.get("access_token")
        if doc.get("issued_token_type") != ID_JAG_TYPE or not isinstance(jag, str) or not jag:
            raise TokenError(step, url, "no ID-JAG in the answer (issued_token_type "
                             f"{doc.get('issued_token_type')!r}, RFC 8693 §2.2.1)")
        return jag

    # DPoP (RFC 9449) -----------------------------------------------------------------

    def _choose_dpop_key(self, asm: ServerMetadata, previous: Tokens | None) -> Any:
        """The key for this run's token requests, or None for bearer tokens: DPoP when
        configured and the server lists ES256 (RFC 9449 §5.1); a refresh keeps the key
        the refresh token is bound to (§5)."""
        algs = asm.dpop_signing_alg_values_supported
        if not self.config.dpop or not algs or self._dpop_keys is None:
            return None
        from .dpop import DPoPKey

        if previous is not None and previous.dpop_bound:
            assert previous.dpop_jwk is not None
            return DPoPKey(previous.dpop_jwk)
        key = DPoPKey(self._dpop_keys())
        return key if key.alg in algs else None

    # Token endpoint -------------------------------------------------------------------

    def _refresh(
        self, asm: ServerMetadata, client: ClientCredentials, tokens: Tokens, resource: str,
    ) -> Generator[HTTPRequest | UserAuthorization, _Answer, Tokens | None]:
        assert tokens.refresh_token is not None
        # RFC 8707 §2.2: the resource again, exactly as the metadata published it.
        fields = [("grant_type", "refresh_token"), ("refresh_token", tokens.refresh_token),
                  ("resource", resource)]
        return (yield from self._token_request("refresh", asm, client, fields, tokens,
                                               tokens.scope))

    def _token_post(self, asm: ServerMetadata, client: ClientCredentials | None,
                    fields: list[tuple[str, str]]) -> HTTPRequest:
        """One token request: client authentication (OAuth 2.1 §2.4; RFC 7523 §2.2) and,
        with a DPoP key, a fresh proof (RFC 9449 §5) -- made anew for each attempt, so a
        retry never repeats an assertion's or a proof's ``jti``."""
        headers = [("Content-Type", _FORM), *_JSON_HEADERS]
        fields = list(fields)
        method = ("none" if client is None
                  else choose_auth_method(client, asm.token_endpoint_auth_methods_supported))
        if client is not None and method == "client_secret_basic":
            assert client.client_secret is not None
            headers.append(("Authorization",
                            basic_credentials(client.client_id, client.client_secret)))
        elif client is not None and method == "private_key_jwt":
            jti = b64url(self._entropy(rules.STATE_BYTES))
            fields += [("client_assertion_type", CLIENT_ASSERTION_TYPE),
                       ("client_assertion", client_assertion(client, asm.issuer,
                                                             now=self._now, jti=jti))]
        elif client is not None:
            fields.append(("client_id", client.client_id))
            if method == "client_secret_post":
                assert client.client_secret is not None
                fields.append(("client_secret", client.client_secret))
        url = asm.token_endpoint
        if self._dpop_key is not None:
            headers.append(("DPoP", self._dpop_key.proof(
                "POST", url, now=self._now, jti=b64url(self._entropy(rules.STATE_BYTES)),
                nonce=self.dpop_nonces.get(url))))
        return HTTPRequest("POST", url, tuple(headers), form_body(fields),
                           self.config.max_response_bytes)

    def _token_request(
        self, step: str, asm: ServerMetadata, client: ClientCredentials | None,
        fields: list[tuple[str, str]], previous: Tokens | None, scope: str | None,
    ) -> Generator[HTTPRequest | UserAuthorization, _Answer, Tokens | None]:
        request = self._token_post(asm, client, fields)
        response = yield from self._exchange(step, request)
        nonce = response.header("DPoP-Nonce")
        if self._dpop_key is not None and nonce:
            self.dpop_nonces[request.url] = nonce
            if response.status in (400, 401) and oauth_error(response) == "use_dpop_nonce":
                # RFC 9449 §8: answer the nonce challenge once, with a new proof.
                request = self._token_post(asm, client, fields)
                response = yield from self._exchange(step, request)
        if response.status != 200:
            if step == "refresh" and response.status in (400, 401):
                # OAuth 2.1 §4.3 / §3.2.4: the refresh token is no good (invalid_grant);
                # forget it and authorize from scratch.
                return None
            raise TokenError(step, request.url, f"answered {response.status}: "
                             f"{oauth_error(response, described=True)}", oauth_error(response))
        doc = self._json_object(step, request.url, response)
        access = doc.get("access_token")
        token_type = doc.get("token_type")
        if not isinstance(access, str) or not access:
            raise TokenError(step, request.url, "no access_token (OAuth 2.1 §3.2.3)")
        bound = self._dpop_key is not None and isinstance(token_type, str) and (
            token_type.lower() == "dpop")
        if not bound and (not isinstance(token_type, str) or token_type.lower() != "bearer"):
            # RFC 9449 §5: DPoP only in answer to a request that carried a proof.
            raise TokenError(step, request.url, f"token_type {token_type!r} is not Bearer"
                             + ("" if self._dpop_key is not None else
                                " (and no DPoP proof was sent)"))
        expires_in = doc.get("expires_in")
        expires_at = None
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
            if expires_in < 0:
                raise TokenError(step, request.url, "negative expires_in")
            expires_at = self._now + float(expires_in)
        refresh = doc.get("refresh_token")
        granted = doc.get("scope")
        tokens = Tokens(
            access_token=access, issuer=asm.issuer, resource=self.resource,
            token_endpoint=asm.token_endpoint, expires_at=expires_at,
            # OAuth 2.1 §4.3.3: a refresh response may omit a new refresh token.
            refresh_token=refresh if isinstance(refresh, str) else (
                previous.refresh_token if previous else None),
            scope=granted if isinstance(granted, str) else scope,
            token_type="DPoP" if bound else "Bearer",
            dpop_jwk=self._dpop_key.private_jwk() if bound else None)
        self.storage.set_tokens(asm.issuer, self.resource, tokens)
        return tokens

    # Plumbing ----------------------------------------------------------------------

    def _get(
        self, step: str, url: str,
    ) -> Generator[HTTPRequest | UserAuthorization, _Answer, tuple[HTTPResponse, str]]:
        """GET ``url``, following at most ``max_redirects`` redirects; (response, final URL)."""
        for _ in range(self.config.max_redirects + 1):
            request = HTTPRequest("GET", url, _JSON_HEADERS,
                                  max_response_bytes=self.config.max_response_bytes)
            response = yield from self._exchange(step, request)
            if response.status not in rules.REDIRECT_STATUSES:
                return response, url
            location = response.header("Location")
            target = urljoin(url, location) if location else None
            if target is None or not is_http_url(target):
                raise MetadataError(step, url, f"redirect {response.status} without a usable "
                                    "Location")
            url = target
        raise LimitExceeded(step, url, f"more than {self.config.max_redirects} redirects")

    def _exchange(
        self, step: str, request: HTTPRequest,
    ) -> Generator[HTTPRequest | UserAuthorization, _Answer, HTTPResponse]:
        answer = yield request
        if not isinstance(answer, HTTPResponse):
            raise AuthFlowError(step, request.url, "expected an HTTP response")
        if len(answer.body) > request.max_response_bytes:
            raise LimitExceeded(step, request.url, f"response body of {len(answer.body)} "
                                f"bytes exceeds {request.max_response_bytes}")
        return answer

    def _json_object(self, step: str, url: str, response: HTTPResponse) -> dict[str, Any]:
        try:
            doc = json.loads(response.body)
        except (ValueError, RecursionError) as exc:
            raise MetadataError(step, url, f"body is not JSON ({exc.__class__.__name__})"
                                ) from None
        if not isinstance(doc, dict):
            raise MetadataError(step, url, "body is not a JSON object")
        return doc


def as_metadata_urls(issuer: str) -> list[str]:
    """The authorization-server metadata URLs for ``issuer``, in the order they are tried
    (:data:`~mcp_sansio.auth._rules.AS_DISCOVERY_ORDER`)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    out: list[str] = []
    for suffix, how in rules.AS_DISCOVERY_ORDER:
        full = suffix + path if how == "insert" else path + suffix
        url = urlunsplit((parts.scheme, parts.netloc, full, "", ""))
        if url not in out:
            out.append(url)
    return out


def choose_auth_method(client: ClientCredentials, supported: tuple[str, ...]) -> str:
    """The token-endpoint client authentication to use (OAuth 2.1 §2.4, RFC 8414 §2;
    a client with a private key signs assertions, RFC 7523 §2.2)."""
    if client.private_key:
        return "private_key_jwt"
    if client.client_secret is None:
        return "none"
    registered = client.token_endpoint_auth_method
    if registered in rules.AUTH_METHODS_WITH_SECRET or registered == "none":
        return registered
    for method in rules.AUTH_METHODS_WITH_SECRET:
        if method in supported:
            return method
    if "none" in supported:
        # A secret the server handed out anyway, where it authenticates nobody: a public
        # client (OAuth 2.1 §2.1), as the registration asked.
        return "none"
    return rules.AUTH_METHODS_WITH_SECRET[0]


def _server_metadata(step: str, url: str, doc: dict[str, Any]) -> ServerMetadata:
    def endpoint(name: str, required: bool) -> str | None:
        value = doc.get(name)
        if value is None and not required:
            return None
        if not is_http_url(value):
            raise MetadataError(step, url, f"{name} must be an http(s) URL (RFC 8414 §2)")
        assert isinstance(value, str)
        return value

    authorization = endpoint("authorization_endpoint", True)
    token = endpoint("token_endpoint", True)
    assert authorization is not None and token is not None
    return ServerMetadata(
        url=url, issuer=doc["issuer"], authorization_endpoint=authorization,
        token_endpoint=token, registration_endpoint=endpoint("registration_endpoint", False),
        code_challenge_methods_supported=_str_list(
            doc.get("code_challenge_methods_supported")) or (),
        token_endpoint_auth_methods_supported=_str_list(
            doc.get("token_endpoint_auth_methods_supported"))
        or rules.DEFAULT_AUTH_METHODS_SUPPORTED,
        scopes_supported=_str_list(doc.get("scopes_supported")),
        client_id_metadata_document_supported=doc.get(
            "client_id_metadata_document_supported") is True,
        iss_parameter_supported=doc.get(
            "authorization_response_iss_parameter_supported") is True,
        dpop_signing_alg_values_supported=_str_list(
            doc.get("dpop_signing_alg_values_supported")),
    )


def _str_list(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _covers(declared: str, resource: str) -> bool:
    if declared == resource:
        return True
    return resource.startswith(declared.rstrip("/") + "/")


def _with_query(url: str, query: str) -> str:
    parts = urlsplit(url)
    joined = f"{parts.query}&{query}" if parts.query else query
    return urlunsplit((parts.scheme, parts.netloc, parts.path, joined, ""))
