"""A machine that plays the *server* to an MCP client under test, and judges the client.

Theory of operation
-------------------
The client under test drives the conversation: it connects, does its work (list the
tools, call one...) and leaves. :class:`ClientMachine` answers it as a small server with one
tool (``kit_echo``) and the ``tools`` capability only, and meanwhile exercises the client's
side of the protocol. It does no I/O and reads no clock: the adapter
(:mod:`mcp_sansio.adapters.testing_client`) feeds it every message the client sent -- with
the HTTP request head when the transport is HTTP -- and the time, and sends what it
queues in :attr:`ClientMachine.outbox`, on the stream each item names.

Handshake era (2024-11-05 .. 2025-11-25), in order.

Its parts are held, not inherited: the kit's own requests, the HTTP side and the
stateless era (:mod:`._client_kit`). The rest: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from .._capabilities import lookup
from .._versions import HANDSHAKE_REVISIONS, KNOWN_REVISIONS, STATELESS_REVISIONS
from ._client_http import HttpSide
from ._client_kit import (
    META_CAPS,
    META_VERSION,
    STATELESS_TOOL,
    TOOL,
    Out,
    request_key,
    stateless_meta,
)
from ._client_probes import HUGE_SIZE, Probes
from ._client_stateless import TASKS_EXTENSION, StatelessKit
from ._findings import CHECKS, Finding, Report
from ._invalid import MUST, SHOULD
from ._schemas import Schemas, bundled

__all__ = ["IDLE_BEFORE_PROBES", "HUGE_SIZE", "ClientMachine", "Out"]

#: A client that sends no request after ``initialized`` (it only listens) is probed after
#: this many seconds of silence: long enough for an ordinary client's first request to
#: arrive on a loaded machine (the probes then wait for it, so that it is held while they
#: run), short next to any sensible call timeout.
IDLE_BEFORE_PROBES = 2.0

#: Requests a client sends, and the server capability that gates each (``None``: always
#: legal). Sources: each revision's server/*.mdx capability sections; completion/complete is
#: ungated in 2024-11-05 (spec-digest c2).
_GATES: dict[str, tuple[str, ...] | None] = {
    "ping": None, "initialize": None, "server/discover": None,
    "tools/list": ("tools",), "tools/call": ("tools",),
    "prompts/list": ("prompts",), "prompts/get": ("prompts",),
    "resources/list": ("resources",), "resources/templates/list": ("resources",),
    "resources/read": ("resources",),
    "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "logging/setLevel": ("logging",), "completion/complete": ("completions",),
    "subscriptions/listen": None,  # legal; the server acknowledges the honoured subset
}

_FINDING_FIELDS = frozenset(attrs.fields_dict(Finding))


class ClientMachine:
    """Plays a server to one client under test (see the module docstring).

    :param revision: the revision the kit speaks (``None``: any the client asks for).
    :param era: ``"handshake"`` or ``"stateless"`` to serve one era only (``None``: both,
        as a dual-era server does; the client's first message picks).
    :param transport: ``"stdio"``, ``"http"`` (Streamable HTTP) or ``"sse"`` (the legacy
        HTTP+SSE transport; handshake era only).
    :param call_timeout: seconds the client has to answer each of the kit's requests (and
        to take each step it owes: ``initialized``, a resumption, a retry).
    :param extra: further server notifications to send in the hostile phase.
    """

    def __init__(self, *, revision: str | None = None, era: str | None = None,
                 transport: str = "stdio", call_timeout: float = 10.0,
                 extra: Iterable[Any] = (), schemas: Schemas | None = None) -> None:
        if revision is not None and revision not in KNOWN_REVISIONS:
            raise ValueError(f"unknown revision {revision!r}")
        if era not in (None, "handshake", "stateless"):
            raise ValueError(f"era must be 'handshake' or 'stateless', not {era!r}")
        if revision is not None:
            era = "stateless" if revision in STATELESS_REVISIONS else "handshake"
        if transport == "sse":
            if era == "stateless":
                raise ValueError("the legacy HTTP+SSE transport has no stateless era")
            era = "handshake"
        self.pinned = revision
        self.era = era
        self.transport = transport
        self.call_timeout = call_timeout
        self.extra = list(extra)
        self.schemas = schemas or bundled()
        self.report = Report()
        self.outbox: list[Out] = []
        #: The revision in force (None until the client picked one).
        self.revision: str | None = None
        self.client_caps: dict[str, Any] = {}
        self.phase = "new"  # new, initializing, ready, done
        self.session_id: str | None = None
        self.sessions = 0
        self._ids_seen: set[str] = set()
        self._in_flight: dict[str, str] = {}  # the client's requests we have not answered
        self._initialize_key: str | None = None
        self._answered_at: float | None = None  # initialize answered, initialized awaited
        self._ready_at: float | None = None
        self._events = 0
        self._last_event: dict[str, str] = {}
        #: The kit's own requests to the client; the HTTP side (heads, resumption,
        #: expiry, the legacy endpoint); the stateless era's MRTR, listen streams and tasks.
        self.probes = Probes(self)
        self.http = HttpSide(self)
        self.stateless = StatelessKit(self)
        self.finished = False
        self.cut_short = False
        #: What the run went through, in order (for a reader of the report, and for tests
        #: that a clean run really exercised each step).
        self.steps: list[str] = []

    # -- findings ----------------------------------------------------------------------------

    def finding(self, rule: str, detail: str, *, requirement: str | None = None,
                sent: Any = None, received: Any = None) -> None:
        check = CHECKS[rule]
        # The citation and the cut-short mark, for a Finding class that carries them.
        extra: dict[str, Any] = {}
        if "source" in _FINDING_FIELDS:
            extra["source"] = check.source
        if "cut_short" in _FINDING_FIELDS:
            extra["cut_short"] = self.cut_short
        self.report.add(Finding(rule=rule, requirement=requirement or check.requirement,
                                detail=detail, revision=self.revision, sent=sent,
                                received=received, **extra))

    def mark_cut_short(self) -> None:
        """The run's budget ran out: later findings, and the report, say so (what was not
        reached may hide more)."""
        self.cut_short = True
        if "cut_short" in attrs.fields_dict(Report):
            setattr(self.report, "cut_short", True)  # noqa: B010 (a field Report may lack)

    def _must_from(self, first: str) -> str:
        """MUST from revision ``first`` on, SHOULD before (the operation rules became MUSTs
        in 2025-06-18: spec-digest b)."""
        return MUST if (self.revision or "9") >= first else SHOULD

    # -- output ------------------------------------------------------------------------------

    def _stream_for(self, key: str | None) -> str:
        return "main" if self.transport != "http" or key is None else key

    def _emit(self, stream: str, message: Any = None, *, raw: bytes | None = None,
              end: bool = False, retry: int | None = None) -> Out:
        event_id = None
        if self.transport == "http" and self.era_now == "handshake":
            self._events += 1
            event_id = f"{self.sessions}-{stream}-{self._events}"
            self._last_event[stream] = event_id
        out = Out(stream=stream, message=message, raw=raw, event_id=event_id, end=end,
                  retry=retry)
        self.outbox.append(out)
        return out

    def take(self) -> list[Out]:
        out, self.outbox = self.outbox, []
        return out

    @property
    def era_now(self) -> str:
        if self.revision is not None:
            return "stateless" if self.revision in STATELESS_REVISIONS else "handshake"
        return self.era or "handshake"

    @staticmethod
    def stream_key(request_id: Any) -> str:
        """The stream name of the client request with this id."""
        return request_key(request_id)

    def _answer(self, key: str, request_id: Any, result: Any = None,
                error: tuple[int, str] | None = None, data: Any = None) -> None:
        self._in_flight.pop(key, None)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = {"code": error[0], "message": error[1]}
            if data is not None:
                message["error"]["data"] = data
        else:
            message["result"] = result
        self._emit(self._stream_for(key), message, end=True)

    # -- input -------------------------------------------------------------------------------

    def receive_garbage(self, data: bytes, now: float) -> None:
        """The client wrote something that is not a JSON value."""
        # ``received`` stays JSON-serializable (a text), for machine-readable reports.
        self.finding("client-output-not-json", f"not JSON: {data[:80]!r}",
                     received=data[:200].decode("utf-8", "replace"))

    def receive(self, message: Any, now: float, *,
                headers: Mapping[str, str] | None = None) -> int | None:
        """One message from the client, at ``now``. ``headers`` (lower-case names) is the
        HTTP request head that carried it. Returns an HTTP status to answer instead of the
        normal one (404: the session expired), else ``None``."""
        self._now = now
        if headers is not None:
            status = self.http.head(message, headers, now)
            if status is not None:
                return status
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.finding("client-envelope", "not a JSON-RPC 2.0 message", received=message)
            return None
        if "method" in message:
            method = message["method"]
            if not isinstance(method, str):
                self.finding("client-envelope", "method is not a string", received=message)
            elif "id" in message:
                self._request(message, method, now, headers)
            else:
                self._notification(message, method, now)
        elif "id" in message and ("result" in message or "error" in message):
            self.probes.response(message, now)
        else:
            self.finding("client-envelope", "neither a request, a notification nor a "
                         "response", received=message)
        return None

    # -- HTTP (the HTTP side's) --------------------------------------------------------------

    def http_delete(self, headers: Mapping[str, str], now: float) -> int:
        """A DELETE: the HTTP status to answer (2025-03-26+ basic/transports.mdx, Session
        Management: it ends the session it names; 2026-07-28 has no sessions: 405)."""
        return self.http.delete(headers, now)

    def stream_closed(self, stream: str, now: float) -> None:
        """HTTP: the client closed ``stream`` before its end (2026-07-28: the cancellation)."""
        self.stateless.stream_closed(stream, now)

    def http_get(self, headers: Mapping[str, str], now: float) -> str | None:
        """A GET (an SSE stream). Returns the stream it carries -- the dropped stream when
        it resumes it, else ``"main"`` -- or ``None`` to refuse it (405)."""
        return self.http.get(headers, now)

    def sse_endpoint(self, now: float) -> str | None:
        """Legacy HTTP+SSE: a GET on the SSE URL. Returns the URI for the ``endpoint`` event
        that opens the stream (then the ``"main"`` stream follows), or ``None`` to refuse a
        second stream (409: the kit serves one connection)."""
        return self.http.sse_endpoint(now)

    def sse_post(self, target: str, message: Any, now: float) -> int | None:
        """Legacy HTTP+SSE: a POST to ``target`` (path and query). Returns the status to
        answer instead of taking the message (405: the back-compatibility probe, before
        the stream is open), else ``None`` (the message is then given to :meth:`receive`
        and answered 202)."""
        return self.http.sse_post(target, message, now)

    @property
    def endpoint(self) -> str | None:
        """Legacy HTTP+SSE: the endpoint URI given in the ``endpoint`` event (None until
        the client opened the stream)."""
        return self.http.endpoint

    def expire_session(self) -> None:
        """HTTP: forget the session; its next request gets 404 (transports.mdx, Session
        Management: the client MUST then initialize again without a session id)."""
        self.http.expire()

    @property
    def wants_expiry(self) -> bool:
        """HTTP: the resumption check is over, the session is to expire now."""
        return self.http.wants_expiry

    # -- requests ----------------------------------------------------------------------------

    def _request(self, message: dict[str, Any], method: str, now: float,
                 headers: Mapping[str, str] | None) -> None:
        request_id = message["id"]
        key = request_key(request_id)
        if request_id is None or isinstance(request_id, bool) or not isinstance(
                request_id, (str, int)):
            self.finding("client-envelope", f"request id {request_id!r} is not a string or "
                         "an integer", received=message)
            # JSON-RPC 2.0 s. 5: an invalid request is answered, with a null id.
            self._answer(key, None, error=(-32600, "Invalid Request"))
            return
        if (self.phase == "new" and self.revision is None and self.era != "stateless"
                and (method == "server/discover" or stateless_meta(message))
                and self._discover(message, key, now)):
            return
        if method == "initialize" and self.era_now == "stateless" and self.era == "stateless":
            self._answer(key, request_id, error=(-32601, "Method not found"))
            return
        if self.era_now == "stateless" and method != "initialize":
            self._stateless_request(message, method, key, now)
            return
        self._ids_seen_check(key, message)
        self._in_flight[key] = method
        if method == "ping":
            self._answer(key, request_id, {})
            return
        if method == "initialize":
            self._initialize(message, key, now)
            return
        if self.phase == "new":
            self.finding("client-request-before-initialize", f"{method} before initialize",
                         received=message)
            self._answer(key, request_id, error=(-32600, "Not initialized"))
            return
        if self.phase == "initializing":
            self.finding("client-initialized", f"{method} before notifications/initialized",
                         received=message)
            self.phase = "ready"
            self._ready_at = now
        if not self._legal(message, method, key):
            return
        if not self.probes.probed and not self.probes.probing and self.probes.held is None:
            self.probes.held = (key, request_id, message)
            self.probes.start(now)
            return
        if (self.probes.http_hostile_due and not self.probes.probing and self.probes.held is None
                and not self.http.expire_next and self.http.expired is None):
            # HTTP: the hostile phase comes last, once resumption and 404 were seen (a
            # client that gives up on a garbage event still shows those).
            self.probes.http_hostile_due = False
            self.probes.held = (key, request_id, message)
            self.probes.probing = True
            self.probes.queue = [("hostile", {}, False)]
            self.probes.advance(now)
            return
        self._serve(key, request_id, method, message)

    def _ids_seen_check(self, key: str, message: Any) -> None:
        if key in self._ids_seen:
            self.finding("client-id-reused", f"request id {key} used twice in one session",
                         received=message)
        self._ids_seen.add(key)

    def _legal(self, message: dict[str, Any], method: str, key: str) -> bool:
        revision = self.revision or HANDSHAKE_REVISIONS[-1]
        name = self.schemas.request_definition(revision, method)
        if name is None:
            self.finding("client-unknown-request", f"{method} is not a client request of "
                         f"{revision}", received=message)
            self._answer(key, message["id"], error=(-32601, "Method not found"))
            return False
        gate = _GATES.get(method)
        rule = lookup(method, revision)
        if rule is not None and revision in rule.ungated_in:  # the method table's column
            gate = None
        if gate is not None and not self._server_has(gate):
            self.finding("client-capability-gating", f"{method} without the server "
                         f"capability {'.'.join(gate)}", received=message,
                         requirement=self._must_from("2025-06-18"))
            self._answer(key, message["id"], error=(-32601, "Method not found"))
            return False
        problems = self.schemas.errors(revision, name, message)
        if problems:
            self.finding("client-request-schema", f"{method}: {'; '.join(problems)}",
                         received=message)
            self._answer(key, message["id"], error=(-32602, "Invalid params"))
            return False
        return True

    def server_capabilities(self) -> dict[str, Any]:
        """The kit's capabilities: ``tools``; in 2026-07-28 with ``listChanged`` (its listen
        streams honour ``toolsListChanged``) and the tasks extension."""
        if self.era_now == "stateless":
            return {"tools": {"listChanged": True},
                    "extensions": {TASKS_EXTENSION: {}}}
        return {"tools": {}}

    def _server_has(self, gate: tuple[str, ...]) -> bool:
        node: Any = self.server_capabilities()
        for part in gate:
            if not isinstance(node, dict) or part not in node or node[part] is False:
                return False
            node = node[part]
        return True

    def _serve(self, key: str, request_id: Any, method: str, message: dict[str, Any]) -> None:
        if method == "tools/list":
            result: dict[str, Any] = {"tools": [
                STATELESS_TOOL if self.era_now == "stateless" else TOOL]}
        elif method == "tools/call":
            params = message.get("params") or {}
            if params.get("name") != TOOL["name"]:
                self._answer(key, request_id, error=(-32602, "Unknown tool"))
                return
            text = (params.get("arguments") or {}).get("text", "")
            result = {"content": [{"type": "text", "text": str(text)}], "isError": False}
        else:
            self._answer(key, request_id, error=(-32601, "Method not found"))
            return
        if self.era_now == "stateless":
            result["resultType"] = "complete"
            if method == "tools/list":
                result.update(ttlMs=0, cacheScope="private")
            if (method == "tools/call" and self.stateless.task is None
                    and self.stateless.declares_tasks()):
                self.stateless.create_task(key, request_id, result)
                return
        self._answer(key, request_id, result)

    def _discover(self, message: dict[str, Any], key: str, now: float) -> bool:
        """A stateless-era probe before any initialize: a dual-era kit goes stateless when
        the probe is well formed; a handshake-only kit answers -32601 like a server of that
        era (2026-07-28 basic/versioning.mdx: the client falls back to initialize)."""
        if self.era == "handshake":
            self._answer(key, message["id"], error=(-32601, "Method not found"))
            return True
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(META_VERSION) if isinstance(meta, dict) else None
        if version in STATELESS_REVISIONS:
            self.revision = version
            self.sessions += 1
            self.report.sessions[version] = self.report.sessions.get(version, 0) + 1
            return False  # served below, as a stateless request
        self._answer(key, message["id"], error=(-32601, "Method not found"))
        return True

    def _initialize(self, message: dict[str, Any], key: str, now: float) -> None:
        request_id = message["id"]
        if self.phase != "new":
            self._answer(key, request_id, error=(-32600, "Already initialized"))
            return
        params = message.get("params")
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        if self.pinned is not None:
            chosen = self.pinned
        elif requested in HANDSHAKE_REVISIONS:
            chosen = str(requested)
        else:
            chosen = HANDSHAKE_REVISIONS[-1]
        self.revision = chosen
        schema_revision = requested if requested in HANDSHAKE_REVISIONS else chosen
        problems = self.schemas.errors(str(schema_revision), "InitializeRequest", message)
        if problems:
            self.finding("client-initialize-schema", "; ".join(problems), received=message)
        if requested in STATELESS_REVISIONS:
            self.finding("client-version", f"initialize offered {requested}, a revision "
                         "without initialize", received=message)
        caps = params.get("capabilities") if isinstance(params, dict) else None
        self.client_caps = caps if isinstance(caps, dict) else {}
        self.phase = "initializing"
        self._answered_at = now
        self._initialize_key = key
        self.sessions += 1
        self.report.sessions[chosen] = self.report.sessions.get(chosen, 0) + 1
        self.steps.append(f"initialize answered ({chosen})")
        self._ids_seen = {key}
        result = {"protocolVersion": chosen, "capabilities": self.server_capabilities(),
                  "serverInfo": {"name": "mcp-sansio-client-check", "version": "1"}}
        if self.transport == "http":
            self.session_id = f"kit-session-{self.sessions}"
        self._answer(key, request_id, result)

    # -- stateless requests ------------------------------------------------------------------

    def _stateless_request(self, message: dict[str, Any], method: str, key: str,
                           now: float) -> None:
        request_id = message["id"]
        revision = self.revision or STATELESS_REVISIONS[-1]
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(META_VERSION) if isinstance(meta, dict) else None
        if (not isinstance(meta, dict) or not isinstance(version, str)
                or not isinstance(meta.get(META_CAPS), dict)):
            self.finding("client-meta-envelope", f"{method} without _meta "
                         f"{META_VERSION} and {META_CAPS}", received=message)
            self._answer(key, request_id, error=(-32602, "Missing _meta"))
            return
        if self.revision is None:
            self.revision = version if version in STATELESS_REVISIONS else revision
            self.sessions += 1
            self.report.sessions[self.revision] = self.report.sessions.get(self.revision,
                                                                           0) + 1
            revision = self.revision
        if key in self._in_flight:
            self.finding("client-id-reused", f"request id {key} reused while outstanding",
                         received=message)
        self._in_flight[key] = method
        self.client_caps = meta[META_CAPS]
        if version not in STATELESS_REVISIONS:
            self._answer(key, request_id, error=(-32022, "Unsupported protocol version"))
            return
        if method == "server/discover":
            self._answer(key, request_id, {
                "resultType": "complete", "supportedVersions": list(STATELESS_REVISIONS),
                "capabilities": self.server_capabilities(), "ttlMs": 0,
                "cacheScope": "private"})
            return
        rule = lookup(method, revision)
        if rule is not None and rule.extension == TASKS_EXTENSION:
            self.stateless.task_request(message, method, key, now)
            return
        if not self._legal(message, method, key):
            return
        if method == "subscriptions/listen":
            self.stateless.listen(message, key)
            return
        if method == "tools/call" and self.stateless.mrtr_check(message, key, now):
            return
        if not self.probes.hostile_sent and self.stateless.mrtr is not None:
            # Hostile output before the answer to the input_required retry (on HTTP, in
            # that request's SSE stream), so that a client that gives up on it has shown
            # its retry first: the client must live on.
            self.probes.hostile_sent = True
            self.probes.hostile(self._stream_for(key))
            self.steps.append("hostile output sent")
        self._serve(key, request_id, method, message)

    # -- notifications -----------------------------------------------------------------------

    def _notification(self, message: dict[str, Any], method: str, now: float) -> None:
        revision = self.revision or (STATELESS_REVISIONS[-1] if self.era_now == "stateless"
                                     else HANDSHAKE_REVISIONS[-1])
        name = self.schemas.notification_definition(revision, method)
        if name is None:
            self.finding("client-unknown-notification", f"{method} is not a client "
                         f"notification of {revision}", received=message)
            return
        problems = self.schemas.errors(revision, name, message)
        if problems:
            self.finding("client-notification-schema", f"{method}: {'; '.join(problems)}",
                         received=message)
            return
        params = message.get("params") or {}
        if method == "notifications/initialized":
            if self.phase == "new":
                self.finding("client-initialized", "notifications/initialized before the "
                             "initialize result", received=message)
            elif self.phase == "initializing":
                self.phase = "ready"
                self._ready_at = now
                self.steps.append("initialized")
        elif method == "notifications/cancelled":
            self._cancelled(message, params)
        elif method == "notifications/progress":
            self.probes.progress(message, params)
        elif method == "notifications/roots/list_changed":
            roots = self.client_caps.get("roots")
            if not (isinstance(roots, dict) and roots.get("listChanged")):
                self.finding("client-notification-gating", "roots/list_changed without the "
                             "roots.listChanged capability", received=message)

    def _cancelled(self, message: dict[str, Any], params: dict[str, Any]) -> None:
        if "requestId" not in params:
            return
        key = request_key(params["requestId"])
        if self.stateless.cancelled(key, message):
            return
        if key == self._initialize_key:
            self.finding("client-cancel-initialize", "the client cancelled initialize",
                         received=message)
        elif key not in self._ids_seen and key not in self._in_flight:
            self.finding("client-cancel-unknown", f"cancelled {key}, which the client "
                         "never sent", received=message)
        else:
            self._in_flight.pop(key, None)

    # -- the held request --------------------------------------------------------------------

    def _release_held(self, now: float) -> None:
        """The probes are over: answer the held request (on HTTP, in the handshake era,
        its stream is dropped and the answer kept back for the resumption)."""
        if self.probes.held is None:
            return
        key, request_id, message = self.probes.held
        self.probes.held = None
        before = len(self.outbox)
        self._serve(key, request_id, message["method"], message)
        if self.transport == "http" and self.era_now == "handshake":
            self.http.hold_back(key, before, now)

    # -- time --------------------------------------------------------------------------------

    _now = 0.0

    def tick(self, now: float) -> None:
        """Judge what is overdue at ``now``."""
        self._now = now
        limit = self.call_timeout
        if self.phase == "initializing" and self._answered_at is not None and (
                now - self._answered_at > limit):
            self._answered_at = None
            self.finding("client-initialized", "no notifications/initialized within "
                         f"{limit:g} s of the initialize result")
        if (self.phase == "ready" and self._ready_at is not None and not self.probes.probing
                and not self.probes.probed and self.probes.held is None
                and now - self._ready_at > IDLE_BEFORE_PROBES and self.transport != "http"):
            self.probes.start(now)
        self.probes.overdue(now, limit)
        self.http.overdue(now, limit)
        if self.stateless.mrtr_at is not None and now - self.stateless.mrtr_at > limit:
            self.stateless.mrtr_at = None
            self.finding("client-input-retry", "no retry of the input_required tools/call "
                         f"within {limit:g} s")

    def deadline(self) -> float | None:
        """When :meth:`tick` next has something to judge."""
        times = [p.sent_at + self.call_timeout for p in self.probes.pending.values()]
        if self._answered_at is not None and self.phase == "initializing":
            times.append(self._answered_at + self.call_timeout)
        if self._ready_at is not None and not self.probes.probed and not self.probes.probing:
            times.append(self._ready_at + IDLE_BEFORE_PROBES)
        if self.http.dropped is not None:
            times.append(self.http.dropped[2] + self.call_timeout)
        if self.stateless.mrtr_at is not None:
            times.append(self.stateless.mrtr_at + self.call_timeout)
        return min(times) if times else None

    def close(self, now: float, *, exit_code: int | None) -> None:
        """The client went away (its process exited with ``exit_code``)."""
        if self.finished:
            return
        self.finished = True
        self.tick(now)
        if self.phase == "new" and self.revision is None:
            self.report.note("the client never initialized (nor sent a stateless request)")
        if self.http.dropped is not None:
            self.finding("client-sse-resume", "the client went away without resuming the "
                         "dropped SSE stream")
        if self.stateless.mrtr_at is not None:
            self.finding("client-input-retry", "the client went away without retrying the "
                         "input_required tools/call")
        if self.http.expired is not None and self.http.expired_at is not None:
            self.finding("client-reinitialize", "after a 404 the client did not start a "
                         "new session with initialize")
        if (self.transport == "http" and exit_code == 0 and self.session_id is not None
                and self.era_now == "handshake" and not self.http.delete_seen):
            self.finding("client-session-end", f"the client exited (status 0) without "
                         f"ending its session {self.session_id!r} with DELETE")
        self.stateless.close()
        live = [p for p in self.probes.pending.values() if p.liveness]
        # A client that ends with status 0 exited cleanly, whatever was still due; one that
        # was killed (None: the budget ran out) is judged by the timeouts alone.
        failed = exit_code not in (0, None)
        if live and failed:
            self.finding("client-robustness", "the client exited after hostile output "
                         f"with its answer to ping still due (exit status {exit_code})")
        elif live:
            self.report.note("the client left before answering the ping that followed the "
                             "hostile output")
        elif self.probes.hostile_sent and self.era_now == "stateless" and failed:
            self.finding("client-robustness", f"the client exited with status {exit_code} "
                         "after hostile output")
        if exit_code not in (0, None):
            self.report.note(f"the client exited with status {exit_code}")
