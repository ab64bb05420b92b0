"""The event vocabulary.

Theory of operation
-------------------
Everything the connection has to tell the application is an *event*: an immutable object
(frozen, keyword-only, slotted; ``attrs.fields``/``attrs.evolve`` work on it), validated when
it is built so that a bad event fails where it is made, not three layers later.
``Connection.next_event()`` returns them one at a time, in the order the input produced them.

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

from ._frozen import field_values, frozen_repr, refuse_change

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


def _check_request_id(name: str, value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError(f"{name} must be a str or int, not {type(value).__name__}")
    return value


def _check_optional_request_id(name: str, value: Any) -> Any:
    return value if value is None else _check_request_id(name, value)


def _check_params(name: str, value: Any) -> Any:
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict or None, not {type(value).__name__}")
    return value


def _check_int_code(name: str, value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return value


def _check_number(name: str, value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    return value


def _check_optional_number(name: str, value: Any) -> Any:
    return value if value is None else _check_number(name, value)


def _instance_of(kind: type, name: str, value: Any) -> Any:
    if not isinstance(value, kind):
        raise TypeError(f"'{name}' must be {kind!r} (got {value!r} that is a "
                        f"{value.__class__!r}).")
    return value


def _str(name: str, value: Any) -> Any:
    return _instance_of(str, name, value)


def _optional_str(name: str, value: Any) -> Any:
    return value if value is None else _instance_of(str, name, value)


def _dict(name: str, value: Any) -> Any:
    return _instance_of(dict, name, value)


def _optional_dict(name: str, value: Any) -> Any:
    return value if value is None else _instance_of(dict, name, value)


def _bool(name: str, value: Any) -> Any:
    return _instance_of(bool, name, value)


def _reason(name: str, value: Any) -> Any:
    return _instance_of(CloseReason, name, value)


_new = object.__new__
_set = object.__setattr__

#: The default of a field whose default is a new empty dict (``attrs.Factory(dict)``).
_NEW_DICT: Any = object()


def _restore(cls: type[Event], values: tuple[Any, ...]) -> Event:
    """Unpickle / copy an event: fill the slots as the trusted constructors do."""
    event = _new(cls)
    for name, value in zip(cls._FIELDS, values, strict=True):
        _set(event, name, value)
    return event


class _AttrsFields:
    """``cls.__attrs_attrs__``, built when first asked for, so that ``attrs.fields``,
    ``attrs.evolve``, ``attrs.asdict`` and ``attrs.has`` work on events while a process that
    never asks does not import attrs. The fields are those of an attrs class made with the
    same names, order, types and defaults (keyword-only, frozen), kept here per class (not
    on the class: that would hide this descriptor from the subclasses)."""

    def __init__(self) -> None:
        self._made: dict[type, Any] = {}

    def __get__(self, instance: object, owner: type[Event]) -> Any:
        made = self._made.get(owner)
        if made is None:
            made = self._made[owner] = self._make(owner)
        return made

    @staticmethod
    def _make(owner: type[Event]) -> Any:
        import attrs

        types: dict[str, Any] = {}
        for cls in reversed(owner.__mro__):
            types.update(vars(cls).get("__annotations__", {}))
        defaults = getattr(owner.__init__, "__kwdefaults__", None) or {}
        fields = {
            name: attrs.field(type=types[name], default=attrs.Factory(dict)
                              if defaults[name] is _NEW_DICT else defaults[name])
            if name in defaults else attrs.field(type=types[name])
            for name in owner._FIELDS
        }
        return attrs.fields(attrs.make_class(owner.__name__, fields, kw_only=True, frozen=True,
                                             slots=True))


class Event:
    """Base class of every event.

    Events are frozen, slotted and keyword-only, compared and hashed by their fields in
    order, and shown as ``Name(field=value, ...)`` -- what an attrs frozen class gives, written
    out so that building the classes costs nothing at import (attrs is imported only by
    whoever asks ``attrs.fields``/``attrs.evolve`` about an event).
    """

    __slots__ = ("__weakref__",)
    __match_args__: ClassVar[tuple[str, ...]] = ()
    __attrs_attrs__: ClassVar[Any] = _AttrsFields()

    #: True on the classes that end the story of a request we sent (see the module
    #: docstring): an embedder tests this instead of listing the terminal classes by hand.
    #: A class attribute (``ClassVar``), not a field.
    TERMINAL: ClassVar[bool] = False
    #: The class's fields, in order: its base's, then its own annotated slots.
    _FIELDS: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        slots = vars(cls).get("__slots__", ())
        own = [name for name in vars(cls).get("__annotations__", {}) if name in slots]
        base: tuple[str, ...] = getattr(cls.__mro__[1], "_FIELDS", ())
        cls._FIELDS = (*base, *own)

    def _values(self) -> tuple[Any, ...]:
        return field_values(self, self._FIELDS)

    def __repr__(self) -> str:
        return frozen_repr(self, self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __ne__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() != other._values()

    def __hash__(self) -> int:
        return hash((type(self).__qualname__, *self._values()))

    def __setattr__(self, name: str, value: Any) -> None:
        refuse_change()

    def __delattr__(self, name: str) -> None:
        refuse_change()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self._values()))

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


class Request(Event):
    """A request from the peer, for the application to answer.

    Answer it with ``send_response(request_id, result)`` or ``send_error(...)``. When sent
    with ``Connection.send()``, ``request_id`` is ignored: outgoing ids belong to the
    connection, and ``send()`` returns the one it chose.
    """

    __slots__ = ("method", "params", "request_id")

    request_id: RequestId
    method: str
    params: dict[str, Any] | None

    def __init__(
        self, *, request_id: RequestId, method: str, params: dict[str, Any] | None = None
    ) -> None:
        _set(self, "request_id", _check_request_id("request_id", request_id))
        _set(self, "method", _str("method", method))
        _set(self, "params", _check_params("params", params))


class Notification(Event):
    """A notification from the peer (including methods this library does not know).

    Notifications are never answered (JSON-RPC 2.0 section 4.1). ``notifications/closed``,
    which no MCP revision defines but some peers send, arrives as a plain ``Notification``.
    """

    __slots__ = ("method", "params")

    method: str
    params: dict[str, Any] | None

    def __init__(self, *, method: str, params: dict[str, Any] | None = None) -> None:
        _set(self, "method", _str("method", method))
        _set(self, "params", _check_params("params", params))


class Response(Event):
    """The successful result of a request we sent (terminal for that request).

    ``method`` is the method of the request it answers (filled in by the connection on
    receipt; ignored by ``send()``).
    """

    __slots__ = ("method", "request_id", "result")

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId
    result: dict[str, Any]
    method: str | None

    def __init__(
        self, *, request_id: RequestId, result: dict[str, Any], method: str | None = None
    ) -> None:
        _set(self, "request_id", _check_request_id("request_id", request_id))
        _set(self, "result", _dict("result", result))
        _set(self, "method", _optional_str("method", method))


class ErrorResponse(Event):
    """An error answer to a request we sent (terminal for that request)."""

    __slots__ = ("code", "data", "message", "method", "request_id")

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId | None
    code: int
    message: str
    data: Any
    method: str | None

    def __init__(
        self, *, request_id: RequestId | None, code: int, message: str, data: Any = None,
        method: str | None = None
    ) -> None:
        _set(self, "request_id", _check_optional_request_id("request_id", request_id))
        _set(self, "code", _check_int_code("code", code))
        _set(self, "message", _str("message", message))
        _set(self, "data", data)
        _set(self, "method", _optional_str("method", method))


# -- lifecycle -------------------------------------------------------------------------------


class Initialized(Event):
    """The handshake is complete; the connection is operating.

    The client gets it when a usable ``InitializeResult`` arrives (the core has queued
    ``notifications/initialized``); the server when ``notifications/initialized`` arrives.
    """

    __slots__ = ("instructions", "peer_capabilities", "peer_info", "protocol_version")

    protocol_version: str
    peer_capabilities: dict[str, Any]
    peer_info: dict[str, Any]
    instructions: str | None

    def __init__(
        self, *, protocol_version: str, peer_capabilities: dict[str, Any],
        peer_info: dict[str, Any], instructions: str | None = None
    ) -> None:
        _set(self, "protocol_version", _str("protocol_version", protocol_version))
        _set(self, "peer_capabilities", _dict("peer_capabilities", peer_capabilities))
        _set(self, "peer_info", _dict("peer_info", peer_info))
        _set(self, "instructions", _optional_str("instructions", instructions))


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


class ConnectionClosed(Event):
    """The connection is closed; no further events follow. Pending requests were aborted
    (each with its own :class:`RequestAborted`, delivered before this event)."""

    __slots__ = ("detail", "reason")

    reason: CloseReason
    detail: str

    def __init__(self, *, reason: CloseReason, detail: str = "") -> None:
        _set(self, "reason", _reason("reason", reason))
        _set(self, "detail", _str("detail", detail))


# -- problems the core handled on its own ----------------------------------------------------


class MessageRejected(Event):
    """The peer sent something that broke a rule; the core dealt with it.

    ``replied`` tells whether an error response (with ``code``) was queued. A bad request gets
    one (with ``id: null`` when its id was unreadable); a bad notification or response never
    does (JSON-RPC 2.0 forbids answering them), it is only reported here.
    """

    __slots__ = ("code", "method", "reason", "replied", "request_id")

    code: int
    reason: str
    request_id: RequestId | None
    method: str | None
    replied: bool

    def __init__(
        self, *, code: int, reason: str, request_id: RequestId | None = None,
        method: str | None = None, replied: bool = False
    ) -> None:
        _set(self, "code", _check_int_code("code", code))
        _set(self, "reason", _str("reason", reason))
        _set(self, "request_id", _check_optional_request_id("request_id", request_id))
        _set(self, "method", _optional_str("method", method))
        _set(self, "replied", _bool("replied", replied))


class UnexpectedResponse(Event):
    """A response to an id we never sent (or that already ended). Reported and ignored."""

    __slots__ = ("error", "request_id", "result")

    request_id: RequestId | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None

    def __init__(
        self, *, request_id: RequestId | None, result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None
    ) -> None:
        _set(self, "request_id", _check_optional_request_id("request_id", request_id))
        _set(self, "result", _optional_dict("result", result))
        _set(self, "error", _optional_dict("error", error))


class LateResponse(Event):
    """A response to a request that already ended locally (timed out or cancelled).

    Not an error: races between a reply and a timeout are normal.
    """

    __slots__ = ("error", "method", "request_id", "result")

    request_id: RequestId
    method: str
    result: dict[str, Any] | None
    error: dict[str, Any] | None

    def __init__(
        self, *, request_id: RequestId, method: str, result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None
    ) -> None:
        _set(self, "request_id", _check_request_id("request_id", request_id))
        _set(self, "method", _str("method", method))
        _set(self, "result", _optional_dict("result", result))
        _set(self, "error", _optional_dict("error", error))


# -- requests in flight ----------------------------------------------------------------------


class RequestTimedOut(Event):
    """A request we sent hit its idle timeout or hard maximum (terminal for that request).

    The core has queued ``notifications/cancelled`` for it.
    """

    __slots__ = ("hard_limit", "method", "request_id")

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId
    method: str
    hard_limit: bool

    def __init__(self, *, request_id: RequestId, method: str, hard_limit: bool = False) -> None:
        _set(self, "request_id", _check_request_id("request_id", request_id))
        _set(self, "method", _str("method", method))
        _set(self, "hard_limit", _bool("hard_limit", hard_limit))


class RequestCancelled(Event):
    """A request we sent was cancelled by ``cancel()`` (terminal for that request)."""

    __slots__ = ("method", "reason", "request_id")

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId
    method: str
    reason: str | None

    def __init__(self, *, request_id: RequestId, method: str, reason: str | None = None) -> None:
        _set(self, "request_id", _check_request_id("request_id", request_id))
        _set(self, "method", _str("method", method))
        _set(self, "reason", _optional_str("reason", reason))


class RequestAborted(Event):
    """A request we sent can no longer be answered: the connection closed (terminal)."""

    __slots__ = ("method", "reason", "request_id")

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId
    method: str
    reason: CloseReason

    def __init__(self, *, request_id: RequestId, method: str, reason: CloseReason) -> None:
        _set(self, "request_id", _check_request_id("request_id", request_id))
        _set(self, "method", _str("method", method))
        _set(self, "reason", _reason("reason", reason))


class CancelRequested(Event):
    """The peer cancelled a request it sent us: stop working on it.

    The core will not send any response for this id from now on; one the application still
    sends is dropped quietly (cancellation races are normal).
    """

    __slots__ = ("method", "reason", "request_id")

    request_id: RequestId
    method: str
    reason: str | None

    def __init__(self, *, request_id: RequestId, method: str, reason: str | None = None) -> None:
        _set(self, "request_id", _check_request_id("request_id", request_id))
        _set(self, "method", _str("method", method))
        _set(self, "reason", _optional_str("reason", reason))


class Progress(Event):
    """A progress notification for a request we sent, matched by its progress token."""

    __slots__ = ("message", "progress", "request_id", "token", "total")

    request_id: RequestId
    token: str | int
    progress: float
    total: float | None
    message: str | None

    def __init__(
        self, *, request_id: RequestId, token: str | int, progress: float,
        total: float | None = None, message: str | None = None
    ) -> None:
        _set(self, "request_id", _check_request_id("request_id", request_id))
        _set(self, "token", _check_request_id("token", token))
        _set(self, "progress", _check_number("progress", progress))
        _set(self, "total", _check_optional_number("total", total))
        _set(self, "message", _optional_str("message", message))



# -- the stateless era (2026-07-28) ------------------------------------------------------------


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

    __slots__ = ("input_requests", "method", "request_id", "request_state")

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId
    method: str
    input_requests: dict[str, Any]
    request_state: str | None

    def __init__(
        self, *, request_id: RequestId, method: str, input_requests: dict[str, Any] = _NEW_DICT,
        request_state: str | None = None
    ) -> None:
        _set(self, "request_id", _check_request_id("request_id", request_id))
        _set(self, "method", _str("method", method))
        if input_requests is _NEW_DICT:
            input_requests = {}
        _set(self, "input_requests", _dict("input_requests", input_requests))
        _set(self, "request_state", _optional_str("request_state", request_state))


class SubscriptionAcknowledged(Event):
    """The server acknowledged a ``subscriptions/listen`` stream we opened, honouring
    ``notifications`` (a subset of the filter we asked for). Change notifications for it
    follow as :class:`Notification` events tagged with its ``subscriptionId``."""

    __slots__ = ("notifications", "request_id")

    request_id: RequestId
    notifications: dict[str, Any]

    def __init__(self, *, request_id: RequestId, notifications: dict[str, Any]) -> None:
        _set(self, "request_id", _check_request_id("request_id", request_id))
        _set(self, "notifications", _dict("notifications", notifications))


class RequestFailed(Event):
    """A request we sent got a result the core cannot accept (an unknown ``resultType``, or
    an ``input_required`` for a method that may not return one). Terminal; a local
    verdict, so it carries no JSON-RPC code."""

    __slots__ = ("method", "reason", "request_id", "result")

    TERMINAL: ClassVar[bool] = True

    request_id: RequestId
    method: str
    reason: str
    result: dict[str, Any] | None

    def __init__(
        self, *, request_id: RequestId, method: str, reason: str,
        result: dict[str, Any] | None = None
    ) -> None:
        _set(self, "request_id", _check_request_id("request_id", request_id))
        _set(self, "method", _str("method", method))
        _set(self, "reason", _str("reason", reason))
        _set(self, "result", _optional_dict("result", result))


# -- trusted construction (the core's hot path) ----------------------------------------------
#
# The validators above are for events built by the application (``send()``, tests, proxies).
# The core builds the busiest events from values it has just checked itself (``_codec.parse``
# checked the id, method, params and result types), so it fills the slots directly:
# measured 0.96 -> 0.35 us per event (``benchmarks/README.md``, hot-spot item 3). The objects
# are the same frozen instances (``__eq__``, ``__hash__``, ``__repr__``, ``attrs.evolve``).


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
