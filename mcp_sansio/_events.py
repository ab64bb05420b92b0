"""The event vocabulary.

Theory of operation
-------------------
Everything the connection has to tell the application is an *event*: an immutable attrs
object (frozen, keyword-only, slotted), validated when it is built so that a bad event fails
where it is made, not three layers later. ``Connection.next_event()`` returns them one at a
time, in the order the input produced them.

The four message events (:class:`Request`, :class:`Notification`, :class:`Response`,
:class:`ErrorResponse`) are *symmetric*: the same class that is received can be given to
``Connection.send()``, so a proxy can pass events from one connection to another. The other
events report what the core decided on the application's behalf: the handshake finished, a
message was refused, a request timed out, the connection closed.

Every request we send ends with **exactly one** terminal event carrying its id:
:class:`Response`, :class:`ErrorResponse`, :class:`RequestTimedOut`,
:class:`RequestCancelled`, :class:`RequestAborted`, or -- in the stateless era --
:class:`InputRequired` (the story continues under the retry's new id) and
:class:`RequestFailed` (a result the core could not accept).

Params and results are plain ``dict`` objects (the hot path stays on dicts); the typed models
in ``mcp_sansio.types`` are opt-in.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import attrs

__all__ = [
    "CancelRequested",
    "CloseReason",
    "ConnectionClosed",
    "ErrorResponse",
    "Event",
    "Initialized",
    "InputRequired",
    "LateResponse",
    "MessageRejected",
    "Notification",
    "Progress",
    "Request",
    "RequestAborted",
    "RequestCancelled",
    "RequestFailed",
    "RequestId",
    "RequestTimedOut",
    "Response",
    "SubscriptionAcknowledged",
    "UnexpectedResponse",
]

#: A JSON-RPC request id: a string or an integer (never null, never a bool or float).
RequestId = str | int


def _check_request_id(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError(f"{attribute.name} must be a str or int, not {type(value).__name__}")


def _check_optional_request_id(
    inst: object, attribute: attrs.Attribute[Any], value: object
) -> None:
    if value is not None:
        _check_request_id(inst, attribute, value)


def _check_params(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"{attribute.name} must be a dict or None, not {type(value).__name__}")


def _check_int_code(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{attribute.name} must be an int, not {type(value).__name__}")


def _check_number(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{attribute.name} must be a number, not {type(value).__name__}")


def _check_optional_number(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        _check_number(inst, attribute, value)


_str = attrs.validators.instance_of(str)
_optional_str = attrs.validators.optional(_str)
_dict = attrs.validators.instance_of(dict)
_optional_dict = attrs.validators.optional(_dict)


@attrs.frozen(kw_only=True)
class Event:
    """Base class of every event."""

    #: True on the classes that end the story of a request we sent (see the module
    #: docstring): an embedder tests this instead of listing the terminal classes by hand.
    #: A class attribute (``ClassVar``), so attrs leaves it out of the fields.
    TERMINAL: ClassVar[bool] = False

    @property
    def ended_request(self) -> RequestId | None:
        """The id of the request we sent whose story this event ends, or None.

        Set on :class:`Response`, :class:`ErrorResponse` (when it carries an id),
        :class:`RequestTimedOut`, :class:`RequestCancelled`, :class:`RequestAborted`,
        :class:`InputRequired` (the story goes on under the retry's new id) and
        :class:`RequestFailed`; None on every other event. Every request we send gets
        exactly one event with a non-None ``ended_request``.
        """
        if self.TERMINAL:
            rid: RequestId | None = getattr(self, "request_id", None)
            return rid
        return None


# -- the four symmetric message events -------------------------------------------------------


@attrs.frozen(kw_only=True)
class Request(Event):
    """A request from the peer, for the application to answer.

    Answer it with ``send_response(request_id, result)`` or ``send_error(...)``. When sent
    with ``Connection.send()``, ``request_id`` is ignored: outgoing ids belong to the
    connection, and ``send()`` returns the one it chose.
    """

    request_id: RequestId = attrs.field(validator=_check_request_id)
    method: str = attrs.field(validator=_str)
    params: dict[str, Any] | None = attrs.field(default=None, validator=_check_params)


@attrs.frozen(kw_only=True)
class Notification(Event):
    """A notification from the peer (including methods this library does not know).

    Notifications are never answered (JSON-RPC 2.0 section 4.1). ``notifications/closed``,
    which no MCP revision defines but some peers send, arrives as a plain ``Notification``.
    """

    method: str = attrs.field(validator=_str)
    params: dict[str, Any] | None = attrs.field(default=None, validator=_check_params)


@attrs.frozen(kw_only=True)
class Response(Event):
    """The successful result of a request we sent (terminal for that request).

    ``method`` is the method of the request it answers (filled in by the connection on
    receipt; ignored by ``send()``).
    """

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId = attrs.field(validator=_check_request_id)
    result: dict[str, Any] = attrs.field(validator=_dict)
    method: str | None = attrs.field(default=None, validator=_optional_str)


@attrs.frozen(kw_only=True)
class ErrorResponse(Event):
    """An error answer to a request we sent (terminal for that request)."""

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId | None = attrs.field(validator=_check_optional_request_id)
    code: int = attrs.field(validator=_check_int_code)
    message: str = attrs.field(validator=_str)
    data: Any = None
    method: str | None = attrs.field(default=None, validator=_optional_str)


# -- lifecycle -------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Initialized(Event):
    """The handshake is complete; the connection is operating.

    The client gets it when a usable ``InitializeResult`` arrives (the core has queued
    ``notifications/initialized``); the server when ``notifications/initialized`` arrives.
    """

    protocol_version: str = attrs.field(validator=_str)
    peer_capabilities: dict[str, Any] = attrs.field(validator=_dict)
    peer_info: dict[str, Any] = attrs.field(validator=_dict)
    instructions: str | None = attrs.field(default=None, validator=_optional_str)


class CloseReason(enum.Enum):
    """Why a connection closed."""

    #: The peer closed its side (``receive_eof()``).
    EOF = "eof"
    #: The application called ``close()``.
    LOCAL = "local"
    #: The server answered ``initialize`` with a version this client does not support
    #: (lifecycle, "Version Negotiation": the client SHOULD disconnect).
    VERSION_REJECTED = "version_rejected"
    #: ``initialize`` failed: an error response, or a result that is not a valid
    #: ``InitializeResult``.
    INITIALIZE_FAILED = "initialize_failed"
    #: ``initialize`` was not answered in time. It cannot be cancelled, so the connection
    #: closes instead.
    INITIALIZE_TIMEOUT = "initialize_timeout"


@attrs.frozen(kw_only=True)
class ConnectionClosed(Event):
    """The connection is closed; no further events follow. Pending requests were aborted
    (each with its own :class:`RequestAborted`, delivered before this event)."""

    reason: CloseReason = attrs.field(validator=attrs.validators.instance_of(CloseReason))
    detail: str = attrs.field(default="", validator=_str)


# -- problems the core handled on its own ----------------------------------------------------


@attrs.frozen(kw_only=True)
class MessageRejected(Event):
    """The peer sent something that broke a rule; the core dealt with it.

    ``replied`` tells whether an error response (with ``code``) was queued. A bad request gets
    one (with ``id: null`` when its id was unreadable); a bad notification or response never
    does (JSON-RPC 2.0 forbids answering them), it is only reported here.
    """

    code: int = attrs.field(validator=_check_int_code)
    reason: str = attrs.field(validator=_str)
    request_id: RequestId | None = attrs.field(
        default=None, validator=_check_optional_request_id
    )
    method: str | None = attrs.field(default=None, validator=_optional_str)
    replied: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


@attrs.frozen(kw_only=True)
class UnexpectedResponse(Event):
    """A response to an id we never sent (or that already ended). Reported and ignored."""

    request_id: RequestId | None = attrs.field(validator=_check_optional_request_id)
    result: dict[str, Any] | None = attrs.field(default=None, validator=_optional_dict)
    error: dict[str, Any] | None = attrs.field(default=None, validator=_optional_dict)


@attrs.frozen(kw_only=True)
class LateResponse(Event):
    """A response to a request that already ended locally (timed out or cancelled).

    Not an error: races between a reply and a timeout are normal.
    """

    request_id: RequestId = attrs.field(validator=_check_request_id)
    method: str = attrs.field(validator=_str)
    result: dict[str, Any] | None = attrs.field(default=None, validator=_optional_dict)
    error: dict[str, Any] | None = attrs.field(default=None, validator=_optional_dict)


# -- requests in flight ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class RequestTimedOut(Event):
    """A request we sent hit its idle timeout or hard maximum (terminal for that request).

    The core has queued ``notifications/cancelled`` for it.
    """

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId = attrs.field(validator=_check_request_id)
    method: str = attrs.field(validator=_str)
    hard_limit: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


@attrs.frozen(kw_only=True)
class RequestCancelled(Event):
    """A request we sent was cancelled by ``cancel()`` (terminal for that request)."""

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId = attrs.field(validator=_check_request_id)
    method: str = attrs.field(validator=_str)
    reason: str | None = attrs.field(default=None, validator=_optional_str)


@attrs.frozen(kw_only=True)
class RequestAborted(Event):
    """A request we sent can no longer be answered: the connection closed (terminal)."""

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId = attrs.field(validator=_check_request_id)
    method: str = attrs.field(validator=_str)
    reason: CloseReason = attrs.field(validator=attrs.validators.instance_of(CloseReason))


@attrs.frozen(kw_only=True)
class CancelRequested(Event):
    """The peer cancelled a request it sent us: stop working on it.

    The core will not send any response for this id from now on; one the application still
    sends is dropped quietly (cancellation races are normal).
    """

    request_id: RequestId = attrs.field(validator=_check_request_id)
    method: str = attrs.field(validator=_str)
    reason: str | None = attrs.field(default=None, validator=_optional_str)


@attrs.frozen(kw_only=True)
class Progress(Event):
    """A progress notification for a request we sent, matched by its progress token."""

    request_id: RequestId = attrs.field(validator=_check_request_id)
    token: str | int = attrs.field(validator=_check_request_id)
    progress: float = attrs.field(validator=_check_number)
    total: float | None = attrs.field(default=None, validator=_check_optional_number)
    message: str | None = attrs.field(default=None, validator=_optional_str)



# -- the stateless era (2026-07-28) ------------------------------------------------------------


@attrs.frozen(kw_only=True)
class InputRequired(Event):
    """The server needs input before it can complete a request (multi-round-trip requests,
    ``basic/patterns/mrtr.mdx``). Terminal for ``request_id``.

    Satisfy every entry of ``input_requests`` (key -> ``{"method", "params"}``: an
    ``elicitation/create``, ``sampling/createMessage`` or ``roots/list``) and call
    ``ClientConnection.retry_with_input(request_id, responses)`` with the results under the
    same keys. The core sends the retry as a *new* request (new id, same method and params,
    plus ``inputResponses`` and the exact ``requestState``) and returns that id: the
    request's story continues under it, and may produce another ``InputRequired``.
    """

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId = attrs.field(validator=_check_request_id)
    method: str = attrs.field(validator=_str)
    input_requests: dict[str, Any] = attrs.field(factory=dict, validator=_dict)
    request_state: str | None = attrs.field(default=None, validator=_optional_str)


@attrs.frozen(kw_only=True)
class SubscriptionAcknowledged(Event):
    """The server acknowledged a ``subscriptions/listen`` stream we opened, honouring
    ``notifications`` (a subset of the filter we asked for). Change notifications for it
    follow as :class:`Notification` events tagged with its ``subscriptionId``."""

    request_id: RequestId = attrs.field(validator=_check_request_id)
    notifications: dict[str, Any] = attrs.field(validator=_dict)


@attrs.frozen(kw_only=True)
class RequestFailed(Event):
    """A request we sent got a result the core cannot accept (an unknown ``resultType``, or
    an ``input_required`` for a method that may not return one). Terminal; a local
    verdict, so it carries no JSON-RPC code."""

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId = attrs.field(validator=_check_request_id)
    method: str = attrs.field(validator=_str)
    reason: str = attrs.field(validator=_str)
    result: dict[str, Any] | None = attrs.field(default=None, validator=_optional_dict)


# -- trusted construction (the core's hot path) ----------------------------------------------
#
# The validators above are for events built by the application (``send()``, tests, proxies).
# The core builds the busiest events from values it has just checked itself (``_codec.parse``
# checked the id, method, params and result types), so it fills the slots directly:
# measured 0.96 -> 0.35 us per event (``benchmarks/README.md``, hot-spot item 3). The objects
# are the same frozen attrs instances (``__eq__``, ``__hash__``, ``__repr__``, ``evolve``).

_new = object.__new__
_set = object.__setattr__


def trusted_request(request_id: RequestId, method: str, params: dict[str, Any] | None) -> Request:
    """A :class:`Request` from checked values, without running the validators."""
    event = _new(Request)
    _set(event, "request_id", request_id)
    _set(event, "method", method)
    _set(event, "params", params)
    return event


def trusted_response(request_id: RequestId, result: dict[str, Any], method: str | None) -> Response:
    """A :class:`Response` from checked values, without running the validators."""
    event = _new(Response)
    _set(event, "request_id", request_id)
    _set(event, "result", result)
    _set(event, "method", method)
    return event
