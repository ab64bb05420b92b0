"""Listen streams (2026-07-28 ``subscriptions/listen``): one sub-state of a connection.

Theory of operation
-------------------
In the stateless era a client that wants change notifications opens a long-lived
``subscriptions/listen`` request naming a filter (spec-digest h, "Listen streams"; the
``SubscriptionFilter`` of the 2026-07-28 schema). The server answers first with
``notifications/subscriptions/acknowledged`` carrying the subset of the filter its declared
capabilities honour (the table :data:`~mcp_sansio._stateless.LISTEN_FILTERS`), then sends only
the honoured notifications, each tagged with the stream's ``subscriptionId`` (the listen
request's id). The stream ends with a result, a cancellation, or the connection.

:class:`ListenStreams` holds the open streams of one connection, by the listen request's id,
with the honoured filter (``None`` on the client until the acknowledgement arrives). It makes
the decisions -- what to honour, which stream a notification goes to, whether a received one
was acknowledged -- and hands back messages and events; the connection queues and reports
them. It keeps no clock and does no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from . import _codec
from ._capabilities import declared
from ._events import Notification, RequestId, SubscriptionAcknowledged
from ._stateless import LISTEN_FILTERS, LISTEN_NOTIFICATIONS, META_SUBSCRIPTION_ID, filter_allows

__all__ = ["LISTEN_ACK", "ListenStreams"]

#: The listen stream's first message (2026-07-28 schema, ``SubscriptionsAcknowledged``).
LISTEN_ACK = "notifications/subscriptions/acknowledged"


class ListenStreams(dict[RequestId, dict[str, Any] | None]):
    """The open listen streams of one connection (either role): listen request id -> the
    honoured filter (None: not acknowledged yet).

    A dict with the stream rules as methods: every connection has one and answering any
    request forgets its id here (``pop``), so it costs what a plain dict costs."""

    __slots__ = ()

    def discard(self, request_id: RequestId) -> None:
        """Forget a stream (its request ended, either way)."""
        self.pop(request_id, None)

    # -- server side -------------------------------------------------------------------------

    def open(
        self, request_id: RequestId, params: Mapping[str, Any], capabilities: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Open a stream with the part of its filter our ``capabilities`` honour; return the
        acknowledgement, the stream's first message."""
        wanted = params.get("notifications")
        wanted = wanted if type(wanted) is dict else {}
        honoured: dict[str, Any] = {}
        for key, (_, capability) in LISTEN_FILTERS.items():
            value = wanted.get(key)
            if not declared(capabilities, capability):
                continue
            if key == "resourceSubscriptions":
                if isinstance(value, list) and value:
                    honoured[key] = [uri for uri in value if isinstance(uri, str)]
            elif value is True:
                honoured[key] = True
        self[request_id] = honoured
        return _codec.notification_message(
            LISTEN_ACK, {"notifications": honoured, "_meta": {META_SUBSCRIPTION_ID: request_id}},
        )

    def fan_out(
        self, method: str, body: Mapping[str, Any] | None
    ) -> Iterator[tuple[RequestId, dict[str, Any]]]:
        """The (stream id, tagged notification) for every stream that honoured ``method``."""
        for sub_id, honoured in self.items():
            if honoured is not None and filter_allows(honoured, method, body):
                meta = dict((body or {}).get("_meta") or {})
                meta[META_SUBSCRIPTION_ID] = sub_id
                yield sub_id, _codec.notification_message(method, {**(body or {}), "_meta": meta})

    # -- client side -------------------------------------------------------------------------

    def expect(self, request_id: RequestId) -> None:
        """We sent a listen request: its acknowledgement is awaited."""
        self[request_id] = None

    @staticmethod
    def concerns(method: str) -> bool:
        """Whether a received notification belongs to a listen stream."""
        return method == LISTEN_ACK or method in LISTEN_NOTIFICATIONS

    def receive(
        self, method: str, params: dict[str, Any]
    ) -> Notification | SubscriptionAcknowledged | tuple[str, RequestId | None]:
        """Judge a received stream notification: the event to deliver, or (reason, stream
        id) to report it refused (-32602). The acknowledgement comes first, then only the
        notification types it honoured, each tagged with the stream's subscriptionId."""
        meta = params.get("_meta")
        sub_id = meta.get(META_SUBSCRIPTION_ID) if type(meta) is dict else None
        if (type(sub_id) is not str and type(sub_id) is not int) or sub_id not in self:
            return (f"{method} is not tagged with the subscriptionId of a listen stream we "
                    "opened", None)
        honoured = self[sub_id]
        if method == LISTEN_ACK:
            granted = params.get("notifications")
            if honoured is not None or type(granted) is not dict:
                return "duplicate or malformed subscription acknowledgement", sub_id
            self[sub_id] = granted
            return SubscriptionAcknowledged(request_id=sub_id, notifications=granted)
        if honoured is None:
            return f"{method} arrived before the listen stream was acknowledged", sub_id
        if not filter_allows(honoured, method, params):
            return f"{method} was not acknowledged on listen stream {sub_id!r}", sub_id
        return Notification(method=method, params=params)
