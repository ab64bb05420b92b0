"""Rules and helpers of the stateless era (2026-07-28).

Theory of operation
-------------------
In 2026-07-28 there is no session: every request carries the client's protocol version,
capabilities and identity in ``params._meta`` under reserved ``io.modelcontextprotocol/``
keys (``basic/versioning.mdx``, ``basic/index.mdx`` "_meta"). This module holds the data the
connection consults for that era -- the reserved keys, the listen-stream filter table, the
log-level order -- and the ``requestState`` sealing helpers for multi-round-trip requests.

``requestState`` (``basic/patterns/mrtr.mdx``) is handed to the client and comes back in the
retry: the server must treat it as attacker input. :func:`seal_state` wraps the application's
state with an HMAC-SHA256 over the state, the method, the tool/prompt/resource name and an
expiry; :func:`open_state` refuses anything tampered with, replayed against another
method/name, or expired. The key and the clock are the caller's (``now`` is an argument, as
everywhere in the core): if sealed state must survive a restart or cross processes, use a
shared key and a clock they share (e.g. wall-clock seconds).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from ._errors import ErrorCode, ProtocolError

__all__ = [
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
    return isinstance(meta, Mapping) and (
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


def seal_state(
    key: bytes, state: str, *, method: str, name: str | None, expires_at: float
) -> str:
    """Wrap ``state`` so that only this server can read it back, for this method and
    tool/prompt/resource name, until ``expires_at`` (on the caller's clock)."""
    if not key:
        raise ValueError("a non-empty key is required")
    payload = json.dumps(
        {"s": state, "m": method, "n": name, "e": expires_at}, separators=(",", ":")
    ).encode("utf-8")
    return f"{_b64(payload)}.{_b64(_mac(key, payload))}"


def open_state(key: bytes, sealed: object, *, method: str, name: str | None, now: float) -> str:
    """Return the state inside ``sealed``; raise :class:`InvalidRequestState` otherwise."""
    if not isinstance(sealed, str) or sealed.count(".") != 1:
        raise InvalidRequestState("Invalid params: requestState is malformed")
    body, tag = sealed.split(".")
    try:
        payload = _unb64(body)
        given = _unb64(tag)
    except ValueError:  # binascii.Error is one
        raise InvalidRequestState("Invalid params: requestState is malformed") from None
    import hmac

    if not hmac.compare_digest(given, _mac(key, payload)):
        raise InvalidRequestState("Invalid params: requestState failed its integrity check")
    try:
        fields = json.loads(payload)
    except ValueError:  # pragma: no cover - only we write payloads, and the MAC matched
        raise InvalidRequestState("Invalid params: requestState is malformed") from None
    if fields.get("m") != method or fields.get("n") != name:
        raise InvalidRequestState("Invalid params: requestState belongs to another request")
    if not now < fields.get("e", 0):
        raise InvalidRequestState("Invalid params: requestState has expired")
    state = fields.get("s")
    if not isinstance(state, str):  # pragma: no cover - as above
        raise InvalidRequestState("Invalid params: requestState is malformed")
    return state
