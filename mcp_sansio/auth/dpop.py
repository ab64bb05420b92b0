"""DPoP (RFC 9449) proofs on joserfc, both roles (install ``mcp-sansio[auth]``).

Theory of operation
-------------------
A DPoP-bound access token is useless without the private key it was issued to: every
request carries a fresh *proof*, a JWT signed with that key whose header holds the public
key (``jwk``) and whose claims bind it to one request (``htm`` method, ``htu`` URL without
query or fragment, ``iat``, a unique ``jti``, ``ath`` the hash of the access token and,
when the server asks, its ``nonce``). The token names the key by its thumbprint
(``cnf.jkt``, RFC 9449 §6).

Client side, :class:`DPoPKey` holds the key pair (a private JWK, kept with the tokens so
that the binding survives a restart) and makes proofs; ``now`` and ``jti`` come in, so
nothing here reads a clock or draws randomness (the adapters generate keys and jtis).

Server side, :class:`ProofVerifier` performs the checks of RFC 9449 §4.3 in the order of
:data:`PROOF_CHECKS`, each failure an :class:`InvalidProof` naming the check; a missing or
stale nonce is :class:`UseNonce` (answered ``use_dpop_nonce`` with a fresh ``DPoP-Nonce``).
Replayed ``jti`` values are caught by a :class:`ReplayCache` -- :class:`MemoryReplayCache`
bounded in memory for one process, :class:`SharedReplayCache` for the workers of a service
(each tells the others, through the event bus of :mod:`mcp_sansio.stores`, what it saw).
Nonces come from :class:`NonceSource`, an HMAC of the time window under a secret:
stateless, rotating every ``period`` seconds, the same on every worker holding the secret.
The resource-server decision (which scheme, the ``cnf.jkt`` binding, the challenges) is
:mod:`mcp_sansio.auth._dpop_resource`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import attrs
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import JWKRegistry

from ._errors import InvalidToken
from ._http import b64url

__all__ = [
    "DEFAULT_IAT_WINDOW", "PROOF_ALGORITHMS", "PROOF_CHECKS", "REPLAY_TOPIC", "DPoPKey",
    "InvalidProof", "MemoryReplayCache", "NonceSource", "ProofVerifier", "ReplayCache",
    "SharedReplayCache", "UseNonce",
    "access_token_hash", "htu_of",
]

#: Asymmetric JWS algorithms accepted in proofs (RFC 9449 §4.2: "MUST NOT be none or an
#: identifier for a symmetric algorithm"); the order is the preference advertised in
#: ``dpop_signing_alg_values_supported``. A client of this library signs with ES256.
PROOF_ALGORITHMS = ("ES256", "ES384", "PS256", "RS256", "EdDSA")

#: Seconds a proof's ``iat`` may lie from the server's wall clock, either way (RFC 9449
#: §11.1: "a reasonable window", to allow for clock skew and latency). Five minutes, as
#: common deployments use; the replay cache keeps each ``jti`` this long past its ``iat``.
DEFAULT_IAT_WINDOW = 300.0

#: The checks of RFC 9449 §4.3, in the order :class:`ProofVerifier` makes them; the
#: reason of an :class:`InvalidProof` starts with the check's name.
PROOF_CHECKS = (
    ("single", "§4.3 (1): exactly one DPoP header"),
    ("jwt", "§4.3 (2): a well-formed compact JWT"),
    ("typ", "§4.3 (4): typ is dpop+jwt"),
    ("alg", "§4.3 (5): an asymmetric algorithm the server supports"),
    ("jwk", "§4.3 (7): a public key in the jwk header, no private part"),
    ("signature", "§4.3 (6): the signature verifies with that key"),
    ("claims", "§4.3 (3): jti, htm, htu, iat present"),
    ("htm", "§4.3 (8): htm is the request's method"),
    ("htu", "§4.3 (9): htu is the request's URL, without query and fragment"),
    ("nonce", "§4.3 (10), §9: the server's current nonce, when it asks for one"),
    ("iat", "§4.3 (11): iat within the window"),
    ("ath", "§4.3 (12), §7: ath is the hash of the access token presented"),
    ("jti", "§11.1: jti not seen before within the window"),
)

_DEFAULT_PORTS = {"http": 80, "https": 443}


class InvalidProof(InvalidToken):
    """The DPoP proof fails a check of RFC 9449 §4.3 (answered ``invalid_dpop_proof``)."""

    error = "invalid_dpop_proof"


class UseNonce(InvalidToken):
    """The server requires a nonce the proof lacks or has stale (RFC 9449 §8, §9)."""

    error = "use_dpop_nonce"


def htu_of(url: str) -> str:
    """A URL as ``htu`` carries and compares it: no query or fragment (RFC 9449 §4.2),
    scheme and host lowercased, a default port dropped, an empty path as ``/`` (the
    normalizations of RFC 3986 §6.2.2 and §6.2.3 that §4.3 asks for)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", "", ""))


def access_token_hash(access_token: str) -> str:
    """``ath``: base64url of the SHA-256 of the token's ASCII (RFC 9449 §4.2)."""
    return b64url(hashlib.sha256(access_token.encode("ascii", "replace")).digest())


class DPoPKey:
    """A client's DPoP key pair, from a private JWK (EC P-256 signs ES256)."""

    def __init__(self, private_jwk: Mapping[str, Any]) -> None:
        self._key = JWKRegistry.import_key(dict(private_jwk))
        if not self._key.is_private:
            raise ValueError("a DPoP key needs its private part")
        kty, crv = private_jwk.get("kty"), private_jwk.get("crv")
        self.alg = {("EC", "P-256"): "ES256", ("EC", "P-384"): "ES384",
                    ("OKP", "Ed25519"): "EdDSA"}.get((str(kty), str(crv)), "PS256")
        self.public_jwk: dict[str, Any] = self._key.as_dict(private=False)
        #: The JWK SHA-256 thumbprint (RFC 7638) a bound token names in ``cnf.jkt``.
        self.thumbprint: str = self._key.thumbprint()

    def private_jwk(self) -> dict[str, Any]:
        return self._key.as_dict(private=True)

    def proof(self, method: str, url: str, *, now: float, jti: str,
              access_token: str | None = None, nonce: str | None = None) -> str:
        """The proof for one request (RFC 9449 §4.2): the value of its ``DPoP`` header."""
        claims: dict[str, Any] = {"jti": jti, "htm": method.upper(), "htu": htu_of(url),
                                  "iat": int(now)}
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": "dpop+jwt", "alg": self.alg, "jwk": self.public_jwk}
        return jwt.encode(header, claims, self._key, algorithms=[self.alg])


class ReplayCache(Protocol):
    """Remembers proof ``jti`` values until ``expires_at`` (wall-clock seconds)."""

    def first_use(self, key: str, expires_at: float, now: float) -> bool:
        """Record ``key``; True when it was not already there (unexpired)."""
        ...


class MemoryReplayCache:
    """A :class:`ReplayCache` for one process: at most ``max_entries`` keys, the expired
    ones dropped first, then the oldest. A key leaves no sooner than the ``iat`` window
    allows unless more than ``max_entries`` proofs arrive within one window (the bound
    that keeps a flood from exhausting memory)."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self.max_entries = max_entries
        self._seen: OrderedDict[str, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def first_use(self, key: str, expires_at: float, now: float) -> bool:
        seen = self._seen
        while seen:
            oldest_key, oldest_expiry = next(iter(seen.items()))
            if oldest_expiry > now and len(seen) < self.max_entries:
                break
            del seen[oldest_key]
        expiry = seen.get(key)
        if expiry is not None and expiry > now:
            return False
        seen[key] = expires_at
        seen.move_to_end(key)
        return True


#: The :class:`~mcp_sansio.stores.EventBus` topic on which workers tell each other the proof
#: keys they accepted (:class:`SharedReplayCache`).
REPLAY_TOPIC = "dpop-jti"


class SharedReplayCache:
    """A :class:`ReplayCache` for the workers of one service: each keeps its own
    :class:`MemoryReplayCache`, hands every key it records to ``publish`` (the adapter
    publishes it on :data:`REPLAY_TOPIC`) and records what the others published
    (:meth:`receive`). A replay that reaches another worker before the publication does is
    not caught: the window is the bus's latency, not the proof's lifetime."""

    def __init__(self, publish: Callable[[bytes], None], *,
                 max_entries: int = 100_000) -> None:
        self.local = MemoryReplayCache(max_entries)
        self._publish = publish

    def first_use(self, key: str, expires_at: float, now: float) -> bool:
        if not self.local.first_use(key, expires_at, now):
            return False
        self._publish(json.dumps([key, expires_at]).encode())
        return True

    def receive(self, message: bytes, now: float) -> None:
        """Another worker's key (malformed messages are ignored)."""
        try:
            key, expires_at = json.loads(message)
        except (ValueError, TypeError, RecursionError):
            return
        if isinstance(key, str) and isinstance(expires_at, int | float):
            self.local.first_use(key, float(expires_at), now)


@attrs.frozen
class NonceSource:
    """Server nonces (RFC 9449 §8, §9): HMAC-SHA256 of the ``period``-second window under
    ``secret``. Valid in its window and the next, so a nonce handed out just before a
    rotation still works; every worker with the same secret issues and accepts the same."""

    secret: bytes = attrs.field(repr=False)
    period: float = 300.0

    def _at(self, window: int) -> str:
        return b64url(hmac.new(self.secret, str(window).encode(), hashlib.sha256).digest())

    def current(self, now: float) -> str:
        return self._at(int(now // self.period))

    def valid(self, nonce: object, now: float) -> bool:
        if not isinstance(nonce, str):
            return False
        window = int(now // self.period)
        return any(hmac.compare_digest(nonce, self._at(w)) for w in (window, window - 1))


@attrs.frozen
class Proof:
    """A proof that passed: its key's thumbprint and its ``jti``."""

    jkt: str
    jti: str


class ProofVerifier:
    """The checks of RFC 9449 §4.3 on one proof (see :data:`PROOF_CHECKS`)."""

    def __init__(self, *, algorithms: Iterable[str] = PROOF_ALGORITHMS,
                 iat_window: float = DEFAULT_IAT_WINDOW,
                 replay: ReplayCache | None = None,
                 nonces: NonceSource | None = None) -> None:
        self.algorithms = tuple(algorithms)
        self.iat_window = iat_window
        self.replay: ReplayCache = replay if replay is not None else MemoryReplayCache()
        self.nonces = nonces

    def check(self, values: list[str], *, method: str, url: str, now: float,
              access_token: str | None) -> Proof:
        """Judge the ``DPoP`` header values of a request; the :class:`Proof` or raise
        :class:`InvalidProof` / :class:`UseNonce`."""
        if len(values) != 1 or "," in values[0]:
            raise InvalidProof("single: exactly one DPoP proof is allowed")
        proof = values[0].strip()
        try:
            extracted = jws.extract_compact(proof.encode("ascii"))
            header = extracted.protected
            claims = json.loads(extracted.payload)
        except (JoseError, ValueError, TypeError, UnicodeError, RecursionError):
            raise InvalidProof("jwt: not a compact JWS with a JSON payload") from None
        if not isinstance(claims, dict):
            raise InvalidProof("jwt: the payload is not a JSON object")
        if header.get("typ") != "dpop+jwt":
            raise InvalidProof("typ: must be dpop+jwt")
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise InvalidProof(f"alg: {alg!r} is not one of {', '.join(self.algorithms)}")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict) or any(p in jwk for p in ("d", "p", "q", "k")):
            raise InvalidProof("jwk: the header must carry a public key and only that")
        try:
            key = JWKRegistry.import_key(jwk)
            jws.deserialize_compact(proof, key, algorithms=[str(alg)])
            jkt = key.thumbprint()
        except (JoseError, ValueError, TypeError, KeyError):
            raise InvalidProof("signature: does not verify with the header's jwk") from None
        jti, htm, htu, iat = (claims.get(n) for n in ("jti", "htm", "htu", "iat"))
        if (not isinstance(jti, str) or not jti or not isinstance(htm, str)
                or not isinstance(htu, str) or isinstance(iat, bool)
                or not isinstance(iat, int | float)):
            raise InvalidProof("claims: jti, htm, htu and iat are required")
        if htm != method.upper():
            raise InvalidProof(f"htm: {htm!r} is not the request's method {method.upper()!r}")
        if "?" in htu or "#" in htu or htu_of(htu) != htu_of(url):
            raise InvalidProof(f"htu: {htu!r} is not this request's URL")
        if self.nonces is not None and not self.nonces.valid(claims.get("nonce"), now):
            raise UseNonce("nonce: the server's current DPoP nonce is required")
        if abs(now - float(iat)) > self.iat_window:
            raise InvalidProof(f"iat: more than {self.iat_window:g} s from the server's clock")
        if access_token is not None and claims.get("ath") != access_token_hash(access_token):
            raise InvalidProof("ath: not the hash of the access token presented")
        if not self.replay.first_use(f"{jkt}:{jti}", float(iat) + self.iat_window, now):
            raise InvalidProof("jti: this proof was used before")
        return Proof(jkt, jti)
