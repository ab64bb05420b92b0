"""The method table: who may send each method, in which revisions, gated by which capability.

Theory of operation
-------------------
One row per (method, era). A row names the message kind, which role sends it, the revisions
it exists in, and the capability that must have been declared -- by the *receiver* for a
request (the receiver promises to handle it: ``tools/call`` needs the server's ``tools``), by
the *sender* for a notification (the sender promises to emit it: ``notifications/tools/
list_changed`` needs the server's ``tools.listChanged``). A few rules also depend on the
params (``sampling/createMessage`` with ``tools`` needs ``sampling.tools``); those rows carry a
small check function, named after the rule it implements.

Sources, cited per row group: spec-digest section c (``schema/<rev>/schema.json`` unions
``ClientRequest``/``ServerRequest``/``ClientNotification``/``ServerNotification`` and the
capability sections of ``docs/specification/<rev>/{server,client}/*.mdx``).

The connection consults :func:`lookup` for the direction and existence checks and
:func:`missing_capability` for gating; neither re-encodes a rule.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, cast

from ._errors import ErrorCode
from ._state import Role
from ._versions import HANDSHAKE_REVISIONS, KNOWN_REVISIONS

__all__ = [
    "INPUT_REQUEST_METHODS",
    "METHODS",
    "MRTR_METHODS",
    "PROMPT_METHODS",
    "SERVER_WIDE_NOTIFICATIONS",
    "SESSION_OPENERS",
    "Kind",
    "MethodRule",
    "Sender",
    "declared",
    "lookup",
    "missing_capability",
    "rules_for",
    "subject_field",
    "subject_of",
]


class Kind(enum.Enum):
    __hash__ = object.__hash__  # identity hash: C speed for lookups

    REQUEST = "request"
    NOTIFICATION = "notification"
    #: 2026-07-28: a server-to-client request embedded in an ``InputRequiredResult`` (MRTR),
    #: gated by the capabilities the *retried request* declared.
    INPUT_REQUEST = "input request"


class Sender(enum.Enum):
    __hash__ = object.__hash__  # identity hash: C speed for lookups

    CLIENT = "client"
    SERVER = "server"
    BOTH = "both"

    def allows(self, role: Role) -> bool:
        return self is Sender.BOTH or _SENDER_ROLE[self] is role


_SENDER_ROLE: dict[Sender, Role | None] = {
    Sender.CLIENT: Role.CLIENT, Sender.SERVER: Role.SERVER, Sender.BOTH: None,
}

#: A params-dependent gate: given the params and the capabilities that gate the row,
#: return the dotted path of a missing capability, or None.
ParamsCheck = Callable[[Mapping[str, Any], Mapping[str, Any]], str | None]


class MethodRule(NamedTuple):
    """One row of the method table (a named tuple: immutable, and cheap to define at import;
    build it with keywords)."""

    method: str
    kind: Kind
    sender: Sender
    revisions: frozenset[str]
    #: Dotted capability path that must be declared (``None``: always allowed).
    capability: str | None = None
    #: Revisions in which the capability is *not* required although the method exists
    #: (``completion/complete`` in 2024-11-05).
    ungated_in: frozenset[str] = frozenset()
    #: An additional params-dependent gate. A sub-capability it finds missing is answered
    #: -32602 (Invalid params) on receipt, not -32601: the method itself is supported
    #: (2025-11-25 ``client/elicitation.mdx`` requires -32602 for an undeclared mode).
    params_check: ParamsCheck | None = None
    #: Whose declared capabilities gate the row when it is not the default (requests: the
    #: receiver's; notifications: the sender's). ``notifications/elicitation/complete`` is
    #: sent by the server but gated by the client's ``elicitation.url``.
    gated_by: Role | None = None
    #: 2026-07-28: a complete result carries ``ttlMs``/``cacheScope`` (spec-digest h, Caching).
    cacheable: bool = False
    #: 2026-07-28: the result may be ``input_required`` (spec-digest h, MRTR).
    mrtr: bool = False
    #: The extension that defines the method, when the revision's schema does not
    #: (``io.modelcontextprotocol/tasks``, SEP-2663).
    extension: str | None = None
    #: The params field naming what the request is about -- the tool or prompt ``name``, the
    #: resource ``uri``, the ``taskId`` -- or None. One column serves every use: the URIs
    #: a subscription covers, what a sealed ``requestState`` is bound to (mrtr.mdx) and the
    #: field HTTP's ``Mcp-Name`` header mirrors (2026-07-28 ``transports.mdx``).
    subject: str | None = None
    #: False for the request that opens a session (``initialize``, lifecycle.mdx): it is
    #: never cancelled ("MUST NOT"), carries no progress token, is never part of a batch
    #: (2025-03-26 ``changelog.mdx``), and its timeout closes the connection instead.
    in_session: bool = True
    #: A notification about the server as a whole, not about one request or subscription:
    #: an HTTP server offers it to every session (the ``list_changed`` family).
    server_wide: bool = False
    #: Answered by the connection at once, whatever else is in flight (``ping``: "The
    #: receiver MUST respond promptly", basic/utilities/ping.mdx): never refused for the
    #: ``max_incoming_requests`` limit, or a peer under load could not tell it is alive.
    prompt: bool = False

    @property
    def gated_by_receiver(self) -> bool:
        """Requests are gated by the receiver's capabilities, notifications by the sender's
        (unless the row says otherwise); input requests by the client's (the receiver's)
        capabilities declared for the request."""
        if self.gated_by is not None:
            return self.sender is not Sender.BOTH and self.gated_by.value != self.sender.value
        return self.kind is not Kind.NOTIFICATION


def declared(capabilities: Mapping[str, Any], path: str) -> bool:
    """Whether the dotted ``path`` is declared in ``capabilities``.

    A capability is declared when it is present and not ``false``/``null``: ``{"tools": {}}``
    declares ``tools``; ``{"tools": {"listChanged": true}}`` also declares
    ``tools.listChanged``. Capability maps are open sets (lifecycle.mdx): unknown keys are fine.
    """
    parts = _PATHS.get(path)
    if parts is None:
        parts = tuple(path.split("."))
        if len(_PATHS) < _PATHS_LIMIT:
            _PATHS[path] = parts
    node: Any = capabilities
    for part in parts:
        # type() first: capability maps are plain dicts (decoded JSON) and the ABC check
        # is several times slower; any other Mapping still takes the general test.
        if type(node) is not dict and not isinstance(node, Mapping):
            return False
        node = node.get(part)
        if node is None or node is False:
            return False
    return True


#: Capability paths already split: the table's few dozen, and the first others a caller
#: asks about (bounded, in case an application passes paths built from input).
_PATHS: dict[str, tuple[str, ...]] = {}
_PATHS_LIMIT = 256


# -- params-dependent gates --------------------------------------------------------------------


def _sampling_subcapabilities(params: Mapping[str, Any], caps: Mapping[str, Any]) -> str | None:
    """2025-11-25 ``client/sampling.mdx``: ``tools``/``toolChoice`` need ``sampling.tools``;
    ``includeContext`` other than ``none`` needs ``sampling.context``."""
    if ("tools" in params or "toolChoice" in params) and not declared(caps, "sampling.tools"):
        return "sampling.tools"
    include = params.get("includeContext")
    if include not in (None, "none") and not declared(caps, "sampling.context"):
        return "sampling.context"
    return None


def _elicitation_mode(params: Mapping[str, Any], caps: Mapping[str, Any]) -> str | None:
    """2025-11-25 ``client/elicitation.mdx``: the request's mode (default ``form``) must be
    declared; an empty ``elicitation: {}`` declares form mode only."""
    mode = params.get("mode", "form")
    elicitation = caps.get("elicitation")
    if not isinstance(elicitation, Mapping):
        return "elicitation"
    if "form" not in elicitation and "url" not in elicitation:
        return None if mode == "form" else f"elicitation.{mode}"
    return None if declared(caps, f"elicitation.{mode}") else f"elicitation.{mode}"


# -- the table ---------------------------------------------------------------------------------

_ALL_HS = frozenset(HANDSHAKE_REVISIONS)
_UNTIL_0618 = frozenset({"2024-11-05", "2025-03-26", "2025-06-18"})
_FROM_0618 = frozenset({"2025-06-18", "2025-11-25"})
_ONLY_1125 = frozenset({"2025-11-25"})
_SL = frozenset({"2026-07-28"})
_REQ, _NOTE, _INPUT = Kind.REQUEST, Kind.NOTIFICATION, Kind.INPUT_REQUEST
_C, _S, _B = Sender.CLIENT, Sender.SERVER, Sender.BOTH
_TASKS = "io.modelcontextprotocol/tasks"


def _r(method: str, kind: Kind, sender: Sender, revisions: frozenset[str],
       capability: str | None = None, **kw: Any) -> MethodRule:
    return MethodRule(method=method, kind=kind, sender=sender, revisions=revisions,
                      capability=capability, **kw)


METHODS: tuple[MethodRule, ...] = (
    # ---- handshake era: spec-digest c2 ----
    # lifecycle.mdx
    _r("initialize", _REQ, _C, _ALL_HS, in_session=False),
    _r("notifications/initialized", _NOTE, _C, _ALL_HS),
    # utilities/ping.mdx, cancellation.mdx, progress.mdx
    _r("ping", _REQ, _B, _ALL_HS, prompt=True),
    _r("notifications/cancelled", _NOTE, _B, _ALL_HS),
    _r("notifications/progress", _NOTE, _B, _ALL_HS),
    # server/resources.mdx
    _r("resources/list", _REQ, _C, _ALL_HS, "resources"),
    _r("resources/templates/list", _REQ, _C, _ALL_HS, "resources"),
    _r("resources/read", _REQ, _C, _ALL_HS, "resources", subject="uri"),
    _r("resources/subscribe", _REQ, _C, _ALL_HS, "resources.subscribe", subject="uri"),
    _r("resources/unsubscribe", _REQ, _C, _ALL_HS, "resources.subscribe",
       subject="uri"),
    _r("notifications/resources/list_changed", _NOTE, _S, _ALL_HS, "resources.listChanged",
       server_wide=True),
    _r("notifications/resources/updated", _NOTE, _S, _ALL_HS, "resources.subscribe"),
    # server/prompts.mdx
    _r("prompts/list", _REQ, _C, _ALL_HS, "prompts"),
    _r("prompts/get", _REQ, _C, _ALL_HS, "prompts", subject="name"),
    _r("notifications/prompts/list_changed", _NOTE, _S, _ALL_HS, "prompts.listChanged",
       server_wide=True),
    # server/tools.mdx
    _r("tools/list", _REQ, _C, _ALL_HS, "tools"),
    _r("tools/call", _REQ, _C, _ALL_HS, "tools", subject="name"),
    _r("notifications/tools/list_changed", _NOTE, _S, _ALL_HS, "tools.listChanged",
       server_wide=True),
    # server/utilities/logging.mdx
    _r("logging/setLevel", _REQ, _C, _ALL_HS, "logging"),
    _r("notifications/message", _NOTE, _S, _ALL_HS, "logging"),
    # server/utilities/completion.mdx: the `completions` capability exists from 2025-03-26.
    _r("completion/complete", _REQ, _C, _ALL_HS, "completions",
       ungated_in=frozenset({"2024-11-05"})),
    # client/sampling.mdx, client/roots.mdx, client/elicitation.mdx. The sub-capabilities
    # (sampling.tools/context, elicitation modes) exist from 2025-11-25.
    _r("sampling/createMessage", _REQ, _S, _UNTIL_0618, "sampling"),
    _r("sampling/createMessage", _REQ, _S, _ONLY_1125, "sampling",
       params_check=_sampling_subcapabilities),
    _r("roots/list", _REQ, _S, _ALL_HS, "roots"),
    _r("notifications/roots/list_changed", _NOTE, _C, _ALL_HS, "roots.listChanged"),
    _r("elicitation/create", _REQ, _S, frozenset({"2025-06-18"}), "elicitation"),
    _r("elicitation/create", _REQ, _S, _ONLY_1125, "elicitation",
       params_check=_elicitation_mode),
    _r("notifications/elicitation/complete", _NOTE, _S, _ONLY_1125, "elicitation.url",
       gated_by=Role.CLIENT),
    # basic/utilities/tasks.mdx (2025-11-25, experimental, both directions)
    _r("tasks/get", _REQ, _B, _ONLY_1125),
    _r("tasks/result", _REQ, _B, _ONLY_1125),
    _r("tasks/list", _REQ, _B, _ONLY_1125, "tasks.list"),
    _r("tasks/cancel", _REQ, _B, _ONLY_1125, "tasks.cancel"),
    _r("notifications/tasks/status", _NOTE, _B, _ONLY_1125),
    # ---- stateless era, 2026-07-28: spec-digest c1 (every request is client -> server) ----
    _r("server/discover", _REQ, _C, _SL, cacheable=True),
    _r("tools/list", _REQ, _C, _SL, "tools", cacheable=True),
    _r("tools/call", _REQ, _C, _SL, "tools", mrtr=True, subject="name"),
    _r("prompts/list", _REQ, _C, _SL, "prompts", cacheable=True),
    _r("prompts/get", _REQ, _C, _SL, "prompts", mrtr=True, subject="name"),
    _r("resources/list", _REQ, _C, _SL, "resources", cacheable=True),
    _r("resources/templates/list", _REQ, _C, _SL, "resources", cacheable=True),
    _r("resources/read", _REQ, _C, _SL, "resources", cacheable=True, mrtr=True,
       subject="uri"),
    _r("completion/complete", _REQ, _C, _SL, "completions"),
    _r("subscriptions/listen", _REQ, _C, _SL),
    # The tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``): negotiated through
    # ``capabilities.extensions``, a key the dotted paths here cannot name, so the rows are
    # ungated and the application answers -32021 when the request did not declare it.
    _r("tasks/get", _REQ, _C, _SL, extension=_TASKS, subject="taskId"),
    _r("tasks/update", _REQ, _C, _SL, extension=_TASKS, subject="taskId"),
    _r("tasks/cancel", _REQ, _C, _SL, extension=_TASKS, subject="taskId"),
    # stdio: client -> server; server -> client only to end a listen stream.
    _r("notifications/cancelled", _NOTE, _B, _SL),
    _r("notifications/progress", _NOTE, _S, _SL),
    _r("notifications/message", _NOTE, _S, _SL, "logging"),
    _r("notifications/subscriptions/acknowledged", _NOTE, _S, _SL),
    _r("notifications/tools/list_changed", _NOTE, _S, _SL, "tools.listChanged",
       server_wide=True),
    _r("notifications/prompts/list_changed", _NOTE, _S, _SL, "prompts.listChanged",
       server_wide=True),
    _r("notifications/resources/list_changed", _NOTE, _S, _SL, "resources.listChanged",
       server_wide=True),
    _r("notifications/resources/updated", _NOTE, _S, _SL, "resources.subscribe"),
    # MRTR input requests embedded in an InputRequiredResult (basic/patterns/mrtr.mdx):
    # "only request declared client caps".
    _r("elicitation/create", _INPUT, _S, _SL, "elicitation", params_check=_elicitation_mode),
    _r("sampling/createMessage", _INPUT, _S, _SL, "sampling",
       params_check=_sampling_subcapabilities),
    _r("roots/list", _INPUT, _S, _SL, "roots"),
)

_INDEX: dict[tuple[str, str], MethodRule] = {}
for _rule in METHODS:
    for _rev in _rule.revisions:
        if (_rule.method, _rev) in _INDEX:  # pragma: no cover - guards the table itself
            raise AssertionError(f"duplicate row for {_rule.method} in {_rev}")
        _INDEX[_rule.method, _rev] = _rule

#: Every method name in any revision.
ALL_METHODS: frozenset[str] = frozenset(rule.method for rule in METHODS)

# -- facts derived from the table (computed once: the engine tests set membership) ---------

#: Methods that never join a session's ordinary traffic (the ``in_session`` column: only
#: ``initialize``): never cancelled, no progress token, not in a batch, closes on timeout.
SESSION_OPENERS: frozenset[str] = frozenset(r.method for r in METHODS if not r.in_session)

#: The input-request role: requests a server makes of a client -- real requests in the
#: handshake era, embedded in ``input_required`` in 2026-07-28 (``mrtr.mdx``) -- each with
#: the client capability it needs (``elicitation/create`` -> ``elicitation``, ...).
INPUT_REQUEST_METHODS: Mapping[str, str] = {
    r.method: cast("str", r.capability) for r in METHODS if r.kind is Kind.INPUT_REQUEST
}

#: Notifications about the server as a whole (the ``server_wide`` column): an HTTP server
#: offers them to every session and listen stream.
SERVER_WIDE_NOTIFICATIONS: frozenset[str] = frozenset(r.method for r in METHODS if r.server_wide)

#: Requests answered at once whatever is in flight (the ``prompt`` column: ``ping``).
PROMPT_METHODS: frozenset[str] = frozenset(r.method for r in METHODS if r.prompt)

#: Methods whose 2026-07-28 result may be ``input_required`` (the ``mrtr`` column).
MRTR_METHODS: frozenset[str] = frozenset(r.method for r in METHODS if r.mrtr)

#: method -> the params field naming its subject (the ``subject`` column). A method has the
#: same subject field in every revision it exists in (the assertion below keeps it so), so
#: callers need not know the revision.
_SUBJECT_FIELD: dict[str, str] = {}
for _rule in METHODS:
    if (
        _rule.subject is not None
        and _SUBJECT_FIELD.setdefault(_rule.method, _rule.subject) != _rule.subject
    ):  # pragma: no cover - guards the table itself
        raise AssertionError(f"{_rule.method} names two subject fields")


def subject_field(method: str) -> str | None:
    """The params field that names what a ``method`` request is about (``name``, ``uri``,
    ``taskId``), or None."""
    return _SUBJECT_FIELD.get(method)


def subject_of(method: str, params: Mapping[str, Any] | None) -> str | None:
    """The subject a request's params name (the tool or prompt name, the resource URI, the
    task id), when it is a string; None otherwise."""
    field = _SUBJECT_FIELD.get(method)
    if field is None or not params:
        return None
    value = params.get(field)
    return value if isinstance(value, str) else None


def lookup(method: str, revision: str) -> MethodRule | None:
    """The row for ``method`` in ``revision``, or None if the method does not exist there."""
    return _INDEX.get((method, revision))


def rules_for(revision: str) -> list[MethodRule]:
    """Every row that applies in ``revision``."""
    return [rule for rule in METHODS if revision in rule.revisions]


def missing_capability(
    rule: MethodRule,
    revision: str,
    params: Mapping[str, Any] | None,
    capabilities: Mapping[str, Any],
) -> str | None:
    """The dotted path of the capability that ``rule`` needs and ``capabilities`` lacks.

    ``capabilities`` must be the right party's (:attr:`MethodRule.gated_by_receiver`). The
    base capability is checked first; a path other than ``rule.capability`` comes from the
    params check (see :func:`refusal_code`).
    """
    if (
        rule.capability is not None
        and revision not in rule.ungated_in
        and not declared(capabilities, rule.capability)
    ):
        return rule.capability
    if rule.params_check is not None and params is not None:
        return rule.params_check(params, capabilities)
    return None


assert set(KNOWN_REVISIONS) >= {rev for rule in METHODS for rev in rule.revisions}


def refusal_code(rule: MethodRule, missing: str) -> ErrorCode:
    """The code for refusing a received message whose gate failed: -32601 when the method's
    capability itself is missing (``completion.mdx``, ``roots.mdx`` examples), -32602 when
    only a params-dependent sub-capability is (``client/elicitation.mdx``, 2025-11-25)."""
    return ErrorCode.METHOD_NOT_FOUND if missing == rule.capability else ErrorCode.INVALID_PARAMS
