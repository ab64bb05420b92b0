"""Rules and helpers of the stateless era (2026-07-28).

Theory of operation
-------------------
In 2026-07-28 there is no session: every request carries the client's protocol version,
capabilities and identity in ``params._meta`` under reserved ``io.modelcontextprotocol/``
keys (``basic/versioning.mdx``, ``basic/index.mdx`` "_meta"). This module holds the data the
connection consults for that era -- the reserved keys, the listen-stream filter table, the
log-level order -- and the ``requestState`` sealing helpers for multi-round-trip requests.

``requestState`` (``basic/patterns/mrtr.mdx``) is handed to the client and comes back in the
retry, possibly to another process or host of the same service: the server must treat it as
attacker input. :func:`seal_state` wraps the application's state with an HMAC-SHA256 over
what the spec's server requirement 5 lists -- the principal (when the request was
authenticated), an expiry, and the originating request (its method and tool/prompt/resource
name) -- and names the key that sealed it; :func:`open_state` refuses anything tampered with,
sealed with a key the :class:`~mcp_sansio._keyring.KeyRing` does not hold, replayed against
another method/name or principal, or expired.

Keys and clocks are the caller's (the core reads neither). A state is judged on the clock it
was sealed on, recorded inside it: the **wall clock** (seconds since the epoch), which every
host that keeps time agrees on to within :data:`DEFAULT_SKEW`, is the one for state that
crosses processes or hosts; a monotonic clock starts at each host's boot and is only good
within one host.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from ._errors import ErrorCode, ProtocolError
from ._keyring import KeyRing, key_id

__all__ = [
    "CLOCKS",
    "DEFAULT_SKEW",
    "LISTEN_FILTERS",
    "LOG_LEVELS",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "InvalidRequestState",
    "has_stateless_meta",
    "open_state",
    "principal_key",
    "seal_state",
]

_PREFIX = "io.modelcontextprotocol/"
#: Reserved ``_meta`` keys (``schema/2026-07-28`` ``RequestMetaObject``, ``ResultMetaObject``,
#: ``NotificationMetaObject``).
META_PROTOCOL_VERSION = _PREFIX + "protocolVersion"
META_CLIENT_CAPABILITIES = _PREFIX + "clientCapabilities"
META_CLIENT_INFO = _PREFIX + "clientInfo"
META_LOG_LEVEL = _PREFIX + "logLevel"
META_SERVER_INFO = _PREFIX + "serverInfo"
META_SUBSCRIPTION_ID = _PREFIX + "subscriptionId"

#: Syslog severities, lowest first (``server/utilities/logging.mdx``, every revision).
LOG_LEVELS: tuple[str, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
)
LOG_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}

#: ``subscriptions/listen`` filter keys -> (the notification they opt in to, the server
#: capability that must be declared to honour them). spec-digest c1 and h, ``SubscriptionFilter``
#: in the 2026-07-28 schema. ``resourceSubscriptions`` is a list of URIs, the others booleans.
LISTEN_FILTERS: dict[str, tuple[str, str]] = {
    "toolsListChanged": ("notifications/tools/list_changed", "tools.listChanged"),
    "promptsListChanged": ("notifications/prompts/list_changed", "prompts.listChanged"),
    "resourcesListChanged": ("notifications/resources/list_changed", "resources.listChanged"),
    "resourceSubscriptions": ("notifications/resources/updated", "resources.subscribe"),
}
#: notification method -> its filter key.
LISTEN_NOTIFICATIONS: dict[str, str] = {method: key for key, (method, _) in LISTEN_FILTERS.items()}


def has_stateless_meta(params: Mapping[str, Any] | None) -> bool:
    """Whether a request carries any of the stateless era's per-request ``_meta`` keys."""
    if not params:
        return False
    meta = params.get("_meta")
    if meta is None:  # (most requests: no abc instance check then)
        return False
    return (type(meta) is dict or isinstance(meta, Mapping)) and (
        META_PROTOCOL_VERSION in meta
        or META_CLIENT_CAPABILITIES in meta
        or META_CLIENT_INFO in meta
    )


def filter_allows(
    honoured: Mapping[str, Any], method: str, params: Mapping[str, Any] | None
) -> bool:
    """Whether an acknowledged listen filter covers this notification."""
    key = LISTEN_NOTIFICATIONS.get(method)
    if key is None:
        return False
    wanted = honoured.get(key)
    if key == "resourceSubscriptions":
        uri = (params or {}).get("uri")
        return isinstance(wanted, list) and uri in wanted
    return wanted is True


# -- requestState sealing ------------------------------------------------------------------


class InvalidRequestState(ProtocolError):
    """A sealed ``requestState`` was tampered with, bound to another request, or expired.

    Its code is -32602 (Invalid params), which the server sends back.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, code=ErrorCode.INVALID_PARAMS)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, payload: bytes) -> bytes:
    # Imported here: hashlib loads OpenSSL (~2 ms), which a connection that never seals a
    # requestState -- and every cold start of a server -- does without.
    import hashlib
    import hmac

    return hmac.new(key, payload, hashlib.sha256).digest()


#: Which clock a sealed state's times are on: the wall clock (seconds since the epoch, the
#: same on every host that keeps time) or a monotonic one (private to one host: it starts at
#: boot). A state is judged only on the clock it was sealed on.
CLOCKS = ("wall", "monotonic")
_CLOCK_TAGS = {"wall": "w", "monotonic": "m"}

#: How far apart two hosts' wall clocks may be, in seconds, before a sealed state is judged
#: wrongly between them. Hosts kept by NTP agree to within milliseconds; 30 seconds covers a
#: host whose synchronisation lapsed for a while (drift of a few parts per million adds up to
#: seconds per day) and is still short beside the ten-minute lifetime of a state: a state
#: outlives its TTL by at most the allowance on a host whose clock agrees (5%), twice it on
#: one whose clock is a whole allowance behind.
DEFAULT_SKEW = 30.0


def principal_key(subject: str, client_id: str | None = None, issuer: object = None) -> str:
    """What a sealed state is bound to for an authenticated principal: the token's issuer,
    subject and client id (2026-07-28 ``basic/patterns/mrtr.mdx``, server requirement 5:
    "the authenticated principal, rejecting state presented by a different principal")."""
    return json.dumps([issuer if isinstance(issuer, str) else None, subject, client_id],
                      separators=(",", ":"))


def _principal_digest(principal: str) -> str:
    # A digest rather than the principal itself: the sealed payload is signed, not
    # encrypted, and a client has no need to read its token's claims back out of it.
    import hashlib

    return _b64(hashlib.sha256(principal.encode("utf-8", "surrogatepass")).digest()[:16])


def _ring(keys: bytes | KeyRing) -> tuple[tuple[str, bytes], KeyRing | None]:
    """The sealing key (id, key) and the ring, for either a ring or one bare key."""
    if isinstance(keys, KeyRing):
        return keys.sealing_key(), keys
    if not keys:
        raise ValueError("a non-empty key is required")
    return (key_id(keys), keys), None


def seal_state(
    keys: bytes | KeyRing, state: str, *, method: str, name: str | None, expires_at: float,
    issued_at: float | None = None, principal: str | None = None, clock: str = "wall",
) -> str:
    """Wrap ``state`` so that only a holder of the key can read it back, for this method and
    tool/prompt/resource name, until ``expires_at`` on ``clock`` (``"wall"``: seconds since
    the epoch; ``"monotonic"``: one host's clock), and -- when ``principal`` is given (see
    :func:`principal_key`) -- for that principal only. ``keys`` is a :class:`KeyRing` (its
    sealing key seals) or one bare key. ``issued_at`` (same clock) lets the opener refuse a
    state from a host whose clock runs ahead of its own by more than the skew allowance."""
    (kid, key), _ = _ring(keys)
    fields: dict[str, Any] = {"s": state, "m": method, "n": name, "e": expires_at,
                              "c": _CLOCK_TAGS[clock]}
    if issued_at is not None:
        fields["i"] = issued_at
    if principal is not None:
        fields["p"] = _principal_digest(principal)
    payload = _b64(json.dumps(fields, separators=(",", ":")).encode("utf-8"))
    signed = f"{kid}.{payload}"
    return f"{signed}.{_b64(_mac(key, signed.encode('ascii')))}"


def open_state(
    keys: bytes | KeyRing, sealed: object, *, method: str, name: str | None, now: float,
    principal: str | None = None, clock: str = "wall", skew: float = 0.0,
) -> str:
    """Return the state inside ``sealed``; raise :class:`InvalidRequestState` when it was
    tampered with or sealed with a key the ring does not hold, is bound to another request
    or principal, was sealed on another ``clock``, or -- at ``now`` on that clock, allowing
    ``skew`` seconds of disagreement between hosts -- has expired or was issued in the
    future."""
    if not isinstance(sealed, str) or sealed.count(".") != 2:
        raise InvalidRequestState("Invalid params: requestState is malformed")
    kid, body, tag = sealed.split(".")
    try:
        payload = _unb64(body)
        given = _unb64(tag)
    except ValueError:  # binascii.Error is one
        raise InvalidRequestState("Invalid params: requestState is malformed") from None
    if isinstance(keys, KeyRing):
        key = keys.find(kid)
    else:
        key = keys if keys and kid == key_id(keys) else None
    import hmac

    # An unknown key id is answered like a bad MAC: which keys a server holds is its own.
    if key is None or not hmac.compare_digest(given, _mac(key, f"{kid}.{body}".encode("ascii"))):
        raise InvalidRequestState("Invalid params: requestState failed its integrity check")
    try:
        fields = json.loads(payload)
    except ValueError:  # pragma: no cover - only we write payloads, and the MAC matched
        raise InvalidRequestState("Invalid params: requestState is malformed") from None
    if fields.get("m") != method or fields.get("n") != name:
        raise InvalidRequestState("Invalid params: requestState belongs to another request")
    wanted = None if principal is None else _principal_digest(principal)
    if fields.get("p") != wanted:
        raise InvalidRequestState("Invalid params: requestState belongs to another principal")
    if fields.get("c") != _CLOCK_TAGS[clock]:
        # A monotonic time means nothing on another clock: refused rather than misjudged.
        raise InvalidRequestState("Invalid params: requestState has expired")
    issued = fields.get("i")
    if issued is not None and not issued <= now + skew:
        raise InvalidRequestState("Invalid params: requestState was issued in the future "
                                  "(the server's clocks disagree)")
    if not now < fields.get("e", 0) + skew:
        raise InvalidRequestState("Invalid params: requestState has expired")
    state = fields.get("s")
    if not isinstance(state, str):  # pragma: no cover - as above
        raise InvalidRequestState("Invalid params: requestState is malformed")
    return state
