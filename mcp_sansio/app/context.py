"""The handler's context and the job it runs: what a request handler can do about its request.

Theory of operation
-------------------
The router (:meth:`~.server.Server._route`) turns a ``Request`` event into a :class:`Job`:
the function to run, its arguments, and how to shape its return value into a result. A
runtime runs the job (awaiting it, or on a worker thread) and hands the outcome back to the
session (``_finish_request``). The handler sees a :class:`Context`: the request's params, its
era, the client's declared capabilities, and the sends it may make (progress, log,
notifications) -- each one a call on the core connection under the session's lock, followed
by a ``service()`` so the bytes leave at once.

Asking the client for input (``ask``, ``elicit``, ``sample``, ``list_roots``) waits, so the
runtime subclass adds it; the decision half is here (:meth:`Context._plan_ask`): check the
client declared what each input needs, and in the stateless era either return the answers
the retry carries or raise :class:`~.errors.InputRequiredSignal` for the missing ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, cast

from mcp_sansio import (
    Era,
    Request,
)
from mcp_sansio._sessionless import request_refusal

from .errors import (
    InputRequiredSignal,
    MissingCapability,
)
from .session import INPUT_METHODS

__all__ = [
    "elicit_request",
    "sampling_request",
    "tool_error_result",
    "Context",
    "Job",
]

if TYPE_CHECKING:
    from mcp_sansio.auth import AccessInfo

    from .session import Session

class Job:
    """What to run for one incoming request: ``fn(*args, **kwargs)`` (sync or async), then
    ``shape(value)`` to build the result. ``fn`` None means the result is ``shape(None)``."""

    __slots__ = ("args", "fn", "kwargs", "shape")

    def __init__(self, fn: Callable[..., Any] | None, args: tuple[Any, ...] = (),
                 kwargs: dict[str, Any] | None = None,
                 shape: Callable[[Any], dict[str, Any]] = lambda v: dict(v or {})) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs or {}
        self.shape = shape


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_error_result(message: str) -> dict[str, Any]:
    return {"content": [_text(message)], "isError": True}


# -- the handler's context ---------------------------------------------------------------------


class Context:
    """What a handler can do about its request. The runtime subclass adds the awaiting
    (or blocking) ``ask`` family: ``ask``, ``sample``, ``elicit``, ``list_roots``."""

    def __init__(self, session: Session, request: Request) -> None:
        self.session = session
        self.request_id = request.request_id
        self.method = request.method
        self.params: dict[str, Any] = request.params or {}
        #: Set by the runtime when the client cancelled the request (threads poll it).
        self.cancelled = False

    @property
    def era(self) -> Era | None:
        return self.session.conn.era

    @property
    def auth(self) -> AccessInfo | None:
        """Who the request's access token speaks for -- principal (``subject``), scopes,
        client id, claims -- on an HTTP server protected with ``auth=``; None otherwise
        (stdio servers take credentials from the environment, MCP basic/authorization.mdx)."""
        link = self.session.link
        return cast("AccessInfo | None", link.auth) if link is not None else None

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declared: this request's ``_meta`` (stateless era) or the
        handshake's."""
        if self.era is Era.STATELESS:
            meta = self.params.get("_meta") or {}
            caps = meta.get("io.modelcontextprotocol/clientCapabilities")
            return caps if isinstance(caps, dict) else {}
        return self.session.conn.peer_capabilities

    @property
    def input_responses(self) -> dict[str, Any]:
        """Stateless era: the answers a retry brought (``{}`` on the first round, and when the
        client sent something that is not an object)."""
        value = self.params.get("inputResponses")
        return value if isinstance(value, dict) else {}

    @property
    def request_state(self) -> str | None:
        """Stateless era: the state the retry echoed (already verified and opened by the core
        when the connection seals state)."""
        value = self.params.get("requestState")
        return value if isinstance(value, str) else None

    def progress(self, progress: float, total: float | None = None,
                 message: str | None = None) -> None:
        """Report progress, if the client asked for it (otherwise nothing is sent)."""
        meta = self.params.get("_meta")
        if not isinstance(meta, dict) or meta.get("progressToken") is None:
            return
        session = self.session
        with session.lock:
            if self.cancelled or session.closed is not None:
                return
            session.conn.send_progress(self.request_id, progress, total, message)
            session.service()

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message about this request (dropped by the core below the level the
        client asked for, and in the stateless era when the request asked for none)."""
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        session = self.session
        with session.lock:
            if self.cancelled or session.closed is not None:
                return
            session.conn.send_notification("notifications/message", params,
                                           related_request_id=self.request_id)
            session.service()

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a server notification (e.g. ``notifications/tools/list_changed``); in the
        stateless era the core puts it on the listen streams that asked for it. Over HTTP a
        server-wide one (a list change) goes to every session (``session.link``)."""
        session = self.session
        link = session.link
        if link is not None and link.broadcast(method, params):
            return
        with session.lock:
            if session.closed is not None:
                return
            session.conn.send_notification(method, params)
            session.service()

    def notify_list_changed(self, kind: str) -> None:
        """``kind`` is ``"tools"``, ``"prompts"`` or ``"resources"``."""
        self.notify(f"notifications/{kind}/list_changed")

    def input_required(self, input_requests: Mapping[str, Any] | None = None,
                       request_state: str | None = None) -> NoReturn:
        """Stateless era: answer this request with ``input_required`` (the client retries with
        ``inputResponses`` under the same keys and ``requestState`` echoed)."""
        raise InputRequiredSignal(input_requests or {}, request_state)

    def _plan_ask(self, requests: Mapping[str, tuple[str, Mapping[str, Any]]],
                 request_state: str | None = None) -> dict[str, Any] | None:
        """The runtime-independent half of ``ask``: check the client declared what each input
        needs; in the stateless era return the answers the retry carries or raise
        :class:`InputRequiredSignal` for the missing ones. None: the handshake era, where the
        runtime sends real requests."""
        if requests and self.session.conn.sessionless:  # none could be answered: say why
            raise request_refusal(next(iter(requests.values()))[0])
        caps = self.client_capabilities
        missing: dict[str, Any] = {INPUT_METHODS[m][0]: {} for m, _ in requests.values()
                   if m in INPUT_METHODS and INPUT_METHODS[m][0] not in caps}
        if missing:
            raise MissingCapability(missing)
        if self.era is not Era.STATELESS:
            return None
        answers = self.input_responses
        if all(isinstance(answers.get(key), dict) for key in requests):
            return {key: answers[key] for key in requests}
        raise InputRequiredSignal(
            {key: {"method": method, "params": dict(params)}
             for key, (method, params) in requests.items()},
            request_state if request_state is not None else self.request_state,
        )


def elicit_request(message: str, schema: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return "elicitation/create", {"message": message, "requestedSchema": dict(schema)}


def sampling_request(params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return "sampling/createMessage", dict(params)
