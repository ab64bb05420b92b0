"""The peer machine's judge: a verdict on everything the server writes.

Theory of operation
-------------------
Every whole line the wire reads comes to :meth:`Judge.on_line`. It must be JSON (a batch
only where the revision has them) and each message a JSON-RPC message of the session's
revision (its official schema). A response is matched to the request in flight of its id
(:class:`~._peer_ledger.Ledger`): an answer to an invalid message must be the error it
deserves; to a valid request that deserves an error, that error; a result must be valid for
its method, complete (2026-07-28 ``resultType``) and match the tool's ``outputSchema``. A
reply after a cancellation the server has provably seen (a barrier was answered after it)
is a finding; one that crossed it on the wire is not judged. Requests from the server are
checked against the method table and the capabilities the client declared, and answered;
notifications against the tables, the capabilities, the progress tokens given out and the
listen streams open. The verdict on an answer goes through the machine's ``_on_error`` and
``_on_result``, so that a subclass or a test can intercept it. Lists feed what the server
offers (its tools, prompts and resources) back to the machine.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from typing import Any

from .._capabilities import Kind, declared, lookup, missing_capability
from .._state import Role
from .._versions import FEATURES
from ._invalid import Invalid
from ._peer_ledger import (
    LIST_CHANGED,
    LIST_METHODS,
    LISTEN_FILTER,
    META_SUB,
    SLOW_NOTE,
    Pending,
    short,
)
from ._peer_wire import Part


class Judge(Part):
    """Judges what the server writes to one :class:`~mcp_sansio.testing.PeerMachine`."""

    def on_line(self, line: bytes) -> None:
        try:
            message = json.loads(line.decode("utf-8"), parse_constant=_no_constants)
        except (UnicodeDecodeError, ValueError) as exc:
            self.finding("output-not-json", f"the peer wrote a line that is not JSON ({exc}): "
                         f"{line[:120]!r}", received=line)
            return
        if isinstance(message, list):
            if FEATURES[self.revision].batching and message:
                for item in message:
                    self._on_message(item)
                return
            self.finding("envelope", "the peer sent a JSON array (a batch), which "
                         f"{self.revision} does not have", received=message)
            return
        self._on_message(message)

    def _on_message(self, message: Any) -> None:
        problems = self._envelope_errors(message)
        if problems:
            self.finding("envelope", f"not a JSON-RPC message of {self.revision}: "
                         f"{'; '.join(problems)}", received=message)
            return
        if "method" in message:
            if "id" in message:
                self._on_request(message)
            else:
                self._on_notification(message)
        else:
            self._on_response(message)

    def _envelope_errors(self, message: Any) -> list[str]:
        if not isinstance(message, dict):
            return ["not an object"]
        view = message
        if "error" in message and message.get("id", 0) is None:
            # JSON-RPC 2.0 s. 5: "id": null answers a message whose id could not be read;
            # the MCP schemas cannot express it (they omit the id from 2025-11-25 on).
            view = {**message, "id": 0}
        return self.schemas.errors(self.revision, "JSONRPCMessage", view)

    def _on_response(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        is_error = "error" in message
        if request_id is None:
            self._on_null_id(message)
            return
        pending = self.ledger.pending.pop(request_id, None)
        if pending is None and request_id in self.ledger.abandoned:
            late = self.ledger.abandoned.pop(request_id)
            self.note(f"{SLOW_NOTE}[{self.revision}] {late.method} (id {request_id!r}) was "
                      "answered after the kit had stopped waiting for it")
            return
        if pending is None:
            if request_id in self.ledger.silent:
                invalid = self.ledger.silent[request_id]
                self.finding(invalid.rule, f"{invalid.description} was answered, which it "
                             "must not be", sent=invalid.message, received=message)
            elif request_id in self.ledger.answered:
                self.finding("duplicate-response", f"request {request_id!r} was answered "
                             "again", received=message)
            else:
                self.finding("unknown-id", f"a response for id {request_id!r}, which no "
                             "request had", received=message)
            return
        self.ledger.answered.add(request_id)
        self.ledger.answered_seq = max(self.ledger.answered_seq, pending.seq)
        if pending.token is not None:
            self.ledger.tokens.pop(pending.token, None)
        if pending.barrier:
            self.ledger.acked_seq = max(self.ledger.acked_seq, pending.seq)
        if pending.cancelled_seq is not None and pending.cancelled_seq < self.ledger.acked_seq:
            self.finding("response-after-cancel", f"{pending.method} (id {request_id!r}) was "
                         "answered after its cancellation had been processed",
                         sent=pending.message, received=message,
                         requirement="must" if self.stateless else "should")
            return
        if pending.cancelled_seq is not None:
            return  # crossed our cancellation on the wire: fine, and not judged
        if pending.replies is not None:
            pending.replies.append(message)
            self._early_capabilities(pending.method, message)
            return
        if pending.invalid is not None:
            self._judge_invalid(pending.invalid, message)
            return
        if is_error:
            self.machine._on_error(pending, message)
        else:
            self.machine._on_result(pending, message)

    def _early_capabilities(self, method: str, message: dict[str, Any]) -> None:
        """Take the server's capabilities from its initialize (or discover) result as soon as
        it arrives: what follows it in the same read may depend on them (a log message
        right after the InitializeResult is allowed)."""
        result = message.get("result")
        if method in ("initialize", "server/discover") and isinstance(result, dict):
            caps = result.get("capabilities")
            if isinstance(caps, dict):
                self.machine.peer_capabilities = caps

    def _on_null_id(self, message: dict[str, Any]) -> None:
        code = message.get("error", {}).get("code")
        for index, invalid in enumerate(self.ledger.null_expected):
            if invalid.accepts(code):
                del self.ledger.null_expected[index]
                return
        if self.ledger.null_expected:
            invalid = self.ledger.null_expected.pop(0)
            self._judge_invalid(invalid, message)
            return
        self.finding("unexpected-error", f"an error with no request id (code {code}) that "
                     "answers nothing we sent with an unreadable id", received=message)

    def _judge_invalid(self, invalid: Invalid, message: dict[str, Any]) -> None:
        if "error" not in message:
            self.finding(invalid.rule, f"{invalid.description}: expected error "
                         f"{invalid.expected_code}, got a result", sent=invalid.message,
                         received=message)
            return
        code = message["error"].get("code")
        if not invalid.accepts(code):
            self.finding(invalid.rule, f"{invalid.description}: expected error "
                         f"{invalid.expected_code}, got {code} "
                         f"({short(message['error'].get('message'))})",
                         sent=invalid.message, received=message)

    def on_error(self, pending: Pending, message: dict[str, Any]) -> None:
        error = message["error"]
        code = error.get("code")
        if pending.expect_error is not None:
            check, codes, what = pending.expect_error
            if code not in codes:
                self.finding(check, f"{what}: expected error {_codes(codes)}, got {code} "
                             f"({short(error.get('message'))})", sent=pending.message,
                             received=message)
            return
        if pending.method == "ping":
            self.finding("ping", f"ping was answered with error {code}", sent=pending.message,
                         received=message)
        elif pending.method == "server/discover":
            self.finding("discover", f"server/discover was answered with error {code}",
                         sent=pending.message, received=message)
        elif pending.listen_filter is not None:
            pass  # a server may refuse a listen stream

    def on_result(self, pending: Pending, message: dict[str, Any]) -> None:
        result = message["result"]
        if pending.expect_error is not None:
            check, codes, what = pending.expect_error
            how = " (a result with isError)" if isinstance(result, dict) and result.get(
                "isError") else ""
            self.finding(check, f"{what}: expected error {_codes(codes)}, got a "
                         f"result{how}", sent=pending.message, received=message)
            return
        if self.stateless and not self._stateless_result(pending, result, message):
            return
        name = self.schemas.result_definition(self.revision, pending.method)
        if name is not None:
            problems = self.schemas.errors(self.revision, name, result)
            if problems:
                self.finding("result-schema", f"{pending.method} result is not a valid {name}:"
                             f" {'; '.join(problems)}", sent=pending.message, received=message)
                return
        if pending.method == "ping" and result not in ({}, {"_meta": {}}) and set(result) - {
                "_meta"}:
            self.finding("ping", "ping was answered with a non-empty result",
                         received=message)
        if pending.method == "tools/call" and pending.tool is not None:
            self._check_structured(pending, result, message)
        if pending.method in LIST_METHODS:
            self._record_list(pending, result)

    def _stateless_result(self, pending: Pending, result: dict[str, Any],
                          message: dict[str, Any]) -> bool:
        """2026-07-28: resultType. Returns whether the result is a complete one to check
        further."""
        kind = result.get("resultType")
        if kind == "complete":
            return True
        rule_row = lookup(pending.method, self.revision)
        if kind == "input_required" and rule_row is not None and rule_row.mrtr:
            problems = self.schemas.errors(self.revision, "InputRequiredResult", result)
            if problems:
                self.finding("result-schema", f"{pending.method} input_required result is not "
                             f"valid: {'; '.join(problems)}", received=message)
            for key, item in (result.get("inputRequests") or {}).items():
                method = item.get("method") if isinstance(item, dict) else None
                row = lookup(method, self.revision) if isinstance(method, str) else None
                if row is None or row.kind is not Kind.INPUT_REQUEST or missing_capability(
                        row, self.revision, item.get("params") or {},
                        self.config.client_capabilities) is not None:
                    self.finding("unexpected-request", f"input request {key!r} ({method}) "
                                 "needs a client capability the request did not declare",
                                 sent=pending.message, received=message)
            return False
        self.finding("result-type", f"{pending.method} result has resultType {kind!r}",
                     sent=pending.message, received=message)
        return False

    def _check_structured(self, pending: Pending, result: dict[str, Any],
                          message: dict[str, Any]) -> None:
        assert pending.tool is not None
        schema = pending.tool.get("outputSchema")
        if not isinstance(schema, dict) or result.get("isError"):
            return
        if "structuredContent" not in result:
            self.finding("structured-content", f"tool {pending.tool.get('name')!r} has an "
                         "outputSchema but its result has no structuredContent",
                         sent=pending.message, received=message)
            return
        problems = _validate_free(schema, result["structuredContent"])
        if problems:
            self.finding("structured-content", f"tool {pending.tool.get('name')!r}: "
                         f"structuredContent does not match its outputSchema: {problems[0]}",
                         sent=pending.message, received=message)

    def _record_list(self, pending: Pending, result: dict[str, Any]) -> None:
        method = pending.method
        cursor = result.get("nextCursor")
        if isinstance(cursor, str):
            self.ledger.cursors[pending.request_id] = cursor
        key = LIST_METHODS[method][1]
        for item in result.get(key) or []:
            if not isinstance(item, dict):
                continue
            if method == "tools/list" and isinstance(item.get("name"), str):
                if self._in_scope(item):
                    self.machine.tools[item["name"]] = item
            elif method == "prompts/list" and isinstance(item.get("name"), str):
                self.machine.prompts[item["name"]] = item
            elif (method == "resources/list" and isinstance(item.get("uri"), str)
                  and item["uri"] not in self.machine.resources):
                self.machine.resources.append(item["uri"])

    def _in_scope(self, tool: dict[str, Any]) -> bool:
        """Whether the run may call ``tool`` (see the module docstring, "Scope")."""
        cls = self.config
        name = tool["name"]
        if cls.tools_include is not None and not any(
                fnmatch.fnmatchcase(name, p) for p in cls.tools_include):
            return False
        if any(fnmatch.fnmatchcase(name, p) for p in cls.tools_exclude):
            return False
        hints = tool.get("annotations")
        if (not cls.allow_destructive and isinstance(hints, dict)
                and hints.get("destructiveHint") is True and hints.get("readOnlyHint") is not True):
            self.note(f"tool {name!r} is annotated destructive: not called (allow it with "
                      "allow_destructive / --allow-destructive)")
            return False
        return True

    def _on_request(self, message: dict[str, Any]) -> None:
        method = message["method"]
        request_id = message["id"]
        row = lookup(method, self.revision)
        allowed = (row is not None and row.kind is Kind.REQUEST
                   and row.sender.allows(Role.SERVER) and not self.stateless)
        if allowed and row is not None:
            missing = missing_capability(row, self.revision, message.get("params") or {},
                                         self.config.client_capabilities)
            if missing is not None:
                allowed = False
        if not allowed:
            self.finding("unexpected-request", f"the server sent a {method} request, which "
                         f"it may not send in {self.revision} to a client that declared "
                         f"{self.config.client_capabilities}", received=message)
            self.wire.send({"jsonrpc": "2.0", "id": request_id,
                            "error": {"code": -32601, "message": f"Method not found: {method}"}})
            return
        self._check_params(message, "request")
        if method == "ping":
            self.wire.send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            # Reachable only with client_capabilities declared; the machine serves nothing
            # but ping, and says so rather than pretend.
            self.wire.send({"jsonrpc": "2.0", "id": request_id,
                            "error": {"code": -32603, "message": f"{method} is not served by "
                                      "the test client"}})

    def _check_params(self, message: dict[str, Any], kind: str) -> bool:
        method = message["method"]
        name = (self.schemas.request_definition(self.revision, method) if kind == "request"
                else self.schemas.notification_definition(self.revision, method))
        if name is None:
            return True
        problems = self.schemas.errors(self.revision, name, message)
        if problems:
            self.finding("notification-schema" if kind == "notification" else "envelope",
                         f"{method} is not a valid {name}: {'; '.join(problems)}",
                         received=message)
            return False
        return True

    def _on_notification(self, message: dict[str, Any]) -> None:
        method = message["method"]
        row = lookup(method, self.revision)
        if row is None or row.kind is not Kind.NOTIFICATION or not row.sender.allows(
                Role.SERVER):
            self.finding("unknown-notification", f"{method} is not a notification a server "
                         f"sends in {self.revision}", received=message)
            return
        if not self._check_params(message, "notification"):
            return
        params = message.get("params") or {}
        if method == "notifications/progress":
            self._on_progress(params, message)
        elif method == "notifications/message":
            self._on_log(params, message)
        elif method in LIST_CHANGED or method == "notifications/resources/updated":
            self._on_change(method, params, message)
        elif method == "notifications/subscriptions/acknowledged":
            self._on_ack(params, message)
        elif method == "notifications/cancelled":
            target = params.get("requestId")
            pending = self.ledger.pending.get(target) if isinstance(target, str | int) else None
            if self.stateless and (pending is None or pending.listen_filter is None):
                self.finding("unknown-notification", "in 2026-07-28 a server cancels only a "
                             "listen stream", received=message)
            elif pending is not None and pending.listen_filter is not None:
                del self.ledger.pending[pending.request_id]
                self.ledger.answered.add(pending.request_id)

    def _on_progress(self, params: dict[str, Any], message: dict[str, Any]) -> None:
        token = params.get("progressToken")
        request_id = self.ledger.tokens.get(token) if isinstance(token, str | int) else None
        pending = self.ledger.pending.get(request_id) if request_id is not None else None
        if pending is None:
            self.finding("progress-unknown-token", f"progress for token {token!r}, which no "
                         "active request gave", received=message)
            return
        if pending.cancelled_seq is not None and pending.cancelled_seq < self.ledger.acked_seq:
            self.finding("response-after-cancel", f"progress for {pending.method} (id "
                         f"{pending.request_id!r}) after its cancellation had been processed",
                         received=message, requirement="must" if self.stateless else "should")
            return
        progress = params.get("progress")
        if not isinstance(progress, int | float) or isinstance(progress, bool):
            return  # the schema check has reported it
        if pending.last_progress is not None and progress <= pending.last_progress:
            self.finding("progress-not-increasing", f"progress went from "
                         f"{pending.last_progress} to {progress}", received=message)
        pending.last_progress = progress

    def _on_log(self, params: dict[str, Any], message: dict[str, Any]) -> None:
        if not declared(self.machine.peer_capabilities, "logging"):
            self.finding("log-without-capability", "notifications/message from a server that "
                         "did not declare logging", received=message)
            return
        if self.stateless and not any(p.log_level for p in self.ledger.pending.values()):
            self.finding("log-without-level", "notifications/message while no request in "
                         "flight asked for a log level", received=message)

    def _on_change(self, method: str, params: dict[str, Any], message: dict[str, Any]) -> None:
        if self.stateless:
            meta = params.get("_meta") or {}
            sub = meta.get(META_SUB) if isinstance(meta, dict) else None
            stream = self.ledger.pending.get(sub) if isinstance(sub, str | int) else None
            if stream is None or stream.listen_filter is None or not _filter_wants(
                    stream.listen_filter, method, params):
                self.finding("unsolicited-change", f"{method} outside a listen stream that "
                             "asked for it", received=message, requirement="must")
            return
        if method == "notifications/resources/updated":
            # The machine never subscribes (resources/subscribe), so no update is due.
            self.finding("unsolicited-change", f"{method} for {params.get('uri')!r}, which "
                         "was never subscribed to", received=message, requirement="must")
            return
        capability = LIST_CHANGED[method]
        if not declared(self.machine.peer_capabilities, capability):
            self.finding("unsolicited-change", f"{method} from a server that did not declare "
                         f"{capability}", received=message)

    def _on_ack(self, params: dict[str, Any], message: dict[str, Any]) -> None:
        meta = params.get("_meta") or {}
        sub = meta.get(META_SUB) if isinstance(meta, dict) else None
        stream = self.ledger.pending.get(sub) if isinstance(sub, str | int) else None
        if stream is None or stream.method != "subscriptions/listen":
            self.finding("listen-acknowledgement", f"an acknowledgement tagged {sub!r}, which "
                         "is not a listen stream in flight", received=message)
            return
        if stream.acknowledged:
            self.finding("listen-acknowledgement", f"listen stream {sub!r} acknowledged twice",
                         received=message)
            return
        stream.acknowledged = True
        granted = params.get("notifications") or {}
        asked = stream.listen_filter or {}
        for key, value in granted.items():
            if key in LISTEN_FILTER:
                capability = LISTEN_FILTER[key][1]
                if value and (not asked.get(key) or not declared(
                        self.machine.peer_capabilities, capability)):
                    self.finding("listen-acknowledgement", f"acknowledged {key} although it "
                                 "was not asked for or its capability is not declared",
                                 received=message)
            elif key == "resourceSubscriptions" and value and not set(value) <= set(
                    asked.get(key) or []):
                self.finding("listen-acknowledgement", "acknowledged resource subscriptions "
                             "that were not asked for", received=message)


def _codes(accepted: frozenset[int]) -> str:
    return " or ".join(str(c) for c in sorted(accepted, reverse=True))


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _filter_wants(wanted: Mapping[str, Any], method: str, params: Mapping[str, Any]) -> bool:
    for key, (notification, _) in LISTEN_FILTER.items():
        if notification == method:
            return bool(wanted.get(key))
    if method == "notifications/resources/updated":
        return params.get("uri") in (wanted.get("resourceSubscriptions") or [])
    return False


def _validate_free(schema: Mapping[str, Any], instance: Any) -> list[str]:
    """Validate against a schema from a peer (a tool's outputSchema)."""
    import jsonschema  # type: ignore[import-untyped]  # a test dependency

    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        errors = [e.message for e in cls(schema).iter_errors(instance)]
    except jsonschema.exceptions.SchemaError as exc:
        return [f"the outputSchema itself is invalid: {exc.message}"]
    return [short(e, 160) for e in errors[:1]]
