"""The resource-server side: metadata document, challenges, bearer tokens, verification.

Theory of operation
-------------------
A protected MCP server is an OAuth 2.1 resource server (MCP 2025-06-18 and later,
basic/authorization.mdx "Roles"). It needs four things, all pure and here:

* the protected-resource metadata document (RFC 9728 §2) and the path it is served at
  (:func:`protected_resource_metadata`, :func:`metadata_url`);
* the access token of a request, from the ``Authorization`` header only
  (:func:`extract_bearer_token`; OAuth 2.1 §5.1 and MCP "Access tokens MUST NOT be included
  in the URI query string": a token in the query is refused, not ignored);
* a decision on the token, by a :class:`TokenVerifier` the application supplies (the core
  never fetches: a JWT verifier gets its keys handed in, an introspection verifier is shaped
  as request/response like the client flow);
* the refusal to send when there is no good token or too little scope
  (:func:`authorize_request` returns a :class:`Refusal` with status and
  ``WWW-Authenticate``, built per RFC 6750 §3 and RFC 9728 §5.1).

:class:`ProtectedResource` bundles them for :class:`mcp_sansio.http.HTTPServer`, which
serves the metadata document and decides every request on its endpoint with it.

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import attrs

from . import _rules as rules
from ._access import AccessInfo
from ._deferred import VerificationPending
from ._errors import InsufficientScope, InvalidRequest
from ._http import HTTPResponse
from ._verdict import _B64TOKEN, Refusal, TokenVerifier, _refuse, judge


def metadata_url(resource: str) -> str:
    """The path-based well-known URL of ``resource``'s metadata (RFC 9728 §3.1)."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, rules.PRM_WELL_KNOWN + path, "", ""))


def protected_resource_metadata(
    resource: str,
    authorization_servers: Iterable[str],
    *,
    scopes_supported: Iterable[str] | None = None,
    resource_name: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The RFC 9728 §2 document: this resource, its authorization servers, its scopes, and
    bearer tokens accepted in the header only (``bearer_methods_supported``)."""
    servers = list(authorization_servers)
    if not servers:
        raise ValueError("MCP requires at least one authorization server (RFC 9728 §2, "
                         "MCP 2025-11-25 'Authorization Server Location')")
    doc: dict[str, Any] = {
        "resource": resource,
        "authorization_servers": servers,
        "bearer_methods_supported": ["header"],
    }
    if scopes_supported is not None:
        doc["scopes_supported"] = list(scopes_supported)
    if resource_name is not None:
        doc["resource_name"] = resource_name
    doc.update(extra)
    return doc


def extract_bearer_token(
    headers: Iterable[tuple[str, str]] | Iterable[tuple[bytes, bytes]], target: str | bytes,
) -> str | None:
    """The bearer token of a request, None if it carries none.

    Raises :class:`InvalidRequest` for what RFC 6750 §3.1 calls ``invalid_request``: a token
    in the query string (§2.3, and MCP "MUST NOT"), more than one ``Authorization`` header,
    or a ``Bearer`` credential that is not a b64token (§2.1).
    """
    if isinstance(target, bytes):
        target = target.decode("latin-1")
    query = urlsplit(target).query
    if any(name == "access_token" for name, _ in parse_qsl(query, keep_blank_values=True)):
        raise InvalidRequest("access token in the query string (RFC 6750 §2.3; MCP forbids "
                             "it)")
    values: list[str] = []
    for name, value in headers:
        n = name.decode("latin-1") if isinstance(name, bytes) else name
        if n.lower() == "authorization":
            values.append(value.decode("latin-1") if isinstance(value, bytes) else value)
    if not values:
        return None
    if len(values) > 1:
        raise InvalidRequest("more than one Authorization header")
    scheme, _, credentials = values[0].strip().partition(" ")
    if scheme.lower() != "bearer":
        return None  # another scheme: not a bearer token (answered like no token)
    credentials = credentials.strip()
    if not _B64TOKEN.fullmatch(credentials):
        raise InvalidRequest("the Bearer credential is not a b64token (RFC 6750 §2.1)")
    return credentials


def authorize_request(
    headers: Iterable[tuple[str, str]] | Iterable[tuple[bytes, bytes]],
    target: str | bytes,
    verifier: TokenVerifier,
    now: float,
    *,
    resource_metadata: str,
    required_scopes: Iterable[str] = (),
) -> AccessInfo | Refusal:
    """Decide a request: its :class:`AccessInfo`, or the :class:`Refusal` to send.

    No token -> 401 with ``resource_metadata`` and the required ``scope`` (MCP 2025-11-25
    "Scope Selection Strategy"); bad request -> 400 ``invalid_request``; bad token -> 401
    ``invalid_token``; missing scopes -> 403 ``insufficient_scope`` naming all the scopes the
    operation needs (MCP 2026-07-28 "Runtime Insufficient Scope Errors").
    """
    required = frozenset(required_scopes)
    scope = " ".join(sorted(required)) or None
    try:
        token = extract_bearer_token(headers, target)
    except InvalidRequest as exc:
        return _refuse(400, str(exc), resource_metadata, scope, "invalid_request")
    if token is None:
        return _refuse(401, "no access token", resource_metadata, scope, None)
    # VerificationPending propagates: the caller waits for the answer (module docstring).
    return judge(lambda: verifier.verify(token, now), resource_metadata=resource_metadata,
                 required_scopes=required)


def _as_tuple(value: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


@attrs.frozen
class ProtectedResource:
    """What makes an MCP endpoint a resource server (pass as ``auth=`` to
    :class:`mcp_sansio.http.HTTPServer`, and so to every runtime's ``start_http``).

    :param resource: this endpoint's canonical URL (the audience tokens must name; MCP
        2025-06-18 and later "Token Audience Binding and Validation").
    :param authorization_servers: the issuers clients may get tokens from (at least one).
    :param verifier: judges each token (see the module docstring for why it is synchronous).
    :param scopes_supported: advertised in the metadata document (None: not advertised).
    :param required_scopes: scopes every request needs; a token without them is answered
        403 ``insufficient_scope`` naming them, and a request without a token is challenged
        with them (MCP 2025-11-25 "Scope Selection Strategy").
    :param resource_name: a human-readable name for the metadata document.
    :param dpop: ``"required"`` (only DPoP-bound tokens, each request with its proof),
        ``"allowed"`` (those and bearer tokens) or None (bearer tokens only); RFC 9449 §7,
        decided by :mod:`mcp_sansio.auth._dpop_resource`. Needs the ``auth`` extra.
    :param dpop_proofs: the :class:`~mcp_sansio.auth.dpop.ProofVerifier` (its algorithms,
        ``iat`` window, replay cache and nonces); default: one with an in-memory replay
        cache and no nonces.
    """

    resource: str
    authorization_servers: tuple[str, ...] = attrs.field(converter=tuple)
    verifier: TokenVerifier
    scopes_supported: tuple[str, ...] | None = attrs.field(default=None, converter=_as_tuple)
    required_scopes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    resource_name: str | None = None
    dpop: str | None = None
    dpop_proofs: Any = None

    def __attrs_post_init__(self) -> None:
        if not self.authorization_servers:
            raise ValueError("MCP requires at least one authorization server (RFC 9728 §2)")
        if self.dpop is not None:
            from ._dpop_resource import MODES
            from .dpop import ProofVerifier

            if self.dpop not in MODES:
                raise ValueError(f"dpop must be one of {MODES} or None, not {self.dpop!r}")
            if self.dpop_proofs is None:
                object.__setattr__(self, "dpop_proofs", ProofVerifier())

    @property
    def metadata_url(self) -> str:
        """Where the metadata document is (the path-based well-known URL, RFC 9728 §3.1);
        named in every challenge's ``resource_metadata`` (RFC 9728 §5.1)."""
        return metadata_url(self.resource)

    @property
    def metadata_paths(self) -> tuple[str, ...]:
        """The paths the document is served at: the path-based well-known one and the root
        one, which clients try next (MCP 2025-11-25 "Protected Resource Metadata Discovery
        Requirements", :data:`~mcp_sansio.auth._rules.PRM_DISCOVERY_ORDER`)."""
        path = urlsplit(self.metadata_url).path
        return tuple(dict.fromkeys((path, rules.PRM_WELL_KNOWN)))

    @staticmethod
    def same_principal(a: AccessInfo | None, b: AccessInfo | None) -> bool:
        """Whether two requests speak for the same principal (MCP 2025-06-18 and later,
        security_best_practices "Session Hijacking": a session is bound to the user the
        token names -- its ``sub`` together with the issuer that vouches for it)."""
        if a is None or b is None:
            return a is b
        return a.subject == b.subject and a.claims.get("iss") == b.claims.get("iss")

    def document(self) -> dict[str, Any]:
        """The RFC 9728 §2 document to serve."""
        extra: dict[str, Any] = {}
        if self.dpop is not None:
            # RFC 9728 §2 (the DPoP members RFC 9449 §5.1 registers for resources).
            extra["dpop_signing_alg_values_supported"] = list(self.dpop_proofs.algorithms)
            extra["dpop_bound_access_tokens_required"] = self.dpop == "required"
        return protected_resource_metadata(
            self.resource, self.authorization_servers, scopes_supported=self.scopes_supported,
            resource_name=self.resource_name, **extra)

    def authorize(
        self, headers: Iterable[tuple[str, str]] | Iterable[tuple[bytes, bytes]],
        target: str | bytes, now: float, *, method: str = "POST",
    ) -> AccessInfo | Refusal:
        """Decide one request (:func:`authorize_request` with this configuration, or the
        DPoP decision of :mod:`mcp_sansio.auth._dpop_resource`; ``method`` is the request's,
        for the proof's ``htm``)."""
        if self.dpop is not None:
            from ._dpop_resource import authorize_dpop

            path = target.decode("latin-1") if isinstance(target, bytes) else target
            origin = urlsplit(self.resource)
            url = urlunsplit((origin.scheme, origin.netloc, urlsplit(path).path, "", ""))
            return authorize_dpop(headers, path, method=method, url=url,
                                  verifier=self.verifier, proofs=self.dpop_proofs,
                                  mode=self.dpop, now=now,
                                  resource_metadata=self.metadata_url,
                                  required_scopes=self.required_scopes)
        return authorize_request(headers, target, self.verifier, now,
                                 resource_metadata=self.metadata_url,
                                 required_scopes=self.required_scopes)

    def scope_refusal(self, info: AccessInfo, needed: Iterable[str]) -> Refusal | None:
        """The 403 for an operation needing ``needed`` (a tool's scopes) on top of
        :attr:`required_scopes`, when ``info`` lacks any of them; None when it has them. The
        challenge names every scope the operation needs, those held included, so that the
        client's step-up asks for all of them at once (MCP 2026-07-28 "Runtime Insufficient
        Scope Errors"; RFC 6750 §3.1)."""
        scopes = frozenset(self.required_scopes) | frozenset(needed)
        if scopes <= info.scopes:
            return None
        return _refuse(403, str(InsufficientScope(scopes)), self.metadata_url,
                       " ".join(sorted(scopes)), "insufficient_scope")

    def conclude(self, pending: VerificationPending, answer: HTTPResponse | BaseException,
                 now: float) -> AccessInfo | Refusal:
        """Decide a request whose verifier raised ``pending``, now that ``answer`` came:
        the response to ``pending.request``, or what stopped it (a transport error, the
        server's decision timeout) -- then 503 unless the verifier has a fallback."""
        if isinstance(answer, HTTPResponse):
            response = answer
            decided = judge(lambda: pending.finish(response, now),
                            resource_metadata=self.metadata_url,
                            required_scopes=self.required_scopes)
        else:
            reason = str(answer) or answer.__class__.__name__
            decided = judge(lambda: pending.fail(reason, now),
                            resource_metadata=self.metadata_url,
                            required_scopes=self.required_scopes)
        if self.dpop is not None:
            from ._dpop_resource import rechallenge

            return rechallenge(decided, proofs=self.dpop_proofs, mode=self.dpop, now=now,
                               resource_metadata=self.metadata_url)
        return decided
