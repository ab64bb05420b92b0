"""The resource-server decision for DPoP (RFC 9449 §7): which scheme, which proof, which key.

Theory of operation
-------------------
:class:`~mcp_sansio.auth.ProtectedResource` with ``dpop="required"`` or ``"allowed"`` decides
each request here instead of in :func:`~mcp_sansio.auth.authorize_request`. The rules are
:data:`SCHEMES`, one row per (scheme presented, mode): a ``DPoP`` token needs a proof that
passes :class:`~mcp_sansio.auth.dpop.ProofVerifier` (method and URL of *this* request, the
wall clock handed in, the token's hash, an unused ``jti``, the nonce when asked) and whose key
is the one the token is bound to (``cnf.jkt`` in the verifier's claims, RFC 9449 §6.1); a
``Bearer`` token is refused when DPoP is required, and always when the token itself is
DPoP-bound (§7.2: a bound token presented as a bearer token is a stolen one).

Refusals carry a ``DPoP`` challenge with ``algs`` (§7.1) -- and a ``Bearer`` one too where
bearer tokens are allowed -- and ``use_dpop_nonce`` refusals a fresh ``DPoP-Nonce`` header
(§9). This module imports no JOSE library: the proof verifier is handed in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._access import AccessInfo
from ._challenge import PARAM_CHARSETS, bearer_challenge
from ._deferred import VerificationPending
from ._errors import InvalidToken
from ._verdict import _B64TOKEN, Refusal, TokenVerifier, judge

if TYPE_CHECKING:
    from .dpop import ProofVerifier

__all__ = ["MODES", "SCHEMES", "authorize_dpop", "dpop_challenge", "dpop_refusal", "rechallenge"]

#: ``ProtectedResource(dpop=...)``: ``required`` accepts only DPoP-bound tokens with a
#: proof; ``allowed`` accepts those and unbound bearer tokens (RFC 9449 §7.1, §7.2).
MODES = ("required", "allowed")

#: (scheme presented, mode) -> what happens. ``proof``: verify the proof and the key
#: binding; ``bearer``: judge as a bearer token, refusing a DPoP-bound one (§7.2);
#: ``refuse``: 401 with the challenges (no usable credential for this mode).
SCHEMES = {
    ("dpop", "required"): "proof",
    ("dpop", "allowed"): "proof",
    ("bearer", "required"): "refuse",
    ("bearer", "allowed"): "bearer",
}


def dpop_challenge(algs: Iterable[str], *, resource_metadata: str | None = None,
                   scope: str | None = None, error: str | None = None,
                   error_description: str | None = None) -> str:
    """A ``WWW-Authenticate`` value with the ``DPoP`` scheme (RFC 9449 §7.1)."""
    parts = [f'algs="{" ".join(algs)}"']
    for name, val in (("error", error), ("error_description", error_description),
                      ("scope", scope), ("resource_metadata", resource_metadata)):
        if val is None:
            continue
        allowed = PARAM_CHARSETS[name]
        text = val if allowed.fullmatch(val) else (
            "".join(c for c in val if allowed.fullmatch(c)) or "-")
        parts.append(f'{name}="{text}"')
    return "DPoP " + ", ".join(parts)


def dpop_refusal(status: int, reason: str, error: str | None, *, proofs: ProofVerifier,
                 mode: str, now: float, resource_metadata: str, scope: str | None,
                 nonce: bool = False) -> Refusal:
    """A refusal on a DPoP-aware resource: the ``DPoP`` challenge with ``algs``, a ``Bearer``
    one too where bearer tokens are allowed, and a fresh ``DPoP-Nonce`` when ``nonce``."""
    values = [("WWW-Authenticate", dpop_challenge(
        proofs.algorithms, resource_metadata=resource_metadata, scope=scope, error=error,
        error_description=reason if error else None))]
    if mode == "allowed":
        values.append(("WWW-Authenticate", bearer_challenge(
            resource_metadata=resource_metadata, scope=scope,
            error=error if error in ("invalid_token", "invalid_request",
                                     "insufficient_scope") else None)))
    if nonce and proofs.nonces is not None:
        values.append(("DPoP-Nonce", proofs.nonces.current(now)))
    return Refusal(status, tuple(values), reason)


def rechallenge(decided: AccessInfo | Refusal, *, proofs: ProofVerifier, mode: str,
                now: float, resource_metadata: str) -> AccessInfo | Refusal:
    """A verdict of :func:`~mcp_sansio.auth.judge` with its Bearer challenge replaced by the
    DPoP ones (a 401 is ``invalid_token``, a 403 ``insufficient_scope``)."""
    if not isinstance(decided, Refusal) or decided.status not in (401, 403):
        return decided
    scope = None
    for name, value in decided.headers:
        if name.lower() == "www-authenticate":
            from ._challenge import auth_params

            scope = (auth_params([value]) or {}).get("scope")
    error = "insufficient_scope" if decided.status == 403 else "invalid_token"
    return dpop_refusal(decided.status, decided.reason, error, proofs=proofs, mode=mode,
                        now=now, resource_metadata=resource_metadata, scope=scope)


def _credentials(headers: Iterable[tuple[str, str]] | Iterable[tuple[bytes, bytes]],
                 ) -> tuple[list[str], list[str]]:
    auth: list[str] = []
    proofs: list[str] = []
    for name, value in headers:
        n = (name.decode("latin-1") if isinstance(name, bytes) else name).lower()
        v = value.decode("latin-1") if isinstance(value, bytes) else value
        if n == "authorization":
            auth.append(v)
        elif n == "dpop":
            proofs.append(v)
    return auth, proofs


def authorize_dpop(
    headers: Iterable[tuple[str, str]] | Iterable[tuple[bytes, bytes]],
    target: str, *, method: str, url: str, verifier: TokenVerifier,
    proofs: ProofVerifier, mode: str, now: float, resource_metadata: str,
    required_scopes: Iterable[str] = (),
) -> AccessInfo | Refusal:
    """Decide one request on a DPoP-aware resource (see the module docstring)."""
    required = frozenset(required_scopes)
    scope = " ".join(sorted(required)) or None

    def refuse(status: int, reason: str, error: str | None,
               nonce: bool = False) -> Refusal:
        return dpop_refusal(status, reason, error, proofs=proofs, mode=mode, now=now,
                            resource_metadata=resource_metadata, scope=scope, nonce=nonce)

    if "access_token=" in target.partition("?")[2]:
        return refuse(400, "access token in the query string (RFC 6750 §2.3)",
                      "invalid_request")
    auth, proof_values = _credentials(headers)
    if not auth:
        return refuse(401, "no access token", None)
    if len(auth) > 1:
        return refuse(400, "more than one Authorization header", "invalid_request")
    scheme, _, token = auth[0].strip().partition(" ")
    token = token.strip()
    action = SCHEMES.get((scheme.lower(), mode))
    if action is None or action == "refuse":
        return refuse(401, f"the {scheme or 'empty'} scheme is not accepted here"
                      " (DPoP-bound tokens only)" if scheme.lower() == "bearer"
                      else f"unknown authorization scheme {scheme!r}", None)
    if not _B64TOKEN.fullmatch(token):
        return refuse(400, "the credential is not a token68 (RFC 9449 §7.1)",
                      "invalid_request")
    jkt: str | None = None
    if action == "proof":
        from .dpop import UseNonce

        try:
            jkt = proofs.check(proof_values, method=method, url=url, now=now,
                               access_token=token).jkt
        except UseNonce as exc:
            return refuse(401, str(exc), "use_dpop_nonce", nonce=True)
        except InvalidToken as exc:
            return refuse(401, str(exc), "invalid_dpop_proof", nonce=True)

    def bind(info: AccessInfo) -> AccessInfo:
        cnf = info.claims.get("cnf")
        bound = cnf.get("jkt") if isinstance(cnf, dict) else None
        if jkt is None and bound is not None:
            raise InvalidToken("a DPoP-bound token presented as a bearer token (RFC 9449 "
                               "§7.2)")
        if jkt is not None and bound != jkt:
            raise InvalidToken("the token is not bound to the proof's key (cnf.jkt, RFC "
                               "9449 §6.1)")
        return info

    def verdict() -> AccessInfo:
        try:
            return bind(verifier.verify(token, now))
        except VerificationPending as pending:
            raise _bound(pending, bind) from None

    decided = judge(verdict, resource_metadata=resource_metadata, required_scopes=required)
    return rechallenge(decided, proofs=proofs, mode=mode, now=now,
                       resource_metadata=resource_metadata)


def _bound(pending: VerificationPending, bind: Any) -> VerificationPending:
    """``pending`` with the key-binding check applied to its eventual verdict."""
    fallback = pending.fallback
    return VerificationPending(
        pending.request, lambda response, when: bind(pending.finish(response, when)),
        str(pending),
        fallback=None if fallback is None else (lambda when: bind(fallback(when))))
