"""The client checker's HTTP side: request heads, resumption, session expiry, DELETE and
the legacy HTTP+SSE endpoint.

Theory of operation
-------------------
:class:`HttpSide` judges the head of every request the client POSTs (the session id after
``initialize``, ``MCP-Protocol-Version`` against the negotiated revision or the 2026-07-28
``_meta`` version, and that era's ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*`` headers), and
runs the two HTTP checks of the handshake era in order: the held request's stream is
dropped after an event with an id and a ``retry`` field, its answer kept back until the
client resumes with ``GET`` and ``Last-Event-ID`` (no sooner than the retry); then the
session expires, its next request is answered 404 and the client must ``initialize`` again
without a session id. It answers ``DELETE`` and, for the legacy transport, gives the
``endpoint`` and checks that every message is POSTed there. No I/O, no clock: the
machine's adapter hands in the heads and the time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._versions import FEATURES
from ..http._headers import decode_header_value, param_header_text, param_matches, param_value
from ._client_kit import META_VERSION, PARAM_HEADERS, TOOL, KitView, Out, stateless_meta

#: The SSE ``retry`` the kit sends before dropping a stream (milliseconds): short, so that a
#: check takes little time, and the client MUST wait it (2025-11-25 transports.mdx).
RETRY_MS = 200

#: The 2026-07-28 requests whose ``Mcp-Name`` header mirrors a param, and which one.
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def _decoded(raw: str | None) -> str | None:
    return None if raw is None else decode_header_value(raw)


class HttpSide:
    """The HTTP checks of one :class:`~._client_machine.ClientMachine`."""

    def __init__(self, kit: KitView) -> None:
        self.kit = kit
        #: The dropped stream: its name, the last event id sent on it, and when.
        self.dropped: tuple[str, str, float] | None = None
        #: What the dropped stream still owes, sent when the client resumes it.
        self.release: list[Out] = []
        self.drop_done = False
        self.resumed = False
        self.expire_next = False
        #: The expired session's id, and when it expired.
        self.expired: str | None = None
        self.expired_at: float | None = None
        #: Whether the client sent a DELETE at all (one without the right session id is
        #: the business of client-session-id).
        self.delete_seen = False
        #: Legacy HTTP+SSE: the endpoint URI given in the ``endpoint`` event (None until
        #: the client opened the stream).
        self.endpoint: str | None = None

    def hold_back(self, request: str, before: int, now: float) -> None:
        """Once per run: drop the stream of the held request after an event with an id and
        a retry field; the answer queued since ``before`` waits for the client to resume
        (2025-11-25 transports.mdx, Resumability)."""
        if self.drop_done:
            return
        self.drop_done = True
        kit = self.kit
        answer = kit.outbox[before:]
        del kit.outbox[before:]
        for out in answer:
            out.event_id = None
        stream = kit._stream_for(request)
        prime = kit._emit(stream, raw=b"", retry=RETRY_MS)
        assert prime.event_id is not None
        kit.outbox.append(Out(stream=stream, drop=True))
        self.dropped = (stream, prime.event_id, now)
        kit.steps.append("stream dropped")
        self.release = answer

    def overdue(self, now: float, limit: float) -> None:
        """Judge a dropped stream not resumed within ``limit`` seconds."""
        if self.dropped is not None and now - self.dropped[2] > limit:
            self.dropped = None
            self.release = []
            self.kit.finding("client-sse-resume", "the client did not resume the dropped "
                             f"SSE stream with GET and Last-Event-ID within {limit:g} s")

    def head(self, message: Any, headers: Mapping[str, str], now: float) -> int | None:
        is_init = isinstance(message, dict) and message.get("method") == "initialize"
        sid = headers.get("mcp-session-id")
        if (self.wants_expiry and sid is not None and sid == self.kit.session_id
                and not is_init):
            self.expire()
            return 404
        if self.expired is not None and sid == self.expired and not is_init:
            return 404
        if self.expired is not None and is_init:
            if sid is not None:
                self.kit.finding("client-reinitialize", "the new initialize after 404 carried a "
                                 "session id", received=message)
            self.expired = None
            self.expired_at = None
            self.kit.steps.append("initialized again after 404")
            return None
        if self.kit.era_now == "stateless" or self.kit.phase == "new":
            if (isinstance(message, dict) and "method" in message and "id" in message
                    and (self.kit.era_now == "stateless" or stateless_meta(message))):
                meta = (message.get("params") or {}).get("_meta") if isinstance(
                    message.get("params"), dict) else None
                version = meta.get(META_VERSION) if isinstance(meta, dict) else None
                if version is not None and headers.get("mcp-protocol-version") != version:
                    self.kit.finding("client-protocol-version-header", "MCP-Protocol-Version "
                                     f"{headers.get('mcp-protocol-version')!r} differs from the "
                                     f"_meta version {version!r}", received=message)
                self.method_headers(message, headers)
            return None
        if is_init:
            return None
        if self.kit.session_id is not None and sid != self.kit.session_id:
            self.kit.finding("client-session-id", f"the session id was {sid!r:.12} on a request "
                             "after initialize", received=message)
        features = FEATURES.get(self.kit.revision or "")
        if features is not None and features.version_header:
            got = headers.get("mcp-protocol-version")
            if got != self.kit.revision:
                self.kit.finding("client-protocol-version-header", f"MCP-Protocol-Version was "
                                 f"{got!r}, the negotiated revision is {self.kit.revision}",
                                 received=message)
        return None

    def method_headers(self, message: dict[str, Any], headers: Mapping[str, str]) -> None:
        """2026-07-28 basic/transports/streamable-http.mdx: ``Mcp-Method`` on every request,
        ``Mcp-Name`` (``params.name`` or ``uri``) on tools/call, prompts/get and
        resources/read, unsafe values in the ``=?base64?...?=`` form."""
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        problems = []
        if _decoded(headers.get("mcp-method")) != method:
            problems.append(f"Mcp-Method {headers.get('mcp-method')!r} for {method}")
        if method in _NAMED:
            name = params.get(_NAMED[method])
            if _decoded(headers.get("mcp-name")) != name:
                problems.append(f"Mcp-Name {headers.get('mcp-name')!r} for {name!r}")
        if method == "tools/call" and params.get("name") == TOOL["name"]:
            # x-mcp-header parameters are mirrored into Mcp-Param-{Name} (clients MUST; an
            # absent or null value omits the header).
            for header, path in PARAM_HEADERS.items():
                text = param_header_text(param_value(params.get("arguments"), path))
                got = _decoded(headers.get(f"mcp-param-{header.lower()}"))
                if text is None and got is None:
                    continue
                value = param_value(params.get("arguments"), path)
                if got is None or not param_matches(got, value):
                    problems.append(f"Mcp-Param-{header} {got!r} for {value!r}")
        if problems:
            self.kit.finding("client-method-headers", "; ".join(problems), received=message)

    def delete(self, headers: Mapping[str, str], now: float) -> int:
        """A DELETE: the HTTP status to answer (2025-03-26+ basic/transports.mdx, Session
        Management: it ends the session it names; 2026-07-28 has no sessions: 405)."""
        if self.kit.era_now == "stateless":
            return 405
        self.delete_seen = True
        session = headers.get("mcp-session-id")
        if session is None or session != self.kit.session_id:
            return 404
        self.kit.steps.append("session deleted")
        return 200

    def get(self, headers: Mapping[str, str], now: float) -> str | None:
        """A GET (an SSE stream). Returns the stream it carries -- the dropped stream when
        it resumes it, else ``"main"`` -- or ``None`` to refuse it (405)."""
        if self.kit.era_now == "stateless":
            return None
        last = headers.get("last-event-id")
        if self.dropped is not None and last is not None:
            stream, expected, dropped_at = self.dropped
            if last != expected:
                self.kit.finding("client-sse-resume", f"resumed with Last-Event-ID {last!r}, the "
                                 f"last event sent was {expected!r}")
            waited = now - dropped_at
            # ``dropped_at`` is when the drop was decided, before the connection closed, so
            # the wait measured here is never shorter than the client's: no false positive.
            if waited * 1000 < RETRY_MS:
                self.kit.finding("client-sse-retry", f"resumed {waited * 1000:.0f} ms after the "
                                 f"drop, before the retry of {RETRY_MS} ms")
            self.dropped = None
            self.resumed = True
            self.kit.steps.append("stream resumed")
            for out in self.release:
                out.stream = stream
                self.kit.outbox.append(out)
            self.release = []
            self.expire_next = True
            return stream
        return "main"

    def sse_endpoint(self, now: float) -> str | None:
        """Legacy HTTP+SSE: a GET on the SSE URL. Returns the URI for the ``endpoint`` event
        that opens the stream (then the ``"main"`` stream follows), or ``None`` to refuse a
        second stream (409: the kit serves one connection)."""
        if self.endpoint is not None:
            return None
        self.endpoint = "/messages?session_id=kit-legacy-1"
        self.kit.steps.append("endpoint sent")
        return self.endpoint

    def sse_post(self, target: str, message: Any, now: float) -> int | None:
        """Legacy HTTP+SSE: a POST to ``target`` (path and query). Returns the status to
        answer instead of taking the message (405: the back-compatibility probe, before
        the stream is open), else ``None`` (the message is then given to :meth:`receive`
        and answered 202)."""
        if self.endpoint is None:
            return 405
        if target != self.endpoint:
            self.kit.finding("client-sse-endpoint", f"a message was POSTed to {target!r}, not to "
                             f"the endpoint {self.endpoint!r} the server gave", received=message)
        return None

    def expire(self) -> None:
        """HTTP: forget the session; its next request gets 404 (transports.mdx, Session
        Management: the client MUST then initialize again without a session id)."""
        self.expire_next = False  # once per run
        if self.kit.session_id is not None:
            self.expired = self.kit.session_id
            self.kit.session_id = None
            self.kit.phase = "new"
            self.kit._initialize_key = None
            self.expired_at = self.kit._now
            self.kit.steps.append("session expired")

    @property
    def wants_expiry(self) -> bool:
        """HTTP: the resumption check is over, the session is to expire now."""
        return self.expire_next and self.resumed and self.expired is None and (
            self.kit.session_id is not None)
