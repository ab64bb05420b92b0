"""A development OAuth 2.1 authorization server, sans I/O: to try the OAuth client and to test
a protected server without writing one. Never for production (its users are whoever it is
told they are).

Theory of operation
-------------------
:meth:`AuthorizationServer.handle` takes one :class:`~mcp_sansio.auth.HTTPRequest` and the
time and returns the :class:`~mcp_sansio.auth.HTTPResponse`; the adapter
(``mcp-sansio dev-auth-server``, :mod:`mcp_sansio.adapters.tools._dev_auth_server`) serves
it on loopback. What it serves, each path under the issuer:

* the metadata (RFC 8414 §3) at ``/.well-known/oauth-authorization-server``;
* ``/register``: dynamic registration (RFC 7591), beside :meth:`register` for clients
  registered beforehand;
* ``/authorize``: the authorization code grant with PKCE ``S256`` only (OAuth 2.1 §4.1,
  RFC 7636), approved at once as :attr:`user` -- or, with ``user=None``, a page asking which
  user approves -- and ``iss`` on the redirect (RFC 9207);
* ``/token``: ``authorization_code``, ``refresh_token`` (rotated, OAuth 2.1 §4.3.1) and
  ``client_credentials`` (confidential clients, OAuth 2.1 §4.2);
* ``/jwks``: the public key of the ES256 key every access token is signed with: JWTs naming
  the issuer, the ``resource`` asked for as ``aud`` (RFC 8707), the subject and the scopes
  (:meth:`issue` makes one directly). :meth:`verifier` is the matching
  :class:`~mcp_sansio.auth.jwt.JWTVerifier`.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import attrs

from ..auth import HTTPRequest, HTTPResponse

__all__ = ["AuthorizationServer", "Client"]

#: Grants served (RFC 8414 ``grant_types_supported``).
GRANTS = ("authorization_code", "refresh_token", "client_credentials")
#: How clients may authenticate at the token endpoint (RFC 8414, OAuth 2.1 §2.4.1).
AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
#: How long a code is good for (OAuth 2.1 §4.1.2: short-lived; 10 minutes at most).
CODE_LIFETIME = 300.0


@attrs.define
class Client:
    """A registered client."""

    client_id: str
    redirect_uris: tuple[str, ...] = ()
    #: None for a public client (``token_endpoint_auth_method`` ``none``).
    secret: str | None = None
    name: str = ""


@attrs.define
class _Grant:
    client_id: str
    subject: str
    scopes: tuple[str, ...]
    resource: str | None
    expires: float = 0.0
    redirect_uri: str = ""
    challenge: str = ""


def _json(doc: Any, status: int = 200) -> HTTPResponse:
    return HTTPResponse(status, (("Content-Type", "application/json"),
                                 ("Cache-Control", "no-store")), json.dumps(doc).encode())


def _oauth_error(error: str, description: str, status: int = 400) -> HTTPResponse:
    return _json({"error": error, "error_description": description}, status)


def _page(status: int, text: str) -> HTTPResponse:
    return HTTPResponse(status, (("Content-Type", "text/html; charset=utf-8"),),
                        f"<!doctype html><title>dev-auth-server</title>{text}".encode())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class AuthorizationServer:
    """The logic of a development authorization server (see the module docstring).

    :param issuer: its URL (``http://127.0.0.1:PORT``: where the adapter serves it).
    :param key: the private ES256 key as a JWK (a dict with ``kid``); the adapter draws one.
    :param entropy: ``entropy(n)`` -> n random bytes, for codes, tokens and client ids.
    :param user: the subject every authorization is approved for at once; None: the
        authorization endpoint asks (a page with a user field, approve and deny).
    :param scopes: the scopes it advertises and grants; a request for another is refused
        (``invalid_scope``). None: any scope is granted.
    :param token_lifetime: seconds an access token lives.
    """

    def __init__(self, issuer: str, key: Mapping[str, Any], entropy: Callable[[int], bytes],
                 *, user: str | None = "dev-user",
                 scopes: Iterable[str] | None = ("mcp:read", "mcp:write"),
                 token_lifetime: int = 3600) -> None:
        from joserfc.jwk import ECKey

        self.issuer = issuer.rstrip("/")
        self._key = ECKey.import_key(dict(key))
        if self._key.kid is None:
            raise ValueError("the key needs a kid (the JWKS names it)")
        self.entropy = entropy
        self.user = user
        self.scopes = None if scopes is None else tuple(scopes)
        self.token_lifetime = token_lifetime
        self.clients: dict[str, Client] = {}
        self._codes: dict[str, _Grant] = {}
        self._refresh: dict[str, _Grant] = {}
        self._pending: dict[str, dict[str, str]] = {}
        #: Every access token issued, newest last (for tests to look at).
        self.issued: list[str] = []
        prefix = urlsplit(self.issuer).path
        self._routes: dict[tuple[str, str], Callable[[HTTPRequest, float], HTTPResponse]] = {
            ("GET", "/.well-known/oauth-authorization-server" + prefix): self._metadata,
            ("GET", prefix + "/jwks"): self._jwks,
            ("POST", prefix + "/register"): self._register,
            ("GET", prefix + "/authorize"): self._authorize,
            ("GET", prefix + "/approve"): self._approve,
            ("POST", prefix + "/token"): self._token,
        }

    # -- what a test or an operator calls ------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 §2 document."""
        doc: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.issuer + "/authorize",
            "token_endpoint": self.issuer + "/token",
            "registration_endpoint": self.issuer + "/register",
            "jwks_uri": self.issuer + "/jwks",
            "response_types_supported": ["code"],
            "grant_types_supported": list(GRANTS),
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
        }
        if self.scopes is not None:
            doc["scopes_supported"] = list(self.scopes)
        return doc

    def jwks(self) -> dict[str, Any]:
        """The public key set (``jwks_uri``)."""
        return {"keys": [self._key.as_dict(private=False)]}

    def verifier(self, resource: str, **options: Any) -> Any:
        """A :class:`~mcp_sansio.auth.jwt.JWTVerifier` for this issuer's tokens meant for
        ``resource``, holding its key set."""
        from ..auth.jwt import JWTVerifier

        return JWTVerifier(self.jwks(), issuer=self.issuer, audience=resource, **options)

    def register(self, redirect_uris: Iterable[str] = (), *, confidential: bool = False,
                 client_id: str | None = None, name: str = "") -> Client:
        """Register a client beforehand (MCP "Pre-registration"); a confidential one gets a
        secret (for ``client_credentials``, or a web application)."""
        client = Client(client_id or "client-" + _b64(self.entropy(9)), tuple(redirect_uris),
                        _b64(self.entropy(24)) if confidential else None, name)
        self.clients[client.client_id] = client
        return client

    def issue(self, subject: str, resource: str | None, scopes: Iterable[str], now: float,
              *, client_id: str = "dev-client", lifetime: float | None = None) -> str:
        """A signed access token (a JWT, RFC 9068's claims) for ``resource``."""
        from joserfc import jwt

        claims: dict[str, Any] = {
            "iss": self.issuer, "sub": subject, "client_id": client_id, "iat": int(now),
            "exp": int(now + (self.token_lifetime if lifetime is None else lifetime)),
            "jti": _b64(self.entropy(12)), "scope": " ".join(scopes),
        }
        if resource is not None:
            claims["aud"] = resource
        token = jwt.encode({"alg": "ES256", "kid": self._key.kid, "typ": "at+jwt"}, claims,
                           self._key)
        self.issued.append(token)
        return token

    def handle(self, request: HTTPRequest, now: float) -> HTTPResponse:
        """The answer to one HTTP request; never raises for what a peer sent."""
        parts = urlsplit(request.url)
        route = self._routes.get((request.method.upper(), parts.path))
        if route is None:
            if any(path == parts.path for _, path in self._routes):
                return HTTPResponse(405)
            return _json({"error": "not_found", "error_description": parts.path}, 404)
        try:
            return route(request, now)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            return _oauth_error("invalid_request", f"unreadable request: {exc}")

    # -- the endpoints -------------------------------------------------------------------

    def _metadata(self, request: HTTPRequest, now: float) -> HTTPResponse:
        return _json(self.metadata())

    def _jwks(self, request: HTTPRequest, now: float) -> HTTPResponse:
        return _json(self.jwks())

    def _register(self, request: HTTPRequest, now: float) -> HTTPResponse:
        doc = json.loads(request.body or b"{}")
        if not isinstance(doc, dict):
            return _oauth_error("invalid_client_metadata", "the body is not a JSON object")
        uris = doc.get("redirect_uris") or []
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            return _oauth_error("invalid_redirect_uri", "redirect_uris must be a list of URLs")
        grants = doc.get("grant_types") or ["authorization_code"]
        if "authorization_code" in grants and not uris:
            return _oauth_error("invalid_redirect_uri", "authorization_code needs "
                                "redirect_uris (RFC 7591 §2)")
        method = doc.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in AUTH_METHODS:
            return _oauth_error("invalid_client_metadata",
                                f"token_endpoint_auth_method {method!r} is not supported")
        client = self.register(uris, confidential=method != "none",
                               name=str(doc.get("client_name", "")))
        answer = {**doc, "client_id": client.client_id, "client_id_issued_at": int(now),
                  "token_endpoint_auth_method": method, "grant_types": grants}
        if client.secret is not None:
            answer.update(client_secret=client.secret, client_secret_expires_at=0)
        return _json(answer, 201)

    def _authorize(self, request: HTTPRequest, now: float) -> HTTPResponse:
        query = {k: v[0] for k, v in parse_qs(urlsplit(request.url).query).items()}
        client = self.clients.get(query.get("client_id", ""))
        if client is None:
            return _page(400, "<p>Unknown client_id.</p>")
        redirect = query.get("redirect_uri", "")
        if redirect not in client.redirect_uris:
            # OAuth 2.1 §4.1.2.1: never redirect to a URI that is not the client's.
            return _page(400, "<p>redirect_uri is not registered for this client.</p>")
        refusal = self._refuse_authorization(query)
        if refusal is not None:
            return self._back(redirect, query.get("state"), error=refusal[0],
                              error_description=refusal[1])
        if self.user is not None:
            return self._grant(query, self.user, now)
        ticket = _b64(self.entropy(12))
        self._pending[ticket] = query
        return _page(200, (
            f"<p>{html.escape(client.name or client.client_id)} asks for "
            f"<code>{html.escape(query.get('scope', '(no scope)'))}</code>.</p>"
            f'<form action="approve"><input type="hidden" name="ticket" value="{ticket}">'
            '<label>user <input name="user" value="dev-user"></label> '
            '<button name="decision" value="approve">Approve</button> '
            '<button name="decision" value="deny">Deny</button></form>'))

    def _refuse_authorization(self, query: Mapping[str, str]) -> tuple[str, str] | None:
        if query.get("response_type") != "code":
            return "unsupported_response_type", "only response_type=code"
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return "invalid_request", "PKCE with S256 is required (OAuth 2.1 §4.1.1)"
        unknown = self._unknown_scopes(query.get("scope", ""))
        if unknown:
            return "invalid_scope", f"not granted here: {' '.join(unknown)}"
        return None

    def _unknown_scopes(self, scope: str) -> list[str]:
        if self.scopes is None:
            return []
        return [s for s in scope.split() if s not in self.scopes]

    def _approve(self, request: HTTPRequest, now: float) -> HTTPResponse:
        query = {k: v[0] for k, v in parse_qs(urlsplit(request.url).query).items()}
        asked = self._pending.pop(query.get("ticket", ""), None)
        if asked is None:
            return _page(400, "<p>Unknown or used ticket.</p>")
        if query.get("decision") != "approve":
            return self._back(asked["redirect_uri"], asked.get("state"), error="access_denied",
                              error_description="the user denied the request")
        return self._grant(asked, query.get("user") or "dev-user", now)

    def _grant(self, query: Mapping[str, str], subject: str, now: float) -> HTTPResponse:
        code = _b64(self.entropy(24))
        self._codes[code] = _Grant(query["client_id"], subject, tuple(
            query.get("scope", "").split()), query.get("resource"), now + CODE_LIFETIME,
            query["redirect_uri"], query["code_challenge"])
        return self._back(query["redirect_uri"], query.get("state"), code=code)

    def _back(self, redirect: str, state: str | None, **params: str) -> HTTPResponse:
        params["iss"] = self.issuer
        if state is not None:
            params["state"] = state
        joiner = "&" if urlsplit(redirect).query else "?"
        return HTTPResponse(302, (("Location", redirect + joiner + urlencode(params)),))

    def _token(self, request: HTTPRequest, now: float) -> HTTPResponse:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        client, refusal = self._client_of(request, form)
        if client is None:
            return refusal or _oauth_error("invalid_client", "unknown client", 401)
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            grant = self._codes.pop(form.get("code", ""), None)
            if grant is None or grant.expires < now or grant.client_id != client.client_id:
                return _oauth_error("invalid_grant", "unknown, used or expired code")
            if form.get("redirect_uri", grant.redirect_uri) != grant.redirect_uri:
                return _oauth_error("invalid_grant", "redirect_uri differs from the "
                                    "authorization request's")
            verifier = form.get("code_verifier", "")
            if _b64(hashlib.sha256(verifier.encode()).digest()) != grant.challenge:
                return _oauth_error("invalid_grant", "code_verifier does not match the "
                                    "code_challenge (RFC 7636 §4.6)")
            grant.resource = form.get("resource", grant.resource)
            return self._tokens(grant, now, refresh=True)
        if grant_type == "refresh_token":
            grant = self._refresh.pop(form.get("refresh_token", ""), None)
            if grant is None or grant.client_id != client.client_id:
                return _oauth_error("invalid_grant", "unknown or used refresh token")
            asked = form.get("scope")
            if asked is not None and not set(asked.split()) <= set(grant.scopes):
                return _oauth_error("invalid_scope", "a refresh cannot widen the scope")
            grant = attrs.evolve(grant, scopes=tuple(asked.split()) if asked else grant.scopes,
                                 resource=form.get("resource", grant.resource))
            return self._tokens(grant, now, refresh=True)
        if grant_type == "client_credentials":
            if client.secret is None:
                return _oauth_error("unauthorized_client", "client_credentials needs a "
                                    "confidential client")
            scope = form.get("scope", "")
            unknown = self._unknown_scopes(scope)
            if unknown:
                return _oauth_error("invalid_scope", f"not granted here: {' '.join(unknown)}")
            return self._tokens(_Grant(client.client_id, client.client_id,
                                       tuple(scope.split()), form.get("resource")), now,
                                refresh=False)
        return _oauth_error("unsupported_grant_type", f"grant_type {grant_type!r}")

    def _client_of(self, request: HTTPRequest, form: Mapping[str, str]
                   ) -> tuple[Client | None, HTTPResponse | None]:
        """The authenticated client (OAuth 2.1 §2.4.1), or the refusal."""
        client_id, secret = form.get("client_id"), form.get("client_secret")
        basic = request.header("Authorization")
        if basic and basic.lower().startswith("basic "):
            from urllib.parse import unquote

            pair = base64.b64decode(basic[6:].strip()).decode()
            client_id, _, secret = pair.partition(":")
            client_id, secret = unquote(client_id), unquote(secret)
        client = self.clients.get(client_id or "")
        if client is None:
            return None, _oauth_error("invalid_client", "unknown client_id", 401)
        if client.secret is not None and secret != client.secret:
            return None, _oauth_error("invalid_client", "wrong or missing client secret", 401)
        return client, None

    def _tokens(self, grant: _Grant, now: float, *, refresh: bool) -> HTTPResponse:
        doc: dict[str, Any] = {
            "access_token": self.issue(grant.subject, grant.resource, grant.scopes, now,
                                       client_id=grant.client_id),
            "token_type": "Bearer", "expires_in": self.token_lifetime,
            "scope": " ".join(grant.scopes),
        }
        if refresh:
            token = _b64(self.entropy(24))
            self._refresh[token] = grant
            doc["refresh_token"] = token
        return _json(doc)
