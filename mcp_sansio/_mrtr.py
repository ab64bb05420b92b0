"""Input-required retries (2026-07-28 multi-round-trip requests): one sub-state of a connection.

Theory of operation
-------------------
In the stateless era a server cannot send a request to the client; when it needs input it
answers ``tools/call``, ``prompts/get`` or ``resources/read`` (the ``mrtr`` column of the
method table) with ``resultType: "input_required"``, embedding the requests it needs
(``inputRequests``: elicitation, sampling, roots -- the input-request role of the table) and
an opaque ``requestState`` (``basic/patterns/mrtr.mdx``). The client retries the same method
with the same params under a new id, adding ``inputResponses`` under the same keys and
echoing ``requestState`` exactly.

Client side, :class:`InputRetries` keeps each answered-with-input request (by its id) until
the application retries it, and builds the retry's params. Server side,
:func:`check_input_requests` holds the rule "only request declared client caps" (mrtr.mdx):
each embedded request must be an input-request method the *retried request's* declared
capabilities allow. No clock, no I/O: the connection queues what these return.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._capabilities import Kind, lookup, missing_capability
from ._events import InputRequired, RequestId

__all__ = ["InputRetries", "check_input_requests"]

#: What a pending retry remembers: (method, params as sent, inputRequests, requestState).
_Pending = tuple[str, dict[str, Any] | None, dict[str, Any], str | None]


class InputRetries(dict[RequestId, _Pending]):
    """Client: requests answered ``input_required`` and not retried yet, by request id.

    A dict with the retry rules as methods (every connection has one: as cheap as a dict)."""

    __slots__ = ()

    def receive(
        self, request_id: RequestId, method: str, sent: dict[str, Any] | None,
        payload: Mapping[str, Any],
    ) -> InputRequired | None:
        """Keep a well-formed ``input_required`` answer and return its event; None when it
        is malformed (neither ``inputRequests`` nor ``requestState``, or wrong types)."""
        inputs = payload.get("inputRequests")
        state = payload.get("requestState")
        if not ((inputs is None or type(inputs) is dict)
                and (state is None or isinstance(state, str)) and (inputs or state is not None)):
            return None
        self[request_id] = (method, sent, inputs or {}, state)
        return InputRequired(request_id=request_id, method=method,
                             input_requests=inputs or {}, request_state=state)

    def retry(
        self, request_id: RequestId, responses: Mapping[str, Any] | None
    ) -> tuple[str, dict[str, Any]] | str:
        """The (method, params) of the retry (mrtr.mdx: same method and params,
        ``inputResponses`` under the keys of ``inputRequests``, ``requestState`` echoed), or
        why it cannot be built. The entry stays until :meth:`done`."""
        entry = self.get(request_id)
        if entry is None:
            return f"request {request_id!r} is not waiting for input"
        method, sent_params, inputs, state = entry
        answers = dict(responses or {})
        if set(answers) != set(inputs):
            return (f"inputResponses must answer exactly the keys {sorted(inputs)}, "
                    f"got {sorted(answers)}")
        params = {k: v for k, v in (sent_params or {}).items()
                  if k not in ("inputResponses", "requestState", "_meta")}
        # The retry is a new request: the old progress token is not reused.
        meta = {k: v for k, v in ((sent_params or {}).get("_meta") or {}).items()
                if k != "progressToken"}
        if meta:
            params["_meta"] = meta
        if inputs:
            params["inputResponses"] = answers
        if state is not None:
            params["requestState"] = state
        return method, params

    def done(self, request_id: RequestId) -> None:
        """The retry was sent."""
        del self[request_id]


def check_input_requests(
    inputs: Mapping[str, Any], revision: str, client_capabilities: Mapping[str, Any]
) -> str | None:
    """Why an ``inputRequests`` map may not be sent (None: it may): each entry must be an
    input-request method of ``revision`` that ``client_capabilities`` -- those the retried
    request declared -- allow (mrtr.mdx: "only request declared client caps")."""
    for key, item in inputs.items():
        method = item.get("method") if isinstance(item, Mapping) else None
        rule = lookup(method, revision) if isinstance(method, str) else None
        if rule is None or rule.kind is not Kind.INPUT_REQUEST:
            return f"input request {key!r} is not an input request method"
        params = item.get("params")
        missing = missing_capability(rule, revision,
                                     params if isinstance(params, Mapping) else {},
                                     client_capabilities)
        if missing is not None:
            return (f"input request {key!r} ({method}) needs the client's {missing!r} "
                    "capability, which this request did not declare")
    return None
