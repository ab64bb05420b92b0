"""Findings: what a peer did that the specification does not allow, and the collected report.

Theory of operation
-------------------
Every check the peer machine makes has a name in :data:`CHECKS` (the rules broken on
purpose by :func:`~mcp_sansio.testing.invalid_messages` are there too, under the names of
:data:`~mcp_sansio.testing.RULES`). A deviation becomes a :class:`Finding` carrying the
check's name, whether the check is a MUST or a SHOULD, what happened in words, and the
messages involved (its *exchange*: what we sent, what the peer answered -- over HTTP, the
request line, headers and status as well), the citation of the rule (the revision in force
and the section of the specification or RFC), and whether the run was cut short by its
budget. In "fail" mode the first finding raises :class:`PeerDeviation`; in "report" mode
findings go into a :class:`Report`, which lists each distinct deviation once with the
number of times it was seen.

A report renders itself three ways: :meth:`Report.summary` for people (findings grouped by
rule, each with its reproducing exchange), :meth:`Report.to_json` (an object whose
``findings`` list holds one object per finding) and :meth:`Report.to_junit` (JUnit XML, one
test case per check that ran, failed when it has findings) for CI systems.
:meth:`Report.raise_for_must` is the assertion a test suite makes: it raises
:class:`CheckFailed`, carrying the report, when a MUST was violated.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from xml.etree import ElementTree

import attrs

from ._invalid import MUST, RULES, SHOULD, Rule

__all__ = ["CHECKS", "CheckFailed", "Finding", "PeerDeviation", "Report"]


def _check(name: str, requirement: str, answer: str, source: str) -> Rule:
    return Rule(name=name, requirement=requirement, answer=answer, source=source)


#: Everything the peer machine checks, by name: the session checks below, then
#: every rule of :data:`~mcp_sansio.testing.RULES` (the expected answers to invalid messages).
CHECKS: dict[str, Rule] = {r.name: r for r in (
    _check("output-not-json", MUST, "every line the peer writes is one JSON-RPC message",
           "stdio transport: only valid MCP messages on stdout"),
    _check("envelope", MUST, "every message validates against the revision's JSONRPCMessage",
           "MCP schema; JSON-RPC 2.0 s. 4, 5"),
    _check("unknown-id", MUST, "a response answers a request that was sent",
           "JSON-RPC 2.0 s. 5"),
    _check("duplicate-response", MUST, "a request is answered once", "JSON-RPC 2.0 s. 5"),
    _check("no-reply", MUST, "every request is answered (unless cancelled)",
           "JSON-RPC 2.0 s. 4; MCP basic/index.mdx"),
    _check("peer-closed", SHOULD, "the server keeps the session open until the client ends "
           "it (a bad message never ends a session)",
           "stdio transport: the client closes first; JSON-RPC 2.0 s. 5 answers errors"),
    _check("unexpected-error", MUST, "no error reply without a request that deserves it "
           "(an error with a null id answers a message whose id was unreadable)",
           "JSON-RPC 2.0 s. 4.1, 5"),
    _check("result-schema", MUST, "a result validates against the method's result schema",
           "MCP schema"),
    _check("result-type", MUST, "2026-07-28 results carry a known resultType",
           "2026-07-28 schema (Result.resultType), basic/patterns/mrtr.mdx"),
    _check("notification-schema", MUST, "a notification validates against its schema",
           "MCP schema"),
    _check("unknown-notification", MUST, "the peer sends only notifications its role sends in "
           "the revision", "MCP schema: ServerNotification"),
    _check("unexpected-request", MUST, "the peer sends only requests its role may send, "
           "gated by our capabilities (none in 2026-07-28)",
           "MCP schema: ServerRequest; capability negotiation"),
    _check("ping", MUST, "ping is answered with an empty result, also before initialize",
           "basic/utilities/ping.mdx"),
    _check("version", MUST, "initialize is answered with a handshake revision",
           "basic/lifecycle.mdx, Version Negotiation"),
    _check("discover", MUST, "a stateless server answers server/discover and lists the "
           "revision it serves", "2026-07-28 server/discover.mdx"),
    _check("response-after-cancel", SHOULD, "nothing is sent for a request after its "
           "cancellation was processed (a MUST in 2026-07-28)",
           "basic/utilities/cancellation.mdx; 2026-07-28 basic/patterns/cancellation.mdx"),
    _check("progress-unknown-token", MUST, "progress only for a request that asked for it and "
           "is still active", "basic/utilities/progress.mdx"),
    _check("progress-not-increasing", MUST, "progress increases with every notification",
           "basic/utilities/progress.mdx"),
    _check("log-without-capability", MUST, "notifications/message only with the logging "
           "capability declared", "server/utilities/logging.mdx"),
    _check("log-without-level", MUST, "2026-07-28: no log message for a request that did not "
           "ask for a level", "2026-07-28 server/utilities/logging.mdx"),
    _check("unsolicited-change", SHOULD, "list_changed only with listChanged declared, "
           "resources/updated only for a subscribed URI (a MUST); in 2026-07-28 both only on "
           "a listen stream that asked for them (a MUST)",
           "server/tools.mdx, prompts.mdx, resources.mdx; 2026-07-28 subscriptions"),
    _check("structured-content", MUST, "a tool with an outputSchema returns structuredContent "
           "that conforms to it", "2025-06-18+ server/tools.mdx, Output Schema"),
    _check("unknown-tool", SHOULD, "tools/call for an unknown tool is answered -32602",
           "server/tools.mdx, Error Handling"),
    _check("unknown-prompt", SHOULD, "prompts/get for an unknown prompt is answered -32602",
           "server/prompts.mdx, Error Handling"),
    _check("missing-prompt-argument", SHOULD, "prompts/get without a required argument is "
           "answered -32602", "server/prompts.mdx, Error Handling"),
    _check("unknown-resource", SHOULD, "resources/read of an unknown URI is answered -32002 "
           "(-32602 in 2026-07-28)", "server/resources.mdx, Error Handling"),
    _check("listen-acknowledgement", MUST, "a listen stream starts with "
           "notifications/subscriptions/acknowledged, tagged with its subscriptionId, "
           "honouring only what was asked", "2026-07-28 subscriptions (spec-digest h)"),
    # -- batching (2025-03-26 only) --
    _check("batch", MUST, "2025-03-26: a batch of requests is accepted and answered with an "
           "array holding one response per request (a batch of notifications: nothing)",
           "2025-03-26 basic/index.mdx, Batching (MUST support receiving batches); "
           "JSON-RPC 2.0 s. 6"),
    # -- Streamable HTTP (2025-03-26+) and HTTP+SSE (2024-11-05) --
    _check("http-status", MUST, "a request is answered 200 with application/json or "
           "text/event-stream; an accepted notification or response 202 with no body",
           "basic/transports.mdx, Sending Messages to the Server (2025-03-26+); 2026-07-28 "
           "basic/transports/streamable-http.mdx"),
    _check("http-session", MUST, "a request carrying a terminated or unknown Mcp-Session-Id "
           "is answered 404 (one without the id the session needs: 400, a SHOULD)",
           "basic/transports.mdx, Session Management (2025-03-26 .. 2025-11-25)"),
    _check("http-session-id", SHOULD, "the Mcp-Session-Id holds only visible ASCII "
           "(0x21-0x7E)", "basic/transports.mdx, Session Management"),
    _check("http-protocol-version", MUST, "a request with an invalid or unsupported "
           "MCP-Protocol-Version header is answered 400",
           "2025-06-18+ basic/transports.mdx, Protocol Version Header; 2026-07-28 "
           "streamable-http.mdx (-32022)"),
    _check("http-origin", MUST, "a request with an Origin the server does not trust is "
           "refused (403 from 2025-11-25; any 4xx before)",
           "basic/transports.mdx, Security Warning (MUST validate Origin); 2025-11-25: 403"),
    _check("http-get", MUST, "GET on the endpoint opens an SSE stream (text/event-stream) "
           "or is answered 405 (always 405 in 2026-07-28)",
           "basic/transports.mdx, Listening for Messages from the Server; 2026-07-28 "
           "streamable-http.mdx"),
    _check("http-delete", MUST, "after DELETE ends a session (any 2xx), a request in it is "
           "answered 404; a server that does not let clients end sessions answers 405",
           "basic/transports.mdx, Session Management (2025-03-26 .. 2025-11-25)"),
    _check("http-headers", MUST, "2026-07-28: a request whose Mcp-Method / Mcp-Name "
           "header is missing or disagrees with its body is answered 400 (-32020)",
           "2026-07-28 basic/transports/streamable-http.mdx, Request Metadata"),
    _check("http-sse", MUST, "an SSE stream carries one JSON-RPC message per event, and a "
           "request's stream ends with (or resumes, by Last-Event-ID, to) its response",
           "basic/transports.mdx, Sending Messages / Resumability; WHATWG SSE"),
    _check("http-endpoint", MUST, "HTTP+SSE: the SSE stream opens with an endpoint event "
           "naming where to POST", "2024-11-05 basic/transports.mdx, HTTP with SSE"),
    # -- checks of a client (the kit playing the server: _client_machine.py) ----------------
    _check("client-output-not-json", MUST, "every line the client writes is one JSON-RPC "
           "message", "all revisions basic/transports.mdx, stdio: only valid MCP messages "
           "on the server's stdin"),
    _check("client-envelope", MUST, "every message is JSON-RPC 2.0; a request id is a "
           "string or an integer, never null", "JSON-RPC 2.0 s. 4; basic/index.mdx, Requests"),
    _check("client-request-before-initialize", SHOULD, "no request but ping before the "
           "initialize result", "basic/lifecycle.mdx, Initialization (all handshake "
           "revisions)"),
    _check("client-initialize-schema", MUST, "initialize carries protocolVersion, "
           "capabilities and clientInfo", "basic/lifecycle.mdx, Initialization; schema "
           "InitializeRequest"),
    _check("client-version", MUST, "initialize offers a revision that has initialize",
           "basic/lifecycle.mdx, Version Negotiation; 2026-07-28 basic/versioning.mdx"),
    _check("client-initialized", MUST, "notifications/initialized follows the initialize "
           "result, before any request but ping", "basic/lifecycle.mdx, Initialization"),
    _check("client-unknown-request", MUST, "the client sends only requests of the client "
           "role in the revision", "MCP schema: ClientRequest"),
    _check("client-capability-gating", MUST, "requests only for capabilities the server "
           "declared (a SHOULD before 2025-06-18)", "basic/lifecycle.mdx, Operation; "
           "server/tools.mdx, prompts.mdx, resources.mdx, Capabilities"),
    _check("client-request-schema", MUST, "a request validates against its schema",
           "MCP schema"),
    _check("client-id-reused", MUST, "a request id is never reused in a session (2026-07-28: "
           "while outstanding)", "basic/index.mdx, Requests"),
    _check("client-unknown-notification", MUST, "the client sends only notifications of the "
           "client role in the revision", "MCP schema: ClientNotification"),
    _check("client-notification-schema", MUST, "a notification validates against its "
           "schema", "MCP schema"),
    _check("client-notification-gating", SHOULD, "roots/list_changed only with "
           "roots.listChanged declared", "client/roots.mdx, Capabilities"),
    _check("client-cancel-initialize", MUST, "initialize is never cancelled",
           "basic/utilities/cancellation.mdx, Cancellation Flow"),
    _check("client-cancel-unknown", MUST, "a cancellation names a request the client sent",
           "basic/utilities/cancellation.mdx, Behavior Requirements"),
    _check("client-progress-unknown-token", MUST, "progress only for a token of an active "
           "request of the server's", "basic/utilities/progress.mdx, Behavior Requirements"),
    _check("client-progress-not-increasing", MUST, "progress increases with every "
           "notification", "basic/utilities/progress.mdx, Progress Flow"),
    _check("client-ping", MUST, "the server's ping is answered promptly with an empty "
           "result", "basic/utilities/ping.mdx, Behavior Requirements"),
    _check("client-no-reply", MUST, "every request of the server's is answered",
           "JSON-RPC 2.0 s. 4; basic/index.mdx, Responses"),
    _check("client-undeclared-answer", SHOULD, "roots/list, sampling/createMessage and "
           "elicitation/create get an error, not a result, when the client did not declare "
           "the capability", "basic/lifecycle.mdx, Capability Negotiation; client/roots.mdx, "
           "sampling.mdx, elicitation.mdx"),
    _check("client-result-schema", MUST, "a result the client sends validates against the "
           "method's result schema", "MCP schema"),
    _check("client-unknown-id", MUST, "a response answers a request the server sent",
           "JSON-RPC 2.0 s. 5"),
    _check("client-duplicate-response", MUST, "a request of the server's is answered once",
           "JSON-RPC 2.0 s. 5"),
    _check("client-robustness", SHOULD, "hostile server output (a line that is not JSON, a "
           "response to no request, a 1 MiB message) neither kills nor hangs the client",
           "JSON-RPC 2.0 s. 5 (invalid input is answered, not fatal); basic/transports.mdx"),
    _check("client-session-end", SHOULD, "HTTP: a client done with its session ends it with "
           "DELETE and the session's Mcp-Session-Id", "2025-03-26+ basic/transports.mdx, "
           "Session Management (item 5)"),
    _check("client-elicitation-url-result", SHOULD, "a URL-mode elicitation is answered "
           "with an action and no content (content is only for an accepted form)",
           "2025-11-25 client/elicitation.mdx, URL Mode; schema.ts ElicitResult.content"),
    _check("client-task-result", MUST, "a client that declared tasks for a request answers "
           "it, task-augmented, with CreateTaskResult; tasks/get with that task, tasks/result "
           "with the request's result", "2025-11-25 basic/utilities/tasks.mdx (Creating "
           "Tasks, Getting Tasks, Retrieving Task Results); schema.ts CreateTaskResult"),
    _check("client-listen", SHOULD, "2026-07-28: a client ends a listen stream the "
           "transport's way -- on HTTP by closing its stream, with no notifications/cancelled "
           "(the revision defines no client notification there); on stdio with "
           "notifications/cancelled naming the listen", "2026-07-28 "
           "basic/transports/streamable-http.mdx, Sending Messages (note) and Cancellation; "
           "basic/patterns/cancellation.mdx; basic/patterns/subscriptions.mdx"),
    _check("client-task-poll", SHOULD, "tasks extension (2026-07-28): a client that got a "
           "task (resultType \"task\") for its tools/call polls tasks/get for that taskId "
           "until the task is terminal, or cancels it, and waits pollIntervalMs between "
           "polls", "io.modelcontextprotocol/tasks (ext-tasks specification tasks.md): "
           "Capability Negotiation (a client that declared it MUST be prepared to handle "
           "CreateTaskResult), Task Polling (SHOULD respect pollIntervalMs, SHOULD poll until "
           "terminal or tasks/cancel)"),
    _check("client-task-update", MUST, "tasks extension (2026-07-28): tasks/update answers "
           "only inputRequests the task has outstanding (each inputResponses key one of them)",
           "io.modelcontextprotocol/tasks (ext-tasks specification tasks.md): Task Update "
           "Requests (UpdateTaskRequest.inputResponses: each key MUST correspond to a "
           "currently-outstanding inputRequest key)"),
    _check("client-sse-endpoint", MUST, "legacy HTTP+SSE: every client message is POSTed to "
           "the URI of the server's endpoint event", "2024-11-05 basic/transports.mdx, HTTP "
           "with SSE"),
    _check("client-session-id", MUST, "HTTP: every request after initialize carries the "
           "Mcp-Session-Id the server gave", "2025-03-26+ basic/transports.mdx, Session "
           "Management"),
    _check("client-protocol-version-header", MUST, "HTTP: MCP-Protocol-Version on every "
           "request after initialize, the negotiated revision (2026-07-28: equal to the "
           "_meta version)", "2025-06-18+ basic/transports.mdx, Protocol Version Header; "
           "2026-07-28 basic/transports/streamable-http.mdx"),
    _check("client-reinitialize", MUST, "HTTP: after a 404 for its session the client "
           "sends a new initialize without a session id", "2025-03-26+ "
           "basic/transports.mdx, Session Management"),
    _check("client-sse-resume", SHOULD, "HTTP: a dropped SSE stream is resumed with GET and "
           "the last Last-Event-ID received", "2025-11-25 basic/transports.mdx, Sending "
           "Messages to the Server and Resumability and Redelivery"),
    _check("client-method-headers", MUST, "HTTP, 2026-07-28: Mcp-Method on every request, "
           "Mcp-Name on tools/call, prompts/get and resources/read, Mcp-Param-{Name} for "
           "x-mcp-header arguments, each equal to the body",
           "2026-07-28 basic/transports/streamable-http.mdx"),
    _check("client-sse-retry", MUST, "HTTP: the client waits the SSE retry field's "
           "milliseconds before reconnecting", "2025-11-25 basic/transports.mdx, Sending "
           "Messages to the Server"),
    _check("client-meta-envelope", MUST, "2026-07-28: every request carries _meta "
           "io.modelcontextprotocol/protocolVersion and /clientCapabilities",
           "2026-07-28 basic/versioning.mdx"),
    _check("client-input-retry", MUST, "2026-07-28: an input_required result is retried "
           "with a new id, every input request answered and requestState echoed",
           "2026-07-28 basic/patterns/mrtr.mdx"),
)} | RULES


@attrs.frozen(kw_only=True)
class Finding:
    """One deviation from the specification."""

    #: The check that failed (a key of :data:`CHECKS`).
    rule: str
    #: "must" or "should".
    requirement: str
    #: What happened, in words.
    detail: str
    #: The revision in force.
    revision: str | None = None
    #: The message that provoked it (what we sent), if any.
    sent: Any = None
    #: The message that shows it (what the peer sent), if any.
    received: Any = None
    #: Where the rule is written (section of the specification or RFC), for
    #: :attr:`revision`.
    source: str = ""
    #: Whether the run that found it was cut short by its budget (what was not reached
    #: may hide more).
    cut_short: bool = False
    #: Whether hypothesis shrank the session that shows it (:func:`~mcp_sansio.testing.shrink`):
    #: the exchange is then from the smallest session found.
    shrunk: bool = False

    @property
    def citation(self) -> str:
        """The rule's revision and section, e.g. ``"2025-06-18: server/tools.mdx..."``."""
        return f"{self.revision}: {self.source}" if self.revision else self.source

    @property
    def exchange(self) -> list[dict[str, Any]]:
        """The reproducing exchange: what was sent, then what the peer answered (each
        ``{"from": "kit" | "peer", "message": ...}``; a raw line is given as text)."""
        out: list[dict[str, Any]] = []
        for who, value in (("kit", self.sent), ("peer", self.received)):
            if value is None:
                continue
            shown = bytes(value).decode("utf-8", "replace") if isinstance(
                value, bytes | bytearray) else value
            out.append({"from": who, "message": shown})
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready object: rule, severity, message, exchange and the rest."""
        return {"rule": self.rule, "severity": self.requirement.upper(),
                "message": self.detail, "revision": self.revision,
                "citation": self.citation, "exchange": self.exchange,
                "cut_short": self.cut_short, "shrunk": self.shrunk}

    def __str__(self) -> str:
        where = f" [{self.revision}]" if self.revision else ""
        return f"{self.rule} ({self.requirement}){where}: {self.detail}"


class CheckFailed(AssertionError):
    """A check found at least one MUST violated; :attr:`report` holds every finding."""

    def __init__(self, report: Report) -> None:
        super().__init__(report.summary())
        self.report = report


class PeerDeviation(AssertionError):
    """Raised in "fail" mode at the first finding."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(str(finding))
        self.finding = finding


@attrs.define
class Report:
    """Findings collected over every session of a run ("report" mode).

    Each distinct deviation -- the same check failing with the same detail -- is kept once,
    with how often it was seen.
    """

    findings: list[Finding] = attrs.field(factory=list)
    counts: dict[tuple[str, str, str | None], int] = attrs.field(factory=dict)
    #: How many sessions ran, per revision.
    sessions: dict[str, int] = attrs.field(factory=dict)
    #: Things worth knowing that are not deviations (a revision the peer does not speak,
    #: a slow tool...).
    notes: list[str] = attrs.field(factory=list)
    #: Whether the run stopped early because its budget ran out.
    cut_short: bool = False
    #: The seed the random sessions were drawn from (None: hypothesis's derandomized one);
    #: the same seed on a deterministic peer gives the same findings.
    seed: int | None = None

    def add(self, finding: Finding) -> None:
        key = (finding.rule, finding.detail, finding.revision)
        if key not in self.counts:
            self.findings.append(finding)
            self.counts[key] = 0
        elif finding.shrunk:
            # The same deviation from a shrunk session: keep its (smaller) exchange.
            index = next(i for i, f in enumerate(self.findings)
                         if (f.rule, f.detail, f.revision) == key)
            self.findings[index] = finding
        self.counts[key] += 1

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def must(self) -> list[Finding]:
        """The findings that violate a MUST."""
        return [f for f in self.findings if f.requirement == "must"]

    @property
    def ok(self) -> bool:
        """No MUST was violated (SHOULD findings do not count)."""
        return not self.must()

    def raise_for_must(self) -> None:
        """Raise :class:`CheckFailed` (an ``AssertionError``) when a MUST was violated."""
        if not self.ok:
            raise CheckFailed(self)

    def rules(self) -> set[str]:
        """The names of the checks that failed at least once."""
        return {f.rule for f in self.findings}

    def by_rule(self) -> dict[str, list[Finding]]:
        out: dict[str, list[Finding]] = {}
        for finding in self.findings:
            out.setdefault(finding.rule, []).append(finding)
        return out

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def summary(self) -> str:
        """A readable account: sessions run, then each failed check with its findings."""
        runs = ", ".join(f"{rev}: {n}" for rev, n in sorted(self.sessions.items())) or "none"
        lines = [f"seed: {_seed_text(self.seed)}", f"sessions: {runs}"]
        if not self.findings:
            lines.append("no findings")
        for rule, found in sorted(self.by_rule().items()):
            check = CHECKS.get(rule)
            level = check.requirement.upper() if check else "?"
            lines.append(f"{rule} ({level}): {check.answer if check else ''}")
            source = f" -- {check.source}" if check else ""
            lines[-1] += source
            for finding in found:
                times = self.counts[finding.rule, finding.detail, finding.revision]
                suffix = (f" (x{times})" if times > 1 else "") + (
                    " (shrunk)" if finding.shrunk else "")
                lines.append(f"    [{finding.revision}] {finding.detail}{suffix}")
                for step in finding.exchange:
                    arrow = "->" if step["from"] == "kit" else "<-"
                    lines.append(f"        {arrow} {_one_line(step['message'])}")
        lines.extend(f"note: {text}" for text in self.notes)
        if self.cut_short:
            lines.append("note: the run was cut short by its budget")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready object: ``findings`` (one object per finding, with its
        rule, severity, message and exchange), ``sessions``, ``notes``, ``cut_short`` and
        ``ok``."""
        return {"ok": self.ok, "cut_short": self.cut_short, "seed": self.seed,
                "sessions": dict(self.sessions),
                "findings": [{**f.to_dict(), "count": self.counts[f.rule, f.detail,
                                                                  f.revision]}
                             for f in self.findings],
                "notes": list(self.notes)}

    def to_junit(self, name: str = "mcp-sansio check") -> str:
        """JUnit XML: one test case per check that found something (failed: a MUST;
        skipped-free "system-out" for a SHOULD), plus one passing case when nothing was
        found, so that CI systems show the run."""
        by_rule = self.by_rule()
        suite = ElementTree.Element("testsuite", name=name, tests=str(max(len(by_rule), 1)),
                                    failures=str(sum(1 for r, fs in by_rule.items() if any(
                                        f.requirement == "must" for f in fs))))
        properties = ElementTree.SubElement(suite, "properties")
        ElementTree.SubElement(properties, "property", name="seed",
                               value=_seed_text(self.seed))
        for text in self.notes:
            ElementTree.SubElement(properties, "property", name="note", value=text)
        for rule, found in sorted(by_rule.items()):
            case = ElementTree.SubElement(suite, "testcase", classname="mcp-sansio.check",
                                          name=rule)
            text = "\n\n".join(
                f"[{f.revision}] {f.detail}\n{f.citation}\n" + "\n".join(
                    ("-> " if s["from"] == "kit" else "<- ") + _one_line(s["message"], 2000)
                    for s in f.exchange) for f in found)
            if any(f.requirement == "must" for f in found):
                failure = ElementTree.SubElement(case, "failure", message=str(found[0]),
                                                 type="MUST")
                failure.text = text
            else:
                out = ElementTree.SubElement(case, "system-out")
                out.text = "SHOULD: " + text
        if not by_rule:
            ElementTree.SubElement(suite, "testcase", classname="mcp-sansio.check",
                                   name="no findings")
        return ElementTree.tostring(suite, encoding="unicode")


def _seed_text(seed: int | None) -> str:
    return "derandomized" if seed is None else str(seed)


def _one_line(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=repr)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."
