"""Strategies for valid MCP messages, per revision and direction.

Theory of operation
-------------------
Which methods exist, and who sends them, comes from the method table
(:data:`mcp_sansio.METHODS`); what their params and results look like comes from the
official schema of the revision (:mod:`._schemas`, strategies built by
:mod:`._from_schema`). Every value drawn validates against that schema. On top of the
schema a few fields are pinned so that the message also makes sense on the wire:

* ``initialize`` offers the revision being tested, and an ``InitializeResult`` answers it;
* stateless-era requests (2026-07-28) carry ``_meta`` with that revision as
  ``io.modelcontextprotocol/protocolVersion``; their results say ``resultType:
  "complete"`` and a ``DiscoverResult`` lists the revision among ``supportedVersions``;
* the 2025-11-25 ``task`` member (task augmentation) is left out of requests: whether a
  receiver accepts it depends on capabilities the strategies do not know.

Other capability-dependent content (sampling with tools, URL-mode elicitation) is
schema-valid but is only legal when the receiver declared the matching capability.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from hypothesis import strategies as st

from .._capabilities import Kind, rules_for
from .._state import Role
from .._versions import FEATURES
from ._from_schema import SchemaStrategies
from ._schemas import Schemas, bundled

__all__ = [
    "error_codes",
    "errors",
    "messages",
    "method_names",
    "notifications",
    "params",
    "request_ids",
    "requests",
    "responses",
    "results",
]

_META_VERSION = "io.modelcontextprotocol/protocolVersion"


def _role(value: Role | str) -> Role:
    return value if isinstance(value, Role) else Role(value)


def _schemas(schemas: Schemas | None) -> Schemas:
    return bundled() if schemas is None else schemas


@functools.cache
def _builder(schemas: Schemas, revision: str) -> SchemaStrategies:
    return SchemaStrategies(schemas.definitions(revision))


def _stateless(revision: str) -> bool:
    feature = FEATURES.get(revision)
    return feature is not None and not feature.handshake


def request_ids() -> st.SearchStrategy[str | int]:
    """JSON-RPC request ids: strings or integers (never null, a bool or a float)."""
    return st.one_of(
        st.integers(-(2**53) + 1, 2**53 - 1),
        st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=12),
    )


def method_names(revision: str, *, sender: Role | str, kind: str = "request") -> list[str]:
    """The methods ``sender`` sends as ``kind`` ("request" or "notification") in
    ``revision``, per the method table. Rows an extension defines (``rule.extension``, e.g.
    the 2026-07-28 tasks extension) are left out: the revision's schema, which the
    strategies draw params and results from, does not describe them."""
    role = _role(sender)
    wanted = Kind(kind)
    return sorted({rule.method for rule in rules_for(revision)
                   if rule.kind is wanted and rule.sender.allows(role)
                   and rule.extension is None})


def _fix_params(method: str, revision: str, kind: str, value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    value = dict(value)
    value.pop("task", None)
    if method == "initialize":
        value["protocolVersion"] = revision
    if kind == "request" and _stateless(revision):
        meta = dict(value.get("_meta") or {})
        meta[_META_VERSION] = revision
        value["_meta"] = meta
    return value


def params(method: str, revision: str, *, schemas: Schemas | None = None
           ) -> st.SearchStrategy[Any]:
    """Schema-valid ``params`` for the ``method`` request or notification of ``revision``
    (``None`` when the message may go without params and the draw says so).

    :raises KeyError: the revision has no such request or notification.
    """
    schemas = _schemas(schemas)
    kind = "request" if schemas.request_definition(revision, method) else "notification"
    schema = schemas.params_definition(revision, kind, method)
    if schema is None:
        return st.none()
    values = _builder(schemas, revision).build(schema).map(
        lambda v: _fix_params(method, revision, kind, v))
    if schemas.params_required(revision, kind, method):
        return values
    return st.one_of(st.none(), values)


def _fix_result(method: str, revision: str, value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    value = dict(value)
    if method == "initialize":
        value["protocolVersion"] = revision
    if _stateless(revision):
        value["resultType"] = "complete"
        if method == "server/discover":
            versions = [v for v in value.get("supportedVersions", []) if v != revision]
            value["supportedVersions"] = [revision, *versions]
    return value


def results(method: str, revision: str, *, schemas: Schemas | None = None
            ) -> st.SearchStrategy[dict[str, Any]]:
    """Schema-valid results answering the ``method`` request of ``revision``.

    :raises KeyError: the revision has no such request.
    """
    schemas = _schemas(schemas)
    name = schemas.result_definition(revision, method)
    if name is None:
        raise KeyError(f"{method} is not a request in {revision}")
    return _builder(schemas, revision).definition(name).map(
        lambda v: _fix_result(method, revision, v))


def _chosen(revision: str, sender: Role | str, kind: str, methods: Iterable[str] | None
            ) -> list[str]:
    available = method_names(revision, sender=sender, kind=kind)
    if methods is None:
        chosen = available
    else:
        chosen = [m for m in methods if m in available]
        missing = set(methods) - set(available)
        if missing:
            raise ValueError(f"a {_role(sender).value} does not send {sorted(missing)} as a "
                             f"{kind} in {revision}")
    if not chosen:
        raise ValueError(f"a {_role(sender).value} sends no {kind} in {revision}")
    return chosen


def _envelope(method: str, request_id: Any, body: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if request_id is not None:
        message["id"] = request_id
    message["method"] = method
    if body is not None:
        message["params"] = body
    return message


def requests(
    revision: str,
    *,
    sender: Role | str = Role.CLIENT,
    methods: Iterable[str] | None = None,
    ids: st.SearchStrategy[str | int] | None = None,
    schemas: Schemas | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """Whole JSON-RPC requests that ``sender`` may send in ``revision``, one of ``methods``
    (default: all of them), with schema-valid params."""
    ids = request_ids() if ids is None else ids
    options = [
        st.builds(functools.partial(_envelope, method), ids,
                  params(method, revision, schemas=schemas))
        for method in _chosen(revision, sender, "request", methods)
    ]
    return st.one_of(*options)


def notifications(
    revision: str,
    *,
    sender: Role | str = Role.CLIENT,
    methods: Iterable[str] | None = None,
    schemas: Schemas | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """Whole JSON-RPC notifications that ``sender`` may send in ``revision``."""
    options = [
        params(method, revision, schemas=schemas).map(
            functools.partial(_envelope, method, None))
        for method in _chosen(revision, sender, "notification", methods)
    ]
    return st.one_of(*options)


def responses(
    revision: str,
    *,
    sender: Role | str = Role.SERVER,
    methods: Iterable[str] | None = None,
    ids: st.SearchStrategy[str | int] | None = None,
    schemas: Schemas | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """Whole JSON-RPC result responses that ``sender`` sends in ``revision``: results of
    the requests the *other* side sends (``methods`` filters those)."""
    ids = request_ids() if ids is None else ids
    other = Role.SERVER if _role(sender) is Role.CLIENT else Role.CLIENT
    options = [
        st.builds(lambda i, r: {"jsonrpc": "2.0", "id": i, "result": r}, ids,
                  results(method, revision, schemas=schemas))
        for method in _chosen(revision, other, "request", methods)
    ]
    return st.one_of(*options)


def error_codes(revision: str) -> st.SearchStrategy[int]:
    """Error codes a response may carry in ``revision``: the JSON-RPC ones, the MCP ones
    the revision defines, and application codes outside the reserved range."""
    codes = [-32700, -32600, -32601, -32602, -32603]
    if not _stateless(revision):
        codes.append(-32002)
    if FEATURES[revision].url_elicitation_error:
        codes.append(-32042)
    if _stateless(revision):
        codes.extend([-32020, -32021, -32022])
    return st.one_of(st.sampled_from(codes), st.integers(-31999, 2**31 - 1),
                     st.integers(-(2**31), -32769))


def errors(
    revision: str,
    *,
    ids: st.SearchStrategy[str | int] | None = None,
    schemas: Schemas | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """Whole JSON-RPC error responses (with a readable id) valid in ``revision``."""
    ids = request_ids() if ids is None else ids
    schemas = _schemas(schemas)
    builder = _builder(schemas, revision)
    data = builder.build(True)
    error = st.builds(
        lambda code, message, extra: {"code": code, "message": message, **extra},
        error_codes(revision),
        st.text(max_size=20),
        st.one_of(st.just({}), data.map(lambda d: {"data": d})),
    )
    return st.builds(lambda i, e: {"jsonrpc": "2.0", "id": i, "error": e}, ids, error)


def messages(
    revision: str,
    *,
    sender: Role | str = Role.CLIENT,
    ids: st.SearchStrategy[str | int] | None = None,
    schemas: Schemas | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """Any valid JSON-RPC message ``sender`` may send in ``revision``: requests,
    notifications, results of the peer's requests and error responses."""
    options: list[st.SearchStrategy[dict[str, Any]]] = []
    other = Role.SERVER if _role(sender) is Role.CLIENT else Role.CLIENT
    if method_names(revision, sender=sender, kind="request"):
        options.append(requests(revision, sender=sender, ids=ids, schemas=schemas))
    if method_names(revision, sender=sender, kind="notification"):
        options.append(notifications(revision, sender=sender, schemas=schemas))
    if method_names(revision, sender=other, kind="request"):
        options.append(responses(revision, sender=sender, ids=ids, schemas=schemas))
        options.append(errors(revision, ids=ids, schemas=schemas))
    return st.one_of(*options)
