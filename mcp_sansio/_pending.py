"""Bookkeeping for requests in flight, in both directions.

Theory of operation
-------------------
:class:`Outgoing` records a request we sent and are waiting on; :class:`Incoming` one the peer
sent and the application has not answered. Both are small slotted objects kept in dicts keyed
by request id -- the only per-request state the core holds, so that 100,000 pending requests
stay cheap.

Ids of requests that *ended locally* (timed out or cancelled) are remembered in a bounded
:class:`RecentIds` so that a reply that still arrives becomes a ``LateResponse`` rather than
an ``UnexpectedResponse``; the same structure remembers incoming requests the peer cancelled,
so that the application's late answer is dropped quietly. The bound keeps memory flat on a
connection that lives for months; the default is explained at :data:`RECENT_IDS_LIMIT`.
"""

from __future__ import annotations

from typing import Any

from ._events import RequestId

__all__ = ["RECENT_IDS_LIMIT", "Incoming", "Outgoing", "RecentIds"]

#: How many ended request ids are remembered (per direction). A late reply normally arrives
#: within seconds of its timeout; 4096 covers that many timeouts or cancels in such a window,
#: at about 100 bytes each (~400 KiB worst case). Older ids fall back to "unexpected".
RECENT_IDS_LIMIT = 4096


class Outgoing:
    """A request we sent that has not ended."""

    __slots__ = (
        "last_progress",
        "method",
        "params",
        "paused",
        "progress_resets",
        "progress_token",
        "related",
        "subject",
        "timeout",
    )

    def __init__(
        self,
        method: str,
        timeout: float | None,
        progress_token: str | int | None,
        progress_resets: bool,
        subject: str | None = None,
        related: RequestId | None = None,
    ) -> None:
        self.method = method
        self.timeout = timeout
        self.progress_token = progress_token
        self.progress_resets = progress_resets
        self.last_progress: float | None = None
        #: While paused: the time left on the (idle, hard) deadlines.
        self.paused: tuple[float | None, float | None] | None = None
        #: The URI of a resources/(un)subscribe request (recorded when it succeeds).
        self.subject = subject
        #: The incoming request this one was sent on behalf of (HTTP routing).
        self.related = related
        #: 2026-07-28 tools/call, prompts/get, resources/read: the params as sent, to build
        #: the retry if the server answers input_required.
        self.params: dict[str, Any] | None = None


class Incoming:
    """A request the peer sent that the application has not answered yet."""

    __slots__ = (
        "batch", "client_capabilities", "last_progress", "log_level", "method", "name",
        "progress_token", "subject",
    )

    def __init__(
        self,
        method: str,
        progress_token: str | int | None,
        subject: str | None = None,
        batch: Any = None,
    ) -> None:
        self.method = method
        self.progress_token = progress_token
        self.last_progress: float | None = None
        #: The URI of a resources/(un)subscribe request (recorded when answered with success).
        self.subject = subject
        #: The batch whose reply array this request's answer belongs in (2025-03-26), if any.
        self.batch = batch
        #: 2026-07-28: what the request's ``_meta`` declared (capabilities, log level), and
        #: the tool/prompt name or resource URI that a sealed requestState is bound to.
        self.client_capabilities: dict[str, Any] | None = None
        self.log_level: str | None = None
        self.name: str | None = None


class RecentIds:
    """A bounded, insertion-ordered set of request ids with a value each.

    The dict is made on the first ``add``: every connection holds two of these and most never
    use them (an id lands here only when a request is cancelled or times out), so an idle
    session should not pay for two empty tables. A plain dict keeps insertion order, which is
    all the eviction of the oldest id needs.
    """

    __slots__ = ("_items", "limit")

    def __init__(self, limit: int = RECENT_IDS_LIMIT) -> None:
        self._items: dict[RequestId, Any] | None = None
        self.limit = limit

    def add(self, request_id: RequestId, value: Any) -> None:
        items = self._items
        if items is None:
            items = self._items = {}
        items[request_id] = value
        if len(items) > self.limit:
            del items[next(iter(items))]

    def pop(self, request_id: RequestId) -> Any:
        return None if self._items is None else self._items.pop(request_id, None)

    def __contains__(self, request_id: object) -> bool:
        return self._items is not None and request_id in self._items

    def __len__(self) -> int:
        return 0 if self._items is None else len(self._items)
