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

The rest of its theory of operation: docs/architecture.rst, "Module notes".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from .._capabilities import lookup
from .._versions import FEATURES, HANDSHAKE_REVISIONS, KNOWN_REVISIONS, STATELESS_REVISIONS
from ..http._headers import (
    decode_header_value,
    param_header_text,
    param_headers,
    param_matches,
    param_value,
)
from ._client_stateless import TASK_TTL_MS, TASKS_EXTENSION, StatelessKit
from ._findings import CHECKS, Finding, Report
from ._invalid import MUST, SHOULD
from ._schemas import Schemas, bundled

__all__ = ["IDLE_BEFORE_PROBES", "HUGE_SIZE", "ClientMachine", "Out"]

#: A client that sends no request after ``initialized`` (it only listens) is probed after
#: this many seconds of silence: long enough for an ordinary client's first request to
#: arrive on a loaded machine (the probes then wait for it, so that it is held while they
#: run), short next to any sensible call timeout.
IDLE_BEFORE_PROBES = 2.0

#: The size of the huge notification of the hostile phase: 1 MiB is over the default line
#: limits of several JSON-RPC stacks (a client may refuse it, but must live on).
HUGE_SIZE = 1 << 20

#: The SSE ``retry`` the kit sends before dropping a stream (milliseconds): short, so that a
#: check takes little time, and the client MUST wait it (2025-11-25 transports.mdx).
RETRY_MS = 200

#: The URL-mode elicitation (2025-11-25) sent to a client that declared ``elicitation.url``:
#: a consent URL on a reserved name (RFC 6761: ``.invalid`` never resolves).
URL_ELICITATION: dict[str, Any] = {
    "mode": "url", "message": "Please confirm in your browser",
    "url": "https://kit.invalid/consent", "elicitationId": "kit-elicitation-1"}

_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_CAPS = "io.modelcontextprotocol/clientCapabilities"

#: The kit's one tool: what a client can list and call.
TOOL: dict[str, Any] = {"name": "kit_echo", "description": "Echoes its text argument.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}

#: The tool as listed in the stateless era: its argument is mirrored into a header
#: (``x-mcp-header``, 2026-07-28 basic/transports/streamable-http.mdx, Schema Extension).
_STATELESS_TOOL: dict[str, Any] = {**TOOL, "inputSchema": {"type": "object", "properties": {
    "text": {"type": "string", "x-mcp-header": "Text"}}}}
_PARAM_HEADERS = param_headers(_STATELESS_TOOL["inputSchema"])

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


@attrs.define
class Out:
    """One thing for the adapter to do: send a message (or raw bytes) on a stream, or drop
    the stream's connection (HTTP)."""

    #: The stream: the key of the client request it answers or relates to (see
    #: :meth:`ClientMachine.stream_key`), or ``"main"`` (stdio; HTTP: the GET stream).
    stream: str
    message: Any = None
    #: Bytes to send instead of a message (hostile output).
    raw: bytes | None = None
    #: The SSE event id (HTTP).
    event_id: str | None = None
    #: The SSE ``retry`` field, milliseconds (HTTP).
    retry: int | None = None
    #: Close the stream after this item (the request is answered).
    end: bool = False
    #: Drop the connection without ending the stream (HTTP resumption check).
    drop: bool = False


@attrs.define
class _Probe:
    method: str
    params: dict[str, Any]
    sent_at: float
    token: str | None = None
    last_progress: float | None = None
    liveness: bool = False


_FINDING_FIELDS = frozenset(attrs.fields_dict(Finding))


def _key(request_id: Any) -> str:
    return json.dumps(request_id)


def _decoded(raw: str | None) -> str | None:
    return None if raw is None else decode_header_value(raw)


#: The 2026-07-28 requests whose ``Mcp-Name`` header mirrors a param, and which one.
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def _stateless_meta(message: Mapping[str, Any]) -> bool:
    """Whether a request carries the 2026-07-28 ``_meta`` envelope of a stateless revision."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and meta.get(_META_VERSION) in STATELESS_REVISIONS


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
        self._held: tuple[str, Any, dict[str, Any]] | None = None  # key, id, message
        self._probes: list[tuple[str, dict[str, Any], bool]] = []
        self._pending: dict[str, _Probe] = {}
        self._answered: set[str] = set()
        self._timed_out: set[str] = set()
        self._next = 0
        self._probing = False
        self._probed = False
        self._ping_answered = False
        self._tokens: dict[str, _Probe] = {}
        self._events = 0
        self._last_event: dict[str, str] = {}
        # HTTP resumption and session expiry.
        self._dropped: tuple[str, str, float] | None = None  # stream, last event id, when
        self._release: list[Out] = []
        self._resumed = False
        self._expire_next = False
        self._expired: str | None = None
        self._expired_at: float | None = None
        #: The stateless era's MRTR, listen streams and tasks.
        self.stateless = StatelessKit(self)
        self._hostile_sent = False
        self.finished = False
        self.cut_short = False
        self._http_hostile_due = False
        self._drop_done = False
        #: HTTP: whether the client sent a DELETE at all (one without the right session id
        #: is the business of client-session-id).
        self._delete_seen = False
        #: Legacy HTTP+SSE: the endpoint URI given in the ``endpoint`` event (None until
        #: the client opened the stream).
        self.endpoint: str | None = None
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
        return _key(request_id)

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
            status = self._http_head(message, headers, now)
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
            self._response(message, now)
        else:
            self.finding("client-envelope", "neither a request, a notification nor a "
                         "response", received=message)
        return None

    # -- HTTP heads --------------------------------------------------------------------------

    def _http_head(self, message: Any, headers: Mapping[str, str], now: float) -> int | None:
        is_init = isinstance(message, dict) and message.get("method") == "initialize"
        sid = headers.get("mcp-session-id")
        if (self.wants_expiry and sid is not None and sid == self.session_id
                and not is_init):
            self.expire_session()
            return 404
        if self._expired is not None and sid == self._expired and not is_init:
            return 404
        if self._expired is not None and is_init:
            if sid is not None:
                self.finding("client-reinitialize", "the new initialize after 404 carried a "
                             "session id", received=message)
            self._expired = None
            self._expired_at = None
            self.steps.append("initialized again after 404")
            return None
        if self.era_now == "stateless" or self.phase == "new":
            if (isinstance(message, dict) and "method" in message and "id" in message
                    and (self.era_now == "stateless" or _stateless_meta(message))):
                meta = (message.get("params") or {}).get("_meta") if isinstance(
                    message.get("params"), dict) else None
                version = meta.get(_META_VERSION) if isinstance(meta, dict) else None
                if version is not None and headers.get("mcp-protocol-version") != version:
                    self.finding("client-protocol-version-header", "MCP-Protocol-Version "
                                 f"{headers.get('mcp-protocol-version')!r} differs from the "
                                 f"_meta version {version!r}", received=message)
                self._method_headers(message, headers)
            return None
        if is_init:
            return None
        if self.session_id is not None and sid != self.session_id:
            self.finding("client-session-id", f"the session id was {sid!r:.12} on a request "
                         "after initialize", received=message)
        features = FEATURES.get(self.revision or "")
        if features is not None and features.version_header:
            got = headers.get("mcp-protocol-version")
            if got != self.revision:
                self.finding("client-protocol-version-header", f"MCP-Protocol-Version was "
                             f"{got!r}, the negotiated revision is {self.revision}",
                             received=message)
        return None

    def _method_headers(self, message: dict[str, Any], headers: Mapping[str, str]) -> None:
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
            for header, path in _PARAM_HEADERS.items():
                text = param_header_text(param_value(params.get("arguments"), path))
                got = _decoded(headers.get(f"mcp-param-{header.lower()}"))
                if text is None and got is None:
                    continue
                value = param_value(params.get("arguments"), path)
                if got is None or not param_matches(got, value):
                    problems.append(f"Mcp-Param-{header} {got!r} for {value!r}")
        if problems:
            self.finding("client-method-headers", "; ".join(problems), received=message)

    def http_delete(self, headers: Mapping[str, str], now: float) -> int:
        """A DELETE: the HTTP status to answer (2025-03-26+ basic/transports.mdx, Session
        Management: it ends the session it names; 2026-07-28 has no sessions: 405)."""
        if self.era_now == "stateless":
            return 405
        self._delete_seen = True
        session = headers.get("mcp-session-id")
        if session is None or session != self.session_id:
            return 404
        self.steps.append("session deleted")
        return 200

    def stream_closed(self, stream: str, now: float) -> None:
        """HTTP: the client closed ``stream`` before its end (2026-07-28: the cancellation)."""
        self.stateless.stream_closed(stream, now)

    def http_get(self, headers: Mapping[str, str], now: float) -> str | None:
        """A GET (an SSE stream). Returns the stream it carries -- the dropped stream when
        it resumes it, else ``"main"`` -- or ``None`` to refuse it (405)."""
        if self.era_now == "stateless":
            return None
        last = headers.get("last-event-id")
        if self._dropped is not None and last is not None:
            stream, expected, dropped_at = self._dropped
            if last != expected:
                self.finding("client-sse-resume", f"resumed with Last-Event-ID {last!r}, the "
                             f"last event sent was {expected!r}")
            waited = now - dropped_at
            # ``dropped_at`` is when the drop was decided, before the connection closed, so
            # the wait measured here is never shorter than the client's: no false positive.
            if waited * 1000 < RETRY_MS:
                self.finding("client-sse-retry", f"resumed {waited * 1000:.0f} ms after the "
                             f"drop, before the retry of {RETRY_MS} ms")
            self._dropped = None
            self._resumed = True
            self.steps.append("stream resumed")
            for out in self._release:
                out.stream = stream
                self.outbox.append(out)
            self._release = []
            self._expire_next = True
            return stream
        return "main"

    # -- legacy HTTP+SSE ----------------------------------------------------------------------

    def sse_endpoint(self, now: float) -> str | None:
        """Legacy HTTP+SSE: a GET on the SSE URL. Returns the URI for the ``endpoint`` event
        that opens the stream (then the ``"main"`` stream follows), or ``None`` to refuse a
        second stream (409: the kit serves one connection)."""
        if self.endpoint is not None:
            return None
        self.endpoint = "/messages?session_id=kit-legacy-1"
        self.steps.append("endpoint sent")
        return self.endpoint

    def sse_post(self, target: str, message: Any, now: float) -> int | None:
        """Legacy HTTP+SSE: a POST to ``target`` (path and query). Returns the status to
        answer instead of taking the message (405: the back-compatibility probe, before
        the stream is open), else ``None`` (the message is then given to :meth:`receive`
        and answered 202)."""
        if self.endpoint is None:
            return 405
        if target != self.endpoint:
            self.finding("client-sse-endpoint", f"a message was POSTed to {target!r}, not to "
                         f"the endpoint {self.endpoint!r} the server gave", received=message)
        return None

    # -- requests ----------------------------------------------------------------------------

    def _request(self, message: dict[str, Any], method: str, now: float,
                 headers: Mapping[str, str] | None) -> None:
        request_id = message["id"]
        key = _key(request_id)
        if request_id is None or isinstance(request_id, bool) or not isinstance(
                request_id, (str, int)):
            self.finding("client-envelope", f"request id {request_id!r} is not a string or "
                         "an integer", received=message)
            # JSON-RPC 2.0 s. 5: an invalid request is answered, with a null id.
            self._answer(key, None, error=(-32600, "Invalid Request"))
            return
        if (self.phase == "new" and self.revision is None and self.era != "stateless"
                and (method == "server/discover" or _stateless_meta(message))
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
        if not self._probed and not self._probing and self._held is None:
            self._held = (key, request_id, message)
            self._start_probes(now)
            return
        if (self._http_hostile_due and not self._probing and self._held is None
                and not self._expire_next and self._expired is None):
            # HTTP: the hostile phase comes last, once resumption and 404 were seen (a
            # client that gives up on a garbage event still shows those).
            self._http_hostile_due = False
            self._held = (key, request_id, message)
            self._probing = True
            self._probes = [("hostile", {}, False)]
            self._advance(now)
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
                _STATELESS_TOOL if self.era_now == "stateless" else TOOL]}
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
        version = meta.get(_META_VERSION) if isinstance(meta, dict) else None
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
        version = meta.get(_META_VERSION) if isinstance(meta, dict) else None
        if (not isinstance(meta, dict) or not isinstance(version, str)
                or not isinstance(meta.get(_META_CAPS), dict)):
            self.finding("client-meta-envelope", f"{method} without _meta "
                         f"{_META_VERSION} and {_META_CAPS}", received=message)
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
        self.client_caps = meta[_META_CAPS]
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
        if not self._hostile_sent and self.stateless.mrtr is not None:
            # Hostile output before the answer to the input_required retry (on HTTP, in
            # that request's SSE stream), so that a client that gives up on it has shown
            # its retry first: the client must live on.
            self._hostile_sent = True
            self._hostile(self._stream_for(key))
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
            self._progress(message, params)
        elif method == "notifications/roots/list_changed":
            roots = self.client_caps.get("roots")
            if not (isinstance(roots, dict) and roots.get("listChanged")):
                self.finding("client-notification-gating", "roots/list_changed without the "
                             "roots.listChanged capability", received=message)

    def _cancelled(self, message: dict[str, Any], params: dict[str, Any]) -> None:
        if "requestId" not in params:
            return
        key = _key(params["requestId"])
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

    def _progress(self, message: dict[str, Any], params: dict[str, Any]) -> None:
        token = params.get("progressToken")
        probe = self._tokens.get(_key(token))
        # Active: the kit's request that carried the token is still unanswered
        # (progress.mdx: only for tokens of active requests).
        if probe is None or not any(p is probe for p in self._pending.values()):
            self.finding("client-progress-unknown-token", f"progress for token {token!r}, "
                         "which names no active request of the kit's", received=message)
            return
        value = params.get("progress")
        if isinstance(value, (int, float)):
            if probe.last_progress is not None and value <= probe.last_progress:
                self.finding("client-progress-not-increasing", f"progress {value} after "
                             f"{probe.last_progress}", received=message)
            probe.last_progress = value

    # -- responses ---------------------------------------------------------------------------

    def _response(self, message: dict[str, Any], now: float) -> None:
        key = _key(message["id"])
        if message["id"] is None and "error" in message:
            return  # the client answered our garbage line (JSON-RPC 2.0 s. 5)
        if key in self._timed_out:
            return  # a late answer: the timeout was the finding
        if key in self._answered:
            self.finding("client-duplicate-response", f"a second answer to {key}",
                         received=message)
            return
        probe = self._pending.pop(key, None)
        if probe is None:
            self.finding("client-unknown-id", f"a response to {key}, which the kit never "
                         "sent", received=message)
            return
        self._answered.add(key)
        mode = " (url)" if probe.params.get("mode") == "url" else ""
        self.steps.append(f"{'liveness ' if probe.liveness else ''}{probe.method}{mode} "
                          "answered")
        self._judge(probe, message)
        self._advance(now)

    def _judge(self, probe: _Probe, message: dict[str, Any]) -> None:
        revision = self.revision or HANDSHAKE_REVISIONS[-1]
        method = probe.method
        sent = {"method": method, "params": probe.params}
        if probe.liveness:
            return
        if method == "ping":
            self._ping_answered = True
            if "result" not in message or not isinstance(message["result"], dict) or any(
                    k != "_meta" for k in message["result"]):
                self.finding("client-ping", "ping was not answered with an empty result",
                             sent=sent, received=message)
            return
        capability = {"roots/list": "roots", "sampling/createMessage": "sampling",
                      "elicitation/create": "elicitation", "tasks/get": "tasks",
                      "tasks/result": "tasks"}[method]
        declared = capability in self.client_caps
        if "error" in message:
            return  # an error is always an acceptable answer
        if "task" in probe.params or method.startswith("tasks/"):
            self._judge_task(probe, message, revision)
            return
        if not declared:
            self.finding("client-undeclared-answer", f"{method} answered with a result "
                         f"although the client did not declare {capability}", sent=sent,
                         received=message)
            return
        name = self.schemas.result_definition(revision, method)
        if name is not None:
            problems = self.schemas.errors(revision, name, message.get("result"))
            if problems:
                self.finding("client-result-schema", f"{method}: {'; '.join(problems)}",
                             sent=sent, received=message)
                return
        result = message.get("result")
        if probe.params.get("mode") == "url" and isinstance(result, dict):
            if "content" in result:
                self.finding("client-elicitation-url-result", "a URL-mode elicitation was "
                             f"answered with content (action {result.get('action')!r})",
                             sent=sent, received=message)
            if result.get("action") == "accept":
                # The out-of-band interaction "completed": the optional notification.
                self._emit(self._probe_stream(), {
                    "jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                    "params": {"elicitationId": URL_ELICITATION["elicitationId"]}})

    def _judge_task(self, probe: _Probe, message: dict[str, Any], revision: str) -> None:
        """2025-11-25 basic/utilities/tasks.mdx: a task-augmented request is answered with a
        ``CreateTaskResult``; ``tasks/get`` with the task, ``tasks/result`` with the result
        of the request the task runs."""
        sent = {"method": probe.method, "params": probe.params}
        result = message.get("result")
        name = {"tasks/get": "GetTaskResult",
                "tasks/result": "CreateMessageResult"}.get(probe.method, "CreateTaskResult")
        problems = self.schemas.errors(revision, name, result)
        if problems:
            self.finding("client-task-result", f"{probe.method}: {'; '.join(problems)}",
                         sent=sent, received=message)
            return
        assert isinstance(result, dict)
        if name == "CreateTaskResult":
            task_id = result["task"]["taskId"]
            self._probes[0:0] = [("tasks/get", {"taskId": task_id}, False),
                                 ("tasks/result", {"taskId": task_id}, False)]
        elif name == "GetTaskResult" and result.get("taskId") != probe.params["taskId"]:
            self.finding("client-task-result", f"tasks/get for {probe.params['taskId']!r} "
                         f"answered with task {result.get('taskId')!r}", sent=sent,
                         received=message)

    # -- the kit's requests ------------------------------------------------------------------

    def _start_probes(self, now: float) -> None:
        self._probing = True
        self._probes = [("ping", {}, False)]
        self._probes.append(("roots/list", {"_meta": {"progressToken": "kit-progress"}},
                             False))
        revision = self.revision or ""
        features = FEATURES.get(revision)
        sampling: dict[str, Any] = {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
            "maxTokens": 16}
        if features is not None and features.core_tasks and self._client_has(
                "tasks", "requests", "sampling", "createMessage"):
            sampling["task"] = {"ttl": TASK_TTL_MS}
        self._probes.append(("sampling/createMessage", sampling, False))
        if lookup("elicitation/create", revision) is not None:  # 2025-06-18 on
            self._probes.append(("elicitation/create", {
                "mode": "form", "message": "A value, please",
                "requestedSchema": {"type": "object", "properties": {
                    "answer": {"type": "string", "default": "yes"}}}}
                if features is not None and features.elicitation_modes else {
                "message": "A value, please", "requestedSchema": {
                    "type": "object", "properties": {"answer": {"type": "string"}}}}, False))
        if self._url_elicitation():
            self._probes.append(("elicitation/create", dict(URL_ELICITATION), False))
        if self.transport == "http":
            self._http_hostile_due = True
        else:
            self._probes.append(("hostile", {}, False))
        self._advance(now)

    def _client_has(self, *path: str) -> bool:
        node: Any = self.client_caps
        for part in path:
            if not isinstance(node, dict) or not isinstance(node.get(part), dict):
                return False
            node = node[part]
        return True

    def _url_elicitation(self) -> bool:
        """Whether the client gets a URL-mode elicitation: the revision has the modes and the
        client declared ``elicitation.url`` (2025-11-25 client/elicitation.mdx, Capabilities:
        a server MUST NOT send a mode the client did not declare)."""
        features = FEATURES.get(self.revision or "")
        elicitation = self.client_caps.get("elicitation")
        return (features is not None and features.elicitation_modes
                and isinstance(elicitation, dict) and "url" in elicitation)

    def _send_probe(self, method: str, params: dict[str, Any], now: float,
                    liveness: bool = False) -> None:
        self._next += 1
        request_id = f"kit-{self._next}"
        probe = _Probe(method=method, params=params, sent_at=now, liveness=liveness)
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and "progressToken" in meta:
            probe.token = str(meta["progressToken"])
            self._tokens[_key(meta["progressToken"])] = probe
        self._pending[_key(request_id)] = probe
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params:
            message["params"] = params
        self._emit(self._probe_stream(), message)

    def _probe_stream(self) -> str:
        if self._held is not None:
            return self._stream_for(self._held[0])
        return "main"

    def _hostile(self, stream: str) -> None:
        self._emit(stream, raw=b"this line is not JSON {")
        self._emit(stream, {"jsonrpc": "2.0", "id": "kit-never-sent", "result": {}})
        self._emit(stream, {"jsonrpc": "2.0", "method": "notifications/message", "params": {
            "level": "info", "logger": "kit", "data": "x" * HUGE_SIZE}})
        for message in self.extra:
            self._emit(stream, message)

    def _advance(self, now: float) -> None:
        """Send the next probe once the previous one is settled (answered or overdue)."""
        if not self._probing or self._pending:
            return
        if not self._probes:
            self._probing = False
            self._probed = True
            self._release_held(now)
            return
        method, params, _ = self._probes.pop(0)
        if method == "hostile":
            self._hostile(self._probe_stream())
            self._hostile_sent = True
            self.steps.append("hostile output sent")
            if self._ping_answered:
                # Liveness: judged only for a client that answered the first ping.
                self._send_probe("ping", {}, now, liveness=True)
            else:
                self._advance(now)
            return
        self._send_probe(method, params, now)

    def _release_held(self, now: float) -> None:
        if self._held is None:
            return
        key, request_id, message = self._held
        self._held = None
        method = message["method"]
        before = len(self.outbox)
        self._serve(key, request_id, method, message)
        if self.transport == "http" and self.era_now == "handshake" and not self._drop_done:
            self._drop_done = True
            # Drop the stream after an event with an id and a retry field; the answer waits
            # for the client to resume (2025-11-25 transports.mdx, Resumability).
            answer = self.outbox[before:]
            del self.outbox[before:]
            for out in answer:
                out.event_id = None
            stream = self._stream_for(key)
            prime = self._emit(stream, raw=b"", retry=RETRY_MS)
            assert prime.event_id is not None
            self.outbox.append(Out(stream=stream, drop=True))
            self._dropped = (stream, prime.event_id, now)
            self.steps.append("stream dropped")
            self._release = answer

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
        if (self.phase == "ready" and self._ready_at is not None and not self._probing
                and not self._probed and self._held is None
                and now - self._ready_at > IDLE_BEFORE_PROBES and self.transport != "http"):
            self._start_probes(now)
        for key, probe in list(self._pending.items()):
            if now - probe.sent_at > limit:
                del self._pending[key]
                self._timed_out.add(key)
                if probe.liveness:
                    self.finding("client-robustness", "after hostile output (a line that "
                                 "is not JSON, a response to no request, a 1 MiB "
                                 f"notification) the client no longer answered ping within "
                                 f"{limit:g} s")
                else:
                    self.finding("client-ping" if probe.method == "ping" else
                                 "client-no-reply", f"{probe.method} unanswered after "
                                 f"{limit:g} s", sent={"method": probe.method,
                                                       "params": probe.params})
                self._advance(now)
        if self._dropped is not None and now - self._dropped[2] > limit:
            self._dropped = None
            self._release = []
            self.finding("client-sse-resume", "the client did not resume the dropped SSE "
                         f"stream with GET and Last-Event-ID within {limit:g} s")
        if self.stateless.mrtr_at is not None and now - self.stateless.mrtr_at > limit:
            self.stateless.mrtr_at = None
            self.finding("client-input-retry", "no retry of the input_required tools/call "
                         f"within {limit:g} s")

    def expire_session(self) -> None:
        """HTTP: forget the session; its next request gets 404 (transports.mdx, Session
        Management: the client MUST then initialize again without a session id)."""
        self._expire_next = False  # once per run
        if self.session_id is not None:
            self._expired = self.session_id
            self.session_id = None
            self.phase = "new"
            self._initialize_key = None
            self._expired_at = self._now
            self.steps.append("session expired")

    @property
    def wants_expiry(self) -> bool:
        """HTTP: the resumption check is over, the session is to expire now."""
        return self._expire_next and self._resumed and self._expired is None and (
            self.session_id is not None)

    def deadline(self) -> float | None:
        """When :meth:`tick` next has something to judge."""
        times = [p.sent_at + self.call_timeout for p in self._pending.values()]
        if self._answered_at is not None and self.phase == "initializing":
            times.append(self._answered_at + self.call_timeout)
        if self._ready_at is not None and not self._probed and not self._probing:
            times.append(self._ready_at + IDLE_BEFORE_PROBES)
        if self._dropped is not None:
            times.append(self._dropped[2] + self.call_timeout)
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
        if self._dropped is not None:
            self.finding("client-sse-resume", "the client went away without resuming the "
                         "dropped SSE stream")
        if self.stateless.mrtr_at is not None:
            self.finding("client-input-retry", "the client went away without retrying the "
                         "input_required tools/call")
        if self._expired is not None and self._expired_at is not None:
            self.finding("client-reinitialize", "after a 404 the client did not start a "
                         "new session with initialize")
        if (self.transport == "http" and exit_code == 0 and self.session_id is not None
                and self.era_now == "handshake" and not self._delete_seen):
            self.finding("client-session-end", f"the client exited (status 0) without "
                         f"ending its session {self.session_id!r} with DELETE")
        self.stateless.close()
        live = [p for p in self._pending.values() if p.liveness]
        # A client that ends with status 0 exited cleanly, whatever was still due; one that
        # was killed (None: the budget ran out) is judged by the timeouts alone.
        failed = exit_code not in (0, None)
        if live and failed:
            self.finding("client-robustness", "the client exited after hostile output "
                         f"with its answer to ping still due (exit status {exit_code})")
        elif live:
            self.report.note("the client left before answering the ping that followed the "
                             "hostile output")
        elif self._hostile_sent and self.era_now == "stateless" and failed:
            self.finding("client-robustness", f"the client exited with status {exit_code} "
                         "after hostile output")
        if exit_code not in (0, None):
            self.report.note(f"the client exited with status {exit_code}")
